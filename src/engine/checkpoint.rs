//! Owns the `_myrecode_*` tables in the target schema: checkpoint, backup and quarantine.
//!
//! The checkpoint row of a table advances in the same transaction as the batch's
//! writes and backups, so a kill at any instant leaves either the whole batch or
//! none of it: nothing skipped, nothing recoded twice (the backup's unique key on
//! job, table, column and key hash enforces the second).

use crate::db::quote;
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};

/// Checkpoint table name.
pub const CHECKPOINT: &str = "_myrecode_checkpoint";
/// Backup table name: original bytes of every changed value.
pub const BACKUP: &str = "_myrecode_backup";
/// Quarantine table name: values left alone because no reading was safe.
pub const QUARANTINE: &str = "_myrecode_quarantine";

/// DDL of the three tables, each `IF NOT EXISTS` so a resumed run reuses them.
pub fn ddl(schema: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {} (
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL,
                fingerprint VARCHAR(32) NOT NULL, priors LONGTEXT NOT NULL,
                last_key BLOB NULL, done TINYINT NOT NULL DEFAULT 0,
                rows_read BIGINT NOT NULL DEFAULT 0, rows_changed BIGINT NOT NULL DEFAULT 0,
                rows_quarantined BIGINT NOT NULL DEFAULT 0, rows_conflicted BIGINT NOT NULL DEFAULT 0,
                phase VARCHAR(16) NOT NULL DEFAULT '',
                updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
                PRIMARY KEY (job, tbl)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            quote::table(schema, CHECKPOINT)
        ),
        per_value_ddl(
            schema,
            BACKUP,
            "label VARCHAR(40) NOT NULL,
                old_value LONGBLOB NOT NULL, new_value LONGBLOB NOT NULL,",
        ),
        per_value_ddl(
            schema,
            QUARANTINE,
            "value LONGBLOB NOT NULL, reason VARCHAR(255) NOT NULL, runner_up VARCHAR(64) NULL,",
        ),
        super::pace::ddl(schema),
    ]
}

/// DDL of a table with one row per job, table, column and key (backup, quarantine), holding `payload`.
fn per_value_ddl(schema: &str, table: &str, payload: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, col VARCHAR(64) NOT NULL,
                key_bytes BLOB NOT NULL,
                key_hash BINARY(32) AS (UNHEX(SHA2(key_bytes, 256))) STORED,
                {payload}
                at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                UNIQUE KEY u_row (job, tbl, col, key_hash)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, table)
    )
}

/// Whether the checkpoint table has its `phase` column, `?` schema and `?` table: a count.
pub const HAS_PHASE_SQL: &str = "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = 'phase'";

/// Adds `phase` to a checkpoint table made before the copy strategy.
pub fn add_phase_sql(schema: &str) -> String {
    format!(
        "ALTER TABLE {} ADD COLUMN phase VARCHAR(16) NOT NULL DEFAULT ''",
        quote::table(schema, CHECKPOINT)
    )
}

/// Reads a table's checkpoint, `?` job and `?` table, its columns in [`State`]'s order.
pub fn load_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(fingerprint AS CHAR), CAST(priors AS CHAR), last_key, done, rows_read, rows_changed, rows_quarantined, rows_conflicted, CAST(phase AS CHAR) \
         FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// Inserts or updates a table's checkpoint: eleven `?`s, job and table first, then
/// [`State`]'s fields in its order.
pub fn save_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, tbl, fingerprint, priors, last_key, done, rows_read, rows_changed, rows_quarantined, rows_conflicted, phase) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE fingerprint = VALUES(fingerprint), priors = VALUES(priors), last_key = VALUES(last_key), \
         done = VALUES(done), rows_read = VALUES(rows_read), rows_changed = VALUES(rows_changed), \
         rows_quarantined = VALUES(rows_quarantined), rows_conflicted = VALUES(rows_conflicted), phase = VALUES(phase)",
        quote::table(schema, CHECKPOINT)
    )
}

/// Forgets a table's checkpoint, `?` job and `?` table.
pub fn delete_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// Creates the tables, turning a missing privilege into an error that says which GRANT is needed.
pub async fn ensure(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    for sql in ddl(schema) {
        conn.execute(sql.as_str()).await.map_err(|e| {
            let denied = e
                .as_database_error()
                .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|m| m.number()))
                .is_some_and(|n| n == 1142 || n == 1044);
            if denied {
                anyhow!(
                    "missing privilege: cannot create myrecode's bookkeeping tables (_myrecode_*) in schema '{schema}'. \
                     Fix: GRANT CREATE, INSERT, UPDATE, DELETE, SELECT ON `{schema}`.* TO the job's user"
                )
            } else {
                anyhow!("cannot create myrecode's bookkeeping tables in '{schema}': {e}")
            }
        })?;
    }
    // Checkpoint tables made before the copy strategy lack `phase`.
    let has_phase: i64 = sqlx::query_scalar(HAS_PHASE_SQL)
        .bind(schema)
        .bind(CHECKPOINT)
        .fetch_one(&mut *conn)
        .await
        .context("reading the checkpoint table's columns")?;
    if has_phase == 0 {
        conn.execute(add_phase_sql(schema).as_str())
            .await
            .context("adding the phase column to the checkpoint table")?;
    }
    Ok(())
}

/// A table's saved progress.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// What the job said about this table when the run began.
    pub fingerprint: String,
    /// Column priors (JSON), fixed at the start so every resume decides alike.
    pub priors: String,
    /// Packed key of the last row done; `None` before the first batch.
    pub last_key: Option<Vec<u8>>,
    /// Whether the table is finished.
    pub done: bool,
    /// Rows read.
    pub rows_read: u64,
    /// Values rewritten.
    pub rows_changed: u64,
    /// Values quarantined.
    pub rows_quarantined: u64,
    /// Rows changed by the application under us (re-read, never overwritten).
    pub rows_conflicted: u64,
    /// Copy strategy only: `copying`, `checking`, `replaying` or `done` (empty for in-place).
    pub phase: String,
}

/// Loads a table's checkpoint, if one exists.
pub async fn load(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
) -> Result<Option<State>> {
    let row = sqlx::query(&load_sql(schema))
        .bind(job)
        .bind(table)
        .fetch_optional(conn)
        .await
        .context("reading the checkpoint")?;
    Ok(row.map(|r| State {
        fingerprint: r.get(0),
        priors: r.get(1),
        last_key: r.get(2),
        done: r.get::<i8, _>(3) != 0,
        rows_read: r.get::<i64, _>(4) as u64,
        rows_changed: r.get::<i64, _>(5) as u64,
        rows_quarantined: r.get::<i64, _>(6) as u64,
        rows_conflicted: r.get::<i64, _>(7) as u64,
        phase: r.get(8),
    }))
}

/// Writes a table's checkpoint (insert or update), inside the caller's transaction.
pub async fn save(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
    s: &State,
) -> Result<()> {
    sqlx::query(&save_sql(schema))
        .bind(job)
        .bind(table)
        .bind(&s.fingerprint)
        .bind(&s.priors)
        .bind(s.last_key.clone())
        .bind(s.done as i8)
        .bind(s.rows_read as i64)
        .bind(s.rows_changed as i64)
        .bind(s.rows_quarantined as i64)
        .bind(s.rows_conflicted as i64)
        .bind(&s.phase)
        .execute(conn)
        .await
        .context("saving the checkpoint")?;
    Ok(())
}

/// A stable 64-bit FNV-1a fingerprint, hex: what the job says about a table, to spot edits between runs.
pub fn fingerprint(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_statements_quote_the_schema() {
        assert_eq!(
            load_sql("my`db"),
            "SELECT CAST(fingerprint AS CHAR), CAST(priors AS CHAR), last_key, done, rows_read, rows_changed, \
             rows_quarantined, rows_conflicted, CAST(phase AS CHAR) FROM `my``db`.`_myrecode_checkpoint` WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            save_sql("база данных"),
            "INSERT INTO `база данных`.`_myrecode_checkpoint` (job, tbl, fingerprint, priors, last_key, done, rows_read, \
             rows_changed, rows_quarantined, rows_conflicted, phase) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE fingerprint = VALUES(fingerprint), priors = VALUES(priors), last_key = VALUES(last_key), \
             done = VALUES(done), rows_read = VALUES(rows_read), rows_changed = VALUES(rows_changed), \
             rows_quarantined = VALUES(rows_quarantined), rows_conflicted = VALUES(rows_conflicted), phase = VALUES(phase)"
        );
        assert_eq!(
            delete_sql("order"),
            "DELETE FROM `order`.`_myrecode_checkpoint` WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            add_phase_sql("s"),
            "ALTER TABLE `s`.`_myrecode_checkpoint` ADD COLUMN phase VARCHAR(16) NOT NULL DEFAULT ''"
        );
    }

    #[test]
    fn bookkeeping_tables_are_created_once_with_their_unique_keys() {
        let ddl = ddl("a`b");
        assert_eq!(ddl.len(), 4);
        assert_eq!(
            ddl[0],
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_checkpoint` (
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL,
                fingerprint VARCHAR(32) NOT NULL, priors LONGTEXT NOT NULL,
                last_key BLOB NULL, done TINYINT NOT NULL DEFAULT 0,
                rows_read BIGINT NOT NULL DEFAULT 0, rows_changed BIGINT NOT NULL DEFAULT 0,
                rows_quarantined BIGINT NOT NULL DEFAULT 0, rows_conflicted BIGINT NOT NULL DEFAULT 0,
                phase VARCHAR(16) NOT NULL DEFAULT '',
                updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
                PRIMARY KEY (job, tbl)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(
            ddl[1],
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_backup` (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, col VARCHAR(64) NOT NULL,
                key_bytes BLOB NOT NULL,
                key_hash BINARY(32) AS (UNHEX(SHA2(key_bytes, 256))) STORED,
                label VARCHAR(40) NOT NULL,
                old_value LONGBLOB NOT NULL, new_value LONGBLOB NOT NULL,
                at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                UNIQUE KEY u_row (job, tbl, col, key_hash)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(
            ddl[2],
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_quarantine` (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, col VARCHAR(64) NOT NULL,
                key_bytes BLOB NOT NULL,
                key_hash BINARY(32) AS (UNHEX(SHA2(key_bytes, 256))) STORED,
                value LONGBLOB NOT NULL, reason VARCHAR(255) NOT NULL, runner_up VARCHAR(64) NULL,
                at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                UNIQUE KEY u_row (job, tbl, col, key_hash)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(ddl[3], crate::engine::pace::ddl("a`b"));
    }
}

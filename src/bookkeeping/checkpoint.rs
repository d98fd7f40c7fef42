//! Owns the `_myrecode_*` tables in the target schema: checkpoint, backup and quarantine.
//!
//! The checkpoint row of a table advances in the same transaction as the batch's
//! writes and backups, so a kill at any instant leaves either the whole batch or
//! none of it: nothing skipped, nothing recoded twice (the backup's unique key on
//! job, table, column and key enforces the second).

use crate::db::{errno, quote};
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};

pub use super::tables::{BACKUP, CHECKPOINT, QUARANTINE};

/// DDL of the bookkeeping tables, each `IF NOT EXISTS` so a resumed run reuses them.
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
                rows_per_sec DOUBLE NULL, rate_rows BIGINT NOT NULL DEFAULT 0, rate_at TIMESTAMP(6) NULL,
                cutover_pause_us BIGINT NULL, checked_under_start BIGINT NULL,
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
        super::control_table::ddl(schema),
        super::decided::ddl(schema),
    ]
}

/// DDL of a table with one row per job, table, column and key (backup, quarantine), holding `payload`.
///
/// The unique key names a row by `key_id`: its packed key itself when shorter than 64 bytes,
/// else 32 bytes `FF` and the key's SHA-256 (64 bytes, so never equal to a short key). A
/// batch's keys ascend, and so do their packed forms of one length: the index grows at its
/// end, where a hash of every key (the first layout, kept by tables made before) scattered
/// each insert over an index bigger than the buffer pool, and the in-place run's backups cost
/// more than its updates. Nothing reads `key_id`; it is there for uniqueness.
fn per_value_ddl(schema: &str, table: &str, payload: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, col VARCHAR(64) NOT NULL,
                key_bytes BLOB NOT NULL,
                key_id VARBINARY(64) AS (IF(LENGTH(key_bytes) < 64, key_bytes, CONCAT(REPEAT(X'FF', 32), UNHEX(SHA2(key_bytes, 256))))) STORED,
                {payload}
                at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                UNIQUE KEY u_row (job, tbl, col, key_id)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, table)
    )
}

/// Columns the checkpoint table gained after its first release, with their definitions:
/// [`ensure`] adds those an existing table lacks, so a job begun by an older myrecode goes on
/// (`updated_at` was there from the start; it is listed so a hand-made table is mended too).
pub const CHECKPOINT_ADDED: &[(&str, &str)] = &[
    ("phase", "VARCHAR(16) NOT NULL DEFAULT ''"),
    (
        "updated_at",
        "TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)",
    ),
    ("rows_per_sec", "DOUBLE NULL"),
    ("rate_rows", "BIGINT NOT NULL DEFAULT 0"),
    ("rate_at", "TIMESTAMP(6) NULL"),
    ("cutover_pause_us", "BIGINT NULL"),
    ("checked_under_start", "BIGINT NULL"),
];

/// Records, on the checkpoint row of each table `?` job and `?` table, how long its cut-over
/// paused reads and writes: whichever run finishes the swap prints it from here (a
/// connection cut right after the rename leaves the finish, and the line, to a retry).
pub fn record_pause_sql(schema: &str) -> String {
    format!(
        "UPDATE {} SET cutover_pause_us = ? WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// The recorded cut-over pause of `?` job and `?` table, in microseconds (NULL: not recorded).
pub fn recorded_pause_sql(schema: &str) -> String {
    format!(
        "SELECT cutover_pause_us FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// Records the cut-over's `pause` on every table of `tables` (see [`record_pause_sql`]).
pub async fn record_pause(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[&str],
    pause: std::time::Duration,
) -> Result<()> {
    let sql = record_pause_sql(schema);
    for t in tables {
        sqlx::query(&sql)
            .bind(pause.as_micros() as i64)
            .bind(job)
            .bind(t)
            .execute(&mut *conn)
            .await
            .context("recording the cut-over's pause")?;
    }
    Ok(())
}

/// The cut-over pause recorded for `table`, if the run that swapped it could record one.
pub async fn recorded_pause(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
) -> Result<Option<std::time::Duration>> {
    let us: Option<Option<i64>> = sqlx::query_scalar(&recorded_pause_sql(schema))
        .bind(job)
        .bind(table)
        .fetch_optional(&mut *conn)
        .await
        .context("reading the cut-over's recorded pause")?;
    Ok(us
        .flatten()
        .map(|u| std::time::Duration::from_micros(u.max(0) as u64)))
}

/// The column names of a table, `?` schema and `?` table.
pub const COLUMNS_SQL: &str = "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?";

/// Adds to `table` the `wanted` columns it lacks (`have`: its columns now), in one statement;
/// `None` when it lacks none. Checked against the catalog rather than written
/// `ADD COLUMN IF NOT EXISTS`, which MariaDB knows and MySQL does not.
pub fn add_columns_sql(
    schema: &str,
    table: &str,
    wanted: &[(&str, &str)],
    have: &[String],
) -> Option<String> {
    let adds: Vec<String> = wanted
        .iter()
        .filter(|(name, _)| !have.iter().any(|h| h.eq_ignore_ascii_case(name)))
        .map(|(name, def)| format!("ADD COLUMN {} {def}", quote::ident(name)))
        .collect();
    (!adds.is_empty()).then(|| {
        format!(
            "ALTER TABLE {} {}",
            quote::table(schema, table),
            adds.join(", ")
        )
    })
}

/// Reads a table's checkpoint, `?` job and `?` table, its columns in [`State`]'s order.
pub fn load_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(fingerprint AS CHAR), CAST(priors AS CHAR), last_key, done, rows_read, rows_changed, rows_quarantined, rows_conflicted, CAST(phase AS CHAR) \
         FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// How long `rows_per_sec` is measured over: long enough to span several batches and their
/// pauses, short enough that `status` follows a change of pace.
pub const RATE_WINDOW_SECS: u32 = 2;
/// A checkpoint not saved for this long was paused or stopped: the next save starts a new
/// window rather than count the stop in the pace.
pub const RATE_IDLE_SECS: u32 = 60;

/// Inserts or updates a table's checkpoint: eleven `?`s, job and table first, then
/// [`State`]'s fields in its order.
///
/// The same statement keeps `updated_at` and the pace (`rows_per_sec`: rows read per second
/// over the last window of [`RATE_WINDOW_SECS`]) for `myrecode status`, so the run spends
/// no round trip on them. The server computes the pace from the row it replaces: `rate_rows`
/// and `rate_at` hold where the window began. The assignments that read `rate_at` and
/// `updated_at` come before the ones that set them, which gives the same result whether the
/// server assigns left to right (MySQL, MariaDB) or all at once (MariaDB's
/// `SIMULTANEOUS_ASSIGNMENT`). `updated_at` is set outright: `ON UPDATE` skips a save that
/// changes nothing else.
pub fn save_sql(schema: &str) -> String {
    let fresh =
        format!("rate_at IS NOT NULL AND updated_at >= NOW(6) - INTERVAL {RATE_IDLE_SECS} SECOND");
    let over = format!("rate_at <= NOW(6) - INTERVAL {RATE_WINDOW_SECS} SECOND");
    let restart = format!("NOT ({fresh}) OR {over}");
    format!(
        "INSERT INTO {} (job, tbl, fingerprint, priors, last_key, done, rows_read, rows_changed, rows_quarantined, rows_conflicted, phase) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE fingerprint = VALUES(fingerprint), priors = VALUES(priors), last_key = VALUES(last_key), \
         done = VALUES(done), rows_read = VALUES(rows_read), rows_changed = VALUES(rows_changed), \
         rows_quarantined = VALUES(rows_quarantined), rows_conflicted = VALUES(rows_conflicted), phase = VALUES(phase), \
         rows_per_sec = IF({fresh} AND {over}, \
         GREATEST(0, VALUES(rows_read) - rate_rows) * 1000000 / GREATEST(1, TIMESTAMPDIFF(MICROSECOND, rate_at, NOW(6))), rows_per_sec), \
         rate_rows = IF({restart}, VALUES(rows_read), rate_rows), \
         rate_at = IF({restart}, NOW(6), rate_at), \
         updated_at = NOW(6)",
        quote::table(schema, CHECKPOINT)
    )
}

/// Whether a table has a checkpoint, `?` job and `?` table (any layout of the table, an
/// older build's included).
pub fn exists_sql(schema: &str) -> String {
    format!(
        "SELECT 1 FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// The tables with a checkpoint under `?` job.
pub fn job_tables_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(tbl AS CHAR) FROM {} WHERE job = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// The tables of `job` (each has a checkpoint from its first batch on).
pub async fn job_tables(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
) -> Result<Vec<String>> {
    sqlx::query_scalar(&job_tables_sql(schema))
        .bind(job)
        .fetch_all(conn)
        .await
        .context("reading the job's tables from its checkpoints")
}

/// Forgets a table's checkpoint, `?` job and `?` table.
pub fn delete_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    )
}

/// Refuses a bookkeeping table in `schema` that is not the tool's own (see
/// [`super::ownership`]); reads only.
pub async fn refuse_foreign(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    let ownership = &super::ownership::LAYOUTS;
    for (table, wanted) in ownership.iter().chain(super::ownership::ENGINE_LAYOUTS) {
        let have = columns_of(conn, schema, table).await?;
        let missing = super::ownership::missing(wanted, &have);
        if !have.is_empty() && !missing.is_empty() {
            return Err(anyhow!(super::ownership::refusal(schema, table, &missing)));
        }
    }
    Ok(())
}

/// Whether bookkeeping table `table` of `schema`, which exists, is the tool's own: it has
/// every column of its layout ([`super::ownership::layout_of`]); a name the tool does not
/// keep is never its own. Reads only.
pub async fn is_ours(conn: &mut MySqlConnection, schema: &str, table: &str) -> Result<bool> {
    let Some(wanted) = super::ownership::layout_of(table) else {
        return Ok(false);
    };
    let have = columns_of(conn, schema, table).await?;
    Ok(super::ownership::missing(wanted, &have).is_empty())
}

/// Creates the tables, turning a missing privilege into an error that says which GRANT is
/// needed; a table of the user's under one of their names is refused first.
pub async fn ensure(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    refuse_foreign(conn, schema).await?;
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
    // Tables made by an older myrecode lack the columns added since.
    add_missing(conn, schema, CHECKPOINT, CHECKPOINT_ADDED).await?;
    add_missing(
        conn,
        schema,
        super::control_table::CONTROL,
        super::control_table::CONTROL_ADDED,
    )
    .await
}

/// The column names `table` has now (none: no such table).
pub async fn columns_of(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<String>> {
    sqlx::query_scalar(COLUMNS_SQL)
        .bind(schema)
        .bind(table)
        .fetch_all(conn)
        .await
        .with_context(|| format!("reading the columns of {}", quote::table(schema, table)))
}

/// Adds the `wanted` columns `table` lacks. Another myrecode process (a `pause` beside a
/// `run`) may add them first: a column that exists by then is what was wanted.
async fn add_missing(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    wanted: &[(&str, &str)],
) -> Result<()> {
    let have = columns_of(conn, schema, table).await?;
    let Some(sql) = add_columns_sql(schema, table, wanted, &have) else {
        return Ok(());
    };
    match conn.execute(sql.as_str()).await {
        Err(e) if errno::of(&e) == Some(errno::DUP_FIELDNAME) => Ok(()),
        other => other.map(drop).with_context(|| {
            format!(
                "adding myrecode's new columns to {}",
                quote::table(schema, table)
            )
        }),
    }
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
    fn the_cutover_pause_is_recorded_on_the_checkpoint_row() {
        assert_eq!(
            record_pause_sql("a`b"),
            "UPDATE `a``b`.`_myrecode_checkpoint` SET cutover_pause_us = ? WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            recorded_pause_sql("s"),
            "SELECT cutover_pause_us FROM `s`.`_myrecode_checkpoint` WHERE job = ? AND tbl = ?"
        );
        assert!(ddl("s")[0].contains("cutover_pause_us BIGINT NULL"));
        assert!(CHECKPOINT_ADDED.contains(&("cutover_pause_us", "BIGINT NULL")));
    }

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
             rows_quarantined = VALUES(rows_quarantined), rows_conflicted = VALUES(rows_conflicted), phase = VALUES(phase), \
             rows_per_sec = IF(rate_at IS NOT NULL AND updated_at >= NOW(6) - INTERVAL 60 SECOND AND rate_at <= NOW(6) - INTERVAL 2 SECOND, \
             GREATEST(0, VALUES(rows_read) - rate_rows) * 1000000 / GREATEST(1, TIMESTAMPDIFF(MICROSECOND, rate_at, NOW(6))), rows_per_sec), \
             rate_rows = IF(NOT (rate_at IS NOT NULL AND updated_at >= NOW(6) - INTERVAL 60 SECOND) OR rate_at <= NOW(6) - INTERVAL 2 SECOND, \
             VALUES(rows_read), rate_rows), \
             rate_at = IF(NOT (rate_at IS NOT NULL AND updated_at >= NOW(6) - INTERVAL 60 SECOND) OR rate_at <= NOW(6) - INTERVAL 2 SECOND, \
             NOW(6), rate_at), \
             updated_at = NOW(6)"
        );
        assert_eq!(
            delete_sql("order"),
            "DELETE FROM `order`.`_myrecode_checkpoint` WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            exists_sql("order"),
            "SELECT 1 FROM `order`.`_myrecode_checkpoint` WHERE job = ? AND tbl = ?"
        );
    }

    #[test]
    fn an_older_checkpoint_table_gets_only_the_columns_it_lacks() {
        let have = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // As the first release made it: every column added since is missing.
        let first = have(&[
            "job",
            "tbl",
            "fingerprint",
            "priors",
            "last_key",
            "done",
            "rows_read",
            "rows_changed",
            "rows_quarantined",
            "rows_conflicted",
            "updated_at",
        ]);
        assert_eq!(
            add_columns_sql("s", CHECKPOINT, CHECKPOINT_ADDED, &first).unwrap(),
            "ALTER TABLE `s`.`_myrecode_checkpoint` ADD COLUMN `phase` VARCHAR(16) NOT NULL DEFAULT '', \
             ADD COLUMN `rows_per_sec` DOUBLE NULL, ADD COLUMN `rate_rows` BIGINT NOT NULL DEFAULT 0, \
             ADD COLUMN `rate_at` TIMESTAMP(6) NULL, ADD COLUMN `cutover_pause_us` BIGINT NULL, \
             ADD COLUMN `checked_under_start` BIGINT NULL"
        );
        // The catalog may spell names in another case.
        let mut now = first.clone();
        now.extend(have(&[
            "PHASE",
            "rows_per_sec",
            "rate_rows",
            "rate_at",
            "cutover_pause_us",
            "checked_under_start",
        ]));
        assert_eq!(
            add_columns_sql("s", CHECKPOINT, CHECKPOINT_ADDED, &now),
            None
        );
        // A table made now has every added column.
        for (name, def) in CHECKPOINT_ADDED {
            assert!(ddl("s")[0].contains(&format!("{name} {def}")), "{name}");
        }
    }

    #[test]
    fn bookkeeping_tables_are_created_once_with_their_unique_keys() {
        let ddl = ddl("a`b");
        assert_eq!(ddl.len(), 5);
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
                rows_per_sec DOUBLE NULL, rate_rows BIGINT NOT NULL DEFAULT 0, rate_at TIMESTAMP(6) NULL,
                cutover_pause_us BIGINT NULL, checked_under_start BIGINT NULL,
                PRIMARY KEY (job, tbl)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(
            ddl[1],
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_backup` (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, col VARCHAR(64) NOT NULL,
                key_bytes BLOB NOT NULL,
                key_id VARBINARY(64) AS (IF(LENGTH(key_bytes) < 64, key_bytes, CONCAT(REPEAT(X'FF', 32), UNHEX(SHA2(key_bytes, 256))))) STORED,
                label VARCHAR(40) NOT NULL,
                old_value LONGBLOB NOT NULL, new_value LONGBLOB NOT NULL,
                at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                UNIQUE KEY u_row (job, tbl, col, key_id)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(
            ddl[2],
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_quarantine` (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, col VARCHAR(64) NOT NULL,
                key_bytes BLOB NOT NULL,
                key_id VARBINARY(64) AS (IF(LENGTH(key_bytes) < 64, key_bytes, CONCAT(REPEAT(X'FF', 32), UNHEX(SHA2(key_bytes, 256))))) STORED,
                value LONGBLOB NOT NULL, reason VARCHAR(255) NOT NULL, runner_up VARCHAR(64) NULL,
                at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
                UNIQUE KEY u_row (job, tbl, col, key_id)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(ddl[3], crate::bookkeeping::control_table::ddl("a`b"));
        assert_eq!(ddl[4], crate::bookkeeping::decided::ddl("a`b"));
    }
}

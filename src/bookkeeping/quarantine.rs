//! The quarantine: values no reading was safe for, left as they are and listed with why.

use super::checkpoint::QUARANTINE;
use crate::db::quote;
use anyhow::{Context, Result};
use sqlx::MySqlConnection;
use sqlx::Row;

/// An undecidable value, for the quarantine table.
pub struct Quarantined {
    /// Column.
    pub col: String,
    /// Packed key of its row.
    pub key: Vec<u8>,
    /// The stored bytes, left as they are.
    pub value: Vec<u8>,
    /// Why no reading was safe.
    pub reason: String,
    /// The best reading that was not good enough.
    pub runner_up: Option<String>,
}

/// Lists `rows` undecidable values, seven `?`s per row; a value listed already stays as it was.
pub fn insert_sql(schema: &str, rows: usize) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?, ?)"; rows].join(", ");
    format!(
        "INSERT IGNORE INTO {} (job, tbl, col, key_bytes, value, reason, runner_up) VALUES {values}",
        quote::table(schema, QUARANTINE)
    )
}

/// [`insert_sql`] where a value listed already gives way to the one now listed for its key:
/// a copy's entry is the row's latest undecided value (the one its shadow holds).
pub fn upsert_sql(schema: &str, rows: usize) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?, ?)"; rows].join(", ");
    format!(
        "INSERT INTO {} (job, tbl, col, key_bytes, value, reason, runner_up) VALUES {values} \
         ON DUPLICATE KEY UPDATE value = VALUES(value), reason = VALUES(reason), runner_up = VALUES(runner_up)",
        quote::table(schema, QUARANTINE)
    )
}

/// Lists undecidable values in the quarantine table (once per job, table, column and key);
/// returns how many were new.
pub async fn save(
    tx: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
    quarantined: &[Quarantined],
) -> Result<u64> {
    save_by(tx, (schema, job, table), quarantined, insert_sql).await
}

/// Lists a copy's undecidable values, each key's entry the value its shadow now holds
/// ([`upsert_sql`]); returns how many entries were added or changed (a listed value met
/// again as it was counts 0).
pub async fn save_latest(
    tx: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
    quarantined: &[Quarantined],
) -> Result<u64> {
    save_by(tx, (schema, job, table), quarantined, upsert_sql).await
}

/// Lists `quarantined` by the statement `sql` makes for a number of rows.
async fn save_by(
    tx: &mut MySqlConnection,
    (schema, job, table): (&str, &str, &str),
    quarantined: &[Quarantined],
    sql: fn(&str, usize) -> String,
) -> Result<u64> {
    let mut added = 0;
    for chunk in quarantined.chunks(200) {
        let sql = sql(schema, chunk.len());
        let mut q = sqlx::query(&sql);
        for r in chunk {
            q = q
                .bind(job)
                .bind(table)
                .bind(&r.col)
                .bind(&r.key)
                .bind(&r.value)
                .bind(&r.reason)
                .bind(&r.runner_up);
        }
        added += q
            .execute(&mut *tx)
            .await
            .context("listing undecidable values in the quarantine table")?
            .rows_affected();
    }
    Ok(added)
}

/// Takes one entry off the list, `?` its id (decided, or its row no longer holds it).
pub fn delete_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE id = ?",
        quote::table(schema, QUARANTINE)
    )
}

/// The quarantined values of a job's table: `(id, column, packed key, stored bytes)`.
pub async fn quarantined(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
) -> Result<Vec<(i64, String, Vec<u8>, Vec<u8>)>> {
    let exists: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
    )
    .bind(schema)
    .bind(QUARANTINE)
    .fetch_one(&mut *conn)
    .await
    .context("looking for the quarantine table")?;
    if exists == 0 {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, col, key_bytes, value FROM {} WHERE job = ? AND tbl = ? ORDER BY id",
        quote::table(schema, QUARANTINE)
    );
    let rows = sqlx::query(&sql)
        .bind(job)
        .bind(table)
        .fetch_all(&mut *conn)
        .await
        .context("reading the quarantine table")?;
    // `col` is utf8mb4_bin, which the driver hands over as bytes.
    rows.iter()
        .map(|r| {
            let col: Vec<u8> = r.try_get(1)?;
            Ok((
                r.try_get(0)?,
                String::from_utf8_lossy(&col).into_owned(),
                r.try_get(2)?,
                r.try_get(3)?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarantine_insert_quotes_the_schema_and_binds_every_row() {
        assert_eq!(
            insert_sql("my`db", 2),
            "INSERT IGNORE INTO `my``db`.`_myrecode_quarantine` (job, tbl, col, key_bytes, value, reason, runner_up) \
             VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?)"
        );
        assert_eq!(
            upsert_sql("my`db", 1),
            "INSERT INTO `my``db`.`_myrecode_quarantine` (job, tbl, col, key_bytes, value, reason, runner_up) \
             VALUES (?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE value = VALUES(value), \
             reason = VALUES(reason), runner_up = VALUES(runner_up)"
        );
        assert_eq!(
            delete_sql("my`db"),
            "DELETE FROM `my``db`.`_myrecode_quarantine` WHERE id = ?"
        );
    }
}

//! Decisions a copy remembers: what the DBA (`run --decisions`) or the job's fallback chose
//! for a value no reading decided, by table, column and stored bytes, so a copy's replay (or
//! the rebuild of a keyless table) that meets the same bytes again writes what was decided
//! instead of listing them anew.

use crate::db::quote;
use crate::detect::Label;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};
use std::collections::HashMap;

/// The table of remembered decisions.
pub const DECIDED: &str = "_myrecode_decided";

/// What `label` holds for a decision to keep the value as the copy read it.
const KEEP: &str = "keep";

/// Per column, stored bytes and the label they are read as (`None`: kept as the copy read them).
pub type Remembered = HashMap<String, HashMap<Vec<u8>, Option<Label>>>;

/// DDL of the table, `IF NOT EXISTS`; one row per job, table, column and stored value (by
/// its SHA-256, so any length is unique).
pub fn ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (
                id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
                job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, col VARCHAR(64) NOT NULL,
                value LONGBLOB NOT NULL,
                value_id BINARY(32) AS (UNHEX(SHA2(value, 256))) STORED,
                label VARCHAR(64) NOT NULL,
                UNIQUE KEY one_value (job, tbl, col, value_id)
            ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, DECIDED)
    )
}

/// Remembers one decision, four `?`s and the label: a later decision on the same bytes wins.
pub fn remember_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, tbl, col, value, label) VALUES (?, ?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE label = VALUES(label)",
        quote::table(schema, DECIDED)
    )
}

/// Remembers that `value` of `table`.`col` is read as `label` (`None`: kept as the copy read it).
pub async fn remember(
    conn: &mut MySqlConnection,
    schema: &str,
    (job, table, col): (&str, &str, &str),
    value: &[u8],
    label: Option<Label>,
) -> Result<()> {
    let label = label.map_or(KEEP.to_string(), |l| l.to_string());
    sqlx::query(&remember_sql(schema))
        .bind(job)
        .bind(table)
        .bind(col)
        .bind(value)
        .bind(label)
        .execute(conn)
        .await
        .context("remembering a decision")?;
    Ok(())
}

/// The decisions remembered for a job's table (none before the table exists).
pub async fn load(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
) -> Result<Remembered> {
    let exists: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
    )
    .bind(schema)
    .bind(DECIDED)
    .fetch_one(&mut *conn)
    .await
    .context("looking for the decisions' table")?;
    let mut out = Remembered::new();
    if exists == 0 {
        return Ok(out);
    }
    let sql = format!(
        "SELECT col, value, label FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, DECIDED)
    );
    let rows = sqlx::query(&sql)
        .bind(job)
        .bind(table)
        .fetch_all(&mut *conn)
        .await
        .context("reading the remembered decisions")?;
    for r in rows {
        // utf8mb4_bin columns reach the driver as bytes.
        let col: Vec<u8> = r.try_get(0)?;
        let label: Vec<u8> = r.try_get(2)?;
        let label = String::from_utf8_lossy(&label);
        let choice = match label.as_ref() {
            KEEP => None,
            l => Some(
                l.parse::<Label>()
                    .map_err(|_| anyhow::anyhow!("{DECIDED} holds an unknown label '{l}'"))?,
            ),
        };
        out.entry(String::from_utf8_lossy(&col).into_owned())
            .or_default()
            .insert(r.try_get(1)?, choice);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decisions_table_is_quoted_and_a_later_decision_wins() {
        assert_eq!(
            remember_sql("a`b"),
            "INSERT INTO `a``b`.`_myrecode_decided` (job, tbl, col, value, label) VALUES (?, ?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE label = VALUES(label)"
        );
        assert!(ddl("a`b").starts_with("CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_decided`"));
        assert!(ddl("s").contains("UNIQUE KEY one_value (job, tbl, col, value_id)"));
    }
}

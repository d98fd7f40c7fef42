//! The server start a copied table without transactions was last compared with its copy
//! under, kept on its checkpoint row: a restart since means the table may have changed
//! unlogged (see [`crate::engine::copy::myisam::faults`]).

use crate::bookkeeping::checkpoint;
use crate::db::quote;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};

/// Seconds since the server started (`SHOW GLOBAL STATUS`, on MySQL and MariaDB alike).
pub const UPTIME_SQL: &str = "SHOW GLOBAL STATUS LIKE 'Uptime'";

/// The server's clock, in seconds since the epoch.
pub const NOW_SQL: &str = "SELECT CAST(UNIX_TIMESTAMP() AS SIGNED)";

/// Records on the checkpoint row (`?` start, `?` job, `?` table) the start of the server
/// the table's copy began on, or it was last compared on.
pub fn record_checked_sql(schema: &str) -> String {
    format!(
        "UPDATE {} SET checked_under_start = ? WHERE job = ? AND tbl = ?",
        quote::table(schema, checkpoint::CHECKPOINT)
    )
}

/// The recorded start (`?` job, `?` table).
pub fn recorded_checked_sql(schema: &str) -> String {
    format!(
        "SELECT checked_under_start FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, checkpoint::CHECKPOINT)
    )
}

/// Whether a table last compared on the server started at `recorded` (none: never, since
/// the job began) must be compared again on the one started at `now`. The start is computed
/// from whole seconds of uptime, so it wobbles by one; a restart takes longer than two.
pub fn restarted_since(recorded: Option<i64>, now: i64) -> bool {
    recorded.is_none_or(|r| (now - r).abs() > 2)
}

/// When the server started, in seconds since the epoch.
pub async fn server_started(conn: &mut MySqlConnection) -> Result<i64> {
    let uptime: String = sqlx::query(UPTIME_SQL)
        .fetch_one(&mut *conn)
        .await
        .context("reading the server's uptime")?
        .try_get(1)?;
    let now: i64 = sqlx::query_scalar(NOW_SQL).fetch_one(&mut *conn).await?;
    Ok(now - uptime.trim().parse::<i64>().unwrap_or(0))
}

/// Records the server's start on a new copy's checkpoint row: with no restart since, the
/// copy, its log and its check saw every change, and its cut-over compares nothing again.
pub(crate) async fn record_start(
    conn: &mut MySqlConnection,
    job: &str,
    schema: &str,
    table: &str,
) -> Result<()> {
    let started = server_started(conn).await?;
    record(conn, job, schema, table, started).await
}

/// Records on the table's checkpoint row the start of the server it was compared on.
pub(crate) async fn record(
    conn: &mut MySqlConnection,
    job: &str,
    schema: &str,
    table: &str,
    started: i64,
) -> Result<()> {
    sqlx::query(&record_checked_sql(schema))
        .bind(started)
        .bind(job)
        .bind(table)
        .execute(&mut *conn)
        .await
        .context("recording the server start the table is compared on")?;
    Ok(())
}

/// The server start recorded on the table's checkpoint row, if any.
pub(crate) async fn recorded_start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &crate::engine::table_plan::TablePlan,
) -> Result<Option<i64>> {
    let recorded: Option<Option<i64>> = sqlx::query_scalar(&recorded_checked_sql(&plan.schema))
        .bind(job)
        .bind(&plan.table)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(recorded.flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_is_a_start_more_than_two_seconds_away() {
        assert!(restarted_since(None, 1_000));
        assert!(!restarted_since(Some(1_000), 1_001));
        assert!(!restarted_since(Some(1_001), 999));
        assert!(restarted_since(Some(1_000), 1_003));
    }

    #[test]
    fn the_start_is_kept_on_the_checkpoint_row() {
        assert_eq!(
            record_checked_sql("s"),
            "UPDATE `s`.`_myrecode_checkpoint` SET checked_under_start = ? WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            recorded_checked_sql("s"),
            "SELECT checked_under_start FROM `s`.`_myrecode_checkpoint` WHERE job = ? AND tbl = ?"
        );
    }
}

//! Teardown: a copy abandoned before its cut-over, and the originals kept after one.

use crate::bookkeeping::checkpoint;
use crate::bookkeeping::names::names;
use crate::db::quote;
use crate::engine::copy::catalog::{is_sentry, table_exists};
use crate::engine::copy::cutover::leftover::settle_leftover_cutover;
use crate::engine::copy::setup::ownership::taken_names;
use crate::engine::copy::setup::sql::{drop_table_sql, drop_trigger_sql};
use crate::engine::error::EngineError;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// Abandons a copy that has not cut over: its triggers, shadow, log and sentry go, and its
/// checkpoint; the original table was never changed. Returns false when the table was
/// already swapped (then nothing is touched: `cleanup` or a swap back are the ways on).
pub async fn abort_table(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    job: &str,
) -> Result<bool> {
    let n = names(table);
    let saved = checkpoint::load(conn, schema, job, table).await?;
    if saved.as_ref().is_some_and(|s| s.done) {
        return Ok(false);
    }
    settle_leftover_cutover(conn, schema).await?;
    // Never started (no checkpoint), its names may be the user's: they stay (see `ownership`).
    if saved.is_none() && !taken_names(conn, schema, table).await?.is_empty() {
        return Ok(true);
    }
    for trg in &n.triggers {
        conn.execute(drop_trigger_sql(schema, trg).as_str())
            .await
            .with_context(|| format!("dropping trigger {trg}"))?;
    }
    if is_sentry(conn, schema, &n.old).await? {
        conn.execute(drop_table_sql(schema, &n.old).as_str())
            .await?;
    }
    if table_exists(conn, schema, &n.shadow).await? && table_exists(conn, schema, table).await? {
        conn.execute(drop_table_sql(schema, &n.shadow).as_str())
            .await?;
    }
    // A back log is made by a cut-over before its lock: one killed there leaves it.
    for log in [&n.log, &n.spare_log, &n.back_log] {
        conn.execute(drop_table_sql(schema, log).as_str()).await?;
    }
    sqlx::query(&checkpoint::delete_sql(schema))
        .bind(job)
        .bind(table)
        .execute(&mut *conn)
        .await
        .context("removing the aborted table's checkpoint")?;
    Ok(true)
}

/// After a finished copy: drops the kept original and the drained log. Returns the tables
/// dropped; refuses a copy still in progress.
pub async fn cleanup_table(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    job: &str,
) -> Result<Vec<String>> {
    let n = names(table);
    let reverted = match checkpoint::load(conn, schema, job, table).await? {
        Some(s) if s.done => s.phase == crate::engine::copy::Phase::Reverted.as_str(),
        Some(_) => {
            return Err(EngineError::StillCopying {
                table: table.to_string(),
            }
            .into())
        }
        None => return Ok(Vec::new()),
    };
    let mut dropped = Vec::new();
    // The back log's triggers, on the live table (after a revert, on the recoded one, which
    // goes below): the application's writes stop being logged for `revert`.
    for trg in &n.back_triggers {
        conn.execute(drop_trigger_sql(schema, trg).as_str())
            .await
            .with_context(|| format!("dropping trigger {trg}"))?;
    }
    // After a revert the recoded table is the one kept, under the shadow's name.
    let kept = if reverted { &n.shadow } else { &n.old };
    // A spare is left where a cut-over that would have closed the table failed before it did.
    for name in [kept, &n.log, &n.spare_log, &n.back_log] {
        if table_exists(conn, schema, name).await? && !is_sentry(conn, schema, name).await? {
            conn.execute(drop_existing_table_sql(schema, name).as_str())
                .await
                .with_context(|| format!("dropping {name}"))?;
            dropped.push(name.clone());
        }
    }
    Ok(dropped)
}

/// `DROP TABLE` of a table that must be there: gone, it is an error, not a silent success.
pub fn drop_existing_table_sql(schema: &str, table: &str) -> String {
    format!("DROP TABLE {}", quote::table(schema, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_original_is_dropped_only_if_it_is_there() {
        assert_eq!(
            drop_existing_table_sql("s", "таблица_myrecode_old"),
            "DROP TABLE `s`.`таблица_myrecode_old`"
        );
    }
}

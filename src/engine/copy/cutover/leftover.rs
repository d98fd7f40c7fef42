//! What an earlier run left of one table's cut-over, found and settled before its copy or its
//! cut-over goes on.

use crate::bookkeeping::checkpoint::State;
use crate::engine::copy::catalog::kill_query_sql;
use crate::engine::copy::catalog::{is_sentry, table_exists};
use crate::engine::copy::cutover::finish::finish;
use crate::engine::copy::cutover::swap_sql::{mark_pattern, MARKED_SQL};
use crate::engine::copy::setup::sql::drop_table_sql;
use crate::engine::copy::table::context::Ctx;
use crate::engine::error::EngineError;
use crate::engine::table_plan::TableOutcome;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::time::Duration;

/// Whether the cut-over's rename ran for this table: its shadow is gone and its original is
/// kept (no sentry in its place).
pub(crate) async fn renamed(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<bool> {
    let schema = ctx.plan.schema.as_str();
    Ok(!table_exists(conn, schema, &ctx.names.shadow).await?
        && table_exists(conn, schema, &ctx.names.old).await?
        && !is_sentry(conn, schema, &ctx.names.old).await?)
}

/// What an earlier run left of this table's cut-over, settled: swapped already (the rename
/// ran; finished now, `Some(Done)`), or the sentry of a cut-over interrupted before its
/// rename (dropped; the copy goes on, `None`).
pub(crate) async fn settle_table(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<Option<TableOutcome>> {
    let (schema, plan) = (ctx.plan.schema.as_str(), ctx.plan);
    if renamed(conn, ctx).await? {
        finish(conn, ctx, job, state).await?;
        return Ok(Some(TableOutcome::Done));
    }
    if !table_exists(conn, schema, &ctx.names.shadow).await? {
        return Err(EngineError::ShadowGone {
            table: plan.table.clone(),
            shadow: ctx.names.shadow.clone(),
        }
        .into());
    }
    if table_exists(conn, schema, &ctx.names.old).await? {
        if !is_sentry(conn, schema, &ctx.names.old).await? {
            return Err(EngineError::ShadowAndOriginal {
                table: plan.table.clone(),
                shadow: ctx.names.shadow.clone(),
                old: ctx.names.old.clone(),
            }
            .into());
        }
        conn.execute(drop_table_sql(schema, &ctx.names.old).as_str())
            .await?;
    }
    Ok(None)
}

/// Waits out (killing if need be) a cut-over rename a killed run left queued, so the tables
/// are looked at only once it has run or failed.
pub(crate) async fn settle_leftover_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
) -> Result<()> {
    let pattern = mark_pattern();
    for round in 0..50 {
        let ids: Vec<u64> = sqlx::query_scalar(MARKED_SQL)
            .bind(schema)
            .bind(&pattern)
            .fetch_all(&mut *conn)
            .await
            .context("looking for a cut-over left queued by an earlier run")?;
        if ids.is_empty() {
            return Ok(());
        }
        if round == 5 {
            for id in &ids {
                let _ = conn.execute(kill_query_sql(*id).as_str()).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(EngineError::RenameLeftQueued {
        schema: schema.to_string(),
    }
    .into())
}

//! What an earlier run left of one table's cut-over, found and settled before its copy or its
//! cut-over goes on.

use crate::bookkeeping::checkpoint::State;
use crate::engine::copy::cutover::swap::finish;
use crate::engine::copy::setup::sql::drop_table_sql;
use crate::engine::copy::table::context::{is_sentry, table_exists, Ctx};
use crate::engine::error::EngineError;
use crate::engine::plan::TableOutcome;
use anyhow::Result;
use sqlx::{Executor, MySqlConnection};

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

//! What the job's last cut-over carries across after its rename: the schema's views,
//! routines and events recreated in UTF-8 (planned and recorded before that cut-over), then
//! the schema's default. Applied from the record, so the run after a kill applies it alike.

use crate::engine::copy::cutover::carried::class::{planned, Carried, Cut};
use crate::engine::copy::cutover::carried::objects::Objects;
use crate::engine::copy::cutover::carried::schema_default::SchemaDefault;
use crate::engine::copy::table::context::Ctx;
use crate::engine::table_plan::TablePlan;
use anyhow::Result;
use sqlx::MySqlConnection;

/// Before the job's last cut-over: the views, routines and events to recreate, read as the
/// last group's copies (`ctxs`, of `plans`) read their texts, recorded.
pub(crate) async fn record_last(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    ctxs: &[Ctx<'_>],
    plans: &[TablePlan],
) -> Result<()> {
    let cut = Cut {
        ctxs,
        plans,
        ..Cut::of(schema, job)
    };
    planned::<Objects>(conn, &cut).await.map(|_| ())
}

/// After the job's last rename, or by the run after it: the recorded views, routines and
/// events recreated in UTF-8, then the schema's default (of the last group's `plans`).
pub(crate) async fn after_last(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    plans: &[TablePlan],
) -> Result<()> {
    let cut = Cut {
        plans,
        ..Cut::of(schema, job)
    };
    crate::engine::bridge::mark_swap(conn, schema, job).await?;
    Objects::settle(conn, &cut).await?;
    SchemaDefault::settle(conn, &cut).await?;
    Ok(())
}

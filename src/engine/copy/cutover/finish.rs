//! The finish of a table's cut-over, after its rename: the change-log triggers (now on the
//! kept original) dropped and the table marked done.

use crate::bookkeeping::checkpoint::{self, State};
use crate::engine::copy::phase::Phase;
use crate::engine::copy::setup::sql::drop_trigger_sql;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::replay::log_len;
use crate::engine::error::EngineError;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// After the rename: drop the triggers (now on the old table); mark the table done.
///
/// The (drained) log stays: the application's cached prepared statements may still list it
/// among the tables the old triggers used, and MariaDB fails them with 1146 if it is gone.
/// It goes together with the old table, at `myrecode cleanup`.
pub(crate) async fn finish(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<()> {
    let b = ctx.plan;
    // Writes that reached the original after the drain would be logged by the triggers, which
    // moved with it: never hide them (the cut-over's ordering is there to make this impossible).
    let left = log_len(conn, ctx).await?;
    if left > 0 {
        return Err(EngineError::CutoverAmbiguous {
            table: b.table.clone(),
            left,
            log: ctx.names.log.clone(),
            old: ctx.names.old.clone(),
        }
        .into());
    }
    for trg in &ctx.names.triggers {
        conn.execute(drop_trigger_sql(&b.schema, trg).as_str())
            .await
            .with_context(|| format!("dropping trigger {trg}"))?;
    }
    let mut next = state.clone();
    next.done = true;
    next.phase = Phase::Done.as_str().into();
    checkpoint::save(conn, &b.schema, job, &b.table, &next).await?;
    *state = next;
    Ok(())
}

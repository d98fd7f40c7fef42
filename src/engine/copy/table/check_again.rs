//! A copy sent back to its check pass (a cascade may have gone unlogged, or a table without
//! transactions restarted under), and that pass run to its end here and now.

use crate::bookkeeping::checkpoint::{self, State};
use crate::engine::copy::phase::Phase;
use crate::engine::copy::table::checker::check_batch;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::replay::replay_some;
use crate::engine::copy::table::stage::create_stage;
use crate::engine::table_plan::TablePlan;
use anyhow::Result;
use sqlx::MySqlConnection;
use std::collections::HashSet;

/// Whether a copy in this state has compared rows already, so a cascade it missed would stay
/// missed unless it is checked again (a copy still copying checks every row after).
pub(crate) fn checked_before(state: &State) -> bool {
    matches!(Phase::of(state), Phase::Checking | Phase::Replaying)
}

/// Sends a copy back to the start of its check pass: every row is compared with the shadow
/// again, and what a missed cascade changed is queued for replay. Saved at once, so a kill
/// before the check is done still checks it.
pub(crate) async fn check_again_from_start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    state: &mut State,
) -> Result<()> {
    check_again(conn, &plan.schema, job, &plan.table, state).await
}

/// [`check_again_from_start`] of `schema`.`table`.
pub(crate) async fn check_again(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
    state: &mut State,
) -> Result<()> {
    let mut next = state.clone();
    next.phase = Phase::Checking.as_str().into();
    next.last_key = None;
    checkpoint::save(conn, schema, job, table, &next).await?;
    *state = next;
    Ok(())
}

/// Runs a copy's check pass to its end, here and now (a copy sent back to it while the job
/// waits for or retries a cut-over), replaying what it queues.
pub(crate) async fn check_now(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<u64> {
    let mut differed = 0;
    create_stage(conn, ctx).await?;
    while Phase::of(state) == Phase::Checking {
        differed += check_batch(conn, ctx, job, ctx.plan.batch_size.max(1), state).await?;
        replay_some(conn, ctx, job, state, 1, (None, &mut HashSet::new())).await?;
    }
    Ok(differed)
}

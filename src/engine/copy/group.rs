//! The job's one cut-over: every copied table, each brought up to date by its replay, swapped
//! in at the same instant by one rename behind one lock, so the application never sees some
//! tables recoded and others not.
//!
//! Tables are copied one after another ([`super::prepare_table`]); while the later ones copy,
//! the earlier ones' triggers keep logging. Here every log is replayed in turn until all are
//! nearly drained (and, with `cutover: manual`, until `myrecode cutover`), then
//! [`super::cutover::cut_over`] locks them all, drains every log and renames every pair at
//! once. A kill before the rename leaves every original in place (the sentries make a late
//! rename fail); after it, every table is swapped, and a rerun finishes each.

use super::context::{context, Ctx};
use super::cutover::{cut_over, finish, settle_leftover_cutover};
use super::foreign::{drop_cascade_triggers, ensure_cascade_triggers, settle_moves};
use super::names::names;
use super::own_triggers::settle_triggers;
use super::replay::{log_len, replay_some};
use super::setup::{create_stage, ensure_triggers};
use super::{settle_table, sql, DRAIN_BEFORE_CUTOVER};
use crate::db::connect::ConnectionConfig;
use crate::engine::checkpoint::{self, State};
use crate::engine::events::{Event, Events};
use crate::engine::pace::{self, Flow, Pacer};
use crate::engine::plan::{TableOutcome, TablePlan};
use anyhow::{anyhow, Result};
use sqlx::{Executor, MySqlConnection};
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How the job's cut-over ended, with each table's final checkpoint.
#[derive(Debug, Clone)]
pub struct GroupOutcome {
    /// Done (every table swapped), interrupted, or aborted by the operator.
    pub outcome: TableOutcome,
    /// Each table of the cut-over and its checkpoint, in job order.
    pub states: Vec<(String, State)>,
}

/// Brings every copied table of the job (`plans`, each prepared before) up to date and swaps
/// them all in one cut-over; tables an earlier run already swapped are finished.
/// `foreign_keys`: whether any of them is in a foreign key (whose constraints then move).
#[allow(clippy::too_many_arguments)]
pub async fn cut_over_group(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &str,
    plans: &[TablePlan],
    foreign_keys: bool,
    stop: &AtomicBool,
    pacer: &mut Pacer,
    events: &dyn Events,
) -> Result<GroupOutcome> {
    let Some(first) = plans.first() else {
        return Ok(GroupOutcome {
            outcome: TableOutcome::Done,
            states: Vec::new(),
        });
    };
    let schema = first.schema.as_str();
    conn.execute(sql::REPEATABLE_READ).await?;
    settle_leftover_cutover(conn, schema).await?;
    let mut done: Vec<(String, State)> = Vec::new();
    let mut ctxs: Vec<Ctx<'_>> = Vec::new();
    let mut states: Vec<State> = Vec::new();
    for plan in plans {
        let mut state = checkpoint::load(conn, schema, job, &plan.table)
            .await?
            .ok_or_else(|| {
                anyhow!(
                    "'{}' has no checkpoint at its cut-over: run the job again",
                    plan.table
                )
            })?;
        if state.done {
            done.push((plan.table.clone(), state));
            continue;
        }
        let ctx = context(conn, plan, names(&plan.table), &state).await?;
        if settle_table(conn, &ctx, job, &mut state).await?.is_some() {
            done.push((plan.table.clone(), state));
            continue;
        }
        ensure_triggers(conn, &ctx).await?;
        ctxs.push(ctx);
        states.push(state);
    }
    let in_job_order = |mut all: Vec<(String, State)>| {
        all.sort_by_key(|(t, _)| plans.iter().position(|p| &p.table == t));
        all
    };
    let with = |ctxs: &[Ctx<'_>], states: &[State], mut done: Vec<(String, State)>| {
        done.extend(
            ctxs.iter()
                .map(|c| c.plan.table.clone())
                .zip(states.iter().cloned()),
        );
        in_job_order(done)
    };
    // The rename swaps all or none: with none left to swap, it ran.
    settle_moves(conn, schema, job, ctxs.is_empty()).await?;
    settle_triggers(conn, schema, job).await?;
    if ctxs.is_empty() {
        drop_cascade_triggers(conn, schema).await?;
        return Ok(GroupOutcome {
            outcome: TableOutcome::Done,
            states: in_job_order(done),
        });
    }
    let manual = ctxs.iter().any(|c| c.plan.manual_cutover);
    let tables: Vec<String> = ctxs.iter().map(|c| c.plan.table.clone()).collect();
    let mut ready_said = false;
    loop {
        match pacer.between_batches(conn, stop).await? {
            Flow::Go => {}
            Flow::Stop => {
                return Ok(GroupOutcome {
                    outcome: TableOutcome::Interrupted,
                    states: with(&ctxs, &states, done),
                })
            }
            Flow::Abort => {
                return Ok(GroupOutcome {
                    outcome: TableOutcome::Aborted,
                    states: with(&ctxs, &states, done),
                })
            }
        }
        let mut behind = 0;
        for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
            if log_len(conn, ctx).await? > 0 {
                create_stage(conn, ctx).await?;
                replay_some(conn, ctx, job, state, 20, &mut HashSet::new()).await?;
            }
            behind = behind.max(log_len(conn, ctx).await?);
        }
        if behind < DRAIN_BEFORE_CUTOVER {
            if !manual || pace::read(conn, schema, job).await? == Some(pace::Command::Cutover) {
                break;
            }
            if !ready_said {
                events.event(&Event::Ready { tables: &tables });
                ready_said = true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let pause = cut_over(conn, cfg, &ctxs, job, foreign_keys, &mut states).await?;
    events.event(&Event::CutOver {
        tables: &tables,
        pause,
    });
    for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
        finish(conn, ctx, job, state).await?;
    }
    drop_cascade_triggers(conn, schema).await?;
    settle_moves(conn, schema, job, true).await?;
    settle_triggers(conn, schema, job).await?;
    if manual {
        pace::send(conn, schema, job, None).await?;
    }
    Ok(GroupOutcome {
        outcome: TableOutcome::Done,
        states: with(&ctxs, &states, done),
    })
}

/// Before the first table of the run is copied: what a killed cut-over left of its moves is
/// settled (no shadow keeps a constraint or a trigger of the application's while rows are
/// copied into it), and (`foreign_keys`:
/// some table is in one) the triggers that log the rows cascading actions change in the
/// job's copied tables (`plans`) are there.
pub async fn prepare(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
    foreign_keys: bool,
) -> Result<()> {
    let Some(p) = plans.first() else {
        return Ok(());
    };
    settle_triggers(conn, &p.schema, job).await?;
    if foreign_keys {
        settle_moves(conn, &p.schema, job, false).await?;
        ensure_cascade_triggers(conn, &p.schema, plans).await?;
    }
    Ok(())
}

/// `myrecode abort` of the job's copies, before their logs go: the cascade-logging triggers
/// (which write into them) and any constraint a cut-over had begun to move.
pub async fn abandon(conn: &mut MySqlConnection, schema: &str, job: &str) -> Result<()> {
    drop_cascade_triggers(conn, schema).await?;
    settle_moves(conn, schema, job, false).await?;
    settle_triggers(conn, schema, job).await
}

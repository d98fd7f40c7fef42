//! A job's cut-overs: the copied tables of each group (the whole job unless it names
//! groups), each brought up to date by its replay, swapped in at the same instant by one
//! rename behind one lock, so the application never sees some tables of a group recoded and
//! others not; groups one after another, in the job's order.
//!
//! Tables are copied one after another ([`super::prepare_table`]); while the later ones copy,
//! the earlier ones' triggers keep logging. Here the group's logs (and those of the groups
//! after it, which wait their turn) are replayed in turn until the group's are nearly drained
//! (and, with `cutover: manual`, until `myrecode cutover` names it), then
//! [`super::cutover::cut_over`] locks the group's tables, drains their logs and renames every
//! pair at once. A kill before the rename leaves every original of the group in place (the
//! sentries make a late rename fail); after it, every table of the group is swapped, and a
//! rerun finishes each. What several groups share (the gate, the cascade-logging triggers,
//! the bookkeeping tables) stays until the last group is swapped.

use super::carried::{self, after_last};
use super::cascade::{
    check_now, drop_cascade_triggers, drop_kept_cascades, restore_cascades, settle_shadow_cascades,
    still_to_swap,
};
use super::context::{context, Ctx};
use super::cutover::{cut_over, finish, settle_leftover_cutover};
use super::nontx::{recheck_if_restarted, settle_shadow};
use super::replay::{log_len, replay_some};
use super::setup::{create_stage, ensure_triggers};
use super::{settle_table, sql, Phase, DRAIN_BEFORE_CUTOVER};
use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::names;
use crate::db::connect::ConnectionConfig;
use crate::engine::control;
use crate::engine::events::{Event, Events};
use crate::engine::table_plan::{TableOutcome, TablePlan};
use crate::engine::test_hooks;
use crate::engine::throttle::{Flow, Pacer};
use anyhow::{anyhow, Result};
use sqlx::{Executor, MySqlConnection};
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How a group's cut-over ended, with each table's final checkpoint.
#[derive(Debug, Clone)]
pub struct GroupOutcome {
    /// Done (every table of the group swapped), interrupted, or aborted by the operator.
    pub outcome: TableOutcome,
    /// Each table of the cut-over and its checkpoint, in job order.
    pub states: Vec<(String, State)>,
}

/// One cut-over group as the runner hands it over.
#[derive(Debug, Clone, Copy)]
pub struct GroupPlans<'a> {
    /// The group's name in the job (`None`: the job names no groups, and this is all of it).
    pub name: Option<&'a str>,
    /// Its copied tables, each prepared before.
    pub plans: &'a [TablePlan],
    /// The copied tables of the groups after it, in order: still logged and replayed while
    /// this group waits; none left means this is the job's last cut-over.
    pub later: &'a [TablePlan],
}

/// Brings every table of `group` up to date and swaps them all in one cut-over; tables an
/// earlier run already swapped are finished. `foreign_keys`: whether any copied table of the
/// job is in a foreign key (whose constraints then move, and whose cascades are logged).
#[allow(clippy::too_many_arguments)]
pub async fn cut_over_group(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &str,
    group: GroupPlans<'_>,
    foreign_keys: bool,
    stop: &AtomicBool,
    pacer: &mut Pacer<'_>,
    events: &dyn Events,
) -> Result<GroupOutcome> {
    let plans = group.plans;
    let Some(first) = plans.first() else {
        return Ok(GroupOutcome {
            outcome: TableOutcome::Done,
            states: Vec::new(),
        });
    };
    let schema = first.schema.as_str();
    let last = group.later.is_empty();
    conn.execute(sql::REPEATABLE_READ).await?;
    settle_leftover_cutover(conn, schema).await?;
    let mut done: Vec<(String, State)> = Vec::new();
    let mut ctxs: Vec<Ctx<'_>> = Vec::new();
    let mut states: Vec<State> = Vec::new();
    // Tables an earlier try swapped and this one finishes: then this run says the cut-over.
    let mut finished_here = false;
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
        settle_shadow(conn, &ctx, job).await?;
        if settle_table(conn, &ctx, job, &mut state).await?.is_some() {
            done.push((plan.table.clone(), state));
            finished_here = true;
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
    let reopened = carried::settle(conn, schema, job, ctxs.is_empty(), &all(plans)).await?;
    for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
        if reopened.contains(&ctx.plan.table) {
            if let Some(s) = checkpoint::load(conn, schema, job, &ctx.plan.table).await? {
                *state = s;
            }
        }
    }
    if ctxs.is_empty() {
        if finished_here {
            // The rename ran in a try that lost its connection (or its process) before the
            // finish: the run that marks the last table swapped prints the line, with the
            // pause the renaming connection recorded.
            let tables: Vec<String> = plans.iter().map(|p| p.table.clone()).collect();
            let pause = checkpoint::recorded_pause(conn, schema, job, &first.table).await?;
            events.event(&Event::CutOver {
                tables: &tables,
                pause,
                group: group.name,
            });
        }
        if last {
            drop_cascade_triggers(conn, schema).await?;
            after_last(conn, schema, job, plans).await?;
        } else if foreign_keys {
            // A run killed after the rename, before it dropped them.
            let swapped: Vec<&str> = done.iter().map(|(t, _)| t.as_str()).collect();
            drop_kept_cascades(conn, schema, &swapped).await?;
        }
        return Ok(GroupOutcome {
            outcome: TableOutcome::Done,
            states: in_job_order(done),
        });
    }
    // The later groups' copies, replayed while this one waits (their logs stay short).
    let rest = still_to_swap(conn, job, group.later).await?;
    let mut waiting: Vec<(Ctx<'_>, State)> = Vec::new();
    for plan in &rest {
        if let Some(state) = checkpoint::load(conn, schema, job, &plan.table).await? {
            let ctx = context(conn, plan, names(&plan.table), &state).await?;
            waiting.push((ctx, state));
        }
    }
    let logged: Vec<TablePlan> = ctxs
        .iter()
        .map(|c| c.plan.clone())
        .chain(rest.iter().cloned())
        .collect();
    if foreign_keys {
        let here: Vec<&str> = ctxs.iter().map(|c| c.plan.table.as_str()).collect();
        settle_shadow_cascades(conn, schema, &here).await?;
        let again = restore_cascades(conn, schema, job, &logged).await?;
        for (ctx, state) in ctxs
            .iter()
            .zip(states.iter_mut())
            .chain(waiting.iter_mut().map(|(c, s)| (&*c, s)))
        {
            if again.contains(&ctx.plan.table) {
                if let Some(s) = checkpoint::load(conn, schema, job, &ctx.plan.table).await? {
                    *state = s;
                }
            }
        }
    }
    // A copy sent back to its check (a cascade may have gone unlogged) is checked before it
    // is swapped; so is one without transactions the server restarted under.
    for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
        recheck_if_restarted(conn, ctx, job, state, events).await?;
        if Phase::of(state) == Phase::Checking {
            let differed = check_now(conn, ctx, job, state).await?;
            events.event(&Event::Checked {
                table: &ctx.plan.table,
                differed,
                batches: None,
            });
        }
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
                replay_some(conn, ctx, job, state, 20, (None, &mut HashSet::new())).await?;
            }
            behind = behind.max(log_len(conn, ctx).await?);
        }
        for (ctx, state) in waiting.iter_mut() {
            if log_len(conn, ctx).await? > 0 {
                create_stage(conn, ctx).await?;
                replay_some(conn, ctx, job, state, 20, (None, &mut HashSet::new())).await?;
            }
        }
        if behind < DRAIN_BEFORE_CUTOVER {
            // Every replica within max_replica_lag first, so the RENAME reaches them promptly.
            if !manual {
                if pacer.replicas_caught_up().await? {
                    break;
                }
                continue;
            }
            // Said even when the command came first (`status` shows the group waiting as soon
            // as its copies are caught up, which may be before this loop sees it).
            if !ready_said {
                events.event(&Event::Ready {
                    tables: &tables,
                    group: group.name,
                });
                ready_said = true;
            }
            if cutover_asked(conn, schema, job, group.name).await?
                && pacer.replicas_caught_up().await?
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    if last {
        carried::record_last(conn, schema, job, &carried::reading(&ctxs, plans)).await?;
    }
    let pause = cut_over(conn, cfg, &ctxs, job, foreign_keys, &mut states, &logged).await?;
    if let Some(hold) = test_hooks::after_rename_hold() {
        // Test hook: a window after the rename, before the finish and the schema's objects,
        // for kill tests to land in.
        tokio::time::sleep(hold).await;
    }
    for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
        finish(conn, ctx, job, state).await?;
    }
    // Said once every table is marked swapped: a `cutover --group` for the next group, sent
    // the moment this line shows, must find this group swapped.
    events.event(&Event::CutOver {
        tables: &tables,
        pause,
        group: group.name,
    });
    // Shared by every group: the cascade logging goes with the last one.
    if last {
        drop_cascade_triggers(conn, schema).await?;
        after_last(conn, schema, job, plans).await?;
    } else if foreign_keys {
        let here: Vec<&str> = tables.iter().map(String::as_str).collect();
        drop_kept_cascades(conn, schema, &here).await?;
    }
    carried::settle(conn, schema, job, true, &all(plans)).await?;
    if manual {
        // Only the command that allowed this group: one for the next, sent meanwhile, stays.
        control::clear_cutover(conn, schema, job, group.name).await?;
    }
    Ok(GroupOutcome {
        outcome: TableOutcome::Done,
        states: with(&ctxs, &states, done),
    })
}

/// Whether `table` of the job is swapped: its checkpoint says done, or the cut-over's rename
/// ran (its shadow is gone) and only the finish is left.
pub async fn swapped(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
) -> Result<bool> {
    Ok(match checkpoint::load(conn, schema, job, table).await? {
        Some(s) if s.done => true,
        Some(_) => !super::context::table_exists(conn, schema, &names(table).shadow).await?,
        None => false,
    })
}

/// Whether `myrecode cutover` allows this group's swap: the command is there and names it
/// (or no group: the job names none, or an older `cutover` said it for every group).
async fn cutover_asked(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    group: Option<&str>,
) -> Result<bool> {
    Ok(match control::read_cutover(conn, schema, job).await? {
        Some(None) => true,
        Some(Some(named)) => Some(named.as_str()) == group,
        None => false,
    })
}

/// Before a run that writes reads its schema: what a cut-over killed before its rename left
/// of its moves is settled, and the tables of `tables` it closed are opened again. A child
/// outside the job is then seen constrained by its parent again, not by the parent's shadow:
/// read while it was, the parent would seem in no foreign key and its cut-over would leave
/// the child constrained by the kept original.
pub async fn settle_interrupted(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[&str],
) -> Result<()> {
    settle_leftover_cutover(conn, schema).await?;
    carried::settle(conn, schema, job, false, tables)
        .await
        .map(|_| ())
}

/// Before the first table of the run is copied, once [`settle_interrupted`] has settled what a
/// killed cut-over left of its moves (so no shadow keeps a constraint or a trigger of the
/// application's while rows are copied into it): (`foreign_keys`: some table is in one)
/// every cascade into a copy still to be swapped among `plans` is logged; a copy whose
/// cascades went unlogged after it had compared rows (a cut-over killed between ending them
/// and its rename) is sent back to its check.
pub async fn prepare(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
    foreign_keys: bool,
) -> Result<()> {
    let Some(p) = plans.first() else {
        return Ok(());
    };
    let schema = p.schema.as_str();
    if foreign_keys {
        let live = still_to_swap(conn, job, plans).await?;
        let tables: Vec<&str> = live.iter().map(|p| p.table.as_str()).collect();
        settle_shadow_cascades(conn, schema, &tables).await?;
        restore_cascades(conn, schema, job, plans).await?;
    }
    Ok(())
}

/// `myrecode abort` of the job's copied `tables`, before their logs go: the cascade-logging
/// triggers (which write into them) and any constraint a cut-over had begun to move.
pub async fn abandon(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[&str],
) -> Result<()> {
    drop_cascade_triggers(conn, schema).await?;
    settle_interrupted(conn, schema, job, tables).await
}

/// The tables of `plans`.
fn all(plans: &[TablePlan]) -> Vec<&str> {
    plans.iter().map(|p| p.table.as_str()).collect()
}

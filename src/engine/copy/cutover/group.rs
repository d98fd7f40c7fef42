//! A job's cut-overs: the copied tables of each group (the whole job unless it names
//! groups), each brought up to date by its replay, swapped in at the same instant by one
//! rename behind one lock, so the application never sees some tables of a group recoded and
//! others not; groups one after another, in the job's order.
//!
//! Tables are copied one after another ([`crate::engine::copy::prepare::prepare_table`]); while the later ones copy,
//! the earlier ones' triggers keep logging. Here the group's logs (and those of the groups
//! after it, which wait their turn) are replayed in turn until the group's are nearly drained
//! (and, with `cutover: manual`, until `myrecode cutover` names it), then
//! `swap::cut_over` locks the group's tables, drains their logs and renames every
//! pair at once. A kill before the rename leaves every original of the group in place (the
//! sentries make a late rename fail); after it, every table of the group is swapped, and a
//! rerun finishes each. What several groups share (the gate, the cascade-logging triggers,
//! the bookkeeping tables) stays until the last group is swapped.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::names;
use crate::db::connect::ConnectionConfig;
use crate::engine::control;
use crate::engine::copy::cutover::carried::after_last::{after_last, record_last};
use crate::engine::copy::cutover::carried::cascade::logging::{
    drop_cascade_triggers, drop_kept_cascades, CascadeLogging,
};
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::under_lock;
use crate::engine::copy::cutover::finish::finish;
use crate::engine::copy::cutover::leftover::settle_leftover_cutover;
use crate::engine::copy::cutover::leftover::settle_table;
use crate::engine::copy::cutover::swap::cut_over;
use crate::engine::copy::cutover::swapped::still_to_swap;
use crate::engine::copy::myisam::faults::{recheck_if_restarted, settle_shadow};
use crate::engine::copy::phase::{Phase, DRAIN_BEFORE_CUTOVER};
use crate::engine::copy::setup::change_log::ensure_triggers;
use crate::engine::copy::table::check_again::check_now;
use crate::engine::copy::table::context::{context, Ctx};
use crate::engine::copy::table::read_sql;
use crate::engine::copy::table::replay::{log_len, replay_some};
use crate::engine::copy::table::stage::create_stage;
use crate::engine::copy::undecided::held;
use crate::engine::events::{Event, Events};
use crate::engine::table_plan::TableOutcome;
use crate::engine::table_plan::TablePlan;
use crate::engine::throttle::Flow;
use crate::engine::throttle::Pacer;
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
    conn.execute(read_sql::REPEATABLE_READ).await?;
    settle_leftover_cutover(conn, schema).await?;
    let mut g = attach(conn, job, plans).await?;
    // The rename swaps all or none: with none left to swap, it ran.
    let reopened = under_lock::settle(conn, schema, job, g.ctxs.is_empty(), &all(plans)).await?;
    take_states(&g.ctxs, &mut g.states, &reopened);
    if g.ctxs.is_empty() {
        return swapped_before(conn, job, group, foreign_keys, g, events).await;
    }
    // The later groups' copies, replayed while this one waits (their logs stay short).
    let rest = still_to_swap(conn, job, group.later).await?;
    let mut waiting = attach_waiting(conn, job, &rest).await?;
    let logged: Vec<TablePlan> = (g.ctxs.iter())
        .map(|c| c.plan.clone())
        .chain(rest.iter().cloned())
        .collect();
    if foreign_keys {
        restore_logging(conn, job, &mut g, &mut waiting, &logged).await?;
    }
    check_before_swap(conn, job, &mut g, events).await?;
    let manual = g.ctxs.iter().any(|c| c.plan.manual_cutover);
    let tables: Vec<String> = g.ctxs.iter().map(|c| c.plan.table.clone()).collect();
    let until = (stop, &mut *pacer);
    if let Some(outcome) =
        replay_until_ready(conn, job, group, &mut g, &mut waiting, until, events).await?
    {
        return Ok(GroupOutcome {
            outcome,
            states: with(plans, &g.ctxs, &g.states, g.done),
        });
    }
    if last {
        record_last(conn, schema, job, &g.ctxs, plans).await?;
    }
    let pause = cut_over(
        conn,
        cfg,
        &g.ctxs,
        job,
        foreign_keys,
        &mut g.states,
        &logged,
    )
    .await?;
    hold_after_rename().await;
    // The swap's statements applied on every replica before the finish's own.
    pacer.settle_replicas().await?;
    for (ctx, state) in g.ctxs.iter().zip(g.states.iter_mut()) {
        finish(conn, ctx, job, state).await?;
    }
    // Said once every table is marked swapped: a `cutover --group` for the next group, sent
    // the moment this line shows, must find this group swapped.
    events.event(&Event::CutOver {
        tables: &tables,
        pause,
        group: group.name,
    });
    let here: Vec<&str> = tables.iter().map(String::as_str).collect();
    after_swap(conn, job, plans, (last, foreign_keys), &here).await?;
    under_lock::settle(conn, schema, job, true, &all(plans)).await?;
    if manual {
        // Only the command that allowed this group: one for the next, sent meanwhile, stays.
        control::clear_cutover(conn, schema, job, group.name).await?;
    }
    Ok(GroupOutcome {
        outcome: TableOutcome::Done,
        states: with(plans, &g.ctxs, &g.states, g.done),
    })
}

/// A group's tables as a cut-over finds them: those swapped already (done, with their final
/// checkpoints), and the copies still to swap with what was read of them and their checkpoints.
struct Attached<'a> {
    done: Vec<(String, State)>,
    ctxs: Vec<Ctx<'a>>,
    states: Vec<State>,
    /// Some table was swapped by an earlier try and finished by this one: then this run says
    /// the cut-over.
    finished_here: bool,
}

/// Each table of the group from its checkpoint: what an earlier run left settled (a shadow
/// without transactions, a rename that ran: finished now), its change-log triggers there.
async fn attach<'a>(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &'a [TablePlan],
) -> Result<Attached<'a>> {
    let mut g = Attached {
        done: Vec::new(),
        ctxs: Vec::new(),
        states: Vec::new(),
        finished_here: false,
    };
    for plan in plans {
        let mut state = checkpoint::load(conn, &plan.schema, job, &plan.table)
            .await?
            .ok_or_else(|| {
                anyhow!(
                    "'{}' has no checkpoint at its cut-over: run the job again",
                    plan.table
                )
            })?;
        if state.done {
            g.done.push((plan.table.clone(), state));
            continue;
        }
        let ctx = context(conn, (plan, job), names(&plan.table), &state).await?;
        settle_shadow(conn, &ctx, job).await?;
        if settle_table(conn, &ctx, job, &mut state).await?.is_some() {
            g.done.push((plan.table.clone(), state));
            g.finished_here = true;
            continue;
        }
        ensure_triggers(conn, ctx.plan, &ctx.names).await?;
        g.ctxs.push(ctx);
        g.states.push(state);
    }
    Ok(g)
}

/// The checkpoints a settle step wrote (a copy sent back to its check), taken over by the
/// copies they belong to: the last written of a table is the one that stands.
fn take_states(ctxs: &[Ctx<'_>], states: &mut [State], written: &[(String, State)]) {
    for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
        if let Some((_, s)) = written.iter().rev().find(|(t, _)| *t == ctx.plan.table) {
            *state = s.clone();
        }
    }
}

/// Every table of the group was swapped by an earlier run: it is finished, the cut-over said
/// by the run that marks the last table swapped, and what the job shares settled.
async fn swapped_before(
    conn: &mut MySqlConnection,
    job: &str,
    group: GroupPlans<'_>,
    foreign_keys: bool,
    g: Attached<'_>,
    events: &dyn Events,
) -> Result<GroupOutcome> {
    let plans = group.plans;
    let first = &plans[0];
    let schema = first.schema.as_str();
    if g.finished_here {
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
    // A run killed after the rename, before it dropped them.
    let swapped: Vec<&str> = g.done.iter().map(|(t, _)| t.as_str()).collect();
    let last = group.later.is_empty();
    after_swap(conn, job, plans, (last, foreign_keys), &swapped).await?;
    Ok(GroupOutcome {
        outcome: TableOutcome::Done,
        states: in_job_order(plans, g.done),
    })
}

/// Shared by every group: the cascade logging goes with the last one (then the schema's
/// objects and default follow), else the cascade triggers the kept originals of `swapped`
/// took with them.
async fn after_swap(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
    (last, foreign_keys): (bool, bool),
    swapped: &[&str],
) -> Result<()> {
    let schema = plans[0].schema.as_str();
    if last {
        drop_cascade_triggers(conn, schema).await?;
        after_last(conn, schema, job, plans).await?;
    } else if foreign_keys {
        drop_kept_cascades(conn, schema, swapped).await?;
    }
    Ok(())
}

/// Each of the later groups' copies `rest` that has a checkpoint, with what was read of it.
async fn attach_waiting<'a>(
    conn: &mut MySqlConnection,
    job: &str,
    rest: &'a [TablePlan],
) -> Result<Vec<(Ctx<'a>, State)>> {
    let mut waiting = Vec::new();
    for plan in rest {
        if let Some(state) = checkpoint::load(conn, &plan.schema, job, &plan.table).await? {
            let ctx = context(conn, (plan, job), names(&plan.table), &state).await?;
            waiting.push((ctx, state));
        }
    }
    Ok(waiting)
}

/// The cascades into every copy still to be swapped (`logged`) logged again, after the
/// triggers a cut-over that did not rename left on this group's shadows went; a copy they
/// went unlogged for after it had compared rows is back in its check (its state taken over).
async fn restore_logging(
    conn: &mut MySqlConnection,
    job: &str,
    g: &mut Attached<'_>,
    waiting: &mut [(Ctx<'_>, State)],
    logged: &[TablePlan],
) -> Result<()> {
    let schema = g.ctxs[0].plan.schema.as_str();
    let here: Vec<&str> = g.ctxs.iter().map(|c| c.plan.table.as_str()).collect();
    let cut = Cut {
        tables: &here,
        logged,
        ..Cut::of(schema, job)
    };
    let again = CascadeLogging::settle(conn, &cut).await?;
    take_states(&g.ctxs, &mut g.states, &again);
    for (ctx, state) in waiting.iter_mut() {
        take_states(
            std::slice::from_ref(ctx),
            std::slice::from_mut(state),
            &again,
        );
    }
    Ok(())
}

/// A copy sent back to its check (a cascade may have gone unlogged) is checked before it is
/// swapped; so is one without transactions the server restarted under.
async fn check_before_swap(
    conn: &mut MySqlConnection,
    job: &str,
    g: &mut Attached<'_>,
    events: &dyn Events,
) -> Result<()> {
    for (ctx, state) in g.ctxs.iter().zip(g.states.iter_mut()) {
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
    Ok(())
}

/// Replays the group's logs and the waiting copies' in turn until the group's are nearly
/// drained, every replica is within `max_replica_lag`, and (with `cutover: manual`)
/// `myrecode cutover` allows it. `Some`: the operator stopped or aborted the job first, or
/// the group's copies hold values no reading decided (the run stops, held, and says so).
async fn replay_until_ready(
    conn: &mut MySqlConnection,
    job: &str,
    group: GroupPlans<'_>,
    g: &mut Attached<'_>,
    waiting: &mut [(Ctx<'_>, State)],
    (stop, pacer): (&AtomicBool, &mut Pacer<'_>),
    events: &dyn Events,
) -> Result<Option<TableOutcome>> {
    let schema = g.ctxs[0].plan.schema.as_str();
    let manual = g.ctxs.iter().any(|c| c.plan.manual_cutover);
    let tables: Vec<String> = g.ctxs.iter().map(|c| c.plan.table.clone()).collect();
    let mut ready_said = false;
    loop {
        match pacer.between_batches(conn, stop).await? {
            Flow::Go => {}
            Flow::Stop => return Ok(Some(TableOutcome::Interrupted)),
            Flow::Abort => return Ok(Some(TableOutcome::Aborted)),
        }
        let mut behind = 0;
        for (ctx, state) in g.ctxs.iter().zip(g.states.iter_mut()) {
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
            // A value no reading decided is the server's reading of its bytes in the shadow:
            // never swapped in as done.
            let undecided = held(conn, job, &g.ctxs).await?;
            if !undecided.is_empty() {
                events.event(&Event::Held {
                    undecided: &undecided,
                    group: group.name,
                });
                return Ok(Some(TableOutcome::Interrupted));
            }
            // Every replica within max_replica_lag first, so the RENAME reaches them promptly.
            if !manual {
                if pacer.replicas_caught_up().await? {
                    return Ok(None);
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
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Test hook: a window after the rename, before the finish and the schema's objects, for
/// kill tests to land in.
async fn hold_after_rename() {
    if let Some(hold) = crate::engine::test_hooks::after_rename_hold() {
        tokio::time::sleep(hold).await;
    }
}

/// `all` in the job's order.
fn in_job_order(plans: &[TablePlan], mut all: Vec<(String, State)>) -> Vec<(String, State)> {
    all.sort_by_key(|(t, _)| plans.iter().position(|p| &p.table == t));
    all
}

/// The tables finished (`done`) and the copies with their checkpoints, in the job's order.
fn with(
    plans: &[TablePlan],
    ctxs: &[Ctx<'_>],
    states: &[State],
    mut done: Vec<(String, State)>,
) -> Vec<(String, State)> {
    done.extend(
        ctxs.iter()
            .map(|c| c.plan.table.clone())
            .zip(states.iter().cloned()),
    );
    in_job_order(plans, done)
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
    under_lock::settle(conn, schema, job, false, tables)
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
        let cut = Cut {
            tables: &tables,
            logged: plans,
            ..Cut::of(schema, job)
        };
        CascadeLogging::settle(conn, &cut).await?;
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

//! The run that writes: its bookkeeping tables, replica watch and pacer set up ([`begin`]),
//! then each scheduled step run to its end ([`execute`]), a transient failure retried from
//! the checkpoint within `--retry-for`, a MyISAM index a crash left out of step repaired, and
//! the operator's `abort` acted on.

use super::options::RunOptions;
use super::outcome::{Outcome, TableSummary};
use super::schedule::{Schedule, Step};
use crate::bookkeeping::checkpoint::{self, State};
use crate::db::connect::ConnectionConfig;
use crate::engine::control;
use crate::engine::copy;
use crate::engine::copy::{after_failure, after_restart};
use crate::engine::events::{Committed, Event, Events};
use crate::engine::inplace;
use crate::engine::replicas::{self, Surveyed};
use crate::engine::retry;
use crate::engine::session::Session;
use crate::engine::table_plan::{TableOutcome, TablePlan};
use crate::engine::throttle::Pacer;
use crate::job::model::{Job, Strategy};
use anyhow::Result;
use sqlx::MySqlConnection;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// How a step ended, and each of its tables' checkpoint as it ended.
type Ran = (TableOutcome, Vec<(String, State)>);

/// Sets up what a run that writes shares (over `conn`, in this order): the bookkeeping
/// tables, the watch on the `surveyed` replicas, the pacer.
pub(super) async fn begin<'a>(
    conn: &mut MySqlConnection,
    cfg: ConnectionConfig,
    job: &'a Job,
    opts: &'a RunOptions,
    stop: &'a AtomicBool,
    events: &'a dyn Events,
    surveyed: Surveyed,
) -> Result<Session<'a>> {
    checkpoint::ensure(conn, &job.schema).await?;
    crate::engine::bridge::install(conn, job, &opts.job_id).await?;
    let watch = replicas::watch(conn, &cfg, job, &opts.job_id, surveyed).await?;
    let pacer = Pacer::new(
        &job.schema,
        &opts.job_id,
        job.defaults.max_threads_running,
        watch,
        events,
    );
    Ok(Session {
        cfg,
        job,
        job_id: &opts.job_id,
        retry_for: opts.retry_for,
        stop,
        pacer,
        events: Committed::new(events),
    })
}

/// Runs the scheduled steps in order, until all are done, the run is asked to stop, or the
/// operator aborts the job; each table's last checkpoint in the summaries.
pub(super) async fn execute(
    conn: &mut MySqlConnection,
    session: &mut Session<'_>,
    schedule: &Schedule<'_>,
) -> Result<Outcome> {
    let copies = &schedule.copies;
    copy::group::prepare(conn, session.job_id, copies, schedule.with_fks).await?;
    let mut summaries: Vec<TableSummary> = Vec::new();
    let mut checked_under = None;
    let mut finished = true;
    for step in schedule.steps() {
        let (outcome, states) =
            run_step(conn, session, schedule, &step, &mut checked_under).await?;
        summarize(&mut summaries, states);
        match outcome {
            TableOutcome::Done => {}
            TableOutcome::Interrupted => {
                finished = false;
                break;
            }
            TableOutcome::Aborted => {
                let (job, job_id) = (session.job, session.job_id);
                abort_rest(conn, job, schedule.plans, job_id, &session.events).await?;
                finished = false;
                break;
            }
        }
    }
    if finished && copies.is_empty() && summaries.iter().all(|s| s.done) {
        // A copy's last cut-over sets the defaults; a job in place only, here.
        // Retried as a step is: a server restarting just after the last table finished
        // would otherwise end a finished job with an error.
        let mut streak = retry::Streak::default();
        loop {
            let began = Instant::now();
            let (schema, job_id) = (&session.job.schema, session.job_id);
            match copy::after_in_place(conn, schema, job_id, schedule.plans).await {
                Ok(()) => break,
                Err(e) => {
                    *conn =
                        reconnect(session, e, &mut streak, began, &"the schema's default").await?
                }
            }
        }
    }
    Ok(Outcome::Ran(summaries))
}

/// Runs one step until it ends (done, interrupted, aborted): a transient failure waits its
/// backoff and tries again on a new connection, within `--retry-for`. `checked_under`: the
/// server start under which the job's tables without transactions were last checked.
async fn run_step(
    conn: &mut MySqlConnection,
    session: &mut Session<'_>,
    schedule: &Schedule<'_>,
    step: &Step<'_>,
    checked_under: &mut Option<i64>,
) -> Result<Ran> {
    let mut streak = retry::Streak::default();
    let mut repairs = 0;
    loop {
        let began = Instant::now();
        session.events.take();
        // After a server restart: the job's MyISAM tables checked, repaired if out of step.
        let (job_id, events) = (session.job_id, &session.events);
        let after = after_restart(conn, job_id, &schedule.copies, checked_under, events);
        if let Err(e) = after.await {
            *conn = reconnect(session, e, &mut streak, began, step).await?;
            continue;
        }
        let e = match attempt(conn, session, step, schedule.with_fks).await {
            Ok(ran) => return Ok(ran),
            Err(e) => e,
        };
        // A MyISAM index a server crash left out of step: repaired, said, run again.
        let (job_id, events) = (session.job_id, &session.events);
        let plans = step.plans();
        let Some(e) = after_failure(conn, job_id, &plans, e, &mut repairs, events).await else {
            continue;
        };
        *conn = reconnect(session, e, &mut streak, began, step).await?;
    }
}

/// One try at a step: a table by its strategy, or a group's cut-over.
async fn attempt(
    conn: &mut MySqlConnection,
    s: &mut Session<'_>,
    step: &Step<'_>,
    with_fks: bool,
) -> Result<Ran> {
    let one = |plan: &TablePlan, (outcome, state): (TableOutcome, State)| {
        (outcome, vec![(plan.table.clone(), state)])
    };
    match *step {
        Step::Table(plan, table) if plan.strategy == Strategy::InPlace => {
            inplace::run_table(conn, s, plan, table.estimated_rows)
                .await
                .map(|ran| one(plan, ran))
        }
        Step::Table(plan, table) => {
            let (cfg, pacer) = (&s.cfg, &mut s.pacer);
            copy::prepare_table(conn, cfg, s.job_id, plan, table, s.stop, pacer, &s.events)
                .await
                .map(|ran| one(plan, ran))
        }
        Step::CutOver(group) => {
            let (cfg, pacer) = (&s.cfg, &mut s.pacer);
            let (job_id, stop, events) = (s.job_id, s.stop, &s.events);
            copy::group::cut_over_group(conn, cfg, job_id, group, with_fks, stop, pacer, events)
                .await
                .map(|g| (g.outcome, g.states))
        }
    }
}

/// Keeps each table's last checkpoint, in the order the tables first ended a step.
fn summarize(summaries: &mut Vec<TableSummary>, states: Vec<(String, State)>) {
    for (table, state) in states {
        let done = state.done;
        match summaries.iter_mut().find(|s| s.table == table) {
            Some(s) => *s = TableSummary { table, state, done },
            None => summaries.push(TableSummary { table, state, done }),
        }
    }
}

/// After a step's transient failure `e`: waits its backoff and connects again, as often as
/// it takes within `--retry-for` (a failed connect is one more failure of the streak: the
/// run gives up naming what kept failing). A definitive failure comes straight back.
async fn reconnect(
    session: &Session<'_>,
    mut e: anyhow::Error,
    streak: &mut retry::Streak,
    mut began: Instant,
    step: &dyn std::fmt::Display,
) -> Result<MySqlConnection> {
    let retry_for = session.retry_for;
    loop {
        let Some(class) = retry::classify(&e) else {
            return Err(e);
        };
        if session.events.take() {
            streak.succeeded();
        }
        let (failing, wait) = streak.failed(Instant::now(), began.elapsed());
        if failing > retry_for {
            return Err(e.context(retry::gave_up(class, failing, retry_for)));
        }
        tracing::warn!(step = %step, class = %class, backoff_ms = wait.as_millis() as u64, error = %crate::db::redact::redact_error(&e), "transient failure; retrying");
        tokio::time::sleep(wait).await;
        began = Instant::now();
        match session.cfg.connect_one().await {
            Ok(c) => return Ok(c),
            Err(failed) => e = failed,
        }
    }
}

/// `myrecode abort`, acted on: every copy of the job not yet swapped loses its objects
/// (the originals were never changed); the command is then cleared.
pub async fn abort_rest(
    conn: &mut MySqlConnection,
    job: &Job,
    plans: &[TablePlan],
    job_id: &str,
    events: &dyn Events,
) -> Result<()> {
    let copies: Vec<&str> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::Copy)
        .map(|p| p.table.as_str())
        .collect();
    copy::group::abandon(conn, &job.schema, job_id, &copies).await?;
    for p in plans.iter().filter(|p| p.strategy == Strategy::Copy) {
        if copy::abort_table(conn, &job.schema, &p.table, job_id).await? {
            events.event(&Event::CopyAborted { table: &p.table });
        }
    }
    control::send(conn, &job.schema, job_id, None).await?;
    events.event(&Event::JobAborted { job: job_id });
    Ok(())
}

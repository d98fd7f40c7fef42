//! Drives a job: checks it against the live schema, rehearses or executes each table (in place or by online copy), retries transient failures.

use super::control;
use super::copy;
use super::copy::repair::{after_failure, after_restart};
use super::error::EngineError;
use super::events::{Committed, Event, Events};
use super::inplace;
use super::plans::{plans, Plans};
use super::rehearsal_text::rehearsal;
use super::replicas;
use super::retry;
use super::table_plan::{TableOutcome, TablePlan};
use super::throttle::Pacer;
use crate::bookkeeping::checkpoint;
use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::inventory::model::Table;
use crate::job::model::{Job, Strategy};
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Write (otherwise only rehearse).
    pub execute: bool,
    /// Name the checkpoint, backup and quarantine rows are kept under.
    pub job_id: String,
    /// How long transient failures may last before the run stops (resumably).
    pub retry_for: Duration,
}

/// Per-table result of a run.
#[derive(Debug, Clone)]
pub struct TableSummary {
    /// Table name.
    pub table: String,
    /// Final state.
    pub state: checkpoint::State,
    /// Whether it finished.
    pub done: bool,
}

/// Lifts the refusals of tables this job already finished with this very plan: a table
/// copied and cut over may have its triggers and foreign keys back (as the refusal's fix
/// says), and a rerun must still say "done" rather than refuse. Read-only: no checkpoint
/// table yet means nothing finished.
async fn lift_finished(
    conn: &mut MySqlConnection,
    schema: &str,
    plans: &mut Plans,
    job_id: &str,
) -> Result<()> {
    if plans.entries.iter().all(|e| e.refusals.is_empty()) {
        return Ok(());
    }
    let exists: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
    )
    .bind(schema)
    .bind(checkpoint::CHECKPOINT)
    .fetch_one(&mut *conn)
    .await?;
    if exists == 0 {
        return Ok(());
    }
    let sql = format!(
        "SELECT COUNT(*) FROM {} WHERE job = ? AND tbl = ? AND fingerprint = ? AND done <> 0",
        quote::table(schema, checkpoint::CHECKPOINT)
    );
    for e in plans.entries.iter_mut().filter(|e| !e.refusals.is_empty()) {
        let Some((p, _)) = &e.planned else { continue };
        let done: i64 = sqlx::query_scalar(&sql)
            .bind(job_id)
            .bind(&p.table)
            .bind(&p.fingerprint)
            .fetch_one(&mut *conn)
            .await?;
        if done > 0 {
            e.refusals.clear();
        }
    }
    Ok(())
}

/// Checks the UPDATE privilege on each table without changing a row.
async fn check_privileges(conn: &mut MySqlConnection, plans: &[TablePlan]) -> Result<()> {
    for p in plans {
        let c = quote::ident(&p.columns[0].name);
        let sql = format!(
            "UPDATE {} SET {c} = {c} WHERE 1 = 0",
            quote::table(&p.schema, &p.table)
        );
        let t = quote::table(&p.schema, &p.table);
        conn.execute(sql.as_str()).await.map_err(|e| {
            use crate::db::errno::{self, COLUMN_ACCESS_DENIED, TABLE_ACCESS_DENIED};
            // Only the server's refusal is a missing privilege (a connection reset here once
            // was called one, with a GRANT for its fix).
            match errno::of(&e) {
                Some(TABLE_ACCESS_DENIED | COLUMN_ACCESS_DENIED) => anyhow!(
                    "missing privilege on {t}: {e}. Fix: GRANT SELECT, UPDATE ON {t} TO the job's user"
                ),
                _ => anyhow::Error::new(e).context(format!("checking the UPDATE privilege on {t}")),
            }
        })?;
    }
    Ok(())
}

/// How a run ended, when it did not fail.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Rehearsed (nothing written); `refused` tables would stop `--execute`.
    Rehearsed {
        /// How many of the job's tables are refused.
        refused: usize,
    },
    /// Executed: each table run, in order, until done or stopped.
    Ran(Vec<TableSummary>),
}

/// Runs the job: every table in order, resuming from checkpoints, retrying transient failures.
pub async fn run(
    cfg: &ConnectionConfig,
    job: &Job,
    opts: &RunOptions,
    stop: &AtomicBool,
    events: &dyn Events,
) -> Result<Outcome> {
    let cfg = cfg.with_database(Some(&job.schema));
    let mut conn = cfg.connect_one().await?;
    if opts.execute {
        // Read half-moved by a killed cut-over, the schema would be planned wrong. (Nothing
        // is written unless a cut-over left something to settle.)
        let copies: Vec<&str> = job
            .tables
            .iter()
            .filter(|t| t.strategy == Strategy::Copy)
            .map(|t| t.name.as_str())
            .collect();
        if !copies.is_empty() {
            copy::group::settle_interrupted(&mut conn, &job.schema, &opts.job_id, &copies).await?;
        }
    }
    let mut planned = plans(&mut conn, job).await?;
    lift_finished(&mut conn, &job.schema, &mut planned, &opts.job_id).await?;
    // Refused before anything that writes: the checkpoint tables, a shadow, a trigger.
    let refused = planned.refused();
    if opts.execute {
        if let Some(r) = refused {
            return Err(EngineError::Refused(r).into());
        }
    }
    let (plans, tables) = planned.ready();
    check_privileges(&mut conn, &plans).await?;
    let surveyed = replicas::survey(&mut conn, &cfg, job).await?;
    copy::refuse_kept_originals(&mut conn, &opts.job_id, &plans).await?;
    // The rehearsal builds every shadow's definition under a scratch name (as `plan --check`
    // does): what the server refuses (a CHECK, a generated column, a key too long) or a text
    // no reading decides stops it, before `--execute` would write. `--execute` does not pay
    // for it again at every start (a resumed run must reach its cut-over at once); there a
    // shadow the server refuses stops its table before any of its rows is copied.
    if !opts.execute {
        if let Some((_, e)) = copy::shadow::trial_job(&mut conn, &plans)
            .await
            .into_iter()
            .next()
        {
            return Err(e);
        }
        let copies: Vec<(&str, &str)> = plans
            .iter()
            .filter(|p| matches!(p.strategy, Strategy::Copy))
            .map(|p| (p.schema.as_str(), p.table.as_str()))
            .collect();
        let text = rehearsal(&planned, job)
            + &copy::streams::rehearsal_lines(&mut conn, &copies).await?
            + &replicas::rehearsal_lines(&surveyed.0, job);
        events.event(&Event::Rehearsal { text: &text });
        return Ok(Outcome::Rehearsed {
            refused: refused.map_or(0, |r| r.tables.len()),
        });
    }
    checkpoint::ensure(&mut conn, &job.schema).await?;
    let watch = replicas::watch(&mut conn, &cfg, job, &opts.job_id, surveyed).await?;
    let mut pacer = Pacer::new(
        &job.schema,
        &opts.job_id,
        job.defaults.max_threads_running,
        watch,
        events,
    );
    let copies: Vec<TablePlan> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::Copy)
        .cloned()
        .collect();
    // Only a job whose copied tables are in a foreign key reads and moves constraints.
    let with_fks = plans
        .iter()
        .zip(&tables)
        .any(|(p, t)| p.strategy == Strategy::Copy && !t.foreign_keys.is_empty());
    copy::group::prepare(&mut conn, &opts.job_id, &copies, with_fks).await?;
    // The cut-overs in order: each group's copies (the whole job's when it names none).
    let order: Vec<(Option<&str>, Vec<TablePlan>)> = crate::job::groups::ordered(job)
        .into_iter()
        .map(|g| {
            let mine: Vec<TablePlan> = copies
                .iter()
                .filter(|p| g.tables.contains(&p.table.as_str()))
                .cloned()
                .collect();
            (g.name, mine)
        })
        .filter(|(_, mine)| !mine.is_empty())
        .collect();
    let later: Vec<Vec<TablePlan>> = (0..order.len())
        .map(|i| order[i + 1..].iter().flat_map(|(_, p)| p.clone()).collect())
        .collect();
    // Each table in job order (copies only up to ready), then each group's cut-over in order.
    let mut steps: Vec<Step<'_>> = plans
        .iter()
        .zip(&tables)
        .map(|(p, t)| Step::Table(p, t))
        .collect();
    for (i, (name, mine)) in order.iter().enumerate() {
        steps.push(Step::CutOver(copy::group::GroupPlans {
            name: *name,
            plans: mine,
            later: &later[i],
        }));
    }
    let mut summaries: Vec<TableSummary> = Vec::new();
    let events = &Committed::new(events);
    let mut checked_under = None;
    for step in steps {
        let mut streak = retry::Streak::default();
        let mut repairs = 0;
        loop {
            let began = Instant::now();
            events.take();
            // After a server restart: the job's MyISAM tables checked, repaired if out of step.
            let job_id = &opts.job_id;
            let after = after_restart(&mut conn, job_id, &copies, &mut checked_under, events);
            if let Err(e) = after.await {
                conn = reconnect(&cfg, e, &mut streak, began, opts, events, &step).await?;
                continue;
            }
            let ran = match step {
                Step::Table(plan, table) if plan.strategy == Strategy::InPlace => {
                    inplace::run_table(
                        &mut conn,
                        &cfg,
                        &opts.job_id,
                        plan,
                        table.estimated_rows,
                        stop,
                        &mut pacer,
                        events,
                    )
                    .await
                    .map(|(o, s)| (o, vec![(plan.table.clone(), s)]))
                }
                Step::Table(plan, table) => copy::prepare_table(
                    &mut conn,
                    &cfg,
                    &opts.job_id,
                    plan,
                    table,
                    stop,
                    &mut pacer,
                    events,
                )
                .await
                .map(|(o, s)| (o, vec![(plan.table.clone(), s)])),
                Step::CutOver(group) => copy::group::cut_over_group(
                    &mut conn,
                    &cfg,
                    &opts.job_id,
                    group,
                    with_fks,
                    stop,
                    &mut pacer,
                    events,
                )
                .await
                .map(|g| (g.outcome, g.states)),
            };
            match ran {
                Ok((outcome, states)) => {
                    for (table, state) in states {
                        let done = state.done;
                        match summaries.iter_mut().find(|s| s.table == table) {
                            Some(s) => *s = TableSummary { table, state, done },
                            None => summaries.push(TableSummary { table, state, done }),
                        }
                    }
                    match outcome {
                        TableOutcome::Aborted => {
                            abort_rest(&mut conn, job, plans.as_slice(), &opts.job_id, events)
                                .await?;
                            return Ok(Outcome::Ran(summaries));
                        }
                        TableOutcome::Interrupted => return Ok(Outcome::Ran(summaries)),
                        TableOutcome::Done => break,
                    }
                }
                Err(e) => {
                    // A MyISAM index a server crash left out of step: repaired, said, run again.
                    let plans = step.plans();
                    let job = &opts.job_id;
                    let Some(e) =
                        after_failure(&mut conn, job, &plans, e, &mut repairs, events).await
                    else {
                        continue;
                    };
                    conn = reconnect(&cfg, e, &mut streak, began, opts, events, &step).await?;
                }
            }
        }
    }
    Ok(Outcome::Ran(summaries))
}

/// After a step's transient failure `e`: waits its backoff and connects again, as often as
/// it takes within `--retry-for` (a failed connect is one more failure of the streak: the
/// run gives up naming what kept failing). A definitive failure comes straight back.
async fn reconnect(
    cfg: &ConnectionConfig,
    mut e: anyhow::Error,
    streak: &mut retry::Streak,
    mut began: Instant,
    opts: &RunOptions,
    events: &Committed<'_>,
    step: &Step<'_>,
) -> Result<MySqlConnection> {
    loop {
        let Some(class) = retry::classify(&e) else {
            return Err(e);
        };
        if events.take() {
            streak.succeeded();
        }
        let (failing, wait) = streak.failed(Instant::now(), began.elapsed());
        if failing > opts.retry_for {
            return Err(e.context(retry::gave_up(class, failing, opts.retry_for)));
        }
        tracing::warn!(step = %step, class = %class, backoff_ms = wait.as_millis() as u64, error = %crate::db::redact::redact_error(&e), "transient failure; retrying");
        tokio::time::sleep(wait).await;
        began = Instant::now();
        match cfg.connect_one().await {
            Ok(c) => return Ok(c),
            Err(failed) => e = failed,
        }
    }
}

/// One step of a run: a table (in place to the end, a copy up to ready), or one group's cut-over.
#[derive(Clone, Copy)]
enum Step<'a> {
    Table(&'a TablePlan, &'a Table),
    CutOver(copy::group::GroupPlans<'a>),
}

impl Step<'_> {
    /// The tables the step reads and writes: a table, or a group's and the later groups'.
    fn plans(&self) -> Vec<&TablePlan> {
        match self {
            Step::Table(p, _) => vec![*p],
            Step::CutOver(g) => g.plans.iter().chain(g.later).collect(),
        }
    }
}

impl std::fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Table(p, _) => write!(f, "{}", p.table),
            Step::CutOver(g) => match g.name {
                Some(name) => write!(f, "the cut-over of group '{name}'"),
                None => write!(f, "the cut-over"),
            },
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

/// `verify` for the job's copied tables: each compared with the original kept beside it.
pub async fn verify_copies(
    conn: &mut MySqlConnection,
    job: &Job,
    job_id: &str,
) -> Result<Vec<(String, copy::CopyFindings)>> {
    if !job.tables.iter().any(|t| t.strategy == Strategy::Copy) {
        return Ok(Vec::new());
    }
    // A table refused now (its triggers back since the cut-over, say) was copied before: compare it.
    let plans = plans(conn, job).await?.all();
    let mut out = Vec::new();
    for p in plans.iter().filter(|p| p.strategy == Strategy::Copy) {
        out.push((p.table.clone(), copy::verify_table(conn, job_id, p).await?));
    }
    Ok(out)
}

/// One paragraph per copied table for `verify` and the demo.
pub fn describe_copy_findings(table: &str, c: &copy::CopyFindings) -> String {
    if let Some(why) = &c.skipped {
        return format!("{table}: copy not compared ({why})\n");
    }
    let mut out = format!(
        "{table}: {} row(s) equal their original (kept as {}), recoded; {} differ\n",
        c.equal,
        crate::bookkeeping::names::names(table).old,
        c.differ.len()
    );
    for k in c.differ.iter().take(20) {
        out.push_str(&format!(
            "  written since the cut-over (or only on one side): key {k}\n"
        ));
    }
    if c.differ.len() > 20 {
        out.push_str(&format!("  … and {} more\n", c.differ.len() - 20));
    }
    out
}

/// Loads a job file, turning its findings into one error.
pub fn load_job(path: &std::path::Path) -> Result<Job> {
    match crate::job::load::load_file(path) {
        Ok(l) => Ok(l.job),
        Err(crate::job::load::LoadError::Unreadable(e)) => Err(e),
        Err(crate::job::load::LoadError::Invalid(findings)) => {
            let lines: Vec<String> = findings
                .iter()
                .map(|f| f.render(&path.display().to_string()))
                .collect();
            Err(anyhow!("{}", lines.join("; "))).context(format!(
                "the job file {} is not valid. Fix: correct it (`myrecode plan --check` explains each problem)",
                path.display()
            ))
        }
    }
}

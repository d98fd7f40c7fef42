//! Drives a job, in named steps as gh-ost's `Migrate()` does: [`preflight`] (connected,
//! an interrupted cut-over settled, the job planned against the live schema, refusals,
//! privileges, replicas), then either the rehearsal ([`dry_run`]: what a run would do,
//! nothing written) or the run that writes: its [`schedule`] (which tables and cut-over
//! groups in which order) and [`execute`] (each step to its end, transient failures
//! retried). [`run`] only puts them in order.

mod dry_run;
mod execute;
mod grants;
mod options;
mod outcome;
mod preflight;
mod schedule;

pub use execute::abort_rest;
pub use options::RunOptions;
pub use outcome::{Outcome, TableSummary};

use crate::db::connect::ConnectionConfig;
use crate::engine::events::Events;
use crate::job::model::Job;
use anyhow::{anyhow, Context, Result};
use dry_run::dry_run;
use execute::{begin, execute};
use preflight::{preflight, Preflight};
use schedule::Schedule;
use std::sync::atomic::AtomicBool;

/// Runs the job: every table in order, resuming from checkpoints, retrying transient
/// failures; without `--execute`, only rehearses it.
pub async fn run(
    cfg: &ConnectionConfig,
    job: &Job,
    opts: &RunOptions,
    stop: &AtomicBool,
    events: &dyn Events,
) -> Result<Outcome> {
    let Preflight {
        mut conn,
        cfg,
        planned,
        plans,
        tables,
        surveyed,
        job_lock: _held,
    } = preflight(cfg, job, opts).await?;
    if !opts.execute {
        return dry_run(&mut conn, job, &planned, &plans, &surveyed.0, events).await;
    }
    let schedule = Schedule::of(job, &plans, &tables);
    let mut session = begin(&mut conn, cfg, job, opts, stop, events, surveyed).await?;
    execute(&mut conn, &mut session, &schedule).await
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

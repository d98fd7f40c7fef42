//! `myrecode pause|resume|cutover|abort|cleanup`: steer a running job from another terminal, and tidy up after it.

use super::common::block_on;
use super::run::{job_id, JobArgs};
use super::EXIT_OK;
use crate::bookkeeping::checkpoint;
use crate::engine::control::{self, Command};
use crate::engine::copy;
use crate::engine::replicas;
use crate::engine::runner;
use crate::job::groups;
use crate::job::model::{Job, Strategy};
use anyhow::Result;
use sqlx::MySqlConnection;
use std::time::{Duration, Instant};

/// Which steering command to send (`cutover` has its own: [`cutover`]).
#[derive(Debug, Clone, Copy)]
pub enum Steer {
    /// `pause`.
    Pause,
    /// `resume`.
    Resume,
    /// `abort`.
    Abort,
}

/// Arguments of `cutover`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A job that names cut-over groups swaps them one after another, in its order, each at \
                  its own instant: --group names the one this command allows (the next to swap); \
                  without it, the only group left. `myrecode status` shows which group waits."
)]
pub struct CutoverArgs {
    /// The job file, connection and job name, as for every steering command.
    #[command(flatten)]
    pub job: JobArgs,
    /// The cut-over group to swap now (the job's `cutover_groups:`); needed while two or more are left.
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
}

/// How long `abort` waits for a running job to act on it before removing the copy objects itself.
const ABORT_WAIT: Duration = Duration::from_secs(15);

/// The job file, its name, and a connection to its schema with the bookkeeping tables in place.
async fn open(args: &JobArgs, job: &Job) -> Result<(String, MySqlConnection)> {
    let cfg = args.conn.resolve()?.with_database(Some(&job.schema));
    let mut conn = cfg.connect_one().await?;
    checkpoint::ensure(&mut conn, &job.schema).await?;
    Ok((job_id(&args.job, &args.job_id)?, conn))
}

/// Sends a command to the job; `abort` also makes sure the copy objects are gone.
pub fn steer(args: JobArgs, what: Steer) -> Result<u8> {
    let job = runner::load_job(&args.job)?;
    block_on(async {
        let (id, mut conn) = open(&args, &job).await?;
        let command = match what {
            Steer::Pause => Some(Command::Pause),
            Steer::Resume => None,
            Steer::Abort => Some(Command::Abort),
        };
        control::send(&mut conn, &job.schema, &id, command).await?;
        match what {
            Steer::Pause => println!(
                "job '{id}': pause sent; the run stops after its current batch (triggers keep logging writes). `myrecode resume` goes on"
            ),
            Steer::Resume => println!("job '{id}': resumed"),
            Steer::Abort => {
                println!("job '{id}': abort sent; waiting for the run to stop...");
                let since = Instant::now();
                while since.elapsed() < ABORT_WAIT
                    && control::read(&mut conn, &job.schema, &id).await?.is_some()
                {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                if control::read(&mut conn, &job.schema, &id).await?.is_some() {
                    // No run picked it up: do what the run would have done.
                    let plans: Vec<_> = job
                        .tables
                        .iter()
                        .filter(|t| t.strategy == Strategy::Copy)
                        .collect();
                    for t in plans {
                        if copy::abort_table(&mut conn, &job.schema, &t.name, &id).await? {
                            println!("aborted: {}: copy objects removed; the table was never changed", t.name);
                        }
                    }
                    control::send(&mut conn, &job.schema, &id, None).await?;
                }
                println!("job '{id}': aborted");
            }
        }
        Ok(EXIT_OK)
    })
}

/// `myrecode cutover`: allows the cut-over a run waits for under `cutover: manual`, of the
/// group `--group` names (checked against the job's groups and which are swapped, before
/// anything is written).
pub fn cutover(args: CutoverArgs) -> Result<u8> {
    let job = runner::load_job(&args.job.job)?;
    block_on(async {
        let (id, mut conn) = open(&args.job, &job).await?;
        let order = groups::ordered(&job);
        let mut swapped = Vec::new();
        for g in &order {
            let mut all = true;
            for t in &g.tables {
                all &= copy::swapped(&mut conn, &job.schema, &id, t).await?;
            }
            swapped.push(all);
        }
        let command = format!("myrecode cutover {}", args.job.job.display());
        let group = groups::choose_group(&order, &swapped, args.group.as_deref(), &command)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let tables: Vec<&str> = order
            .iter()
            .filter(|o| group.is_none() || o.name == group)
            .flat_map(|o| o.tables.iter().copied())
            .collect();
        refuse_undecided(&mut conn, &job, &id, &tables).await?;
        control::send_cutover(&mut conn, &job.schema, &id, group).await?;
        match group {
            Some(g) => {
                let tables = order
                    .iter()
                    .find(|o| o.name == Some(g))
                    .map(|o| o.tables.join(", "))
                    .unwrap_or_default();
                println!(
                    "job '{id}': cut-over of group '{g}' ({tables}) allowed; its tables swap at one instant once caught up, the later groups wait for their own `myrecode cutover --group`"
                );
            }
            None => println!(
                "job '{id}': cut-over allowed; a copy waiting under `cutover: manual` swaps its table once caught up"
            ),
        }
        Ok(EXIT_OK)
    })
}

/// Refuses a cut-over while a copy among `tables` holds values no reading decided (nor its
/// column's fallback): the run would hold it anyway, and the operator must decide them first.
async fn refuse_undecided(
    conn: &mut MySqlConnection,
    job: &Job,
    id: &str,
    tables: &[&str],
) -> Result<()> {
    let plans = crate::engine::plans::plans(conn, job).await?;
    let mut held = Vec::new();
    for plan in plans
        .all()
        .iter()
        .filter(|p| p.strategy == Strategy::Copy && tables.contains(&p.table.as_str()))
    {
        let fallback = copy::undecided::by_fallback(plan);
        let names = crate::bookkeeping::names::names(&plan.table);
        let at = (plan, &names, id);
        if let Some(out) = copy::undecided::settle(conn, at, &fallback, false).await? {
            if out.undecided > 0 {
                held.push(format!("{} ({})", plan.table, out.undecided));
            }
        }
    }
    if held.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "job '{id}': the cut-over waits for values no reading decided: {}. `myrecode cutover` cannot swap them in \
         as they are (the copy holds the server's reading of their bytes, not their text). {}",
        held.join(", "),
        copy::undecided::FIX
    )
}

/// Removes the job's bridge (its part of `init_connect`, its triggers) once no session of the
/// application opened before the swap is live (each would lose the triggers that read its
/// writes right); says so either way. Whether it was removed.
async fn remove_bridge(
    conn: &mut sqlx::MySqlConnection,
    job: &crate::job::model::Job,
    id: &str,
) -> Result<bool> {
    use crate::engine::bridge;
    let Some(r) = bridge::recorded(conn, &job.schema, id).await? else {
        return Ok(false);
    };
    if r.removed {
        return Ok(false);
    }
    let (before, _) = bridge::sessions(conn, &job.schema, &r).await?;
    if before > 0 {
        println!(
            "bridge kept: {before} session(s) of the application opened before the swap are live. \
             Fix: end them (they reconnect bridged), then run cleanup again"
        );
        return Ok(true);
    }
    let copied: Vec<String> = (job.tables.iter())
        .filter(|t| t.strategy == Strategy::Copy)
        .map(|t| t.name.clone())
        .collect();
    bridge::remove(conn, &job.schema, id, &copied).await?;
    println!(
        "removed the bridge (its init_connect part and triggers): latin1 sessions of the application now read '?' \
         where they read {}",
        r.legacy
    );
    Ok(true)
}

/// Drops the originals kept by finished copies (and their drained change logs), and once
/// the job is done the replicas' bookkeeping tables.
pub fn cleanup(args: JobArgs) -> Result<u8> {
    let job = runner::load_job(&args.job)?;
    block_on(async {
        let (id, mut conn) = open(&args, &job).await?;
        let mut any = false;
        for t in job.tables.iter().filter(|t| t.strategy == Strategy::Copy) {
            for dropped in copy::cleanup_table(&mut conn, &job.schema, &t.name, &id).await? {
                println!("dropped {dropped} (kept for rollback of {})", t.name);
                any = true;
            }
        }
        // The replicas' bookkeeping only once every table is done: a run still under way
        // writes its heartbeat there. `rollback` needs none of it. A checkpoint that cannot
        // be read (a job never run has no checkpoint table) counts as not done: kept.
        let mut finished = true;
        for t in &job.tables {
            finished = checkpoint::load(&mut conn, &job.schema, &id, &t.name)
                .await
                .ok()
                .flatten()
                .is_some_and(|s| s.done);
            if !finished {
                break;
            }
        }
        if finished {
            for dropped in replicas::cleanup(&mut conn, &job.schema, &id).await? {
                println!("dropped {dropped} (the replicas' bookkeeping)");
                any = true;
            }
            any |= remove_bridge(&mut conn, &job, &id).await?;
        }
        if !any {
            println!("nothing to clean up for job '{id}'");
        }
        Ok(EXIT_OK)
    })
}

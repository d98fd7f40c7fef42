//! `myrecode run`, `verify` and `rollback`: execute a job, prove it, undo it.

use super::common::{block_on, ConnectArgs};
use super::{EXIT_ATTENTION, EXIT_OK};
use crate::db::quote;
use crate::engine::error::{self, EngineError};
use crate::engine::events::{self, Event, Events};
use crate::engine::runner::{self, Outcome, RunOptions, TableSummary};
use crate::engine::verify;
use crate::inventory::{self, Scope};
use crate::job::model::Strategy;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The job file (from `myrecode plan`).
    pub job: PathBuf,
    #[command(flatten)]
    conn: ConnectArgs,
    /// Really write. Without it, `run` only rehearses: checks the job, keys and privileges and prints what it would do.
    #[arg(long)]
    execute: bool,
    /// Name for this job's checkpoint, backup and quarantine rows (default: the job file's name).
    #[arg(long, value_name = "NAME")]
    job_id: Option<String>,
    /// How long to keep retrying a lost server before stopping (resumably), in seconds.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    retry_for: u64,
    /// The DBA's decisions on undecided values (from `myrecode review --out`), applied after the pass.
    #[arg(long, value_name = "FILE")]
    decisions: Option<PathBuf>,
}

/// Arguments of the commands that name a job (`verify` flattens them into [`VerifyArgs`]).
#[derive(Debug, clap::Args)]
pub struct JobArgs {
    /// The job file the run used.
    pub job: PathBuf,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// The name the run used (default: the job file's name).
    #[arg(long, value_name = "NAME")]
    pub job_id: Option<String>,
}

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// On replicas (MariaDB), read a key range that differed at every lock-free reading
    /// (the application writing to it) once more with the replica paused at the primary's
    /// position: STOP SLAVE, START SLAVE UNTIL that position, START SLAVE again at once, so
    /// each replica is paused only for the time of two snapshots, said on stderr. Without
    /// it no replica is ever paused, and such a range is said unsettled.
    #[arg(long)]
    pub pause_replicas: bool,
}

/// The longest job name: the bookkeeping tables keep it in a `VARCHAR(64)`.
pub const JOB_ID_MAX: usize = 64;

/// The job's name: `--job-id`, else the job file's name (cut to [`JOB_ID_MAX`] characters);
/// a longer `--job-id` is refused before anything is sent.
pub fn job_id(path: &std::path::Path, given: &Option<String>) -> anyhow::Result<String> {
    if let Some(id) = given {
        let n = id.chars().count();
        if n > JOB_ID_MAX || n == 0 {
            anyhow::bail!(
                "--job-id has {n} characters; a job's name holds 1 to {JOB_ID_MAX}. Fix: give a shorter --job-id, or leave it out to use the job file's name"
            );
        }
    }
    Ok(given.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "job".into())
            .chars()
            .take(JOB_ID_MAX)
            .collect()
    }))
}

/// A progress bar per table on a terminal; a log line every few seconds otherwise.
struct RunProgress {
    bar: Option<ProgressBar>,
    last: Mutex<(String, Instant)>,
}

impl Events for RunProgress {
    fn event(&self, e: &Event<'_>) {
        let Event::Batch {
            table,
            state: s,
            estimated,
            rows_per_sec: rate,
        } = *e
        else {
            if let Some(line) = events::line(e) {
                match &self.bar {
                    Some(bar) => bar.suspend(|| println!("{line}")),
                    None => println!("{line}"),
                }
            }
            // Notices go to standard error, apart from the report on standard output.
            if let Some(notice) = events::notice(e) {
                eprintln!("{notice}");
            }
            return;
        };
        if let Some(bar) = &self.bar {
            let mut last = self.last.lock().unwrap();
            if last.0 != table {
                bar.reset();
                last.0 = table.to_string();
            }
            bar.set_length(estimated.max(s.rows_read));
            bar.set_position(s.rows_read);
            bar.set_message(format!(
                "{table}: {} changed, {} quarantined",
                s.rows_changed, s.rows_quarantined
            ));
            return;
        }
        let mut last = self.last.lock().unwrap();
        if last.0 != table || last.1.elapsed() > Duration::from_secs(5) || s.done {
            eprintln!(
                "run: table={table} rows_read={} rows_changed={} quarantined={} conflicts={} rows_per_sec={rate:.0} done={}",
                s.rows_read, s.rows_changed, s.rows_quarantined, s.rows_conflicted, s.done
            );
            *last = (table.to_string(), Instant::now());
        }
    }
}

/// Runs `run`: 0 done cleanly, 1 done with quarantined values or interrupted (resumable) or a
/// rehearsal with refused tables, 2 error (a refused table under `--execute` among them).
pub fn run(args: RunArgs) -> anyhow::Result<u8> {
    let job = runner::load_job(&args.job)?;
    let opts = RunOptions {
        execute: args.execute,
        job_id: job_id(&args.job, &args.job_id)?,
        retry_for: Duration::from_secs(args.retry_for),
    };
    // Checked before the first write: a bad decision file stops nothing half-done.
    let decisions = match &args.decisions {
        Some(p) => Some(super::decide::load(p, &job, &opts.job_id)?),
        None => None,
    };
    let cfg = args.conn.resolve()?;
    let stop = Arc::new(AtomicBool::new(false));
    let progress = RunProgress {
        bar: progress_bar(),
        last: Mutex::new((String::new(), Instant::now())),
    };
    let resume = format!("myrecode run {} --execute", args.job.display());
    // A copy's undecided values are decided into its shadow before the run reaches its
    // cut-over, which waits for them.
    let mut attention = false;
    if let (Some(d), true) = (&decisions, opts.execute) {
        attention |= super::decide::apply(&cfg, &job, &opts.job_id, d, Strategy::Copy)?;
    }
    let result = block_on(async {
        stop_on_signals(stop.clone());
        runner::run(&cfg, &job, &opts, &stop, &progress).await
    });
    if let Some(bar) = &progress.bar {
        bar.finish_and_clear();
    }
    let summaries = match ran(result, &resume)? {
        ControlFlow::Continue(s) => s,
        ControlFlow::Break(code) => return Ok(code),
    };
    if let Some(d) = &decisions {
        attention |= super::decide::apply(&cfg, &job, &opts.job_id, d, Strategy::InPlace)?;
    }
    attention |= print_summaries(&summaries, decisions.is_some());
    if summaries.iter().any(|s| !s.done) {
        println!("Interrupted; finished batches are checkpointed. Resume with: {resume}");
    } else {
        print_job_done(&job, &args.job);
    }
    Ok(if attention { EXIT_ATTENTION } else { EXIT_OK })
}

/// A progress bar on stderr when it is a terminal.
fn progress_bar() -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(1);
        b.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} rows {per_sec} ETA {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    })
}

/// Sets `flag` on the first SIGINT or SIGTERM, so the run stops after its current batch.
fn stop_on_signals(flag: Arc<AtomicBool>) {
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
        eprintln!("myrecode: stopping after the current batch...");
        flag.store(true, Ordering::SeqCst);
    });
}

/// The summaries of an executed run, else a rehearsal's exit code, else the error to show.
fn ran(
    result: anyhow::Result<Outcome>,
    resume: &str,
) -> anyhow::Result<ControlFlow<u8, Vec<TableSummary>>> {
    match result {
        Ok(Outcome::Ran(s)) => Ok(ControlFlow::Continue(s)),
        Ok(Outcome::Rehearsed { refused: 0 }) => Ok(ControlFlow::Break(EXIT_OK)),
        Ok(Outcome::Rehearsed { refused }) => {
            eprintln!(
                "{refused} table(s) refused (listed above): `run --execute` would stop before writing anything. \
                 Fix the job or the tables as each line says, then rehearse again"
            );
            Ok(ControlFlow::Break(EXIT_ATTENTION))
        }
        // Nothing was written, so there is nothing to resume: the refusals say what to fix.
        Err(e)
            if matches!(
                error::find(&e),
                Some(
                    EngineError::Refused(_)
                        | EngineError::JobMismatch(_)
                        | EngineError::JobBusy { .. }
                )
            ) =>
        {
            Err(e)
        }
        Err(e) => Err(anyhow::anyhow!(
            "{}\nFinished batches are checkpointed; nothing is lost. Once the cause is fixed, resume with: {resume}",
            crate::db::redact::redact_error(&e)
        )),
    }
}

/// Prints each table's counts; true when one is unfinished or has quarantined values.
fn print_summaries(summaries: &[TableSummary], decisions_applied: bool) -> bool {
    let mut attention = false;
    for s in summaries {
        let st = &s.state;
        println!(
            "{}: {} rows read, {} values recoded, {} quarantined, {} changed by the application meanwhile{}",
            s.table,
            st.rows_read,
            st.rows_changed,
            st.rows_quarantined,
            st.rows_conflicted,
            if s.done { "" } else { " (not finished)" }
        );
        // With decisions, what is still undecided was counted when they were applied.
        attention |= (!decisions_applied && st.rows_quarantined > 0) || !s.done;
    }
    attention
}

/// Says how to prove the finished job and how to undo it.
fn print_job_done(job: &crate::job::model::Job, path: &std::path::Path) {
    let undo = if copied_tables(job).is_empty() {
        format!("undo it with `myrecode rollback {}`", path.display())
    } else {
        // `rollback` puts back what in-place repairs changed; a swap is undone by a rename.
        format!(
            "in-place repairs are undone by `myrecode rollback {}`, a copied table by renaming its kept original back (docs/copy-and-cutover.md: switching the application over)",
            path.display()
        )
    };
    println!(
        "Job done. Prove it with `myrecode verify {}`; {undo}.",
        path.display()
    );
}

fn print_findings(f: &verify::Findings, what: &str) {
    println!("{what}: {} value(s)", f.ok);
    for r in &f.changed_since {
        println!("  changed by the application since the run (left alone): {r}");
    }
    for r in &f.deleted_since {
        println!("  deleted since the run: {r}");
    }
    for r in &f.errors {
        println!("  ERROR: {r}");
    }
}

async fn job_tables(
    cfg: &crate::db::connect::ConnectionConfig,
    schema: &str,
) -> anyhow::Result<(sqlx::MySqlConnection, Vec<crate::inventory::model::Table>)> {
    let mut conn = cfg.with_database(Some(schema)).connect_one().await?;
    let inv = inventory::take(
        &mut conn,
        &Scope {
            schemas: vec![schema.to_string()],
            tables: vec![],
        },
    )
    .await?;
    Ok((conn, inv.tables))
}

/// Runs `verify`: 0 all proven, 1 rows changed or deleted since (listed) or a replica not
/// equal to the primary (or not compared, or a range of it unsettled), 2 a value the backup
/// does not prove.
pub fn verify(args: VerifyArgs) -> anyhow::Result<u8> {
    let pause = args.pause_replicas;
    let args = args.job;
    let job = runner::load_job(&args.job)?;
    let cfg = args.conn.resolve()?;
    let id = job_id(&args.job, &args.job_id)?;
    let (f, copies, replicas) = block_on(async {
        if pause {
            // Not while a replica stands paused: it is started again first.
            tokio::spawn(async {
                use crate::engine::replicas::verify::PAUSING;
                use tokio::signal::unix::{signal, SignalKind};
                let (Ok(mut int), Ok(mut term)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                ) else {
                    return;
                };
                tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
                if PAUSING.load(Ordering::SeqCst) {
                    eprintln!("myrecode: interrupted; starting the paused replica again first...");
                    while PAUSING.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                std::process::exit(130);
            });
        }
        let (mut conn, tables) = job_tables(&cfg, &job.schema).await?;
        let f = verify::verify(&mut conn, &job.schema, &id, &tables).await?;
        let copies = verify::verify_copies(&mut conn, &job, &id).await?;
        let replicas = crate::engine::replicas::verify::verify(
            &mut conn,
            &cfg,
            &job,
            &tables,
            pause,
            &events::Lines,
        )
        .await?;
        anyhow::Ok((f, copies, replicas))
    })?;
    print_findings(&f, "verified");
    let mut copies_differ = false;
    for (table, c) in &copies {
        print!("{}", verify::describe_copy_findings(table, c));
        copies_differ |= !c.differ.is_empty();
    }
    let mut replicas_differ = false;
    for (replica, c) in &replicas {
        println!("{}", c.describe(replica));
        replicas_differ |= !c.is_equal();
    }
    if !f.errors.is_empty() {
        anyhow::bail!("{} value(s) are not what their backup recodes to. Fix: inspect them; `myrecode rollback` restores the backups", f.errors.len());
    }
    Ok(
        if f.changed_since.is_empty()
            && f.deleted_since.is_empty()
            && !copies_differ
            && !replicas_differ
        {
            EXIT_OK
        } else {
            EXIT_ATTENTION
        },
    )
}

/// The job's tables that the copy strategy recodes (swapped in, not undone by `rollback`).
fn copied_tables(job: &crate::job::model::Job) -> Vec<String> {
    job.tables
        .iter()
        .filter(|t| matches!(t.strategy, crate::job::model::Strategy::Copy))
        .map(|t| t.name.clone())
        .collect()
}

/// Runs `rollback`: 0 everything restored, 1 rows changed since were left alone (listed) or
/// the job copied tables (their bookkeeping kept for `cleanup`, the way back printed).
pub fn rollback(args: JobArgs) -> anyhow::Result<u8> {
    let job = runner::load_job(&args.job)?;
    let cfg = args.conn.resolve()?;
    let id = job_id(&args.job, &args.job_id)?;
    let copied = copied_tables(&job);
    let f = block_on(async {
        let (mut conn, tables) = job_tables(&cfg, &job.schema).await?;
        verify::rollback(&mut conn, &job.schema, &id, &tables, &copied).await
    })?;
    print_findings(&f, "restored");
    for t in &copied {
        let old = crate::bookkeeping::names::names(t).old;
        println!(
            "  not undone: '{t}' was copied (strategy: copy), which `rollback` does not reverse; its original is kept as '{old}' until `myrecode cleanup`. To go back to it: RENAME TABLE {} TO {}, {} TO {} (writes made since the cut-over are only in the recoded table)",
            quote::ident(t),
            quote::ident(&format!("{t}_recoded")),
            quote::ident(&old),
            quote::ident(t)
        );
    }
    Ok(
        if f.changed_since.is_empty() && f.errors.is_empty() && copied.is_empty() {
            EXIT_OK
        } else {
            EXIT_ATTENTION
        },
    )
}

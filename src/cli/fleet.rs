//! `myrecode fleet`: many servers and schemas from one fleet file: `fleet scan`, `fleet
//! plan`, `fleet run` and `fleet status`.

use super::common::{block_on, check_output, resolve, ReadArgs};
use super::{EXIT_ATTENTION, EXIT_ERROR, EXIT_OK};
use crate::db::credentials::Request;
use crate::fleet::jobs::{self, JobRef};
use crate::fleet::{drive, file, html, launch, overview, pace, plan, render, rollup, scan, store};
use crate::fleet::{watch, waves};
use anyhow::{anyhow, bail, Context};
use std::path::{Path, PathBuf};

/// Arguments of `fleet`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do with the fleet.
    #[command(subcommand)]
    command: Command,
}

/// The fleet's subcommands.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Scan every schema the fleet file selects, within each server's concurrency, into
    /// DIR/<server>/<schema>.json (resumable), then one roll-up: terminal, DIR/fleet.json,
    /// DIR/fleet.md, DIR/fleet.html, with the tables the server's counters call unused.
    Scan(ScanArgs),
    /// Write one job per schema from the reports `fleet scan` left in DIR, each exactly as
    /// `plan --report` writes it, into JOBS/<server>/<schema>.yaml, and the fleet's summary
    /// JOBS/fleet-plan.md and .json (per schema: job, tables, refusals, estimated work).
    Plan(PlanArgs),
    /// Run the jobs under JOBS in waves (the fleet file's groups in order, then the servers
    /// in no group), within each server's concurrency, each as `myrecode run JOB --execute`
    /// would (its log in JOBS/<server>/<schema>.log); a dry run unless --execute.
    Run(RunArgs),
    /// One line per job under JOBS (phase, rows, ETA, replica lag, legacy sessions) and the
    /// fleet's roll-up; exit 0 when every job is done, 1 when not.
    Status(StatusArgs),
}

/// Arguments of `fleet plan`.
#[derive(Debug, clap::Args)]
struct PlanArgs {
    /// The fleet file `fleet scan` read.
    #[arg(value_name = "FLEET")]
    fleet: PathBuf,
    /// The folder `fleet scan --out` wrote (its fleet.json and per-schema reports).
    #[arg(long, value_name = "DIR")]
    scan: PathBuf,
    /// Folder for the jobs and the summary.
    #[arg(long, value_name = "JOBS")]
    out: PathBuf,
    /// Overwrite job files that differ from what this plan writes (they may hold your edits).
    #[arg(long)]
    force: bool,
}

/// Arguments of `fleet run`.
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The fleet file (how to reach each server, its concurrency, the groups).
    #[arg(value_name = "FLEET")]
    fleet: PathBuf,
    /// The folder `fleet plan --out` wrote.
    #[arg(long, value_name = "JOBS")]
    jobs: PathBuf,
    /// Really run the jobs. Without it: which job would run in which wave.
    #[arg(long)]
    execute: bool,
    /// Also write the outcome as JSON here (per wave and job: state, exit code, reason).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Run only this wave (a group's name, or `ungrouped`): the canary first, then the rest.
    #[arg(long, value_name = "NAME")]
    wave: Option<String>,
}

/// Arguments of `fleet status`.
#[derive(Debug, clap::Args)]
struct StatusArgs {
    /// The fleet file.
    #[arg(value_name = "FLEET")]
    fleet: PathBuf,
    /// The folder `fleet plan --out` wrote.
    #[arg(long, value_name = "JOBS")]
    jobs: PathBuf,
    /// Print JSON (`overview_version` 1) instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `fleet scan`.
#[derive(Debug, clap::Args)]
struct ScanArgs {
    /// The fleet file (YAML: servers, schemas, concurrency, groups; docs/fleet.md).
    #[arg(value_name = "FLEET")]
    fleet: PathBuf,
    /// Folder for the per-schema reports and the roll-up; a second run into it scans only
    /// what the first left unfinished.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// How much of each table to read, and how gently.
    #[command(flatten)]
    read: ReadArgs,
}

/// Runs `fleet`.
pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        Command::Scan(a) => scan_fleet(a),
        Command::Plan(a) => plan_fleet(a),
        Command::Run(a) => run_fleet(a),
        Command::Status(a) => status_fleet(a),
    }
}

/// `fleet scan`: exit 1 when legacy text, undecided values or blocks were found, 2 when a
/// schema could not be scanned (the roll-up is still written from what was).
fn scan_fleet(a: ScanArgs) -> anyhow::Result<u8> {
    let fleet = file::load(&a.fleet)?;
    // Every server's settings (and its --ask-pass prompt, once) before anything connects.
    let mut targets = Vec::new();
    for s in &fleet.servers {
        let config = resolve(Request {
            url: s.url.as_deref(),
            defaults_file: s.defaults_file.as_deref(),
            ask_pass: s.ask_pass,
        })
        .with_context(|| format!("server '{}'", s.name))?;
        targets.push(scan::Target {
            server: s.clone(),
            config: config.with_database(None),
        });
    }
    let opts = scan::Options {
        scan: a.read.options(),
        out: a.out.clone(),
    };
    let say = |line: String| eprintln!("{line}");
    let outcome = block_on(scan::run(&targets, &opts, &say))?;
    let (json, md, page) = scan::rollup_paths(&a.out);
    std::fs::write(&json, render::to_json(&outcome.rollup))
        .with_context(|| format!("cannot write {}", json.display()))?;
    std::fs::write(&md, render::to_markdown(&outcome.rollup))
        .with_context(|| format!("cannot write {}", md.display()))?;
    std::fs::write(&page, html::to_html(&outcome.rollup))
        .with_context(|| format!("cannot write {}", page.display()))?;
    print!("{}", render::to_text(&outcome.rollup));
    eprintln!(
        "fleet scan: {} schemas scanned by this run, {} kept from an earlier one; roll-up in {}, {} and {}",
        outcome.scanned,
        outcome.kept,
        json.display(),
        md.display(),
        page.display()
    );
    if !outcome.failed.is_empty() {
        bail!(
            "{} schema(s) or server(s) could not be scanned: {}. Fix: correct what each names and run the same command again (complete reports are kept)",
            outcome.failed.len(),
            outcome.failed.join("; ")
        );
    }
    Ok(if rollup::needs_action(&outcome.rollup) {
        EXIT_ATTENTION
    } else {
        EXIT_OK
    })
}

/// `fleet plan`: exit 1 when a schema is refused (listed with its fixes), 2 on an error
/// (nothing is written then).
fn plan_fleet(a: PlanArgs) -> anyhow::Result<u8> {
    let fleet = file::load(&a.fleet)?;
    let (rollup_path, _, _) = scan::rollup_paths(&a.scan);
    let text = std::fs::read_to_string(&rollup_path).map_err(|e| {
        anyhow!(
            "cannot read {}: {e}. Fix: run `myrecode fleet scan {} --out {}` first",
            rollup_path.display(),
            a.fleet.display(),
            a.scan.display()
        )
    })?;
    let rolled: rollup::Rollup = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{} is not a fleet roll-up ({e}). Fix: give --scan the folder `fleet scan --out` wrote",
            rollup_path.display()
        )
    })?;
    let mut writes: Vec<(PathBuf, String)> = Vec::new();
    let mut lines = Vec::new();
    let mut attention = false;
    for server in &fleet.servers {
        let Some(sr) = rolled.servers.iter().find(|s| s.name == server.name) else {
            eprintln!(
                "fleet plan: {}: not in {}: no job (scan it with `fleet scan`)",
                server.name,
                rollup_path.display()
            );
            attention = true;
            continue;
        };
        for (schema, why) in &sr.failed {
            eprintln!(
                "fleet plan: {}/{schema}: its scan failed ({why}): no job",
                server.name
            );
            attention = true;
        }
        for schema in &sr.schemas {
            let path = a.scan.join(&schema.report);
            let report = store::complete_report(&path).ok_or_else(|| {
                anyhow!(
                    "{} is missing or incomplete. Fix: run `myrecode fleet scan {} --out {}` again",
                    path.display(),
                    a.fleet.display(),
                    a.scan.display()
                )
            })?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (job, line) = plan::schema_plan(server, schema, &report, &name, &a.out)
                .with_context(|| format!("{}/{}", server.name, schema.name))?;
            if let Some(text) = job {
                writes.push((jobs::job_path(&a.out, &server.name, &schema.name), text));
            }
            attention |= line.verdict == plan::Verdict::Refused;
            lines.push(line);
        }
    }
    // Edited jobs are kept unless --force, checked before anything is written.
    let edited: Vec<String> = writes
        .iter()
        .filter(|(p, t)| std::fs::read_to_string(p).is_ok_and(|old| &old != t))
        .map(|(p, _)| p.display().to_string())
        .collect();
    if !edited.is_empty() && !a.force {
        bail!(
            "{} job file(s) differ from what this plan writes and may hold your edits: {}. Fix: pass --force to overwrite them, or give --out another folder",
            edited.len(),
            edited.join(", ")
        );
    }
    for (p, t) in &writes {
        store::write_whole(p, t)?;
    }
    for stale in find_job_files(&fleet, &a.out)?
        .iter()
        .filter(|p| !writes.iter().any(|(w, _)| w == *p))
    {
        eprintln!(
            "fleet plan: warning: {} is from an earlier plan and this one writes no job for it: remove it, or `fleet run` runs it",
            stale.display()
        );
    }
    let summary = plan::FleetPlan {
        plan_version: plan::PLAN_VERSION,
        pace: pace::SOURCE.to_string(),
        schemas: lines,
    };
    let (md, json) = jobs::plan_paths(&a.out);
    store::write_whole(&md, &plan::to_markdown(&summary))?;
    store::write_whole(&json, &plan::to_json(&summary))?;
    print!("{}", plan::to_text(&summary));
    eprintln!(
        "fleet plan: summary in {} and {}. Next: review the jobs, then `myrecode fleet run {} --jobs {}` (a dry run) and with --execute",
        md.display(),
        json.display(),
        a.fleet.display(),
        a.out.display()
    );
    Ok(if attention { EXIT_ATTENTION } else { EXIT_OK })
}

/// The job files under `jobs` of the fleet's servers, server by server in file order, each
/// server's by name.
fn find_job_files(fleet: &file::Fleet, jobs: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for s in &fleet.servers {
        let dir = jobs.join(&s.name);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        out.extend(files);
    }
    Ok(out)
}

/// The fleet's jobs under `jobs`, each loaded for its schema and named as `run` names it.
fn find_jobs(fleet: &file::Fleet, jobs_dir: &Path) -> anyhow::Result<Vec<JobRef>> {
    if !jobs_dir.is_dir() {
        bail!(
            "{} is not a folder. Fix: give --jobs the folder `fleet plan --out` wrote",
            jobs_dir.display()
        );
    }
    let mut out = Vec::new();
    for path in find_job_files(fleet, jobs_dir)? {
        let job = crate::engine::runner::load_job(&path)?;
        let server = path
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(JobRef {
            server,
            schema: job.schema,
            job_id: super::run::job_id(&path, &None)?,
            path,
        });
    }
    if out.is_empty() {
        bail!(
            "no job under {} for the servers of {}. Fix: write them with `myrecode fleet plan FLEET --scan DIR --out {}`",
            jobs_dir.display(),
            fleet.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", "),
            jobs_dir.display()
        );
    }
    Ok(out)
}

/// Each server with jobs, its settings gathered (its `ask-pass` prompt once) before anything runs.
fn reach(fleet: &file::Fleet, jobs: &[JobRef]) -> anyhow::Result<Vec<launch::Reach>> {
    let mut out = Vec::new();
    for s in fleet
        .servers
        .iter()
        .filter(|s| jobs.iter().any(|j| j.server == s.name))
    {
        let config = resolve(Request {
            url: s.url.as_deref(),
            defaults_file: s.defaults_file.as_deref(),
            ask_pass: s.ask_pass,
        })
        .with_context(|| format!("server '{}'", s.name))?;
        out.push(launch::Reach {
            server: s.clone(),
            config: config.with_database(None),
        });
    }
    Ok(out)
}

/// `fleet run`: exit 0 every job done (dry: runnable), 1 a job failed, was refused or was
/// not run (each named), 2 an error before any job started.
fn run_fleet(a: RunArgs) -> anyhow::Result<u8> {
    if let Some(p) = &a.json {
        check_output("--json", p)?;
    }
    let fleet = file::load(&a.fleet)?;
    let jobs = find_jobs(&fleet, &a.jobs)?;
    let servers = reach(&fleet, &jobs)?;
    let exe = std::env::current_exe()
        .context("cannot find this program's own path to run the jobs with")?;
    let mut children = launch::Children::new(exe, servers)?;
    let mut waves = waves::waves(&fleet, &jobs);
    if let Some(only) = &a.wave {
        if !waves.iter().any(|w| &w.name == only) {
            bail!(
                "--wave {only}: no wave of that name has jobs. Fix: name one of: {}",
                waves
                    .iter()
                    .map(|w| w.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        waves.retain(|w| &w.name == only);
    }
    let say = |line: String| eprintln!("fleet run: {line}");
    let result = drive::drive(&fleet, &jobs, &waves, a.execute, &mut children, &say);
    print!("{}", drive::to_text(&result));
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&result).expect("the result serializes") + "\n";
        store::write_whole(p, &text)?;
    }
    if !a.execute {
        eprintln!(
            "fleet run: a dry run: nothing was started. Run with --execute to run the jobs in these waves"
        );
    }
    Ok(result.exit_code)
}

/// `fleet status`: exit 0 every job done, 1 not every one, 2 a job's state unreadable.
fn status_fleet(a: StatusArgs) -> anyhow::Result<u8> {
    let fleet = file::load(&a.fleet)?;
    let jobs = find_jobs(&fleet, &a.jobs)?;
    let servers = reach(&fleet, &jobs)?;
    let lines = block_on(async {
        let mut lines = Vec::new();
        for j in &jobs {
            let cfg = &servers
                .iter()
                .find(|s| s.server.name == j.server)
                .expect("every job's server was reached")
                .config;
            let s = watch::read(cfg, j)
                .await
                .map_err(|e| crate::db::redact::redact_error(&e));
            lines.push(overview::line(
                &j.server,
                &j.path.display().to_string(),
                &j.schema,
                s.as_ref().map_err(Clone::clone),
            ));
        }
        anyhow::Ok(lines)
    })?;
    let o = overview::overview(lines);
    if a.json {
        print!("{}", overview::to_json(&o));
    } else {
        print!("{}", overview::to_text(&o));
    }
    Ok(if o.unreadable > 0 {
        EXIT_ERROR
    } else if o.all_done {
        EXIT_OK
    } else {
        EXIT_ATTENTION
    })
}

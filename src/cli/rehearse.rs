//! `myrecode rehearse`: load a dump into a throwaway server, run the job (or scan → plan →
//! the planned job) with verify, and give CI a verdict: an exit code and a JUnit XML report.

use super::common::block_on;
use crate::engine::runner;
use crate::rehearse::{self, dump, verdict};
use anyhow::{Context, Result};
use std::path::PathBuf;

/// Arguments of `rehearse`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Exit codes (the worst table decides):\n  \
    0  every table recoded and verified, or nothing to recode\n  \
    1  undecided values: left as they were, listed in the output and the JUnit report\n  \
    2  error: no verdict (the dump is cut short, creates no table or did not load whole; its schemas exist on the given server; the job is invalid; no server)\n  \
    3  a table is refused by the rules (`run --execute` would stop on it), or left out by plan\n  \
    4  a table was not finished, or verify could not prove a recoded value\n\n\
    Example (CI):\n  myrecode rehearse --dump prod-schema.sql.gz --job job.yaml --junit rehearsal.xml")]
pub struct Args {
    /// The dump to load: SQL as mysqldump/mariadb-dump write it, plain or gzip (recognised by its bytes).
    #[arg(long, value_name = "FILE")]
    dump: PathBuf,
    /// The job to rehearse; without it, every schema the dump holds is scanned in full and the planned job is run.
    #[arg(long, value_name = "FILE")]
    job: Option<PathBuf>,
    /// Write the verdict as JUnit XML here: one test case per table (recoded passes; refused, undecided or unproven fails, saying why).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// The database a dump without `USE` statements loads into (default: the job's schema, else `rehearsal`).
    #[arg(long, value_name = "NAME")]
    database: Option<String>,
    /// Load a dump that does not end with mysqldump's `-- Dump completed` line (hand-written SQL); without it such a dump is refused as cut short.
    #[arg(long)]
    partial_dump_ok: bool,
}

/// Runs `rehearse`; the exit code is the verdict (see the after-help). With `--junit`, a
/// report is written whatever happens: on an error (exit 2) it holds one `<error>` test case.
pub fn run(args: Args) -> Result<u8> {
    let junit = args.junit.clone();
    let result = rehearse_and_report(args);
    if let (Err(e), Some(path)) = (&result, &junit) {
        // Best effort: the error itself goes to stderr either way.
        let text = crate::db::redact::redact_error(e);
        std::fs::write(path, crate::report::junit::to_junit_error(&text)).ok();
    }
    result
}

fn rehearse_and_report(args: Args) -> Result<u8> {
    if let Some(path) = &args.junit {
        super::common::check_output("--junit", path)?;
    }
    // Every input is checked before a server is started.
    drop(dump::open(&args.dump)?);
    dump::client()?;
    let job = args.job.as_deref().map(runner::load_job).transpose()?;
    let database = args
        .database
        .clone()
        .or_else(|| job.as_ref().map(|j| j.schema.clone()))
        .unwrap_or_else(|| "rehearsal".into());
    let opts = rehearse::Options {
        dump: args.dump.clone(),
        job,
        database,
        partial_dump_ok: args.partial_dump_ok,
    };
    let r = block_on(rehearse::rehearse(&opts))?;
    println!();
    for t in &r.results {
        println!("{}", t.line());
        for v in &t.undecided_values {
            println!("  {v}");
        }
    }
    println!("{}", verdict::summary(&r.results));
    if let Some(path) = &args.junit {
        let xml = crate::report::junit::to_junit(&r.results, &r.server, r.seconds);
        std::fs::write(path, xml)
            .with_context(|| format!("cannot write the JUnit report {}", path.display()))?;
        println!("JUnit report: {}", path.display());
    }
    Ok(verdict::exit_code(&r.results))
}

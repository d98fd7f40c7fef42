//! `myrecode review`: list what a job left undecided, every reading side by side, and write
//! a decision file for the next run (`run --decisions`).

use super::common::{block_on, ConnectArgs};
use super::run::job_id;
use super::{EXIT_ATTENTION, EXIT_OK};
use crate::engine::runner;
use crate::review::{list, render};
use std::path::PathBuf;

/// Arguments of `review`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job file the run used.
    pub job: PathBuf,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// The name the run used (default: the job file's name).
    #[arg(long, value_name = "NAME")]
    pub job_id: Option<String>,
    /// Write a decision file to fill in (every undecided value with `use: '?'`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Runs `review`: 0 nothing undecided, 1 undecided values listed.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let job = runner::load_job(&args.job)?;
    let cfg = args.conn.resolve()?;
    let id = job_id(&args.job, &args.job_id)?;
    let tables: Vec<String> = job.tables.iter().map(|t| t.name.clone()).collect();
    let values = block_on(async {
        let mut conn = cfg.with_database(Some(&job.schema)).connect_one().await?;
        list::undecided(&mut conn, &job.schema, &id, &tables).await
    })?;
    if let Some(out) = &args.out {
        if out.exists() {
            anyhow::bail!(
                "'{}' exists: review never overwrites decisions. Fix: name another file with --out",
                out.display()
            );
        }
        std::fs::write(out, render::decision_file(&id, &values)).map_err(|e| {
            anyhow::anyhow!(
                "cannot write '{}': {e}. Fix: choose a writable path",
                out.display()
            )
        })?;
    }
    if values.is_empty() {
        println!("job {id}: nothing undecided (no quarantined value left).");
        return Ok(EXIT_OK);
    }
    print!("{}", render::listing(&values));
    println!(
        "{} undecided value(s). Decide per value or per column in a decision file{}, then: \
         myrecode run {} --execute --decisions FILE",
        values.len(),
        args.out
            .as_ref()
            .map_or(String::new(), |p| format!(" (written: {})", p.display())),
        args.job.display()
    );
    Ok(EXIT_ATTENTION)
}

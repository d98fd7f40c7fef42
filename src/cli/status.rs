//! `myrecode status job.yaml [--json]`: where a job stands, from any terminal, reading only.

use super::common::block_on;
use super::run::{job_id, JobArgs};
use super::EXIT_OK;
use crate::engine::runner;
use crate::status::{self, render};
use anyhow::Result;

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job, where to connect, and the name the run used.
    #[command(flatten)]
    pub job: JobArgs,
    /// Print a JSON document (stable field names, `schema_version` 1) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Prints the job's status; exit 0 whatever it is (2 when it cannot be read).
pub fn run(args: Args) -> Result<u8> {
    let job = runner::load_job(&args.job.job)?;
    let id = job_id(&args.job.job, &args.job.job_id)?;
    let cfg = args.job.conn.resolve()?.with_database(Some(&job.schema));
    let s = block_on(async {
        let mut conn = cfg.connect_one().await?;
        status::read(&mut conn, &job, &id).await
    })?;
    if args.json {
        println!("{}", render::json(&s));
    } else {
        print!("{}", render::text(&s));
    }
    Ok(EXIT_OK)
}

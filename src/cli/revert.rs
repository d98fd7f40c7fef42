//! `myrecode revert JOB [--execute]`: after a cut-over, until `cleanup`, the job's swapped
//! tables put back as they were, with every write made since the swap in their legacy bytes
//! (`engine::revert`). Without `--execute` it says what it would do.

use super::common::block_on;
use super::run::{job_id, JobArgs};
use super::{EXIT_ATTENTION, EXIT_OK};
use crate::engine::{revert, runner};
use anyhow::{bail, Result};

/// Arguments of `revert`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub job: JobArgs,
    /// Swap back (otherwise only say what would be done).
    #[arg(long)]
    pub execute: bool,
}

/// Runs `revert`; exit 1 when a value could not go back (listed) or nothing was done.
pub fn run(args: Args) -> Result<u8> {
    let job = runner::load_job(&args.job.job)?;
    let id = job_id(&args.job.job, &args.job.job_id)?;
    let cfg = args.job.conn.resolve()?;
    let out = block_on(revert::revert(&cfg, &job, &id, args.execute))?;
    if !out.refused.is_empty() {
        let lines: Vec<String> = (out.refused.iter())
            .map(|(t, why)| format!("  {t}: {why}"))
            .collect();
        bail!(
            "revert refused, nothing was changed: the job's tables are swapped back together, and these cannot be:\n{}",
            lines.join("\n")
        );
    }
    for t in &out.already {
        println!("{t}: reverted already (the recoded table is kept until `cleanup`)");
    }
    for (t, waiting) in &out.would {
        println!(
            "{t}: would be swapped back, {waiting} write(s) since the swap to bring back first"
        );
    }
    if !out.would.is_empty() {
        println!("Nothing was changed. Run again with --execute to swap back.");
        return Ok(EXIT_OK);
    }
    let mut listed = 0;
    for (t, keys, unreverted) in &out.swapped {
        println!("{t}: swapped back, {keys} row(s) written since the swap brought back; the recoded table kept as {t}_myrecode_new until `cleanup`");
        listed += unreverted;
    }
    if let Some(p) = out.pause {
        println!("swap back: tables locked for {} ms", p.as_millis());
    }
    if let Some((users, n)) = out.bridged.as_ref().filter(|(_, n)| *n > 0) {
        let who = if users.is_empty() {
            "the application".to_string()
        } else {
            users.join(", ")
        };
        println!(
            "bridge: {n} session(s) of {who} opened since the cut-over's swap are still open, bridged: they talk the legacy charset to tables latin1 again, \
             so their writes of text latin1 cannot hold fail (1366; a session without strict sql_mode stores '?'). \
             Fix: restart the application's workers or pool now, or KILL CONNECTION each once its transaction is done; new logins are not bridged"
        );
    }
    if listed > 0 {
        println!(
            "{listed} value(s) their legacy charset cannot hold were put back with '?' in their place: each is listed, with its key, column and text, \
             in `{}`.`_myrecode_unreverted`, and whole in the recoded table kept",
            job.schema
        );
        return Ok(EXIT_ATTENTION);
    }
    if out.swapped.is_empty() && out.already.is_empty() {
        println!("nothing to revert for job '{id}'");
        return Ok(EXIT_ATTENTION);
    }
    Ok(EXIT_OK)
}

//! `myrecode fleet`: many servers and schemas from one fleet file (`fleet scan`).

use super::common::{block_on, resolve, ReadArgs};
use super::{EXIT_ATTENTION, EXIT_OK};
use crate::db::credentials::Request;
use crate::fleet::{file, html, render, rollup, scan};
use anyhow::{bail, Context};
use std::path::PathBuf;

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

//! `myrecode scan`: the dry-run report of what each column really holds.

use super::common::{block_on, split_list, ConnectArgs, ReadArgs};
use super::{EXIT_ATTENTION, EXIT_OK};
use crate::inventory::{self, Scope};
use crate::report;
use crate::scan::interrupted;
use crate::scan::read::{self, Progress};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Arguments of `scan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    conn: ConnectArgs,
    /// Schema(s) to scan (comma-separated or repeated); default: the database in --url, else all user schemas.
    #[arg(long = "schema", value_name = "SCHEMA")]
    schemas: Vec<String>,
    /// Only these tables (comma-separated or repeated).
    #[arg(long = "tables", value_name = "TABLE")]
    tables: Vec<String>,
    /// How much of each table to read, and how gently.
    #[command(flatten)]
    read: ReadArgs,
    /// Also write the report as JSON (versioned layout; input of `plan --report`).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the report as Markdown.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page (bars of labels per column, undecided keys, risks; works offline).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

/// A progress bar on a terminal, plain lines every few seconds otherwise.
struct ScanProgress {
    bar: Option<ProgressBar>,
    state: Mutex<(String, u64, Instant)>,
    /// Tables started and tables read whole, for the message of a scan cut short.
    counts: Mutex<(usize, usize)>,
}

impl ScanProgress {
    fn new() -> Self {
        ScanProgress {
            bar: None,
            state: Mutex::new((String::new(), 0, Instant::now())),
            counts: Mutex::new((0, 0)),
        }
    }
}

impl Progress for ScanProgress {
    fn table_started(&self, schema: &str, table: &str, estimated: u64) {
        *self.state.lock().unwrap() = (format!("{schema}.{table}"), 0, Instant::now());
        self.counts.lock().unwrap().0 += 1;
        if let Some(bar) = &self.bar {
            bar.reset();
            bar.set_length(estimated.max(1));
            bar.set_message(format!("{schema}.{table}"));
        }
    }
    fn rows_read(&self, rows: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(rows);
            return;
        }
        let mut s = self.state.lock().unwrap();
        s.1 += rows;
        if s.2.elapsed() > Duration::from_secs(5) {
            eprintln!("scan: {}: {} rows read", s.0, s.1);
            s.2 = Instant::now();
        }
    }
    fn table_done(&self, rows: u64, elapsed: Duration) {
        self.counts.lock().unwrap().1 += 1;
        let name = self.state.lock().unwrap().0.clone();
        let rate = rows as f64 / elapsed.as_secs_f64().max(1e-3);
        let line = format!(
            "scan: {name}: {rows} rows in {:.1}s ({rate:.0} rows/s)",
            elapsed.as_secs_f64()
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }
}

/// Runs `scan`; exit 1 when anything needs recoding, a risk was found, or values are undecided.
pub fn run(args: Args) -> anyhow::Result<u8> {
    // The reports' paths are checked before the scan, which may take hours.
    for (flag, path) in [
        ("--json", &args.json),
        ("--markdown", &args.markdown),
        ("--html", &args.html),
    ] {
        if let Some(p) = path {
            super::common::check_output(flag, p)?;
        }
    }
    let cfg = args.conn.resolve()?;
    let mut schemas = split_list(&args.schemas);
    if schemas.is_empty() {
        schemas.extend(cfg.database.clone());
    }
    let scope = Scope {
        schemas,
        tables: split_list(&args.tables),
    };
    let opts = args.read.options();
    let mut progress = ScanProgress::new();
    if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(1);
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} rows {per_sec} ETA {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        progress.bar = Some(bar);
    }
    // The tables the scan means to read, once the inventory says.
    let planned: Mutex<Option<Vec<(String, String)>>> = Mutex::new(None);
    let scanned = block_on(async {
        let mut conn = cfg.connect_one().await?;
        let inv = inventory::take(&mut conn, &scope).await?;
        *planned.lock().unwrap() = Some(
            inv.tables
                .iter()
                .map(|t| (t.schema.clone(), t.name.clone()))
                .collect(),
        );
        read::scan(&mut conn, &inv, &opts, &progress).await
    });
    if let Some(bar) = &progress.bar {
        bar.finish_and_clear();
    }
    let planned = planned.into_inner().unwrap();
    let report = scanned.map_err(|e| connection_lost(e, &progress, planned.as_deref()))?;
    print!("{}", report::scan::to_text(&report));
    if let Some(path) = &args.json {
        std::fs::write(path, report::scan::to_json(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, report::scan::to_markdown(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report::html::to_html(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(if report::scan::needs_action(&report) {
        EXIT_ATTENTION
    } else {
        EXIT_OK
    })
}

/// A scan whose connection was lost once it had begun reading, said in one line with what
/// was read and the fix ([`interrupted::message`]); any other error as it is.
fn connection_lost(
    e: anyhow::Error,
    progress: &ScanProgress,
    planned: Option<&[(String, String)]>,
) -> anyhow::Error {
    use crate::engine::retry::{classify, Transient};
    let (Some(planned), Some(class)) = (planned, classify(&e)) else {
        return e;
    };
    if !matches!(
        class,
        Transient::ConnectionLost
            | Transient::ServerGone
            | Transient::ServerRestarting
            | Transient::Unreachable
    ) {
        return e;
    }
    let (started, done) = *progress.counts.lock().unwrap();
    let at = progress.state.lock().unwrap().0.clone();
    let how = class.to_string();
    anyhow::anyhow!(interrupted::message(&interrupted::Stopped {
        how: &how,
        at: (started > done).then_some(at.as_str()),
        planned,
        done,
    }))
}

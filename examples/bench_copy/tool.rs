//! One tool's run against its database: the command, with the writer and the sampler
//! alongside, what it cost, and the printed figures.

use crate::app::{check, writer, Check, WriterReport};
use crate::common::{measure, tail, ChildCost};
use crate::observe::{busy_percent, cpu_jiffies, process_cpu, sampler, Samples, SAMPLE_EVERY};
use crate::{Load, Options};
use anyhow::Result;
use myrecode::db::connect::ConnectionConfig;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One of the two databases.
#[derive(Debug, Clone)]
pub(crate) struct BenchDb {
    pub(crate) name: String,
    pub(crate) config: ConnectionConfig,
    /// The server's process id, when it runs on this machine (its CPU time is then measured).
    pub(crate) server_pid: Option<u32>,
}

/// What one tool's run gave.
#[derive(Debug)]
pub(crate) struct ToolRun {
    pub(crate) tool: &'static str,
    pub(crate) cost: ChildCost,
    /// Whether the tool exited with an error.
    pub(crate) failed: bool,
    /// The machine's CPU busy share during the run, %.
    pub(crate) busy: f64,
    /// CPU time the server spent during the run (a local server only): the work the tool made
    /// it do, beside the tool's own.
    pub(crate) server_cpu: Option<Duration>,
    pub(crate) writer: WriterReport,
    pub(crate) samples: Samples,
    pub(crate) check: Check,
    /// The tool's own summary lines (cut-over pause, "Successfully altered").
    pub(crate) summary: Vec<String>,
}

/// What every run of a series shares: the runtime, the options, the load, the password to
/// mask in what the tools print.
#[derive(Clone, Copy)]
pub(crate) struct On<'a> {
    pub(crate) rt: &'a tokio::runtime::Runtime,
    pub(crate) opts: &'a Options,
    pub(crate) load: Load,
    pub(crate) secret: Option<&'a str>,
}

/// Runs `cmd` against `db` with the writer (under [`Load::Writer`]) and sampler alongside.
pub(crate) fn run_tool(
    on: &On<'_>,
    tool: &'static str,
    db: &BenchDb,
    cmd: Command,
    log: &Path,
) -> Result<ToolRun> {
    let On {
        rt,
        opts,
        load,
        secret,
    } = *on;
    println!("== {tool} on {} ({}) ==", db.name, load.name());
    let stop = Arc::new(AtomicBool::new(false));
    let writer_ids = Arc::new(Mutex::new(Vec::new()));
    let w = (load == Load::Writer).then(|| {
        rt.spawn(writer(
            db.config.clone(),
            opts.rows,
            opts.writer_every,
            stop.clone(),
            writer_ids.clone(),
        ))
    });
    if let Some(w) = &w {
        while writer_ids.lock().expect("writer ids").is_empty() && !w.is_finished() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let s = rt.spawn(sampler(
        db.config.clone(),
        db.name.clone(),
        writer_ids,
        stop.clone(),
    ));
    let cpu_before = cpu_jiffies();
    let server_before = db.server_pid.and_then(process_cpu);
    let cost = measure(cmd, log);
    let busy = busy_percent(cpu_before, cpu_jiffies());
    let server_cpu = match (server_before, db.server_pid.and_then(process_cpu)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    stop.store(true, Ordering::SeqCst);
    let writer = match w {
        Some(w) => rt.block_on(w)??,
        None => WriterReport::default(),
    };
    let samples = rt.block_on(s)??;
    let cost = cost?;
    // myrecode exits 1 when it quarantined values, which the check below shows.
    let failed = cost.code != 0 && !(tool == "myrecode" && cost.code == 1);
    let text = mask(&std::fs::read_to_string(log).unwrap_or_default(), secret);
    let mut summary: Vec<String> = text
        .lines()
        .filter(|l| {
            l.starts_with("cut-over:")
                || l.contains("Successfully altered")
                || l.contains("Swapped original and new tables")
                || (l.contains("values recoded") && !l.starts_with("run: table="))
        })
        .map(str::to_string)
        .collect();
    if failed {
        // The tool's last words: its error, not its progress lines.
        let end = mask(&tail(log, 40), secret);
        let last: Vec<&str> = end
            .lines()
            .filter(|l| !l.starts_with("run: table=") && !l.trim().is_empty())
            .collect();
        summary.push(format!("FAILED with exit code {}:", cost.code));
        summary.extend(
            last[last.len().saturating_sub(4)..]
                .iter()
                .map(|l| l.to_string()),
        );
    }
    let check = rt.block_on(check(&db.config, opts.rows, &writer))?;
    let run = ToolRun {
        tool,
        cost,
        failed,
        busy,
        server_cpu,
        writer,
        samples,
        check,
        summary,
    };
    print_run(&run, opts.rows);
    Ok(run)
}

/// Replaces the password, if any, wherever it appears.
pub(crate) fn mask(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => text.replace(s, "***"),
        _ => text.to_string(),
    }
}

/// Prints one run's figures as soon as it is done.
pub(crate) fn print_run(r: &ToolRun, rows: i64) {
    let w = &r.writer;
    println!(
        "{}: {:.1} s, {:.0} rows/s, exit {}, peak RSS {:.1} MiB, its CPU {:.1} s ({:.0}% of one core); machine CPU {:.0}% busy",
        r.tool,
        r.cost.wall.as_secs_f64(),
        rows as f64 / r.cost.wall.as_secs_f64(),
        r.cost.code,
        r.cost.max_rss_kib as f64 / 1024.0,
        r.cost.cpu.as_secs_f64(),
        100.0 * r.cost.cpu.as_secs_f64() / r.cost.wall.as_secs_f64(),
        r.busy
    );
    if let Some(sc) = r.server_cpu {
        println!(
            "server CPU during the run: {:.1} s; with the tool's own, {:.1} s of CPU, {:.2} s per 100k rows",
            sc.as_secs_f64(),
            (sc + r.cost.cpu).as_secs_f64(),
            (sc + r.cost.cpu).as_secs_f64() * 100_000.0 / rows as f64
        );
    }
    for l in &r.summary {
        println!("  | {l}");
    }
    println!(
        "writer: {} statements, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; switched to UTF-8 after {}; {} retried, {} failed",
        w.latencies.len(),
        ms(w.quantile(0.5)),
        ms(w.quantile(0.99)),
        ms(w.quantile(1.0)),
        w.switched_at
            .map(|d| format!("{:.1} s", d.as_secs_f64()))
            .unwrap_or_else(|| "never (no swap seen)".into()),
        w.retried,
        w.failed
    );
    for e in &w.first_retries {
        println!("  writer retried after: {e}");
    }
    for e in &w.first_errors {
        println!("  writer error: {e}");
    }
    let k = &r.check;
    println!(
        "result: body is {}; {} rows ({} missing, {} extra); values: {} recoded, {} mojibake, {} ASCII, {} other",
        k.charset, k.rows, k.missing, k.extra, k.recoded, k.mojibake, k.ascii, k.other
    );
    for (id, col, want, got) in &k.examples {
        println!("  row {id} {col}: wanted {want:?}, got {got:?}");
    }
    if let Some((id, body)) = &k.sample {
        println!("sample: row {id} body = {body:?}…");
    }
    let total: u64 = r.samples.seen.values().sum();
    println!(
        "process list ({} samples every {} ms; the tool's connections):",
        r.samples.samples,
        SAMPLE_EVERY.as_millis()
    );
    let mut seen: Vec<(&String, &u64)> = r.samples.seen.iter().collect();
    seen.sort_by(|a, b| b.1.cmp(a.1));
    for (what, n) in seen.iter().take(8) {
        println!(
            "  {:>5.1}%  {what}",
            100.0 * **n as f64 / total.max(1) as f64
        );
    }
    let mut waits: Vec<(&String, &u64)> = r.samples.writer_seen.iter().collect();
    waits.sort_by(|a, b| b.1.cmp(a.1));
    for (what, n) in waits.iter().take(4) {
        println!(
            "  writer connections seen busy {n} times in {} samples: {what}",
            r.samples.samples
        );
    }
    println!();
}

/// Milliseconds, for printing.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The myrecode job: both text columns to utf8mb4 by the copy strategy, automatic cut-over.
/// The targets name no collation, so both tools end with the same definitions: pt-osc's
/// `CONVERT TO CHARACTER SET utf8mb4` gives the charset's default collation too.
pub(crate) fn job_yaml(schema: &str, batch_size: i64) -> String {
    format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: {batch_size}\n  target_batch_time: 500ms\n  \
         pause_between_batches: 0ms\n  cutover: auto\ntables:\n  - name: posts\n    strategy: copy\n    columns:\n      \
         - name: author\n        source: auto\n        target: VARCHAR(64) CHARACTER SET utf8mb4\n      \
         - name: body\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4\n"
    )
}

/// The pt-osc DSN for `db`; the password goes into a 0600 defaults file, never on the command line.
pub(crate) fn pt_osc_dsn(db: &BenchDb, dir: &Path) -> Result<String> {
    let c = &db.config;
    let mut dsn = format!(
        "h={},P={},u={},D={},t=posts",
        c.host, c.port, c.user, db.name
    );
    if let Some(s) = &c.socket {
        dsn.push_str(&format!(",S={s}"));
    }
    if let Some(pw) = c.password() {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join("pt-osc.cnf");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        std::io::Write::write_all(&mut f, format!("[client]\npassword=\"{pw}\"\n").as_bytes())?;
        dsn = format!("F={},{dsn}", path.display());
    }
    Ok(dsn)
}

/// The pt-osc flags a DBA would use against a standalone server.
pub(crate) const PT_OSC_FLAGS: &[&str] = &[
    "--alter",
    "CONVERT TO CHARACTER SET utf8mb4",
    "--execute",
    "--recursion-method=none",
    "--no-version-check",
    "--no-drop-old-table",
];

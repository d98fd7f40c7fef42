//! Bench: `myrecode scan --full` and an in-place `myrecode run --execute` on a big table of the
//! throwaway server, printing rows/s and the peak RSS of each child process.
//!
//! ```text
//! cargo build --release --bin myrecode
//! cargo run --release --example bench_scan_run -- [--rows N] [--also M] [--bin PATH]
//! ```
//!
//! Each size gets a database of its own holding one table
//! `posts (id INT PRIMARY KEY, body BLOB, title VARCHAR(200) CHARACTER SET utf8mb4, KEY (title(50)))`
//! seeded with mixed legacy data (60% single-byte Russian in `body` as cp1251/KOI8-R/CP866, 20%
//! `cp1251>latin1` mojibake in `title`, ASCII, already-UTF-8 and binary values). The binary is run
//! as a child process; its peak RSS is read per child with `wait4(2)` (`ru_maxrss`, KiB on Linux).
//! Beside the run, the server's own chunked `UPDATE … SET col = CONVERT(…)` of the same values
//! (2,000 ids per statement, on a second copy of the table) is timed, checked to give the same
//! table, and the ratio printed: what a hand-written script would take, without backups,
//! compare-and-set or detection.
//! With `--also M` the same is done on an M-row table and the two are printed side by side, with
//! the RSS ratio big/small: the claim to show is that RSS does not grow with the table size.

mod common;

use anyhow::{anyhow, bail, Context, Result};
use common::{
    check_bin, command_line, default_bin, encode, execute_retrying, measure, myrecode_command,
    parse_count, tail, ChildCost, RUSSIAN,
};
use myrecode::codec::{self, Encoding};
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::{TestDatabase, ThrowawayServer};
use sqlx::{Executor, Row};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Rows per multi-row INSERT while seeding.
const INSERT_ROWS: i64 = 1000;

/// Command-line options of the bench.
#[derive(Debug)]
struct Options {
    rows: i64,
    also: Option<i64>,
    bin: PathBuf,
}

/// The figures of one table size.
#[derive(Debug, Clone, Copy)]
struct SizeResult {
    rows: i64,
    seed: Duration,
    scan: ChildCost,
    run: ChildCost,
    backups: i64,
    server: Duration,
}

impl SizeResult {
    /// Table rows per second of wall time of the scan child.
    fn scan_rate(&self) -> f64 {
        self.rows as f64 / self.scan.wall.as_secs_f64()
    }
    /// Table rows per second of wall time of the run child.
    fn run_rate(&self) -> f64 {
        self.rows as f64 / self.run.wall.as_secs_f64()
    }
    /// Table rows per second of the server's own chunked `UPDATE`.
    fn server_rate(&self) -> f64 {
        self.rows as f64 / self.server.as_secs_f64()
    }
}

/// The help text.
fn usage() -> &'static str {
    "usage: bench_scan_run [--rows N] [--also M] [--bin PATH]\n  \
     --rows N    rows of the main table (default 1000000)\n  \
     --also M    also bench an M-row table and compare (e.g. 100000)\n  \
     --bin PATH  the myrecode binary (default: target/release/myrecode next to this example)"
}

/// Reads the command line; fails with the build command when the binary is missing.
fn parse_args() -> Result<Options> {
    let mut rows = 1_000_000;
    let mut also = None;
    let mut bin = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => rows = parse_count("--rows", args.next(), usage())?,
            "--also" => also = Some(parse_count("--also", args.next(), usage())?),
            "--bin" => {
                bin = Some(PathBuf::from(
                    args.next().ok_or_else(|| anyhow!("--bin needs a path"))?,
                ))
            }
            "-h" | "--help" => {
                println!("{}", usage());
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{}", usage()),
        }
    }
    let bin = match bin {
        Some(b) => b,
        None => default_bin()?,
    };
    check_bin(&bin)?;
    Ok(Options { rows, also, bin })
}

/// What row `id` holds: (body bytes, title text). Deterministic, so runs compare.
fn seeded(id: i64) -> (Option<Vec<u8>>, String) {
    let text = RUSSIAN[(id as usize) % RUSSIAN.len()];
    let body = match id % 10 {
        // 60%: legacy single-byte Russian, the three encodings in turn.
        n @ 0..=5 => {
            let enc = [Encoding::Windows1251, Encoding::Koi8R, Encoding::Ibm866][(n % 3) as usize];
            Some(encode(enc, &format!("{text} #{id}")))
        }
        6 => Some(format!("ORDER-{id}-OK status=shipped").into_bytes()),
        7 => Some(format!("{text} #{id}").into_bytes()), // already UTF-8
        8 => Some(binary(id)),
        _ => None,
    };
    let title = match id % 5 {
        // 20%: what a latin1 connection made of cp1251 bytes, stored in utf8mb4.
        0 => codec::decode(
            Encoding::Latin1,
            &encode(Encoding::Windows1251, &format!("{} {id}", short(text))),
        )
        .expect("every byte decodes in latin1"),
        1 => format!("{} {id}", short(text)),
        _ => format!("Post number {id}"),
    };
    (body, title)
}

/// Ids per statement of the server's own chunked `UPDATE`.
const SERVER_CHUNK: usize = 2000;

/// The server's own repair of what [`seeded`] made legacy, as a DBA's script would write it:
/// per column and encoding, the ids it holds, and the expression that converts them.
fn server_groups(rows: i64) -> Vec<(&'static str, Vec<i64>)> {
    let mut groups: Vec<(&'static str, Vec<i64>)> = vec![
        (
            "body = CONVERT(CONVERT(body USING cp1251) USING utf8mb4)",
            vec![],
        ),
        (
            "body = CONVERT(CONVERT(body USING koi8r) USING utf8mb4)",
            vec![],
        ),
        (
            "body = CONVERT(CONVERT(body USING cp866) USING utf8mb4)",
            vec![],
        ),
        (
            "title = CONVERT(CAST(CONVERT(title USING latin1) AS BINARY) USING cp1251)",
            vec![],
        ),
    ];
    for id in 0..rows {
        if id % 10 <= 5 {
            groups[(id % 10 % 3) as usize].1.push(id);
        }
        if id % 5 == 0 {
            groups[3].1.push(id);
        }
    }
    groups
}

/// Seeds a second copy of the table and repairs it with the server's own chunked `UPDATE`s
/// (one connection, autocommit); returns their time and how many rows then differ from
/// myrecode's result in `done` (0: both did the same work).
async fn server_update(
    cfg: &ConnectionConfig,
    admin: &ConnectionConfig,
    rows: i64,
    (done, twin): (&str, &str),
) -> Result<(Duration, i64)> {
    seed(cfg, rows).await?;
    let mut c = cfg.connect_one().await?;
    let started = Instant::now();
    for (set, ids) in server_groups(rows) {
        for chunk in ids.chunks(SERVER_CHUNK) {
            let list: Vec<String> = chunk.iter().map(|i| i.to_string()).collect();
            c.execute(format!("UPDATE posts SET {set} WHERE id IN ({})", list.join(",")).as_str())
                .await?;
        }
    }
    let took = started.elapsed();
    let mut c = admin.connect_one().await?;
    let differ: i64 = sqlx::query(&format!(
        "SELECT COUNT(*) FROM `{twin}`.posts AS y JOIN `{done}`.posts AS x USING (id) \
         WHERE NOT (x.body <=> y.body AND CAST(x.title AS BINARY) <=> CAST(y.title AS BINARY))"
    ))
    .fetch_one(&mut c)
    .await?
    .get(0);
    Ok((took, differ))
}

/// The first 40 characters, so titles stay well inside VARCHAR(200).
fn short(text: &str) -> String {
    text.chars().take(40).collect()
}

/// A PNG-like blob: signature, then a deterministic pseudo-random pattern.
fn binary(id: i64) -> Vec<u8> {
    let mut v = vec![
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R',
    ];
    let mut x: u32 = 0x9E37_79B9 ^ (id as u32);
    for _ in 0..120 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 24) as u8);
    }
    v
}

/// Creates and fills `posts` with `rows` rows, over two connections (one per core).
async fn seed(cfg: &ConnectionConfig, rows: i64) -> Result<Duration> {
    let started = Instant::now();
    let mut c = cfg.connect_one().await?;
    c.execute(
        "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, body BLOB, \
         title VARCHAR(200) CHARACTER SET utf8mb4, KEY (title(50))) ENGINE=InnoDB",
    )
    .await?;
    drop(c);
    let workers = 2;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let cfg = cfg.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = cfg.connect_one().await?;
            c.execute("SET SESSION unique_checks = 0, foreign_key_checks = 0")
                .await?;
            let mut start = w * INSERT_ROWS;
            while start < rows {
                let end = (start + INSERT_ROWS).min(rows);
                let sql = format!(
                    "INSERT INTO posts (id, body, title) VALUES {}",
                    vec!["(?, ?, ?)"; (end - start) as usize].join(", ")
                );
                execute_retrying(&mut c, || {
                    let mut q = sqlx::query(&sql);
                    for id in start..end {
                        let (body, title) = seeded(id);
                        q = q.bind(id).bind(body).bind(title);
                    }
                    q
                })
                .await?;
                start += workers * INSERT_ROWS;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let mut c = cfg.connect_one().await?;
    c.execute("ANALYZE TABLE posts").await?;
    let n: i64 = sqlx::query("SELECT COUNT(*) FROM posts")
        .fetch_one(&mut c)
        .await?
        .get(0);
    if n != rows {
        bail!("seeded {n} rows, wanted {rows}");
    }
    Ok(started.elapsed())
}

/// Seeds one database of `rows` rows, then scans and runs it, printing the figures as it goes.
fn bench_size(
    server: &ThrowawayServer,
    rt: &tokio::runtime::Runtime,
    opts: &Options,
    dir: &Path,
    rows: i64,
) -> Result<SizeResult> {
    let db: TestDatabase = server.fresh_database(&format!("bench_{rows}"))?;
    println!("== {rows} rows (database {}) ==", db.name);
    let seed_time = rt.block_on(seed(&db.config, rows))?;
    println!(
        "seed:  {:>8.1}s  ({:.0} rows/s, 2 connections, {INSERT_ROWS}-row INSERTs)",
        seed_time.as_secs_f64(),
        rows as f64 / seed_time.as_secs_f64()
    );
    let url = db.config.url_with_secret();

    let report = dir.join(format!("scan_{rows}.json"));
    let scan_log = dir.join(format!("scan_{rows}.log"));
    let report_s = report.to_str().context("temp path is not UTF-8")?;
    let scan = measure(
        myrecode_command(
            &opts.bin,
            &["scan", "--full", "--pause-ms", "0", "--json", report_s],
            &url,
        ),
        &scan_log,
    )?;
    if !matches!(scan.code, 0 | 1) || !report.is_file() {
        bail!(
            "scan exited {} without a report:\n{}",
            scan.code,
            tail(&scan_log, 20)
        );
    }
    println!(
        "scan:  {:>8.1}s  {:>9.0} rows/s  peak RSS {:>7} KiB  CPU {:.1}s  (exit {})",
        scan.wall.as_secs_f64(),
        rows as f64 / scan.wall.as_secs_f64(),
        scan.max_rss_kib,
        scan.cpu.as_secs_f64(),
        scan.code
    );

    let job = dir.join(format!("job_{rows}.yaml"));
    std::fs::write(
        &job,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  batch_size: 2000\n  target_batch_time: 500ms\n  \
             pause_between_batches: 0ms\ntables:\n  - name: posts\n    strategy: in-place\n    \
             columns:\n      - name: body\n        source: auto\n        target: BLOB\n      \
             - name: title\n        source: auto\n        target: VARCHAR(200) CHARACTER SET utf8mb4\n",
            db.name
        ),
    )?;
    let run_log = dir.join(format!("run_{rows}.log"));
    let job_s = job.to_str().context("temp path is not UTF-8")?;
    let run = measure(
        myrecode_command(&opts.bin, &["run", job_s, "--execute"], &url),
        &run_log,
    )?;
    if !matches!(run.code, 0 | 1) {
        bail!("run exited {}:\n{}", run.code, tail(&run_log, 30));
    }
    let backups: i64 = rt.block_on(async {
        let mut c = db.config.connect_one().await?;
        let n: i64 = sqlx::query("SELECT COUNT(*) FROM _myrecode_backup")
            .fetch_one(&mut c)
            .await?
            .get(0);
        anyhow::Ok(n)
    })?;
    if backups == 0 {
        bail!(
            "run exited {} but _myrecode_backup is empty:\n{}",
            run.code,
            tail(&run_log, 30)
        );
    }
    println!(
        "run:   {:>8.1}s  {:>9.0} rows/s  peak RSS {:>7} KiB  CPU {:.1}s  (exit {}, {backups} backup rows)",
        run.wall.as_secs_f64(),
        rows as f64 / run.wall.as_secs_f64(),
        run.max_rss_kib,
        run.cpu.as_secs_f64(),
        run.code
    );
    println!(
        "run summary (last lines of its output):\n{}",
        tail(&run_log, 6)
    );
    let twin: TestDatabase = server.fresh_database(&format!("bench_{rows}_server"))?;
    let (server_time, differ) = rt.block_on(server_update(
        &twin.config,
        server.admin(),
        rows,
        (&db.name, &twin.name),
    ))?;
    println!(
        "server: {:>8.1}s  {:>9.0} rows/s  (its own chunked UPDATE … CONVERT of the same values, \
         {SERVER_CHUNK} ids per statement; {differ} rows differ from myrecode's result)",
        server_time.as_secs_f64(),
        rows as f64 / server_time.as_secs_f64()
    );
    println!(
        "ratio:  myrecode in place ÷ server's own UPDATE = {:.2} (target ≥ 0.5)\n",
        server_time.as_secs_f64() / run.wall.as_secs_f64()
    );
    Ok(SizeResult {
        rows,
        seed: seed_time,
        scan,
        run,
        backups,
        server: server_time,
    })
}

/// Starts the server, benches `--rows` (and `--also`) and prints the figures.
fn main() -> Result<()> {
    let opts = parse_args()?;
    let server = ThrowawayServer::start()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let version: String = rt.block_on(async {
        let mut c = server.admin().connect_one().await?;
        let v: String = sqlx::query("SELECT VERSION()")
            .fetch_one(&mut c)
            .await?
            .get(0);
        anyhow::Ok(v)
    })?;
    println!(
        "date:    {}",
        command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
    );
    println!(
        "machine: {} CPUs (nproc), {}",
        command_line("nproc", &[]),
        command_line("uname", &["-srm"])
    );
    println!("server:  {version} ({})", server.description());
    println!("binary:  {}\n", opts.bin.display());

    let dir = tempfile::tempdir()?;
    let big = bench_size(&server, &rt, &opts, dir.path(), opts.rows)?;
    let Some(m) = opts.also else {
        return Ok(());
    };
    let small = bench_size(&server, &rt, &opts, dir.path(), m)?;
    let mut rows = [big, small];
    rows.sort_by_key(|r| std::cmp::Reverse(r.rows));
    let [big, small] = rows;

    println!(
        "| rows | seed s | scan rows/s | scan peak RSS | run rows/s | run peak RSS | backup rows | server UPDATE rows/s | ratio |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in [&small, &big] {
        println!(
            "| {} | {:.1} | {:.0} | {:.1} MiB | {:.0} | {:.1} MiB | {} | {:.0} | {:.2} |",
            r.rows,
            r.seed.as_secs_f64(),
            r.scan_rate(),
            r.scan.max_rss_kib as f64 / 1024.0,
            r.run_rate(),
            r.run.max_rss_kib as f64 / 1024.0,
            r.backups,
            r.server_rate(),
            r.run_rate() / r.server_rate()
        );
    }
    println!(
        "\nRSS ratio {}/{} rows: scan {:.2}x, run {:.2}x (table {:.0}x bigger)",
        big.rows,
        small.rows,
        big.scan.max_rss_kib as f64 / small.scan.max_rss_kib as f64,
        big.run.max_rss_kib as f64 / small.run.max_rss_kib as f64,
        big.rows as f64 / small.rows as f64
    );
    Ok(())
}

//! Bench: myrecode's online copy (`strategy: copy`) against `pt-online-schema-change --alter
//! "CONVERT TO CHARACTER SET utf8mb4"` on identical latin1 tables holding cp1251/KOI8-R text,
//! on the same server in the same invocation, quiet and under the same application load.
//!
//! ```text
//! cargo build --release --bin myrecode
//! cargo run --release --example bench_copy -- [--rows N] [--runs N] [--loads quiet,writer]
//!     [--lock-modes 1,2] [--url URL] [--bin PATH] [--pt-osc PATH] [--writer-ms MS]
//!     [--batch-size N] [--pt-osc-first] [--indexes N]
//! ```
//!
//! Per lock mode (a throwaway server each) and per load, `--runs` pairs of runs, the two
//! tools one after the other in alternating order on fresh copies of one seeded table; the
//! summary gives the median of each figure: rows/s, the ratio of each pair, the server's
//! and the tool's CPU per 100k rows, the writer's p50/p99/max and failures.
//!
//! Two databases get the same table
//! `posts (id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY, author VARCHAR(64) latin1, body TEXT latin1,
//! created DATETIME, KEY k_author (author))`, seeded with what a latin1-connection application
//! wrote: 80% cp1251 bytes, 10% KOI8-R bytes, 10% ASCII. One is recoded by
//! `myrecode run JOB --execute` (copy into utf8mb4 with `cutover: auto`), the other converted by
//! pt-osc (which does not recode: the cp1251 bytes become their latin1 reading, mojibake).
//! Under the writer load, an application updates, inserts or deletes a row every `--writer-ms`
//! in open loop over 8 connections: each statement is issued at its due instant on the first
//! free connection, whether or not the ones before have returned (never two at once on one
//! row), and its latency counts from that instant, so both tools carry the same statements and a tool that
//! blocks the application shows it in latency, never in fewer statements (cp1251 bytes until
//! the column turns utf8mb4 and refuses them, UTF-8 text after); a sampler reads `information_schema.PROCESSLIST` every
//! 200 ms to show where the tool's connections spend their time. Afterwards every row of both
//! tables is checked: recoded text, mojibake, ASCII, or something else.

mod app;
#[path = "../common/mod.rs"]
mod common;
mod observe;
mod tool;

use anyhow::{anyhow, bail, Context, Result};
use app::{more_indexes_sql, seed, seeded, CREATE_POSTS};
use common::{check_bin, command_line, default_bin, myrecode_command, parse_count};
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::quote;
use myrecode::db::throwaway::ThrowawayServer;
use sqlx::Executor;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use tool::{job_yaml, ms, pt_osc_dsn, run_tool, BenchDb, On, ToolRun, PT_OSC_FLAGS};

/// Command-line options of the bench.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) rows: i64,
    url: Option<String>,
    bin: PathBuf,
    pt_osc: PathBuf,
    /// The writer's period under [`Load::Writer`].
    pub(crate) writer_every: Duration,
    batch_size: i64,
    pt_osc_first: bool,
    lock_modes: Vec<u8>,
    /// Pairs of runs per lock mode and load; the summary takes their medians.
    runs: usize,
    loads: Vec<Load>,
    /// Plain secondary indexes added to the table beside `k_author` (`--indexes`).
    indexes: usize,
}

/// The application's load during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Load {
    /// Nobody writes: the tools' own pace.
    Quiet,
    /// The writer at its fixed rate (`--writer-ms`), open loop.
    Writer,
}

impl Load {
    /// Its name on the command line and in the tables.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Load::Quiet => "quiet",
            Load::Writer => "writer",
        }
    }
}

/// The help text.
fn usage() -> &'static str {
    "usage: bench_copy [--rows N] [--runs N] [--loads quiet,writer] [--lock-modes 1,2] [--url URL] [--bin PATH] [--pt-osc PATH] [--writer-ms MS] [--batch-size N] [--pt-osc-first] [--indexes N]\n  \
     --rows N        rows of each table (default 1000000)\n  \
     --runs N        pairs of runs per lock mode and load; the summary gives medians (default 3)\n  \
     --loads L       quiet (nobody writes) and/or writer (the fixed-rate writer) (default quiet,writer)\n  \
     --url URL       use this server (mysql://user[:password]@host:port/; MYSQL_PWD works too) instead of a throwaway one;\n                  \
     databases bench_copy_*_PID are created on it and dropped at the end\n  \
     --bin PATH      the myrecode binary (default: target/release/myrecode next to this example)\n  \
     --pt-osc PATH   pt-online-schema-change (default: found on the PATH)\n  \
     --writer-ms MS  the writer's period, open loop (default 5: 200 statements a second)\n  \
     --batch-size N  myrecode's starting batch_size (default 2000; it tunes towards target_batch_time 500ms)\n  \
     --pt-osc-first  run pt-osc first in the first pair (default: myrecode; the order alternates)\n  \
     --indexes N     give the table N more plain secondary indexes beside k_author (0 to 6; default 0)\n  \
     --lock-modes L  innodb_autoinc_lock_mode of each throwaway server, in turn (default 1,2;\n                  \
     with --url, the server's own mode is measured once)"
}

/// Reads the command line.
fn parse_args() -> Result<Options> {
    let mut o = Options {
        rows: 1_000_000,
        url: None,
        bin: PathBuf::new(),
        pt_osc: PathBuf::from("pt-online-schema-change"),
        writer_every: Duration::from_millis(5),
        batch_size: 2000,
        pt_osc_first: false,
        lock_modes: vec![1, 2],
        runs: 3,
        loads: vec![Load::Quiet, Load::Writer],
        indexes: 0,
    };
    let mut bin = None;
    let mut args = std::env::args().skip(1);
    let path = |flag: &str, v: Option<String>| {
        v.map(PathBuf::from)
            .ok_or_else(|| anyhow!("{flag} needs a path\n{}", usage()))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => o.rows = parse_count("--rows", args.next(), usage())?,
            "--url" => {
                o.url = Some(
                    args.next()
                        .ok_or_else(|| anyhow!("--url needs a value\n{}", usage()))?,
                )
            }
            "--bin" => bin = Some(path("--bin", args.next())?),
            "--pt-osc" => o.pt_osc = path("--pt-osc", args.next())?,
            "--writer-ms" => {
                o.writer_every =
                    Duration::from_millis(parse_count("--writer-ms", args.next(), usage())? as u64)
            }
            "--batch-size" => o.batch_size = parse_count("--batch-size", args.next(), usage())?,
            "--pt-osc-first" => o.pt_osc_first = true,
            "--indexes" => o.indexes = parse_count("--indexes", args.next(), usage())? as usize,
            "--runs" => o.runs = parse_count("--runs", args.next(), usage())?.max(1) as usize,
            "--loads" => {
                let v = args.next().unwrap_or_default();
                o.loads = v
                    .split(',')
                    .map(|l| match l.trim() {
                        "quiet" => Ok(Load::Quiet),
                        "writer" => Ok(Load::Writer),
                        _ => Err(anyhow!(
                            "--loads takes quiet and writer, comma-separated\n{}",
                            usage()
                        )),
                    })
                    .collect::<Result<_>>()?;
            }
            "--lock-modes" => {
                let v = args.next().unwrap_or_default();
                o.lock_modes = v
                    .split(',')
                    .map(|m| match m.trim() {
                        "0" => Ok(0),
                        "1" => Ok(1),
                        "2" => Ok(2),
                        _ => Err(anyhow!(
                            "--lock-modes takes 0, 1 or 2, comma-separated\n{}",
                            usage()
                        )),
                    })
                    .collect::<Result<_>>()?;
            }
            "-h" | "--help" => {
                println!("{}", usage());
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{}", usage()),
        }
    }
    o.bin = match bin {
        Some(b) => b,
        None => default_bin()?,
    };
    check_bin(&o.bin)?;
    Ok(o)
}

/// `CREATE DATABASE` of one of the bench's databases, latin1 as the legacy application's.
fn create_database_sql(name: &str) -> String {
    format!(
        "CREATE DATABASE {} CHARACTER SET latin1",
        quote::ident(name)
    )
}

/// `DROP DATABASE IF EXISTS` of one of the bench's databases.
fn drop_database_sql(name: &str) -> String {
    format!("DROP DATABASE IF EXISTS {}", quote::ident(name))
}

/// Runs one statement on a fresh connection.
async fn exec(cfg: &ConnectionConfig, sql: &str) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    c.execute(sql).await.with_context(|| sql.to_string())?;
    Ok(())
}

/// Both tools' runs on fresh copies of the seeded table, one after the other.
struct Pair {
    myrecode: ToolRun,
    pt_osc: ToolRun,
}

/// The pairs of runs of one lock mode under one load.
struct Series {
    lock_mode: i64,
    load: Load,
    pairs: Vec<Pair>,
}

/// The median of `v` (the mean of the middle two when even; 0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Starts or borrows the server per lock mode, runs every series and prints their medians.
fn main() -> Result<()> {
    let opts = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!(
        "date:    {}",
        command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
    );
    println!(
        "machine: {} CPUs (nproc), {}; uptime: {}",
        command_line("nproc", &[]),
        command_line("uname", &["-srm"]),
        command_line("uptime", &[])
    );
    println!("myrecode: {}", opts.bin.display());
    println!(
        "pt-osc:  {}\n",
        command_line(
            opts.pt_osc.to_str().unwrap_or("pt-online-schema-change"),
            &["--version"]
        )
    );
    let modes: Vec<Option<u8>> = match &opts.url {
        Some(_) => vec![None],
        None => opts.lock_modes.iter().map(|m| Some(*m)).collect(),
    };
    let mut all = Vec::new();
    for mode in modes {
        all.extend(bench_mode(&rt, &opts, mode)?);
    }
    print_summary(&opts, &all);
    let failed: Vec<String> = all
        .iter()
        .flat_map(|s| {
            s.pairs.iter().flat_map(move |p| {
                [&p.myrecode, &p.pt_osc]
                    .into_iter()
                    .filter(|t| t.failed)
                    .map(move |t| {
                        format!("{} (lock mode {}, {})", t.tool, s.lock_mode, s.load.name())
                    })
            })
        })
        .collect();
    if !failed.is_empty() {
        bail!("{} failed (see above)", failed.join(" and "));
    }
    Ok(())
}

/// The medians of every series, one row each.
fn print_summary(opts: &Options, all: &[Series]) {
    let values = 2.0 * opts.rows as f64; // author and body of every row
    println!(
        "\n## Medians of {} pair(s) of runs ({} rows, {} values decided per run)\n",
        opts.runs, opts.rows, values
    );
    println!("| lock mode | load | myrecode rows/s | pt-osc rows/s | ratio | server CPU s per 100k rows myrecode / pt-osc (ratio) | tool CPU s per 100k rows myrecode / pt-osc | myrecode CPU s per million values | writer statements myrecode / pt-osc | writer p50 / p99 / max myrecode | writer p50 / p99 / max pt-osc | writer failures | peak RSS myrecode |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in all {
        let med = |f: &dyn Fn(&Pair) -> f64| median(s.pairs.iter().map(f).collect());
        let rate = |t: &ToolRun| opts.rows as f64 / t.cost.wall.as_secs_f64();
        let per_100k = |d: Duration| d.as_secs_f64() * 100_000.0 / opts.rows as f64;
        let server = |t: &ToolRun| t.server_cpu.map_or(f64::NAN, per_100k);
        let lat = |t: &ToolRun, q: f64| ms(t.writer.quantile(q));
        let quiet = s.load == Load::Quiet;
        // A writer's figure, with `decimals`; none in a quiet series.
        let writer = |decimals: usize, f: &dyn Fn(&Pair) -> f64| {
            if quiet {
                "—".to_string()
            } else {
                format!("{:.*}", decimals, med(f))
            }
        };
        println!(
            "| {} | {} | {:.0} | {:.0} | **{:.2}** | {:.2} / {:.2} ({:.2}) | {:.2} / {:.2} | {:.2} | {} / {} | {} / {} / {} ms | {} / {} / {} ms | {} | {:.1} MiB |",
            s.lock_mode,
            s.load.name(),
            med(&|p| rate(&p.myrecode)),
            med(&|p| rate(&p.pt_osc)),
            med(&|p| rate(&p.myrecode) / rate(&p.pt_osc)),
            med(&|p| server(&p.myrecode)),
            med(&|p| server(&p.pt_osc)),
            med(&|p| server(&p.myrecode) / server(&p.pt_osc)),
            med(&|p| per_100k(p.myrecode.cost.cpu)),
            med(&|p| per_100k(p.pt_osc.cost.cpu)),
            med(&|p| p.myrecode.cost.cpu.as_secs_f64() * 1e6 / values),
            writer(0, &|p| p.myrecode.writer.latencies.len() as f64),
            writer(0, &|p| p.pt_osc.writer.latencies.len() as f64),
            writer(1, &|p| lat(&p.myrecode, 0.5)),
            writer(1, &|p| lat(&p.myrecode, 0.99)),
            writer(1, &|p| lat(&p.myrecode, 1.0)),
            writer(1, &|p| lat(&p.pt_osc, 0.5)),
            writer(1, &|p| lat(&p.pt_osc, 0.99)),
            writer(1, &|p| lat(&p.pt_osc, 1.0)),
            s.pairs
                .iter()
                .map(|p| format!("{}/{}", p.myrecode.writer.failed, p.pt_osc.writer.failed))
                .collect::<Vec<_>>()
                .join(", "),
            s.pairs
                .iter()
                .map(|p| p.myrecode.cost.max_rss_kib as f64 / 1024.0)
                .fold(0.0, f64::max),
        );
    }
    println!(
        "\nratio: myrecode rows/s ÷ pt-osc rows/s per pair (target ≥ 1.0); server CPU ratio target ≤ 1.2; \
         myrecode CPU per million values target ≤ 2 s; writer p99 under myrecode target ≤ 50 ms (issue 45)"
    );
}

/// Seeds a server (a throwaway one started with `innodb_autoinc_lock_mode=mode`, or the
/// `--url` one) once, and runs every load's pairs on fresh copies of that table.
fn bench_mode(
    rt: &tokio::runtime::Runtime,
    opts: &Options,
    mode: Option<u8>,
) -> Result<Vec<Series>> {
    let (server, admin) = match (&opts.url, mode) {
        (Some(url), _) => {
            let cfg = ConnectionConfig::from_url(url)?
                .or_env_password()
                .with_database(None);
            (None, cfg)
        }
        (None, mode) => {
            let extra: Vec<String> = mode
                .map(|m| format!("--innodb-autoinc-lock-mode={m}"))
                .into_iter()
                .collect();
            let s = ThrowawayServer::start_local_with(&extra)?;
            let admin = s.admin().clone();
            (Some(s), admin)
        }
    };
    let secret = admin.password().map(str::to_string);
    let (version, lock_mode): (String, i64) = rt.block_on(async {
        let mut c = admin.connect_one().await?;
        let v: (String, i64) = sqlx::query_as("SELECT VERSION(), @@innodb_autoinc_lock_mode")
            .fetch_one(&mut c)
            .await?;
        anyhow::Ok(v)
    })?;
    let where_ = match &server {
        Some(s) => s.description().to_string(),
        None => admin.to_string(),
    };
    println!("== innodb_autoinc_lock_mode={lock_mode} ==\nserver:  {version} ({where_})\n");
    let server_pid = rt.block_on(observe::server_pid(&admin));
    let pid = std::process::id();
    let db = |t: &str| {
        let name = format!("bench_copy_{t}_{pid}");
        BenchDb {
            config: admin.with_database(Some(&name)),
            name,
            server_pid,
        }
    };
    let pristine = db("seed");
    let t0 = Instant::now();
    rt.block_on(async {
        exec(&admin, &create_database_sql(&pristine.name)).await?;
        seed(&pristine.config, opts.rows).await
    })?;
    println!(
        "seed: {} rows in {} in {:.1} s\n",
        opts.rows,
        pristine.name,
        t0.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir()?;
    let mut out = Vec::new();
    for &load in &opts.loads {
        let mut pairs = Vec::new();
        for run in 0..opts.runs {
            println!(
                "### lock mode {lock_mode}, {}, pair {} of {}\n",
                load.name(),
                run + 1,
                opts.runs
            );
            let (a, b) = (db("myrecode"), db("ptosc"));
            rt.block_on(async {
                for d in [&a, &b] {
                    // A byte-for-byte copy of the seeded rows, made by the server.
                    exec(&admin, &drop_database_sql(&d.name)).await?;
                    exec(&admin, &create_database_sql(&d.name)).await?;
                    exec(&d.config, CREATE_POSTS).await?;
                    exec(
                        &d.config,
                        &format!(
                            "INSERT INTO posts SELECT * FROM {}.posts ORDER BY id",
                            quote::ident(&pristine.name)
                        ),
                    )
                    .await?;
                    if let Some(sql) = more_indexes_sql(opts.indexes) {
                        exec(&d.config, &sql).await?;
                    }
                    exec(&d.config, "ANALYZE TABLE posts").await?;
                }
                anyhow::Ok(())
            })?;
            let job = dir.path().join("copy.yaml");
            std::fs::write(&job, job_yaml(&a.name, opts.batch_size))?;
            let job_s = job.to_str().context("temp path is not UTF-8")?.to_string();
            let on = On {
                rt,
                opts,
                load,
                secret: secret.as_deref(),
            };
            let run_myrecode = || {
                let url = a.config.url_with_secret();
                let cmd = myrecode_command(&opts.bin, &["run", &job_s, "--execute"], &url);
                run_tool(&on, "myrecode", &a, cmd, &dir.path().join("myrecode.log"))
            };
            let run_pt_osc = || -> Result<ToolRun> {
                let mut cmd = Command::new(&opts.pt_osc);
                cmd.args(PT_OSC_FLAGS).arg(pt_osc_dsn(&b, dir.path())?);
                run_tool(&on, "pt-osc", &b, cmd, &dir.path().join("pt-osc.log"))
            };
            // The order alternates pair by pair: a drift of the machine weighs on both alike.
            let (m, p) = if opts.pt_osc_first ^ (run % 2 == 1) {
                let p = run_pt_osc()?;
                (run_myrecode()?, p)
            } else {
                let m = run_myrecode()?;
                (m, run_pt_osc()?)
            };
            for r in [&m, &p] {
                if let Some((id, body)) = &r.check.sample {
                    let want: String = seeded(*id).body.chars().take(40).collect();
                    println!(
                        "{:>8}: row {id} body {body:?}… (the application wrote {want:?}…)",
                        r.tool
                    );
                }
            }
            println!();
            rt.block_on(async {
                for d in [&a, &b] {
                    exec(&admin, &drop_database_sql(&d.name)).await?;
                }
                anyhow::Ok(())
            })?;
            pairs.push(Pair {
                myrecode: m,
                pt_osc: p,
            });
        }
        out.push(Series {
            lock_mode,
            load,
            pairs,
        });
    }
    if server.is_none() {
        rt.block_on(exec(&admin, &drop_database_sql(&pristine.name)))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_is_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(Vec::new()), 0.0);
    }
}

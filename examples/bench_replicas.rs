//! Bench: the online copy on a chain primary -> R1 -> R2, R2 slower than its primary, an
//! application writing throughout: each replica's lag (max, p99, share of samples over the
//! limit) beside the copy's rows/s, without the lag limit and under each limit asked for,
//! medians of alternating runs.
//!
//! ```text
//! cargo build --release --bin myrecode --example bench_replicas
//! target/release/examples/bench_replicas [--rows N] [--bin PATH] [--limits MS,MS] [--runs N]
//! ```
//!
//! A throwaway primary, R1 replicating from it with `log_slave_updates`, R2 replicating from
//! R1 (`myrecode::testkit::replicaset`, ROW binary log, GTID; the job finds R2 below R1 by
//! itself). R2 is set up the way a smaller replica host is: one applier thread
//! (`slave_parallel_threads = 0`), a buffer pool of 16 MiB against the primary's 256 MiB,
//! so the table's secondary index (`k_author`, random order) is read and written through
//! the disk there; R1 and the primary keep the throwaway server's defaults. No trigger or
//! sleep on any server. (`innodb_flush_log_at_trx_commit = 1` was tried too: on this
//! machine's disk R2 then could not keep up with the application's own commits, a lag of
//! minutes before the job began, which no job can bound.)
//!
//! Each run gets a fresh server-made copy of one seeded table `posts (id INT PRIMARY KEY,
//! author VARCHAR(64) latin1, body TEXT latin1, KEY k_author (author))` holding cp1251
//! bytes, recoded by `myrecode run JOB --execute` (copy, `cutover: auto`, both columns to
//! utf8mb4) with `max_replica_lag` the mode's limit (`1h`: no limit in effect). Meanwhile a
//! writer updates a random row every 5 ms (a fifth of its statements insert a row), ASCII
//! text, so it runs on before and after the cut-over alike.
//!
//! The lag is the bench's own, not the job's: it writes its own clock into a heartbeat row
//! on the primary every 10 ms (`bench_beat`, as pt-heartbeat does) and reads it on each
//! replica every 10 ms; a replica's lag is the bench's clock minus the beat it has applied,
//! so it shows up to 10 ms late plus the reading's time. Sampling runs from the child's start
//! until every replica has applied the whole run.

mod common;

use anyhow::{bail, Context, Result};
use common::{
    check_bin, command_line, default_bin, encode, measure, myrecode_command, parse_count, RUSSIAN,
};
use myrecode::codec::Encoding;
use myrecode::db::connect::ConnectionConfig;
use myrecode::engine::replicas::watch::now_us;
use myrecode::testkit::replicaset::{BinlogFormat, ThrowawayReplicaSet};
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: bench_replicas [--rows N] [--bin PATH] [--limits MS,MS] [--runs N] [--writer-ms MS]";

/// The seeded table every run copies.
const TEMPLATE: &str = "bench_rep_seed";

/// How long the lag is sampled with the writer alone before each job starts.
const IDLE: Duration = Duration::from_secs(3);

/// What R2 is set to, by `SET GLOBAL`, with its SQL thread stopped.
const SLOW_REPLICA: &[&str] = &[
    "SET GLOBAL slave_parallel_threads = 0",
    "SET GLOBAL innodb_buffer_pool_size = 16777216",
];

async fn seed(cfg: &ConnectionConfig, rows: i64) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    c.execute(format!("CREATE DATABASE {TEMPLATE}").as_str())
        .await?;
    c.execute(
        format!(
            "CREATE TABLE {TEMPLATE}.posts (id INT NOT NULL PRIMARY KEY, \
             author VARCHAR(64) CHARACTER SET latin1, body TEXT CHARACTER SET latin1, \
             KEY k_author (author)) ENGINE=InnoDB"
        )
        .as_str(),
    )
    .await?;
    c.execute(
        format!(
            "CREATE TABLE {TEMPLATE}.bench_beat (id INT PRIMARY KEY, us BIGINT NOT NULL) ENGINE=InnoDB"
        )
        .as_str(),
    )
    .await?;
    let mut id = 0i64;
    while id < rows {
        let n = (rows - id).min(1000);
        let mut q = format!("INSERT INTO {TEMPLATE}.posts (id, author, body) VALUES ");
        for i in 0..n {
            let k = (id + i) as usize;
            let t = RUSSIAN[k % RUSSIAN.len()];
            // Scattered through the index: the author's first word, then a number.
            let who = format!(
                "{} {}",
                RUSSIAN[(k * 7 + 3) % RUSSIAN.len()]
                    .split(' ')
                    .next()
                    .unwrap_or("x"),
                (k as u64).wrapping_mul(2_654_435_761) % 100_000
            );
            q.push_str(&format!(
                "{}({}, X'{}', X'{}')",
                if i > 0 { ", " } else { "" },
                id + i + 1,
                hex::encode(encode(Encoding::Windows1251, &who)),
                hex::encode(encode(Encoding::Windows1251, t)),
            ));
        }
        c.execute(q.as_str()).await?;
        id += n;
    }
    Ok(())
}

/// A fresh database holding a server-made copy of the seeded table.
async fn copy_of_seed(cfg: &ConnectionConfig, db: &str) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    for s in [
        format!("CREATE TABLE `{db}`.posts LIKE {TEMPLATE}.posts"),
        format!("INSERT INTO `{db}`.posts SELECT * FROM {TEMPLATE}.posts"),
        format!("CREATE TABLE `{db}`.bench_beat LIKE {TEMPLATE}.bench_beat"),
        format!("INSERT INTO `{db}`.bench_beat VALUES (1, 0)"),
    ] {
        c.execute(s.as_str()).await?;
    }
    Ok(())
}

/// The application: a statement every `every` until `stop`; returns (statements, failures).
async fn writer(
    cfg: ConnectionConfig,
    rows: i64,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> Result<(u64, u64)> {
    let mut c = cfg.connect_one().await?;
    let (mut n, mut failed) = (0u64, 0u64);
    let mut next_id = rows + 1;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while !stop.load(Ordering::SeqCst) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = if x.is_multiple_of(5) {
            next_id += 1;
            sqlx::query("INSERT INTO posts (id, author, body) VALUES (?, 'writer', ?)")
                .bind(next_id)
                .bind(format!("inserted at {}", now_us()))
                .execute(&mut c)
                .await
        } else {
            sqlx::query("UPDATE posts SET body = ? WHERE id = ?")
                .bind(format!("edited at {}", now_us()))
                .bind((x % rows as u64) as i64 + 1)
                .execute(&mut c)
                .await
        };
        n += 1;
        if r.is_err() {
            failed += 1;
        }
        tokio::time::sleep(every).await;
    }
    Ok((n, failed))
}

/// The bench's heartbeat: its clock into `bench_beat` every 10 ms until `stop`.
async fn beating(cfg: ConnectionConfig, stop: Arc<AtomicBool>, last: Arc<AtomicU64>) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    while !stop.load(Ordering::SeqCst) {
        let at = now_us();
        sqlx::query("UPDATE bench_beat SET us = ? WHERE id = 1")
            .bind(at)
            .execute(&mut c)
            .await?;
        last.store(at as u64, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// A replica's lag now: the bench's clock minus the beat it has applied.
async fn lag_of(r: &mut MySqlConnection) -> Option<Duration> {
    let b: i64 = sqlx::query_scalar("SELECT us FROM bench_beat WHERE id = 1")
        .fetch_one(&mut *r)
        .await
        .ok()?;
    // Not one beat applied yet (the bench began beating with the run).
    if b == 0 {
        return None;
    }
    Some(Duration::from_micros((now_us() - b).max(0) as u64))
}

/// One run's figures.
struct Figures {
    wall: Duration,
    /// Per replica, every lag sample before the job began (the application's writes alone).
    idle: Vec<Vec<Duration>>,
    /// Per replica, every lag sample from the job's start until every replica caught up.
    lags: Vec<Vec<Duration>>,
    catch_up: Duration,
    writes: (u64, u64),
    /// The child's CPU time and peak RSS (MiB).
    cpu: Duration,
    rss_mib: f64,
}

/// One run: a fresh copy of the seed, the writer, the heartbeat, the sampler, the job.
fn run_one(
    rt: &tokio::runtime::Runtime,
    set: &ThrowawayReplicaSet,
    bin: &std::path::Path,
    (rows, writer_ms): (i64, u64),
    lag: &str,
) -> Result<Figures> {
    let db = set.primary.fresh_database("bench_rep")?;
    rt.block_on(copy_of_seed(&db.config, &db.name))?;
    set.sync(Duration::from_secs(600))?;
    let dir = tempfile::tempdir()?;
    let job = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  cutover: auto\n  max_replica_lag: {lag}\n  \
             pause_between_batches: 0ms\ntables:\n  - name: posts\n    strategy: copy\n    columns:\n      \
             - name: author\n        source: cp1251\n        target: VARCHAR(64) CHARACTER SET utf8mb4\n      \
             - name: body\n        source: cp1251\n        target: TEXT CHARACTER SET utf8mb4\n",
            db.name
        ),
    )?;
    let replicas: Vec<ConnectionConfig> = (0..set.replicas.len())
        .map(|i| set.replica(i).with_database(Some(&db.name)))
        .collect();
    let stop_writer = Arc::new(AtomicBool::new(false));
    let stop_all = Arc::new(AtomicBool::new(false));
    let last_beat = Arc::new(AtomicU64::new(0));
    let writing = rt.spawn(writer(
        db.config.clone(),
        rows,
        Duration::from_millis(writer_ms),
        stop_writer.clone(),
    ));
    let beats = rt.spawn(beating(
        db.config.clone(),
        stop_all.clone(),
        last_beat.clone(),
    ));
    let began = Instant::now();
    let sampler = {
        let (replicas, stop) = (replicas.clone(), stop_all.clone());
        rt.spawn(async move {
            let mut rs = Vec::new();
            for r in &replicas {
                rs.push(r.connect_one().await?);
            }
            let mut lags = vec![Vec::new(); rs.len()];
            let mut times = vec![Vec::new(); rs.len()];
            while !stop.load(Ordering::SeqCst) {
                for (i, r) in rs.iter_mut().enumerate() {
                    if let Some(x) = lag_of(r).await {
                        lags[i].push(x);
                        times[i].push(began.elapsed().as_millis() as u64);
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            anyhow::Ok((lags, times))
        })
    };
    // The chain's lag on the application's writes alone, the job not started yet.
    std::thread::sleep(IDLE);
    let job_began_ms = began.elapsed().as_millis() as u64;
    let log = dir.path().join("run.log");
    // BENCH_VERBOSE=DIR: the job says what it does, its log kept in DIR.
    let verbose: &[&str] = if std::env::var_os("BENCH_VERBOSE").is_some() {
        &["--verbose"]
    } else {
        &[]
    };
    let cost = measure(
        myrecode_command(
            bin,
            &verbose
                .iter()
                .copied()
                .chain(["run", job.to_str().unwrap_or_default(), "--execute"])
                .collect::<Vec<_>>(),
            &db.config.url_with_secret(),
        ),
        &log,
    )?;
    stop_writer.store(true, Ordering::SeqCst);
    let writes = rt.block_on(writing)??;
    // Sampled on until every replica has applied the whole run (and a beat after it).
    let over = Instant::now();
    let synced = set.sync(Duration::from_secs(600));
    std::thread::sleep(Duration::from_millis(50));
    let catch_up = over.elapsed();
    stop_all.store(true, Ordering::SeqCst);
    let (lags, times) = rt.block_on(sampler)??;
    rt.block_on(beats)??;
    if cost.code != 0 {
        bail!("myrecode exited {}: {}", cost.code, common::tail(&log, 20));
    }
    if let Some(keep) = std::env::var_os("BENCH_VERBOSE") {
        let to = std::path::Path::new(&keep).join(format!("{}_{lag}.log", db.name));
        std::fs::copy(&log, to)?;
        // The job's log says when (the tool's clock, ms since the epoch); the series says
        // how long after this.
        let mut series = format!(
            "began {}\n",
            now_us() / 1000 - began.elapsed().as_millis() as i64
        );
        for (i, (l, t)) in lags.iter().zip(&times).enumerate() {
            for (x, at) in l.iter().zip(t) {
                series.push_str(&format!("R{} {at} {}\n", i + 1, x.as_millis()));
            }
        }
        std::fs::write(
            std::path::Path::new(&keep).join(format!("{}_{lag}.lags", db.name)),
            series,
        )?;
    }
    synced?;
    let (idle, lags): (Vec<_>, Vec<_>) = lags
        .into_iter()
        .zip(&times)
        .map(|(l, t)| {
            let (before, during): (Vec<_>, Vec<_>) = l
                .into_iter()
                .zip(t)
                .partition(|(_, at)| **at < job_began_ms);
            (
                before.into_iter().map(|(x, _)| x).collect::<Vec<_>>(),
                during.into_iter().map(|(x, _)| x).collect::<Vec<_>>(),
            )
        })
        .unzip();
    Ok(Figures {
        wall: cost.wall,
        idle,
        lags,
        catch_up,
        writes,
        cpu: cost.cpu,
        rss_mib: cost.max_rss_kib as f64 / 1024.0,
    })
}

fn percentile(v: &[Duration], p: f64) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    if s.is_empty() {
        return Duration::ZERO;
    }
    s[((s.len() as f64 - 1.0) * p).round() as usize]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut rows, mut bin, mut limits, mut runs, mut writer_ms) =
        (200_000i64, None, vec![200i64, 500], 3i64, 5i64);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => rows = parse_count("--rows", args.next(), USAGE)?,
            "--runs" => runs = parse_count("--runs", args.next(), USAGE)?,
            "--writer-ms" => writer_ms = parse_count("--writer-ms", args.next(), USAGE)?,
            "--limits" => {
                limits = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(|m| parse_count("--limits", Some(m.to_string()), USAGE))
                    .collect::<Result<_>>()?
            }
            "--bin" => bin = args.next().map(Into::into),
            _ => bail!("unknown argument {a}\n{USAGE}"),
        }
    }
    let bin = match bin {
        Some(b) => b,
        None => default_bin()?,
    };
    check_bin(&bin)?;
    let set = ThrowawayReplicaSet::chained(BinlogFormat::Row)
        .context("starting a primary and a chain of two replicas")?;
    let rt = tokio::runtime::Runtime::new()?;
    let slow_log = rt.block_on(async {
        let mut slow = None;
        let mut r = set.replica(1).connect_one().await?;
        r.execute("STOP SLAVE").await?;
        for s in SLOW_REPLICA {
            r.execute(*s).await?;
        }
        if std::env::var_os("BENCH_SLOWLOG").is_some() {
            for s in [
                "SET GLOBAL log_slow_slave_statements = ON",
                "SET GLOBAL long_query_time = 0.01",
                "SET GLOBAL slow_query_log_file = 'r2-slow.log'",
                "SET GLOBAL slow_query_log = ON",
            ] {
                r.execute(s).await?;
            }
            let dir: String = sqlx::query_scalar("SELECT CAST(@@datadir AS CHAR)")
                .fetch_one(&mut r)
                .await?;
            println!("R2 slow log: {dir}r2-slow.log");
            slow = Some(format!("{dir}r2-slow.log"));
        }
        r.execute("START SLAVE").await?;
        let pool: u64 = sqlx::query_scalar("SELECT @@innodb_buffer_pool_size")
            .fetch_one(&mut r)
            .await?;
        println!("R2 buffer pool {} MiB", pool >> 20);
        anyhow::Ok(slow)
    })?;
    rt.block_on(seed(&set.primary.admin().clone(), rows))?;
    set.sync(Duration::from_secs(600))?;
    let names = [
        format!("R1 127.0.0.1:{} (relay)", set.replica(0).port),
        format!("R2 127.0.0.1:{} (below R1, slower)", set.replica(1).port),
    ];
    println!(
        "rows {rows}, primary -> R1 -> R2 (ROW, GTID), copy with cutover: auto, writer every {writer_ms} ms; \
         {} CPUs, {}",
        command_line("nproc", &[]),
        set.primary.description()
    );
    println!("R2: {}", SLOW_REPLICA.join("; "));
    let modes: Vec<(String, Option<i64>)> = std::iter::once(("1h".to_string(), None))
        .chain(limits.iter().map(|l| (format!("{l}ms"), Some(*l))))
        .collect();
    // Per mode, per run: (rows/s, per replica (max, p99, share over the limit), catch-up,
    // per replica the idle lag (median, max)).
    type Run = (f64, Vec<(f64, f64, f64)>, f64, Vec<(f64, f64)>);
    let mut results: Vec<Vec<Run>> = vec![Vec::new(); modes.len()];
    for run in 0..runs {
        // Alternating order, run by run.
        let order: Vec<usize> = if run % 2 == 0 {
            (0..modes.len()).collect()
        } else {
            (0..modes.len()).rev().collect()
        };
        for m in order {
            let (lag, limit) = &modes[m];
            let load = command_line("cat", &["/proc/loadavg"]);
            let f = run_one(&rt, &set, &bin, (rows, writer_ms as u64), lag)?;
            let rate = rows as f64 / f.wall.as_secs_f64();
            let per: Vec<(f64, f64, f64)> = f
                .lags
                .iter()
                .map(|l| {
                    let max = percentile(l, 1.0).as_secs_f64() * 1000.0;
                    let p99 = percentile(l, 0.99).as_secs_f64() * 1000.0;
                    let over = limit.map_or(0.0, |lim| {
                        let lim = Duration::from_millis(lim as u64);
                        l.iter().filter(|x| **x > lim).count() as f64 / l.len().max(1) as f64
                    });
                    (max, p99, over)
                })
                .collect();
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            let idle: Vec<(f64, f64)> = f
                .idle
                .iter()
                .map(|l| (ms(percentile(l, 0.5)), ms(percentile(l, 1.0))))
                .collect();
            println!(
                "run {} max_replica_lag {lag:>6}: {rate:>8.0} rows/s, wall {:.1} s, {}, idle (writer alone) {}, catch-up {:.2} s, \
                 writer {} statements ({} failed), myrecode cpu {:.1} s rss {:.0} MiB; load before {load}",
                run + 1,
                f.wall.as_secs_f64(),
                per.iter()
                    .zip(&names)
                    .map(|((max, p99, over), n)| format!(
                        "{} max {max:.0} ms p99 {p99:.0} ms over {:.1}%",
                        n.split(' ').next().unwrap_or("?"),
                        over * 100.0
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                idle.iter()
                    .zip(&names)
                    .map(|((p50, max), n)| format!(
                        "{} p50 {p50:.0} max {max:.0} ms",
                        n.split(' ').next().unwrap_or("?")
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                f.catch_up.as_secs_f64(),
                f.writes.0,
                f.writes.1,
                f.cpu.as_secs_f64(),
                f.rss_mib
            );
            results[m].push((rate, per, f.catch_up.as_secs_f64(), idle));
        }
    }
    println!(
        "\nmedians of {runs} runs (uptime: {})",
        command_line("uptime", &[])
    );
    println!(
        "{:<10} {:>10} {:>7} | {}",
        "limit",
        "rows/s",
        "ratio",
        names
            .iter()
            .map(|n| format!("{n}: max / p99 ms, over, max / limit, idle p50 / max ms"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let free = median(results[0].iter().map(|r| r.0).collect());
    for (m, (lag, limit)) in modes.iter().enumerate() {
        let rate = median(results[m].iter().map(|r| r.0).collect());
        let cols: Vec<String> = (0..names.len())
            .map(|i| {
                let max = median(results[m].iter().map(|r| r.1[i].0).collect());
                let p99 = median(results[m].iter().map(|r| r.1[i].1).collect());
                let over = median(results[m].iter().map(|r| r.1[i].2).collect());
                let ratio = limit.map_or("-".to_string(), |l| format!("{:.2}x", max / l as f64));
                let idle50 = median(results[m].iter().map(|r| r.3[i].0).collect());
                let idle_max = median(results[m].iter().map(|r| r.3[i].1).collect());
                format!(
                    "{max:>6.0} / {p99:>5.0}, {:>5.1}%, {ratio}, {idle50:>4.0} / {idle_max:>4.0}",
                    over * 100.0
                )
            })
            .collect();
        println!(
            "{lag:<10} {rate:>10.0} {:>7.2} | {}",
            rate / free,
            cols.join(" | ")
        );
    }
    if let (Some(log), Some(keep)) = (slow_log, std::env::var_os("BENCH_VERBOSE")) {
        std::fs::copy(log, std::path::Path::new(&keep).join("r2-slow.log"))?;
    }
    Ok(())
}

//! Bench: the online copy with a replica watching, with and without the lag throttle: the
//! copy's rows/s and the replica's peak lag by the job's heartbeat.
//!
//! ```text
//! cargo build --release --bin myrecode
//! cargo run --release --example bench_replicas -- [--rows N] [--bin PATH] [--max-lag MS]
//! ```
//!
//! A throwaway primary and one replica on loopback (`myrecode::db::replicaset`, ROW binary
//! log, GTID). Each mode gets its own database with `posts (id INT PRIMARY KEY, body TEXT
//! latin1)` seeded with cp1251 bytes, recoded by `myrecode run JOB --execute` (copy,
//! `cutover: auto`): once with `max_replica_lag: 1h` (no throttle in effect), once with
//! `--max-lag` (default 200 ms). A sampler reads the heartbeat on the primary and on the
//! replica every 20 ms: the replica's lag is the difference of the two beats, both from
//! the tool's clock.

mod common;

use anyhow::{Context, Result};
use common::{
    check_bin, command_line, default_bin, encode, measure, myrecode_command, parse_count, RUSSIAN,
};
use myrecode::codec::Encoding;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::replicaset::{BinlogFormat, ThrowawayReplicaSet};
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: bench_replicas [--rows N] [--bin PATH] [--max-lag MS]";

/// The replica's lag behind the primary by the heartbeat, when both have a beat.
async fn beat_lag(p: &mut MySqlConnection, r: &mut MySqlConnection) -> Option<Duration> {
    let q = "SELECT MAX(beat_us) FROM _myrecode_heartbeat";
    let pb: Option<i64> = sqlx::query_scalar(q).fetch_one(&mut *p).await.ok()?;
    let rb: Option<i64> = sqlx::query_scalar(q).fetch_one(&mut *r).await.ok()?;
    Some(Duration::from_micros((pb? - rb?).max(0) as u64))
}

async fn seed(cfg: &ConnectionConfig, rows: i64) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    c.execute(
        "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, body TEXT CHARACTER SET latin1) ENGINE=InnoDB",
    )
    .await?;
    let mut id = 0i64;
    while id < rows {
        let n = (rows - id).min(1000);
        let mut q = String::from("INSERT INTO posts (id, body) VALUES ");
        for i in 0..n {
            let t = RUSSIAN[((id + i) as usize) % RUSSIAN.len()];
            let hex = hex::encode(encode(Encoding::Windows1251, t));
            q.push_str(&format!(
                "{}({}, X'{hex}')",
                if i > 0 { ", " } else { "" },
                id + i + 1
            ));
        }
        c.execute(q.as_str()).await?;
        id += n;
    }
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut rows, mut bin, mut max_lag) = (200_000i64, None, 200i64);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => rows = parse_count("--rows", args.next(), USAGE)?,
            "--max-lag" => max_lag = parse_count("--max-lag", args.next(), USAGE)?,
            "--bin" => bin = args.next().map(Into::into),
            _ => anyhow::bail!("unknown argument {a}\n{USAGE}"),
        }
    }
    let bin = match bin {
        Some(b) => b,
        None => default_bin()?,
    };
    check_bin(&bin)?;
    let set = ThrowawayReplicaSet::start(BinlogFormat::Row, &[None])
        .context("starting a primary and a replica")?;
    let rt = tokio::runtime::Runtime::new()?;
    println!(
        "rows {rows}, one replica (ROW, GTID), copy with cutover: auto; {} CPUs, {}",
        command_line("nproc", &[]),
        set.primary.description()
    );
    println!(
        "{:<24} {:>10} {:>12} {:>16} {:>10} {:>12}",
        "mode", "wall s", "rows/s", "peak lag ms", "cpu s", "rss MiB"
    );
    for (mode, lag) in [
        ("no throttle (1h)", "1h".to_string()),
        ("max_replica_lag", format!("{max_lag}ms")),
    ] {
        let db = set.primary.fresh_database("bench_rep")?;
        rt.block_on(seed(&db.config, rows))?;
        set.sync(Duration::from_secs(600))?;
        let dir = tempfile::tempdir()?;
        let job = dir.path().join("job.yaml");
        std::fs::write(
            &job,
            format!(
                "version: 1\nschema: {}\ndefaults:\n  cutover: auto\n  max_replica_lag: {lag}\ntables:\n  - name: posts\n    \
                 strategy: copy\n    columns:\n      - name: body\n        source: cp1251\n        \
                 target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
                db.name
            ),
        )?;
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (p, r, stop) = (
                db.config.clone(),
                set.replica(0).with_database(Some(&db.name)),
                stop.clone(),
            );
            rt.spawn(async move {
                let mut p = p.connect_one().await?;
                let mut r = r.connect_one().await?;
                let mut peak = Duration::ZERO;
                while !stop.load(Ordering::SeqCst) {
                    if let Some(l) = beat_lag(&mut p, &mut r).await {
                        peak = peak.max(l);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                anyhow::Ok(peak)
            })
        };
        let log = dir.path().join("run.log");
        let cost = measure(
            myrecode_command(
                &bin,
                &["run", job.to_str().unwrap_or_default(), "--execute"],
                &db.config.url_with_secret(),
            ),
            &log,
        )?;
        stop.store(true, Ordering::SeqCst);
        let peak = rt.block_on(sampler)??;
        if cost.code != 0 {
            anyhow::bail!(
                "{mode}: myrecode exited {}: {}",
                cost.code,
                common::tail(&log, 20)
            );
        }
        println!(
            "{mode:<24} {:>10.1} {:>12.0} {:>16} {:>10.1} {:>12.1}",
            cost.wall.as_secs_f64(),
            rows as f64 / cost.wall.as_secs_f64(),
            peak.as_millis(),
            cost.cpu.as_secs_f64(),
            cost.max_rss_kib as f64 / 1024.0
        );
    }
    Ok(())
}

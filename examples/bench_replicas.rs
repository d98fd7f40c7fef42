//! Bench: the online copy with two replicas watching, with and without the lag throttle:
//! the copy's rows/s and each replica's peak lag by the job's heartbeat, side by side.
//!
//! ```text
//! cargo build --release --bin myrecode
//! cargo run --release --example bench_replicas -- [--rows N] [--bin PATH] [--max-lag MS]
//! ```
//!
//! A throwaway primary and two replicas on loopback (`myrecode::testkit::replicaset`, ROW binary
//! log, GTID). On loopback a plain replica keeps up with one copy (the copy is one
//! `INSERT … SELECT` per batch on the primary, one row event per row on the replica), so
//! the throttle would never engage. The second replica is slower than its primary the way a
//! DBA meets it in production: it does more work per row than the primary does. It serves
//! search, keeping a word index of the posts by a trigger of its own (MariaDB runs a
//! replica's triggers for row events when `slave_run_triggers_for_rbr = YES`): each row
//! applied there also inserts one `(word, post_id)` row per word of its body, a stored
//! program's loop and some eight B-tree insertions on the one SQL thread for every row the
//! primary wrote once. The index table is made on that replica only (`sql_log_bin = 0`),
//! the trigger as soon as the job's shadow table arrives there (a few rows applied before
//! it escape the index; their count is printed).
//!
//! Each mode gets its own database with `posts (id INT PRIMARY KEY, body TEXT latin1)`
//! seeded with cp1251 bytes, recoded by `myrecode run JOB --execute` (copy, `cutover:
//! auto`): once with `max_replica_lag: 1h` (no throttle in effect), once with `--max-lag`
//! (default 200 ms). A sampler reads each replica's heartbeat every 20 ms: its lag is the
//! tool's clock minus the beat it has applied, as the job reckons it (so up to one beat
//! interval, 100 ms, even on a replica that keeps up). Sampling goes on after the run until
//! every replica has applied all of it, and that catch-up time is printed too: without the
//! throttle the lag is largest when the copy ends.

mod common;

use anyhow::{Context, Result};
use common::{
    check_bin, command_line, default_bin, encode, measure, myrecode_command, parse_count, RUSSIAN,
};
use myrecode::codec::Encoding;
use myrecode::db::connect::ConnectionConfig;
use myrecode::engine::replicas::watch::now_us;
use myrecode::testkit::replicaset::{BinlogFormat, ThrowawayReplicaSet};
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: bench_replicas [--rows N] [--bin PATH] [--max-lag MS]";

/// The replica that keeps a word index of the posts (index into the topology's replicas).
const INDEXING: usize = 1;

/// A replica's lag by the job's heartbeat, as the job reckons it: the tool's clock minus the
/// beat the replica has applied. Once the run is over (`ended`) the primary beats no more,
/// and a replica that has applied its last beat has caught up: 0.
async fn beat_lag(
    p: &mut MySqlConnection,
    r: &mut MySqlConnection,
    ended: bool,
) -> Option<Duration> {
    let q = "SELECT MAX(beat_us) FROM _myrecode_heartbeat";
    let pb: Option<i64> = sqlx::query_scalar(q).fetch_one(&mut *p).await.ok()?;
    let rb: Option<i64> = sqlx::query_scalar(q).fetch_one(&mut *r).await.ok()?;
    let (pb, rb) = (pb?, rb?);
    if ended && rb >= pb {
        return Some(Duration::ZERO);
    }
    Some(Duration::from_micros((now_us() - rb).max(0) as u64))
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

/// On the indexing replica, outside the binary log: the word index now, and its trigger on
/// the job's shadow table once replication has created it (until `stop`).
async fn word_index(cfg: ConnectionConfig, schema: String, stop: Arc<AtomicBool>) -> Result<bool> {
    let mut r = cfg.connect_one().await?;
    r.execute("SET SESSION sql_log_bin = 0").await?;
    r.execute(
        "CREATE TABLE post_words (word VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL, \
         post_id INT NOT NULL, PRIMARY KEY (word, post_id), KEY k_post (post_id)) ENGINE=InnoDB",
    )
    .await?;
    while !stop.load(Ordering::SeqCst) {
        let there: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts_myrecode_new'",
        )
        .bind(&schema)
        .fetch_optional(&mut r)
        .await?;
        if there.is_some() {
            r.execute(
                "CREATE TRIGGER posts_words_ins AFTER INSERT ON posts_myrecode_new FOR EACH ROW BEGIN \
                 DECLARE rest TEXT CHARACTER SET utf8mb4 DEFAULT COALESCE(NEW.body, ''); \
                 DECLARE w VARCHAR(400) CHARACTER SET utf8mb4; \
                 WHILE rest <> '' DO \
                   SET w = SUBSTRING_INDEX(rest, ' ', 1); \
                   IF w <> '' THEN INSERT IGNORE INTO post_words (word, post_id) VALUES (LEFT(w, 100), NEW.id); END IF; \
                   SET rest = SUBSTRING(rest, CHAR_LENGTH(w) + 2); \
                 END WHILE; END",
            )
            .await?;
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(false)
}

/// One mode's figures.
struct Figures {
    wall: Duration,
    /// Per replica, its peak lag and when (from the run's start).
    peaks: Vec<(Duration, Duration)>,
    catch_up: Duration,
    cpu: Duration,
    rss_mib: f64,
    indexed: i64,
}

fn run_mode(
    rt: &tokio::runtime::Runtime,
    set: &ThrowawayReplicaSet,
    bin: &std::path::Path,
    rows: i64,
    lag: &str,
) -> Result<Figures> {
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
    let replicas: Vec<ConnectionConfig> = (0..set.replicas.len())
        .map(|i| set.replica(i).with_database(Some(&db.name)))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicBool::new(false));
    let indexer = rt.spawn(word_index(
        replicas[INDEXING].clone(),
        db.name.clone(),
        stop.clone(),
    ));
    let sampler = {
        let (p, replicas, stop, ended) = (
            db.config.clone(),
            replicas.clone(),
            stop.clone(),
            ended.clone(),
        );
        rt.spawn(async move {
            let mut p = p.connect_one().await?;
            let mut rs = Vec::new();
            for r in &replicas {
                rs.push(r.connect_one().await?);
            }
            let began = Instant::now();
            let mut peaks = vec![(Duration::ZERO, Duration::ZERO); rs.len()];
            while !stop.load(Ordering::SeqCst) {
                for (r, peak) in rs.iter_mut().zip(peaks.iter_mut()) {
                    let over = ended.load(Ordering::SeqCst);
                    match beat_lag(&mut p, r, over).await {
                        Some(l) if l > peak.0 => *peak = (l, began.elapsed()),
                        _ => {}
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            anyhow::Ok(peaks)
        })
    };
    let log = dir.path().join("run.log");
    let cost = measure(
        myrecode_command(
            bin,
            &["run", job.to_str().unwrap_or_default(), "--execute"],
            &db.config.url_with_secret(),
        ),
        &log,
    )?;
    // Sampled on until every replica has applied the whole run: the lag a copy without the
    // throttle leaves is largest when the copy ends.
    let over = Instant::now();
    ended.store(true, Ordering::SeqCst);
    let synced = set.sync(Duration::from_secs(600));
    let catch_up = over.elapsed();
    stop.store(true, Ordering::SeqCst);
    let peaks = rt.block_on(sampler)??;
    let triggered = rt.block_on(indexer)??;
    if cost.code != 0 {
        anyhow::bail!("myrecode exited {}: {}", cost.code, common::tail(&log, 20));
    }
    synced?;
    let indexed: i64 = if triggered {
        rt.block_on(async {
            let mut r = replicas[INDEXING].connect_one().await?;
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM post_words")
                .fetch_one(&mut r)
                .await?;
            anyhow::Ok(n)
        })?
    } else {
        0
    };
    Ok(Figures {
        wall: cost.wall,
        peaks,
        catch_up,
        cpu: cost.cpu,
        rss_mib: cost.max_rss_kib as f64 / 1024.0,
        indexed,
    })
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
    let set = ThrowawayReplicaSet::start(BinlogFormat::Row, &[None, None])
        .context("starting a primary and two replicas")?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        // Replica triggers fire for row events only with this set (MariaDB); the SQL thread
        // reads it when it starts.
        let mut r = set.replica(INDEXING).connect_one().await?;
        for s in [
            "STOP SLAVE",
            "SET GLOBAL slave_run_triggers_for_rbr = 'YES'",
            "START SLAVE",
        ] {
            r.execute(s).await?;
        }
        anyhow::Ok(())
    })?;
    let names: Vec<String> = (0..set.replicas.len())
        .map(|i| {
            format!(
                "127.0.0.1:{}{}",
                set.replica(i).port,
                if i == INDEXING {
                    " (word-index trigger)"
                } else {
                    " (plain)"
                }
            )
        })
        .collect();
    println!(
        "rows {rows}, two replicas (ROW, GTID), copy with cutover: auto; {} CPUs, {}",
        command_line("nproc", &[]),
        set.primary.description()
    );
    let free = run_mode(&rt, &set, &bin, rows, "1h")?;
    let held = run_mode(&rt, &set, &bin, rows, &format!("{max_lag}ms"))?;
    let head = format!("max_replica_lag {max_lag} ms");
    println!(
        "{:<46} {:>18} {:>22} {:>8}",
        "", "no throttle (1h)", head, "ratio"
    );
    let line = |what: &str, a: f64, b: f64, prec: usize| {
        println!(
            "{what:<46} {a:>18.prec$} {b:>22.prec$} {:>8.2}",
            if a > 0.0 { b / a } else { f64::NAN }
        );
    };
    let rate = |f: &Figures| rows as f64 / f.wall.as_secs_f64();
    line(
        "copy rows/s (rows / wall of run --execute)",
        rate(&free),
        rate(&held),
        0,
    );
    line(
        "wall s",
        free.wall.as_secs_f64(),
        held.wall.as_secs_f64(),
        1,
    );
    for (i, n) in names.iter().enumerate() {
        line(
            &format!("peak lag ms {n}"),
            free.peaks[i].0.as_millis() as f64,
            held.peaks[i].0.as_millis() as f64,
            0,
        );
        line(
            "  reached at s into the run",
            free.peaks[i].1.as_secs_f64(),
            held.peaks[i].1.as_secs_f64(),
            1,
        );
    }
    line(
        "replicas caught up s after the run",
        free.catch_up.as_secs_f64(),
        held.catch_up.as_secs_f64(),
        1,
    );
    line(
        "myrecode cpu s",
        free.cpu.as_secs_f64(),
        held.cpu.as_secs_f64(),
        1,
    );
    line("myrecode rss MiB", free.rss_mib, held.rss_mib, 1);
    line(
        "word index rows written on the indexing replica",
        free.indexed as f64,
        held.indexed as f64,
        0,
    );
    Ok(())
}

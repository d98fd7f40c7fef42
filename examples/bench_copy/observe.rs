//! What the bench watches while a tool runs: the tool's connections in the process list,
//! the server's and the machine's CPU time.

use anyhow::Result;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::quote;
use sqlx::Row;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the sampler reads the process list.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// What the tool's connections were seen doing: observations per bucket, and samples taken.
#[derive(Debug, Default)]
pub(crate) struct Samples {
    pub(crate) seen: BTreeMap<String, u64>,
    /// What the writer's connections were seen doing when it was not idle.
    pub(crate) writer_seen: BTreeMap<String, u64>,
    pub(crate) samples: u64,
}

/// The shape of a statement: its first words, numbers and the database name taken out.
pub(crate) fn shape(info: &str, db: &str) -> String {
    let info = info.replace(&format!("{}.", quote::ident(db)), "");
    let words: Vec<&str> = info.split_whitespace().take(6).collect();
    let mut s = String::new();
    let mut digits = false;
    for ch in words.join(" ").chars() {
        if ch.is_ascii_digit() {
            if !digits {
                s.push('N');
            }
            digits = true;
        } else {
            digits = false;
            s.push(ch);
        }
    }
    s.chars().take(60).collect()
}

/// Samples `information_schema.PROCESSLIST` for connections in `db` (the writer's apart).
pub(crate) async fn sampler(
    cfg: ConnectionConfig,
    db: String,
    writer_ids: Arc<Mutex<Vec<u64>>>,
    stop: Arc<AtomicBool>,
) -> Result<Samples> {
    let mut c = cfg.connect_one().await?;
    let writer_ids = writer_ids.lock().expect("writer ids").clone();
    let mut s = Samples::default();
    while !stop.load(Ordering::SeqCst) {
        let rows = sqlx::query(
            "SELECT CAST(COMMAND AS CHAR), CAST(COALESCE(STATE, '') AS CHAR), CAST(LEFT(COALESCE(INFO, ''), 120) AS CHAR), CAST(ID AS UNSIGNED) \
             FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
        )
        .bind(&db)
        .fetch_all(&mut c)
        .await?;
        s.samples += 1;
        for r in rows {
            let (command, state, info): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            if writer_ids.contains(&r.get::<u64, _>(3)) {
                if command != "Sleep" {
                    *s.writer_seen
                        .entry(format!("{} [{state}]", shape(&info, &db)))
                        .or_default() += 1;
                }
                continue;
            }
            let key = if command == "Sleep" {
                "(idle: the client is working, or between statements)".to_string()
            } else if state.is_empty() {
                shape(&info, &db)
            } else {
                format!("{} [{state}]", shape(&info, &db))
            };
            *s.seen.entry(key).or_default() += 1;
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    Ok(s)
}

/// CPU time (user and system) process `pid` has used so far, from `/proc/PID/stat`.
pub(crate) fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may hold spaces: count fields after its closing one.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    // SAFETY: sysconf reads a constant of the system.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(Duration::from_secs_f64((utime + stime) as f64 / tick))
}

/// The process id of the server `admin` reaches, when its pid file is readable here.
pub(crate) async fn server_pid(admin: &ConnectionConfig) -> Option<u32> {
    let mut c = admin.connect_one().await.ok()?;
    let file: String = sqlx::query_scalar("SELECT CAST(@@pid_file AS CHAR)")
        .fetch_one(&mut c)
        .await
        .ok()?;
    let pid: u32 = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
    std::path::Path::new(&format!("/proc/{pid}/stat"))
        .exists()
        .then_some(pid)
}

/// Busy and total jiffies of all CPUs so far, from `/proc/stat` (zeros where it cannot be read).
pub(crate) fn cpu_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().next() else {
        return (0, 0);
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    // idle and iowait are the 4th and 5th fields.
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// The share of the machine's CPU time that was busy between two [`cpu_jiffies`] readings, in %.
pub(crate) fn busy_percent(before: (u64, u64), after: (u64, u64)) -> f64 {
    let total = after.1.saturating_sub(before.1).max(1);
    100.0 * after.0.saturating_sub(before.0) as f64 / total as f64
}

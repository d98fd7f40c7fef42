//! The replicas tests' kit: one topology at a time, the legacy schema with its in-place
//! `notes` table, the job, the application's writes to `notes`, and readings of the
//! servers (rows, heartbeat lag, quarantine, backups, `status` of the replicas).

use crate::common::legacy::mojibake;
use crate::common::texts;
use crate::groups::app::*;
use crate::groups::run::status;
use myrecode::codec::Encoding;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::HOW_TO_GET_A_SERVER;
use myrecode::testkit::replicaset::{BinlogFormat, ThrowawayReplicaSet};
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Three servers per test on two cores: one topology at a time.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A topology of `format` with replicas replicating from `sources`, or a panic saying how
/// to get a server.
pub fn topology(format: BinlogFormat, sources: &[Option<usize>]) -> ThrowawayReplicaSet {
    ThrowawayReplicaSet::start(format, sources).unwrap_or_else(|e| {
        panic!(
            "cannot start a replication topology: {e:#}\n(without mariadbd: {HOW_TO_GET_A_SERVER})"
        )
    })
}

/// The in-place table: its text UTF-8 already, but cp1251 read as latin1 in the legacy
/// schema; a foreign key into the copied `users`.
pub fn notes_ddl() -> &'static str {
    "CREATE TABLE notes (id INT NOT NULL PRIMARY KEY, user_id INT NULL, hits INT NOT NULL DEFAULT 0, \
     body VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci, \
     KEY k_user (user_id), CONSTRAINT fk_note_user FOREIGN KEY (user_id) REFERENCES users (id) ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB"
}

/// Rows of `notes`.
pub const NOTES: u64 = 3000;

/// Seeds `notes`: its text stored as cp1251 read as latin1 when `legacy`, as UTF-8 otherwise.
pub async fn seed_notes(c: &mut MySqlConnection, legacy: bool) {
    for chunk in (1..=NOTES).collect::<Vec<_>>().chunks(500) {
        let values: Vec<String> = chunk
            .iter()
            .map(|&i| {
                let t = text(50_000 + i);
                let body = if legacy {
                    mojibake(Encoding::Windows1251, Encoding::Latin1, &t)
                } else {
                    t
                };
                format!(
                    "({i}, {}, {})",
                    1 + i % 60,
                    myrecode::db::quote::literal(&body)
                )
            })
            .collect();
        c.execute(
            format!(
                "INSERT INTO notes (id, user_id, body) VALUES {}",
                values.join(", ")
            )
            .as_str(),
        )
        .await
        .unwrap();
    }
}

/// The legacy schema loaded on `cfg` (the application's tables and `notes`, all seeded);
/// a connection to it.
pub async fn legacy_schema(cfg: &ConnectionConfig) -> MySqlConnection {
    let mut c = cfg.connect_one().await.unwrap();
    for s in ddl("latin1") {
        c.execute(s.as_str()).await.unwrap();
    }
    c.execute(notes_ddl()).await.unwrap();
    seed(&mut c, true).await;
    seed_notes(&mut c, true).await;
    c
}

/// The job: the groups application's four tables copied in one cut-over (automatic), and
/// `notes` in place.
pub fn job(schema: &str, extra: &str) -> String {
    let t = job_text(schema);
    let t = t
        .split("cutover_groups:")
        .next()
        .unwrap()
        .replace("  cutover: manual\n", &format!("  cutover: auto\n{extra}"));
    format!(
        "{t}  - name: notes\n    strategy: in-place\n    columns:\n      - name: body\n        source: cp1251>latin1\n        \
         target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n"
    )
}

/// Every job table and its columns.
pub fn tables() -> Vec<(&'static str, &'static str)> {
    let mut t = COLUMNS.to_vec();
    t.push(("notes", "id, user_id, hits, body"));
    t
}

/// A few quarantined values and why, for a failing test's message.
pub async fn quarantined(c: &mut MySqlConnection) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT CAST(reason AS CHAR), CAST(value AS CHAR) FROM _myrecode_quarantine LIMIT 4",
    )
    .fetch_all(c)
    .await
    .unwrap_or_default()
}

/// The stdout of a run that must have finished the job cleanly (exit code 0).
pub async fn succeeded(out: std::process::Output, c: &mut MySqlConnection) -> String {
    let (o, e) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{o}\n{e}\nquarantined: {:?}",
        quarantined(c).await
    );
    o
}

/// The rows of `table` on `a` and `b` differ: how, briefly.
pub async fn differs(
    a: &mut MySqlConnection,
    b: &mut MySqlConnection,
    table: &str,
    cols: &str,
) -> Option<String> {
    let (x, y) = (rows(a, table, cols).await, rows(b, table, cols).await);
    if x == y {
        return None;
    }
    let e: Vec<_> = x.iter().zip(&y).filter(|(p, q)| p != q).take(2).collect();
    Some(format!(
        "{table}: {} rows against {}; e.g. {e:?}",
        x.len(),
        y.len()
    ))
}

/// The application's writes to `notes`, on the migrated schema and the control alike, until
/// told to stop: hits counted on the rows the in-place batches rewrite (their text is left
/// alone: the legacy application writes mojibake there, which the job would not see again).
pub async fn write_notes(cfg: ConnectionConfig, ctl: ConnectionConfig, steer: Arc<Steer>) -> u64 {
    let mut a = cfg.connect_one().await.unwrap();
    let mut k = ctl.connect_one().await.unwrap();
    let mut n = 0u64;
    while !steer.stop.load(Ordering::SeqCst) {
        n += 1;
        let id = 1 + (n * 7919) % NOTES;
        for c in [&mut a, &mut k] {
            sqlx::query("UPDATE notes SET hits = hits + 1 WHERE id = ?")
                .bind(id as i64)
                .execute(&mut *c)
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(7)).await;
    }
    n
}

/// The replica's lag behind the primary by the job's heartbeat (both beats from the tool's
/// clock); `None` while either has none.
pub async fn beat_lag(p: &mut MySqlConnection, r: &mut MySqlConnection) -> Option<Duration> {
    let q = "SELECT MAX(beat_us) FROM _myrecode_heartbeat";
    let pb: Option<i64> = sqlx::query_scalar(q).fetch_one(&mut *p).await.ok()?;
    let rb: Option<i64> = sqlx::query_scalar(q).fetch_one(&mut *r).await.ok()?;
    Some(Duration::from_micros((pb? - rb?).max(0) as u64))
}

/// Values the in-place job has rewritten so far (its backup rows).
pub async fn recoded(c: &mut MySqlConnection) -> i64 {
    sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM _myrecode_backup")
        .fetch_one(c)
        .await
        .unwrap_or(0)
}

/// `status --json` of the job's replicas: name, state, lag in ms.
pub fn replica_states(url: &str, job: &str) -> Vec<(String, String, Option<u64>)> {
    status(url, job)["replicas"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    (
                        r["replica"].as_str().unwrap_or_default().to_string(),
                        r["state"].as_str().unwrap_or_default().to_string(),
                        r["lag_ms"].as_u64(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The charset of `memo.body`.
pub async fn memo_charset(c: &mut MySqlConnection, schema: &str) -> String {
    sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'memo' AND COLUMN_NAME = 'body'",
    )
    .bind(schema)
    .fetch_one(c)
    .await
    .unwrap()
}

/// Rows the job has committed so far by its checkpoints (every batch advances its table's).
pub async fn rows_read(c: &mut MySqlConnection) -> i64 {
    sqlx::query_scalar::<_, i64>(
        "SELECT CAST(COALESCE(SUM(rows_read), 0) AS SIGNED) FROM _myrecode_checkpoint",
    )
    .fetch_one(c)
    .await
    .unwrap_or(0)
}

/// One reading of a job under watch: when (since the test began), the rows its checkpoints
/// had committed, and the replica's heartbeat lag read after them.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// When the reading began.
    pub at: Duration,
    /// When it ended (the lag was read last).
    pub end: Duration,
    /// Rows committed by then.
    pub rows: i64,
    /// The heartbeat lag (`None` before the first beat reached the replica).
    pub lag: Option<Duration>,
}

/// Readings every ~10 ms of the rows committed on `p` and the lag of `r`, until `steer` stops.
pub async fn sample_job(
    p: ConnectionConfig,
    r: ConnectionConfig,
    t0: std::time::Instant,
    steer: Arc<Steer>,
) -> Vec<Sample> {
    let mut p = p.connect_one().await.unwrap();
    let mut r = r.connect_one().await.unwrap();
    let mut out = Vec::new();
    while !steer.stop.load(Ordering::SeqCst) {
        let at = t0.elapsed();
        // Rows before lag: a commit seen here happened before the lag is read.
        let rows = rows_read(&mut p).await;
        let lag = beat_lag(&mut p, &mut r).await;
        out.push(Sample {
            at,
            end: t0.elapsed(),
            rows,
            lag,
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    out
}

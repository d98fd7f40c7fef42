//! Watching a running job's replicas: a task writing the heartbeat on the primary every
//! [`BEAT_EVERY`], and samples of each replica (the beat it has applied, its replication
//! threads) that throttle the job, or stop it once a replica has been down too long.
//! Each sample is also written where `myrecode status` reads it.

use super::discover;
use super::lag::{
    beat_sql, heartbeat_ddl, heartbeat_lag, lag_reason, read_beat_sql, DownClock, LagSource,
    Reading, BEAT_EVERY,
};
use crate::db::connect::ConnectionConfig;
use crate::db::{errno, quote};
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{watch, Notify};

/// Where each replica's last sample is kept for `status`: one row per job and replica.
pub const REPLICA_STATE: &str = "_myrecode_replicas";

/// DDL of the replica state table.
pub fn state_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL, replica VARCHAR(255) NOT NULL, \
         state VARCHAR(16) NOT NULL, lag_ms BIGINT NULL, detail VARCHAR(1024) NOT NULL, \
         at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), \
         PRIMARY KEY (job, replica)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, REPLICA_STATE)
    )
}

/// Records `?` job's sample of `?` replica: `?` state, `?` lag in ms (or NULL), `?` detail.
pub fn state_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, replica, state, lag_ms, detail) VALUES (?, ?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE state = VALUES(state), lag_ms = VALUES(lag_ms), detail = VALUES(detail), \
         at = CURRENT_TIMESTAMP(6)",
        quote::table(schema, REPLICA_STATE)
    )
}

/// The job's replicas as last sampled (`?` job): replica, state, lag in ms, detail, when.
pub fn states_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(replica AS CHAR), CAST(state AS CHAR), lag_ms, CAST(detail AS CHAR), \
         CAST(DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s') AS CHAR) FROM {} WHERE job = ? ORDER BY replica",
        quote::table(schema, REPLICA_STATE)
    )
}

/// The tool's clock, in microseconds since the epoch.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// How often every replica is sampled at least (as often as the heartbeat); the pacer also
/// asks for a sample before every batch, so a replica falling behind stops the job within
/// one batch.
pub const SAMPLE_EVERY: Duration = BEAT_EVERY;
/// How long one replica may take to answer a sample before it counts as unreachable.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How often the samples are written for `status`.
const NOTE_EVERY: u32 = 10;

/// One replica watched: its settings, and a connection kept between samples.
struct Watched {
    name: String,
    cfg: ConnectionConfig,
    conn: Option<MySqlConnection>,
}

/// The last sample of every replica, shared by the sampling task and the pacer.
#[derive(Default)]
struct Latest {
    readings: Vec<(String, Reading)>,
}

type Shared = Arc<Mutex<Latest>>;

/// A job's replicas under watch, with the heartbeat written meanwhile.
pub struct Watch {
    max_lag: Duration,
    max_down: Duration,
    latest: Shared,
    /// Wakes the sampling task for a sample now.
    wake: Arc<Notify>,
    /// How many samples were taken, so a caller can wait for one begun after it asked.
    taken: watch::Receiver<u64>,
    /// How many samples were begun: one begun and not yet taken began before a caller asked.
    begun: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    down: DownClock,
    started: Instant,
}

impl Drop for Watch {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// One heartbeat write.
async fn beat(c: &mut MySqlConnection, schema: &str, job: &str, at: i64) -> Result<()> {
    sqlx::query(&beat_sql(schema))
        .bind(job)
        .bind(at)
        .execute(c)
        .await
        .context("writing the heartbeat")?;
    Ok(())
}

/// Writes the samples where `status` reads them.
async fn note(
    c: &mut MySqlConnection,
    schema: &str,
    job: &str,
    readings: &[(String, Reading)],
) -> Result<()> {
    for (name, r) in readings {
        sqlx::query(&state_sql(schema))
            .bind(job)
            .bind(name)
            .bind(r.state())
            .bind(r.lag_ms())
            .bind(r.describe().chars().take(1024).collect::<String>())
            .execute(&mut *c)
            .await
            .context("noting the replicas' lag for `myrecode status`")?;
    }
    Ok(())
}

/// The heartbeat task: a beat every [`BEAT_EVERY`], the samples noted every [`NOTE_EVERY`]
/// beats, on a connection of its own to the primary.
async fn beating(cfg: ConnectionConfig, schema: String, job: String, latest: Shared) {
    let mut c: Option<MySqlConnection> = None;
    for n in 0u32.. {
        tokio::time::sleep(BEAT_EVERY).await;
        if c.is_none() {
            c = cfg.connect_one().await.ok();
        }
        let Some(conn) = c.as_mut() else { continue };
        // A failed beat shows as lag on every replica: the job throttles, fails closed,
        // while the next beat reconnects.
        let mut ok = beat(conn, &schema, &job, now_us()).await.is_ok();
        if ok && n % NOTE_EVERY == 0 {
            let readings = latest.lock().expect("not poisoned").readings.clone();
            ok = note(conn, &schema, &job, &readings).await.is_ok();
        }
        if !ok {
            c = None;
        }
    }
}

/// The sampling task's counts of samples begun and taken, for [`Watch::fresh`].
struct Tally {
    begun: Arc<AtomicU64>,
    taken: watch::Sender<u64>,
}

/// The sampling task: every replica every [`SAMPLE_EVERY`], or at once when woken.
async fn sampling(
    wake: Arc<Notify>,
    tally: Tally,
    mut replicas: Vec<Watched>,
    schema: String,
    job: String,
    first_beat_us: i64,
    latest: Shared,
) {
    loop {
        tally.begun.fetch_add(1, Ordering::SeqCst);
        let mut readings = Vec::with_capacity(replicas.len());
        for w in replicas.iter_mut() {
            let r = match tokio::time::timeout(ANSWER_WITHIN, read(w, &schema, &job, first_beat_us))
                .await
            {
                Ok(r) => r,
                Err(_) => {
                    w.conn = None;
                    Reading::Unreachable(format!("no answer within {} s", ANSWER_WITHIN.as_secs()))
                }
            };
            readings.push((w.name.clone(), r));
        }
        latest.lock().expect("not poisoned").readings = readings;
        tally.taken.send_modify(|n| *n += 1);
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(SAMPLE_EVERY) => {}
        }
    }
}

/// One replica's reading now (its connection opened again where it failed).
async fn read(w: &mut Watched, schema: &str, job: &str, first_beat_us: i64) -> Reading {
    if w.conn.is_none() {
        match w.cfg.connect_one().await {
            Ok(c) => w.conn = Some(c),
            Err(e) => return Reading::Unreachable(format!("{e:#}")),
        }
    }
    let c = w.conn.as_mut().expect("connected above");
    let status = match discover::status(c).await {
        Ok(s) => s,
        Err(e) => {
            w.conn = None;
            return Reading::Unreachable(format!("{e:#}"));
        }
    };
    match status {
        None => Reading::Stopped("not a replica (no replication status)".into()),
        Some(Reading::Replicating(..)) => {
            let applied = match sqlx::query_scalar::<_, i64>(&read_beat_sql(schema))
                .bind(job)
                .fetch_optional(&mut *c)
                .await
            {
                Ok(v) => v,
                // The table itself has not reached it yet.
                Err(e) if errno::of(&e) == Some(errno::NO_SUCH_TABLE) => None,
                Err(e) => {
                    w.conn = None;
                    return Reading::Unreachable(format!("reading the heartbeat: {e}"));
                }
            };
            Reading::Replicating(
                heartbeat_lag(now_us(), applied, first_beat_us),
                LagSource::Heartbeat,
            )
        }
        Some(stopped) => stopped,
    }
}

impl Watch {
    /// Starts watching `replicas` (name, settings) for `job`: creates the heartbeat and state
    /// tables on the primary over `conn`, writes the first beat, and starts the heartbeat and
    /// sampling tasks, each on connections of its own.
    pub async fn start(
        conn: &mut MySqlConnection,
        primary: &ConnectionConfig,
        schema: &str,
        job: &str,
        replicas: Vec<(String, ConnectionConfig)>,
        max_lag: Duration,
        max_down: Duration,
    ) -> Result<Watch> {
        conn.execute(heartbeat_ddl(schema).as_str())
            .await
            .context("creating the heartbeat table")?;
        conn.execute(state_ddl(schema).as_str())
            .await
            .context("creating the replica state table")?;
        let first_beat_us = now_us();
        beat(conn, schema, job, first_beat_us).await?;
        let latest: Shared = Arc::default();
        let wake = Arc::new(Notify::new());
        let (count, taken) = watch::channel(0u64);
        let begun = Arc::new(AtomicU64::new(0));
        let watched = replicas
            .into_iter()
            .map(|(name, cfg)| Watched {
                name,
                cfg,
                conn: None,
            })
            .collect();
        let tasks = vec![
            tokio::spawn(beating(
                primary.clone(),
                schema.to_string(),
                job.to_string(),
                latest.clone(),
            )),
            tokio::spawn(sampling(
                wake.clone(),
                Tally {
                    begun: begun.clone(),
                    taken: count,
                },
                watched,
                schema.to_string(),
                job.to_string(),
                first_beat_us,
                latest.clone(),
            )),
        ];
        let mut w = Watch {
            max_lag,
            max_down,
            latest,
            wake,
            taken,
            begun,
            tasks,
            down: DownClock::default(),
            started: Instant::now(),
        };
        w.fresh().await;
        Ok(w)
    }

    /// Waits for a sample taken after this call.
    async fn fresh(&mut self) {
        // A sample begun and not yet taken began before the call: wait for the one after
        // it; none under way, the next begins after the call. (Waiting for two samples
        // always would add a sampling interval to every batch.)
        let begun = self.begun.load(Ordering::SeqCst);
        self.wake.notify_one();
        // The sender lives as long as its task, which `Drop` alone ends.
        let _ = self.taken.wait_for(|n| *n > begun).await;
    }

    /// The verdict of the last sample (taken at most [`SAMPLE_EVERY`] ago, no query here):
    /// `Some(reason)` while the job must wait for a replica, an error (the job stops,
    /// resumably) once one has been down longer than `max_replica_down`.
    fn verdict(&mut self) -> Result<Option<String>> {
        let readings = self.latest.lock().expect("not poisoned").readings.clone();
        let mut why = None;
        for (name, reading) in &readings {
            if let Some(stop) = self
                .down
                .note(name, reading, self.started.elapsed(), self.max_down)
            {
                anyhow::bail!("{stop}");
            }
            if why.is_none() && !reading.within(self.max_lag) {
                why = Some(lag_reason(name, reading, self.max_lag));
            }
        }
        Ok(why)
    }

    /// The verdict of a sample begun after this call: before a batch (so a replica that fell
    /// behind during the batch before stops the next one) and before the cut-over.
    pub async fn fresh_verdict(&mut self) -> Result<Option<String>> {
        self.fresh().await;
        self.verdict()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_statements_quote_the_schema() {
        assert_eq!(
            state_ddl("a`b"),
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_replicas` (job VARCHAR(64) NOT NULL, replica VARCHAR(255) NOT NULL, \
             state VARCHAR(16) NOT NULL, lag_ms BIGINT NULL, detail VARCHAR(1024) NOT NULL, \
             at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), \
             PRIMARY KEY (job, replica)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(
            state_sql("s"),
            "INSERT INTO `s`.`_myrecode_replicas` (job, replica, state, lag_ms, detail) VALUES (?, ?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE state = VALUES(state), lag_ms = VALUES(lag_ms), detail = VALUES(detail), \
             at = CURRENT_TIMESTAMP(6)"
        );
        assert_eq!(
            states_sql("s"),
            "SELECT CAST(replica AS CHAR), CAST(state AS CHAR), lag_ms, CAST(detail AS CHAR), \
             CAST(DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s') AS CHAR) FROM `s`.`_myrecode_replicas` WHERE job = ? ORDER BY replica"
        );
    }
}

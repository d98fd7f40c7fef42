//! Watching a running job's replicas: a task writing the heartbeat on the primary every
//! [`beat_every`] (a tenth of `max_replica_lag`, 20 to 100 ms), and a task sampling each
//! replica as often (the beat it has applied, its replication threads), continuously, in
//! the background, batch or no batch. The samples feed the lag budget ([`Budget`]: each
//! replica's apply time per row, the batch size and holds it allows) and the verdict that
//! throttles the job on the lag measured, or stops it once a replica has been down too
//! long. Each sample is also written where `myrecode status` reads it.

use super::budget::{Allowance, Budget};
use super::discover;
use super::lag::{
    beat_every, beat_sql, heartbeat_ddl, heartbeat_lag, lag_reason, read_beat_sql, DownClock,
    LagSource, Reading,
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

/// How long one replica may take to answer a sample before it counts as unreachable.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How often the samples are written for `status`.
const NOTE_EVERY: Duration = Duration::from_secs(1);
/// Share of `max_replica_lag` every replica must be within, with every batch applied, before
/// a cut-over: its statements (DDL, each a durable commit on every replica in turn) are
/// applied after whatever a replica still lags by, and the limit must hold for both.
pub const SETTLED: f64 = 0.2;
/// How long a cut-over waits for the replicas to settle ([`SETTLED`]) before being within
/// `max_replica_lag` is enough (a replica whose lag on the application's writes alone stays
/// above that share must not keep the swap from ever happening).
pub const SETTLE_FOR: Duration = Duration::from_secs(10);

/// One replica watched: its settings, and a connection kept between samples.
struct Watched {
    name: String,
    cfg: ConnectionConfig,
    conn: Option<MySqlConnection>,
}

/// The last sample of every replica, and the budget the samples measure, shared by the
/// sampling task and the pacer.
struct Latest {
    readings: Vec<(String, Reading)>,
    budget: Budget,
}

type Shared = Arc<Mutex<Latest>>;

/// A job's replicas under watch, with the heartbeat written meanwhile.
pub struct Watch {
    max_lag: Duration,
    /// How often the heartbeat is written and the replicas sampled.
    every: Duration,
    names: Vec<String>,
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
    /// Since when a cut-over has been waiting for the replicas to settle.
    settling: Option<Instant>,
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

/// The heartbeat task: a beat `every` so often, the samples noted every [`NOTE_EVERY`], on
/// a connection of its own to the primary.
async fn beating(
    cfg: ConnectionConfig,
    (schema, job): (String, String),
    latest: Shared,
    every: Duration,
) {
    let mut c: Option<MySqlConnection> = None;
    let note_every = (NOTE_EVERY.as_millis() / every.as_millis().max(1)).max(1) as u32;
    for n in 0u32.. {
        tokio::time::sleep(every).await;
        if c.is_none() {
            c = cfg.connect_one().await.ok();
        }
        let Some(conn) = c.as_mut() else { continue };
        // A failed beat shows as lag on every replica: the job throttles, fails closed,
        // while the next beat reconnects.
        let mut ok = beat(conn, &schema, &job, now_us()).await.is_ok();
        if ok && n % note_every == 0 {
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

/// The sampling task: every replica `every` so often, or at once when woken; each sample
/// goes to the budget as soon as it is read.
async fn sampling(
    (wake, tally): (Arc<Notify>, Tally),
    mut replicas: Vec<Watched>,
    (schema, job): (String, String),
    first_beat_us: i64,
    latest: Shared,
    every: Duration,
) {
    loop {
        tally.begun.fetch_add(1, Ordering::SeqCst);
        let mut readings = Vec::with_capacity(replicas.len());
        for (i, w) in replicas.iter_mut().enumerate() {
            let (r, applied) =
                match tokio::time::timeout(ANSWER_WITHIN, read(w, &schema, &job, first_beat_us))
                    .await
                {
                    Ok(r) => r,
                    Err(_) => {
                        w.conn = None;
                        let why = format!("no answer within {} s", ANSWER_WITHIN.as_secs());
                        (Reading::Unreachable(why), None)
                    }
                };
            let at = now_us();
            {
                let budget = &mut latest.lock().expect("not poisoned").budget;
                match (&r, applied) {
                    (Reading::Replicating(..), Some(beat)) => budget.sampled(i, at, beat),
                    (Reading::Replicating(..), None) => {}
                    _ => budget.stopped(i, at),
                }
            }
            readings.push((w.name.clone(), r));
        }
        latest.lock().expect("not poisoned").readings = readings;
        tally.taken.send_modify(|n| *n += 1);
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// One replica's reading now (its connection opened again where it failed), with the beat
/// it has applied where it replicates and one has reached it.
async fn read(
    w: &mut Watched,
    schema: &str,
    job: &str,
    first_beat_us: i64,
) -> (Reading, Option<i64>) {
    if w.conn.is_none() {
        match w.cfg.connect_one().await {
            Ok(c) => w.conn = Some(c),
            Err(e) => return (Reading::Unreachable(format!("{e:#}")), None),
        }
    }
    let c = w.conn.as_mut().expect("connected above");
    let status = match discover::status(c).await {
        Ok(s) => s,
        Err(e) => {
            w.conn = None;
            return (Reading::Unreachable(format!("{e:#}")), None);
        }
    };
    match status {
        None => (
            Reading::Stopped("not a replica (no replication status)".into()),
            None,
        ),
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
                    let why = format!("reading the heartbeat: {e}");
                    return (Reading::Unreachable(why), None);
                }
            };
            let lag = heartbeat_lag(now_us(), applied, first_beat_us);
            (Reading::Replicating(lag, LagSource::Heartbeat), applied)
        }
        Some(stopped) => (stopped, None),
    }
}

impl Watch {
    /// Starts watching `replicas` (name, settings, the index of the replica it relays from:
    /// `None` for the primary) for `job`: creates the heartbeat and state tables on the
    /// primary over `conn`, writes the first beat, and starts the heartbeat and sampling
    /// tasks, each on connections of its own.
    pub async fn start(
        conn: &mut MySqlConnection,
        primary: &ConnectionConfig,
        (schema, job): (&str, &str),
        replicas: Vec<(String, ConnectionConfig, Option<usize>)>,
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
        let every = beat_every(max_lag);
        let sources = replicas.iter().map(|r| r.2).collect();
        let grain = 2 * every.as_micros() as i64;
        let latest: Shared = Arc::new(Mutex::new(Latest {
            readings: Vec::new(),
            budget: Budget::new(max_lag.as_micros() as i64, grain, sources),
        }));
        let names: Vec<String> = replicas.iter().map(|r| r.0.clone()).collect();
        let wake = Arc::new(Notify::new());
        let (count, taken) = watch::channel(0u64);
        let begun = Arc::new(AtomicU64::new(0));
        let watched = replicas
            .into_iter()
            .map(|(name, cfg, _)| Watched {
                name,
                cfg,
                conn: None,
            })
            .collect();
        let tasks = vec![
            tokio::spawn(beating(
                primary.clone(),
                (schema.to_string(), job.to_string()),
                latest.clone(),
                every,
            )),
            tokio::spawn(sampling(
                (
                    wake.clone(),
                    Tally {
                        begun: begun.clone(),
                        taken: count,
                    },
                ),
                watched,
                (schema.to_string(), job.to_string()),
                first_beat_us,
                latest.clone(),
                every,
            )),
        ];
        let mut w = Watch {
            max_lag,
            every,
            names,
            max_down,
            latest,
            wake,
            taken,
            begun,
            tasks,
            down: DownClock::default(),
            started: Instant::now(),
            settling: None,
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

    /// The verdict of the last sample (taken at most a sampling interval ago, no query here):
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

    /// Whether the replicas are settled for a cut-over, by a sample begun after this call:
    /// every batch applied everywhere and every replica within [`SETTLED`] of the limit; once
    /// a cut-over has waited [`SETTLE_FOR`] for that, every replica within the limit.
    pub async fn settled(&mut self) -> Result<bool> {
        if self.fresh_verdict().await?.is_some() {
            return Ok(false);
        }
        let since = *self.settling.get_or_insert_with(Instant::now);
        let calm = {
            let latest = self.latest.lock().expect("not poisoned");
            let within = self.max_lag.mul_f64(SETTLED);
            latest.budget.all_applied() && latest.readings.iter().all(|(_, r)| r.within(within))
        };
        let settled = calm || since.elapsed() >= SETTLE_FOR;
        tracing::info!(
            "replicas at {} ms: {}",
            now_us() / 1000,
            if settled { "settled" } else { "settling" }
        );
        if settled {
            self.settling = None;
        }
        Ok(settled)
    }

    /// What the lag budget allows a batch of `wanted` rows now, by the samples so far: at
    /// most so many rows, or a hold with its reason (a replica that would lag past the
    /// limit applying even a small batch after what it still has to apply).
    pub fn allowance(&self, wanted: usize) -> std::result::Result<usize, String> {
        let latest = self.latest.lock().expect("not poisoned");
        let allowed = latest.budget.allow(now_us(), wanted);
        tracing::info!(
            "lag budget at {} ms: {wanted} rows asked, {allowed:?}; apply time per row {:?} us; lag {:?}",
            now_us() / 1000,
            (0..self.names.len())
                .map(|r| latest.budget.us_per_row(r).map(|p| p.round()))
                .collect::<Vec<_>>(),
            latest
                .readings
                .iter()
                .map(|(_, r)| r.lag_ms())
                .collect::<Vec<_>>()
        );
        match allowed {
            Allowance::Go(n) => Ok(n),
            Allowance::Hold(r) => Err(hold_reason(
                self.names.get(r).map_or("?", String::as_str),
                self.max_lag,
            )),
        }
    }

    /// Notes a batch of `rows` committed now, after `took` on the primary, for the budget.
    pub fn committed(&self, rows: u64, took: Duration) {
        let mut latest = self.latest.lock().expect("not poisoned");
        latest
            .budget
            .committed(now_us(), rows, took.as_micros() as i64);
    }

    /// How often the heartbeat is written and the replicas sampled.
    pub fn every(&self) -> Duration {
        self.every
    }
}

/// Why a job holds before a batch by the budget (the same words each time, so the wait is
/// said once): starts as every reason to wait for a replica does.
pub fn hold_reason(replica: &str, max: Duration) -> String {
    format!(
        "throttled: replica {replica} is still applying earlier batches: the next one would take it past max_replica_lag {} ms",
        max.as_millis()
    )
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

//! Throttling between batches: the job waits while the operator paused it
//! ([`super::control`]), while the server's `Threads_running` is over `max_threads_running`,
//! while a replica lags over `max_replica_lag` (or stopped), or, before a batch, while the
//! replicas' lag budget ([`super::replicas::budget`]) says the batch would take one past
//! the limit; the budget also caps the batch's rows. Why it waits is noted in the control
//! row (when it changes) for `myrecode status`.

use super::control::{self, Command};
use super::events::{Event, Events};
use super::replicas::watch::Watch;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a job waits, as the pacer says it: `myrecode pause`.
pub const PAUSED: &str = "paused by `myrecode pause` (resume with `myrecode resume`); the change log keeps recording writes";

/// Why a job waits: the server's load.
pub fn load_reason(running: u64, max: u64) -> String {
    format!("throttled: Threads_running is {running}, over max_threads_running {max}")
}

/// What kind of wait a reason the pacer gave is: `paused`, `threads_running`, `replica_lag`
/// (`other` for a reason written by a later myrecode), for `status --json`.
pub fn wait_kind(reason: &str) -> &'static str {
    if reason.starts_with("paused") {
        "paused"
    } else if reason.starts_with("throttled: Threads_running") {
        "threads_running"
    } else if reason.starts_with("throttled: replica") {
        "replica_lag"
    } else {
        "other"
    }
}

/// The server's `Threads_running`: name and value.
pub const THREADS_RUNNING_SQL: &str = "SHOW GLOBAL STATUS LIKE 'Threads_running'";

/// What the run does after a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Next batch.
    Go,
    /// Stop now, resumably (a signal, or `abort` for the caller to handle).
    Stop,
    /// The operator asked to abort.
    Abort,
}

/// Paces one job: waits while paused or throttled, reports what the operator asked for.
pub struct Pacer<'a> {
    schema: String,
    job: String,
    max_threads_running: u64,
    watch: Option<Watch>,
    last_check: Option<Instant>,
    /// The reason last written to the control row for `status` (`None`: not known yet, so
    /// the first call clears what a killed run may have left).
    noted: Option<Option<String>>,
    /// Where it says that the job waits, and that it goes on.
    events: &'a dyn Events,
}

/// How every reason to wait for a replica begins.
const HOLD_PREFIX: &str = "throttled: replica";
/// What a hold by the lag budget says (see [`crate::engine::replicas::watch::hold_reason`]).
const HOLD_MARK: &str = "is still applying earlier batches";

/// A reason with its figures left out, to say a wait once per cause.
fn figures_aside(why: &str) -> String {
    why.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// How often load and lag are sampled (a status query per batch would be load of its own).
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// Sleep while paused or throttled.
const WAIT_STEP: Duration = Duration::from_millis(250);

impl<'a> Pacer<'a> {
    /// A pacer for `job`; `max_threads_running` 0 and no replicas to watch mean no throttling.
    /// It says when the job waits, and when it goes on, to `events`.
    pub fn new(
        schema: &str,
        job: &str,
        max_threads_running: u64,
        watch: Option<Watch>,
        events: &'a dyn Events,
    ) -> Self {
        Pacer {
            schema: schema.to_string(),
            job: job.to_string(),
            max_threads_running,
            watch,
            last_check: None,
            noted: None,
            events,
        }
    }

    /// Called between batches: returns once the job may go on, or must stop or abort.
    pub async fn between_batches(
        &mut self,
        conn: &mut MySqlConnection,
        stop: &AtomicBool,
    ) -> Result<Flow> {
        Ok(self.wait(conn, stop, None).await?.0)
    }

    /// Called before a batch of `wanted` rows: returns once the job may go on, or must stop
    /// or abort, with the rows the replicas' lag budget lets the batch take (`wanted` at
    /// most; 0: a batch that writes nothing, which the budget does not bound).
    pub async fn before_batch(
        &mut self,
        conn: &mut MySqlConnection,
        stop: &AtomicBool,
        wanted: usize,
    ) -> Result<(Flow, usize)> {
        self.wait(conn, stop, Some(wanted).filter(|&n| n > 0)).await
    }

    /// Whether replicas' lag paces the job (a strategy then keeps one batch in flight).
    pub fn paces_replicas(&self) -> bool {
        self.watch.is_some()
    }

    /// Notes a batch of `rows` just committed after `took` on the primary, for the lag
    /// budget to follow it onto the replicas.
    pub fn committed(&self, rows: u64, took: Duration) {
        if let Some(w) = self.watch.as_ref() {
            w.committed(rows, took);
        }
    }

    /// Waits while the job must; with a batch of `wanted` rows to follow, also while the
    /// budget holds it, and says how many rows it may take.
    async fn wait(
        &mut self,
        conn: &mut MySqlConnection,
        stop: &AtomicBool,
        wanted: Option<usize>,
    ) -> Result<(Flow, usize)> {
        let mut said: Option<String> = None;
        let mut rows = wanted.unwrap_or(0);
        loop {
            if stop.load(Ordering::SeqCst) {
                // Best effort: a run that stops waits for nothing; a failure here changes nothing.
                self.note(conn, None).await.ok();
                return Ok((Flow::Stop, rows));
            }
            let why = match control::read(conn, &self.schema, &self.job).await? {
                Some(Command::Abort) => return Ok((Flow::Abort, rows)),
                Some(Command::Pause) => Some(PAUSED.to_string()),
                _ => match self.throttled(conn).await? {
                    None => match (wanted, self.watch.as_ref()) {
                        (Some(n), Some(w)) => match w.allowance(n) {
                            Ok(allowed) => {
                                rows = allowed;
                                None
                            }
                            Err(hold) => Some(hold),
                        },
                        _ => None,
                    },
                    held => held,
                },
            };
            self.note(conn, why.as_deref()).await?;
            match why {
                None => {
                    if said.is_some() {
                        self.events.event(&Event::GoingOn { job: &self.job });
                    }
                    return Ok((Flow::Go, rows));
                }
                Some(why) => {
                    // Said once per cause: a lag's figure changes at every sample.
                    if said.as_deref().map(figures_aside) != Some(figures_aside(&why)) {
                        self.events.event(&Event::Waiting {
                            job: &self.job,
                            why: &why,
                        });
                        said = Some(why.clone());
                    }
                    // The next turn waits for a fresh sample of the replicas: a budget's
                    // hold asks again soon (a quarter of a sampling interval); a lag over
                    // the limit is polled each sample; other waits every WAIT_STEP.
                    match self.watch.as_ref() {
                        Some(w) if why.starts_with(HOLD_PREFIX) && why.contains(HOLD_MARK) => {
                            tokio::time::sleep(w.every() / 4).await
                        }
                        Some(w) if why.starts_with(HOLD_PREFIX) => {
                            tokio::time::sleep(w.every()).await
                        }
                        _ => tokio::time::sleep(WAIT_STEP).await,
                    }
                }
            }
        }
    }

    /// Whether the replicas are settled for a cut-over now (a fresh sample, whenever the last
    /// was taken; [`crate::engine::replicas::watch::Watch::settled`]): every batch applied and
    /// every replica within a quarter of `max_replica_lag`, so the cut-over's own statements
    /// reach them with the limit's room left.
    pub async fn replicas_caught_up(&mut self) -> Result<bool> {
        match self.watch.as_mut() {
            None => Ok(true),
            Some(w) => w.settled().await,
        }
    }

    /// Waits until the replicas are settled ([`Pacer::replicas_caught_up`]): between the
    /// statements of a cut-over, each a durable commit on every replica in turn, so that
    /// together they do not take a small replica past `max_replica_lag`. Bounded by the
    /// settling's own bound, or by `max_replica_down` for a replica that stopped.
    pub async fn settle_replicas(&mut self) -> Result<()> {
        while !self.replicas_caught_up().await? {}
        Ok(())
    }

    /// Writes why the job waits (`None`: it goes on) where `myrecode status` reads it, only
    /// when that changed: no write per batch while the job runs freely.
    async fn note(&mut self, conn: &mut MySqlConnection, why: Option<&str>) -> Result<()> {
        if self.noted.as_ref().is_some_and(|n| n.as_deref() == why) {
            return Ok(());
        }
        match why {
            Some(w) => {
                sqlx::query(&control::note_sql(&self.schema))
                    .bind(&self.job)
                    .bind(w.chars().take(255).collect::<String>())
                    .execute(conn)
                    .await
            }
            None => {
                sqlx::query(&control::unnote_sql(&self.schema))
                    .bind(&self.job)
                    .execute(conn)
                    .await
            }
        }
        .context("noting why the job waits, for `myrecode status`")?;
        self.noted = Some(why.map(str::to_string));
        Ok(())
    }

    /// Why the job should wait now (load or lag over the limit), if it should.
    async fn throttled(&mut self, conn: &mut MySqlConnection) -> Result<Option<String>> {
        // The replicas are sampled before every batch (a query or two each, on the sampling
        // task's connections): one that fell behind during a batch stops the next.
        if let Some(w) = self.watch.as_mut() {
            if let Some(why) = w.fresh_verdict().await? {
                return Ok(Some(why));
            }
        }
        if self.last_check.is_some_and(|t| t.elapsed() < SAMPLE_EVERY) {
            return Ok(None);
        }
        self.last_check = Some(Instant::now());
        if self.max_threads_running > 0 {
            let running = threads_running(conn).await?;
            if running > self.max_threads_running {
                self.last_check = None;
                return Ok(Some(load_reason(running, self.max_threads_running)));
            }
        }
        Ok(None)
    }
}

/// The server's `Threads_running`.
pub async fn threads_running(conn: &mut MySqlConnection) -> Result<u64> {
    let row = sqlx::query(THREADS_RUNNING_SQL)
        .fetch_one(conn)
        .await
        .context("reading Threads_running")?;
    let v: String = row.try_get::<String, _>(1).or_else(|_| {
        row.try_get::<Vec<u8>, _>(1)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    })?;
    Ok(v.trim().parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::super::replicas::lag::{lag_reason, LagSource, Reading};
    use super::*;

    #[test]
    fn every_reason_the_pacer_gives_has_its_kind() {
        assert_eq!(wait_kind(PAUSED), "paused");
        assert_eq!(wait_kind(&load_reason(40, 25)), "threads_running");
        let max = Duration::from_secs(2);
        let lagging = Reading::Replicating(Duration::from_secs(9), LagSource::Heartbeat);
        assert_eq!(
            wait_kind(&lag_reason("db2:3306", &lagging, max)),
            "replica_lag"
        );
        let stopped = Reading::Stopped("IO thread No, SQL thread No".into());
        assert_eq!(
            wait_kind(&lag_reason("db2:3306", &stopped, max)),
            "replica_lag"
        );
        assert_eq!(wait_kind("something new"), "other");
        let hold = crate::engine::replicas::watch::hold_reason("db2:3306", max);
        assert_eq!(wait_kind(&hold), "replica_lag");
        assert!(hold.starts_with(HOLD_PREFIX) && hold.contains(HOLD_MARK));
        assert_eq!(
            figures_aside(&lag_reason("db2:3306", &lagging, max)),
            figures_aside(&lag_reason(
                "db2:3306",
                &Reading::Replicating(Duration::from_millis(9123), LagSource::Heartbeat),
                max
            ))
        );
        assert_eq!(
            load_reason(40, 25),
            "throttled: Threads_running is 40, over max_threads_running 25"
        );
    }
}

//! Between batches: the operator's commands (pause, resume, abort, cutover) and throttling on
//! the server's `Threads_running` and on replica lag.
//!
//! Commands travel through a row of `_myrecode_control` in the job's schema, so `myrecode pause`
//! works from any terminal or host that can reach the server, and survives a restart of the run.

use super::replicas::watch::Watch;
use crate::bookkeeping::control_table::CONTROL;
use crate::db::quote;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// An operator's command to a running job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Stop after the current batch and wait (triggers keep logging) until `resume`.
    Pause,
    /// Stop; a copy removes its shadow, triggers and change log; the original is untouched.
    Abort,
    /// A copy waiting under `cutover: manual` may swap the tables now.
    Cutover,
}

impl Command {
    /// The word stored in the control table and typed on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Pause => "pause",
            Command::Abort => "abort",
            Command::Cutover => "cutover",
        }
    }

    fn parse(s: &str) -> Option<Command> {
        match s {
            "pause" => Some(Command::Pause),
            "abort" => Some(Command::Abort),
            "cutover" => Some(Command::Cutover),
            _ => None,
        }
    }
}

/// Notes why `?` job waits, `?` the reason: in the job's control row, made with no command
/// (`''`, which no reader takes for one) when the row is missing; `waiting_since` keeps
/// when the wait began while its reason only changes its figures.
pub fn note_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, command, waiting, waiting_since) VALUES (?, '', ?, NOW(6)) \
         ON DUPLICATE KEY UPDATE waiting_since = IF(waiting IS NULL, NOW(6), waiting_since), waiting = VALUES(waiting)",
        quote::table(schema, CONTROL)
    )
}

/// Clears the note of `?` job: it goes on (a missing row has nothing to clear).
pub fn unnote_sql(schema: &str) -> String {
    format!(
        "UPDATE {} SET waiting = NULL, waiting_since = NULL WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

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

/// Records a command, `?` job, `?` command word and `?` its argument (or `NULL`), replacing
/// the one waiting.
pub fn send_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, command, argument) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE command = VALUES(command), \
         argument = VALUES(argument), at = CURRENT_TIMESTAMP(6)",
        quote::table(schema, CONTROL)
    )
}

/// Clears the command waiting for `?` job (that is `resume`).
pub fn clear_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

/// Clears the `cutover` waiting for `?` job if it names group `?` (`NULL`: the job names
/// none), leaving any other command, or a `cutover` for another group, in place.
pub fn clear_cutover_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ? AND command = 'cutover' AND argument <=> ?",
        quote::table(schema, CONTROL)
    )
}

/// The command waiting for `?` job.
pub fn read_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(command AS CHAR) FROM {} WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

/// The command waiting for `?` job and its argument.
pub fn read_argument_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(command AS CHAR), CAST(argument AS CHAR) FROM {} WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

/// The server's `Threads_running`: name and value.
pub const THREADS_RUNNING_SQL: &str = "SHOW GLOBAL STATUS LIKE 'Threads_running'";
/// Records `command` for `job` (`None` clears it: that is `resume`).
pub async fn send(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    command: Option<Command>,
) -> Result<()> {
    send_with(conn, schema, job, command, None).await
}

/// Records `cutover` for `job`, naming the cut-over group it allows (`None`: the job names
/// no groups).
pub async fn send_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    group: Option<&str>,
) -> Result<()> {
    send_with(conn, schema, job, Some(Command::Cutover), group).await
}

async fn send_with(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    command: Option<Command>,
    argument: Option<&str>,
) -> Result<()> {
    let t = quote::table(schema, CONTROL);
    match command {
        Some(c) => {
            sqlx::query(&send_sql(schema))
                .bind(job)
                .bind(c.as_str())
                .bind(argument)
                .execute(conn)
                .await
        }
        None => {
            sqlx::query(&clear_sql(schema))
                .bind(job)
                .execute(conn)
                .await
        }
    }
    .with_context(|| format!("writing the command for job '{job}' into {t}"))?;
    Ok(())
}

/// Clears the `cutover` that allowed `group` (`None`: the job names no groups) once it is
/// swapped; a command sent since for anything else stays.
pub async fn clear_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    group: Option<&str>,
) -> Result<()> {
    sqlx::query(&clear_cutover_sql(schema))
        .bind(job)
        .bind(group)
        .execute(conn)
        .await
        .with_context(|| format!("clearing the cut-over command of job '{job}'"))?;
    Ok(())
}

/// The command waiting for `job`, if any.
pub async fn read(conn: &mut MySqlConnection, schema: &str, job: &str) -> Result<Option<Command>> {
    let row = sqlx::query(&read_sql(schema))
        .bind(job)
        .fetch_optional(conn)
        .await
        .context("reading the job's control row")?;
    Ok(row.and_then(|r| Command::parse(&r.get::<String, _>(0))))
}

/// `Some(group)` when `cutover` waits for `job`, with the group it names (`None`: every
/// group, as a job without groups or an older myrecode says it); `None` without it.
pub async fn read_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
) -> Result<Option<Option<String>>> {
    let row = sqlx::query(&read_argument_sql(schema))
        .bind(job)
        .fetch_optional(conn)
        .await
        .context("reading the job's control row")?;
    Ok(row.and_then(|r| {
        (Command::parse(&r.get::<String, _>(0)) == Some(Command::Cutover))
            .then(|| r.get::<Option<String>, _>(1).filter(|a| !a.is_empty()))
    }))
}

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
pub struct Pacer {
    schema: String,
    job: String,
    max_threads_running: u64,
    watch: Option<Watch>,
    last_check: Option<Instant>,
    /// The reason last written to the control row for `status` (`None`: not known yet, so
    /// the first call clears what a killed run may have left).
    noted: Option<Option<String>>,
    /// Whether the last wait between batches was for a replica (lag over the limit, or
    /// stopped): the batch before it was more than the replicas could take.
    held_by_replicas: bool,
}

/// How often load and lag are sampled (a status query per batch would be load of its own).
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// Sleep while paused or throttled.
const WAIT_STEP: Duration = Duration::from_millis(250);

impl Pacer {
    /// A pacer for `job`; `max_threads_running` 0 and no replicas to watch mean no throttling.
    pub fn new(schema: &str, job: &str, max_threads_running: u64, watch: Option<Watch>) -> Self {
        Pacer {
            schema: schema.to_string(),
            job: job.to_string(),
            max_threads_running,
            watch,
            last_check: None,
            noted: None,
            held_by_replicas: false,
        }
    }

    /// Whether the last [`Pacer::between_batches`] waited for a replica.
    pub fn held_by_replicas(&self) -> bool {
        self.held_by_replicas
    }

    /// Called between batches: returns once the job may go on, or must stop or abort.
    pub async fn between_batches(
        &mut self,
        conn: &mut MySqlConnection,
        stop: &AtomicBool,
    ) -> Result<Flow> {
        let mut said: Option<String> = None;
        self.held_by_replicas = false;
        loop {
            if stop.load(Ordering::SeqCst) {
                // Best effort: a run that stops waits for nothing; a failure here changes nothing.
                self.note(conn, None).await.ok();
                return Ok(Flow::Stop);
            }
            let why = match read(conn, &self.schema, &self.job).await? {
                Some(Command::Abort) => return Ok(Flow::Abort),
                Some(Command::Pause) => Some(PAUSED.to_string()),
                _ => self.throttled(conn).await?,
            };
            self.note(conn, why.as_deref()).await?;
            match why {
                None => {
                    if said.is_some() {
                        eprintln!("myrecode: {}: going on", self.job);
                    }
                    return Ok(Flow::Go);
                }
                Some(why) => {
                    if said.as_deref() != Some(why.as_str()) {
                        eprintln!("myrecode: {}: {why}", self.job);
                        said = Some(why);
                    }
                    tokio::time::sleep(WAIT_STEP).await;
                }
            }
        }
    }

    /// Whether every replica is within `max_replica_lag` now (a fresh sample, whenever the
    /// last was taken): the cut-over swaps only then, so its RENAME reaches them promptly.
    pub async fn replicas_caught_up(&mut self) -> Result<bool> {
        match self.watch.as_mut() {
            None => Ok(true),
            Some(w) => Ok(w.fresh_verdict().await?.is_none()),
        }
    }

    /// Writes why the job waits (`None`: it goes on) where `myrecode status` reads it, only
    /// when that changed: no write per batch while the job runs freely.
    async fn note(&mut self, conn: &mut MySqlConnection, why: Option<&str>) -> Result<()> {
        if self.noted.as_ref().is_some_and(|n| n.as_deref() == why) {
            return Ok(());
        }
        match why {
            Some(w) => {
                sqlx::query(&note_sql(&self.schema))
                    .bind(&self.job)
                    .bind(w.chars().take(255).collect::<String>())
                    .execute(conn)
                    .await
            }
            None => {
                sqlx::query(&unnote_sql(&self.schema))
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
                self.held_by_replicas = true;
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
    use crate::bookkeeping::control_table::{ddl, CONTROL_ADDED};

    #[test]
    fn control_statements_quote_the_schema() {
        assert_eq!(
            ddl("a`b"),
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_control` (job VARCHAR(64) NOT NULL PRIMARY KEY, \
             command VARCHAR(16) NOT NULL, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
             waiting VARCHAR(255) NULL, waiting_since TIMESTAMP(6) NULL, argument VARCHAR(255) NULL) \
             ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        for (name, def) in CONTROL_ADDED {
            assert!(ddl("s").contains(&format!("{name} {def}")), "{name}");
        }
        assert_eq!(
            clear_cutover_sql("a`b"),
            "DELETE FROM `a``b`.`_myrecode_control` WHERE job = ? AND command = 'cutover' AND argument <=> ?"
        );
        assert_eq!(
            note_sql("a`b"),
            "INSERT INTO `a``b`.`_myrecode_control` (job, command, waiting, waiting_since) VALUES (?, '', ?, NOW(6)) \
             ON DUPLICATE KEY UPDATE waiting_since = IF(waiting IS NULL, NOW(6), waiting_since), waiting = VALUES(waiting)"
        );
        assert_eq!(
            unnote_sql("s"),
            "UPDATE `s`.`_myrecode_control` SET waiting = NULL, waiting_since = NULL WHERE job = ?"
        );
        assert_eq!(
            send_sql("база данных"),
            "INSERT INTO `база данных`.`_myrecode_control` (job, command, argument) VALUES (?, ?, ?) \
             ON DUPLICATE KEY UPDATE command = VALUES(command), argument = VALUES(argument), at = CURRENT_TIMESTAMP(6)"
        );
        assert_eq!(
            clear_sql("order"),
            "DELETE FROM `order`.`_myrecode_control` WHERE job = ?"
        );
        assert_eq!(
            read_sql("s"),
            "SELECT CAST(command AS CHAR) FROM `s`.`_myrecode_control` WHERE job = ?"
        );
        assert_eq!(
            read_argument_sql("s"),
            "SELECT CAST(command AS CHAR), CAST(argument AS CHAR) FROM `s`.`_myrecode_control` WHERE job = ?"
        );
    }

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
        assert_eq!(
            load_reason(40, 25),
            "throttled: Threads_running is 40, over max_threads_running 25"
        );
    }

    #[test]
    fn a_command_reads_back_as_written() {
        assert_eq!(
            Command::parse(Command::Cutover.as_str()),
            Some(Command::Cutover)
        );
    }
}

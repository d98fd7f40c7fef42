//! Replica lag as the job measures it, without I/O: the heartbeat row's statements, the
//! arithmetic that turns a beat read on a replica into a lag, what one sample of a replica
//! says, and how long a replica may be down before the job stops.
//!
//! The job writes its own clock (microseconds since the epoch, on the host running
//! myrecode) into a heartbeat row on the primary every [`beat_every`]; a replica's lag is
//! the tool's clock now minus the beat it has applied. Both readings come from the same
//! clock, so no skew between servers enters, and the lag is in milliseconds, not the whole
//! seconds of `Seconds_Behind_Master` (which reads 0 on a replica whose relay stalled).

use crate::db::quote;
use std::collections::BTreeMap;
use std::time::Duration;

/// The heartbeat table, in the job's schema (so it replicates wherever the job's tables do).
pub const HEARTBEAT: &str = "_myrecode_heartbeat";

/// How often the heartbeat is written on the primary (and each replica sampled) at most.
pub const BEAT_EVERY: Duration = Duration::from_millis(100);

/// How often the heartbeat is written and the replicas sampled under `max_lag`: a tenth of
/// it, between 20 ms and [`BEAT_EVERY`]. A lag shows up to a beat and a sample late, and
/// the budget ([`super::budget`]) keeps that much of the limit aside: under a 200 ms limit,
/// 100 ms beats would leave nothing to copy in.
pub fn beat_every(max_lag: Duration) -> Duration {
    (max_lag / 10).clamp(Duration::from_millis(20), BEAT_EVERY)
}

/// DDL of the heartbeat table: one row per job, its last beat in the tool's microseconds.
pub fn heartbeat_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL PRIMARY KEY, beat_us BIGINT NOT NULL) \
         ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, HEARTBEAT)
    )
}

/// Writes `?` job's beat `?` (a literal from the tool's clock: the same row under every
/// binary log format).
pub fn beat_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, beat_us) VALUES (?, ?) ON DUPLICATE KEY UPDATE beat_us = VALUES(beat_us)",
        quote::table(schema, HEARTBEAT)
    )
}

/// Reads `?` job's beat as a replica has applied it.
pub fn read_beat_sql(schema: &str) -> String {
    format!(
        "SELECT beat_us FROM {} WHERE job = ?",
        quote::table(schema, HEARTBEAT)
    )
}

/// The lag a replica shows: the tool's clock now minus the beat it has applied, or, before
/// the first beat reached it, minus the first beat written (it is at least that far behind).
pub fn heartbeat_lag(now_us: i64, applied_us: Option<i64>, first_written_us: i64) -> Duration {
    let since = applied_us.unwrap_or(first_written_us);
    Duration::from_micros(now_us.saturating_sub(since).max(0) as u64)
}

/// Where a lag figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LagSource {
    /// The job's heartbeat (milliseconds, the tool's clock).
    Heartbeat,
    /// `Seconds_Behind_Master`/`_Source`: whole seconds, used only where no heartbeat is
    /// written (the job is not writing: the rehearsal).
    SecondsBehind,
}

/// What one sample of a replica found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// Replicating, this far behind.
    Replicating(Duration, LagSource),
    /// Answering, but its replication is stopped or broken (why, in the server's words).
    Stopped(String),
    /// Not answering (the connection error).
    Unreachable(String),
}

impl Reading {
    /// The state word of `status --json`.
    pub fn state(&self) -> &'static str {
        match self {
            Reading::Replicating(..) => "replicating",
            Reading::Stopped(_) => "stopped",
            Reading::Unreachable(_) => "unreachable",
        }
    }

    /// The lag in milliseconds, where known.
    pub fn lag_ms(&self) -> Option<u64> {
        match self {
            Reading::Replicating(l, _) => Some(l.as_millis() as u64),
            _ => None,
        }
    }

    /// Whether the job may go on for this replica.
    pub fn within(&self, max: Duration) -> bool {
        matches!(self, Reading::Replicating(l, _) if *l <= max)
    }

    /// What `status` and the rehearsal say of it.
    pub fn describe(&self) -> String {
        match self {
            Reading::Replicating(l, LagSource::Heartbeat) => {
                format!("lag {} ms (heartbeat)", l.as_millis())
            }
            Reading::Replicating(l, LagSource::SecondsBehind) => format!(
                "lag {} s (Seconds_Behind_Master: whole seconds, no heartbeat is written yet)",
                l.as_secs()
            ),
            Reading::Stopped(why) => format!("replication stopped: {why}"),
            Reading::Unreachable(why) => format!("unreachable: {why}"),
        }
    }
}

/// Replication threads and errors as `SHOW REPLICA STATUS` gives them: whether both threads
/// run, and if not, why (`None`: replicating).
pub fn stopped_why(
    io_running: &str,
    sql_running: &str,
    io_error: &str,
    sql_error: &str,
) -> Option<String> {
    let io_ok = io_running.eq_ignore_ascii_case("yes");
    // A replica reconnecting says `Connecting`: its relay does not move meanwhile.
    let sql_ok = sql_running.eq_ignore_ascii_case("yes");
    if io_ok && sql_ok {
        return None;
    }
    let mut why = format!("IO thread {io_running}, SQL thread {sql_running}");
    for (what, e) in [("IO", io_error), ("SQL", sql_error)] {
        if !e.trim().is_empty() {
            why.push_str(&format!("; last {what} error: {}", e.trim()));
        }
    }
    Some(why)
}

/// Why a job waits on a replica.
pub fn lag_reason(replica: &str, reading: &Reading, max: Duration) -> String {
    match reading {
        Reading::Replicating(l, _) => format!(
            "throttled: replica {replica} lags {} ms, over max_replica_lag {} ms",
            l.as_millis(),
            max.as_millis()
        ),
        other => format!(
            "throttled: replica {replica} {}; waiting until it replicates again",
            other.describe()
        ),
    }
}

/// Since when each replica has been down (stopped or unreachable), to stop the job once one
/// has been down longer than `limit`: a replica that cannot be watched cannot be waited for.
#[derive(Debug, Default)]
pub struct DownClock {
    since: BTreeMap<String, Duration>,
}

impl DownClock {
    /// Notes `reading` of `replica` at `now` (a monotonic offset); returns the message that
    /// stops the job when the replica has been down longer than `limit`.
    pub fn note(
        &mut self,
        replica: &str,
        reading: &Reading,
        now: Duration,
        limit: Duration,
    ) -> Option<String> {
        if matches!(reading, Reading::Replicating(..)) {
            self.since.remove(replica);
            return None;
        }
        let since = *self.since.entry(replica.to_string()).or_insert(now);
        let down = now.saturating_sub(since);
        (down > limit).then(|| {
            format!(
                "replica {replica} has been down for {} s ({}), longer than max_replica_down {} s: \
                 the job stops here, its checkpoint kept. Fix: start replication on {replica} again \
                 (or take it out of the topology), then run the job again: it resumes where it stopped",
                down.as_secs(),
                reading.describe(),
                limit.as_secs()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_statements_quote_the_schema() {
        assert_eq!(
            heartbeat_ddl("a`b"),
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_heartbeat` (job VARCHAR(64) NOT NULL PRIMARY KEY, \
             beat_us BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        assert_eq!(
            beat_sql("s"),
            "INSERT INTO `s`.`_myrecode_heartbeat` (job, beat_us) VALUES (?, ?) \
             ON DUPLICATE KEY UPDATE beat_us = VALUES(beat_us)"
        );
        assert_eq!(
            read_beat_sql("база"),
            "SELECT beat_us FROM `база`.`_myrecode_heartbeat` WHERE job = ?"
        );
    }

    #[test]
    fn beats_come_ten_to_the_limit_between_20_and_100_ms() {
        assert_eq!(
            beat_every(Duration::from_millis(200)),
            Duration::from_millis(20)
        );
        assert_eq!(
            beat_every(Duration::from_millis(500)),
            Duration::from_millis(50)
        );
        assert_eq!(beat_every(Duration::from_secs(2)), BEAT_EVERY);
        assert_eq!(
            beat_every(Duration::from_millis(50)),
            Duration::from_millis(20)
        );
    }

    #[test]
    fn lag_is_the_tools_clock_minus_the_applied_beat() {
        assert_eq!(
            heartbeat_lag(10_250_000, Some(10_000_000), 1),
            Duration::from_millis(250)
        );
        // No beat arrived yet: at least as far behind as the first one written.
        assert_eq!(
            heartbeat_lag(10_250_000, None, 9_000_000),
            Duration::from_millis(1250)
        );
        // A beat from a later clock reading (the host's clock stepped back) is no lag.
        assert_eq!(heartbeat_lag(5, Some(9), 0), Duration::ZERO);
        let r = Reading::Replicating(Duration::from_millis(1500), LagSource::Heartbeat);
        assert!(r.within(Duration::from_millis(1500)));
        assert!(!r.within(Duration::from_millis(1499)));
        assert!(!Reading::Stopped("x".into()).within(Duration::MAX));
        assert_eq!(r.lag_ms(), Some(1500));
        assert_eq!(
            lag_reason("db2:3306", &r, Duration::from_millis(1000)),
            "throttled: replica db2:3306 lags 1500 ms, over max_replica_lag 1000 ms"
        );
    }

    #[test]
    fn a_replica_is_stopped_unless_both_threads_run() {
        assert_eq!(stopped_why("Yes", "Yes", "", "old error"), None);
        assert_eq!(
            stopped_why("Yes", "No", "", "Error 'Duplicate entry' on query"),
            Some(
                "IO thread Yes, SQL thread No; last SQL error: Error 'Duplicate entry' on query"
                    .into()
            )
        );
        assert_eq!(
            stopped_why("Connecting", "Yes", "error reconnecting", ""),
            Some("IO thread Connecting, SQL thread Yes; last IO error: error reconnecting".into())
        );
        let r = Reading::Stopped(stopped_why("No", "No", "", "").unwrap());
        assert_eq!(
            lag_reason("r", &r, Duration::from_secs(1)),
            "throttled: replica r replication stopped: IO thread No, SQL thread No; waiting until it replicates again"
        );
        assert_eq!(r.state(), "stopped");
    }

    #[test]
    fn the_job_stops_only_once_a_replica_is_down_longer_than_the_limit() {
        let mut d = DownClock::default();
        let limit = Duration::from_secs(30);
        let down = Reading::Unreachable("connection refused".into());
        let up = Reading::Replicating(Duration::ZERO, LagSource::Heartbeat);
        assert_eq!(d.note("r1", &down, Duration::from_secs(100), limit), None);
        assert_eq!(d.note("r1", &down, Duration::from_secs(130), limit), None);
        // Back in time: the clock starts over.
        assert_eq!(d.note("r1", &up, Duration::from_secs(131), limit), None);
        assert_eq!(d.note("r1", &down, Duration::from_secs(140), limit), None);
        assert_eq!(d.note("r2", &down, Duration::from_secs(150), limit), None);
        let stop = d
            .note("r1", &down, Duration::from_secs(171), limit)
            .unwrap();
        assert!(
            stop.starts_with("replica r1 has been down for 31 s (unreachable: connection refused), longer than max_replica_down 30 s"),
            "{stop}"
        );
        assert!(stop.contains("run the job again: it resumes"), "{stop}");
    }
}

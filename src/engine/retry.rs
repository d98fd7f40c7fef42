//! Which failures are transient (retry with backoff, then stop with the resume command) and
//! which are definitive, decided by the error's type and the server's error number; and the
//! streak of retries, whose backoff and deadline start again after every success.

use crate::db::connect::Unreachable;
use crate::db::errno;
use std::time::{Duration, Instant};

/// A failure a retry can outlive, by what happened (named in the run's log and its last error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transient {
    /// The connection broke under us: reset, closed, or lost during a query.
    ConnectionLost,
    /// The server answered that it has gone away (`CR_SERVER_GONE_ERROR`, 2006).
    ServerGone,
    /// No server to reach: connection refused or timed out, as while it restarts.
    Unreachable,
    /// The server is shutting down (1053) or killed our connection (1927).
    ServerRestarting,
    /// A row or metadata lock wait timed out (1205).
    LockWait,
    /// Chosen as a deadlock's victim (1213).
    Deadlock,
    /// Too many connections (1040).
    TooManyConnections,
    /// A change log of ours missing (1146) while the server reopens tables after a restart:
    /// a crashed MyISAM table being repaired fails the first statements through its triggers.
    LogTableMissing,
    /// A MyISAM or Aria table marked crashed (1194): the server repairs it on the next open
    /// (`myisam_recover_options`, `aria_recover_options`), as after a server crash.
    TableCrashed,
}

impl std::fmt::Display for Transient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transient::ConnectionLost => "connection lost",
            Transient::ServerGone => "server gone away",
            Transient::Unreachable => "server unreachable",
            Transient::ServerRestarting => "server restarting",
            Transient::LockWait => "lock wait timeout",
            Transient::Deadlock => "deadlock",
            Transient::TooManyConnections => "too many connections",
            Transient::LogTableMissing => "change log missing during a restart",
            Transient::TableCrashed => "table marked crashed",
        })
    }
}

/// The transient class of a server's error `number` (with its `message`), or `None` when definitive.
pub fn classify_errno(number: u16, message: &str) -> Option<Transient> {
    Some(match number {
        errno::LOCK_WAIT_TIMEOUT => Transient::LockWait,
        errno::LOCK_DEADLOCK => Transient::Deadlock,
        errno::SERVER_SHUTDOWN | errno::CONNECTION_KILLED => Transient::ServerRestarting,
        errno::SERVER_GONE => Transient::ServerGone,
        errno::SERVER_LOST | errno::CLIENT_INTERACTION_TIMEOUT => Transient::ConnectionLost,
        errno::TOO_MANY_CONNECTIONS => Transient::TooManyConnections,
        errno::CRASHED_ON_USAGE => Transient::TableCrashed,
        // Only a log of ours: any other missing table is the job's problem, not the server's.
        errno::NO_SUCH_TABLE if names_a_change_log(message) => Transient::LogTableMissing,
        _ => return None,
    })
}

/// Whether the server's "Table 'db.t' doesn't exist" names one of our change logs.
fn names_a_change_log(message: &str) -> bool {
    let log = crate::bookkeeping::names::names("t").log;
    let suffix = log.strip_prefix('t').unwrap_or(&log);
    message
        .split('\'')
        .any(|name| name.ends_with(suffix) && name.len() > suffix.len())
}

/// The transient class of `err` (walking its chain), or `None` for a definitive failure.
pub fn classify(err: &anyhow::Error) -> Option<Transient> {
    if super::error::find(err).is_some() {
        return None;
    }
    err.chain().find_map(|cause| {
        if cause.is::<Unreachable>() {
            return Some(Transient::Unreachable);
        }
        match cause.downcast_ref::<sqlx::Error>()? {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::Protocol(_) => Some(Transient::ConnectionLost),
            e => {
                let db = e.as_database_error()?;
                classify_errno(errno::of(e)?, db.message())
            }
        }
    })
}

/// True for failures worth retrying ([`classify`] names them).
pub fn is_transient(err: &anyhow::Error) -> bool {
    classify(err).is_some()
}

/// Backoff before retry number `attempt` (0-based): 0.2 s doubling, at most 5 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_millis((200u64 << attempt.min(5)).min(5000))
}

/// How long a try must run before failing for its failure to start a new streak even without
/// a success seen (a long cut-over catch-up commits no batch).
pub const STREAK_BREAK: Duration = Duration::from_secs(10);

/// A streak of transient failures of one step: when it began and how many retries it had.
/// A success (a committed batch) ends it: the next failure retries at the shortest backoff
/// with the whole `--retry-for` budget. Without that, one fault early in a long step made
/// every later one wait the longest backoff and count against `--retry-for` from that first
/// fault.
#[derive(Debug, Default)]
pub struct Streak {
    since: Option<Instant>,
    attempt: u32,
}

impl Streak {
    /// Something committed: the next failure starts a new streak.
    pub fn succeeded(&mut self) {
        *self = Streak::default();
    }

    /// A failure at `now` of a try that ran `ran_for`: how long the streak has lasted and the
    /// backoff before the next try.
    pub fn failed(&mut self, now: Instant, ran_for: Duration) -> (Duration, Duration) {
        if ran_for >= STREAK_BREAK {
            self.succeeded();
        }
        let since = *self.since.get_or_insert(now);
        let wait = backoff(self.attempt);
        self.attempt += 1;
        (now.saturating_duration_since(since), wait)
    }
}

/// What a run stops with when a streak outlived `--retry-for`: what kept failing, for how
/// long, and for a class that outlasts a restart, what to do about it.
pub fn gave_up(class: Transient, lasted: Duration, retry_for: Duration) -> String {
    let fix = match class {
        Transient::TableCrashed => {
            ". Fix: REPAIR TABLE the table the error names (the server repairs it on open only with myisam_recover_options / aria_recover_options set)"
        }
        Transient::LogTableMissing => {
            ". Fix: if the change log the error names is really gone, `myrecode abort` the job and run it again"
        }
        _ => "",
    };
    format!(
        "gave up retrying: {class} for {:.0} s without a success, past --retry-for {} s; progress is checkpointed{fix}",
        lasted.as_secs_f64(),
        retry_for.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::EngineError;
    use anyhow::Context;

    #[test]
    fn transient_by_type_not_by_text() {
        let io = anyhow::Error::new(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        )));
        assert_eq!(classify(&io), Some(Transient::ConnectionLost));
        assert!(is_transient(&io.context("reading a batch")));
        let down = anyhow::Error::new(Unreachable("cannot reach".into()));
        assert_eq!(classify(&down), Some(Transient::Unreachable));
        // Text that merely reads like a lost connection is not one.
        assert!(!is_transient(&anyhow::anyhow!(
            "cannot reach the MySQL server: Connection refused"
        )));
        let edited = anyhow::Error::new(EngineError::JobEdited {
            table: "t".into(),
            rows: 1,
            undo: "abort",
        });
        assert!(!is_transient(&edited));
        // A definitive failure stays definitive even when a lost connection is also in its chain.
        let both = Err::<(), _>(sqlx::Error::Io(std::io::Error::other("reset")))
            .context(EngineError::ShadowGone {
                table: "t".into(),
                shadow: "t_myrecode_new".into(),
            })
            .unwrap_err();
        assert!(!is_transient(&both));
    }

    #[test]
    fn every_transient_class_by_the_servers_number() {
        use Transient::*;
        let cases: [(u16, &str, Option<Transient>); 14] = [
            (
                2013,
                "Lost connection to server during query",
                Some(ConnectionLost),
            ),
            (
                4031,
                "The client was disconnected by the server",
                Some(ConnectionLost),
            ),
            (2006, "MySQL server has gone away", Some(ServerGone)),
            (1053, "Server shutdown in progress", Some(ServerRestarting)),
            (1927, "Connection was killed", Some(ServerRestarting)),
            (1205, "Lock wait timeout exceeded", Some(LockWait)),
            (
                1213,
                "Deadlock found when trying to get lock",
                Some(Deadlock),
            ),
            (1040, "Too many connections", Some(TooManyConnections)),
            (
                1194,
                "Table 'film_text' is marked as crashed and should be repaired",
                Some(TableCrashed),
            ),
            // 1146 is transient only for a change log of ours (what a restart's repair fails).
            (
                1146,
                "Table 'sakila.film_text_myrecode_log' doesn't exist",
                Some(LogTableMissing),
            ),
            (1146, "Table 'sakila.film_text' doesn't exist", None),
            (
                1146,
                "Table 'sakila._myrecode_log' doesn't exist",
                Some(LogTableMissing),
            ),
            (1062, "Duplicate entry 'x' for key 'PRIMARY'", None),
            (1064, "You have an error in your SQL syntax", None),
        ];
        for (n, message, want) in cases {
            assert_eq!(classify_errno(n, message), want, "{n} {message}");
        }
        assert_eq!(
            classify_errno(1146, "Table 'a.b_myrecode_logs' doesn't exist"),
            None
        );
    }

    #[test]
    fn backoff_doubles_from_the_shortest_to_the_longest() {
        let waits: Vec<u64> = (0..8).map(|a| backoff(a).as_millis() as u64).collect();
        assert_eq!(waits, [200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    }

    #[test]
    fn after_a_success_the_next_failure_retries_at_the_shortest_backoff() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let mut streak = Streak::default();
        // Quick failures in a row: the backoff doubles, the streak's age grows.
        assert_eq!(streak.failed(t0, s(0)), (s(0), ms(200)));
        assert_eq!(streak.failed(t0 + s(1), s(0)), (s(1), ms(400)));
        assert_eq!(streak.failed(t0 + s(3), s(1)), (s(3), ms(800)));
        // One batch committed: the next failure, even a second later, starts afresh, and its
        // `--retry-for` counts from itself, not from t0.
        streak.succeeded();
        assert_eq!(streak.failed(t0 + s(4), ms(50)), (s(0), ms(200)));
        assert_eq!(streak.failed(t0 + s(6), s(0)), (s(2), ms(400)));
        // A try that ran long without committing (a cut-over's catch-up) also ends a streak.
        assert_eq!(streak.failed(t0 + s(70), s(60)), (s(0), ms(200)));
        // Without successes a streak grows to the longest backoff and its age passes any bound.
        for k in 1..10 {
            streak.failed(t0 + s(70 + k), s(0));
        }
        assert_eq!(streak.failed(t0 + s(200), s(0)), (s(130), ms(5000)));
    }

    #[test]
    fn giving_up_names_the_class_and_the_bound() {
        assert_eq!(
            gave_up(Transient::Unreachable, Duration::from_millis(121_400), Duration::from_secs(120)),
            "gave up retrying: server unreachable for 121 s without a success, past --retry-for 120 s; progress is checkpointed"
        );
        assert!(gave_up(Transient::TableCrashed, Duration::from_secs(200), Duration::from_secs(120))
            .ends_with("Fix: REPAIR TABLE the table the error names (the server repairs it on open only with myisam_recover_options / aria_recover_options set)"));
    }
}

//! Which failures are transient (retry with backoff, then stop with the resume command) and
//! which are definitive, decided by the error's type, never by its text.

use crate::db::connect::Unreachable;
use crate::db::errno;
use std::time::{Duration, Instant};

/// True for failures worth retrying: lost connections, restarts, deadlocks, lock wait timeouts.
pub fn is_transient(err: &anyhow::Error) -> bool {
    if super::error::find(err).is_some() {
        return false;
    }
    err.chain().any(|cause| {
        if cause.is::<Unreachable>() {
            return true;
        }
        match cause.downcast_ref::<sqlx::Error>() {
            Some(
                sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed
                | sqlx::Error::Protocol(_),
            ) => true,
            Some(e) => errno::of(e).is_some_and(|n| errno::TRANSIENT.contains(&n)),
            None => false,
        }
    })
}

/// Backoff before retry number `attempt` (0-based): 0.2 s doubling, at most 5 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_millis((200u64 << attempt.min(5)).min(5000))
}

/// How long a step must run without failing for its next failure to start a new streak
/// (full `--retry-for` budget, shortest backoff again): it made progress meanwhile.
pub const STREAK_BREAK: Duration = Duration::from_secs(10);

/// A streak of transient failures of one step: when it began and how many retries it had.
/// Without the reset, one fault early in a long step made every later one wait the longest
/// backoff and count against `--retry-for` from that first fault.
#[derive(Debug, Default)]
pub struct Streak {
    since: Option<Instant>,
    attempt: u32,
}

impl Streak {
    /// A failure at `now` of a try that ran `ran_for`: how long the streak has lasted and the
    /// backoff before the next try.
    pub fn failed(&mut self, now: Instant, ran_for: Duration) -> (Duration, Duration) {
        if ran_for >= STREAK_BREAK {
            *self = Streak::default();
        }
        let since = *self.since.get_or_insert(now);
        let wait = backoff(self.attempt);
        self.attempt += 1;
        (now.saturating_duration_since(since), wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::EngineError;
    use anyhow::Context;

    #[test]
    fn transient_by_type_not_by_text() {
        let io = anyhow::Error::new(sqlx::Error::Io(std::io::Error::other("reset")));
        assert!(is_transient(&io));
        assert!(is_transient(&io.context("reading a batch")));
        let down = anyhow::Error::new(Unreachable("cannot reach".into()));
        assert!(is_transient(&down));
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
        assert_eq!(backoff(0), Duration::from_millis(200));
        assert_eq!(backoff(10), Duration::from_millis(5000));
    }

    #[test]
    fn a_streak_ends_when_the_step_ran_long_enough_to_progress() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut streak = Streak::default();
        // Quick failures in a row: the backoff doubles, the streak's age grows.
        assert_eq!(streak.failed(t0, s(0)), (s(0), backoff(0)));
        assert_eq!(streak.failed(t0 + s(1), s(0)), (s(1), backoff(1)));
        assert_eq!(streak.failed(t0 + s(3), s(1)), (s(3), backoff(2)));
        // Then the step ran a minute before failing again: a new streak.
        assert_eq!(streak.failed(t0 + s(70), s(60)), (s(0), backoff(0)));
        assert_eq!(streak.failed(t0 + s(71), s(0)), (s(1), backoff(1)));
    }
}

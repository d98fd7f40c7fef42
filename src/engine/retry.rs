//! Which failures are transient (retry with backoff, then stop with the resume command) and
//! which are definitive, decided by the error's type, never by its text.

use crate::db::connect::Unreachable;
use crate::db::errno;
use std::time::Duration;

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
}

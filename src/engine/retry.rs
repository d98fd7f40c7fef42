//! Which failures are transient (retry with backoff, then stop with the resume command) and which are definitive.

use std::time::Duration;

/// MySQL/MariaDB error numbers that a retry can outlive.
const TRANSIENT_CODES: &[u16] = &[
    1205, // lock wait timeout
    1213, // deadlock
    1053, // server shutdown in progress
    1927, // connection killed (MariaDB)
    2006, // server has gone away
    2013, // lost connection during query
    4031, // disconnected by the server (MySQL 8)
    1040, // too many connections
];

/// True for failures worth retrying: lost connections, restarts, deadlocks, lock wait timeouts.
pub fn is_transient(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|cause| match cause.downcast_ref::<sqlx::Error>() {
            Some(
                sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed,
            ) => true,
            Some(sqlx::Error::Protocol(_)) => true,
            Some(e) => e
                .as_database_error()
                .and_then(|d| {
                    d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
                        .map(|m| m.number())
                })
                .is_some_and(|n| TRANSIENT_CODES.contains(&n)),
            None => {
                let text = cause.to_string();
                text.contains("cannot reach the MySQL server")
                    || text.contains("Connection refused")
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

    #[test]
    fn io_errors_are_transient_and_others_not() {
        let io = anyhow::Error::new(sqlx::Error::Io(std::io::Error::other("reset")));
        assert!(is_transient(&io));
        assert!(!is_transient(&anyhow::anyhow!("table has no key")));
        assert_eq!(backoff(0), Duration::from_millis(200));
        assert_eq!(backoff(10), Duration::from_millis(5000));
    }
}

//! What one run shares with every step it takes: the primary's settings, the job and its id,
//! how long it may retry, the stop flag, the pacer and where its events go. A step takes one
//! `&mut Session` instead of the same six arguments down every call; the connection a step
//! works on stays apart, since a transient failure replaces it between tries.
//!
//! The runner builds it once the run may write (`runner::execute`); the in-place strategy
//! takes it whole, and the copy strategy may (it still takes the fields one by one).

use super::events::Committed;
use super::throttle::Pacer;
use crate::db::connect::ConnectionConfig;
use crate::job::model::Job;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What a run shares with each of its steps.
pub struct Session<'a> {
    /// The primary, in the job's schema: what a step opens its other connections to (reading
    /// ahead, writing, the cut-over's), and what a retry connects to again.
    pub cfg: ConnectionConfig,
    /// The job being run.
    pub job: &'a Job,
    /// The name its checkpoint, backup and quarantine rows are kept under.
    pub job_id: &'a str,
    /// How long transient failures may last before the run stops (resumably).
    pub retry_for: Duration,
    /// Set on a signal: stop after the current batch, resumably.
    pub stop: &'a AtomicBool,
    /// The operator's commands and the throttling, asked between batches.
    pub pacer: Pacer<'a>,
    /// Where the run's events go; it notes each committed batch, which ends a streak of
    /// retries.
    pub events: Committed<'a>,
}

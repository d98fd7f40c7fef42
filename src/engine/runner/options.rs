//! What a run is asked to do: write or only rehearse, under which name, retrying how long.

use std::time::Duration;

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Write (otherwise only rehearse).
    pub execute: bool,
    /// Name the checkpoint, backup and quarantine rows are kept under.
    pub job_id: String,
    /// How long transient failures may last before the run stops (resumably).
    pub retry_for: Duration,
}

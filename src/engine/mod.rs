//! The engine: runs a job's tables in resumable batches, verifies, rolls back.
//!
//! Failures: lost connections, server restarts, deadlocks and lock wait timeouts are
//! transient ([`retry`]): the batch rolls back, the run reconnects with backoff and
//! resumes from the checkpoint. Everything else (a missing table, a missing
//! privilege, a job edited while checkpointed) is definitive: the run stops with
//! an error that says how to proceed, and its progress stays checkpointed.

pub mod checkpoint;
pub mod copy;
pub mod inplace;
pub mod keycodec;
pub mod pace;
pub mod recode;
pub mod retry;
pub mod runner;
pub mod servercodec;
pub mod verify;

//! The engine: runs a job's tables in resumable batches, verifies, rolls back.
//!
//! Laid out by role (see `README.md` here): [`plan`] what runs; [`batch`] the one batch loop
//! both strategies run, with [`read`] (reading by key), [`pace`] (commands and throttling,
//! on [`replicas`]' lag among others), [`priors`] and [`quarantine`]; [`inplace`] and
//! [`copy`] the two strategies; [`runner`]
//! drives a job through them; [`events`] is all the engine says; [`error`] and [`retry`]
//! tell definitive failures from transient ones.

pub mod batch;
pub mod columns;
pub mod copy;
pub mod decisions;
pub mod error;
pub mod events;
pub mod inplace;
pub mod pace;
pub mod plan;
pub mod priors;
pub mod read;
pub mod rehearsal;
pub mod replicas;
pub mod retry;
pub mod runner;
pub mod servercodec;
pub mod verify;

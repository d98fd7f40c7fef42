//! The engine: runs a job's tables in resumable batches, verifies, rolls back.
//!
//! Laid out by role (see `README.md` here): [`plans`] the job's tables planned against the
//! live schema, each a [`table_plan`]; [`batch`] the one batch loop both strategies run, with
//! [`read`] (reading by key), [`control`] (the operator's commands), [`throttle`] (waiting
//! on load and on [`replicas`]' lag) and [`priors`]; [`inplace`] and [`copy`] the two
//! strategies; [`runner`] drives a job through them (its steps sharing one [`session`]), or
//! rehearses it ([`rehearsal_text`]); [`events`] is all the engine says; [`error`] and
//! [`retry`] tell definitive failures from transient ones; [`test_hooks`] the pauses tests
//! ask for.

pub mod batch;
pub mod bridge;
pub mod collisions;
pub mod columns;
pub mod control;
pub mod copy;
pub mod decisions;
pub mod error;
pub mod events;
pub mod inplace;
pub mod job_lock;
pub mod plans;
pub mod priors;
pub mod privileges;
pub mod read;
pub mod rehearsal_text;
pub mod replicas;
pub mod retry;
pub mod revert;
pub mod runner;
pub mod servercodec;
pub mod session;
pub mod table_plan;
pub mod test_hooks;
pub mod throttle;
pub mod verify;

//! Cut-over groups against a real server: two groups swapped at two instants under a
//! writer (`swap`), the same through SIGKILLs (`kill`), and the refusal rules (`refusal`).
//! `app` (the application and its schema) and `run` (driving `myrecode`) serve the
//! replicas and legacy-application tests too.

pub mod app;
pub mod run;

mod kill;
mod refusal;
mod swap;

//! The integration tests: one test crate, a module per capability (as ripgrep's
//! `tests/tests.rs`), so the library and its dependencies are linked into one test binary
//! instead of one per file, and helpers are ordinary modules compiled once.
//!
//! Every test runs in this one process, beside the others (two at a time on two cores):
//! the throwaway server from `ThrowawayServer::shared()` serves them all, each in a database
//! of its own (`test_database`), and a test that reads or drives the server's global state
//! (`Threads_running`, restarts, server options) runs on a server of its own.

mod common;

mod bad_input;
mod cascades;
mod cmdline;
mod codec;
mod copy;
mod copy_choices;
mod credentials;
mod cutover_guard;
mod demo;
mod detect;
mod engine_errors;
mod examples;
mod faults;
mod fleet;
mod fleet_html;
mod fleet_run;
mod groups;
mod harness;
mod hostile_job;
mod hostile_rehearse;
mod html_report;
mod inventory;
mod job_check;
mod key_recoded;
mod keyless;
mod legacy_app;
mod legacy_php;
mod myisam_index;
mod nonstrict;
mod owned_names;
mod package;
mod prefix_key;
mod refusal;
mod rehearse;
mod replicas;
mod resume;
mod retry;
mod revert;
mod review;
mod run;
mod scan;
mod schema;
mod status;
mod tls;
mod torn_cutover;
mod undecided;
mod whole_schema;

//! A fleet: many servers, many schemas, one scan and one roll-up report (issue 46).
//!
//! Floors inside, imports running downward only:
//!
//! - `file` (the fleet file: parsing and validation, pure) and `pattern` (which schemas a
//!   server's names and globs select, pure);
//! - `usage` (whether a table looks used: the counters' SQL and the classification, pure)
//!   and `snapshot` (reading those counters from a server, the I/O);
//! - `rollup` (per-schema scan reports and usage into one report, pure) and `render`
//!   (terminal, JSON, Markdown) and `html` (one self-contained page);
//! - `store` (where each report lives under `--out`, what counts as complete) and `scan`
//!   (the run: every schema scanned by `crate::scan`, within each server's limit);
//! - `pace` (the measured pace the estimates use), `jobs` (where each job lives under
//!   `--jobs`, and the single run that runs it) and `plan` (one job per schema by
//!   `crate::job::plan`, and the fleet's summary), all pure;
//! - `waves` (which job in which wave, pure), `drive` (the waves run within each server's
//!   limit, a failure stopping its wave; pure over a launcher) and `launch` (the launcher:
//!   a child `myrecode run` per job);
//! - `watch` (a job's state by `crate::status`) and `overview` (`fleet status`'s lines and
//!   roll-up, pure).
//!
//! Only `crate::cli` imports this module.

pub mod drive;
pub mod file;
pub mod html;
pub mod jobs;
pub mod launch;
pub mod overview;
pub mod pace;
pub mod pattern;
pub mod plan;
pub mod render;
pub mod rollup;
pub mod scan;
pub mod snapshot;
pub mod store;
pub mod usage;
pub mod watch;
pub mod waves;

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
//!   (the run: every schema scanned by `crate::scan`, within each server's limit).
//!
//! Only `crate::cli` imports this module.

pub mod file;
pub mod html;
pub mod pattern;
pub mod render;
pub mod rollup;
pub mod scan;
pub mod snapshot;
pub mod store;
pub mod usage;

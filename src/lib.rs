//! myrecode: find legacy-encoded text in MySQL/MariaDB and recode it to UTF-8.
//!
//! The library holds every capability; `main.rs` only wires the CLI to it.
//! Pure logic (codecs, detection, planning) does no I/O; `db` and the read
//! functions of `inventory` are the only code that talks to a server.

pub mod bookkeeping;
pub mod cli;
pub mod codec;
pub mod db;
pub mod demo;
pub mod detect;
pub mod engine;
pub mod inventory;
pub mod job;
pub mod recode;
pub mod rehearse;
pub mod report;
pub mod review;
pub mod scan;
pub mod status;
#[cfg(feature = "testkit")]
pub mod testkit;

//! myrecode: find legacy-encoded text in MySQL/MariaDB and recode it to UTF-8.
//!
//! The library holds every capability; `main.rs` only wires the CLI to it. Its modules
//! form floors, and imports run only downward:
//!
//! 1. `codec` (our codecs) and `db` (connecting, quoting, raw-byte reads, SQL text, the
//!    throwaway server `demo` and `rehearse` run on);
//! 2. `detect` (per-value detection, pure) and `inventory` (the catalog: tables, columns,
//!    keys, views, routines, events);
//! 3. `recode` (what a value or a piece of SQL text becomes, pure) and `bookkeeping` (the
//!    tool's own `_myrecode_*` tables and names);
//! 4. `scan` (what each column holds) and `review` (the values left undecided);
//! 5. `job` (the job model, its checks and refusal rules, written from a scan);
//! 6. `engine` (runs a job: in place, or by an online copy and its cut-over);
//! 7. `status`, `rehearse`, `report`, `demo`, `fleet` (many servers at once; only `cli`
//!    imports it), and `cli` on top.
//!
//! Pure logic (codecs, detection, recoding, planning, refusal rules, SQL building) does no
//! I/O; reading and writing a server sits at the edges of each floor (`db`, `inventory`'s
//! readers, `bookkeeping`, the engine's runners). `testkit` (behind the feature of the same
//! name) holds what only tests, examples and benchmarks need.

pub mod bookkeeping;
pub mod cli;
pub mod clients;
pub mod codec;
pub mod db;
pub mod demo;
pub mod detect;
pub mod engine;
pub mod fleet;
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

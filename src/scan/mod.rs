//! Read-only scan: raw bytes by keyset pagination, detection per value, aggregation per column.
//!
//! `read` is the I/O; `accumulate` and `target` are pure and tested without a server.

pub mod accumulate;
pub mod collation;
pub mod index_risks;
pub mod interrupted;
pub mod model;
pub mod no_text;
pub mod read;
pub mod target;

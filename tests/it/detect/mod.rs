//! The detector: the command line, whole columns, the development and held-out corpora,
//! the fast path against the full decision, and property tests.

mod cli;
mod columns;
mod corpus;
mod fast;
mod heldout;
mod mixed;
mod props;
mod run_as_scan;

//! What the tests, examples and benchmarks need beside the tool, kept out of the shipped
//! library (feature `testkit`, which the crate's own dev-dependency on itself turns on):
//! replica sets and a fault-injecting proxy around throwaway servers, and the detector's
//! evaluation harness over labelled corpora.
//!
//! The throwaway server itself stays in [`crate::db::throwaway`]: `demo` and `rehearse`
//! run on it.

pub mod eval;
pub mod faultproxy;
pub mod replicaset;

//! The review step: what detection left undecided, shown with every reading side by side and
//! the column's verdict, and the DBA's decisions on it, which the next run applies.
//!
//! [`readings`] and [`decisions`] and [`render`] are pure; [`list`] reads the job's quarantine
//! and column priors from the server; the engine applies decisions in
//! [`crate::engine::decisions`].

pub mod decisions;
pub mod list;
pub mod readings;
pub mod render;

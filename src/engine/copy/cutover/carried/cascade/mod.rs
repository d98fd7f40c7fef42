//! The logging of cascaded rows into the copies.

pub mod chains;
pub mod logging;
pub mod plan;
pub mod sql;

//! The logging of rows that cascading foreign-key actions change in the copies: the chains
//! followed, the triggers' SQL, the plan of each group's cut-over, and the triggers on the
//! server (see `../README.md`).

pub mod chains;
pub mod logging;
pub mod plan;
pub mod sql;

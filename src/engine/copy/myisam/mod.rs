//! Copied tables without transactions (MyISAM, Aria) across faults.

pub mod faults;
pub mod index_repair;

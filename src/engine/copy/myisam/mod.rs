//! Copied tables without transactions (MyISAM, Aria) across faults (see `README.md` here).

pub mod engines;
pub mod faults;
pub mod index_repair;
pub mod restarts;

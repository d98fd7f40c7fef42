//! A group's cut-over: its tables locked, drained and renamed at once, with what is carried
//! across (see `README.md` here).

pub mod carried;
pub mod finish;
pub mod group;
pub mod guard;
pub mod leftover;
pub mod rebuild;
pub mod rebuild_sql;
pub mod reopen;
pub mod swap;
pub mod swap_sql;
pub mod swapped;

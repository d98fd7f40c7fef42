//! A copy's set-up: the shadow with the target definitions, the change log and its triggers
//! (see `README.md` here).

pub mod back_log_sql;
pub mod change_log;
pub mod ownership;
pub mod shadow;
pub mod shadow_sql;
pub mod sql;

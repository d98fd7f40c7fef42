//! What a cut-over carries across besides the rows.

pub mod cascade;
pub mod foreign;
pub mod foreign_sql;
pub mod objects;
pub mod objects_sql;
pub mod own_triggers;
pub mod own_triggers_sql;
pub mod under_lock;

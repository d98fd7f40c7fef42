//! What a cut-over carries across besides the rows: one `class::Carried` per class,
//! planned, recorded, applied, settled (see `README.md` here).

pub mod after_last;
pub mod back_log;
pub mod bridge;
pub mod cascade;
pub mod class;
pub mod foreign;
pub mod foreign_sql;
pub mod objects;
pub mod objects_sql;
pub mod own_triggers;
pub mod own_triggers_sql;
pub mod schema_default;
pub mod under_lock;

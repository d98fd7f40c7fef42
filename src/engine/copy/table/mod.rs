//! One table's copy: its rows decided, written, checked and replayed, batch by batch.

pub mod batches;
pub mod check_sql;
pub mod checker;
pub mod checksum_sql;
pub mod context;
pub mod copier;
pub mod decide;
pub mod expect;
pub mod named_values;
pub mod parallel;
pub mod replay;
pub mod watermark;
pub mod write_sql;

//! One table's copy, batch by batch: its rows decided, written, checked and replayed (see
//! `README.md` here).

pub mod batches;
pub mod check_again;
pub mod check_sql;
pub mod checker;
pub mod checksum_sql;
pub mod context;
pub mod copier;
pub mod decide;
pub mod expect;
pub mod job_column;
pub mod locked_read;
pub mod named_values;
pub mod parallel;
pub mod read_ahead;
pub mod read_sql;
pub mod ready;
pub mod recoded;
pub mod replay;
pub mod stage;
pub mod trailing;
pub mod watermark;
pub mod write;
pub mod write_sql;

//! The tool's own tables in the target schema (`_myrecode_*`) and the names of what a copy
//! creates beside a table: checkpoint, backup, quarantine, control, the decisions a copy remembers, the packed keys and the
//! column priors they hold. Below `review`, `status`, `job` and `engine`, which all read them.

pub mod checkpoint;
pub mod control_table;
pub mod decided;
pub mod keycodec;
pub mod names;
pub mod ownership;
pub mod priors;
pub mod quarantine;
pub mod tables;

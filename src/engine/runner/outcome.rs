//! How a run ended, when it did not fail: rehearsed, or each table's last checkpoint.

use crate::bookkeeping::checkpoint;

/// How a run ended, when it did not fail.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Rehearsed (nothing written); `refused` tables would stop `--execute`.
    Rehearsed {
        /// How many of the job's tables are refused.
        refused: usize,
    },
    /// Executed: each table run, in order, until done or stopped.
    Ran(Vec<TableSummary>),
}

/// Per-table result of a run.
#[derive(Debug, Clone)]
pub struct TableSummary {
    /// Table name.
    pub table: String,
    /// Final state.
    pub state: checkpoint::State,
    /// Whether it finished.
    pub done: bool,
}

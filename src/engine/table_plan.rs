//! What the engine runs: a table's plan (key, columns, batch settings), as both strategies read it, and how a table's run ended.

use crate::db::keyset::KeyColumn;
use crate::detect::Label;
use crate::recode::value::Source;
use std::time::Duration;

/// One column to recode.
#[derive(Debug, Clone)]
pub struct ColumnPlan {
    /// Column name.
    pub name: String,
    /// Where its encoding comes from.
    pub source: Source,
    /// The job's `undecidable: use <label>`: how a value no reading decided is read (`None`:
    /// it is listed and waits for a decision).
    pub fallback: Option<Label>,
    /// Whether the column is binary (values are written as bytes, not text).
    pub binary: bool,
    /// Full column definition to end with (the copy strategy's shadow gets it).
    pub target: String,
}

/// One table to recode, in place or by online copy.
#[derive(Debug, Clone)]
pub struct TablePlan {
    /// Schema.
    pub schema: String,
    /// Table.
    pub table: String,
    /// In place, or by online copy ([`super::copy`]).
    pub strategy: crate::job::model::Strategy,
    /// Paging key; empty for a copy rebuilt under the cut-over's lock (no usable key, or
    /// one the job recodes in a label the server lacks: [`TablePlan::recoded_key`]).
    pub key: Vec<KeyColumn>,
    /// Copy: the columns of the table's key that the job recodes: with a `key`, the shadow
    /// finds each row by the original's key read in its legacy charset; without one, the
    /// table is rebuilt under the cut-over's lock, each distinct value decided once. Empty
    /// otherwise.
    pub recoded_key: Vec<String>,
    /// Columns to recode.
    pub columns: Vec<ColumnPlan>,
    /// What the job says about the table, fingerprinted to spot edits between runs.
    pub fingerprint: String,
    /// First batch size.
    pub batch_size: usize,
    /// Batch time the size is tuned toward.
    pub target_batch_time: Duration,
    /// Pause between batches.
    pub pause: Duration,
    /// Confidence a detected label needs.
    pub threshold: f32,
    /// Copy strategy: wait for `myrecode cutover` before swapping (`cutover: manual`).
    pub manual_cutover: bool,
    /// Copy strategy: the engine the new table gets (the job's `engine:`); `None`: the table's own.
    pub engine: Option<String>,
}

/// How a table's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableOutcome {
    /// Every row done (now or in an earlier run).
    Done,
    /// Stopped on request after a committed batch.
    Interrupted,
    /// The operator ran `myrecode abort`: stopped, and a copy's objects removed.
    Aborted,
}

//! Where a copy stands, and the sizes its steps and its readiness for the cut-over are
//! judged by: read by every phase of the copy and by `status`.

use crate::bookkeeping::checkpoint::State;
use crate::engine::batch;

/// Where a copy is; stored by name in its checkpoint, so a rerun resumes in the same phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Copying rows in key order (replaying the log between batches).
    Copying,
    /// Every row copied; comparing the table with the shadow in key order.
    Checking,
    /// Copied and checked; replaying the log until it is drained, then cutting over.
    Replaying,
    /// Swapped; the original is kept as `<t>_myrecode_old`.
    Done,
    /// Swapped back by `revert`: the original is the table again, the recoded one kept as
    /// `<t>_myrecode_new` until `cleanup`.
    Reverted,
}

impl Phase {
    /// The name kept in the checkpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Copying => "copying",
            Phase::Checking => "checking",
            Phase::Replaying => "replaying",
            Phase::Done => "done",
            Phase::Reverted => "reverted",
        }
    }

    /// The phase a checkpoint names; a checkpoint from before phases were kept is replaying
    /// (its copy and check were done), as it always was read.
    pub fn of(state: &State) -> Phase {
        match state.phase.as_str() {
            "copying" => Phase::Copying,
            "checking" => Phase::Checking,
            "done" => Phase::Done,
            "reverted" => Phase::Reverted,
            _ => Phase::Replaying,
        }
    }
}

/// The most rows a copy batch takes per stream with `writers` read-committed writers (none:
/// the copy writes on the main connection, its reads locking what they copy). Pure.
pub(crate) fn most_rows(writers: usize) -> usize {
    match writers {
        0 => batch::MOST_ROWS,
        streams => STEP_ROWS / streams,
    }
}

/// The log is "nearly drained" (the table is ready for the cut-over) below this many rows;
/// `status` judges readiness by the same number.
pub const DRAIN_BEFORE_CUTOVER: i64 = 50;

/// Rows a copy step takes at most, shared among its streams, where it locks no row the
/// application writes ([`crate::engine::batch::Batches::most_rows`]). One stream on lock mode 1 under a writer,
/// 1M rows, 3 alternating pairs by hand: 6.6-7.2 s at 40,000 rows a step against 6.8-7.3 s
/// at 20,000 (fewer steps' gaps; 2.5%, inside the machine's noise), peak RSS 73-76 MiB
/// against 59-61.
pub const STEP_ROWS: usize = 40_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_takes_twice_an_in_place_batch_only_where_its_reads_lock_nothing() {
        assert_eq!(
            most_rows(0),
            batch::MOST_ROWS,
            "reads that lock what they copy"
        );
        assert_eq!(most_rows(1), STEP_ROWS);
        assert_eq!(most_rows(2) * 2, STEP_ROWS, "shared among the streams");
        assert_eq!(STEP_ROWS, 2 * batch::MOST_ROWS);
    }
}

//! The engine's definitive failures, as types: each names what happened and carries its fix.
//! Anything not listed here is judged by [`super::retry`] from the driver's own error type.

use thiserror::Error;

/// A failure a retry cannot outlive: the run stops, its progress checkpointed, and says how to go on.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The job names what the schema does not hold (a table, a column, a key, a label):
    /// found before anything is written, so there is nothing to resume.
    #[error("{0}")]
    JobMismatch(String),
    /// Another session holds the job's lock: a run of it is going on (or a killed run's
    /// cut-over guard is settling). Nothing was written.
    #[error(
        "another run of job '{job}' on schema '{schema}' is going on (it holds the job's lock): one run of a job writes at a time. \
         Fix: let it end (`myrecode status` shows it), or stop it (Ctrl-C, or `myrecode pause`) before running again"
    )]
    JobBusy {
        /// The job's schema.
        schema: String,
        /// The job's id.
        job: String,
    },
    /// The refusal rules ([`crate::job::refusal`]) said no before anything was written.
    #[error(transparent)]
    Refused(#[from] crate::job::refusal::Refused),
    /// The job file changed for a table since its run began.
    #[error(
        "the job changed for table '{table}' since its run began (checkpoint at {rows} rows). \
         Fix: restore the job file as it was and run again to finish, or {undo}"
    )]
    JobEdited {
        /// Table.
        table: String,
        /// Rows done at the checkpoint.
        rows: u64,
        /// How to start over for this strategy.
        undo: &'static str,
    },
    /// A copy's cut-over waits for values no reading decided.
    #[error(
        "the cut-over of {tables} waits: {count} value(s) no reading decided are listed (the shadow holds \
         the server's reading of their bytes, not their text). Nothing was swapped. {fix}"
    )]
    Undecided {
        /// The tables holding them.
        tables: String,
        /// How many.
        count: u64,
        /// How to decide them ([`crate::engine::copy::undecided::FIX`]).
        fix: &'static str,
    },
    /// Two rows become equal on a unique index once recoded.
    #[error(
        "copying rows of '{table}': two rows become equal on a unique index once recoded ({detail}). \
         Nothing is lost: the batch was rolled back. Fix: make the values distinct in '{table}', or make that index non-unique for the job"
    )]
    UniqueCollision {
        /// Table.
        table: String,
        /// The server's message (which index, which value).
        detail: String,
    },
    /// A value is longer once recoded than the job's `target:` for its column allows.
    #[error(
        "copying rows of '{table}': a value is longer than its column's `target:` allows ({detail}). \
         Nothing is lost: the batch was rolled back. Fix: widen that column's `target:` in the job \
         (`myrecode plan --check JOB --report SCAN` names the longest value each column holds once recoded), then run again"
    )]
    TargetTooShort {
        /// Table.
        table: String,
        /// The server's message (which column).
        detail: String,
    },
    /// A value is longer once recoded in place than its column holds (a binary column: UTF-8
    /// takes more bytes than the legacy text did).
    #[error(
        "recoding rows of '{table}' in place: a value is longer once recoded than column '{column}' holds ({detail}). \
         Nothing is lost: the batch was rolled back. Fix: widen the column first (ALTER TABLE … MODIFY, e.g. to BLOB), \
         or give the table `strategy: copy` with a wider `target:` (`myrecode plan --check JOB --report SCAN` names the \
         longest value each column holds once recoded), then run again"
    )]
    ColumnTooShort {
        /// Table.
        table: String,
        /// Column.
        column: String,
        /// The server's message.
        detail: String,
    },
    /// With the job's targets an index or the row would be too large.
    #[error(
        "table '{table}': with the job's targets an index or the row would be too large ({detail}). Nothing was changed. \
         Fix: ALTER TABLE {quoted} ROW_FORMAT=DYNAMIC, or give the index a prefix, then scan and plan again \
         (`myrecode plan --check` shows which index)"
    )]
    TooLarge {
        /// Table.
        table: String,
        /// The table, quoted for the fix.
        quoted: String,
        /// The server's message.
        detail: String,
    },
    /// The table was copied by an earlier job and its original is still kept.
    #[error(
        "table '{table}' was already copied once: its original is kept as {old} (or a table of yours has that name). \
         Fix: `myrecode cleanup` the earlier job (or drop or rename {old}) once you no longer need it for rollback, then run again"
    )]
    AlreadyCopied {
        /// Table.
        table: String,
        /// The kept original.
        old: String,
    },
    /// A name the tool needs for its own object is taken by something it did not create.
    #[error(
        "{kind} {name} exists and was not created by myrecode ({purpose}). Nothing was changed. \
         Fix: rename it (or drop it if it is not needed), or leave {owner} out of the job, then run again"
    )]
    NotOurs {
        /// What it is: `table` or `trigger`.
        kind: &'static str,
        /// Its name, quoted.
        name: String,
        /// What myrecode would use the name for.
        purpose: String,
        /// What to leave out of the job instead: a table, or `nothing`.
        owner: String,
    },
    /// The shadow went missing while the copy was in progress.
    #[error(
        "the shadow table {shadow} of '{table}' is gone while its copy was in progress. \
         Fix: `myrecode abort` the job and run again to start the copy afresh"
    )]
    ShadowGone {
        /// Table.
        table: String,
        /// The missing shadow.
        shadow: String,
    },
    /// Both the shadow and a kept original exist: two copies of one table met.
    #[error(
        "both {shadow} and {old} exist beside '{table}': this table was copied before. \
         Fix: drop the one you do not need (`myrecode cleanup` drops kept originals), then run again"
    )]
    ShadowAndOriginal {
        /// Table.
        table: String,
        /// The shadow.
        shadow: String,
        /// The kept original.
        old: String,
    },
    /// A table holds the name the cut-over's sentry needs and is not ours.
    #[error("{old} exists and is not our sentry: refusing to cut over. Fix: drop or rename it, then run again")]
    NotOurSentry {
        /// The name taken.
        old: String,
    },
    /// Writes reached the original after the cut-over drained its log: the swap happened,
    /// and those writes are on the old side only.
    #[error(
        "cut-over of '{table}': {left} write(s) reached the original after the drain; \
         their keys are in {log} and their rows in {old}. Fix: copy those rows into '{table}' by hand, then DELETE FROM {log} and run again"
    )]
    CutoverAmbiguous {
        /// Table.
        table: String,
        /// Log rows left.
        left: i64,
        /// The change log.
        log: String,
        /// The kept original.
        old: String,
    },
    /// A rename left queued by an earlier run would not go away.
    #[error("a cut-over rename left by an earlier run is still queued on schema '{schema}'. Fix: KILL it (SHOW PROCESSLIST) and run again")]
    RenameLeftQueued {
        /// Schema.
        schema: String,
    },
    /// The cascading actions from one table reach the job's copied tables by more chains than
    /// one trigger logs ([`crate::engine::copy::cutover::carried::cascade::chains::MAX_CHAINS`]).
    #[error(
        "an {event} on '{table}' cascades into the job's copied tables by more than {limit} chains of foreign keys \
         (cycles of ON DELETE CASCADE through several tables multiply them): this build logs at most {limit}, and nothing was copied. \
         Fix: make one constraint of the cycle RESTRICT for the job's run and restore it after the cut-over, \
         or recode these tables with an offline ALTER TABLE in a maintenance window"
    )]
    CascadeChains {
        /// The table at the head of the chains.
        table: String,
        /// `UPDATE` or `DELETE`.
        event: &'static str,
        /// The most chains one trigger logs.
        limit: usize,
    },
    /// A table's rows cannot be read by its key: a MyISAM or Aria table's index out of step
    /// with its rows after a server crash, which the server repairs on open only once the
    /// table is marked crashed (seen under the fault tests: 1032 on every rerun). The run
    /// checks and repairs such a table itself ([`super::copy::myisam::index_repair`]); this is its stop when
    /// its check finds nothing to repair or its repair does not end in OK.
    #[error(
        "table '{table}': the server cannot read its rows by key ({detail}): a MyISAM or Aria table's index \
         is out of step with its rows after a crash, and the run's CHECK TABLE and REPAIR TABLE did not mend it. \
         Nothing was lost; progress is checkpointed. Fix: CHECK TABLE {quoted} EXTENDED, then REPAIR TABLE {quoted} EXTENDED, and run again"
    )]
    IndexOutOfStep {
        /// Table.
        table: String,
        /// The table, quoted for the fix.
        quoted: String,
        /// The server's message.
        detail: String,
    },
    /// `cleanup` asked of a copy still in progress.
    #[error("table '{table}' is still being copied: nothing to clean up yet. Fix: let the run finish (or `myrecode abort` it)")]
    StillCopying {
        /// Table.
        table: String,
    },
}

/// [`EngineError::IndexOutOfStep`] when `err` is the server saying a row its index names is
/// not there (1032) or the index file is broken (1034, 126), for `schema`.`table`.
pub fn index_out_of_step(err: &sqlx::Error, schema: &str, table: &str) -> Option<EngineError> {
    let message = err.as_database_error()?.message();
    out_of_step(crate::db::errno::of(err)?, message, schema, table)
}

/// [`index_out_of_step`] from the server's error number and message.
fn out_of_step(number: u16, message: &str, schema: &str, table: &str) -> Option<EngineError> {
    use crate::db::errno::{INDEX_CORRUPT, KEY_NOT_FOUND, NOT_KEYFILE};
    matches!(number, KEY_NOT_FOUND | NOT_KEYFILE | INDEX_CORRUPT).then(|| {
        EngineError::IndexOutOfStep {
            table: table.to_owned(),
            quoted: crate::db::quote::table(schema, table),
            detail: message.to_owned(),
        }
    })
}

/// The engine error in `err`'s chain, if any.
pub fn find(err: &anyhow::Error) -> Option<&EngineError> {
    // A context of type EngineError is found by `downcast_ref`, not by walking the chain.
    err.downcast_ref::<EngineError>()
        .or_else(|| err.chain().find_map(|c| c.downcast_ref::<EngineError>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_not_found_names_the_table_and_the_repair() {
        let e = out_of_step(
            1032,
            "Can't find record in 'film_text'",
            "shop",
            "film_text",
        )
        .expect("1032 is an index out of step");
        let text = e.to_string();
        assert!(text.starts_with("table 'film_text': the server cannot read its rows by key (Can't find record in 'film_text')"), "{text}");
        assert!(text.ends_with("Fix: CHECK TABLE `shop`.`film_text` EXTENDED, then REPAIR TABLE `shop`.`film_text` EXTENDED, and run again"), "{text}");
        assert!(out_of_step(1034, "Incorrect key file", "s", "t").is_some());
        assert!(out_of_step(1213, "Deadlock found", "s", "t").is_none());
    }
}

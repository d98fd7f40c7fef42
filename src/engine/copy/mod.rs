//! Online copy of one table into a shadow table with the job's target column definitions, recoding on the way.
//!
//! The flow (pt-online-schema-change's, with the recoding inside the copy path):
//! 1. `<t>_myrecode_new` is created `LIKE` the table and given by one `ALTER` what it is in
//!    UTF-8 ([`shadow_sql`]: the job's targets, generated columns and CHECKs with their texts
//!    recoded, the table's COMMENT and default charset); `<t>_myrecode_log` receives the key of every row the application changes,
//!    written by three `AFTER` triggers on the table, created together under one brief
//!    `LOCK TABLES … WRITE`.
//! 2. Copy, in key order, in batches of one transaction each. Each batch is read (keys and
//!    job columns, no locks) and decided with our detector and codecs on a blocking thread
//!    while the batch before it is written; then one `INSERT INTO new SELECT … FROM t
//!    LEFT JOIN staged` writes it. A value whose decision the server's own `CONVERT` from
//!    the column's main legacy charset reproduces byte for byte (proven against this server
//!    at job start, [`super::servercodec`]) is converted by the server, as `ALTER TABLE`
//!    would; only the others (a KOI8-R row in a cp1251 column, UTF-8 already, ISO-8859-5,
//!    TCVN3, an undecidable value, which keeps its reversible latin1 reading and is
//!    quarantined) are staged in a session temporary table. A row the application changed
//!    after it was read is in the change log and is replayed after its batch; a row whose
//!    log entry was already replayed since is read again, locked, and decided afresh. The
//!    checkpoint advances in the batch's transaction.
//! 3. Check: every row of the table is compared with the shadow (other columns equal, job
//!    columns the server's conversion or a lossless reading of the stored bytes: a label's
//!    round trip gives them back). It trails the copy one batch behind on a connection of
//!    its own and finishes after it. A batch is proven first by the copy's own decisions
//!    ([`expect`]: the shadow's key and job values summed against what the copy decided,
//!    the other columns summed on both sides, rows changed since left to the replay); where
//!    that fails or cannot tell, the server compares, and only rows that differ from the
//!    column's default conversion travel to be judged here. A difference (a write since the
//!    copy, or a miss) is queued in the change log for replay.
//! 4. Replay: logged keys in log order, a chunk per transaction: the rows are re-read
//!    (locked), deleted from the shadow and copied and recoded again if they still exist;
//!    exactly the log rows read are removed. Replays run between copy batches and until
//!    the log is drained; with `cutover: manual` they go on until `myrecode cutover`. While
//!    the copy runs, an integer key past the last row it has read is only taken off the log:
//!    the copy reads that row later as it stands; one it has read ahead but not copied is
//!    left in the log until the step that copies it is done ([`watermark`]).
//! 5. The cut-over of each group of the job (the whole job unless it names groups;
//!    [`group`], [`cutover`]), gh-ost's atomic form widened to every table of the group,
//!    which works on MariaDB (it refuses `RENAME TABLE` under `LOCK TABLES`, error 1192) and
//!    MySQL alike: a sentry per table takes the name `<t>_myrecode_old`; a lock connection
//!    takes `LOCK TABLES` over every table of the group with its shadow, sentry and log and
//!    the bookkeeping tables, drains every log, carries each `AUTO_INCREMENT` over, moves the
//!    foreign keys ([`foreign`]) and the logging of cascades ([`cascade`]); a second
//!    connection issues one `RENAME TABLE` of the gate and every pair, which queues; once the server shows it waiting, the lock
//!    connection drops the sentries and unlocks, and the rename runs before every queued
//!    write. Moves the application would see (a child outside the group constrained by a
//!    shadow, a table's own triggers moved) wait until the rename is queued, and the drained
//!    logs are dropped first, the rename bringing spares back as the logs: a kill between
//!    them and the rename leaves the tables refusing writes until a run settles the moves,
//!    never taking them half-moved (engine README: closed while half-moved). The gate (a table every change-log trigger names, sorting before every name)
//!    is the rename's first lock: it holds it before waiting for any table, so a write the
//!    unlock releases on any table waits for the rename (a write already holding its table
//!    is the metadata-lock deadlock check's victim, and an autocommit statement retries by
//!    itself). Should the lock connection die before the drain is complete, the sentries are
//!    still there and the rename fails: nothing is swapped early, and all tables of the
//!    group or none are swapped. The shadow and sentry are named with a suffix so they sort *after* `t`.
//!    The triggers (now on `old`) are dropped; `old` is kept for rollback until
//!    `myrecode cleanup`, and the drained log with it (cached prepared statements of the
//!    application may still name it).
//!
//! Locks: the copy's `INSERT … SELECT` and replays take shared row locks on the rows they
//! read, for one batch (the check reads a consistent snapshot, without locks); the
//! triggers add one log insert to every application write; the cut-over blocks reads and
//! writes of the table from `LOCK TABLES` to the rename: the measured,
//! printed pause (the drain of what was logged since the last replay, then the rename),
//! each wait bounded by `lock_wait_timeout`.
//!
//! Failures: lost connections, deadlocks and lock wait timeouts (including a cut-over that
//! could not get its locks) are transient: the transaction rolls back and the run resumes
//! from the checkpoint, re-attaching to its shadow, triggers and log; a cut-over
//! interrupted before its rename is retried, one interrupted after it is finished.
//! Definitive ([`super::error::EngineError`]): a leftover `old` table, a shadow gone missing
//! mid-copy, a unique collision, targets too large. What the copy cannot do at all (a
//! foreign key across schemas or split between charsets, a job column in the paging key, a
//! name too long, a target that drops what the column has) is refused by
//! [`crate::job::refusal`] before anything is written, and what the server would refuse of
//! the new definition by the trial of [`shadow`] before the first write.

pub mod catalog;
pub mod cutover;
pub mod myisam;
pub mod phase;
mod prepare;
pub mod setup;
pub mod table;
pub mod teardown;
mod trial;

pub use cutover::group;
pub use cutover::swapped::swapped;
pub use myisam::index_repair::{after_failure, after_restart};
pub use phase::{Phase, DRAIN_BEFORE_CUTOVER, STEP_ROWS};
pub use prepare::prepare_table;
pub use setup::change_log::refuse_kept_originals;
pub use table::parallel::rehearsal_lines;
pub use table::read_sql::count_sql;
pub use teardown::remove::{abort_table, cleanup_table};
pub use teardown::verify::{verify_table, CopyFindings};
pub use trial::trial_job;

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

mod carried;
mod cascade;
pub mod cascade_chains;
pub mod cascade_plan;
pub mod cascade_sql;
pub mod check_sql;
mod checker;
pub mod checksum_sql;
mod choices;
mod context;
mod copier;
mod cutover;
pub mod cutover_sql;
mod decide;
mod expect;
mod foreign;
pub mod foreign_sql;
pub mod group;
pub mod nontx;
pub mod objects;
pub mod objects_sql;
mod own_triggers;
pub mod own_triggers_sql;
mod rebuild;
pub mod rebuild_sql;
pub mod repair;
mod replay;
mod setup;
pub mod shadow;
pub mod shadow_sql;
pub mod sql;
pub mod streams;
mod teardown;
mod verify;
mod watermark;
pub mod write_sql;

pub use setup::refuse_kept_originals;
pub use teardown::{abort_table, cleanup_table};
pub use verify::{verify_table, CopyFindings};

use self::checker::check_batch;
use self::context::{context, is_sentry, table_exists, Ctx};
use self::copier::{copy_batch, Pipeline};
use self::cutover::{finish, settle_leftover_cutover};
use self::replay::{log_len, replay_some};
use self::setup::{create_stage, ensure_triggers, start};
use self::sql::drop_table_sql;
use self::watermark::Marks;
use super::batch::{self, Batches, Next};
use super::error::EngineError;
use super::events::{Event, Events};
use super::table_plan::{TableOutcome, TablePlan};
use super::throttle::Pacer;
use crate::bookkeeping::checkpoint;
use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::names::names;
use crate::db::connect::ConnectionConfig;
use crate::inventory::model::Table;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

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
}

impl Phase {
    /// The name kept in the checkpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Copying => "copying",
            Phase::Checking => "checking",
            Phase::Replaying => "replaying",
            Phase::Done => "done",
        }
    }

    /// The phase a checkpoint names; a checkpoint from before phases were kept is replaying
    /// (its copy and check were done), as it always was read.
    pub fn of(state: &State) -> Phase {
        match state.phase.as_str() {
            "copying" => Phase::Copying,
            "checking" => Phase::Checking,
            "done" => Phase::Done,
            _ => Phase::Replaying,
        }
    }
}

/// The most rows a copy batch takes per stream with `writers` read-committed writers (none:
/// the copy writes on the main connection, its reads locking what they copy). Pure.
fn most_rows(writers: usize) -> usize {
    match writers {
        0 => batch::MOST_ROWS,
        streams => STEP_ROWS / streams,
    }
}

/// The log is "nearly drained" (the table is ready for the cut-over) below this many rows;
/// `status` judges readiness by the same number.
pub const DRAIN_BEFORE_CUTOVER: i64 = 50;

/// Rows a copy step takes at most, shared among its streams, where it locks no row the
/// application writes ([`Batches::most_rows`]). One stream on lock mode 1 under a writer,
/// 1M rows, 3 alternating pairs by hand: 6.6-7.2 s at 40,000 rows a step against 6.8-7.3 s
/// at 20,000 (fewer steps' gaps; 2.5%, inside the machine's noise), peak RSS 73-76 MiB
/// against 59-61.
pub const STEP_ROWS: usize = 40_000;

/// Runs (or resumes) the copy of one table until it is ready for the cut-over (copied,
/// checked, its log nearly drained; [`group::cut_over_group`] swaps each group's tables together),
/// or until asked to stop. A table already swapped comes back done.
#[allow(clippy::too_many_arguments)]
pub async fn prepare_table(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &str,
    plan: &TablePlan,
    table: &Table,
    stop: &AtomicBool,
    pacer: &mut Pacer<'_>,
    events: &dyn Events,
) -> Result<(TableOutcome, State)> {
    let schema = plan.schema.as_str();
    let n = names(&plan.table);
    conn.execute(sql::REPEATABLE_READ).await?;
    let state = match checkpoint::load(conn, schema, job, &plan.table).await? {
        Some(s) if s.fingerprint != plan.fingerprint => {
            return Err(EngineError::JobEdited {
                table: plan.table.clone(),
                rows: s.rows_read,
                undo: "`myrecode abort` the job and start anew",
            }
            .into())
        }
        Some(s) => s,
        None => {
            let s = start(conn, job, plan, &n).await?;
            nontx::record_start(conn, job, schema, &plan.table).await?;
            s
        }
    };
    if state.done {
        return Ok((TableOutcome::Done, state));
    }
    settle_leftover_cutover(conn, schema).await?;
    let ctx = context(conn, plan, n, &state).await?;
    let mut state = state;
    nontx::settle_shadow(conn, &ctx, job).await?;
    if renamed(conn, &ctx).await? {
        // Swapped by a run that lost its connection or its process before the finish: its
        // cut-over step finishes it and says the cut-over (once, whichever run that is).
        return Ok((TableOutcome::Done, state));
    }
    if let Some(done) = settle_table(conn, &ctx, job, &mut state).await? {
        return Ok((done, state));
    }
    ensure_triggers(conn, &ctx).await?;
    if plan.key.is_empty() {
        // Nothing to copy ahead: rebuilt whole under the cut-over's lock (see `rebuild`).
        events.event(&Event::Rebuilds {
            table: &plan.table,
            rows: table.estimated_rows,
        });
        return Ok((TableOutcome::Done, state));
    }
    create_stage(conn, &ctx).await?;
    if Phase::of(&state) == Phase::Copying {
        forget_uncheckpointed(conn, &ctx, &state).await?;
    }
    let trailing = if Phase::of(&state) == Phase::Copying && state.last_key.is_none() {
        let mut conn = cfg.connect_one().await?;
        conn.execute(sql::REPEATABLE_READ).await?;
        Some(checker::Trailing::new(conn))
    } else {
        None
    };
    let streams = streams::detect(conn, schema, &plan.table).await?;
    let writers = if Phase::of(&state) == Phase::Copying && streams.read_committed {
        streams::writers(cfg, &ctx, streams.count).await?
    } else {
        Vec::new()
    };
    let pipe = Pipeline {
        reader: Some(cfg.connect_one().await?),
        ahead: None,
        replayed: HashSet::new(),
        trailing,
        writers,
    };
    let mut work = Copy {
        ctx: &ctx,
        job,
        pipe,
        state,
        differed: 0,
        batches: None,
        events,
    };
    let outcome = batch::run(
        conn,
        &mut work,
        plan,
        table.estimated_rows,
        stop,
        pacer,
        events,
    )
    .await?;
    // Aborted: the runner removes every copy of the job, cascade triggers first.
    Ok((outcome, work.state))
}

/// A shadow without transactions (MyISAM, Aria: `LIKE` its table) keeps the rows of a batch
/// whose checkpoint a kill rolled back: they go, so the batch is copied again, once.
async fn forget_uncheckpointed(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    state: &State,
) -> Result<()> {
    let engine: Option<String> = sqlx::query_scalar(sql::ENGINE_SQL)
        .bind(&ctx.plan.schema)
        .bind(&ctx.names.shadow)
        .fetch_optional(&mut *conn)
        .await?;
    if engine.is_none_or(|e| e.eq_ignore_ascii_case("InnoDB")) {
        return Ok(());
    }
    let last = state
        .last_key
        .as_deref()
        .and_then(crate::bookkeeping::keycodec::unpack);
    let (cond, binds) = sql::key_range(&ctx.plan.key, last.as_deref(), None);
    let delete = sql::delete_where_sql(&ctx.plan.schema, &ctx.names.shadow, &cond);
    crate::engine::read::bind_all(sqlx::query(&delete), &binds)
        .execute(&mut *conn)
        .await
        .context("removing the shadow's rows past the checkpoint")?;
    Ok(())
}

/// Whether the cut-over's rename ran for this table: its shadow is gone and its original is
/// kept (no sentry in its place).
async fn renamed(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<bool> {
    let schema = ctx.plan.schema.as_str();
    Ok(!table_exists(conn, schema, &ctx.names.shadow).await?
        && table_exists(conn, schema, &ctx.names.old).await?
        && !is_sentry(conn, schema, &ctx.names.old).await?)
}

/// What an earlier run left of this table's cut-over, settled: swapped already (the rename
/// ran; finished now, `Some(Done)`), or the sentry of a cut-over interrupted before its
/// rename (dropped; the copy goes on, `None`).
async fn settle_table(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<Option<TableOutcome>> {
    let (schema, plan) = (ctx.plan.schema.as_str(), ctx.plan);
    if renamed(conn, ctx).await? {
        finish(conn, ctx, job, state).await?;
        return Ok(Some(TableOutcome::Done));
    }
    if !table_exists(conn, schema, &ctx.names.shadow).await? {
        return Err(EngineError::ShadowGone {
            table: plan.table.clone(),
            shadow: ctx.names.shadow.clone(),
        }
        .into());
    }
    if table_exists(conn, schema, &ctx.names.old).await? {
        if !is_sentry(conn, schema, &ctx.names.old).await? {
            return Err(EngineError::ShadowAndOriginal {
                table: plan.table.clone(),
                shadow: ctx.names.shadow.clone(),
                old: ctx.names.old.clone(),
            }
            .into());
        }
        conn.execute(drop_table_sql(schema, &ctx.names.old).as_str())
            .await?;
    }
    Ok(None)
}

/// The copy's batches: a copy, check or replay step, by phase, until ready to cut over.
struct Copy<'a, 'c> {
    ctx: &'a Ctx<'c>,
    job: &'a str,
    pipe: Pipeline,
    state: State,
    /// Rows the check pass found different (and queued for replay).
    differed: u64,
    /// Batches the trailing check proved by the copy's decisions and compared on the server
    /// (`None`: no check trailed the copy in this process).
    batches: Option<(u64, u64)>,
    events: &'a dyn Events,
}

impl Copy<'_, '_> {
    /// Where the copy stands, for the replay ([`watermark`]): the last key copied and the
    /// last read, past which it reads every row yet, logged or not. `None` when the key is
    /// not integers, the copy has ended, or the rows read ahead reach the table's end (a row
    /// inserted past them must come from the log).
    fn marks(&self) -> Option<Marks> {
        if !self.ctx.named || Phase::of(&self.state) != Phase::Copying {
            return None;
        }
        let copied = self.state.last_key.as_deref().and_then(keycodec::unpack);
        let read = match &self.pipe.ahead {
            Some(a) if a.rows.len() < a.asked => return None,
            Some(a) => a.rows.last().map(|(k, _)| k.clone()),
            None => copied.clone(),
        }?;
        Some(Marks { copied, read })
    }
}

impl Batches for Copy<'_, '_> {
    fn state(&self) -> &State {
        &self.state
    }

    /// Where the copy writes on connections that read committed, it locks no row the
    /// application writes, whatever a step's size: a step takes [`STEP_ROWS`] in all, shared
    /// among its streams. Elsewhere (MyISAM, a statement-based binary log) its reads lock
    /// the rows they copy, and a batch takes at most [`batch::MOST_ROWS`].
    fn most_rows(&self) -> usize {
        most_rows(self.pipe.writers.len())
    }

    async fn batch(&mut self, conn: &mut MySqlConnection, size: usize) -> Result<Next> {
        let (ctx, job) = (self.ctx, self.job);
        let plan = ctx.plan;
        match Phase::of(&self.state) {
            Phase::Copying => {
                copy_batch(conn, &mut self.pipe, ctx, job, size, &mut self.state).await?;
                if Phase::of(&self.state) != Phase::Copying {
                    if let Some(t) = self.pipe.trailing.take() {
                        self.differed += t.differed;
                        self.batches = Some((t.by_decisions, t.by_server));
                    }
                }
                self.pipe.replayed.clear();
                let marks = self.marks();
                let replayed = &mut self.pipe.replayed;
                replay_some(
                    conn,
                    ctx,
                    job,
                    &mut self.state,
                    1,
                    (marks.as_ref(), replayed),
                )
                .await?;
            }
            Phase::Checking => {
                self.differed += check_batch(conn, ctx, job, size, &mut self.state).await?;
                if let Some((_, server)) = self.batches.as_mut() {
                    *server += 1;
                }
                replay_some(
                    conn,
                    ctx,
                    job,
                    &mut self.state,
                    1,
                    (None, &mut HashSet::new()),
                )
                .await?;
                if Phase::of(&self.state) != Phase::Checking {
                    self.events.event(&Event::Checked {
                        table: &plan.table,
                        differed: self.differed,
                        batches: self.batches,
                    });
                }
            }
            Phase::Replaying | Phase::Done => {
                replay_some(
                    conn,
                    ctx,
                    job,
                    &mut self.state,
                    20,
                    (None, &mut HashSet::new()),
                )
                .await?;
                if log_len(conn, ctx).await? < DRAIN_BEFORE_CUTOVER {
                    return Ok(Next::Done);
                }
                return Ok(Next::More { pause: false });
            }
        }
        Ok(Next::More { pause: true })
    }
}

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

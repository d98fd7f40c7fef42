//! In-place recoding of one table: batches by key, compare-and-set writes, backup, quarantine, checkpoint.
//!
//! Locks: each batch is one transaction. Its rows were read ahead, while the batch before
//! wrote, by a plain consistent read (no locks) on a connection of their own. Every value
//! to rewrite is staged with the bytes it was decided on, and one `UPDATE` per column
//! joined on the stage writes each row only if it still holds those bytes (compare-and-set,
//! row by row, in one statement: [`write`]). Rows the application changed meanwhile are
//! re-read under `FOR UPDATE`, decided again, and never overwritten with a stale recode.
//! Backups, quarantine entries and the checkpoint commit with the batch.
//!
//! Batches are written on connections of their own ([`writer`]): without replicas to pace,
//! two, each batch's statements running while the batch before finishes, its commit after
//! that one's; with replicas, one, each batch committed before the next begins.

mod sql;
mod write;
mod writer;

pub use sql::{backup_insert_sql, update_if_unchanged_sql};

use super::batch::{self, Batches, Next};
use super::columns;
use super::error::EngineError;
use super::priors;
use super::read::{self, Key};
use super::session::Session;
use super::table_plan::{TableOutcome, TablePlan};
use crate::bookkeeping::checkpoint;
use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::quarantine::Quarantined;
use crate::db::keyset;
use crate::detect::{ColumnPrior, Label};
use crate::recode::short_values::Remembered;
use crate::recode::value as recode;
use crate::recode::value::Action;
use crate::recode::value::Source;
use anyhow::{Context, Result};
use sqlx::{Connection, MySqlConnection};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use write::Change;
use writer::Shared;

/// A batch being written: its connection back (`None`: not fit to go on) and the state it
/// committed.
type Writing = JoinHandle<(Option<MySqlConnection>, Result<(State, Duration)>)>;

/// Runs (or resumes) one table of the run `session` until done or asked to stop.
pub async fn run_table(
    conn: &mut MySqlConnection,
    session: &mut Session<'_>,
    plan: &TablePlan,
    estimated: u64,
) -> Result<(TableOutcome, State)> {
    let job = session.job_id;
    let state = match checkpoint::load(conn, &plan.schema, job, &plan.table).await? {
        Some(s) if s.fingerprint != plan.fingerprint => {
            return Err(EngineError::JobEdited {
                table: plan.table.clone(),
                rows: s.rows_read,
                undo: "`myrecode rollback` the job and start it anew",
            }
            .into())
        }
        Some(s) => s,
        None => {
            let s = State {
                fingerprint: plan.fingerprint.clone(),
                priors: priors::compute(conn, plan).await?,
                ..State::default()
            };
            checkpoint::save(conn, &plan.schema, job, &plan.table, &s).await?;
            s
        }
    };
    if state.done {
        return Ok((TableOutcome::Done, state));
    }
    let cols = columns::columns_of(conn, &plan.schema, &plan.table).await?;
    let key_types = columns::key_types(&cols, plan)?;
    // Two batches in flight put two on the replicas at once: with replicas to pace, one.
    let writers = if session.pacer.paces_replicas() { 1 } else { 2 };
    let mut idle = Vec::with_capacity(writers);
    for _ in 0..writers {
        let mut w = session
            .cfg
            .connect_one()
            .await
            .context("opening a connection that writes batches")?;
        write::create_stage(&mut w, &key_types).await?;
        idle.push(w);
    }
    let reader = session
        .cfg
        .connect_one()
        .await
        .context("opening the connection that reads the next batch ahead")?;
    let shared = Arc::new(Shared {
        job: job.to_string(),
        plan: plan.clone(),
        decider: Arc::new(Decider::new(
            plan,
            crate::bookkeeping::priors::parse(&state.priors),
        )),
    });
    let mut work = InPlace {
        plan,
        shared,
        names: plan.columns.iter().map(|c| c.name.clone()).collect(),
        handed: state.last_key.as_deref().and_then(keycodec::unpack),
        state,
        reader: Some(reader),
        ahead: None,
        idle,
        writing: None,
        told: None,
        updated: None,
        took: None,
    };
    let outcome = batch::run(
        conn,
        &mut work,
        plan,
        estimated,
        session.stop,
        &mut session.pacer,
        &session.events,
    )
    .await?;
    // Stopped or aborted between batches: the batch still being written commits first.
    work.finish().await?;
    // Closed, not dropped: their sessions, and the staging tables with them, end at once.
    for w in work.idle.drain(..).chain(work.reader.take()) {
        w.close().await.ok();
    }
    Ok((outcome, work.state.clone()))
}

/// The in-place strategy's batches over one table.
struct InPlace<'a> {
    plan: &'a TablePlan,
    shared: Arc<Shared>,
    names: Vec<String>,
    /// The state last committed.
    state: State,
    /// The last key of the last batch handed to a writer (`None`: none yet, from the start).
    handed: Option<Key>,
    /// The connection batches are read on, apart from those writing them (`None` while a
    /// read holds it).
    reader: Option<MySqlConnection>,
    /// The next batch, being read and decided while this one writes; hands the reader back.
    ahead: Option<JoinHandle<(MySqlConnection, Result<Ahead>)>>,
    /// Writer connections free for the next batch.
    idle: Vec<MySqlConnection>,
    /// The batch handed to a writer last, not yet known committed.
    writing: Option<Writing>,
    /// Where the batch handed last tells its committed state, for the batch after it.
    told: Option<oneshot::Receiver<State>>,
    /// Where the batch handed last tells that it ran its `UPDATE`s ([`write::Turn`]).
    updated: Option<oneshot::Receiver<()>>,
    /// How long the batch last committed took, for the batch loop's tuning.
    took: Option<Duration>,
}

impl Drop for InPlace<'_> {
    /// A run that ends in an error stops the tasks it left: the batch being written is rolled
    /// back with its connection, never committed after a failure of the batch before.
    fn drop(&mut self) {
        if let Some(h) = self.writing.take() {
            h.abort();
        }
        if let Some(h) = self.ahead.take() {
            h.abort();
        }
    }
}

/// A batch read ahead: how many rows were asked and read, its last key, its decisions.
struct Ahead {
    size: usize,
    rows: usize,
    last_key: Option<Key>,
    decided: Decided,
}

/// A batch's decisions: the values to rewrite, the statements staging them, and the
/// undecidable values.
struct Decided {
    changes: Vec<Change>,
    stage: Vec<String>,
    quarantined: Vec<Quarantined>,
}

impl InPlace<'_> {
    /// Reads the `size` rows after `after` (no locks) on the reader connection and decides
    /// them on a blocking thread, as a task of its own: the read, the decisions and the
    /// staging statements' hex all overlap the batch before's writes on the other connection.
    fn spawn_read_ahead(
        &mut self,
        after: Option<Key>,
        size: usize,
    ) -> Result<JoinHandle<(MySqlConnection, Result<Ahead>)>> {
        let plan = self.plan;
        let mut reader = self
            .reader
            .take()
            .context("the read-ahead connection is busy")?;
        let nk = plan.key.len();
        let exprs: Vec<String> = self.names.iter().map(|c| keyset::raw(c)).collect();
        let (sql, binds) = read::batch_of(plan, &exprs, after.as_deref(), size, false);
        let decider = self.shared.decider.clone();
        let names = self.names.clone();
        let table = plan.table.clone();
        Ok(tokio::spawn(async move {
            let read = async {
                let q = read::bind_all(sqlx::query(&sql), &binds);
                let stored = read::fetch_stored(q, &mut reader, (nk, names.len()))
                    .await
                    .with_context(|| format!("reading a batch of {table}"))?;
                crate::db::packet::no_value_cut(&mut reader, &table).await?;
                let last_key = stored.last().map(|(k, _)| k.clone());
                let n = stored.len();
                let decided =
                    tokio::task::spawn_blocking(move || decider.decide_rows(&names, nk, stored))
                        .await
                        .context("deciding a batch")?;
                Ok(Ahead {
                    size,
                    rows: n,
                    last_key,
                    decided,
                })
            }
            .await;
            (reader, read)
        }))
    }

    /// The batch read ahead, its reader connection back for the next.
    async fn take_ahead(
        &mut self,
        h: JoinHandle<(MySqlConnection, Result<Ahead>)>,
    ) -> Result<Ahead> {
        let (reader, ahead) = h.await.context("reading a batch ahead")?;
        self.reader = Some(reader);
        ahead
    }
}

impl InPlace<'_> {
    /// Waits for the batch being written; its committed state becomes the run's.
    async fn settle(&mut self, h: Writing) -> Result<()> {
        let (conn, committed) = h.await.context("writing a batch")?;
        let (state, took) = committed?;
        self.idle.extend(conn);
        self.state = state;
        self.took = Some(took);
        Ok(())
    }

    /// Waits for the batch still being written, if any.
    async fn finish(&mut self) -> Result<()> {
        match self.writing.take() {
            Some(h) => self.settle(h).await,
            None => Ok(()),
        }
    }
}

impl Batches for InPlace<'_> {
    fn state(&self) -> &State {
        &self.state
    }

    fn took(&self) -> Option<Duration> {
        self.took
    }

    /// Hands this batch to a free writer (one transaction: compare-and-set its changed
    /// values, back up the originals, list the undecidable, advance the checkpoint after
    /// the batch before committed), reads the next batch ahead (no locks), and returns once
    /// the batch before is committed (with one writer, or at the table's end, this one).
    async fn batch(&mut self, _conn: &mut MySqlConnection, size: usize) -> Result<Next> {
        let pending = match self.ahead.take() {
            Some(h) => h,
            None => self.spawn_read_ahead(self.handed.clone(), size)?,
        };
        let this = self.take_ahead(pending).await?;
        let done = this.rows < this.size;
        if !done {
            self.ahead = Some(self.spawn_read_ahead(this.last_key.clone(), size)?);
        }
        if self.idle.is_empty() {
            self.finish().await?;
        }
        let conn = self
            .idle
            .pop()
            .context("no connection free to write a batch")?;
        let in_flight = self.writing.is_some();
        let prev = match self.told.take() {
            Some(told) if in_flight => told,
            _ => {
                let (tell, told) = oneshot::channel();
                let _ = tell.send(self.state.clone());
                told
            }
        };
        let (tell, told) = oneshot::channel();
        self.told = Some(told);
        // With no batch in flight, a closed channel: nothing to wait for.
        let after = match self.updated.take() {
            Some(updated) if in_flight => updated,
            _ => oneshot::channel().1,
        };
        let (then, updated) = oneshot::channel();
        self.updated = Some(updated);
        let Decided {
            changes,
            stage,
            quarantined,
        } = this.decided;
        let lower = self.handed.clone();
        if let Some(k) = &this.last_key {
            self.handed = Some(k.clone());
        }
        let batch = writer::Batch {
            lower,
            upper: this.last_key,
            size: this.size,
            rows: this.rows,
            changes,
            stage,
            quarantined,
            turn: write::Turn { after, then },
        };
        let shared = self.shared.clone();
        let before = self.writing.replace(tokio::spawn(writer::write_batch(
            conn, shared, batch, prev, tell,
        )));
        if let Some(h) = before {
            self.settle(h).await?;
        }
        if done || self.idle.is_empty() {
            self.finish().await?;
        }
        Ok(if self.state.done {
            Next::Done
        } else {
            Next::More { pause: true }
        })
    }
}

/// Decides a table's values: each column's source and prior, with decisions on short values
/// remembered ([`Remembered`]).
struct Decider {
    columns: Vec<(Source, Option<Label>, Option<ColumnPrior>)>,
    /// Per column, whether it holds utf8mb3 ([`recode::within_utf8mb3`]).
    utf8mb3: Vec<bool>,
    threshold: f32,
    seen: Remembered<Action>,
}

impl Decider {
    fn new(plan: &TablePlan, priors: BTreeMap<String, ColumnPrior>) -> Self {
        Decider {
            columns: plan
                .columns
                .iter()
                .map(|c| (c.source.clone(), c.fallback, priors.get(&c.name).cloned()))
                .collect(),
            utf8mb3: plan
                .columns
                .iter()
                .map(|c| {
                    crate::job::target::parse(&c.target)
                        .is_ok_and(|t| t.charset.as_deref() == Some("utf8mb3"))
                })
                .collect(),
            threshold: plan.threshold,
            seen: Remembered::new(plan.columns.len()),
        }
    }

    /// What the stored bytes of job column `ci` become.
    fn decide(&self, ci: usize, stored: &[u8]) -> Action {
        let (source, fallback, prior) = &self.columns[ci];
        let utf8mb3 = self.utf8mb3[ci];
        self.seen.decide(ci, stored, || {
            let action = recode::decide(source, *fallback, prior.as_ref(), self.threshold, stored);
            recode::within_utf8mb3(action, utf8mb3)
        })
    }

    /// The changes, their staging statements and the undecidable values of `rows` (each row's
    /// key of `key_columns` parts and its job columns' stored bytes, `None`: NULL); `names`:
    /// the job columns' names.
    fn decide_rows(
        &self,
        names: &[String],
        key_columns: usize,
        rows: Vec<(Key, read::Stored)>,
    ) -> Decided {
        let mut changes = Vec::new();
        let mut quarantined = Vec::new();
        for (key, cells) in rows {
            for (ci, stored) in cells.into_iter().enumerate() {
                let Some(stored) = stored else { continue };
                match self.decide(ci, &stored) {
                    Action::Keep => {}
                    Action::Rewrite { new, label } => changes.push(Change {
                        col: ci,
                        key: key.clone(),
                        label: label.to_string(),
                        old: stored,
                        new,
                    }),
                    Action::Quarantine { reason, runner_up } => quarantined.push(Quarantined {
                        col: names[ci].clone(),
                        key: keycodec::pack(&key),
                        value: stored,
                        reason,
                        runner_up,
                    }),
                }
            }
        }
        let stage = write::stage_statements(key_columns, names, &changes);
        Decided {
            changes,
            stage,
            quarantined,
        }
    }
}

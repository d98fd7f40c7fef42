//! In-place recoding of one table: batches by key, compare-and-set writes, backup, quarantine, checkpoint.
//!
//! Locks: each batch is one transaction. Its rows were read ahead, while the batch before
//! wrote, by a plain consistent read (no locks) on a connection of their own. Every value
//! to rewrite is staged with the bytes it was decided on, and one `UPDATE` per column
//! joined on the stage writes each row only if it still holds those bytes (compare-and-set,
//! row by row, in one statement: [`write`]). Rows the application changed meanwhile are
//! re-read under `FOR UPDATE`, decided again, and never overwritten with a stale recode.
//! Backups, quarantine entries and the checkpoint commit with the batch.

mod sql;
mod write;

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
use crate::bookkeeping::quarantine;
use crate::bookkeeping::quarantine::Quarantined;
use crate::db::keyset;
use crate::detect::{ColumnPrior, Label};
use crate::recode::short_values::Remembered;
use crate::recode::value as recode;
use crate::recode::value::Action;
use crate::recode::value::Source;
use anyhow::{Context, Result};
use sqlx::{Acquire, MySqlConnection};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::task::JoinHandle;
use write::Change;

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
    write::create_stage(conn, &columns::key_types(&cols, plan)?).await?;
    let reader = session
        .cfg
        .connect_one()
        .await
        .context("opening the connection that reads the next batch ahead")?;
    let mut work = InPlace {
        job,
        plan,
        decider: Arc::new(Decider::new(
            plan,
            crate::bookkeeping::priors::parse(&state.priors),
        )),
        names: plan.columns.iter().map(|c| c.name.clone()).collect(),
        state,
        reader: Some(reader),
        ahead: None,
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
    write::drop_stage(conn).await?;
    Ok((outcome, work.state))
}

/// The in-place strategy's batches over one table.
struct InPlace<'a> {
    job: &'a str,
    plan: &'a TablePlan,
    decider: Arc<Decider>,
    names: Vec<String>,
    state: State,
    /// The connection batches are read on, apart from the one writing them (`None` while a
    /// read holds it).
    reader: Option<MySqlConnection>,
    /// The next batch, being read and decided while this one writes; hands the reader back.
    ahead: Option<JoinHandle<(MySqlConnection, Result<Ahead>)>>,
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
        let decider = self.decider.clone();
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

impl Batches for InPlace<'_> {
    fn state(&self) -> &State {
        &self.state
    }

    /// One transaction: read the next batch ahead (no locks), compare-and-set this batch's
    /// changed values, back up the originals, list the undecidable, advance the checkpoint.
    async fn batch(&mut self, conn: &mut MySqlConnection, size: usize) -> Result<Next> {
        let plan = self.plan;
        let pending = match self.ahead.take() {
            Some(h) => h,
            None => {
                let last = self.state.last_key.as_deref().and_then(keycodec::unpack);
                self.spawn_read_ahead(last, size)?
            }
        };
        let this = self.take_ahead(pending).await?;
        let done = this.rows < this.size;
        if !done {
            self.ahead = Some(self.spawn_read_ahead(this.last_key.clone(), size)?);
        }
        let Decided {
            changes,
            stage,
            mut quarantined,
        } = this.decided;
        let mut tx = conn.begin().await?;
        let decider = &self.decider;
        let decide = |ci: usize, bytes: &[u8]| decider.decide(ci, bytes);
        let lower = self.state.last_key.as_deref().and_then(keycodec::unpack);
        let written = match &this.last_key {
            Some(upper) => {
                let range = (lower.as_deref(), upper.as_slice());
                write::write(
                    &mut tx,
                    self.job,
                    plan,
                    range,
                    (changes, stage),
                    &decide,
                    &mut quarantined,
                )
                .await?
            }
            None => write::Written::default(),
        };
        quarantine::save(&mut tx, &plan.schema, self.job, &plan.table, &quarantined).await?;
        let mut next = self.state.clone();
        next.rows_changed += written.changed;
        next.rows_conflicted += written.conflicted;
        next.rows_quarantined += quarantined.len() as u64;
        if let Some(k) = &this.last_key {
            next.last_key = Some(keycodec::pack(k));
        }
        next.rows_read += this.rows as u64;
        next.done = done;
        checkpoint::save(&mut tx, &plan.schema, self.job, &plan.table, &next).await?;
        tx.commit().await.context("committing a batch")?;
        if written != write::Written::default() {
            write::clear_stage(conn).await?;
        }
        self.state = next;
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

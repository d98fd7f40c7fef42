//! In-place recoding of one table: batches by key, compare-and-set writes, backup, quarantine, checkpoint.
//!
//! Locks: each batch is one transaction. Its SELECT is a plain consistent read (no
//! locks). Every value to rewrite is staged with the bytes it was decided on, and one
//! `UPDATE` per column joined on the stage writes each row only if it still holds those
//! bytes (compare-and-set, row by row, in one statement: [`write`]). Rows the application
//! changed meanwhile are re-read under `FOR UPDATE`, decided again, and never overwritten
//! with a stale recode. Backups, quarantine entries and the checkpoint commit with the batch.

mod sql;
mod write;

pub use sql::{backup_insert_sql, update_if_unchanged_sql};

use super::batch::{self, Batches, Next};
use super::checkpoint::{self, State};
use super::columns;
use super::error::EngineError;
use super::events::Events;
use super::keycodec;
use super::pace::Pacer;
use super::plan::{TableOutcome, TablePlan};
use super::priors;
use super::quarantine::{self, Quarantined};
use super::read::{read_batch, read_key, Key};
use super::recode::{self, Action, Source};
use super::remember::Remembered;
use crate::detect::ColumnPrior;
use anyhow::{Context, Result};
use sqlx::{Acquire, MySqlConnection, Row};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use write::Change;

/// Runs (or resumes) one table until done or asked to stop.
pub async fn run_table(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    estimated: u64,
    stop: &AtomicBool,
    pacer: &mut Pacer,
    events: &dyn Events,
) -> Result<(TableOutcome, State)> {
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
    let mut work = InPlace {
        job,
        plan,
        decider: Arc::new(Decider::new(plan, priors::parse(&state.priors))),
        names: plan.columns.iter().map(|c| c.name.clone()).collect(),
        state,
        ahead: None,
    };
    let outcome = batch::run(conn, &mut work, plan, estimated, stop, pacer, events).await?;
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
    /// The next batch, read and being decided on a blocking thread while this one writes.
    ahead: Option<Ahead>,
}

/// A batch read ahead: how many rows were asked and read, its last key, its decisions.
struct Ahead {
    size: usize,
    rows: usize,
    last_key: Option<Key>,
    decided: tokio::task::JoinHandle<Decided>,
}

/// A batch's decisions: the values to rewrite and the undecidable ones.
type Decided = (Vec<Change>, Vec<Quarantined>);

impl InPlace<'_> {
    /// Reads the `size` rows after `after` (no locks) and starts deciding them on a blocking
    /// thread, so the decisions overlap the previous batch's writes.
    async fn read_ahead(
        &self,
        conn: &mut MySqlConnection,
        after: Option<&[Vec<u8>]>,
        size: usize,
    ) -> Result<Ahead> {
        let plan = self.plan;
        let nk = plan.key.len();
        let rows = read_batch(conn, plan, &self.names, after, size, false).await?;
        let stored = rows
            .iter()
            .map(|r| {
                let cells = (0..plan.columns.len())
                    .map(|ci| r.try_get::<Option<Vec<u8>>, _>(nk + ci))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((read_key(r, nk)?, cells))
            })
            .collect::<Result<Vec<_>>>()?;
        let last_key = stored.last().map(|(k, _)| k.clone());
        let decider = self.decider.clone();
        let names = self.names.clone();
        Ok(Ahead {
            size,
            rows: stored.len(),
            last_key,
            decided: tokio::task::spawn_blocking(move || decider.decide_rows(&names, stored)),
        })
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
        let this = match self.ahead.take() {
            Some(a) => a,
            None => {
                let last = self.state.last_key.as_deref().and_then(keycodec::unpack);
                self.read_ahead(conn, last.as_deref(), size).await?
            }
        };
        let done = this.rows < this.size;
        let mut tx = conn.begin().await?;
        if !done {
            self.ahead = Some(
                self.read_ahead(&mut tx, this.last_key.as_deref(), size)
                    .await?,
            );
        }
        let (changes, mut quarantined) = this.decided.await.context("deciding a batch")?;
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
                    changes,
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
    columns: Vec<(Source, Option<ColumnPrior>)>,
    threshold: f32,
    seen: Remembered<Action>,
}

impl Decider {
    fn new(plan: &TablePlan, priors: BTreeMap<String, ColumnPrior>) -> Self {
        Decider {
            columns: plan
                .columns
                .iter()
                .map(|c| (c.source.clone(), priors.get(&c.name).cloned()))
                .collect(),
            threshold: plan.threshold,
            seen: Remembered::new(plan.columns.len()),
        }
    }

    /// What the stored bytes of job column `ci` become.
    fn decide(&self, ci: usize, stored: &[u8]) -> Action {
        let (source, prior) = &self.columns[ci];
        self.seen.decide(ci, stored, || {
            recode::decide(source, prior.as_ref(), self.threshold, stored)
        })
    }

    /// The changes and the undecidable values of `rows` (each row's key and its job
    /// columns' stored bytes, `None`: NULL); `names`: the job columns' names.
    fn decide_rows(&self, names: &[String], rows: Vec<(Key, Vec<Option<Vec<u8>>>)>) -> Decided {
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
        (changes, quarantined)
    }
}

//! One batch's transaction on a writer connection of its own, committed only after the batch
//! before it: two batches overlap on the server (one's statements while the other's run),
//! yet the checkpoint advances in key order, so a kill at any instant leaves a prefix of the
//! batches done and the rest undone.
//!
//! A batch writes its values, backups and quarantine, then waits for the state the batch
//! before committed (`prev`), adds its own counts, saves the checkpoint, commits, and hands
//! its state on (`next`). The two batches' rows are apart (key ranges one after the other),
//! their backup and quarantine rows too, and only the later one touches the checkpoint row,
//! once the earlier one committed: neither waits on the other's locks.

use super::write::{self, Change, Turn};
use super::Decider;
use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::keycodec;
use crate::bookkeeping::quarantine::{self, Quarantined};
use crate::engine::read::Key;
use crate::engine::table_plan::TablePlan;
use anyhow::{Context, Result};
use sqlx::{Acquire, MySqlConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What every batch of one table's run shares: the job's id, the table's plan, its decider.
pub(super) struct Shared {
    pub(super) job: String,
    pub(super) plan: TablePlan,
    pub(super) decider: Arc<Decider>,
}

/// One batch to write: its rows' key range (after `lower`, from the start without one, up
/// to `upper`), how many rows were asked and read, and its decisions.
pub(super) struct Batch {
    pub(super) lower: Option<Key>,
    pub(super) upper: Option<Key>,
    pub(super) size: usize,
    pub(super) rows: usize,
    pub(super) changes: Vec<Change>,
    pub(super) stage: Vec<String>,
    pub(super) quarantined: Vec<Quarantined>,
    /// When its `UPDATE`s may run.
    pub(super) turn: Turn,
}

/// Writes `batch` in one transaction on `conn`, committed after the batch before it (whose
/// committed state `prev` brings) and handing its own committed state to `next`. Returns
/// the connection (`None`: not fit to go on), the state committed and how long the batch
/// took from its first statement to its commit.
pub(super) async fn write_batch(
    mut conn: MySqlConnection,
    shared: Arc<Shared>,
    batch: Batch,
    prev: oneshot::Receiver<State>,
    next: oneshot::Sender<State>,
) -> (Option<MySqlConnection>, Result<(State, Duration)>) {
    let began = Instant::now();
    match write_in(&mut conn, &shared, batch, prev).await {
        Ok((state, staged)) => {
            let took = began.elapsed();
            // The later batch may go on to its own checkpoint as soon as this one committed.
            let _ = next.send(state.clone());
            if staged {
                if let Err(e) = write::clear_stage(&mut conn).await {
                    return (None, Err(e));
                }
            }
            (Some(conn), Ok((state, took)))
        }
        Err(e) => (None, Err(e)),
    }
}

/// The transaction of [`write_batch`]; also says whether anything was staged.
async fn write_in(
    conn: &mut MySqlConnection,
    shared: &Shared,
    batch: Batch,
    prev: oneshot::Receiver<State>,
) -> Result<(State, bool)> {
    let plan = &shared.plan;
    let Batch {
        lower,
        upper,
        size,
        rows,
        changes,
        stage,
        mut quarantined,
        turn,
    } = batch;
    let staged = !changes.is_empty();
    let mut tx = conn.begin().await?;
    let decider = &shared.decider;
    let decide = |ci: usize, bytes: &[u8]| decider.decide(ci, bytes);
    let written = match &upper {
        Some(upper) => {
            let range = (lower.as_deref(), upper.as_slice());
            let changes = (changes, stage, turn);
            let job = shared.job.as_str();
            write::write(
                &mut tx,
                job,
                plan,
                range,
                changes,
                &decide,
                &mut quarantined,
            )
            .await?
        }
        None => {
            let _ = turn.after.await;
            write::Written::default()
        }
    };
    let (schema, table) = (&plan.schema, &plan.table);
    quarantine::save(&mut tx, schema, &shared.job, table, &quarantined).await?;
    let base = prev
        .await
        .context("the batch before this one did not commit")?;
    let mut next = base;
    next.rows_changed += written.changed;
    next.rows_conflicted += written.conflicted;
    next.rows_quarantined += quarantined.len() as u64;
    if let Some(k) = &upper {
        next.last_key = Some(keycodec::pack(k));
    }
    next.rows_read += rows as u64;
    next.done = rows < size;
    checkpoint::save(&mut tx, schema, &shared.job, table, &next).await?;
    tx.commit().await.context("committing a batch")?;
    Ok((next, staged))
}

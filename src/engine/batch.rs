//! The batch loop both strategies run: the operator's commands and throttling between
//! batches, one batch, progress, the next batch's size tuned toward the target time, the pause.
//!
//! What a batch is belongs to the strategy ([`Batches`]): in place, one compare-and-set
//! transaction; by copy, a copy, check or replay step of its current phase.

use super::events::{Event, Events};
use super::table_plan::{TableOutcome, TablePlan};
use super::throttle::{Flow, Pacer};
use crate::bookkeeping::checkpoint::State;
use anyhow::Result;
use sqlx::MySqlConnection;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What the loop does after a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Another batch; `pause`: whether the job's pause between batches applies after this one.
    More {
        /// Whether to sleep the job's `pause_between_batches`.
        pause: bool,
    },
    /// Nothing left for the loop.
    Done,
}

/// One strategy's batches over one table.
// Only this crate implements it, each future awaited in place: no `Send` bound to promise.
#[allow(async_fn_in_trait)]
pub trait Batches {
    /// The table's checkpoint as last committed.
    fn state(&self) -> &State;

    /// Runs one batch of about `size` rows, committing it with its checkpoint.
    async fn batch(&mut self, conn: &mut MySqlConnection, size: usize) -> Result<Next>;

    /// The most rows a batch may take, however fast batches run.
    fn most_rows(&self) -> usize {
        MOST_ROWS
    }
}

/// The most rows a batch takes where its statements lock rows the application writes (in
/// place: each batch's rows are locked until it commits).
pub const MOST_ROWS: usize = 20_000;

/// Runs batches until the strategy says done, the process is asked to stop (`stop`), or the
/// operator pauses or aborts the job (through `pacer`). Returns how the loop ended.
pub async fn run<B: Batches>(
    conn: &mut MySqlConnection,
    batches: &mut B,
    plan: &TablePlan,
    estimated: u64,
    stop: &AtomicBool,
    pacer: &mut Pacer<'_>,
    events: &dyn Events,
) -> Result<TableOutcome> {
    let mut size = plan.batch_size.max(1);
    let started = Instant::now();
    let rows_at_start = batches.state().rows_read;
    // The size of the batch before, for the replicas' verdict on it, and the ceiling their
    // holds set (none until one).
    let mut last: Option<usize> = None;
    let mut ceiling: Option<usize> = None;
    loop {
        match pacer.between_batches(conn, stop).await? {
            Flow::Go => {}
            Flow::Stop => return Ok(TableOutcome::Interrupted),
            Flow::Abort => return Ok(TableOutcome::Aborted),
        }
        if let Some(l) = last {
            ceiling = replica_ceiling(ceiling, l, pacer.held_by_replicas());
        }
        if let Some(c) = ceiling {
            size = size.min(c);
        }
        let t0 = Instant::now();
        last = Some(size);
        let next = batches.batch(conn, size).await?;
        let state = batches.state();
        let rate =
            (state.rows_read - rows_at_start) as f64 / started.elapsed().as_secs_f64().max(1e-3);
        events.event(&Event::Batch {
            table: &plan.table,
            state,
            estimated,
            rows_per_sec: rate,
        });
        let Next::More { pause } = next else {
            return Ok(TableOutcome::Done);
        };
        size = tune(size, t0.elapsed(), plan.target_batch_time).min(batches.most_rows());
        if pause && !plan.pause.is_zero() {
            tokio::time::sleep(plan.pause).await;
        }
    }
}

/// Next batch size: steer toward the target time, at most doubling or halving per step (the
/// caller bounds it from above, [`Batches::most_rows`]).
pub fn tune(size: usize, took: Duration, target: Duration) -> usize {
    let ratio = target.as_secs_f64() / took.as_secs_f64().max(1e-4);
    ((size as f64 * ratio.clamp(0.5, 2.0)) as usize).max(10)
}

/// The most rows a batch may take after a batch of `last` rows, by the replicas' verdict on
/// it (`held`: they held the job back after it), from the ceiling before (`None`: none yet).
/// The primary's time steers [`tune`], but a replica that applies a batch slower than the
/// primary wrote it (a weaker host, triggers of its own) lags by a whole batch before the
/// next sample sees it. So, as TCP does with its window: a hold halves the batch that
/// caused it, and each batch the replicas take within the limit lets the ceiling grow by a
/// tenth. The batch settles about the size the slowest replica applies within the limit.
pub fn replica_ceiling(ceiling: Option<usize>, last: usize, held: bool) -> Option<usize> {
    if held {
        Some((last / 2).max(10))
    } else {
        ceiling.map(|c| c.saturating_add(c / 10 + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_by_the_replicas_halves_the_batch_and_the_ceiling_grows_back_by_a_tenth() {
        assert_eq!(replica_ceiling(None, 20_000, false), None);
        assert_eq!(replica_ceiling(None, 20_000, true), Some(10_000));
        assert_eq!(replica_ceiling(Some(10_000), 10_000, false), Some(11_001));
        assert_eq!(replica_ceiling(Some(10_000), 15, true), Some(10));
    }

    #[test]
    fn tuning_steers_toward_target_within_bounds() {
        assert_eq!(
            tune(1000, Duration::from_millis(250), Duration::from_millis(500)),
            2000
        );
        assert_eq!(
            tune(1000, Duration::from_secs(10), Duration::from_millis(500)),
            500
        );
        assert_eq!(
            tune(10, Duration::from_secs(10), Duration::from_millis(500)),
            10
        );
        // The ceiling is the strategy's (Batches::most_rows), applied by the loop.
        assert_eq!(
            tune(
                30_000,
                Duration::from_millis(100),
                Duration::from_millis(500)
            ),
            60_000
        );
    }
}

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

    /// How long the batch last committed took, where the strategy overlaps batches (a
    /// `batch` call then returns as the batch before commits, not its own); `None`: the
    /// call's own time is the batch's.
    fn took(&self) -> Option<Duration> {
        None
    }

    /// Whether the next batch writes about as many rows as it takes (so the replicas' lag
    /// budget bounds it); a pass that only reads does not.
    fn writes(&self) -> bool {
        true
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
    // The size the primary's pace steers to; each batch takes at most what the replicas' lag
    // budget allows at its start.
    let mut size = plan.batch_size.max(1);
    let started = Instant::now();
    let rows_at_start = batches.state().rows_read;
    loop {
        let wanted = if batches.writes() { size } else { 0 };
        let allowed = match pacer.before_batch(conn, stop, wanted).await? {
            (Flow::Go, _) if wanted == 0 => size,
            (Flow::Go, allowed) => allowed.clamp(1, size),
            (Flow::Stop, _) => return Ok(TableOutcome::Interrupted),
            (Flow::Abort, _) => return Ok(TableOutcome::Aborted),
        };
        let t0 = Instant::now();
        let read_before = batches.state().rows_read;
        let next = batches.batch(conn, allowed).await?;
        let took = batches.took().unwrap_or_else(|| t0.elapsed());
        let state = batches.state();
        pacer.committed(state.rows_read.saturating_sub(read_before), took);
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
        // Steered by the batch's own pace: one cut short by the budget says as much of the
        // rate as a full one.
        let full = tune(allowed, took, plan.target_batch_time);
        size = if allowed < size {
            size.min(full.max(allowed))
        } else {
            full
        };
        size = size.min(batches.most_rows());
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

#[cfg(test)]
mod tests {
    use super::*;

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

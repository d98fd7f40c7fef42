//! The batch loop both strategies run: the operator's commands and throttling between
//! batches, one batch, progress, the next batch's size tuned toward the target time, the pause.
//!
//! What a batch is belongs to the strategy ([`Batches`]): in place, one compare-and-set
//! transaction; by copy, a copy, check or replay step of its current phase.

use super::checkpoint::State;
use super::events::{Event, Events};
use super::pace::{Flow, Pacer};
use super::plan::{TableOutcome, TablePlan};
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
}

/// Runs batches until the strategy says done, the process is asked to stop (`stop`), or the
/// operator pauses or aborts the job (through `pacer`). Returns how the loop ended.
pub async fn run<B: Batches>(
    conn: &mut MySqlConnection,
    batches: &mut B,
    plan: &TablePlan,
    estimated: u64,
    stop: &AtomicBool,
    pacer: &mut Pacer,
    events: &dyn Events,
) -> Result<TableOutcome> {
    let mut size = plan.batch_size.max(1);
    let started = Instant::now();
    let rows_at_start = batches.state().rows_read;
    loop {
        match pacer.between_batches(conn, stop).await? {
            Flow::Go => {}
            Flow::Stop => return Ok(TableOutcome::Interrupted),
            Flow::Abort => return Ok(TableOutcome::Aborted),
        }
        let t0 = Instant::now();
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
        size = tune(size, t0.elapsed(), plan.target_batch_time);
        if pause && !plan.pause.is_zero() {
            tokio::time::sleep(plan.pause).await;
        }
    }
}

/// Next batch size: steer toward the target time, at most doubling or halving per step.
pub fn tune(size: usize, took: Duration, target: Duration) -> usize {
    let ratio = target.as_secs_f64() / took.as_secs_f64().max(1e-4);
    ((size as f64 * ratio.clamp(0.5, 2.0)) as usize).clamp(10, 20_000)
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
    }
}

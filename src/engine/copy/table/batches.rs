//! A copy's batches until it is ready for its cut-over: a copy, check or replay step each,
//! by the phase its checkpoint names.

use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::keycodec;
use crate::engine::batch::{Batches, Next};
use crate::engine::copy::phase::{most_rows, Phase, DRAIN_BEFORE_CUTOVER};
use crate::engine::copy::table::checker::check_batch;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::copier::{copy_batch, Pipeline};
use crate::engine::copy::table::replay::{log_len, replay_some};
use crate::engine::copy::table::watermark::Marks;
use crate::engine::events::{Event, Events};
use anyhow::Result;
use sqlx::MySqlConnection;
use std::collections::HashSet;

/// The copy's batches: a copy, check or replay step, by phase, until ready to cut over.
pub(crate) struct Copy<'a, 'c> {
    pub(crate) ctx: &'a Ctx<'c>,
    pub(crate) job: &'a str,
    pub(crate) pipe: Pipeline,
    pub(crate) state: State,
    /// Rows the check pass found different (and queued for replay).
    pub(crate) differed: u64,
    /// Batches the trailing check proved by the copy's decisions and compared on the server
    /// (`None`: no check trailed the copy in this process).
    pub(crate) batches: Option<(u64, u64)>,
    pub(crate) events: &'a dyn Events,
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
    /// application writes, whatever a step's size: a step takes [`crate::engine::copy::phase::STEP_ROWS`] in all, shared
    /// among its streams. Elsewhere (MyISAM, a statement-based binary log) its reads lock
    /// the rows they copy, and a batch takes at most [`crate::engine::batch::MOST_ROWS`].
    fn most_rows(&self) -> usize {
        most_rows(self.pipe.writers.len())
    }

    /// The copy writes its rows; the check pass only reads (and replays the few it finds),
    /// and the replay's batches are the log's, not of the size asked.
    fn writes(&self) -> bool {
        Phase::of(&self.state) == Phase::Copying
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
            Phase::Replaying | Phase::Done | Phase::Reverted => {
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

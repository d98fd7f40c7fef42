//! What a group's cut-over carries across under its lock (foreign keys, the tables' own
//! triggers, cascade logging), planned and recorded before the lock in that order, applied
//! under it in that order, and settled by a run after a kill.

use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::names::Names;
use crate::engine::copy::cutover::carried::back_log::BackLog;
use crate::engine::copy::cutover::carried::bridge::BridgeTriggers;
use crate::engine::copy::cutover::carried::cascade::logging::CascadeLogging;
use crate::engine::copy::cutover::carried::class::{planned, Carried, Cut};
use crate::engine::copy::cutover::carried::foreign::ForeignKeys;
use crate::engine::copy::cutover::carried::own_triggers::OwnTriggers;
use crate::engine::copy::cutover::reopen::reopen;
use anyhow::Result;
use sqlx::MySqlConnection;

/// What one cut-over carries across under its lock, planned and recorded.
pub(crate) struct UnderLock {
    /// Foreign keys whose constraints move to the shadows (or stand in on outside children).
    foreign: ForeignKeys,
    /// The tables' own triggers, moved to their shadows.
    own: OwnTriggers,
    /// The cascade logging the group's cut-over rewrites.
    cascades: CascadeLogging,
    /// The bridge's triggers, put on the shadows before the tables' own.
    bridge: BridgeTriggers,
    /// The back log's triggers, put on the shadows for `revert`.
    back: BackLog,
}

impl UnderLock {
    /// Plans and records every class before the lock: the foreign keys and the cascade
    /// logging only where `foreign_keys` (some copied table of the job is in one).
    pub(crate) async fn record(
        conn: &mut MySqlConnection,
        cut: &Cut<'_, '_>,
        foreign_keys: bool,
    ) -> Result<UnderLock> {
        let foreign = if foreign_keys {
            planned::<ForeignKeys>(conn, cut).await?
        } else {
            ForeignKeys::default()
        };
        let cascades = if foreign_keys {
            planned::<CascadeLogging>(conn, cut).await?
        } else {
            CascadeLogging::default()
        };
        let own = planned::<OwnTriggers>(conn, cut).await?;
        let bridge = planned::<BridgeTriggers>(conn, cut).await?;
        let back = planned::<BackLog>(conn, cut).await?;
        Ok(UnderLock {
            foreign,
            own,
            cascades,
            bridge,
            back,
        })
    }

    /// Tables outside the cut-over its lock must hold as well: the children whose
    /// constraints move and the parents that stop logging its children, each once.
    pub(crate) fn also_locked<'a>(
        &'a self,
        schema: &'a str,
        tables: &[(&str, &Names)],
    ) -> Vec<(&'a str, &'a str)> {
        let mut also: Vec<(&str, &str)> = Vec::new();
        let outside = (self.foreign.moves.iter())
            .filter(|m| m.outside())
            .map(|m| (m.schema.as_str(), m.child.as_str()))
            .chain((self.cascades.at_cutover.parents().into_iter()).map(|p| (schema, p)));
        for t in outside {
            if !also.contains(&t) && !tables.iter().any(|(x, _)| t == (schema, *x)) {
                also.push(t);
            }
        }
        also
    }

    /// Whether a kill between this cut-over's steps and its rename would leave the
    /// application a half-moved schema: a child outside it constrained by a shadow, a table
    /// without its own triggers, a parent no longer logging cascades. Such a cut-over closes
    /// its tables (drops their drained logs) before its first step, so that until a run
    /// settles it the application's writes to them fail instead of going through wrong.
    pub(crate) fn tears(&self) -> bool {
        self.foreign.moves.iter().any(|m| m.outside())
            || !self.own.own.is_empty()
            || !self.cascades.at_cutover.statements.is_empty()
    }

    /// Under the lock, after the drains and before the rename, in order: the foreign keys,
    /// the bridge's triggers, the tables' own triggers (after the bridge's: they fire in
    /// that order), the back log's, then the cascade logging (last: the fewer milliseconds a
    /// kill could find the group's children without their cascades logged, the better).
    pub(crate) async fn apply(
        &self,
        locker: &mut MySqlConnection,
        cut: &Cut<'_, '_>,
    ) -> Result<()> {
        self.foreign.apply(locker, cut).await?;
        self.bridge.apply(locker, cut).await?;
        self.own.apply(locker, cut).await?;
        self.back.apply(locker, cut).await?;
        self.cascades.apply(locker, cut).await
    }
}

/// Settles what a cut-over left of its foreign-key and trigger moves, from their records:
/// `renamed` says whether the rename ran (then every table of the group is swapped). Then,
/// and only then, opens those of `tables` a cut-over closed and did not rename; returns the
/// ones sent back to their check, with their checkpoints ([`reopen`]). The cascade logging
/// is settled apart ([`CascadeLogging::settle`]): it needs the copies still logged.
pub(crate) async fn settle(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    renamed: bool,
    tables: &[&str],
) -> Result<Vec<(String, State)>> {
    let cut = Cut {
        tables,
        renamed,
        ..Cut::of(schema, job)
    };
    ForeignKeys::settle(conn, &cut).await?;
    OwnTriggers::settle(conn, &cut).await?;
    BackLog::settle(conn, &cut).await?;
    reopen(conn, schema, job, tables).await
}

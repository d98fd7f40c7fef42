//! What a group's cut-over carries across besides the rows, as one list of steps. Every class
//! has the same shape: **planned** by a pure function, **recorded** before anything moves,
//! **applied** at its instant, **settled** by the next run whatever instant a kill chose.
//!
//! | class | planned | recorded | applied | settled |
//! |---|---|---|---|---|
//! | foreign keys | [`super::foreign_sql`] | `_myrecode_moves` | under the lock | [`settle`] |
//! | the tables' own triggers | [`super::own_triggers_sql`] | `_myrecode_triggers` | under the lock, last before the rename | [`settle`] |
//! | cascade logging | [`super::cascade_plan`] | the triggers' bodies | under the lock | [`super::cascade::restore_cascades`] (a chain no trigger logs is checked again) |
//! | views, routines, events | [`super::objects_sql`] | `_myrecode_objects` | after the job's last rename ([`after_last`]) | [`after_last`] again |
//! | the schema's default | — | — | after the objects | [`after_last`] again |
//!
//! Column definitions, generated columns, CHECKs and the table's COMMENT are not here: they
//! are the shadow's own definition ([`super::shadow_sql`]), given at set-up.

use super::cascade::{apply_at_cutover, plan_at_cutover};
use super::cascade_plan::AtCutover;
use super::context::Ctx;
use super::cutover::reopen;
use super::foreign::{apply_moves, plan_moves, settle_moves};
use super::foreign_sql::{foreign_key_checks_sql, Move};
use super::objects::{apply_objects, record_objects, schema_default};
use super::own_triggers::{apply_triggers, plan_triggers, settle_triggers};
use super::own_triggers_sql::{OwnTrigger, Recode};
use super::shadow_sql::plans_collation;
use crate::bookkeeping::names::Names;
use crate::engine::table_plan::TablePlan;
use crate::recode::objects::Reading;
use anyhow::Result;
use sqlx::{Executor, MySqlConnection};
use std::collections::BTreeMap;

/// What one cut-over carries across under its lock, planned and recorded.
pub(super) struct Carried {
    /// Foreign keys whose constraints move to the shadows (or stand in on outside children).
    moves: Vec<Move>,
    /// The tables' own triggers, moved to their shadows.
    own: Vec<OwnTrigger>,
    /// How each table's triggers read their legacy text on the shadow.
    recode: BTreeMap<String, Recode>,
    /// The cascade logging the group's cut-over rewrites.
    cascades: AtCutover,
}

impl Carried {
    /// Plans and records every class before the lock. `foreign_keys`: whether any copied
    /// table of the job is in one; `logged`: the copies still to be swapped.
    pub(super) async fn record(
        conn: &mut MySqlConnection,
        schema: &str,
        job: &str,
        ctxs: &[Ctx<'_>],
        foreign_keys: bool,
        logged: &[TablePlan],
    ) -> Result<Carried> {
        let tables: Vec<(&str, &Names)> = ctxs
            .iter()
            .map(|c| (c.plan.table.as_str(), &c.names))
            .collect();
        let moves = if foreign_keys {
            plan_moves(conn, schema, job, &tables).await?
        } else {
            Vec::new()
        };
        let cascades = if foreign_keys {
            let group: Vec<&str> = tables.iter().map(|(t, _)| *t).collect();
            plan_at_cutover(conn, schema, &group, logged).await?
        } else {
            AtCutover::default()
        };
        let own = plan_triggers(conn, schema, job, ctxs).await?;
        let recode = ctxs
            .iter()
            .map(|c| (c.plan.table.clone(), c.recode()))
            .collect();
        Ok(Carried {
            moves,
            own,
            recode,
            cascades,
        })
    }

    /// Tables outside the cut-over its lock must hold as well: the children whose
    /// constraints move and the parents that stop logging its children, each once.
    pub(super) fn also_locked<'a>(
        &'a self,
        schema: &'a str,
        tables: &[(&str, &Names)],
    ) -> Vec<(&'a str, &'a str)> {
        let mut also: Vec<(&str, &str)> = Vec::new();
        let outside = self
            .moves
            .iter()
            .filter(|m| m.outside())
            .map(|m| (m.schema.as_str(), m.child.as_str()))
            .chain(self.cascades.parents().into_iter().map(|p| (schema, p)));
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
    pub(super) fn tears(&self) -> bool {
        self.moves.iter().any(|m| m.outside())
            || !self.own.is_empty()
            || !self.cascades.statements.is_empty()
    }

    /// Under the lock, after the drains and before the rename, in order: the foreign keys,
    /// the tables' own triggers, then the cascade logging (last: the fewer milliseconds a
    /// kill could find the group's children without their cascades logged, the better).
    pub(super) async fn apply(&self, locker: &mut MySqlConnection, schema: &str) -> Result<()> {
        if !self.moves.is_empty() {
            locker
                .execute(foreign_key_checks_sql(false).as_str())
                .await?;
            apply_moves(locker, &self.moves).await?;
        }
        if !self.own.is_empty() {
            apply_triggers(locker, schema, &self.own, &self.recode).await?;
        }
        apply_at_cutover(locker, schema, &self.cascades).await
    }
}

/// Settles what a cut-over left of its foreign-key and trigger moves, from their records:
/// `renamed` says whether the rename ran (then every table of the group is swapped). Then,
/// and only then, opens those of `tables` a cut-over closed and did not rename; returns the
/// ones sent back to their check ([`reopen`]).
pub(super) async fn settle(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    renamed: bool,
    tables: &[&str],
) -> Result<Vec<String>> {
    settle_moves(conn, schema, job, renamed).await?;
    settle_triggers(conn, schema, job).await?;
    reopen(conn, schema, job, tables).await
}

/// How the schema's views, routines and events are read, from the last group's copies.
pub(super) fn reading(ctxs: &[Ctx<'_>], plans: &[TablePlan]) -> Reading {
    let mut labels = Vec::new();
    for l in ctxs.iter().flat_map(|c| c.recode().labels) {
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    Reading {
        labels,
        collation: plans_collation(plans),
    }
}

/// Before the job's last cut-over: the views, routines and events to recreate, recorded.
pub(super) async fn record_last(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    reading: &Reading,
) -> Result<()> {
    record_objects(conn, schema, job, reading).await.map(|_| ())
}

/// After the job's last rename, or by the run after it: the recorded views, routines and
/// events recreated in UTF-8, then the schema's default.
pub(super) async fn after_last(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    plans: &[TablePlan],
) -> Result<()> {
    apply_objects(conn, schema, job).await?;
    schema_default(conn, schema, &plans_collation(plans)).await?;
    Ok(())
}

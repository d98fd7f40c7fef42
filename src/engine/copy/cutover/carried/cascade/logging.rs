//! The triggers that log cascaded rows (see [`crate::engine::copy::cutover::carried::cascade::plan`]) against the server: made
//! where missing, ended and moved by each group's cut-over, dropped with the job's last.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::is_copy_trigger;
use crate::bookkeeping::names::names;
use crate::bookkeeping::names::Names;
use crate::db::{errno, sqlmode};
use crate::engine::copy::cutover::carried::cascade::chains::{
    Event, Target, TooManyChains, MAX_CHAINS,
};
use crate::engine::copy::cutover::carried::cascade::plan::{
    at_cutover, cascade_triggers, reconcile_all, unlogged, AtCutover, Existing, HeadTriggers,
    Present,
};
use crate::engine::copy::cutover::carried::cascade::sql::{
    CASCADE_TRIGGERS_SQL, LEFT_CASCADE_TRIGGERS_SQL, SCHEMA_TRIGGERS_SQL,
};
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::foreign::foreign_keys;
use crate::engine::copy::cutover::carried::foreign_sql::ForeignKey;
use crate::engine::copy::cutover::swapped::still_to_swap;
use crate::engine::copy::setup::change_log::CUTOVER_LOCK_WAIT;
use crate::engine::copy::setup::sql::{drop_trigger_sql, gate_ddl, lock_wait_timeout_sql, log_ddl};
use crate::engine::copy::table::check_again::{check_again_from_start, checked_before};
use crate::engine::error::EngineError;
use crate::engine::table_plan::TablePlan;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};

/// Our cascade triggers in `schema` ([`Present`]).
async fn present(conn: &mut MySqlConnection, schema: &str) -> Result<Present> {
    let rows = sqlx::query(CASCADE_TRIGGERS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await
        .context("reading information_schema.TRIGGERS")?;
    let mut out = Present::default();
    for r in &rows {
        let (table, event, name, body): (String, String, String, String) =
            (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
        let event = if event.eq_ignore_ascii_case("DELETE") {
            Event::Delete
        } else {
            Event::Update
        };
        if names(&table).cascade.iter().flatten().any(|n| *n == name) {
            out.on.push((table, event, Existing { name, body }));
        } else {
            out.taken.push(name);
        }
    }
    Ok(out)
}

/// The copies among `plans` whose cascades are logged (those with a key: a keyless table is
/// rebuilt whole under its cut-over's lock, what cascades reached it included), with the
/// names their logs have.
fn targets<'a>(plans: &'a [TablePlan], logs: &'a [Names]) -> Vec<Target<'a>> {
    plans
        .iter()
        .zip(logs)
        .filter(|(p, _)| !p.key.is_empty())
        .map(|(p, n)| Target {
            table: &p.table,
            log: &n.log,
            key: &p.key,
        })
        .collect()
}

/// The job's refusal for a head with more chains than one trigger logs.
fn too_many(e: TooManyChains) -> anyhow::Error {
    EngineError::CascadeChains {
        table: e.table,
        event: e.event.sql(),
        limit: MAX_CHAINS,
    }
    .into()
}

/// The triggers the `targets` need, or the job's refusal when one head has too many chains.
fn wanted(fks: &[ForeignKey], schema: &str, targets: &[Target<'_>]) -> Result<Vec<HeadTriggers>> {
    // A parent in another schema is not followed (its cascades are not logged): see the README.
    cascade_triggers(fks, schema, targets).map_err(too_many)
}

/// Creates, replaces or drops the triggers that log the rows cascading actions change in the
/// copies still to be swapped (`plans`), on every table at the head of a chain of cascades
/// reaching one of them, to any depth ([`crate::engine::copy::cutover::carried::cascade::chains`]); the logs are created here if
/// missing (a child copied later starts with them). Idempotent: a trigger already as wanted
/// is left alone; a stale one (the chains changed since it was made: another version of
/// myrecode, a constraint added, a group swapped) is replaced by one under its other name
/// before it is dropped, so no cascade goes unlogged in between. Returns the copies some
/// chain reached while no trigger logged them (their copy may have missed a cascade, if it
/// had begun).
pub(crate) async fn ensure_cascade_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    plans: &[TablePlan],
) -> Result<Vec<String>> {
    let fks = foreign_keys(conn, schema).await?;
    let logs: Vec<Names> = plans.iter().map(|p| names(&p.table)).collect();
    let targets = targets(plans, &logs);
    let want = wanted(&fks, schema, &targets)?;
    let present = present(conn, schema).await?;
    if want.is_empty() && present.on.is_empty() {
        return Ok(Vec::new());
    }
    let went_without = unlogged(schema, &want, &present, &targets);
    conn.execute(gate_ddl(schema).as_str()).await?;
    for n in &logs {
        conn.execute(log_ddl(schema, n).as_str()).await?;
    }
    // A trigger's DDL waits for every transaction on its table and, meanwhile, queues the
    // application's statements behind it: a short wait, retried as any lock wait is.
    conn.execute(lock_wait_timeout_sql(CUTOVER_LOCK_WAIT).as_str())
        .await?;
    // Created under the application's sql_mode, which they run under (db::sqlmode).
    conn.execute(sqlmode::application_mode_sql().as_str())
        .await?;
    let mut result = Ok(went_without);
    for (table, sql) in reconcile_all(schema, &want, &present, &[]) {
        if let Err(e) = conn.execute(sql.as_str()).await {
            let fix = if errno::of(&e) == Some(errno::TABLE_ACCESS_DENIED) {
                ". Fix: GRANT TRIGGER on the schema to the job's user"
            } else {
                ""
            };
            result = Err(anyhow::Error::new(e).context(format!(
                "replacing a cascade-logging trigger on {table}{fix}"
            )));
            break;
        }
    }
    conn.execute(sqlmode::tool_mode_sql().as_str()).await?;
    result
}

/// [`ensure_cascade_triggers`] for the copies still to be swapped among `plans`; each one
/// that went unlogged after its copy had compared rows is sent back to its check
/// ([`check_again_from_start`]). Returns those copies, with the checkpoints that say so.
pub(crate) async fn restore_cascades(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    plans: &[TablePlan],
) -> Result<Vec<(String, State)>> {
    let live = still_to_swap(conn, job, plans).await?;
    let mut out = Vec::new();
    for table in ensure_cascade_triggers(conn, schema, &live).await? {
        let Some(plan) = live.iter().find(|p| p.table == table) else {
            continue;
        };
        let Some(mut state) = checkpoint::load(conn, schema, job, &table).await? else {
            continue;
        };
        if checked_before(&state) {
            tracing::warn!(table = %table, "cascades into it may have gone unlogged (a cut-over was interrupted): checking it again");
            check_again_from_start(conn, job, plan, &mut state).await?;
            out.push((table, state));
        }
    }
    Ok(out)
}

/// Drops the copy's triggers left on the shadows of `tables` (not swapped) by a cut-over that
/// did not rename: a shadow logs nothing while rows are copied into it.
pub(crate) async fn settle_shadow_cascades(
    conn: &mut MySqlConnection,
    schema: &str,
    tables: &[&str],
) -> Result<()> {
    let shadows: Vec<String> = tables.iter().map(|t| names(t).shadow).collect();
    let rows = sqlx::query(SCHEMA_TRIGGERS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await
        .context("reading information_schema.TRIGGERS")?;
    for r in &rows {
        let (name, on): (String, String) = (r.try_get(0)?, r.try_get(1)?);
        if is_copy_trigger(&name) && shadows.contains(&on) {
            conn.execute(drop_trigger_sql(schema, &name).as_str())
                .await?;
        }
    }
    Ok(())
}

/// Drops the cascade triggers the kept originals of `tables` (swapped) took with them: they
/// never fire, and the names are the live tables' to use.
pub(crate) async fn drop_kept_cascades(
    conn: &mut MySqlConnection,
    schema: &str,
    tables: &[&str],
) -> Result<()> {
    let present = present(conn, schema).await?;
    for t in tables {
        for name in names(t).cascade.iter().flatten() {
            if present.taken.contains(name) {
                conn.execute(drop_trigger_sql(schema, name).as_str())
                    .await?;
            }
        }
    }
    Ok(())
}

/// Drops the cascade-logging triggers of every table in `schema` that has them (after the
/// job's last cut-over, or when the job is aborted, before any change log goes).
pub(crate) async fn drop_cascade_triggers(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    let rows: Vec<String> = sqlx::query_scalar(LEFT_CASCADE_TRIGGERS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    for name in rows {
        conn.execute(drop_trigger_sql(schema, &name).as_str())
            .await?;
    }
    Ok(())
}

/// The cascade logging a group's cut-over rewrites ([`AtCutover`]): this group's copies no
/// longer logged by heads outside it, and its heads' logging of later copies put on their
/// shadows. Its record is the triggers themselves.
#[derive(Default)]
pub(crate) struct CascadeLogging {
    /// The statements, in order, and the parents they stop logging.
    pub(crate) at_cutover: AtCutover,
}

impl Carried for CascadeLogging {
    /// From every foreign key and cascade trigger of the schema: `cut.logged` are the copies
    /// still to be swapped, the group's (`cut.ctxs`) among them.
    async fn plan(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self> {
        let schema = cut.schema;
        let group: Vec<&str> = cut.ctxs.iter().map(|c| c.plan.table.as_str()).collect();
        let fks = foreign_keys(conn, schema).await?;
        let logs: Vec<Names> = cut.logged.iter().map(|p| names(&p.table)).collect();
        let present = present(conn, schema).await?;
        let at_cutover = at_cutover(&fks, schema, &group, &targets(cut.logged, &logs), &present)
            .map_err(too_many)?;
        Ok(CascadeLogging { at_cutover })
    }

    /// Nothing: the triggers on the server are the record ([`restore_cascades`] reads them).
    async fn record(&self, _: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<()> {
        Ok(())
    }

    /// Under the cut-over lock, the last of what it moves: the fewer milliseconds a kill could
    /// find the group's children without their cascades logged, the better.
    async fn apply(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()> {
        for sql in &self.at_cutover.statements {
            conn.execute(sql.as_str()).await.with_context(|| {
                format!(
                    "moving the cascade logging in {} at the cut-over",
                    cut.schema
                )
            })?;
        }
        Ok(())
    }

    /// The copy's triggers a cut-over that did not rename left on the shadows of
    /// `cut.tables` dropped ([`settle_shadow_cascades`]), then every cascade into the copies
    /// still to be swapped among `cut.logged` logged again ([`restore_cascades`]): returns
    /// those sent back to their check.
    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        settle_shadow_cascades(conn, cut.schema, cut.tables).await?;
        restore_cascades(conn, cut.schema, cut.job, cut.logged).await
    }
}

//! The triggers that log cascaded rows (see [`super::cascade_sql`]) against the server: made
//! where missing, ended and moved by each group's cut-over, dropped with the job's last.

use super::cascade_sql::{
    self, at_cutover, ensure, AtCutover, Existing, Logged, SCHEMA_TRIGGERS_SQL,
};
use super::checker::check_batch;
use super::context::{table_exists, Ctx};
use super::foreign::foreign_keys;
use super::names::{is_copy_trigger, names};
use super::replay::replay_some;
use super::setup::create_stage;
use super::sql::{drop_trigger_sql, gate_ddl, log_ddl};
use super::Phase;
use crate::engine::checkpoint::{self, State};
use crate::engine::plan::TablePlan;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::HashSet;

/// Every trigger of `schema`: name and table.
async fn existing(conn: &mut MySqlConnection, schema: &str) -> Result<Vec<Existing>> {
    let rows = sqlx::query(SCHEMA_TRIGGERS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await
        .context("reading information_schema.TRIGGERS")?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<_, sqlx::Error>>()
        .map_err(Into::into)
}

/// The children among `plans` whose cascades are logged: those with a key.
fn logged(plans: &[TablePlan]) -> Vec<Logged<'_>> {
    plans
        .iter()
        .filter(|p| !p.key.is_empty())
        .map(|p| Logged {
            table: &p.table,
            key: &p.key,
        })
        .collect()
}

/// The copies among `plans` not swapped yet: no checkpoint, or one not done whose shadow is
/// still there (a shadow gone means the rename ran and only the finish is left).
pub(super) async fn still_to_swap(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
) -> Result<Vec<TablePlan>> {
    let mut out = Vec::new();
    for p in plans {
        let keep = match checkpoint::load(conn, &p.schema, job, &p.table).await? {
            None => true,
            Some(s) if s.done => false,
            Some(_) => table_exists(conn, &p.schema, &names(&p.table).shadow).await?,
        };
        if keep {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Makes every cascade into a child still to be swapped (`plans`) logged: the missing
/// triggers created (with the change logs they write), an older myrecode's per-parent
/// triggers replaced. Returns the children that went without while their triggers were
/// missing (their copy may have missed a cascade, if it had begun).
pub(super) async fn ensure_cascade_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    plans: &[TablePlan],
) -> Result<Vec<String>> {
    let fks = foreign_keys(conn, schema).await?;
    let have = existing(conn, schema).await?;
    let plan = ensure(&fks, schema, &logged(plans), &have);
    if plan.create.is_empty() && plan.legacy.is_empty() {
        return Ok(plan.unlogged);
    }
    conn.execute(gate_ddl(schema).as_str()).await?;
    for p in plans {
        conn.execute(log_ddl(schema, &names(&p.table)).as_str())
            .await?;
    }
    for (parent, name, ddl) in &plan.create {
        // The name may be left on a kept original or a shadow: only the live parent's counts.
        conn.execute(drop_trigger_sql(schema, name).as_str())
            .await?;
        conn.execute(ddl.as_str()).await.with_context(|| {
            format!("creating trigger {name} on {parent}. Fix: GRANT TRIGGER on the schema to the job's user")
        })?;
    }
    // Only once every pair is in place: a cascade in between is logged twice, never missed.
    for (_, name) in &plan.legacy {
        conn.execute(drop_trigger_sql(schema, name).as_str())
            .await?;
    }
    Ok(plan.unlogged)
}

/// Whether a copy in this state has compared rows already, so a cascade it missed would stay
/// missed unless it is checked again (a copy still copying checks every row after).
fn checked_before(state: &State) -> bool {
    matches!(Phase::of(state), Phase::Checking | Phase::Replaying)
}

/// Sends a copy back to the start of its check pass: every row is compared with the shadow
/// again, and what a missed cascade changed is queued for replay. Saved at once, so a kill
/// before the check is done still checks it.
pub(super) async fn check_again_from_start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    state: &mut State,
) -> Result<()> {
    let mut next = state.clone();
    next.phase = Phase::Checking.as_str().into();
    next.last_key = None;
    checkpoint::save(conn, &plan.schema, job, &plan.table, &next).await?;
    *state = next;
    Ok(())
}

/// [`ensure_cascade_triggers`] for the copies still to be swapped among `plans`; each child
/// that went unlogged after its copy had compared rows is sent back to its check
/// ([`check_again_from_start`]). Returns those children.
pub(super) async fn restore_cascades(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    plans: &[TablePlan],
) -> Result<Vec<String>> {
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
            out.push(table);
        }
    }
    Ok(out)
}

/// Runs a copy's check pass to its end, here and now (a copy sent back to it while the job
/// waits for or retries a cut-over), replaying what it queues.
pub(super) async fn check_now(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<u64> {
    let mut differed = 0;
    create_stage(conn, ctx).await?;
    while Phase::of(state) == Phase::Checking {
        differed += check_batch(conn, ctx, job, ctx.plan.batch_size.max(1), state).await?;
        replay_some(conn, ctx, job, state, 1, &mut HashSet::new()).await?;
    }
    Ok(differed)
}

/// Drops the copy's triggers left on the shadows of `tables` (not swapped) by a cut-over that
/// did not rename: a shadow logs nothing while rows are copied into it.
pub(super) async fn settle_shadow_cascades(
    conn: &mut MySqlConnection,
    schema: &str,
    tables: &[&str],
) -> Result<()> {
    let shadows: Vec<String> = tables.iter().map(|t| names(t).shadow).collect();
    for (name, on) in existing(conn, schema).await? {
        if is_copy_trigger(&name) && shadows.contains(&on) {
            conn.execute(drop_trigger_sql(schema, &name).as_str())
                .await?;
        }
    }
    Ok(())
}

/// What the cut-over of `group` does with the cascade-logging triggers (planned before its
/// lock): `plans` are the copies still to be swapped, the group's among them.
pub(super) async fn plan_at_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
    group: &[&str],
    plans: &[TablePlan],
) -> Result<AtCutover> {
    let fks = foreign_keys(conn, schema).await?;
    let have = existing(conn, schema).await?;
    Ok(at_cutover(&fks, schema, group, &logged(plans), &have))
}

/// Under the cut-over lock: this group's children no longer logged by parents outside it,
/// and its parents' logging of later children put on their shadows.
pub(super) async fn apply_at_cutover(
    locker: &mut MySqlConnection,
    schema: &str,
    plan: &AtCutover,
) -> Result<()> {
    for (parent, name) in &plan.drop {
        locker
            .execute(drop_trigger_sql(schema, name).as_str())
            .await
            .with_context(|| format!("dropping trigger {name} from {parent}"))?;
    }
    for (shadow, name, ddl) in &plan.create {
        locker
            .execute(ddl.as_str())
            .await
            .with_context(|| format!("creating trigger {name} on {shadow}"))?;
    }
    Ok(())
}

/// Drops the cascade-logging triggers of every table in `schema` that has them (after the
/// job's last cut-over, or when the job is aborted, before any change log goes).
pub(super) async fn drop_cascade_triggers(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    let rows: Vec<String> = sqlx::query_scalar(cascade_sql::CASCADE_TRIGGERS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    for name in rows {
        conn.execute(drop_trigger_sql(schema, &name).as_str())
            .await?;
    }
    Ok(())
}

//! Set-up of a copy: the shadow with the target definitions, the change log, the triggers
//! that fill it, the session's staging table.

use super::context::{is_sentry, table_exists, trigger_names, Ctx};
use super::rebuild_sql::gate_trigger_ddl;
use super::sql::{
    self, create_like_sql, drop_table_sql, gate_ddl, lock_for_triggers_sql, lock_wait_timeout_sql,
    log_ddl, trigger_ddl, UNLOCK_TABLES,
};
use super::write_sql;
use super::Phase;
use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::names;
use crate::bookkeeping::names::Names;
use crate::db::keyset::KeyColumn;
use crate::db::{errno, quote};
use crate::engine::error::EngineError;
use crate::engine::priors;
use crate::engine::table_plan::TablePlan;
use crate::job::model::Strategy;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// Longest wait for the table locks that add the triggers and that cut over
/// (`lock_wait_timeout`), in seconds: while `LOCK TABLES` waits for a long transaction, the
/// application's statements queue behind it.
pub const CUTOVER_LOCK_WAIT: u32 = 2;

/// The refusal of a table copied once already by another job whose kept original is still
/// there (its name is the one this copy's cut-over needs), or `None`.
async fn kept_original(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
) -> Result<Option<EngineError>> {
    let (schema, old) = (plan.schema.as_str(), names(&plan.table).old);
    Ok(
        (table_exists(conn, schema, &old).await? && !is_sentry(conn, schema, &old).await?).then(
            || EngineError::AlreadyCopied {
                table: plan.table.clone(),
                old: quote::table(schema, &old),
            },
        ),
    )
}

/// The copies of `plans` that have not started (no checkpoint of this job).
async fn fresh_copies(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
) -> Result<Vec<TablePlan>> {
    let Some(first) = plans.first() else {
        return Ok(Vec::new());
    };
    let bookkept = table_exists(conn, &first.schema, checkpoint::CHECKPOINT).await?;
    let mut out = Vec::new();
    for p in plans.iter().filter(|p| p.strategy == Strategy::Copy) {
        let started = bookkept
            && sqlx::query(&checkpoint::exists_sql(&p.schema))
                .bind(job)
                .bind(&p.table)
                .fetch_optional(&mut *conn)
                .await?
                .is_some();
        if !started {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Before the job writes anything: a copy that would start afresh (no checkpoint of this
/// job) on a table whose kept original from an earlier copy is still there stops the run
/// (and the rehearsal) now, rather than after the tables before it were recoded.
pub async fn refuse_kept_originals(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
) -> Result<()> {
    for p in fresh_copies(conn, job, plans).await? {
        if let Some(e) = kept_original(conn, &p).await? {
            return Err(e.into());
        }
    }
    Ok(())
}

/// A fresh start (the refusal rules already passed): shadow, log, triggers, priors, first checkpoint.
pub(super) async fn start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    n: &Names,
) -> Result<State> {
    let schema = plan.schema.as_str();
    if let Some(e) = kept_original(conn, plan).await? {
        return Err(e.into());
    }
    let shadow = quote::table(schema, &n.shadow);
    conn.execute(drop_table_sql(schema, &n.shadow).as_str())
        .await?;
    conn.execute(create_like_sql(schema, &plan.table, &n.shadow).as_str())
        .await
        .with_context(|| format!("creating the shadow table {shadow}"))?;
    if let Some(engine) = &plan.engine {
        if let Err(e) = conn
            .execute(sql::engine_sql(schema, &n.shadow, engine).as_str())
            .await
        {
            conn.execute(drop_table_sql(schema, &n.shadow).as_str())
                .await
                .ok();
            return Err(anyhow::Error::new(e).context(format!(
                "giving {shadow} the engine {engine} the job asks for. Nothing was changed. Fix: make the table's definition one {engine} accepts, or remove `engine:` from the job"
            )));
        }
    }
    let priors_json = priors::compute(conn, plan).await?;
    let labels = super::shadow::labels(plan, &crate::bookkeeping::priors::parse(&priors_json));
    let alter = match super::shadow::alter_sql(conn, plan, &n.shadow, &labels).await {
        Ok(a) => a,
        Err(e) => {
            conn.execute(drop_table_sql(schema, &n.shadow).as_str())
                .await
                .ok();
            return Err(e);
        }
    };
    if let Err(e) = conn.execute(alter.as_str()).await {
        conn.execute(drop_table_sql(schema, &n.shadow).as_str())
            .await
            .ok();
        if errno::of(&e).is_some_and(|n| errno::TOO_LARGE.contains(&n)) {
            return Err(EngineError::TooLarge {
                table: plan.table.clone(),
                quoted: quote::table(schema, &plan.table),
                detail: e.to_string(),
            }
            .into());
        }
        return Err(anyhow::Error::new(e).context(format!(
            "giving {shadow} the job's target definitions. Nothing was changed. Fix: correct the `target:` of the job's columns as the server's reason says (`myrecode plan --check` builds the same definition and names the problem before anything runs)"
        )));
    }
    conn.execute(log_ddl(schema, n).as_str()).await?;
    let s = State {
        fingerprint: plan.fingerprint.clone(),
        priors: priors_json,
        // A keyless table has nothing to copy ahead: it waits for the cut-over's rebuild.
        phase: if plan.key.is_empty() {
            Phase::Replaying
        } else {
            Phase::Copying
        }
        .as_str()
        .into(),
        ..State::default()
    };
    create_triggers(conn, schema, &plan.table, n, &plan.key).await?;
    checkpoint::save(conn, schema, job, &plan.table, &s).await?;
    Ok(s)
}

pub(super) async fn ensure_triggers(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<()> {
    let b = ctx.plan;
    create_triggers(conn, &b.schema, &b.table, &ctx.names, &b.key).await
}

/// Creates whichever of the three triggers is missing, all under one brief `LOCK TABLES … WRITE`,
/// so no application statement runs while only some of them exist.
pub(super) async fn create_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    n: &Names,
    key: &[KeyColumn],
) -> Result<()> {
    let have = trigger_names(conn, schema, table).await?;
    if n.triggers.iter().all(|t| have.contains(t)) {
        return Ok(());
    }
    let theirs = super::own_triggers::own_triggers(conn, schema, table).await?;
    let precedes = ["INSERT", "UPDATE", "DELETE"].map(|event| {
        theirs
            .iter()
            .filter(|t| {
                t.timing.eq_ignore_ascii_case("AFTER") && t.event.eq_ignore_ascii_case(event)
            })
            .min_by_key(|t| t.order)
            .map(|t| t.name.clone())
    });
    let ddl = if key.is_empty() {
        gate_trigger_ddl(schema, table, n, &precedes)
    } else {
        trigger_ddl(schema, table, n, key, &precedes)
    };
    let missing: Vec<(&String, String)> = n
        .triggers
        .iter()
        .zip(ddl)
        .filter(|(name, _)| !have.contains(name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    conn.execute(gate_ddl(schema).as_str())
        .await
        .context("creating the cut-over gate table")?;
    conn.execute(lock_wait_timeout_sql(CUTOVER_LOCK_WAIT).as_str())
        .await?;
    conn.execute(lock_for_triggers_sql(schema, table, &n.log).as_str())
        .await
        .context("locking the table to add the change-log triggers")?;
    let mut result = Ok(());
    for (name, ddl) in missing {
        if let Err(e) = conn.execute(ddl.as_str()).await {
            result = Err(anyhow::Error::new(e).context(format!(
                "creating trigger {name}. Fix: GRANT TRIGGER on the schema to the job's user"
            )));
            break;
        }
    }
    conn.execute(UNLOCK_TABLES).await?;
    result
}

/// (Re)creates this session's staging table: the key columns as in the table, a value and a flag per job column.
pub(super) async fn create_stage(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<()> {
    conn.execute(write_sql::stage_drop_sql().as_str()).await?;
    conn.execute(write_sql::stage_ddl(&ctx.key_types, ctx.job_columns.len()).as_str())
        .await
        .context("creating the session's staging table. Fix: GRANT CREATE TEMPORARY TABLES on the schema to the job's user")?;
    Ok(())
}

/// Empties the staging table. Only outside a transaction: `TRUNCATE` commits (even for a
/// temporary table), but it is far cheaper than deleting a batch's rows inside one.
pub(super) async fn clear_stage(conn: &mut MySqlConnection) -> Result<()> {
    conn.execute(write_sql::stage_truncate_sql().as_str())
        .await
        .context("emptying the staging table")?;
    Ok(())
}

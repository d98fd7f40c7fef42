//! Set-up of a copy: the shadow with the target definitions, the change log, the triggers
//! that fill it, the session's staging table.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::names;
use crate::bookkeeping::names::Names;
use crate::db::keyset::KeyColumn;
use crate::db::{errno, quote, sqlmode};
use crate::engine::copy::catalog::{is_sentry, table_exists, trigger_names};

use crate::engine::copy::phase::Phase;
use crate::engine::copy::setup::back_log_sql::back_log_ddl;
use crate::engine::copy::setup::sql::{
    self, create_like_sql, drop_table_sql, gate_ddl, gate_trigger_ddl, lock_for_triggers_sql,
    lock_wait_timeout_sql, log_ddl, trigger_ddl, UNLOCK_TABLES,
};
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
/// job) on a table whose kept original from an earlier copy is still there, or one of whose
/// names is taken by the user's table or trigger, stops the run (and the rehearsal) now,
/// rather than after the tables before it were recoded.
pub async fn refuse_kept_originals(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
) -> Result<()> {
    let fresh = fresh_copies(conn, job, plans).await?;
    for p in &fresh {
        if let Some(e) = kept_original(conn, p).await? {
            return Err(e.into());
        }
    }
    // A shadow, log or trigger name taken by the user's is refused as well (see `ownership`).
    super::ownership::refuse_taken(conn, &fresh).await
}

/// A fresh start (the refusal rules already passed): shadow, log, triggers, priors, first checkpoint.
pub(crate) async fn start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    n: &Names,
) -> Result<State> {
    let schema = plan.schema.as_str();
    if let Some(e) = kept_original(conn, plan).await? {
        return Err(e.into());
    }
    if let Some(t) = super::ownership::taken_names(conn, schema, &plan.table)
        .await?
        .first()
    {
        return Err(EngineError::NotOurs {
            kind: t.kind,
            name: quote::table(schema, &t.name),
            purpose: format!("myrecode needs the name for {} '{}'", t.purpose, plan.table),
            owner: format!("table '{}'", plan.table),
        }
        .into());
    }
    // The marked log first: a shadow a kill leaves after it is known for ours by it.
    conn.execute(log_ddl(schema, n).as_str()).await?;
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
            undo(conn, schema, n).await;
            return Err(anyhow::Error::new(e).context(format!(
                "giving {shadow} the engine {engine} the job asks for. Nothing was changed. Fix: make the table's definition one {engine} accepts, or remove `engine:` from the job"
            )));
        }
    }
    let priors_json = priors::compute(conn, plan).await?;
    let labels = crate::engine::copy::setup::shadow::labels(
        plan,
        &crate::bookkeeping::priors::parse(&priors_json),
    );
    let alter =
        match crate::engine::copy::setup::shadow::alter_sql(conn, plan, &n.shadow, &labels).await {
            Ok(a) => a,
            Err(e) => {
                undo(conn, schema, n).await;
                return Err(e);
            }
        };
    if let Err(e) = conn.execute(alter.as_str()).await {
        undo(conn, schema, n).await;
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

/// Undoes a start whose shadow could not be built: shadow and log go (no trigger names the
/// log yet), so "Nothing was changed" holds.
async fn undo(conn: &mut MySqlConnection, schema: &str, n: &Names) {
    for t in [&n.shadow, &n.log] {
        conn.execute(drop_table_sql(schema, t).as_str()).await.ok();
    }
}

/// Creates whichever change-log trigger a resumed copy of `plan` is missing.
pub(crate) async fn ensure_triggers(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    n: &Names,
) -> Result<()> {
    create_triggers(conn, &plan.schema, &plan.table, n, &plan.key).await
}

/// Creates whichever of the three triggers is missing, all under one brief `LOCK TABLES … WRITE`,
/// so no application statement runs while only some of them exist.
pub(crate) async fn create_triggers(
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
    let theirs = crate::engine::copy::catalog::own_triggers(conn, schema, table).await?;
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
    // The triggers name the back log (see `trigger_ddl`): it must be there before them.
    if sql::has_back_log(key) {
        conn.execute(back_log_ddl(schema, n).as_str())
            .await
            .context("creating the back log `revert` reads after the cut-over")?;
    }
    conn.execute(lock_wait_timeout_sql(CUTOVER_LOCK_WAIT).as_str())
        .await?;
    conn.execute(lock_for_triggers_sql(schema, table, &n.log).as_str())
        .await
        .context("locking the table to add the change-log triggers")?;
    // Created under the application's sql_mode, which they run under (db::sqlmode).
    conn.execute(sqlmode::application_mode_sql().as_str())
        .await?;
    let mut result = Ok(());
    for (name, ddl) in missing {
        if let Err(e) = conn.execute(ddl.as_str()).await {
            result = Err(anyhow::Error::new(e).context(format!(
                "creating trigger {name}. Fix: GRANT TRIGGER on the schema to the job's user"
            )));
            break;
        }
    }
    conn.execute(sqlmode::tool_mode_sql().as_str()).await?;
    conn.execute(UNLOCK_TABLES).await?;
    result
}

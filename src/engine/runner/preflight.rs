//! The run's first step, before anything is written (and before a rehearsal says anything):
//! connected in the job's schema, a cut-over a killed run left half-moved settled, the job
//! planned against the live schema, refused tables stopping `--execute`, a bookkeeping table or
//! a copy's name taken by the user's refused, the privileges the job needs read from the
//! server's grants (and UPDATE tried), the replicas surveyed, a table whose earlier copy's
//! original is still kept refused.

use super::options::RunOptions;
use crate::bookkeeping::checkpoint;
use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::engine::copy;
use crate::engine::error::EngineError;
use crate::engine::job_lock;
use crate::engine::plans::{plans, Plans};
use crate::engine::replicas::{self, Surveyed};
use crate::engine::table_plan::TablePlan;
use crate::inventory::model::Table;
use crate::job::model::{Job, Strategy};
use anyhow::{anyhow, Result};
use sqlx::{Executor, MySqlConnection};

/// What the preflight found, for the steps after it.
pub(super) struct Preflight {
    /// The connection the run goes on with.
    pub conn: MySqlConnection,
    /// The primary's settings, in the job's schema.
    pub cfg: ConnectionConfig,
    /// Every table of the job, planned or refused (the rehearsal says each).
    pub planned: Plans,
    /// The tables that may run, in job order.
    pub plans: Vec<TablePlan>,
    /// Their live tables, in the same order.
    pub tables: Vec<Table>,
    /// The replicas found and named, with their settings.
    pub surveyed: Surveyed,
    /// The connection holding the job's lock for the run's life (`--execute` only).
    pub job_lock: Option<MySqlConnection>,
}

/// Checks the job against the live schema and the servers; an error when it may not run
/// (with `--execute`: when a table is refused, too).
pub(super) async fn preflight(
    cfg: &ConnectionConfig,
    job: &Job,
    opts: &RunOptions,
) -> Result<Preflight> {
    let cfg = cfg.with_database(Some(&job.schema));
    let mut conn = cfg.connect_one().await?;
    // A table of the user's under a bookkeeping table's name is never read or written as ours.
    checkpoint::refuse_foreign(&mut conn, &job.schema).await?;
    let job_lock = if opts.execute {
        let held = job_lock::hold(&cfg, &job.schema, &opts.job_id).await?;
        settle_interrupted_cutover(&mut conn, job, &opts.job_id).await?;
        Some(held)
    } else {
        None
    };
    let mut planned = plans(&mut conn, job).await?;
    lift_finished(&mut conn, &job.schema, &mut planned, &opts.job_id).await?;
    // Refused before anything that writes: the checkpoint tables, a shadow, a trigger.
    if opts.execute {
        if let Some(r) = planned.refused() {
            return Err(EngineError::Refused(r).into());
        }
    }
    let (plans, tables) = planned.ready();
    super::grants::check_grants(&mut conn, &job.schema, &plans).await?;
    check_privileges(&mut conn, &plans).await?;
    let surveyed = replicas::survey(&mut conn, &cfg, job).await?;
    copy::refuse_kept_originals(&mut conn, &opts.job_id, &plans).await?;
    Ok(Preflight {
        conn,
        cfg,
        planned,
        plans,
        tables,
        surveyed,
        job_lock,
    })
}

/// Settles a cut-over a killed run left half-moved: read so, the schema would be planned
/// wrong. Nothing is written unless a cut-over left something to settle.
async fn settle_interrupted_cutover(
    conn: &mut MySqlConnection,
    job: &Job,
    job_id: &str,
) -> Result<()> {
    let copies: Vec<&str> = job
        .tables
        .iter()
        .filter(|t| t.strategy == Strategy::Copy)
        .map(|t| t.name.as_str())
        .collect();
    if !copies.is_empty() {
        copy::group::settle_interrupted(conn, &job.schema, job_id, &copies).await?;
    }
    Ok(())
}

/// Lifts the refusals of tables this job already finished with this very plan: a table
/// copied and cut over may have its triggers and foreign keys back (as the refusal's fix
/// says), and a rerun must still say "done" rather than refuse. Read-only: no checkpoint
/// table yet means nothing finished.
async fn lift_finished(
    conn: &mut MySqlConnection,
    schema: &str,
    plans: &mut Plans,
    job_id: &str,
) -> Result<()> {
    if plans.entries.iter().all(|e| e.refusals.is_empty()) {
        return Ok(());
    }
    let exists: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
    )
    .bind(schema)
    .bind(checkpoint::CHECKPOINT)
    .fetch_one(&mut *conn)
    .await?;
    if exists == 0 {
        return Ok(());
    }
    let sql = format!(
        "SELECT COUNT(*) FROM {} WHERE job = ? AND tbl = ? AND fingerprint = ? AND done <> 0",
        quote::table(schema, checkpoint::CHECKPOINT)
    );
    for e in plans.entries.iter_mut().filter(|e| !e.refusals.is_empty()) {
        let Some((p, _)) = &e.planned else { continue };
        let done: i64 = sqlx::query_scalar(&sql)
            .bind(job_id)
            .bind(&p.table)
            .bind(&p.fingerprint)
            .fetch_one(&mut *conn)
            .await?;
        if done > 0 {
            e.refusals.clear();
        }
    }
    Ok(())
}

/// Checks the UPDATE privilege on each table without changing a row.
async fn check_privileges(conn: &mut MySqlConnection, plans: &[TablePlan]) -> Result<()> {
    for p in plans {
        let c = quote::ident(&p.columns[0].name);
        let sql = format!(
            "UPDATE {} SET {c} = {c} WHERE 1 = 0",
            quote::table(&p.schema, &p.table)
        );
        let t = quote::table(&p.schema, &p.table);
        conn.execute(sql.as_str()).await.map_err(|e| {
            use crate::db::errno::{self, COLUMN_ACCESS_DENIED, TABLE_ACCESS_DENIED};
            // Only the server's refusal is a missing privilege (a connection reset here once
            // was called one, with a GRANT for its fix).
            match errno::of(&e) {
                Some(TABLE_ACCESS_DENIED | COLUMN_ACCESS_DENIED) => anyhow!(
                    "missing privilege on {t}: {e}. Fix: GRANT SELECT, UPDATE ON {t} TO the job's user"
                ),
                _ => anyhow::Error::new(e).context(format!("checking the UPDATE privilege on {t}")),
            }
        })?;
    }
    Ok(())
}

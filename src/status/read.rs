//! Gathers a job's [`Facts`] from the server, reading only: no table is created or altered,
//! and the session is made read-only first so a slip could not write either.

use super::sql::{checkpoints_sql, control_sql, listed_sql, tables_sql, READ_ONLY_SQL};
use super::{build, Checkpoint, Control, Facts, JobStatus, Phase, ReplicaStatus};
use crate::bookkeeping::checkpoint::{self, CHECKPOINT, QUARANTINE};
use crate::bookkeeping::control_table::CONTROL;
use crate::db::errno;
use crate::engine::copy;
use crate::engine::replicas::watch::{states_sql, REPLICA_STATE};
use crate::job::model::{Job, Strategy};
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::HashMap;

/// Reads where `job` (run under the name `job_id`) stands, on a connection to any schema.
pub async fn read(conn: &mut MySqlConnection, job: &Job, job_id: &str) -> Result<JobStatus> {
    conn.execute(READ_ONLY_SQL)
        .await
        .context("making the status session read-only")?;
    let schema = job.schema.as_str();
    let mut names: Vec<String> = vec![
        CHECKPOINT.into(),
        CONTROL.into(),
        REPLICA_STATE.into(),
        QUARANTINE.into(),
    ];
    for t in &job.tables {
        names.push(t.name.clone());
        if t.strategy == Strategy::Copy {
            let n = crate::bookkeeping::names::names(&t.name);
            names.extend([n.log, n.spare_log]);
        }
    }
    let sql = tables_sql(names.len());
    let mut q = sqlx::query(&sql).bind(schema);
    for n in &names {
        q = q.bind(n);
    }
    let existing: HashMap<String, Option<u64>> = q
        .fetch_all(&mut *conn)
        .await
        .context("reading the job's tables from information_schema")?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut facts = Facts {
        bookkeeping: existing.contains_key(CHECKPOINT),
        estimates: job
            .tables
            .iter()
            .filter_map(|t| {
                existing
                    .get(&t.name)
                    .map(|e| (t.name.clone(), e.unwrap_or(0)))
            })
            .collect(),
        ..Facts::default()
    };
    if facts.bookkeeping {
        facts.checkpoints = checkpoints(conn, schema, job_id).await?;
    }
    for t in job.tables.iter().filter(|t| t.strategy == Strategy::Copy) {
        let n = crate::bookkeeping::names::names(&t.name);
        if !existing.contains_key(&n.log) && existing.contains_key(&n.spare_log) {
            facts.closed.push(t.name.clone());
        }
    }
    if existing.contains_key(CONTROL) {
        facts.control = control(conn, schema, job_id).await?;
    }
    if existing.contains_key(REPLICA_STATE) {
        facts.replicas = replicas(conn, schema, job_id).await?;
    }
    // The backlog of each copy underway: a done copy's log is drained and kept only for cleanup.
    let provisional = build(job, job_id, &facts);
    for t in job.tables.iter().filter(|t| t.strategy == Strategy::Copy) {
        let log = crate::bookkeeping::names::names(&t.name).log;
        let underway = provisional
            .tables
            .iter()
            .any(|s| s.table == t.name && !matches!(s.phase, Phase::NotStarted | Phase::Done));
        if underway && existing.contains_key(&log) {
            // A cut-over drops its drained logs under its lock and renames the spares into
            // their place: between the listing above and this count the log may be gone for
            // that instant (1146), which is no failure of `status`; it has then no backlog.
            let n: i64 = match sqlx::query_scalar(&copy::count_sql(schema, &log))
                .fetch_one(&mut *conn)
                .await
            {
                Err(e) if errno::of(&e) == Some(errno::NO_SUCH_TABLE) => continue,
                counted => counted.with_context(|| format!("counting the change log {log}"))?,
            };
            facts.backlogs.insert(t.name.clone(), n.max(0) as u64);
        }
        if underway && existing.contains_key(QUARANTINE) {
            let n: i64 = sqlx::query_scalar(&listed_sql(schema))
                .bind(job_id)
                .bind(&t.name)
                .fetch_one(&mut *conn)
                .await
                .context("counting a copy's undecided values")?;
            facts.undecided.insert(t.name.clone(), n.max(0) as u64);
        }
    }
    let mut status = build(job, job_id, &facts);
    if let Some(r) = crate::engine::bridge::recorded(conn, schema, job_id).await? {
        let (before, after) = crate::engine::bridge::sessions(conn, schema, &r)
            .await
            .context("counting the application's sessions")?;
        status.bridge = Some(super::BridgeStatus {
            legacy: r.legacy,
            users: r.users,
            on: r.swap_mark.is_some(),
            removed: r.removed,
            legacy_sessions: before,
            sessions_after: after,
        });
    }
    Ok(status)
}

/// This job's checkpoint rows, whatever columns the table has so far.
async fn checkpoints(
    conn: &mut MySqlConnection,
    schema: &str,
    job_id: &str,
) -> Result<Vec<Checkpoint>> {
    let has = checkpoint::columns_of(conn, schema, CHECKPOINT).await?;
    let rows = sqlx::query(&checkpoints_sql(schema, &has))
        .bind(job_id)
        .fetch_all(&mut *conn)
        .await
        .context("reading the job's checkpoints")?;
    let count = |r: &sqlx::mysql::MySqlRow, i: usize| r.get::<i64, _>(i).max(0) as u64;
    Ok(rows
        .iter()
        .map(|r| Checkpoint {
            table: r.get(0),
            done: r.get::<i8, _>(1) != 0,
            rows_read: count(r, 2),
            rows_changed: count(r, 3),
            rows_quarantined: count(r, 4),
            rows_conflicted: count(r, 5),
            phase: r.get(6),
            rows_per_sec: r.get(7),
            updated_at: r.get(8),
            idle_secs: r.get::<Option<i64>, _>(9).map(|us| us as f64 / 1e6),
        })
        .collect())
}

/// This job's control row, if any, whatever columns the table has so far.
async fn control(
    conn: &mut MySqlConnection,
    schema: &str,
    job_id: &str,
) -> Result<Option<Control>> {
    let has = checkpoint::columns_of(conn, schema, CONTROL).await?;
    let row = sqlx::query(&control_sql(schema, &has))
        .bind(job_id)
        .fetch_optional(&mut *conn)
        .await
        .context("reading the job's control row")?;
    Ok(row.map(|r| Control {
        command: r.get(0),
        waiting: r.get(1),
        waiting_secs: r.get::<Option<i64>, _>(2).map(|us| us as f64 / 1e6),
        argument: r.get::<Option<String>, _>(3).filter(|a| !a.is_empty()),
    }))
}

/// The job's replicas as its run last sampled them.
async fn replicas(
    conn: &mut MySqlConnection,
    schema: &str,
    job_id: &str,
) -> Result<Vec<ReplicaStatus>> {
    let rows = sqlx::query(&states_sql(schema))
        .bind(job_id)
        .fetch_all(&mut *conn)
        .await
        .context("reading the job's replica samples")?;
    Ok(rows
        .iter()
        .map(|r| ReplicaStatus {
            replica: r.get(0),
            state: r.get(1),
            lag_ms: r.get::<Option<i64>, _>(2).map(|v| v.max(0) as u64),
            detail: r.get(3),
            sampled_at: r.get(4),
        })
        .collect())
}

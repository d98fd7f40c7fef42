//! Drives a job: checks it against the live schema, rehearses or executes each table (in place or by online copy), retries transient failures.

use super::checkpoint;
use super::copy;
use super::events::{Event, Events};
use super::inplace;
use super::pace::{self, Pacer};
use super::plan::{ColumnPlan, TableOutcome, TablePlan};
use super::recode::Source;
use super::retry;
use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::detect::{Label, DEFAULT_THRESHOLD};
use crate::inventory::model::{ColumnKind, Table};
use crate::inventory::{self, Scope};
use crate::job::model::{Cutover, Job, Strategy};
use crate::scan::read::key_columns;
use anyhow::{anyhow, bail, Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Write (otherwise only rehearse).
    pub execute: bool,
    /// Name the checkpoint, backup and quarantine rows are kept under.
    pub job_id: String,
    /// How long transient failures may last before the run stops (resumably).
    pub retry_for: Duration,
}

/// Per-table result of a run.
#[derive(Debug, Clone)]
pub struct TableSummary {
    /// Table name.
    pub table: String,
    /// Final state.
    pub state: checkpoint::State,
    /// Whether it finished.
    pub done: bool,
}

/// Turns the job's tables into plans (in place or copy), checked against the live schema.
pub async fn plans(conn: &mut MySqlConnection, job: &Job) -> Result<(Vec<TablePlan>, Vec<Table>)> {
    let inv = inventory::take(
        conn,
        &Scope {
            schemas: vec![job.schema.clone()],
            tables: vec![],
        },
    )
    .await?;
    let mut out = Vec::new();
    let mut tables = Vec::new();
    for tj in &job.tables {
        let Some(t) = inv.tables.iter().find(|t| t.name == tj.name) else {
            bail!(
                "table '{}' in the job no longer exists in schema '{}' (or has no text column left). \
                 Fix: remove it from the job, or restore the table",
                tj.name,
                job.schema
            );
        };
        let key = key_columns(t).ok_or_else(|| {
            anyhow!(
                "table '{}' has no primary key and no NOT NULL unique key, so it cannot be recoded in batches. \
                 Fix: add a primary key (ALTER TABLE {} ADD PRIMARY KEY (...))",
                tj.name,
                quote::table(&job.schema, &tj.name)
            )
        })?;
        if let Some(wanted) = &tj.key {
            let names: Vec<&String> = key.iter().map(|k| &k.name).collect();
            if names
                .iter()
                .map(|s| s.as_str())
                .ne(wanted.iter().map(|s| s.as_str()))
            {
                bail!(
                    "table '{}': key {:?} in the job is not the table's usable key {:?}. Fix: remove `key:` or name the primary key's columns",
                    tj.name, wanted, names
                );
            }
        }
        let mut columns = Vec::new();
        for cj in &tj.columns {
            let col = t.columns.iter().find(|c| c.name == cj.name).ok_or_else(|| {
                anyhow!("table '{}' has no column '{}' (named in the job). Fix: correct the name in the job", tj.name, cj.name)
            })?;
            let binary = col.kind == ColumnKind::Binary;
            let utf8 = matches!(col.charset.as_deref(), Some("utf8mb4" | "utf8mb3" | "utf8"));
            if tj.strategy == Strategy::InPlace && !binary && !utf8 {
                bail!(
                    "{}.{} is {} {}: in place, it cannot hold UTF-8. Fix: use strategy copy for this table",
                    tj.name,
                    cj.name,
                    col.column_type,
                    col.charset.as_deref().unwrap_or("")
                );
            }
            let source = if cj.source == "auto" {
                Source::Auto
            } else {
                Source::Fixed(cj.source.parse::<Label>().map_err(|_| {
                    anyhow!("{}.{}: unknown source label '{}'. Fix: `myrecode plan --check` lists the valid ones", tj.name, cj.name, cj.source)
                })?)
            };
            columns.push(ColumnPlan {
                name: cj.name.clone(),
                source,
                binary,
                target: cj.target.clone(),
            });
        }
        let sources: Vec<String> = tj
            .columns
            .iter()
            .map(|c| format!("{}={}", c.name, c.source))
            .collect();
        let key_names: Vec<&str> = key.iter().map(|k| k.name.as_str()).collect();
        let mut described = format!("{}|{}|{}", tj.name, key_names.join(","), sources.join(","));
        if tj.strategy == Strategy::Copy {
            let targets: Vec<&str> = tj.columns.iter().map(|c| c.target.as_str()).collect();
            described.push_str(&format!("|copy|{}", targets.join("|")));
        }
        out.push(TablePlan {
            schema: job.schema.clone(),
            table: tj.name.clone(),
            strategy: tj.strategy,
            fingerprint: checkpoint::fingerprint(&described),
            key,
            columns,
            batch_size: tj.batch_size.unwrap_or(job.defaults.batch_size) as usize,
            target_batch_time: tj
                .target_batch_time
                .as_ref()
                .unwrap_or(&job.defaults.target_batch_time)
                .0,
            pause: job.defaults.pause_between_batches.0,
            threshold: DEFAULT_THRESHOLD,
            manual_cutover: job.defaults.cutover == Cutover::Manual,
        });
        tables.push(t.clone());
    }
    Ok((out, tables))
}

/// Checks the UPDATE privilege on each table without changing a row.
async fn check_privileges(conn: &mut MySqlConnection, plans: &[TablePlan]) -> Result<()> {
    for p in plans {
        let c = quote::ident(&p.columns[0].name);
        let sql = format!(
            "UPDATE {} SET {c} = {c} WHERE 1 = 0",
            quote::table(&p.schema, &p.table)
        );
        conn.execute(sql.as_str()).await.map_err(|e| {
            anyhow!(
                "missing privilege on {}: {e}. Fix: GRANT SELECT, UPDATE ON {} TO the job's user",
                quote::table(&p.schema, &p.table),
                quote::table(&p.schema, &p.table)
            )
        })?;
    }
    Ok(())
}

/// Prints what a run would do, without writing.
pub fn rehearsal(plans: &[TablePlan], tables: &[Table]) -> String {
    let mut out = String::from("Rehearsal (nothing written; add --execute to run):\n");
    for (p, t) in plans.iter().zip(tables) {
        let key: Vec<&str> = p.key.iter().map(|k| k.name.as_str()).collect();
        let cols: Vec<String> = p
            .columns
            .iter()
            .map(|c| match &c.source {
                Source::Auto => format!("{} (auto)", c.name),
                Source::Fixed(l) => format!("{} ({l})", c.name),
            })
            .collect();
        let how = match p.strategy {
            Strategy::InPlace => "in place".to_string(),
            Strategy::Copy => format!(
                "online copy into {} (triggers, change log, check pass; {} cut-over)",
                copy::names(&p.table).shadow,
                if p.manual_cutover {
                    "waits for `myrecode cutover` before the"
                } else {
                    "automatic"
                }
            ),
        };
        out.push_str(&format!(
            "  {}: {how}, ~{} rows by key ({}), columns {}, batches of {} tuned toward {:?}\n",
            p.table,
            t.estimated_rows,
            key.join(", "),
            cols.join(", "),
            p.batch_size,
            p.target_batch_time
        ));
    }
    out
}

/// Runs the job: every table in order, resuming from checkpoints, retrying transient failures.
pub async fn run(
    cfg: &ConnectionConfig,
    job: &Job,
    opts: &RunOptions,
    stop: &AtomicBool,
    events: &dyn Events,
) -> Result<Option<Vec<TableSummary>>> {
    let cfg = cfg.with_database(Some(&job.schema));
    let mut conn = cfg.connect_one().await?;
    let (plans, tables) = plans(&mut conn, job).await?;
    check_privileges(&mut conn, &plans).await?;
    if !opts.execute {
        print!("{}", rehearsal(&plans, &tables));
        return Ok(None);
    }
    checkpoint::ensure(&mut conn, &job.schema).await?;
    let replicas = job
        .defaults
        .replicas
        .iter()
        .map(|r| pace::replica_config(&cfg, r))
        .collect::<Result<Vec<_>>>()?;
    let mut pacer = Pacer::new(
        &job.schema,
        &opts.job_id,
        job.defaults.max_threads_running,
        job.defaults.max_replica_lag.0,
        replicas,
    );
    let mut summaries = Vec::new();
    for (plan, table) in plans.iter().zip(&tables) {
        let mut failing_since: Option<Instant> = None;
        let mut attempt = 0;
        loop {
            let ran = match plan.strategy {
                Strategy::InPlace => {
                    inplace::run_table(
                        &mut conn,
                        &opts.job_id,
                        plan,
                        table.estimated_rows,
                        stop,
                        &mut pacer,
                        events,
                    )
                    .await
                }
                Strategy::Copy => {
                    copy::run_table(
                        &mut conn,
                        &cfg,
                        &opts.job_id,
                        plan,
                        table,
                        stop,
                        &mut pacer,
                        events,
                    )
                    .await
                }
            };
            match ran {
                Ok((outcome, state)) => {
                    if outcome == TableOutcome::Aborted {
                        abort_rest(&mut conn, job, plans.as_slice(), &opts.job_id, events).await?;
                        summaries.push(TableSummary {
                            table: plan.table.clone(),
                            state,
                            done: false,
                        });
                        return Ok(Some(summaries));
                    }
                    let done = outcome == TableOutcome::Done;
                    summaries.push(TableSummary {
                        table: plan.table.clone(),
                        state,
                        done,
                    });
                    if !done {
                        return Ok(Some(summaries));
                    }
                    break;
                }
                Err(e) if retry::is_transient(&e) => {
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > opts.retry_for {
                        return Err(e.context(format!(
                            "the server kept failing for {:?}; progress is checkpointed",
                            opts.retry_for
                        )));
                    }
                    tracing::warn!(table = %plan.table, error = %crate::db::redact::redact_error(&e), "transient failure; retrying");
                    tokio::time::sleep(retry::backoff(attempt)).await;
                    attempt += 1;
                    if let Ok(c) = cfg.connect_one().await {
                        conn = c;
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(Some(summaries))
}

/// `myrecode abort`, acted on: every copy of the job not yet swapped loses its objects
/// (the originals were never changed); the command is then cleared.
pub async fn abort_rest(
    conn: &mut MySqlConnection,
    job: &Job,
    plans: &[TablePlan],
    job_id: &str,
    events: &dyn Events,
) -> Result<()> {
    for p in plans.iter().filter(|p| p.strategy == Strategy::Copy) {
        if copy::abort_table(conn, &job.schema, &p.table, job_id).await? {
            events.event(&Event::CopyAborted { table: &p.table });
        }
    }
    pace::send(conn, &job.schema, job_id, None).await?;
    events.event(&Event::JobAborted { job: job_id });
    Ok(())
}

/// `verify` for the job's copied tables: each compared with the original kept beside it.
pub async fn verify_copies(
    conn: &mut MySqlConnection,
    job: &Job,
    job_id: &str,
) -> Result<Vec<(String, copy::CopyFindings)>> {
    if !job.tables.iter().any(|t| t.strategy == Strategy::Copy) {
        return Ok(Vec::new());
    }
    let (plans, _) = plans(conn, job).await?;
    let mut out = Vec::new();
    for p in plans.iter().filter(|p| p.strategy == Strategy::Copy) {
        out.push((p.table.clone(), copy::verify_table(conn, job_id, p).await?));
    }
    Ok(out)
}

/// One paragraph per copied table for `verify` and the demo.
pub fn describe_copy_findings(table: &str, c: &copy::CopyFindings) -> String {
    if let Some(why) = &c.skipped {
        return format!("{table}: copy not compared ({why})\n");
    }
    let mut out = format!(
        "{table}: {} row(s) equal their original (kept as {}), recoded; {} differ\n",
        c.equal,
        copy::names(table).old,
        c.differ.len()
    );
    for k in c.differ.iter().take(20) {
        out.push_str(&format!(
            "  written since the cut-over (or only on one side): key {k}\n"
        ));
    }
    if c.differ.len() > 20 {
        out.push_str(&format!("  … and {} more\n", c.differ.len() - 20));
    }
    out
}

/// Loads a job file, turning its findings into one error.
pub fn load_job(path: &std::path::Path) -> Result<Job> {
    match crate::job::load::load_file(path) {
        Ok(l) => Ok(l.job),
        Err(crate::job::load::LoadError::Unreadable(e)) => Err(e),
        Err(crate::job::load::LoadError::Invalid(findings)) => {
            let lines: Vec<String> = findings
                .iter()
                .map(|f| f.render(&path.display().to_string()))
                .collect();
            Err(anyhow!("{}", lines.join("; "))).context(format!(
                "the job file {} is not valid. Fix: correct it (`myrecode plan --check` explains each problem)",
                path.display()
            ))
        }
    }
}

//! `myrecode rehearse`: the migration rehearsed end to end on a throwaway server, for CI.
//!
//! A throwaway server (the harness `demo` and the tests use), the dump loaded into it, then
//! per schema the job given — or scan → plan → the planned job — executed with the same
//! runner as `run --execute`, proven with the same `verify`, and a verdict per table
//! ([`verdict`]). The server goes when the rehearsal ends, however it ends: a local one is
//! stopped and its directory removed; on a lent one (`MYSQL_TEST_URL`) the schemas the dump
//! created are dropped.

pub mod dump;
pub mod verdict;

use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::db::throwaway::ThrowawayServer;
use crate::engine::events::Lines;
use crate::engine::runner::{self, Outcome, RunOptions};
use crate::engine::verify;
use crate::inventory::{self, Scope};
use crate::job::choose::choose;
use crate::job::model::{Cutover, Job};
use crate::scan::model::Strategy as ScanStrategy;
use crate::scan::read::{self as scan, Silent};
use anyhow::{anyhow, bail, Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use verdict::TableResult;

/// The name the rehearsal's checkpoint, backup and quarantine rows are kept under.
pub const JOB_ID: &str = "rehearse";

/// What to rehearse.
#[derive(Debug, Clone)]
pub struct Options {
    /// The dump to load (plain or gzip SQL).
    pub dump: PathBuf,
    /// The job to run; `None`: scan, plan, and run the planned job, per schema the dump holds.
    pub job: Option<Job>,
    /// The database a dump without `USE` statements loads into.
    pub database: String,
}

/// What the rehearsal found.
#[derive(Debug, Clone)]
pub struct Rehearsal {
    /// One result per table, schema by schema.
    pub results: Vec<TableResult>,
    /// The server it ran on (version and kind; no password).
    pub server: String,
    /// How long it took, server start and removal included.
    pub seconds: f64,
}

/// Runs the rehearsal, printing each step; the server is removed before this returns.
pub async fn rehearse(opts: &Options) -> Result<Rehearsal> {
    let started = Instant::now();
    println!("Starting a throwaway server...");
    let server = tokio::task::spawn_blocking(ThrowawayServer::start)
        .await
        .context("server start-up task failed")??;
    let description = server.description().to_string();
    println!("Server: {description}");
    let admin = server.admin().clone();
    let before = schemas(&admin).await;
    let result = match &before {
        Ok(before) => on_server(&admin, opts, before).await,
        Err(e) => Err(anyhow!("{e:#}")),
    };
    if server.is_lent() {
        if let Ok(before) = &before {
            drop_created(&admin, before).await;
        }
    }
    tokio::task::spawn_blocking(move || drop(server)).await.ok();
    println!("Throwaway server removed.");
    Ok(Rehearsal {
        results: result?,
        server: description,
        seconds: started.elapsed().as_secs_f64(),
    })
}

async fn on_server(
    admin: &ConnectionConfig,
    opts: &Options,
    before: &[String],
) -> Result<Vec<TableResult>> {
    let mut conn = admin.connect_one().await?;
    conn.execute(format!("CREATE DATABASE {}", quote::ident(&opts.database)).as_str())
        .await
        .with_context(|| {
            format!(
                "cannot create database '{}' to load the dump into. Fix: pass --database with a name not in use",
                opts.database
            )
        })?;
    println!("Loading {} ...", opts.dump.display());
    let (cfg, db, dump) = (admin.clone(), opts.database.clone(), opts.dump.clone());
    tokio::task::spawn_blocking(move || dump::load(&cfg, &db, &dump))
        .await
        .context("the dump loading task failed")??;
    let after = schemas(admin).await?;
    let created: Vec<String> = after.into_iter().filter(|s| !before.contains(s)).collect();
    let targets = match &opts.job {
        Some(job) if created.contains(&job.schema) || before.contains(&job.schema) => {
            vec![job.schema.clone()]
        }
        Some(job) => bail!(
            "the job's schema '{}' is not in the dump (it created: {}). Fix: pass --database {} when the dump has no USE statement, or correct `schema:` in the job",
            job.schema,
            created.join(", "),
            job.schema
        ),
        None => created,
    };
    let mut results = Vec::new();
    for schema in &targets {
        results.extend(rehearse_schema(admin, schema, opts.job.as_ref()).await?);
    }
    Ok(results)
}

/// Runs one schema's job (given, or planned from a full scan) and verifies it.
async fn rehearse_schema(
    admin: &ConnectionConfig,
    schema: &str,
    given: Option<&Job>,
) -> Result<Vec<TableResult>> {
    let cfg = admin.with_database(Some(schema));
    let mut conn = cfg.connect_one().await?;
    let (mut job, mut results) = match given {
        Some(job) => (job.clone(), Vec::new()),
        None => match planned_job(&mut conn, schema).await? {
            Some(planned) => planned,
            None => return Ok(Vec::new()),
        },
    };
    // Nobody is there to type `myrecode cutover` on a throwaway server.
    job.defaults.cutover = Cutover::Auto;
    // Refused tables are reported and left out, so the others still run (`run --execute`
    // would stop on them before writing anything).
    let plans = runner::plans(&mut conn, &job).await?;
    let refused: Vec<&runner::Entry> = plans
        .entries
        .iter()
        .filter(|e| !e.refusals.is_empty())
        .collect();
    for e in &refused {
        results.push(TableResult {
            schema: schema.to_string(),
            table: e.table.clone(),
            in_job: true,
            refusals: e.refusals.iter().map(|r| r.to_string()).collect(),
            ..Default::default()
        });
    }
    job.tables
        .retain(|t| !refused.iter().any(|e| e.table == t.name));
    if job.tables.is_empty() {
        return Ok(results);
    }
    println!(
        "\n== {schema}: running the job ({} table(s)) ==",
        job.tables.len()
    );
    let opts = RunOptions {
        execute: true,
        job_id: JOB_ID.into(),
        retry_for: Duration::from_secs(30),
    };
    let Outcome::Ran(summaries) =
        runner::run(&cfg, &job, &opts, &AtomicBool::new(false), &Lines).await?
    else {
        bail!("internal error: the rehearsal's run did not execute");
    };
    let tables = inventory::take(
        &mut conn,
        &Scope {
            schemas: vec![schema.to_string()],
            tables: vec![],
        },
    )
    .await?
    .tables;
    let found = verify::verify(&mut conn, schema, JOB_ID, &tables).await?;
    let copies = runner::verify_copies(&mut conn, &job, JOB_ID).await?;
    for tj in &job.tables {
        let summary = summaries.iter().find(|s| s.table == tj.name);
        let prefix = format!("{}.", tj.name);
        let mut unproven: Vec<String> = found
            .errors
            .iter()
            .filter(|e| e.starts_with(&prefix))
            .cloned()
            .collect();
        if let Some((_, c)) = copies.iter().find(|(t, _)| *t == tj.name) {
            if let Some(why) = &c.skipped {
                unproven.push(format!("copy not compared: {why}"));
            }
            unproven.extend(
                c.differ
                    .iter()
                    .map(|k| format!("row with key {k} differs from the original")),
            );
        }
        results.push(TableResult {
            schema: schema.to_string(),
            table: tj.name.clone(),
            strategy: Some(tj.strategy.as_str().to_string()),
            in_job: true,
            finished: summary.is_some_and(|s| s.done),
            rows_read: summary.map_or(0, |s| s.state.rows_read),
            recoded: summary.map_or(0, |s| s.state.rows_changed),
            undecided: summary.map_or(0, |s| s.state.rows_quarantined),
            unproven,
            ..Default::default()
        });
    }
    Ok(results)
}

/// Scans the schema in full and plans its job, as `scan --full` and `plan` do; the tables
/// the plan leaves out come back as results (refused with the rules' words, or nothing to do).
async fn planned_job(
    conn: &mut MySqlConnection,
    schema: &str,
) -> Result<Option<(Job, Vec<TableResult>)>> {
    let scope = Scope {
        schemas: vec![schema.to_string()],
        tables: vec![],
    };
    let inv = inventory::take(conn, &scope).await?;
    let opts = scan::Options {
        sample: None,
        batch_size: 1000,
        pause: Duration::ZERO,
    };
    println!("\n== {schema}: scan (full) and plan ==");
    let report = scan::scan(conn, &inv, &opts, &Silent).await?;
    if report.tables.is_empty() {
        return Ok(None);
    }
    let yaml = crate::job::plan::generate(&report, Some(schema), "the rehearsal's scan")?;
    let job = crate::job::load::load_str(&yaml)
        .map_err(|_| anyhow!("internal error: the planned job does not load back. Fix: report this with the dump"))?
        .job;
    let mut left_out = Vec::new();
    for t in &report.tables {
        let choice = choose(t);
        if choice.in_job() {
            continue;
        }
        let mut refusals: Vec<String> = choice.out.iter().map(|r| r.to_string()).collect();
        if refusals.is_empty() {
            refusals.extend(
                t.columns
                    .iter()
                    .filter(|c| c.strategy != ScanStrategy::None)
                    .filter_map(|c| c.blocked.as_ref().map(|b| format!("{}: {b}", c.name))),
            );
        }
        left_out.push(TableResult {
            schema: schema.to_string(),
            table: t.name.clone(),
            refusals,
            ..Default::default()
        });
    }
    Ok(Some((job, left_out)))
}

/// The server's user schemas.
async fn schemas(admin: &ConnectionConfig) -> Result<Vec<String>> {
    let mut conn = admin.connect_one().await?;
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(SCHEMA_NAME AS CHAR) FROM information_schema.SCHEMATA \
         WHERE SCHEMA_NAME NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') \
         ORDER BY SCHEMA_NAME",
    )
    .fetch_all(&mut conn)
    .await?;
    Ok(names)
}

/// Drops what the rehearsal created on a lent server (best effort: the rehearsal's verdict stands).
async fn drop_created(admin: &ConnectionConfig, before: &[String]) {
    let Ok(now) = schemas(admin).await else {
        return;
    };
    let Ok(mut conn) = admin.connect_one().await else {
        return;
    };
    for s in now.iter().filter(|s| !before.contains(s)) {
        conn.execute(format!("DROP DATABASE IF EXISTS {}", quote::ident(s)).as_str())
            .await
            .ok();
    }
}

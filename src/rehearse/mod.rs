//! `myrecode rehearse`: the migration rehearsed end to end on a throwaway server, for CI.
//!
//! A throwaway server (the harness `demo` and the tests use), the dump loaded into it, then
//! per schema the job given — or scan → plan → the planned job — executed with the same
//! runner as `run --execute`, proven with the same `verify`, and a verdict per table
//! ([`verdict`]). The dump is read first ([`outline`]): one cut short, or creating no table,
//! is refused; a lent server (`MYSQL_TEST_URL`) is used only when none of the dump's schemas
//! is on it; on any server the [`guard`] must let every statement through (only creating and
//! filling the dump's own schemas), and after the load every table the dump creates must be there. The server goes
//! when the rehearsal ends, however it ends: a local one is stopped and its directory removed;
//! on a lent one the schemas the rehearsal created are dropped.

pub mod dump;
pub mod guard;
pub mod outline;
pub mod statements;
pub mod verdict;

use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::db::throwaway::ThrowawayServer;
use crate::engine::events::Lines;
use crate::engine::plans;
use crate::engine::runner::{self, Outcome, RunOptions};
use crate::engine::verify;
use crate::inventory::{self, Scope};
use crate::job::choose::choose;
use crate::job::model::{Cutover, Job, Strategy};
use crate::scan::model::Strategy as ScanStrategy;
use crate::scan::read::{self as scan, Silent};
use anyhow::{anyhow, bail, Context, Result};
use outline::{Outline, Qualified};
use sqlx::{Executor, MySqlConnection};
use std::path::{Path, PathBuf};
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
    /// Load a dump without mysqldump's `-- Dump completed` line (hand-written SQL).
    pub partial_dump_ok: bool,
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
///
/// The dump is read whole first: one cut short, or naming no table, is refused before a
/// server is started. A server given by `MYSQL_TEST_URL` is used only when none of the
/// dump's schemas exists there, checked before a statement of the dump is sent.
pub async fn rehearse(opts: &Options) -> Result<Rehearsal> {
    let started = Instant::now();
    let (path, default) = (opts.dump.clone(), opts.database.clone());
    let outline = tokio::task::spawn_blocking(move || dump::outline(&path, &default))
        .await
        .context("the dump reading task failed")??;
    check_dump(&outline, &opts.dump, opts.partial_dump_ok)?;
    // ThrowawayServer::start borrows the MYSQL_TEST_URL server when that is set.
    if std::env::var_os("MYSQL_TEST_URL").is_none() {
        println!("Starting a throwaway server...");
    }
    let server = tokio::task::spawn_blocking(ThrowawayServer::start)
        .await
        .context("server start-up task failed")??;
    let lent = server.is_lent();
    let description = if lent {
        format!(
            "{} given by MYSQL_TEST_URL (not started by rehearse: only the schemas it creates are written, and dropped at the end)",
            server.admin()
        )
    } else {
        format!("{} (started for this rehearsal)", server.description())
    };
    println!("Server: {description}");
    let admin = server.admin().clone();
    let mut wanted = outline.schemas.clone();
    if !wanted.contains(&opts.database) {
        wanted.push(opts.database.clone());
    }
    let before = all_schemas(&admin).await;
    let result = match &before {
        Ok(before) => {
            let clash = clashes(before, &wanted);
            if clash.is_empty() {
                match guarded(lent, &opts.dump, &wanted, before, &admin.to_string()).await {
                    Ok(()) => on_server(&admin, opts, &outline, before).await,
                    Err(e) => Err(e),
                }
            } else {
                Err(anyhow!(clash_message(
                    &description,
                    lent,
                    &clash,
                    &opts.database
                )))
            }
        }
        Err(e) => Err(anyhow!("{e:#}")),
    };
    if lent {
        if let Ok(before) = &before {
            let dropped = drop_created(&admin, before, &wanted).await;
            println!(
                "Dropped the schema(s) the rehearsal created on {} ({}); the server stays.",
                server.admin(),
                if dropped.is_empty() {
                    "none".to_string()
                } else {
                    dropped.join(", ")
                }
            );
        }
        drop(server);
    } else {
        tokio::task::spawn_blocking(move || drop(server)).await.ok();
        println!("Throwaway server removed.");
    }
    Ok(Rehearsal {
        results: result?,
        server: description,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Reads the whole dump through the [guard](guard) before a statement of it is sent, on any
/// server (one it was given, or its own throwaway one: one classifier, one verdict for a dump
/// wherever it is rehearsed): anything but creating and filling the dump's own schemas
/// (`own`) refuses the rehearsal, every such statement named with its line.
async fn guarded(
    lent: bool,
    dump: &Path,
    own: &[String],
    others: &[String],
    server: &str,
) -> Result<()> {
    let (path, own_, others_) = (dump.to_path_buf(), own.to_vec(), others.to_vec());
    let refused = tokio::task::spawn_blocking(move || dump::guard(&path, &own_, &others_))
        .await
        .context("the dump reading task failed")??;
    if refused.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(refusal_message(dump, server, lent, &refused)))
    }
}

/// How many refused statements a message lists before counting the rest.
const LISTED: usize = 10;

/// Why a dump is not loaded: each statement refused, with its line, and the fix; one line.
/// `lent`: the server was given by `MYSQL_TEST_URL` (not started by rehearse).
pub fn refusal_message(
    dump: &Path,
    server: &str,
    lent: bool,
    refused: &[guard::Refusal],
) -> String {
    let mut listed: Vec<String> = refused.iter().take(LISTED).map(|r| r.to_string()).collect();
    if refused.len() > LISTED {
        listed.push(format!("and {} more", refused.len() - LISTED));
    }
    let (on, or) = if lent {
        (
            server.to_string(),
            ", or unset MYSQL_TEST_URL so rehearse starts a throwaway server of its own",
        )
    } else {
        ("any server, its own throwaway one included".to_string(), "")
    };
    format!(
        "the dump {} holds {} statement(s) that do more than create and fill its own schemas, which rehearse does not run on {on}; nothing of the dump was sent: {}. \
         Fix: remove them from the dump (a plain mysqldump --databases NAME holds none){or}",
        dump.display(),
        refused.len(),
        listed.join("; ")
    )
}

/// Refuses a dump that was cut short (no `-- Dump completed` line, unless `partial_ok`;
/// tables it names but never creates) or that creates no table: there would be nothing
/// to pass, or a pass on part of the data.
pub fn check_dump(o: &Outline, path: &Path, partial_ok: bool) -> Result<()> {
    let never = if o.never_created.is_empty() {
        String::new()
    } else {
        format!(
            "; it names table(s) it never creates: {}",
            names(&o.never_created)
        )
    };
    if !o.complete && !partial_ok {
        bail!(
            "the dump {} does not end with the `{}` line mysqldump and mariadb-dump write last, so it was cut short{never}. \
             Fix: dump again and check the copy is whole, or pass --partial-dump-ok if the file is meant to end there",
            path.display(),
            outline::TRAILER
        );
    }
    if !o.never_created.is_empty() {
        bail!(
            "the dump {} names table(s) it never creates: {} (cut before their CREATE TABLE, or dumped without it). \
             Fix: dump again with the tables' definitions (no --no-create-info) and check the copy is whole",
            path.display(),
            names(&o.never_created)
        );
    }
    if o.tables.is_empty() {
        bail!(
            "the dump {} creates no table, so there is nothing to rehearse. \
             Fix: dump the schemas with their tables (mysqldump --databases NAME)",
            path.display()
        );
    }
    Ok(())
}

/// The schemas of `wanted` the server already has (compared without case, as a server
/// with lower_case_table_names would).
pub fn clashes(existing: &[String], wanted: &[String]) -> Vec<String> {
    wanted
        .iter()
        .filter(|w| existing.iter().any(|e| e.eq_ignore_ascii_case(w)))
        .cloned()
        .collect()
}

/// Why the rehearsal will not load into a server that already has some of its schemas.
pub fn clash_message(server: &str, lent: bool, clash: &[String], database: &str) -> String {
    let fix = if lent {
        "point MYSQL_TEST_URL at a server without them, or unset it so rehearse starts a throwaway server of its own"
    } else {
        "give the dump's schemas other names (a throwaway server has only its system schemas; dump the application's schemas alone, mysqldump --databases NAME)"
    };
    let database_fix = if clash.iter().any(|c| c == database) {
        format!(", or pass --database NAME with a name not in use for what the dump loads outside any USE (now '{database}')")
    } else {
        String::new()
    };
    format!(
        "the server {server} already has schema(s) {}, which the dump would load into (its DROP TABLE IF EXISTS replaces their tables); nothing of the dump was sent. Fix: {fix}{database_fix}",
        clash.join(", ")
    )
}

/// The tables of `created` not in `present`.
pub fn missing(created: &[Qualified], present: &[Qualified]) -> Vec<Qualified> {
    created
        .iter()
        .filter(|t| !present.contains(t))
        .cloned()
        .collect()
}

/// `schema.table, ...` for messages.
pub fn names(tables: &[Qualified]) -> String {
    tables
        .iter()
        .map(|(s, t)| format!("{s}.{t}"))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn on_server(
    admin: &ConnectionConfig,
    opts: &Options,
    outline: &Outline,
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
    let present = tables_of(&mut conn, &outline.schemas).await?;
    let gone = missing(&outline.tables, &present);
    if !gone.is_empty() {
        bail!(
            "after loading the dump {}, {} of the {} table(s) it creates are missing: {}. \
             Fix: check that it loads whole with `mariadb < dump` on a server like production's (a later DROP, or a /*!NNNNN*/ comment this server skips)",
            opts.dump.display(),
            gone.len(),
            outline.tables.len(),
            names(&gone)
        );
    }
    let after = all_schemas(admin).await?;
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
    if opts.job.is_none() {
        // The scan leaves out tables with no text to read; they are still the dump's, and pass.
        for (s, t) in &outline.tables {
            if targets.contains(s) && !results.iter().any(|r| &r.schema == s && &r.table == t) {
                results.push(TableResult {
                    schema: s.clone(),
                    table: t.clone(),
                    ..Default::default()
                });
            }
        }
    }
    if results.is_empty() {
        bail!(
            "the rehearsal checked no table (the dump's tables: {}). Fix: check that the job's schema is the one the dump loads",
            names(&outline.tables)
        );
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
    let plans = plans::plans(&mut conn, &job).await?;
    let refused: Vec<&plans::Entry> = plans
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
    let copies = verify::verify_copies(&mut conn, &job, JOB_ID).await?;
    for tj in &job.tables {
        let summary = summaries.iter().find(|s| s.table == tj.name);
        let undecided_values = undecided_values(&mut conn, schema, &tj.name).await?;
        // A copy holding undecided values stops before its cut-over, held: its rows are all
        // copied, what is left is deciding them.
        let held = tj.strategy == Strategy::Copy
            && !summary.is_some_and(|s| s.done)
            && !undecided_values.is_empty();
        let prefix = format!("{}.", tj.name);
        let mut unproven: Vec<String> = found
            .errors
            .iter()
            .filter(|e| e.starts_with(&prefix))
            .cloned()
            .collect();
        if let Some((_, c)) = copies.iter().find(|(t, _)| *t == tj.name) {
            if let Some(why) = c.skipped.as_ref().filter(|_| !held) {
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
            finished: summary.is_some_and(|s| s.done) || held,
            rows_read: summary.map_or(0, |s| s.state.rows_read),
            recoded: summary.map_or(0, |s| s.state.rows_changed),
            undecided: summary.map_or(0, |s| s.state.rows_quarantined),
            undecided_values,
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

/// The query for one table's undecided values, read before the server goes.
pub fn quarantine_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(col AS CHAR), key_bytes, value, CAST(reason AS CHAR), CAST(runner_up AS CHAR) \
         FROM {} WHERE job = ? AND tbl = ? ORDER BY id",
        quote::table(schema, crate::bookkeeping::checkpoint::QUARANTINE)
    )
}

/// One table's undecided values as report lines (none when the run made no quarantine).
async fn undecided_values(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<String>> {
    type Row = (String, Vec<u8>, Vec<u8>, String, Option<String>);
    let rows: Vec<Row> = match sqlx::query_as(&quarantine_sql(schema))
        .bind(JOB_ID)
        .bind(table)
        .fetch_all(&mut *conn)
        .await
    {
        Ok(rows) => rows,
        Err(e) if crate::db::errno::of(&e) == Some(1146) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    Ok(rows
        .iter()
        .map(|(col, key, value, reason, runner_up)| {
            verdict::undecided_line(
                col,
                crate::bookkeeping::keycodec::unpack(key).as_deref(),
                value,
                reason,
                runner_up.as_deref(),
            )
        })
        .collect())
}

/// Every schema on the server, system ones included (a dump holding `mysql` must not
/// load into a server's own).
async fn all_schemas(admin: &ConnectionConfig) -> Result<Vec<String>> {
    let mut conn = admin.connect_one().await?;
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(SCHEMA_NAME AS CHAR) FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME",
    )
    .fetch_all(&mut conn)
    .await?;
    Ok(names)
}

/// The tables (and views) in `schemas`.
async fn tables_of(conn: &mut MySqlConnection, schemas: &[String]) -> Result<Vec<Qualified>> {
    let mut out = Vec::new();
    for s in schemas {
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
        )
        .bind(s)
        .fetch_all(&mut *conn)
        .await?;
        out.extend(names.into_iter().map(|t| (s.clone(), t)));
    }
    Ok(out)
}

/// Drops, on a lent server, the schemas of `wanted` that were not there `before` (best
/// effort: the rehearsal's verdict stands); only those, so a schema someone else creates
/// meanwhile is left alone. Returns what it dropped.
async fn drop_created(
    admin: &ConnectionConfig,
    before: &[String],
    wanted: &[String],
) -> Vec<String> {
    let Ok(now) = all_schemas(admin).await else {
        return Vec::new();
    };
    let Ok(mut conn) = admin.connect_one().await else {
        return Vec::new();
    };
    let mut dropped = Vec::new();
    for s in now
        .iter()
        .filter(|s| !before.contains(s) && wanted.contains(s))
    {
        if conn
            .execute(format!("DROP DATABASE IF EXISTS {}", quote::ident(s)).as_str())
            .await
            .is_ok()
        {
            dropped.push(s.clone());
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_server_with_the_dumps_schema_is_refused_naming_it_and_the_fix() {
        let existing = vec!["mysql".to_string(), "Forum".to_string()];
        let wanted = vec!["forum".to_string(), "rehearsal".to_string()];
        let clash = clashes(&existing, &wanted);
        assert_eq!(clash, vec!["forum"]);
        assert_eq!(
            clash_message("mysql://root@db:3306/", true, &clash, "rehearsal"),
            "the server mysql://root@db:3306/ already has schema(s) forum, which the dump would load into \
             (its DROP TABLE IF EXISTS replaces their tables); nothing of the dump was sent. \
             Fix: point MYSQL_TEST_URL at a server without them, or unset it so rehearse starts a throwaway server of its own"
        );
        let m = clash_message("s", true, &["rehearsal".to_string()], "rehearsal");
        assert!(m.ends_with("or pass --database NAME with a name not in use for what the dump loads outside any USE (now 'rehearsal')"), "{m}");
    }

    #[test]
    fn a_refused_dump_is_one_line_naming_each_statement_and_the_fix() {
        let refused: Vec<guard::Refusal> = (1..=12)
            .map(|line| guard::Refusal {
                line,
                head: "SET GLOBAL max_connections = 1".into(),
                reason: "changes a server-wide setting (GLOBAL)".into(),
            })
            .collect();
        let m = refusal_message(
            Path::new("d.sql"),
            "mysql://root@db:3306/",
            true,
            &refused[..1],
        );
        assert_eq!(
            m,
            "the dump d.sql holds 1 statement(s) that do more than create and fill its own schemas, which rehearse does not run on mysql://root@db:3306/; \
             nothing of the dump was sent: line 1: `SET GLOBAL max_connections = 1` changes a server-wide setting (GLOBAL). \
             Fix: remove them from the dump (a plain mysqldump --databases NAME holds none), or unset MYSQL_TEST_URL so rehearse starts a throwaway server of its own"
        );
        let m = refusal_message(Path::new("d.sql"), "s", false, &refused);
        assert!(
            m.contains(
                "which rehearse does not run on any server, its own throwaway one included;"
            ) && m.ends_with(
                "Fix: remove them from the dump (a plain mysqldump --databases NAME holds none)"
            ) && m.contains("holds 12 statement(s)")
                && m.contains("line 10: ")
                && !m.contains("line 11: ")
                && m.contains("; and 2 more. Fix:"),
            "{m}"
        );
        assert!(!m.contains('\n'));
    }

    #[test]
    fn the_quarantine_query_is_the_rehearsals_rows_of_one_table() {
        assert_eq!(
            quarantine_sql("a`b"),
            "SELECT CAST(col AS CHAR), key_bytes, value, CAST(reason AS CHAR), CAST(runner_up AS CHAR) \
             FROM `a``b`.`_myrecode_quarantine` WHERE job = ? AND tbl = ? ORDER BY id"
        );
    }

    #[test]
    fn a_dump_is_whole_or_refused() {
        let p = Path::new("d.sql");
        let o = |text: &[u8]| outline::outline_text(text, "r");
        let whole = o(b"CREATE TABLE t (a INT);\n-- Dump completed on x\n");
        assert!(check_dump(&whole, p, false).is_ok());
        let cut = o(b"CREATE TABLE t (a INT);\n");
        let e = check_dump(&cut, p, false).unwrap_err().to_string();
        assert!(
            e.contains("cut short") && e.contains("--partial-dump-ok"),
            "{e}"
        );
        assert!(check_dump(&cut, p, true).is_ok());
        let empty = o(b"-- Dump completed\n");
        let e = check_dump(&empty, p, false).unwrap_err().to_string();
        assert!(e.contains("creates no table"), "{e}");
        assert_eq!(
            missing(
                &[("s".into(), "a".into()), ("s".into(), "b".into())],
                &[("s".into(), "a".into())]
            ),
            vec![("s".to_string(), "b".to_string())]
        );
    }
}

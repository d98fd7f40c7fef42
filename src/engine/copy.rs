//! Online copy of one table into a shadow table with the job's target column definitions, recoding on the way.
//!
//! The flow (pt-online-schema-change's, with the recoding inside the copy path):
//! 1. `<t>_myrecode_new` is created `LIKE` the table, its job columns `MODIFY`d to their
//!    targets; `<t>_myrecode_log` receives the key of every row the application changes,
//!    written by three `AFTER` triggers on the table, created together under one brief
//!    `LOCK TABLES … WRITE`.
//! 2. Copy, in key order, in batches of one transaction each: the batch's keys and job
//!    columns are read with shared row locks, recoded here with our codecs, the recoded
//!    values staged in a session temporary table, and the whole batch written by one
//!    `INSERT INTO new SELECT … FROM t LEFT JOIN staged` (every other column is copied by
//!    the server, as `ALTER TABLE` would; an undecidable value keeps its latin1 reading,
//!    reversible, and is quarantined). The checkpoint advances in the same transaction.
//! 3. Check: a pass in key order compares every row of the table with the shadow (other
//!    columns equal, job columns a lossless reading of the stored bytes: a label's round
//!    trip gives them back); a difference (a write since the copy, or a miss) is queued in
//!    the change log for replay.
//! 4. Replay: logged keys in log order, a chunk per transaction: the rows are re-read
//!    (locked), deleted from the shadow and copied and recoded again if they still exist;
//!    exactly the log rows read are removed. Replays run between copy batches and until
//!    the log is drained; with `cutover: manual` they go on until `myrecode cutover`.
//! 5. Cut-over, gh-ost's atomic form, which works on MariaDB (it refuses `RENAME TABLE`
//!    under `LOCK TABLES`, error 1192) and MySQL alike: a sentry table takes the name
//!    `<t>_myrecode_old`; a lock connection takes `LOCK TABLES t WRITE` with the shadow,
//!    sentry, log and bookkeeping tables, drains the log to empty itself and carries
//!    `AUTO_INCREMENT` over; a second connection issues `RENAME TABLE t TO old, new TO t`,
//!    which queues; once the server shows it waiting, the lock connection drops the sentry
//!    and unlocks, and the rename runs before every queued write (a pending exclusive
//!    metadata lock is granted first). Should the lock connection die before the drain is
//!    complete, the sentry is still there and the rename fails: nothing is swapped early.
//!    The shadow and sentry are named with a suffix so they sort *after* `t`: the rename
//!    takes its metadata locks in name order, and a name sorting before `t` makes it wait
//!    there instead, leaving no pending lock on `t` and letting queued writes reach the
//!    old table between unlock and rename (shown on MariaDB 10.11 with `_t_…` names).
//!    The triggers (now on `old`) are dropped; `old` is kept for rollback until
//!    `myrecode cleanup`, and the drained log with it (cached prepared statements of the
//!    application may still name it).
//!
//! Locks: copy, check and replay transactions take shared row locks on the rows they read,
//! for one batch; the triggers add one log insert to every application write; the cut-over
//! blocks reads and writes of the table from `LOCK TABLES` to the rename: the measured,
//! printed pause (the drain of what was logged since the last replay, then the rename),
//! each wait bounded by `lock_wait_timeout`.
//!
//! Failures: lost connections, deadlocks and lock wait timeouts (including a cut-over that
//! could not get its locks) are transient: the transaction rolls back and the run resumes
//! from the checkpoint, re-attaching to its shadow, triggers and log; a cut-over
//! interrupted before its rename is retried, one interrupted after it is finished.
//! Definitive: a table with triggers of its own or with foreign keys, a job column in the
//! paging key, a leftover `old` table, a shadow gone missing mid-copy.

use super::checkpoint::{self, State, CHECKPOINT, QUARANTINE};
use super::inplace::{self, Progress, Quarantined, TableOutcome, TablePlan};
use super::keycodec;
use super::pace::{self, Flow, Pacer};
use super::recode::{self, Action};
use crate::db::connect::ConnectionConfig;
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::detect::ColumnPrior;
use crate::inventory::model::Table;
use anyhow::{anyhow, bail, Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::{Acquire, Executor, MySqlConnection, Row};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Phase: copying rows in key order (replaying the log between batches).
pub const PHASE_COPYING: &str = "copying";
/// Phase: every row copied; comparing the table with the shadow in key order.
pub const PHASE_CHECKING: &str = "checking";
/// Phase: copied and checked; replaying the log until it is drained, then cutting over.
pub const PHASE_REPLAYING: &str = "replaying";
/// Phase: swapped; the original is kept as `<t>_myrecode_old`.
pub const PHASE_DONE: &str = "done";

/// Log rows replayed per transaction.
const REPLAY_CHUNK: usize = 500;
/// The log is "nearly drained" (cut over now) below this many rows.
const DRAIN_BEFORE_CUTOVER: i64 = 50;
/// Longest wait for the cut-over's table locks (`lock_wait_timeout`), in seconds: while
/// `LOCK TABLES` waits for a long transaction, the application's statements queue behind it.
const CUTOVER_LOCK_WAIT: u32 = 2;
/// How long the queued rename may wait for the lock connection before giving up, in seconds.
const RENAME_LOCK_WAIT: u32 = 20;
/// Cut-over attempts before the run stops (resumably).
const CUTOVER_ATTEMPTS: u32 = 6;
/// Marks our statements in the process list, so a rerun can find a rename left queued.
const MARK: &str = "/* myrecode cut-over */";
/// Comment of the sentry table, told apart from a real kept original by it.
const SENTRY_COMMENT: &str = "myrecode cut-over sentry";
/// Name of the session temporary table holding a batch's recoded values.
const STAGE: &str = "_myrecode_stage";
/// Alias of the table in the copying `INSERT … SELECT` (the cut-over locks it under this name too).
const SRC: &str = "_myrecode_src";
/// Prefix of the staging table's columns, chosen not to clash with the table's own names.
const STAGE_COL: &str = "_myrecode_";

/// Names of the objects a copy creates beside table `t`, each at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The shadow table, `<t>_myrecode_new`.
    pub shadow: String,
    /// The original after cut-over (and the sentry during it), `<t>_myrecode_old`.
    pub old: String,
    /// The change log, `<t>_myrecode_log`.
    pub log: String,
    /// Triggers: after insert, after update, after delete.
    pub triggers: [String; 3],
}

/// The names for table `table`; long names are shortened with a hash so they stay unique.
pub fn names(table: &str) -> Names {
    let fit = |suffix: &str| {
        let full = format!("{table}_myrecode_{suffix}");
        if full.chars().count() <= 64 {
            return full;
        }
        let hash = &checkpoint::fingerprint(table)[..8];
        let tail = format!("~{hash}_myrecode_{suffix}");
        let head: String = table.chars().take(64 - tail.chars().count()).collect();
        format!("{head}{tail}")
    };
    Names {
        shadow: fit("new"),
        old: fit("old"),
        log: fit("log"),
        triggers: [fit("ins"), fit("upd"), fit("del")],
    }
}

/// Whether `name` sorts after `table` the way the server orders metadata locks (bytes, a
/// prefix first; lower-cased too, for servers with `lower_case_table_names`).
pub fn sorts_after(table: &str, name: &str) -> bool {
    name.as_bytes() > table.as_bytes()
        && name.to_lowercase().as_bytes() > table.to_lowercase().as_bytes()
}

/// SQL expression packing the key of trigger row `row` (`NEW`/`OLD`) as [`keycodec::pack`] does.
pub fn pack_expr(row: &str, key: &[KeyColumn]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|k| {
            let v = format!("CAST({row}.{} AS BINARY)", quote::ident(&k.name));
            let len = format!("OCTET_LENGTH({v})");
            format!(
                "CHAR(({len}) & 255, (({len}) >> 8) & 255, (({len}) >> 16) & 255, (({len}) >> 24) & 255), {v}"
            )
        })
        .collect();
    format!("CONCAT({})", parts.join(", "))
}

/// DDL of the change log table.
pub fn log_ddl(schema: &str, n: &Names) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
         key_bytes BLOB NOT NULL) ENGINE=InnoDB",
        quote::table(schema, &n.log)
    )
}

/// DDL of the three triggers that log changed keys (insert, update, delete).
pub fn trigger_ddl(schema: &str, table: &str, n: &Names, key: &[KeyColumn]) -> [String; 3] {
    let t = quote::table(schema, table);
    let log = quote::table(schema, &n.log);
    let trg = |i: usize| quote::table(schema, &n.triggers[i]);
    [
        format!(
            "CREATE TRIGGER {} AFTER INSERT ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({})",
            trg(0),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER UPDATE ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({}), ({})",
            trg(1),
            pack_expr("OLD", key),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER DELETE ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({})",
            trg(2),
            pack_expr("OLD", key)
        ),
    ]
}

/// `WHERE` condition for "at or before the given key", and the key index to bind for each `?`.
pub fn at_most(key: &[KeyColumn]) -> (String, Vec<usize>) {
    let (cond, binds) = keyset::after(key);
    (format!("NOT ({cond})"), binds)
}

/// `WHERE` condition matching any of `count` keys (`(k = ? AND …) OR …`), binds in key order.
pub fn any_of(key: &[KeyColumn], count: usize) -> String {
    let one = format!("({})", keyset::equals(key));
    vec![one; count].join(" OR ")
}

/// Column `i` of the staging table (`k` key, `v` value, `s` set flag).
fn stage_col(kind: char, i: usize) -> String {
    quote::ident(&format!("{STAGE_COL}{kind}{i}"))
}

/// The staging table's layout, for [`replace_select`]: the table's key, and each job column's
/// name and whether its target is binary (staged bytes go in as they are, else as UTF-8 text).
pub struct Staging<'a> {
    /// Paging key (joined on).
    pub key: &'a [KeyColumn],
    /// (name, binary target) per job column.
    pub columns: &'a [(String, bool)],
}

/// A row's job-column values (`None`: NULL, or nothing staged).
type Cells = Vec<Option<Vec<u8>>>;

/// `INSERT INTO shadow SELECT … FROM t [LEFT JOIN staged]`: the server copies every column,
/// a staged job column takes its recoded value instead of the server's conversion.
pub fn replace_select(
    schema: &str,
    table: &str,
    shadow: &str,
    cols: &[String],
    staged: Option<&Staging<'_>>,
    cond: &str,
) -> String {
    let src = SRC;
    let list: Vec<String> = cols.iter().map(|c| quote::ident(c)).collect();
    let select: Vec<String> = cols
        .iter()
        .map(|c| {
            let own = format!("{src}.{}", quote::ident(c));
            let job = staged.and_then(|st| st.columns.iter().position(|(n, _)| n == c));
            match (job, staged) {
                (Some(j), Some(st)) => {
                    let v = format!("x.{}", stage_col('v', j));
                    let value = if st.columns[j].1 {
                        v
                    } else {
                        format!("CONVERT({v} USING utf8mb4)")
                    };
                    format!("IF(x.{} = 1, {value}, {own})", stage_col('s', j))
                }
                _ => own,
            }
        })
        .collect();
    let join = match staged {
        Some(st) => {
            let on: Vec<String> = st
                .key
                .iter()
                .enumerate()
                .map(|(i, k)| format!("{src}.{} = x.{}", quote::ident(&k.name), stage_col('k', i)))
                .collect();
            format!(
                " LEFT JOIN {} AS x ON {}",
                quote::ident(STAGE),
                on.join(" AND ")
            )
        }
        None => String::new(),
    };
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM {} AS {src}{join} WHERE {cond}",
        quote::table(schema, shadow),
        list.join(", "),
        select.join(", "),
        quote::table(schema, table)
    )
}

/// What a run found out about the table's columns and names.
struct Ctx<'a> {
    plan: &'a TablePlan,
    names: Names,
    /// Every stored (non-generated) column, copied by the server.
    all_columns: Vec<String>,
    /// Job columns: (name, binary target).
    job_columns: Vec<(String, bool)>,
    /// Key columns' definitions, for the staging table.
    key_types: Vec<String>,
    /// Each job column's charset in the shadow (`None`: binary), for the check pass.
    target_charsets: Vec<Option<String>>,
    priors: BTreeMap<String, ColumnPrior>,
}

impl Ctx<'_> {
    fn job_names(&self) -> Vec<String> {
        self.plan.columns.iter().map(|c| c.name.clone()).collect()
    }
    fn t(&self, name: &str) -> String {
        quote::table(&self.plan.schema, name)
    }
}

/// The table's comment, or `None` when there is no such table.
async fn table_comment(
    conn: &mut MySqlConnection,
    schema: &str,
    name: &str,
) -> Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT CAST(TABLE_COMMENT AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
    )
    .bind(schema)
    .bind(name)
    .fetch_optional(conn)
    .await
    .context("reading information_schema.TABLES")
}

async fn table_exists(conn: &mut MySqlConnection, schema: &str, name: &str) -> Result<bool> {
    Ok(table_comment(conn, schema, name).await?.is_some())
}

/// Whether `name` is our cut-over sentry (rather than a kept original).
async fn is_sentry(conn: &mut MySqlConnection, schema: &str, name: &str) -> Result<bool> {
    Ok(table_comment(conn, schema, name).await?.as_deref() == Some(SENTRY_COMMENT))
}

/// (name, full type with charset/collation, charset) of a table's stored columns, in order.
async fn columns_of(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<(String, String, Option<String>)>> {
    let rows = sqlx::query(
        "SELECT CAST(COLUMN_NAME AS CHAR), CAST(COLUMN_TYPE AS CHAR), CAST(CHARACTER_SET_NAME AS CHAR), \
         CAST(COLLATION_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
         AND EXTRA NOT LIKE '%GENERATED%' ORDER BY ORDINAL_POSITION",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(conn)
    .await
    .context("reading the table's columns")?;
    Ok(rows
        .iter()
        .map(|r| {
            let cs: Option<String> = r.get(2);
            let coll: Option<String> = r.get(3);
            let mut ty: String = r.get(1);
            if let (Some(cs), Some(coll)) = (&cs, &coll) {
                ty = format!("{ty} CHARACTER SET {cs} COLLATE {coll}");
            }
            (r.get(0), ty, cs)
        })
        .collect())
}

async fn trigger_names(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<String>> {
    let rows = sqlx::query(
        "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(conn)
    .await
    .context("reading information_schema.TRIGGERS")?;
    Ok(rows.iter().map(|r| r.get::<String, _>(0)).collect())
}

/// Refuses what this strategy cannot do safely, with the reason and the options.
fn refuse_unsupported(plan: &TablePlan, table: &Table, ours: &Names) -> Result<()> {
    let name = &plan.table;
    let foreign: Vec<&str> = table
        .triggers
        .iter()
        .map(|t| t.name.as_str())
        .filter(|t| !ours.triggers.iter().any(|o| o == t))
        .collect();
    if !foreign.is_empty() {
        bail!(
            "table '{name}' has triggers of its own ({}): the copy strategy adds its own and does not combine them. \
             Options: drop them for the duration of the job and recreate them afterwards on the new table, \
             or recode the columns with an offline ALTER in a maintenance window",
            foreign.join(", ")
        );
    }
    if let Some(fk) = table.foreign_keys.first() {
        bail!(
            "table '{name}' has foreign key '{}' ({} {}.{} -> {}.{}): a swapped-in copy would break or lose it. \
             Options: drop the foreign key for the job and add it back after the cut-over, \
             or recode in a maintenance window",
            fk.name,
            fk.direction,
            fk.from_table,
            fk.from_columns.join(","),
            fk.to_table,
            fk.to_columns.join(",")
        );
    }
    for c in &plan.columns {
        if plan.key.iter().any(|k| k.name == c.name) {
            bail!(
                "{name}.{}: the column is part of the paging key, which the copy strategy cannot recode. \
                 Options: give the table a surrogate primary key, or leave this column out of the job",
                c.name
            );
        }
    }
    for n in [&ours.shadow, &ours.old] {
        if !sorts_after(name, n) {
            bail!(
                "table '{name}': its name is too long for the copy's side tables to sort after it ({n}), \
                 which the atomic cut-over needs. Fix: rename the table to at most 51 characters for the job"
            );
        }
    }
    Ok(())
}

/// Runs (or resumes) the copy of one table until cut over, or until asked to stop.
#[allow(clippy::too_many_arguments)]
pub async fn run_table(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &str,
    plan: &TablePlan,
    table: &Table,
    stop: &AtomicBool,
    pacer: &mut Pacer,
    progress: &dyn Progress,
) -> Result<(TableOutcome, State)> {
    let schema = plan.schema.as_str();
    let n = names(&plan.table);
    sqlx::query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *conn)
        .await?;
    let mut state = match checkpoint::load(conn, schema, job, &plan.table).await? {
        Some(s) if s.fingerprint != plan.fingerprint => bail!(
            "the job changed for table '{}' since its copy began (checkpoint at {} rows). \
             Fix: restore the job file as it was and run again to finish, or `myrecode abort` the job and start anew",
            plan.table,
            s.rows_read
        ),
        Some(s) => s,
        None => start(conn, job, plan, table, &n).await?,
    };
    if state.done {
        return Ok((TableOutcome::Done, state));
    }
    settle_leftover_cutover(conn, schema).await?;
    let ctx = context(conn, plan, n, &state).await?;
    // A cut-over interrupted after its rename: the table is already the new one.
    if !table_exists(conn, schema, &ctx.names.shadow).await? {
        if table_exists(conn, schema, &ctx.names.old).await?
            && !is_sentry(conn, schema, &ctx.names.old).await?
        {
            finish(conn, &ctx, job, &mut state).await?;
            return Ok((TableOutcome::Done, state));
        }
        bail!(
            "the shadow table {} of '{}' is gone while its copy was in progress. \
             Fix: `myrecode abort` the job (or DELETE FROM {CHECKPOINT} WHERE tbl = '{}') and run again to start the copy afresh",
            ctx.names.shadow,
            plan.table,
            plan.table
        );
    }
    if table_exists(conn, schema, &ctx.names.old).await? {
        if !is_sentry(conn, schema, &ctx.names.old).await? {
            bail!(
                "both {} and {} exist beside '{}': this table was copied before. \
                 Fix: drop the one you do not need (`myrecode cleanup` drops kept originals), then run again",
                ctx.names.shadow,
                ctx.names.old,
                plan.table
            );
        }
        // A cut-over interrupted before its rename: the sentry goes, the copy goes on.
        conn.execute(format!("DROP TABLE IF EXISTS {}", ctx.t(&ctx.names.old)).as_str())
            .await?;
    }
    ensure_triggers(conn, &ctx).await?;
    create_stage(conn, &ctx).await?;
    let started = Instant::now();
    let rows_at_start = state.rows_read;
    let mut size = plan.batch_size.max(1);
    let mut differed = 0u64;
    let mut waiting_said = false;
    let mut reader = cfg.connect_one().await?;
    let mut ahead: Option<Ahead> = None;
    loop {
        match pacer.between_batches(conn, stop).await? {
            Flow::Go => {}
            Flow::Stop => return Ok((TableOutcome::Interrupted, state)),
            Flow::Abort => {
                abort_table(conn, &plan.schema, &plan.table, job).await?;
                return Ok((TableOutcome::Aborted, state));
            }
        }
        let t0 = Instant::now();
        match state.phase.as_str() {
            PHASE_COPYING => {
                copy_batch(conn, &mut reader, &ctx, job, size, &mut state, &mut ahead).await?;
                replay_some(conn, &ctx, job, &mut state, 1).await?;
            }
            PHASE_CHECKING => {
                differed += check_batch(conn, &ctx, job, size, &mut state).await?;
                if state.phase != PHASE_CHECKING {
                    println!(
                        "check: {}: every row compared with its copy; {differed} differed (changed since copied) and were queued for replay",
                        plan.table
                    );
                }
            }
            _ => {
                replay_some(conn, &ctx, job, &mut state, 20).await?;
                if log_len(conn, &ctx).await? < DRAIN_BEFORE_CUTOVER {
                    let go = !plan.manual_cutover
                        || pace::read(conn, schema, job).await? == Some(pace::Command::Cutover);
                    if go {
                        break;
                    }
                    if !waiting_said {
                        println!(
                            "ready: {} is copied and caught up; replaying writes until `myrecode cutover` (cutover: manual)",
                            plan.table
                        );
                        waiting_said = true;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        let rate =
            (state.rows_read - rows_at_start) as f64 / started.elapsed().as_secs_f64().max(1e-3);
        progress.batch(&plan.table, &state, table.estimated_rows, rate);
        size = inplace::tune(size, t0.elapsed(), plan.target_batch_time);
        if !plan.pause.is_zero() && state.phase != PHASE_REPLAYING {
            tokio::time::sleep(plan.pause).await;
        }
    }
    let pause = cut_over(conn, cfg, &ctx, job, &mut state).await?;
    println!(
        "cut-over: {} now has the recoded columns; reads and writes paused {:.1} ms; the original is kept as {} for rollback until `myrecode cleanup`",
        plan.table,
        pause.as_secs_f64() * 1000.0,
        ctx.names.old
    );
    finish(conn, &ctx, job, &mut state).await?;
    if plan.manual_cutover {
        pace::send(conn, schema, job, None).await?;
    }
    Ok((TableOutcome::Done, state))
}

async fn context<'a>(
    conn: &mut MySqlConnection,
    plan: &'a TablePlan,
    names: Names,
    state: &State,
) -> Result<Ctx<'a>> {
    let schema = plan.schema.as_str();
    let cols = columns_of(conn, schema, &plan.table).await?;
    // The target definitions: the shadow's, or the table's own once it was swapped in.
    let shadow_cols = if table_exists(conn, schema, &names.shadow).await? {
        columns_of(conn, schema, &names.shadow).await?
    } else {
        cols.clone()
    };
    let key_types = plan
        .key
        .iter()
        .map(|k| {
            cols.iter()
                .find(|c| c.0 == k.name)
                .map(|c| c.1.clone())
                .ok_or_else(|| anyhow!("key column {} of '{}' is gone", k.name, plan.table))
        })
        .collect::<Result<Vec<_>>>()?;
    let target_charsets: Vec<Option<String>> = plan
        .columns
        .iter()
        .map(|c| {
            shadow_cols
                .iter()
                .find(|s| s.0 == c.name)
                .and_then(|s| s.2.clone())
        })
        .collect();
    Ok(Ctx {
        plan,
        job_columns: plan
            .columns
            .iter()
            .zip(&target_charsets)
            .map(|(c, cs): (_, &Option<String>)| (c.name.clone(), cs.is_none()))
            .collect(),
        all_columns: cols.into_iter().map(|c| c.0).collect(),
        key_types,
        target_charsets,
        priors: inplace::parse_priors(&state.priors),
        names,
    })
}

/// A fresh start: refusals, shadow, log, triggers, priors, first checkpoint.
async fn start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    table: &Table,
    n: &Names,
) -> Result<State> {
    let schema = plan.schema.as_str();
    refuse_unsupported(plan, table, n)?;
    if table_exists(conn, schema, &n.old).await? && !is_sentry(conn, schema, &n.old).await? {
        bail!(
            "table '{}' was already copied once: its original is kept as {}. \
             Fix: `myrecode cleanup` the earlier job (or drop {}) once you no longer need it for rollback, then run again",
            plan.table,
            n.old,
            quote::table(schema, &n.old)
        );
    }
    let shadow = quote::table(schema, &n.shadow);
    conn.execute(format!("DROP TABLE IF EXISTS {shadow}").as_str())
        .await?;
    conn.execute(
        format!(
            "CREATE TABLE {shadow} LIKE {}",
            quote::table(schema, &plan.table)
        )
        .as_str(),
    )
    .await
    .with_context(|| format!("creating the shadow table {shadow}"))?;
    let modify: Vec<String> = plan
        .columns
        .iter()
        .map(|c| format!("MODIFY {} {}", quote::ident(&c.name), c.target))
        .collect();
    if let Err(e) = conn
        .execute(format!("ALTER TABLE {shadow} {}", modify.join(", ")).as_str())
        .await
    {
        conn.execute(format!("DROP TABLE IF EXISTS {shadow}").as_str())
            .await
            .ok();
        let code = e.as_database_error().and_then(|d| {
            d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
                .map(|m| m.number())
        });
        if matches!(code, Some(1071 | 1709 | 1118)) {
            bail!(
                "table '{}': with the job's targets an index or the row would be too large ({e}). Nothing was changed. \
                 Fix: ALTER TABLE {} ROW_FORMAT=DYNAMIC, or give the index a prefix, then scan and plan again \
                 (`myrecode plan --check` shows which index)",
                plan.table,
                quote::table(schema, &plan.table)
            );
        }
        return Err(anyhow::Error::new(e).context(format!(
            "giving {shadow} the job's target definitions. Nothing was changed. Fix: correct the `target:` of the job's columns"
        )));
    }
    conn.execute(log_ddl(schema, n).as_str()).await?;
    let s = State {
        fingerprint: plan.fingerprint.clone(),
        priors: inplace::compute_priors(conn, plan).await?,
        phase: PHASE_COPYING.into(),
        ..State::default()
    };
    create_triggers(conn, schema, &plan.table, n, &plan.key).await?;
    checkpoint::save(conn, schema, job, &plan.table, &s).await?;
    Ok(s)
}

async fn ensure_triggers(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<()> {
    let b = ctx.plan;
    create_triggers(conn, &b.schema, &b.table, &ctx.names, &b.key).await
}

/// Creates whichever of the three triggers is missing, all under one brief `LOCK TABLES … WRITE`,
/// so no application statement runs while only some of them exist.
async fn create_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    n: &Names,
    key: &[KeyColumn],
) -> Result<()> {
    let have = trigger_names(conn, schema, table).await?;
    let missing: Vec<(&String, String)> = n
        .triggers
        .iter()
        .zip(trigger_ddl(schema, table, n, key))
        .filter(|(name, _)| !have.contains(name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    conn.execute(format!("SET SESSION lock_wait_timeout = {CUTOVER_LOCK_WAIT}").as_str())
        .await?;
    conn.execute(
        format!(
            "LOCK TABLES {} WRITE, {} WRITE",
            quote::table(schema, table),
            quote::table(schema, &n.log)
        )
        .as_str(),
    )
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
    conn.execute("UNLOCK TABLES").await?;
    result
}

/// (Re)creates this session's staging table: the key columns as in the table, a value and a flag per job column.
async fn create_stage(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<()> {
    let mut cols: Vec<String> = ctx
        .key_types
        .iter()
        .enumerate()
        .map(|(i, ty)| format!("{} {ty} NOT NULL", stage_col('k', i)))
        .collect();
    for j in 0..ctx.job_columns.len() {
        cols.push(format!("{} LONGBLOB NULL", stage_col('v', j)));
        cols.push(format!("{} TINYINT NOT NULL DEFAULT 0", stage_col('s', j)));
    }
    let pk: Vec<String> = (0..ctx.key_types.len())
        .map(|i| stage_col('k', i))
        .collect();
    conn.execute(format!("DROP TEMPORARY TABLE IF EXISTS {}", quote::ident(STAGE)).as_str())
        .await?;
    conn.execute(
        format!(
            "CREATE TEMPORARY TABLE {} ({}, PRIMARY KEY ({})) ENGINE=InnoDB",
            quote::ident(STAGE),
            cols.join(", "),
            pk.join(", ")
        )
        .as_str(),
    )
    .await
    .context("creating the session's staging table. Fix: GRANT CREATE TEMPORARY TABLES on the schema to the job's user")?;
    Ok(())
}

/// Empties the staging table. Only outside a transaction: `TRUNCATE` commits (even for a
/// temporary table), but it is far cheaper than deleting a batch's rows inside one.
async fn clear_stage(conn: &mut MySqlConnection) -> Result<()> {
    conn.execute(format!("TRUNCATE TABLE {}", quote::ident(STAGE)).as_str())
        .await
        .context("emptying the staging table")?;
    Ok(())
}

fn read_key(row: &MySqlRow, n: usize) -> Result<Vec<Vec<u8>>> {
    (0..n)
        .map(|i| row.try_get::<Vec<u8>, _>(i).context("reading a key column"))
        .collect()
}

/// Binds key parts in the order `binds` names them.
fn bind_key<'q>(
    mut q: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
    key: &[Vec<u8>],
    binds: &[usize],
) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    for &i in binds {
        q = q.bind(key[i].clone());
    }
    q
}

/// What one stored value becomes in the shadow.
#[derive(Clone)]
struct Recoded {
    /// Bytes to stage; `None` lets the server convert it (ASCII, undecidable).
    value: Option<Vec<u8>>,
    /// Whether the value was recoded (not just kept).
    recoded: bool,
    /// Why and the runner-up, when undecidable (it is quarantined).
    undecidable: Option<(String, Option<String>)>,
}

/// Decides what one stored value of job column `ci` becomes in the shadow.
fn recoded_value(ctx: &Ctx<'_>, ci: usize, stored: &[u8]) -> Recoded {
    let r = |value, recoded, undecidable| Recoded {
        value,
        recoded,
        undecidable,
    };
    let col = &ctx.plan.columns[ci];
    match recode::decide(
        &col.source,
        ctx.priors.get(&col.name),
        ctx.plan.threshold,
        stored,
    ) {
        Action::Rewrite { new, .. } => r(Some(new), true, None),
        // UTF-8 already (written through a latin1 connection): its text, not its latin1 reading.
        Action::Keep if !stored.is_ascii() && std::str::from_utf8(stored).is_ok() => {
            r(Some(stored.to_vec()), false, None)
        }
        Action::Keep => r(None, false, None),
        Action::Quarantine { reason, runner_up } => r(None, false, Some((reason, runner_up))),
    }
}

/// Binds each value in order.
fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
    values: &[Vec<u8>],
) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    for v in values {
        q = q.bind(v.clone());
    }
    q
}

/// Copies the rows matching `cond` (its `?`s bound to `binds`) into the shadow, with the
/// recoded values of `rows` (read as `key…, job columns…`) staged first. Returns (recoded, quarantined).
///
/// The staging table must be empty: callers empty it with [`clear_stage`] after their commit
/// (a rollback empties it too).
async fn copy_rows(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    rows: &[MySqlRow],
    cond: &str,
    binds: &[Vec<u8>],
) -> Result<(u64, u64)> {
    let decided = decide_rows(ctx, rows, None)?;
    let changed = decided.changed;
    let quarantined = write_rows(conn, ctx, job, decided, cond, binds).await?;
    Ok((changed, quarantined))
}

/// Decisions made ahead of a batch, by packed key: per job column, the stored bytes decided
/// on and the decision (reused when the locked read finds the same bytes).
type Ahead = HashMap<Vec<u8>, Vec<Option<(Vec<u8>, Recoded)>>>;

/// A batch's decisions: what to stage per key, how many values were recoded, what to quarantine.
struct Decided {
    staged: Vec<(Vec<Vec<u8>>, Cells)>,
    changed: u64,
    quarantine: Vec<Quarantined>,
}

/// Decides every job value of `rows` (read as `key…, job columns…`), reusing `ahead`'s
/// decision wherever it was made on the same bytes.
fn decide_rows(ctx: &Ctx<'_>, rows: &[MySqlRow], ahead: Option<&Ahead>) -> Result<Decided> {
    let b = ctx.plan;
    let nk = b.key.len();
    let nc = b.columns.len();
    let (mut changed, mut quarantine) = (0u64, Vec::new());
    let mut staged: Vec<(Vec<Vec<u8>>, Cells)> = Vec::new();
    for row in rows {
        let key = read_key(row, nk)?;
        let early = ahead.and_then(|a| a.get(&keycodec::pack(&key)));
        let mut values = vec![None; nc];
        for (ci, slot) in values.iter_mut().enumerate() {
            let Some(stored) = row.try_get::<Option<Vec<u8>>, _>(nk + ci)? else {
                continue;
            };
            let reuse = early
                .and_then(|e| e[ci].as_ref())
                .filter(|(bytes, _)| *bytes == stored)
                .map(|(_, r)| r.clone());
            let Recoded {
                value,
                recoded,
                undecidable,
            } = reuse.unwrap_or_else(|| recoded_value(ctx, ci, &stored));
            changed += recoded as u64;
            if let Some((reason, runner_up)) = undecidable {
                quarantine.push(Quarantined {
                    col: b.columns[ci].name.clone(),
                    key: keycodec::pack(&key),
                    value: stored,
                    reason,
                    runner_up,
                });
            }
            *slot = value;
        }
        if values.iter().any(Option::is_some) {
            staged.push((key, values));
        }
    }
    Ok(Decided {
        staged,
        changed,
        quarantine,
    })
}

/// Reads the `size` rows after `after` without locks and decides their values, so the
/// next batch finds its decisions made (this runs while the current batch is written).
async fn read_ahead(
    reader: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    after: &[Vec<u8>],
    size: usize,
) -> Result<Ahead> {
    let b = ctx.plan;
    let rows = inplace::read_batch(reader, b, &ctx.job_names(), Some(after), size, false)
        .await
        .context("reading the next batch ahead")?;
    let nk = b.key.len();
    let mut out = Ahead::with_capacity(rows.len());
    for row in &rows {
        let mut cols = Vec::with_capacity(b.columns.len());
        for ci in 0..b.columns.len() {
            cols.push(row.try_get::<Option<Vec<u8>>, _>(nk + ci)?.map(|stored| {
                let r = recoded_value(ctx, ci, &stored);
                (stored, r)
            }));
        }
        out.insert(keycodec::pack(&read_key(row, nk)?), cols);
    }
    Ok(out)
}

/// Stages a batch's decided values, copies the rows matching `cond` into the shadow, and
/// lists the undecidable values. Returns how many were newly quarantined.
async fn write_rows(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    decided: Decided,
    cond: &str,
    binds: &[Vec<u8>],
) -> Result<u64> {
    let b = ctx.plan;
    let nk = b.key.len();
    let nc = b.columns.len();
    let Decided {
        staged, quarantine, ..
    } = decided;
    let key_ph: Vec<String> = b.key.iter().map(|k| k.placeholder()).collect();
    let one = format!("({}, {})", key_ph.join(", "), vec!["?, ?"; nc].join(", "));
    let mut names: Vec<String> = (0..nk).map(|i| stage_col('k', i)).collect();
    for j in 0..nc {
        names.push(stage_col('v', j));
        names.push(stage_col('s', j));
    }
    for chunk in staged.chunks(1000) {
        let sql = format!(
            "INSERT INTO {} ({}) VALUES {}",
            quote::ident(STAGE),
            names.join(", "),
            vec![one.as_str(); chunk.len()].join(", ")
        );
        let mut q = sqlx::query(&sql);
        for (key, values) in chunk {
            for k in key {
                q = q.bind(k.clone());
            }
            for v in values {
                q = q.bind(v.clone()).bind(v.is_some() as i8);
            }
        }
        q.execute(&mut *conn)
            .await
            .context("staging recoded values")?;
    }
    let sql = replace_select(
        &b.schema,
        &b.table,
        &ctx.names.shadow,
        &ctx.all_columns,
        (!staged.is_empty()).then_some(&Staging {
            key: &b.key,
            columns: &ctx.job_columns,
        }),
        cond,
    );
    // Whatever the shadow holds for these keys goes first (a replay may have copied a row
    // ahead of the copy, or an earlier version of it), so a plain INSERT can follow: a
    // REPLACE would silently delete a *different* row that collides on a unique index
    // once recoded, where INSERT stops with the duplicate, and nothing is lost.
    let delete = format!("DELETE FROM {} WHERE {cond}", ctx.t(&ctx.names.shadow));
    bind_all(sqlx::query(&delete), binds)
        .execute(&mut *conn)
        .await
        .context("clearing the shadow's rows for these keys")?;
    bind_all(sqlx::query(&sql), binds)
        .execute(&mut *conn)
        .await
        .map_err(|e| {
            let duplicate = e
                .as_database_error()
                .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|m| m.number()))
                == Some(1062);
            if duplicate {
                anyhow!(
                    "copying rows of '{}': two rows become equal on a unique index once recoded ({e}). \
                     Nothing is lost: the batch was rolled back. Fix: make the values distinct in '{}', or make that index non-unique for the job",
                    b.table,
                    b.table
                )
            } else {
                anyhow::Error::new(e).context(format!("copying rows of {} into the shadow table", b.table))
            }
        })?;
    inplace::save_quarantine(conn, &b.schema, job, &b.table, &quarantine).await
}

/// Copies the next batch in key order, in one transaction with its checkpoint; meanwhile,
/// on `reader`, the batch after it is read and decided ahead (`ahead` carries it over).
async fn copy_batch(
    conn: &mut MySqlConnection,
    reader: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    size: usize,
    state: &mut State,
    ahead: &mut Option<Ahead>,
) -> Result<()> {
    let b = ctx.plan;
    let mut tx = conn.begin().await?;
    let last = state.last_key.as_deref().and_then(keycodec::unpack);
    let rows =
        inplace::read_batch(&mut tx, b, &ctx.job_names(), last.as_deref(), size, true).await?;
    let mut next = state.clone();
    let upper = rows.last().map(|r| read_key(r, b.key.len())).transpose()?;
    let write = async {
        if let Some(upper) = &upper {
            let (to_cond, to_binds) = at_most(&b.key);
            let (cond, after_binds) = match &last {
                Some(_) => {
                    let (after, after_binds) = keyset::after(&b.key);
                    (format!("{after} AND {to_cond}"), Some(after_binds))
                }
                None => (to_cond, None),
            };
            let mut binds: Vec<Vec<u8>> = Vec::new();
            if let (Some(last), Some(after)) = (&last, &after_binds) {
                binds.extend(after.iter().map(|&i| last[i].clone()));
            }
            binds.extend(to_binds.iter().map(|&i| upper[i].clone()));
            let decided = decide_rows(ctx, &rows, ahead.as_ref())?;
            next.rows_changed += decided.changed;
            next.rows_quarantined += write_rows(&mut tx, ctx, job, decided, &cond, &binds).await?;
            next.last_key = Some(keycodec::pack(upper));
            next.rows_read += rows.len() as u64;
        }
        if rows.len() < size {
            next.phase = PHASE_CHECKING.into();
            next.last_key = None;
        }
        checkpoint::save(&mut tx, &b.schema, job, &b.table, &next).await?;
        tx.commit().await.context("committing a copy batch")?;
        anyhow::Ok(())
    };
    let read_next = async {
        match &upper {
            Some(upper) if rows.len() == size => {
                read_ahead(reader, ctx, upper, size).await.map(Some)
            }
            _ => Ok(None),
        }
    };
    let (written, read) = futures_util::future::join(write, read_next).await;
    written?;
    // A failed read-ahead costs only its head start: the next batch decides for itself.
    *ahead = read.ok().flatten();
    clear_stage(conn).await?;
    *state = next;
    Ok(())
}

/// One batch of a comparison in key order: how many source rows were read, the last key,
/// and the keys whose rows differ (or exist on one side only).
struct Compared {
    rows: usize,
    same: usize,
    upper: Option<Vec<Vec<u8>>>,
    differ: Vec<Vec<u8>>,
}

/// Compares up to `size` rows of `src` after `last` with the same key range of `dst`: every
/// other column equal, every job column the server's own conversion or a lossless reading of
/// the source bytes (a label's round trip gives them back exactly); the last batch (fewer rows) also covers everything after in
/// `dst`. `lock` takes shared row locks on the source rows (the check before the cut-over).
async fn compare_batch(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    (src, dst): (&str, &str),
    last: Option<&[Vec<u8>]>,
    size: usize,
    lock: bool,
) -> Result<Compared> {
    let b = ctx.plan;
    let nk = b.key.len();
    let nc = b.columns.len();
    let others: Vec<String> = ctx
        .all_columns
        .iter()
        .filter(|c| {
            !b.key.iter().any(|k| &k.name == *c) && !b.columns.iter().any(|j| &j.name == *c)
        })
        .map(|c| format!("IFNULL(HEX(CAST({} AS BINARY)), 'N')", quote::ident(c)))
        .collect();
    let digest = if others.is_empty() {
        "''".to_string()
    } else {
        format!("MD5(CONCAT_WS('|', {}))", others.join(", "))
    };
    let key_raw: Vec<String> = b.key.iter().map(|k| keyset::raw(&k.name)).collect();
    let job_raw: Vec<String> = b.columns.iter().map(|c| keyset::raw(&c.name)).collect();
    // What the server's own conversion gives, for values the copy leaves to it.
    let converted: Vec<String> = b
        .columns
        .iter()
        .zip(&ctx.target_charsets)
        .map(|(c, cs)| match cs {
            Some(cs) => format!(
                "CAST(CONVERT({} USING {}) AS BINARY)",
                quote::ident(&c.name),
                quote::ident(cs)
            ),
            None => keyset::raw(&c.name),
        })
        .collect();
    let order: Vec<String> = b.key.iter().map(|k| quote::ident(&k.name)).collect();
    let (after, after_binds) = keyset::after(&b.key);
    let from = if last.is_some() {
        after.as_str()
    } else {
        "1 = 1"
    };
    let sql = format!(
        "SELECT {}, {}, {}, {digest} FROM {} WHERE {from} ORDER BY {} LIMIT {size}{}",
        key_raw.join(", "),
        job_raw.join(", "),
        converted.join(", "),
        ctx.t(src),
        order.join(", "),
        if lock { " LOCK IN SHARE MODE" } else { "" }
    );
    let mut q = sqlx::query(&sql);
    if let Some(last) = last {
        q = bind_key(q, last, &after_binds);
    }
    let rows = q
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading a batch of {src} to compare"))?;
    let upper = if rows.len() == size {
        rows.last().map(|r| read_key(r, nk)).transpose()?
    } else {
        None
    };
    let (to_cond, to_binds) = at_most(&b.key);
    let sql = format!(
        "SELECT {}, {}, {digest} FROM {} WHERE {from}{}",
        key_raw.join(", "),
        job_raw.join(", "),
        ctx.t(dst),
        if upper.is_some() {
            format!(" AND {to_cond}")
        } else {
            String::new()
        }
    );
    let mut q = sqlx::query(&sql);
    if let Some(last) = last {
        q = bind_key(q, last, &after_binds);
    }
    if let Some(upper) = &upper {
        q = bind_key(q, upper, &to_binds);
    }
    let dst_rows = q
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading {dst} to compare"))?;
    let cell = |r: &MySqlRow, i: usize| r.try_get::<Option<Vec<u8>>, _>(i);
    let mut copied: BTreeMap<Vec<u8>, (Cells, Option<Vec<u8>>)> = BTreeMap::new();
    for r in &dst_rows {
        let values = (nk..nk + nc)
            .map(|i| cell(r, i))
            .collect::<Result<_, _>>()?;
        copied.insert(
            keycodec::pack(&read_key(r, nk)?),
            (values, cell(r, nk + nc)?),
        );
    }
    let mut differ = Vec::new();
    let mut same_rows = 0;
    for r in &rows {
        let packed = keycodec::pack(&read_key(r, nk)?);
        let digest = cell(r, nk + 2 * nc)?;
        let same = match copied.remove(&packed) {
            Some((got, d)) if d == digest => {
                let mut all = true;
                for (ci, got) in got.iter().enumerate() {
                    all &= match (cell(r, nk + ci)?, got) {
                        (None, None) => true,
                        (Some(stored), Some(got)) => {
                            cell(r, nk + nc + ci)?.as_deref() == Some(got.as_slice())
                                || std::str::from_utf8(got)
                                    .is_ok_and(|t| recode::is_lossless_reading(&stored, t))
                        }
                        _ => false,
                    };
                }
                all
            }
            _ => false,
        };
        if same {
            same_rows += 1;
        } else {
            differ.push(packed);
        }
    }
    differ.extend(copied.into_keys());
    let upper = match upper {
        Some(u) => Some(u),
        None => rows.last().map(|r| read_key(r, nk)).transpose()?,
    };
    Ok(Compared {
        rows: rows.len(),
        same: same_rows,
        upper,
        differ,
    })
}

/// Compares the next batch of the table with the shadow; queues every difference
/// in the change log for replay. Returns how many rows differed.
async fn check_batch(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    size: usize,
    state: &mut State,
) -> Result<u64> {
    let b = ctx.plan;
    let last = state.last_key.as_deref().and_then(keycodec::unpack);
    let mut tx = conn.begin().await?;
    let c = compare_batch(
        &mut tx,
        ctx,
        (&b.table, &ctx.names.shadow),
        last.as_deref(),
        size,
        true,
    )
    .await?;
    for chunk in c.differ.chunks(500) {
        let sql = format!(
            "INSERT INTO {} (key_bytes) VALUES {}",
            ctx.t(&ctx.names.log),
            vec!["(?)"; chunk.len()].join(", ")
        );
        let mut q = sqlx::query(&sql);
        for k in chunk {
            q = q.bind(k.clone());
        }
        q.execute(&mut *tx)
            .await
            .context("queueing differing rows for replay")?;
    }
    let mut next = state.clone();
    if c.rows < size {
        next.phase = PHASE_REPLAYING.into();
        next.last_key = None;
    } else {
        next.last_key = c.upper.as_deref().map(keycodec::pack);
    }
    checkpoint::save(&mut tx, &b.schema, job, &b.table, &next).await?;
    tx.commit().await.context("committing a check batch")?;
    *state = next;
    Ok(c.differ.len() as u64)
}

/// What `verify` found for a copied table: its rows against the kept original, recoded.
#[derive(Debug, Default, Clone)]
pub struct CopyFindings {
    /// Rows whose every value is a lossless reading of the original's.
    pub equal: u64,
    /// Keys (readable) of rows that differ, or exist on one side only: written since the cut-over.
    pub differ: Vec<String>,
    /// Why nothing could be compared (not cut over yet, or the original dropped).
    pub skipped: Option<String>,
}

/// Compares a cut-over table with the original kept beside it, row by row, as the check
/// pass does: every value the server's conversion or a lossless reading of the original.
pub async fn verify_table(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
) -> Result<CopyFindings> {
    let schema = plan.schema.as_str();
    let n = names(&plan.table);
    let state = match checkpoint::load(conn, schema, job, &plan.table).await? {
        Some(s) if s.done => s,
        _ => {
            return Ok(CopyFindings {
                skipped: Some("not cut over yet".into()),
                ..CopyFindings::default()
            })
        }
    };
    if !table_exists(conn, schema, &n.old).await? {
        return Ok(CopyFindings {
            skipped: Some(format!("{} was dropped by cleanup", n.old)),
            ..CopyFindings::default()
        });
    }
    let old = n.old.clone();
    let ctx = context(conn, plan, n, &state).await?;
    let mut found = CopyFindings::default();
    let mut last: Option<Vec<Vec<u8>>> = None;
    loop {
        let c = compare_batch(
            conn,
            &ctx,
            (&old, &plan.table),
            last.as_deref(),
            5000,
            false,
        )
        .await?;
        found.equal += c.same as u64;
        found.differ.extend(c.differ.iter().map(|k| {
            keycodec::unpack(k)
                .unwrap_or_default()
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect::<Vec<_>>()
                .join(",")
        }));
        if c.rows < 5000 {
            return Ok(found);
        }
        last = c.upper;
    }
}

/// Replays up to one chunk of the change log inside the caller's transaction. Returns log rows done.
async fn replay_chunk(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<usize> {
    let b = ctx.plan;
    let log = ctx.t(&ctx.names.log);
    let rows = sqlx::query(&format!(
        "SELECT id, key_bytes FROM {log} ORDER BY id LIMIT {REPLAY_CHUNK}"
    ))
    .fetch_all(&mut *conn)
    .await
    .context("reading the change log")?;
    if rows.is_empty() {
        return Ok(0);
    }
    let mut seen = HashSet::new();
    let mut keys: Vec<Vec<Vec<u8>>> = Vec::new();
    for r in &rows {
        let packed: Vec<u8> = r.get(1);
        if seen.insert(packed.clone()) {
            keys.push(keycodec::unpack(&packed).ok_or_else(|| {
                anyhow!("the change log {} holds a malformed key", ctx.names.log)
            })?);
        }
    }
    let cond = any_of(&b.key, keys.len());
    let binds: Vec<Vec<u8>> = keys.concat();
    let mut cols: Vec<String> = b.key.iter().map(|k| keyset::raw(&k.name)).collect();
    cols.extend(b.columns.iter().map(|c| keyset::raw(&c.name)));
    let select = format!(
        "SELECT {} FROM {} WHERE {cond} LOCK IN SHARE MODE",
        cols.join(", "),
        ctx.t(&b.table)
    );
    let present = bind_all(sqlx::query(&select), &binds)
        .fetch_all(&mut *conn)
        .await
        .context("re-reading changed rows")?;
    // Every logged key leaves the shadow, and those still in the table come back, recoded afresh.
    let (_, q) = copy_rows(conn, ctx, job, &present, &cond, &binds).await?;
    state.rows_quarantined += q;
    state.rows_conflicted += keys.len() as u64;
    // Exactly the ids read: a lower id committed later than these is not ours to delete yet.
    let ids: Vec<String> = rows
        .iter()
        .map(|r| r.get::<u64, _>(0).to_string())
        .collect();
    sqlx::query(&format!(
        "DELETE FROM {log} WHERE id IN ({})",
        ids.join(", ")
    ))
    .execute(&mut *conn)
    .await
    .context("removing replayed rows from the change log")?;
    checkpoint::save(conn, &b.schema, job, &b.table, state).await?;
    Ok(rows.len())
}

/// Replays at most `chunks` chunks of the log, each in its own transaction; returns log rows done.
async fn replay_some(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
    chunks: usize,
) -> Result<usize> {
    let mut done = 0;
    for _ in 0..chunks {
        let mut next = state.clone();
        let mut tx = conn.begin().await?;
        let n = replay_chunk(&mut tx, ctx, job, &mut next).await?;
        tx.commit().await.context("committing a replay")?;
        if n > 0 {
            clear_stage(conn).await?;
        }
        *state = next;
        done += n;
        if n < REPLAY_CHUNK {
            break;
        }
    }
    Ok(done)
}

async fn log_len(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM {}", ctx.t(&ctx.names.log));
    Ok(sqlx::query_scalar(&sql).fetch_one(conn).await?)
}

/// Waits out (killing if need be) a cut-over rename a killed run left queued, so the tables
/// are looked at only once it has run or failed.
async fn settle_leftover_cutover(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    let pattern = format!(
        "%{}%",
        MARK.trim_start_matches("/* ").trim_end_matches(" */")
    );
    for round in 0..50 {
        let ids: Vec<u64> = sqlx::query_scalar(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE ? AND ID <> CONNECTION_ID()",
        )
        .bind(schema)
        .bind(&pattern)
        .fetch_all(&mut *conn)
        .await
        .context("looking for a cut-over left queued by an earlier run")?;
        if ids.is_empty() {
            return Ok(());
        }
        if round == 5 {
            for id in &ids {
                let _ = conn.execute(format!("KILL QUERY {id}").as_str()).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("a cut-over rename left by an earlier run is still queued on schema '{schema}'. Fix: KILL it (SHOW PROCESSLIST) and run again")
}

/// Swaps the shadow in (see the module docs), retrying; returns how long the table was locked.
async fn cut_over(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<Duration> {
    let mut attempt = 0;
    loop {
        match try_cut_over(conn, cfg, ctx, job, state).await {
            Ok(d) => return Ok(d),
            Err(e) if attempt + 1 < CUTOVER_ATTEMPTS => {
                tracing::warn!(table = %ctx.plan.table, error = %crate::db::redact::redact_error(&e), "cut-over failed; retrying");
                attempt += 1;
                tokio::time::sleep(super::retry::backoff(attempt)).await;
                settle_leftover_cutover(conn, &ctx.plan.schema).await?;
                if !table_exists(conn, &ctx.plan.schema, &ctx.names.shadow).await? {
                    // The rename did happen (its reply was lost): the swap is done.
                    return Ok(Duration::ZERO);
                }
                replay_some(conn, ctx, job, state, 50).await?;
            }
            Err(e) => {
                return Err(e.context(format!(
                    "the cut-over of '{}' failed {} times; the copy stays attached and checkpointed: run again",
                    ctx.plan.table,
                    attempt + 1
                )))
            }
        }
    }
}

/// `AUTO_INCREMENT=` of a `SHOW CREATE TABLE` text, if it has one.
pub fn auto_increment_of(create: &str) -> Option<u64> {
    let at = create.rfind(" AUTO_INCREMENT=")?;
    let digits: String = create[at + 16..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

async fn try_cut_over(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<Duration> {
    let b = ctx.plan;
    let t = ctx.t(&b.table);
    let shadow = ctx.t(&ctx.names.shadow);
    let old = ctx.t(&ctx.names.old);
    if table_exists(conn, &b.schema, &ctx.names.old).await? {
        if !is_sentry(conn, &b.schema, &ctx.names.old).await? {
            bail!("{old} exists and is not our sentry: refusing to cut over. Fix: drop or rename it, then run again");
        }
    } else {
        conn.execute(
            format!("CREATE TABLE {old} (sentry TINYINT) ENGINE=InnoDB COMMENT='{SENTRY_COMMENT}'")
                .as_str(),
        )
        .await
        .context("creating the cut-over sentry table")?;
    }
    let mut locker = cfg.connect_one().await?;
    let mut renamer = cfg.connect_one().await?;
    let renamer_id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(&mut renamer)
        .await?;
    renamer
        .execute(format!("SET SESSION lock_wait_timeout = {RENAME_LOCK_WAIT}").as_str())
        .await?;
    locker
        .execute(format!("SET SESSION lock_wait_timeout = {CUTOVER_LOCK_WAIT}").as_str())
        .await?;
    create_stage(&mut locker, ctx).await?;
    // With autocommit off, COMMIT ends each drain chunk without releasing the table locks.
    locker.execute("SET autocommit = 0").await?;
    locker
        .execute(
            format!(
                "LOCK TABLES {t} WRITE, {t} AS {SRC} READ, {shadow} WRITE, {old} WRITE, {} WRITE, {} WRITE, {} WRITE",
                ctx.t(&ctx.names.log),
                ctx.t(CHECKPOINT),
                ctx.t(QUARANTINE)
            )
            .as_str(),
        )
        .await
        .context("locking the table for the cut-over")?;
    let paused = Instant::now();
    let drained = async {
        let mut next = state.clone();
        while replay_chunk(&mut locker, ctx, job, &mut next).await? > 0 {
            locker.execute("COMMIT").await?;
            clear_stage(&mut locker).await?;
        }
        locker.execute("COMMIT").await?;
        let create: String = sqlx::query(&format!("SHOW CREATE TABLE {t}"))
            .fetch_one(&mut locker)
            .await?
            .try_get(1)?;
        if let Some(n) = auto_increment_of(&create) {
            locker
                .execute(format!("ALTER TABLE {shadow} AUTO_INCREMENT = {n}").as_str())
                .await
                .context("carrying AUTO_INCREMENT over to the shadow")?;
        }
        if let Some(ms) = std::env::var("MYRECODE_TEST_CUTOVER_HOLD_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            // Test hook: stretch the locked window so kill tests can land inside it.
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        anyhow::Ok(next)
    }
    .await;
    let next = match drained {
        Ok(n) => n,
        Err(e) => {
            let _ = locker.execute("UNLOCK TABLES").await;
            return Err(e.context("draining the change log under the cut-over lock"));
        }
    };
    let rename_sql = format!("RENAME {MARK} TABLE {t} TO {old}, {shadow} TO {t}");
    let rename = async {
        renamer
            .execute(rename_sql.as_str())
            .await
            .context("renaming the tables")
    };
    let release = async {
        let give_up = Instant::now() + Duration::from_secs(5);
        loop {
            let n: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE LIKE '%metadata lock%'",
            )
            .bind(renamer_id)
            .fetch_one(&mut *conn)
            .await?;
            if n > 0 {
                break;
            }
            if Instant::now() > give_up {
                // The sentry is still there: unlocked now, a late rename can only fail.
                let _ = locker.execute("UNLOCK TABLES").await;
                let _ = conn
                    .execute(format!("KILL QUERY {renamer_id}").as_str())
                    .await;
                bail!("the rename never queued behind the cut-over lock");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Drained and the rename queued first in line: the sentry goes, then the lock.
        let dropped = locker
            .execute(format!("DROP TABLE {old}").as_str())
            .await
            .context("dropping the cut-over sentry");
        locker.execute("UNLOCK TABLES").await?;
        dropped.map(|_| ())
    };
    let (renamed, released) = futures_util::future::join(rename, release).await;
    let pause = paused.elapsed();
    released?;
    renamed?;
    *state = next;
    Ok(pause)
}

/// After the rename: drop the triggers (now on the old table); mark the table done.
///
/// The (drained) log stays: the application's cached prepared statements may still list it
/// among the tables the old triggers used, and MariaDB fails them with 1146 if it is gone.
/// It goes together with the old table, at `myrecode cleanup`.
async fn finish(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<()> {
    let b = ctx.plan;
    // Writes that reached the original after the drain would be logged by the triggers, which
    // moved with it: never hide them (the cut-over's ordering is there to make this impossible).
    let left = log_len(conn, ctx).await?;
    if left > 0 {
        bail!(
            "cut-over of '{}': {left} write(s) reached the original after the drain; \
             their keys are in {} and their rows in {}. Fix: copy those rows into '{}' by hand, then DELETE FROM {} and run again",
            b.table,
            ctx.names.log,
            ctx.names.old,
            b.table,
            ctx.names.log
        );
    }
    for trg in &ctx.names.triggers {
        conn.execute(format!("DROP TRIGGER IF EXISTS {}", ctx.t(trg)).as_str())
            .await
            .with_context(|| format!("dropping trigger {trg}"))?;
    }
    let mut next = state.clone();
    next.done = true;
    next.phase = PHASE_DONE.into();
    checkpoint::save(conn, &b.schema, job, &b.table, &next).await?;
    *state = next;
    Ok(())
}

/// Abandons a copy that has not cut over: its triggers, shadow, log and sentry go, and its
/// checkpoint; the original table was never changed. Returns false when the table was
/// already swapped (then nothing is touched: `cleanup` or a swap back are the ways on).
pub async fn abort_table(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    job: &str,
) -> Result<bool> {
    let n = names(table);
    if let Some(s) = checkpoint::load(conn, schema, job, table).await? {
        if s.done {
            return Ok(false);
        }
    }
    settle_leftover_cutover(conn, schema).await?;
    for trg in &n.triggers {
        conn.execute(format!("DROP TRIGGER IF EXISTS {}", quote::table(schema, trg)).as_str())
            .await
            .with_context(|| format!("dropping trigger {trg}"))?;
    }
    if is_sentry(conn, schema, &n.old).await? {
        conn.execute(format!("DROP TABLE IF EXISTS {}", quote::table(schema, &n.old)).as_str())
            .await?;
    }
    if table_exists(conn, schema, &n.shadow).await? && table_exists(conn, schema, table).await? {
        conn.execute(format!("DROP TABLE IF EXISTS {}", quote::table(schema, &n.shadow)).as_str())
            .await?;
    }
    conn.execute(format!("DROP TABLE IF EXISTS {}", quote::table(schema, &n.log)).as_str())
        .await?;
    sqlx::query(&format!(
        "DELETE FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKPOINT)
    ))
    .bind(job)
    .bind(table)
    .execute(&mut *conn)
    .await
    .context("removing the aborted table's checkpoint")?;
    Ok(true)
}

/// After a finished copy: drops the kept original and the drained log. Returns the tables
/// dropped; refuses a copy still in progress.
pub async fn cleanup_table(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    job: &str,
) -> Result<Vec<String>> {
    let n = names(table);
    match checkpoint::load(conn, schema, job, table).await? {
        Some(s) if s.done => {}
        Some(_) => bail!(
            "table '{table}' is still being copied: nothing to clean up yet. Fix: let the run finish (or `myrecode abort` it)"
        ),
        None => return Ok(Vec::new()),
    }
    let mut dropped = Vec::new();
    for name in [&n.old, &n.log] {
        if table_exists(conn, schema, name).await? && !is_sentry(conn, schema, name).await? {
            conn.execute(format!("DROP TABLE {}", quote::table(schema, name)).as_str())
                .await
                .with_context(|| format!("dropping {name}"))?;
            dropped.push(name.clone());
        }
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str) -> KeyColumn {
        KeyColumn::plain(name)
    }

    #[test]
    fn names_fit_in_64_characters_stay_distinct_and_sort_after_the_table() {
        let n = names("posts");
        assert_eq!(n.shadow, "posts_myrecode_new");
        assert_eq!(n.old, "posts_myrecode_old");
        assert_eq!(n.log, "posts_myrecode_log");
        assert!(sorts_after("posts", &n.shadow) && sorts_after("posts", &n.old));
        // A name that sorts before the table is what let writes slip past the rename.
        assert!(!sorts_after("posts", "_posts_myrecode_new"));
        let long = "ы".repeat(64);
        let n = names(&long);
        for s in [&n.shadow, &n.old, &n.log, &n.triggers[0]] {
            assert!(s.chars().count() <= 64, "{s}");
        }
        assert_ne!(n.shadow, names(&"ы".repeat(63)).shadow);
        let ascii_long = "a".repeat(60);
        assert!(sorts_after(&ascii_long, &names(&ascii_long).shadow));
    }

    #[test]
    fn trigger_packs_the_key_like_keycodec() {
        let e = pack_expr("NEW", &[k("a"), k("b`")]);
        assert!(e.starts_with("CONCAT(CHAR((OCTET_LENGTH(CAST(NEW.`a` AS BINARY))) & 255"));
        assert!(e.contains("CAST(NEW.`b``` AS BINARY)"));
        let ddl = trigger_ddl("s", "t", &names("t"), &[k("id")]);
        assert!(ddl[1].starts_with("CREATE TRIGGER `s`.`t_myrecode_upd` AFTER UPDATE ON `s`.`t`"));
        assert!(
            ddl[1].contains("CAST(OLD.`id` AS BINARY)")
                && ddl[1].contains("CAST(NEW.`id` AS BINARY)")
        );
    }

    #[test]
    fn at_most_negates_after_and_any_of_ors_equalities() {
        let (c, binds) = at_most(&[k("a"), k("b")]);
        assert_eq!(c, "NOT (`a` >= ? AND (`a` > ? OR (`a` = ? AND `b` > ?)))");
        assert_eq!(binds, vec![0, 0, 0, 1]);
        assert_eq!(
            any_of(&[k("a"), k("b")], 2),
            "(`a` = ? AND `b` = ?) OR (`a` = ? AND `b` = ?)"
        );
    }

    #[test]
    fn replace_select_takes_staged_values_over_the_servers_conversion() {
        assert_eq!(
            replace_select("s", "t", "n", &["id".into(), "b".into()], None, "`id` = ?"),
            "INSERT INTO `s`.`n` (`id`, `b`) SELECT _myrecode_src.`id`, _myrecode_src.`b` FROM `s`.`t` AS _myrecode_src WHERE `id` = ?"
        );
        let key = [k("id")];
        let jobs = [("b".to_string(), false), ("c".to_string(), true)];
        let sql = replace_select(
            "s",
            "t",
            "n",
            &["id".into(), "b".into(), "c".into()],
            Some(&Staging {
                key: &key,
                columns: &jobs,
            }),
            "1",
        );
        assert!(sql.contains(
            "IF(x.`_myrecode_s0` = 1, CONVERT(x.`_myrecode_v0` USING utf8mb4), _myrecode_src.`b`)"
        ));
        assert!(sql.contains("IF(x.`_myrecode_s1` = 1, x.`_myrecode_v1`, _myrecode_src.`c`)"));
        assert!(sql
            .contains("LEFT JOIN `_myrecode_stage` AS x ON _myrecode_src.`id` = x.`_myrecode_k0`"));
    }

    #[test]
    fn auto_increment_is_read_from_show_create_table() {
        let create = "CREATE TABLE `t` (\n  `id` int NOT NULL AUTO_INCREMENT,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=4711 DEFAULT CHARSET=latin1";
        assert_eq!(auto_increment_of(create), Some(4711));
        assert_eq!(
            auto_increment_of("CREATE TABLE `t` (`id` int) ENGINE=InnoDB"),
            None
        );
    }
}

//! Online copy of one table into a shadow table with the job's target column definitions, recoding on the way.
//!
//! The flow (pt-online-schema-change's, with the recoding inside the copy path):
//! 1. `<t>_myrecode_new` is created `LIKE` the table, its job columns `MODIFY`d to their
//!    targets; `<t>_myrecode_log` receives the key of every row the application changes,
//!    written by three `AFTER` triggers on the table, created together under one brief
//!    `LOCK TABLES … WRITE`.
//! 2. Copy, in key order, in batches of one transaction each. Each batch is read (keys and
//!    job columns, no locks) and decided with our detector and codecs on a blocking thread
//!    while the batch before it is written; then one `INSERT INTO new SELECT … FROM t
//!    LEFT JOIN staged` writes it. A value whose decision the server's own `CONVERT` from
//!    the column's main legacy charset reproduces byte for byte (proven against this server
//!    at job start, [`super::servercodec`]) is converted by the server, as `ALTER TABLE`
//!    would; only the others (a KOI8-R row in a cp1251 column, UTF-8 already, ISO-8859-5,
//!    TCVN3, an undecidable value, which keeps its reversible latin1 reading and is
//!    quarantined) are staged in a session temporary table. A row the application changed
//!    after it was read is in the change log and is replayed after its batch; a row whose
//!    log entry was already replayed since is read again, locked, and decided afresh. The
//!    checkpoint advances in the batch's transaction.
//! 3. Check: every row of the table is compared with the shadow (other columns equal, job
//!    columns the server's conversion or a lossless reading of the stored bytes: a label's
//!    round trip gives them back); the server compares, and only rows that differ from the
//!    column's default conversion travel to be judged here. It trails the copy one batch
//!    behind on a connection of its own and finishes after it; a difference (a write since
//!    the copy, or a miss) is queued in the change log for replay.
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
//! Locks: the copy's `INSERT … SELECT` and replays take shared row locks on the rows they
//! read, for one batch (the check reads a consistent snapshot, without locks); the
//! triggers add one log insert to every application write; the cut-over blocks reads and
//! writes of the table from `LOCK TABLES` to the rename: the measured,
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
use super::recode::{self, Action, Source};
use super::servercodec::{self, ServerCodec};
use crate::db::connect::ConnectionConfig;
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::detect::{ColumnPrior, Label};
use crate::inventory::model::Table;
use anyhow::{anyhow, bail, Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::{Acquire, Executor, MySqlConnection, Row};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
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

/// A job column as the copy writes it.
#[derive(Debug, Clone)]
pub struct JobColumn {
    /// Column name.
    pub name: String,
    /// Whether its target is binary (staged bytes go in as they are, else as UTF-8 text).
    pub binary: bool,
    /// The server's charset whose conversion of the stored bytes is what the copy writes
    /// for every value not staged (see [`super::servercodec`]); `None`: the server's
    /// conversion from the declared charset.
    pub server: Option<ServerCodec>,
}

impl JobColumn {
    /// What the server writes for this column of row `row` when nothing is staged for it.
    fn default_expr(&self, row: &str) -> String {
        let own = format!("{row}.{}", quote::ident(&self.name));
        match &self.server {
            Some(sc) => sc.expr(&own),
            None => own,
        }
    }
}

/// Staging flag: take the staged value.
const STAGED_VALUE: i8 = 1;
/// Staging flag: take the server's conversion from the declared charset (the latin1 reading).
const STAGED_DECLARED: i8 = 2;

/// `INSERT INTO shadow SELECT … FROM t [LEFT JOIN staged]`: the server copies every column;
/// a job column takes its [`JobColumn::default_expr`] unless the staging table (joined on
/// `staged_key`) holds a recoded value or asks for the declared conversion.
pub fn replace_select(
    schema: &str,
    table: &str,
    shadow: &str,
    cols: &[String],
    job: &[JobColumn],
    staged_key: Option<&[KeyColumn]>,
    cond: &str,
) -> String {
    let src = SRC;
    let list: Vec<String> = cols.iter().map(|c| quote::ident(c)).collect();
    let select: Vec<String> = cols
        .iter()
        .map(|c| {
            let own = format!("{src}.{}", quote::ident(c));
            let Some(j) = job.iter().position(|jc| &jc.name == c) else {
                return own;
            };
            let default = job[j].default_expr(src);
            if staged_key.is_none() {
                return default;
            }
            let v = format!("x.{}", stage_col('v', j));
            let value = if job[j].binary {
                v
            } else {
                format!("CONVERT({v} USING utf8mb4)")
            };
            format!(
                "CASE x.{} WHEN {STAGED_VALUE} THEN {value} WHEN {STAGED_DECLARED} THEN {own} ELSE {default} END",
                stage_col('s', j)
            )
        })
        .collect();
    let join = match staged_key {
        Some(key) => {
            let on: Vec<String> = key
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
    /// Job columns, in the plan's order.
    job_columns: Vec<JobColumn>,
    /// Key columns' definitions, for the staging table.
    key_types: Vec<String>,
    /// Each job column's charset in the shadow (`None`: binary), for the check pass.
    target_charsets: Vec<Option<String>>,
    /// Decides values (shared with the read-ahead's blocking thread).
    decider: Arc<Decider>,
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
    let trailing = if state.phase == PHASE_COPYING && state.last_key.is_none() {
        let mut conn = cfg.connect_one().await?;
        sqlx::query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut conn)
            .await?;
        Some(Trailing {
            conn,
            done_upto: None,
            pending: None,
            differed: 0,
        })
    } else {
        None
    };
    let mut pipe = Pipeline {
        reader: cfg.connect_one().await?,
        ahead: None,
        replayed: HashSet::new(),
        trailing,
    };
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
                copy_batch(conn, &mut pipe, &ctx, job, size, &mut state).await?;
                if state.phase != PHASE_COPYING {
                    differed += pipe.trailing.take().map_or(0, |t| t.differed);
                }
                pipe.replayed.clear();
                replay_some(conn, &ctx, job, &mut state, 1, &mut pipe.replayed).await?;
            }
            PHASE_CHECKING => {
                differed += check_batch(conn, &ctx, job, size, &mut state).await?;
                replay_some(conn, &ctx, job, &mut state, 1, &mut HashSet::new()).await?;
                if state.phase != PHASE_CHECKING {
                    println!(
                        "check: {}: every row compared with its copy; {differed} differed (changed since copied) and were queued for replay",
                        plan.table
                    );
                }
            }
            _ => {
                replay_some(conn, &ctx, job, &mut state, 20, &mut HashSet::new()).await?;
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
    let priors = inplace::parse_priors(&state.priors);
    let mut probed: HashMap<&'static str, Option<ServerCodec>> = HashMap::new();
    let mut job_columns = Vec::new();
    for (c, cs) in plan.columns.iter().zip(&target_charsets) {
        let label = match &c.source {
            Source::Fixed(l) => Some(*l),
            Source::Auto => priors.get(&c.name).and_then(|p| {
                p.ranked()
                    .into_iter()
                    .find(|l| servercodec::charset_of(*l).is_some())
            }),
        };
        let server = match label.filter(|_| cs.is_some()) {
            Some(l) => {
                let charset = servercodec::charset_of(l).unwrap_or_default();
                if !probed.contains_key(charset) {
                    probed.insert(charset, servercodec::probe(conn, l).await?);
                }
                probed[charset].clone().filter(|sc| sc.label == l)
            }
            None => None,
        };
        job_columns.push(JobColumn {
            name: c.name.clone(),
            binary: cs.is_none(),
            server,
        });
    }
    let decider = Arc::new(Decider {
        columns: plan
            .columns
            .iter()
            .zip(&job_columns)
            .map(|(c, jc)| {
                (
                    c.source.clone(),
                    priors.get(&c.name).cloned(),
                    jc.server.clone(),
                )
            })
            .collect(),
        threshold: plan.threshold,
        seen: Mutex::new(vec![HashMap::new(); plan.columns.len()]),
    });
    Ok(Ctx {
        plan,
        job_columns,
        all_columns: cols.into_iter().map(|c| c.0).collect(),
        key_types,
        target_charsets,
        decider,
        names,
    })
}

/// A fresh start: refusals, shadow, log, triggers, priors, first checkpoint.
async fn start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    _table: &Table,
    n: &Names,
) -> Result<State> {
    let schema = plan.schema.as_str();
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

fn read_key(row: &MySqlRow, n: usize) -> Result<Key> {
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

/// How the copy writes one job value.
#[derive(Clone, Debug, PartialEq)]
enum Stage {
    /// The column's default: the server's conversion ([`JobColumn::default_expr`]), which
    /// gives exactly our decision.
    Server,
    /// These bytes, staged.
    Value(Vec<u8>),
    /// The server's conversion from the declared charset (the latin1 reading: kept, reversible).
    Declared,
}

/// What one stored value becomes in the shadow.
#[derive(Clone)]
struct Recoded {
    /// How it is written.
    stage: Stage,
    /// Whether the value was recoded (not just kept).
    recoded: bool,
    /// Why and the runner-up, when undecidable (it is quarantined).
    undecidable: Option<(String, Option<String>)>,
}

/// Decides job values: owned, so the read-ahead can run it on a blocking thread while the
/// async side waits on the server.
struct Decider {
    /// Per job column: its source, its prior (fixed at job start), its server codec.
    columns: Vec<(Source, Option<ColumnPrior>, Option<ServerCodec>)>,
    threshold: f32,
    /// Per job column, decisions on short values already seen (see [`Decider::decide_all`]).
    seen: Mutex<Vec<HashMap<Vec<u8>, Recoded>>>,
}

/// Values up to this long are remembered: names, cities, statuses repeat across rows, and a
/// decision depends on nothing but the bytes and the column (its prior is fixed at job start).
const REMEMBER_BYTES: usize = 96;
/// Remembered decisions per column before the memory starts afresh.
const REMEMBER_VALUES: usize = 50_000;

impl Decider {
    /// Decides every value of `rows` (per row, per job column; `None`: NULL), remembering
    /// decisions on short values so a repeated value is decided once.
    fn decide_all<K>(&self, rows: Vec<(K, Stored)>) -> Vec<(K, Decisions)> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        rows.into_iter()
            .map(|(key, cells)| {
                let decided = cells
                    .into_iter()
                    .enumerate()
                    .map(|(ci, v)| {
                        v.map(|v| {
                            if v.is_ascii() || v.len() > REMEMBER_BYTES {
                                let r = self.decide(ci, &v);
                                return (v, r);
                            }
                            if let Some(r) = seen[ci].get(&v) {
                                return (v, r.clone());
                            }
                            let r = self.decide(ci, &v);
                            if seen[ci].len() >= REMEMBER_VALUES {
                                seen[ci].clear();
                            }
                            seen[ci].insert(v.clone(), r.clone());
                            (v, r)
                        })
                    })
                    .collect();
                (key, decided)
            })
            .collect()
    }

    /// Decides what one stored value of job column `ci` becomes in the shadow.
    fn decide(&self, ci: usize, stored: &[u8]) -> Recoded {
        let (source, prior, server) = &self.columns[ci];
        let r = |stage, recoded, undecidable| Recoded {
            stage,
            recoded,
            undecidable,
        };
        // The server's conversion serves a value only where it is ours, byte for byte.
        let by_server = |label: Option<Label>| {
            server
                .as_ref()
                .is_some_and(|sc| label.is_none_or(|l| l == sc.label) && sc.reproduces(stored))
        };
        // Without a server codec the default already is the declared conversion.
        let declared = if server.is_some() {
            Stage::Declared
        } else {
            Stage::Server
        };
        match recode::decide(source, prior.as_ref(), self.threshold, stored) {
            Action::Rewrite { label, .. } if by_server(Some(label)) => r(Stage::Server, true, None),
            Action::Rewrite { new, .. } => r(Stage::Value(new), true, None),
            Action::Keep if stored.is_ascii() && by_server(None) => r(Stage::Server, false, None),
            // UTF-8 already (written through a latin1 connection): its text, not its latin1 reading.
            Action::Keep if !stored.is_ascii() && std::str::from_utf8(stored).is_ok() => {
                r(Stage::Value(stored.to_vec()), false, None)
            }
            Action::Keep => r(declared, false, None),
            Action::Quarantine { reason, runner_up } => {
                r(declared, false, Some((reason, runner_up)))
            }
        }
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
    let decided = gather(ctx, decide_rows(ctx, rows)?);
    let changed = decided.changed;
    let quarantined = write_rows(conn, ctx, job, decided, cond, binds).await?;
    Ok((changed, quarantined))
}

/// Per job column of one row: the stored bytes and what they become (`None`: NULL).
type Decisions = Vec<Option<(Vec<u8>, Recoded)>>;

/// A row's key, one byte string per key column.
type Key = Vec<Vec<u8>>;

/// A row's stored job values (`None`: NULL).
type Stored = Vec<Option<Vec<u8>>>;

/// A row's job values as staged: the value (if any) and the staging flag.
type StagedCells = Vec<(Option<Vec<u8>>, i8)>;

/// Rows read and decided ahead of their batch, in key order, and how many were asked for
/// (fewer: the table ends there).
struct Ahead {
    rows: Vec<(Key, Decisions)>,
    asked: usize,
}

/// A batch's decisions: what to stage per key (value and flag per job column), how many
/// values were recoded, what to quarantine.
struct Decided {
    staged: Vec<(Key, StagedCells)>,
    changed: u64,
    quarantine: Vec<Quarantined>,
}

/// Each row's key and stored job values, of rows read as `key…, job columns…`.
fn stored_rows(ctx: &Ctx<'_>, rows: &[MySqlRow]) -> Result<Vec<(Key, Stored)>> {
    let nk = ctx.plan.key.len();
    let nc = ctx.plan.columns.len();
    rows.iter()
        .map(|row| {
            let cells = (nk..nk + nc)
                .map(|i| row.try_get::<Option<Vec<u8>>, _>(i))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((read_key(row, nk)?, cells))
        })
        .collect()
}

/// Decides every job value of `rows` (read as `key…, job columns…`).
fn decide_rows(ctx: &Ctx<'_>, rows: &[MySqlRow]) -> Result<Vec<(Key, Decisions)>> {
    Ok(ctx.decider.decide_all(stored_rows(ctx, rows)?))
}

/// Turns decided rows into what to stage and quarantine: rows the server copies alone
/// (every value its default) are not staged at all.
fn gather(ctx: &Ctx<'_>, rows: Vec<(Key, Decisions)>) -> Decided {
    let mut d = Decided {
        staged: Vec::new(),
        changed: 0,
        quarantine: Vec::new(),
    };
    for (key, cells) in rows {
        let mut values = Vec::with_capacity(cells.len());
        for (ci, cell) in cells.into_iter().enumerate() {
            let Some((stored, r)) = cell else {
                values.push((None, 0));
                continue;
            };
            d.changed += r.recoded as u64;
            if let Some((reason, runner_up)) = r.undecidable {
                d.quarantine.push(Quarantined {
                    col: ctx.plan.columns[ci].name.clone(),
                    key: keycodec::pack(&key),
                    value: stored,
                    reason,
                    runner_up,
                });
            }
            values.push(match r.stage {
                Stage::Server => (None, 0),
                Stage::Value(v) => (Some(v), STAGED_VALUE),
                Stage::Declared => (None, STAGED_DECLARED),
            });
        }
        if values.iter().any(|(_, flag)| *flag != 0) {
            d.staged.push((key, values));
        }
    }
    d
}

/// Reads the `size` rows after `after` without locks and decides their values on a
/// blocking thread, so the next batch finds its decisions made (this runs while the
/// current batch is written).
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
    let stored = stored_rows(ctx, &rows)?;
    drop(rows);
    let decider = Arc::clone(&ctx.decider);
    let rows = tokio::task::spawn_blocking(move || decider.decide_all(stored))
        .await
        .context("deciding the next batch ahead")?;
    Ok(Ahead { rows, asked: size })
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
            for (v, flag) in values {
                q = q.bind(v.clone()).bind(*flag);
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
        &ctx.job_columns,
        (!staged.is_empty()).then_some(b.key.as_slice()),
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

/// The next batch after `last`, decided. Read ahead (`ahead`), its rows are not read again:
/// a row the application changed since then is in the change log, and its replay comes
/// after this batch, so whatever the copy writes for it now is overwritten; only the rows
/// whose log entries were already replayed since the read-ahead (`replayed`, packed keys)
/// are read again here, locked, and decided afresh. Without `ahead`, the batch is read
/// with shared row locks and decided here.
async fn locked_batch(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    last: Option<&[Vec<u8>]>,
    size: usize,
    ahead: Option<Ahead>,
    replayed: &HashSet<Vec<u8>>,
) -> Result<Locked> {
    let b = ctx.plan;
    let nk = b.key.len();
    let Some(early) = ahead else {
        let rows = inplace::read_batch(conn, b, &ctx.job_names(), last, size, true).await?;
        return Ok(Locked {
            count: rows.len(),
            end: rows.len() < size,
            upper: rows.last().map(|r| read_key(r, nk)).transpose()?,
            rows: decide_rows(ctx, &rows)?,
        });
    };
    let count = early.rows.len();
    let end = count < early.asked;
    let upper = early.rows.last().map(|(k, _)| k.clone());
    let (mut out, stale): (Vec<_>, Vec<_>) = if replayed.is_empty() {
        (early.rows, Vec::new())
    } else {
        early
            .rows
            .into_iter()
            .partition(|(k, _)| !replayed.contains(&keycodec::pack(k)))
    };
    for chunk in stale.chunks(REPLAY_CHUNK) {
        let binds: Vec<Vec<u8>> = chunk.iter().flat_map(|(k, _)| k.iter().cloned()).collect();
        let rows = read_locked(conn, ctx, &any_of(&b.key, chunk.len()), &binds)
            .await
            .context("re-reading rows replayed since they were read ahead")?;
        out.extend(decide_rows(ctx, &rows)?);
    }
    Ok(Locked {
        count,
        end,
        upper,
        rows: out,
    })
}

/// The rows of the table matching `cond` (its `?`s bound to `binds`), as `key…, job
/// columns…` raw bytes, with shared row locks until the transaction ends.
async fn read_locked(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    cond: &str,
    binds: &[Vec<u8>],
) -> Result<Vec<MySqlRow>> {
    let b = ctx.plan;
    let mut cols: Vec<String> = b.key.iter().map(|k| keyset::raw(&k.name)).collect();
    cols.extend(b.columns.iter().map(|c| keyset::raw(&c.name)));
    let sql = format!(
        "SELECT {} FROM {} WHERE {cond} LOCK IN SHARE MODE",
        cols.join(", "),
        ctx.t(&b.table)
    );
    Ok(bind_all(sqlx::query(&sql), binds)
        .fetch_all(&mut *conn)
        .await?)
}

/// A locked batch: how many rows, whether the table ends with them, the last key in key
/// order, the decided rows.
struct Locked {
    count: usize,
    end: bool,
    upper: Option<Key>,
    rows: Vec<(Key, Decisions)>,
}

/// What the copy carries from one batch to the next, beside its checkpoint.
struct Pipeline {
    /// Reads and decides the batch after the one being written.
    reader: MySqlConnection,
    /// That batch, once read.
    ahead: Option<Ahead>,
    /// Packed keys replayed since it was read (see [`locked_batch`]).
    replayed: HashSet<Vec<u8>>,
    /// The check pass running one batch behind, when this process began the copy.
    trailing: Option<Trailing>,
}

/// Copies the next batch in key order, in one transaction with its checkpoint; meanwhile the
/// batch after it is read and decided ahead, and the one before it is checked.
async fn copy_batch(
    conn: &mut MySqlConnection,
    pipe: &mut Pipeline,
    ctx: &Ctx<'_>,
    job: &str,
    size: usize,
    state: &mut State,
) -> Result<()> {
    let Pipeline {
        reader,
        ahead,
        replayed,
        trailing,
    } = pipe;
    let b = ctx.plan;
    let mut tx = conn.begin().await?;
    let last = state.last_key.as_deref().and_then(keycodec::unpack);
    let Locked {
        count,
        end,
        upper,
        rows,
    } = locked_batch(&mut tx, ctx, last.as_deref(), size, ahead.take(), replayed).await?;
    let mut next = state.clone();
    // The last batch leaves the rest of the check to the check pass, from where it got to.
    let check_from = match &trailing {
        Some(t) if end => t.done_upto.as_deref().map(keycodec::pack),
        _ => None,
    };
    let check = async {
        match trailing.as_mut() {
            Some(t) if !end => t.check_pending(ctx).await,
            _ => Ok(()),
        }
    };
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
            let decided = gather(ctx, rows);
            next.rows_changed += decided.changed;
            next.rows_quarantined += write_rows(&mut tx, ctx, job, decided, &cond, &binds).await?;
            next.last_key = Some(keycodec::pack(upper));
            next.rows_read += count as u64;
        }
        if end {
            next.phase = PHASE_CHECKING.into();
            next.last_key = check_from;
        }
        checkpoint::save(&mut tx, &b.schema, job, &b.table, &next).await?;
        tx.commit().await.context("committing a copy batch")?;
        anyhow::Ok(())
    };
    let read_next = async {
        match &upper {
            Some(upper) if !end => read_ahead(reader, ctx, upper, size).await.map(Some),
            _ => Ok(None),
        }
    };
    let (written, read, checked) = futures_util::future::join3(write, read_next, check).await;
    written?;
    checked?;
    if let (Some(t), Some(upper)) = (trailing.as_mut(), &upper) {
        if !end {
            t.pending = Some((last.clone(), upper.clone()));
        }
    }
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
    upper: Option<Key>,
    differ: Vec<Vec<u8>>,
}

/// Compares up to `size` rows of `src` after `last` with the same key range of `dst`: every
/// other column equal, every job column the server's own conversion or a lossless reading of
/// the source bytes (a label's round trip gives them back exactly); the last batch (fewer
/// rows) also covers everything after in `dst`. The server compares: only rows that are not
/// the column's default conversion ([`JobColumn`]) travel, and are judged here. No locks:
/// within the caller's transaction both tables are one consistent snapshot, and anything
/// written after it is in the change log anyway.
async fn compare_batch(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    (src, dst): (&str, &str),
    last: Option<&[Vec<u8>]>,
    size: usize,
) -> Result<Compared> {
    let b = ctx.plan;
    let nk = b.key.len();
    let (_, after_binds) = keyset::after(&b.key);
    // The batch's upper bound: the key `size` rows on (none: this is the last batch).
    let (sql, _) =
        keyset::select_key_at_offset(&b.schema, src, &b.key, last.is_some(), size as u64 - 1);
    let mut q = sqlx::query(&sql);
    if let Some(last) = last {
        q = bind_key(q, last, &after_binds);
    }
    let upper = q
        .fetch_optional(&mut *conn)
        .await
        .with_context(|| format!("finding the next batch of {src} to compare"))?
        .map(|r| read_key(&r, nk))
        .transpose()?;
    let mut c = compare_range(conn, ctx, (src, dst), last, upper.as_deref()).await?;
    c.upper = upper;
    Ok(c)
}

/// Compares the rows of `src` with keys after `last` up to `upper` (unbounded where `None`)
/// with the same range of `dst`, as [`compare_batch`] describes.
async fn compare_range(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    (src, dst): (&str, &str),
    last: Option<&[Vec<u8>]>,
    upper: Option<&[Vec<u8>]>,
) -> Result<Compared> {
    let b = ctx.plan;
    let nk = b.key.len();
    let nc = b.columns.len();
    let (after, after_binds) = keyset::after(&b.key);
    let (to_cond, to_binds) = at_most(&b.key);
    let mut range = Vec::new();
    let mut binds: Vec<Vec<u8>> = Vec::new();
    if let Some(last) = last {
        range.push(after.clone());
        binds.extend(after_binds.iter().map(|&i| last[i].clone()));
    }
    if let Some(upper) = upper {
        range.push(to_cond);
        binds.extend(to_binds.iter().map(|&i| upper[i].clone()));
    }
    let range = if range.is_empty() {
        "1 = 1".to_string()
    } else {
        range.join(" AND ")
    };
    let rows = count_in(conn, ctx, src, &range, &binds).await?;
    let on: Vec<String> = b
        .key
        .iter()
        .map(|k| format!("a.{0} = s.{0}", quote::ident(&k.name)))
        .collect();
    let bin = |row: &str, c: &str| format!("CAST({row}.{} AS BINARY)", quote::ident(c));
    let mut differs: Vec<String> = ctx
        .all_columns
        .iter()
        .filter(|c| {
            !b.key.iter().any(|k| &k.name == *c) && !ctx.job_columns.iter().any(|j| &j.name == *c)
        })
        .map(|c| format!("NOT ({} <=> {})", bin("a", c), bin("s", c)))
        .collect();
    let others_same = if differs.is_empty() {
        "1".to_string()
    } else {
        format!("NOT ({})", differs.join(" OR "))
    };
    // What the server's own conversion from the declared charset gives.
    let declared: Vec<String> = ctx
        .job_columns
        .iter()
        .zip(&ctx.target_charsets)
        .map(|(jc, cs)| match cs {
            Some(cs) => format!(
                "CAST(CONVERT(a.{} USING {}) AS BINARY)",
                quote::ident(&jc.name),
                quote::ident(cs)
            ),
            None => bin("a", &jc.name),
        })
        .collect();
    for ((jc, cs), declared) in ctx
        .job_columns
        .iter()
        .zip(&ctx.target_charsets)
        .zip(&declared)
    {
        let expected = match (cs, &jc.server) {
            (Some(cs), Some(_)) => format!(
                "CAST(CONVERT({} USING {}) AS BINARY)",
                jc.default_expr("a"),
                quote::ident(cs)
            ),
            _ => declared.clone(),
        };
        differs.push(format!("NOT ({expected} <=> {})", bin("s", &jc.name)));
    }
    let first_key = quote::ident(&b.key[0].name);
    let mut cols: Vec<String> = b.key.iter().map(|k| bin("a", &k.name)).collect();
    cols.extend(ctx.job_columns.iter().map(|jc| bin("a", &jc.name)));
    cols.extend(ctx.job_columns.iter().map(|jc| bin("s", &jc.name)));
    cols.extend(declared);
    cols.push(format!("s.{first_key} IS NULL"));
    cols.push(others_same);
    let sql = format!(
        "SELECT {} FROM (SELECT * FROM {} WHERE {range}) AS a LEFT JOIN {} AS s ON {} \
         WHERE s.{first_key} IS NULL OR {}",
        cols.join(", "),
        ctx.t(src),
        ctx.t(dst),
        on.join(" AND "),
        differs.join(" OR ")
    );
    let suspects = bind_all(sqlx::query(&sql), &binds)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("comparing a batch of {src} with {dst}"))?;
    let cell = |r: &MySqlRow, i: usize| r.try_get::<Option<Vec<u8>>, _>(i);
    let mut differ = Vec::new();
    let mut missing = 0i64;
    for r in &suspects {
        let gone: bool = r.try_get(nk + 3 * nc)?;
        missing += gone as i64;
        let others: bool = r.try_get(nk + 3 * nc + 1)?;
        let mut same = !gone && others;
        for ci in 0..nc {
            if !same {
                break;
            }
            same = match (cell(r, nk + ci)?, cell(r, nk + nc + ci)?) {
                (None, None) => true,
                (Some(stored), Some(got)) => {
                    cell(r, nk + 2 * nc + ci)?.as_deref() == Some(got.as_slice())
                        || std::str::from_utf8(&got)
                            .is_ok_and(|t| recode::is_lossless_reading(&stored, t))
                }
                _ => false,
            };
        }
        if !same {
            differ.push(keycodec::pack(&read_key(r, nk)?));
        }
    }
    let from_src = differ.len();
    // Rows only the copy has: looked for only when the counts say there are some.
    if count_in(conn, ctx, dst, &range, &binds).await? != rows - missing {
        let keys: Vec<String> = b.key.iter().map(|k| bin("s", &k.name)).collect();
        let sql = format!(
            "SELECT {} FROM (SELECT * FROM {} WHERE {range}) AS s WHERE NOT EXISTS \
             (SELECT 1 FROM {} AS a WHERE {})",
            keys.join(", "),
            ctx.t(dst),
            ctx.t(src),
            on.join(" AND ")
        );
        for r in bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut *conn)
            .await
            .with_context(|| format!("looking for rows only {dst} has"))?
        {
            differ.push(keycodec::pack(&read_key(&r, nk)?));
        }
    }
    Ok(Compared {
        rows: rows as usize,
        same: rows as usize - from_src,
        upper: None,
        differ,
    })
}

/// How many rows of `table` match `range` (its `?`s bound to `binds`).
async fn count_in(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    table: &str,
    range: &str,
    binds: &[Vec<u8>],
) -> Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM {} WHERE {range}", ctx.t(table));
    Ok(bind_all(sqlx::query(&sql), binds)
        .fetch_one(&mut *conn)
        .await
        .with_context(|| format!("counting a batch of {table} to compare"))?
        .try_get(0)?)
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
    )
    .await?;
    queue_for_replay(&mut tx, ctx, &c.differ).await?;
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

/// Queues `keys` (packed) in the change log, for replay.
async fn queue_for_replay(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    keys: &[Vec<u8>],
) -> Result<()> {
    for chunk in keys.chunks(500) {
        let sql = format!(
            "INSERT INTO {} (key_bytes) VALUES {}",
            ctx.t(&ctx.names.log),
            vec!["(?)"; chunk.len()].join(", ")
        );
        let mut q = sqlx::query(&sql);
        for k in chunk {
            q = q.bind(k.clone());
        }
        q.execute(&mut *conn)
            .await
            .context("queueing differing rows for replay")?;
    }
    Ok(())
}

/// The check pass run beside the copy, one batch behind it: while batch N is copied, the
/// rows of batch N-1 are compared on a connection of their own, so the server's second core
/// does the comparing instead of a pass of its own afterwards. Its progress lives only in
/// this process: a resumed copy leaves the whole check for afterwards.
struct Trailing {
    conn: MySqlConnection,
    /// Every row up to this key (from the table's start) was compared.
    done_upto: Option<Key>,
    /// The last batch copied and not yet compared: (after this key, up to that key].
    pending: Option<(Option<Key>, Key)>,
    /// Rows that differed and were queued for replay.
    differed: u64,
}

impl Trailing {
    /// Compares the pending batch, if any, and queues its differences for replay.
    async fn check_pending(&mut self, ctx: &Ctx<'_>) -> Result<()> {
        let Some((lo, hi)) = self.pending.take() else {
            return Ok(());
        };
        let b = ctx.plan;
        let mut tx = self.conn.begin().await?;
        let c = compare_range(
            &mut tx,
            ctx,
            (&b.table, &ctx.names.shadow),
            lo.as_deref(),
            Some(&hi),
        )
        .await?;
        queue_for_replay(&mut tx, ctx, &c.differ).await?;
        tx.commit().await.context("committing a check batch")?;
        self.differed += c.differ.len() as u64;
        self.done_upto = Some(hi);
        Ok(())
    }
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
    let mut last: Option<Key> = None;
    loop {
        let c = compare_batch(conn, &ctx, (&old, &plan.table), last.as_deref(), 5000).await?;
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
    replayed: &mut HashSet<Vec<u8>>,
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
    let mut keys: Vec<Key> = Vec::new();
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
    let present = read_locked(conn, ctx, &cond, &binds)
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
    replayed.extend(seen);
    Ok(rows.len())
}

/// Replays at most `chunks` chunks of the log, each in its own transaction; returns log rows done.
async fn replay_some(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
    chunks: usize,
    replayed: &mut HashSet<Vec<u8>>,
) -> Result<usize> {
    let mut done = 0;
    for _ in 0..chunks {
        let mut next = state.clone();
        let mut tx = conn.begin().await?;
        let n = replay_chunk(&mut tx, ctx, job, &mut next, replayed).await?;
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
                replay_some(conn, ctx, job, state, 50, &mut HashSet::new()).await?;
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
        while replay_chunk(&mut locker, ctx, job, &mut next, &mut HashSet::new()).await? > 0 {
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
        let jc = |name: &str, binary, server| JobColumn {
            name: name.into(),
            binary,
            server,
        };
        assert_eq!(
            replace_select("s", "t", "n", &["id".into(), "b".into()], &[jc("b", false, None)], None, "`id` = ?"),
            "INSERT INTO `s`.`n` (`id`, `b`) SELECT _myrecode_src.`id`, _myrecode_src.`b` FROM `s`.`t` AS _myrecode_src WHERE `id` = ?"
        );
        let cp1251 = crate::codec::Encoding::Windows1251;
        let sc = ServerCodec::from_server(Label::Legacy(cp1251), &servercodec::ours(cp1251));
        let key = [k("id")];
        let jobs = [jc("b", false, sc.clone()), jc("c", true, None)];
        let cols = ["id".into(), "b".into(), "c".into()];
        let sql = replace_select("s", "t", "n", &cols, &jobs, Some(&key), "1");
        assert!(
            sql.contains(
                "CASE x.`_myrecode_s0` WHEN 1 THEN CONVERT(x.`_myrecode_v0` USING utf8mb4) \
             WHEN 2 THEN _myrecode_src.`b` \
             ELSE CONVERT(CAST(_myrecode_src.`b` AS BINARY) USING `cp1251`) END"
            ),
            "{sql}"
        );
        assert!(sql.contains(
            "CASE x.`_myrecode_s1` WHEN 1 THEN x.`_myrecode_v1` WHEN 2 THEN _myrecode_src.`c` ELSE _myrecode_src.`c` END"
        ));
        assert!(sql
            .contains("LEFT JOIN `_myrecode_stage` AS x ON _myrecode_src.`id` = x.`_myrecode_k0`"));
        // Nothing staged: no join, the server converts every value.
        let sql = replace_select("s", "t", "n", &cols, &jobs, None, "1");
        assert!(sql.contains("SELECT _myrecode_src.`id`, CONVERT(CAST(_myrecode_src.`b` AS BINARY) USING `cp1251`), _myrecode_src.`c` FROM"), "{sql}");
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

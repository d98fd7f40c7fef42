//! Several copy streams at once, where the server lets their `INSERT … SELECT`s run together.
//!
//! With `innodb_autoinc_lock_mode` 0 or 1 (MariaDB's default is 1), an `INSERT … SELECT`
//! into a table with an `AUTO_INCREMENT` column holds the table's AUTO-INC lock to the
//! statement's end, so two streams into the shadow run one after the other; with mode 2, or
//! without an `AUTO_INCREMENT` column, they run together. Decided at job start
//! ([`detect`], [`decide`]) and said in the rehearsal ([`rehearsal_lines`]).
//!
//! A step ([`copy_wide`]) copies `streams` consecutive key ranges at once (one, where the
//! server serialises them), each on a writer connection of its own in its own transaction
//! (the shadow's rows of the range deleted, then the range copied: doing a range twice gives
//! the same shadow). The table's one checkpoint advances past the step only once every range
//! committed, in a transaction of its own: a kill in between leaves ranges committed past the
//! checkpoint, and the rerun copies them again, once more replacing what they hold, so no row
//! is lost or doubled. The writers read committed: their `DELETE`s of neighbouring ranges of
//! the shadow lock no gaps, which would make each stream's inserts wait for the next one's,
//! and their reads of the table are consistent reads that lock no row the application
//! writes (a row changed since is logged by the triggers and replayed after the step, as a
//! row changed after the read-ahead is). Only InnoDB shadows are written so, and only where
//! the server may log
//! such writes (not under a statement-based binary log).

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::keycodec;
use crate::db::connect::ConnectionConfig;
use crate::engine::copy::phase::Phase;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::expect::Expected;
use crate::engine::copy::table::locked_read::{locked_batch, Ahead, Locked};
use crate::engine::copy::table::read_ahead::{
    make_ready, read_decided, spawn_read_ahead, split, Part,
};
use crate::engine::copy::table::read_sql::key_range;
use crate::engine::copy::table::ready::Ready;
use crate::engine::copy::table::stage::{clear_stage, create_stage};
use crate::engine::copy::table::trailing::hand_over;
use crate::engine::copy::table::trailing::Trailing;
use crate::engine::copy::table::write::{write_step, Written};
use crate::engine::read::Key;
use anyhow::{Context, Result};
use sqlx::{Acquire, Executor, MySqlConnection, Row};
use std::collections::HashSet;
use std::sync::Arc;

/// Streams where the server lets them run together.
pub const MAX_STREAMS: usize = 2;

/// What the server says about running several copy streams into a table's shadow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// `@@innodb_autoinc_lock_mode`.
    pub lock_mode: i64,
    /// The table's `AUTO_INCREMENT` column, if any.
    pub auto_increment: Option<String>,
    /// The table's storage engine (its shadow is created `LIKE` it).
    pub engine: String,
    /// Whether a session may read committed (the binary log is off or not statement-based).
    pub may_read_committed: bool,
}

/// How many streams copy the table, and why, in words for the rehearsal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Streams {
    /// Copy streams (1: one after the other).
    pub count: usize,
    /// Whether the copy writes on writer connections that read committed (InnoDB, a
    /// binary log that can log it): none of its reads of the table then locks a row the
    /// application writes. Otherwise the copy writes on the main connection, as one stream.
    pub read_committed: bool,
    /// Why that many.
    pub why: String,
}

/// What the server reports for `?` schema and `?` table (twice): lock mode, whether a session
/// may read committed, the engine, the `AUTO_INCREMENT` column.
pub const FACTS_SQL: &str = "SELECT @@innodb_autoinc_lock_mode, \
     (@@log_bin = 0 OR @@binlog_format <> 'STATEMENT'), \
     (SELECT CAST(ENGINE AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?), \
     (SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
      WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND EXTRA LIKE '%auto_increment%' LIMIT 1)";

/// The streams `f` allows. Pure.
pub fn decide(f: &Facts) -> Streams {
    let rc = f.may_read_committed && f.engine.eq_ignore_ascii_case("InnoDB");
    let one = |why: String| Streams {
        count: 1,
        read_committed: rc,
        why,
    };
    if !f.engine.eq_ignore_ascii_case("InnoDB") {
        return one(format!(
            "one copy stream ({}: a table lock serialises the shadow's writes)",
            f.engine
        ));
    }
    if !f.may_read_committed {
        return one(
            "one copy stream (the binary log is statement-based: parallel streams must read committed, which it cannot log)"
                .into(),
        );
    }
    match (&f.auto_increment, f.lock_mode) {
        (Some(col), mode) if mode < 2 => one(format!(
            "one copy stream (`{col}` is AUTO_INCREMENT and innodb_autoinc_lock_mode={mode}: \
             each INSERT … SELECT holds the AUTO-INC lock to its end; with mode 2, {MAX_STREAMS} streams)"
        )),
        (Some(_), mode) => Streams {
            count: MAX_STREAMS,
            read_committed: true,
            why: format!(
                "{MAX_STREAMS} copy streams (innodb_autoinc_lock_mode={mode}: inserts into the shadow run together)"
            ),
        },
        (None, _) => Streams {
            count: MAX_STREAMS,
            read_committed: true,
            why: format!("{MAX_STREAMS} copy streams (no AUTO_INCREMENT column)"),
        },
    }
}

/// Asks the server for the facts about `schema`.`table` and decides.
pub async fn detect(conn: &mut MySqlConnection, schema: &str, table: &str) -> Result<Streams> {
    let row = sqlx::query(FACTS_SQL)
        .bind(schema)
        .bind(table)
        .bind(schema)
        .bind(table)
        .fetch_one(&mut *conn)
        .await
        .context("asking the server whether copy streams may run together")?;
    let facts = Facts {
        lock_mode: row.try_get::<Option<i64>, _>(0)?.unwrap_or(1),
        may_read_committed: row.try_get::<Option<i64>, _>(1)?.unwrap_or(0) != 0,
        engine: row.try_get::<Option<String>, _>(2)?.unwrap_or_default(),
        auto_increment: row.try_get(3)?,
    };
    Ok(decide(&facts))
}

/// One line per copied table for the rehearsal: how many streams, and why.
pub async fn rehearsal_lines(
    conn: &mut MySqlConnection,
    tables: &[(&str, &str)],
) -> Result<String> {
    let mut out = String::new();
    for (schema, table) in tables {
        let s = detect(conn, schema, table).await?;
        out.push_str(&format!("  {table}: {}\n", s.why));
    }
    Ok(out)
}

/// Connects the writers of `count` streams, each reading committed with its own staging table.
pub(crate) async fn writers(
    cfg: &ConnectionConfig,
    ctx: &Ctx<'_>,
    count: usize,
) -> Result<Vec<MySqlConnection>> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let mut c = cfg.connect_one().await?;
        c.execute(crate::engine::copy::table::read_sql::READ_COMMITTED)
            .await?;
        create_stage(&mut c, ctx).await?;
        out.push(c);
    }
    Ok(out)
}

/// Copies one stream's range in its own transaction, by its write made `ready` ahead where
/// no row of it was read again since; with `sum` (a trailing check will compare it), what
/// the shadow should hold for its rows comes back too, when the decisions tell.
async fn write_part(
    w: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    ((lo, hi, ahead), ready): (Part, Option<Ready>),
    replayed: &HashSet<Vec<u8>>,
    sum: bool,
    go: Go,
) -> Result<Written> {
    let b = ctx.plan;
    let count = ahead.rows.len();
    let mut tx = w.begin().await?;
    let Locked {
        rows,
        expected,
        renewed,
        ..
    } = locked_batch(
        &mut tx,
        ctx,
        (lo.as_deref(), count),
        Some(ahead),
        replayed,
        sum,
    )
    .await?;
    let (cond, binds) = key_range(&b.key, lo.as_deref(), Some(&hi));
    let ready = Ready::made_or_gather(ready, renewed, ctx, &rows, (lo.as_deref(), &cond));
    // Freed elsewhere: a batch's keys and decisions, tens of thousands of small buffers made
    // on the reading and deciding threads, had cost milliseconds of this step's path.
    tokio::task::spawn_blocking(move || drop(rows));
    let written = write_step(
        &mut tx,
        ctx,
        job,
        (ready, &binds),
        (expected, sum),
        move || drop(go),
    )
    .await?;
    tx.commit()
        .await
        .context("committing a copy stream's range")?;
    // A step that staged nothing leaves the table empty: no `TRUNCATE` (which recreates it)
    // on the stream's path.
    if written.stage_used {
        clear_stage(w).await?;
    }
    Ok(written)
}

/// Lets a step's read-ahead and check begin (two permits) when dropped: once a stream's write
/// is down to its `INSERT … SELECT`, or has failed. Begun at the step's start, they had held up
/// the write's first statements on two vCPUs: its `BEGIN` and `DELETE` took 3-4 ms each where
/// they take 0.1-0.5 ms, every step.
struct Go(Arc<tokio::sync::Semaphore>);

impl Drop for Go {
    fn drop(&mut self) {
        self.0.add_permits(2);
    }
}

/// Waits for a [`Go`] of the step (each waiter takes one of its permits for good).
async fn gone(go: &tokio::sync::Semaphore) {
    if let Ok(p) = go.acquire().await {
        p.forget();
    }
}

/// What a wide step works with beside the main connection.
pub(crate) struct Wide<'p> {
    pub(crate) writers: &'p mut [MySqlConnection],
    pub(crate) reader: &'p mut Option<MySqlConnection>,
    pub(crate) ahead: &'p mut Option<Ahead>,
    pub(crate) replayed: &'p HashSet<Vec<u8>>,
    pub(crate) trailing: &'p mut Option<Trailing>,
}

/// Copies the next `writers.len() × size` rows in key order, a range per stream at once;
/// meanwhile the rows after them are read and decided ahead and the step before is checked.
/// The checkpoint advances once every range committed (see the module's note).
pub(crate) async fn copy_wide(
    conn: &mut MySqlConnection,
    w: Wide<'_>,
    ctx: &Ctx<'_>,
    job: &str,
    size: usize,
    state: &mut State,
) -> Result<()> {
    let b = ctx.plan;
    let k = w.writers.len();
    let last = state.last_key.as_deref().and_then(keycodec::unpack);
    // Whether batches are summed for a trailing check (the last too: [`hand_over`]).
    let summing = w.trailing.is_some();
    let mut ahead = match w.ahead.take() {
        Some(a) => a,
        None => read_decided(conn, ctx, last.as_deref(), (k * size, k), summing).await?,
    };
    let ready = std::mem::take(&mut ahead.ready);
    let count = ahead.rows.len();
    let end = count < ahead.asked;
    let upper = ahead.rows.last().map(|(key, _)| key.clone());
    let parts = split(last.clone(), ahead, k);
    let ready = ready_per_part(ready, parts.len());
    let check_from = match &*w.trailing {
        Some(t) if end => t.done_upto.as_deref().map(keycodec::pack),
        _ => None,
    };
    let replayed = w.replayed;
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let write = futures_util::future::join_all(
        w.writers
            .iter_mut()
            .zip(parts.into_iter().zip(ready))
            .map(|(c, part)| write_part(c, ctx, job, part, replayed, summing, Go(go.clone()))),
    );
    let check = async {
        match w.trailing.as_mut() {
            Some(t) => {
                // A last step with no rows has no write to wait for.
                if upper.is_some() {
                    gone(&go).await;
                }
                t.check_pending(ctx, replayed).await
            }
            None => Ok(()),
        }
    };
    let reader = match (&upper, w.reader.take()) {
        (Some(_), Some(reader)) if !end => Some(reader),
        (_, reader) => {
            *w.reader = reader;
            None
        }
    };
    let read_next = read_next(reader, ctx, upper.as_ref(), (k * size, k), summing, &go);
    let (written, read, checked) = futures_util::future::join3(write, read_next, check).await;
    let mut next = state.clone();
    let (staged, expected) = tally(written, &mut next)?;
    checked?;
    if let Some(upper) = &upper {
        next.last_key = Some(keycodec::pack(upper));
        next.rows_read += count as u64;
    }
    if end {
        next.phase = Phase::Checking.as_str().into();
        next.last_key = check_from;
    }
    let mut tx = conn.begin().await?;
    checkpoint::save(&mut tx, &b.schema, job, &b.table, &next).await?;
    tx.commit().await.context("committing a copy step")?;
    if let Some(t) = w.trailing.as_mut() {
        let step = ((last, upper, end), (staged, expected));
        hand_over(conn, ctx, job, t, step, &mut next).await?;
    }
    // A failed read-ahead costs only its head start: the next step reads for itself (on the
    // main connection, if the reader went with a task that failed).
    if let Some(Ok((reader, ahead))) = read {
        *w.reader = Some(reader);
        *w.ahead = ahead.ok();
    }
    *state = next;
    Ok(())
}

/// The writes made ahead, one per part: made for as many parts, or not at all (the first
/// step, a failed read-ahead).
fn ready_per_part(ready: Vec<Ready>, parts: usize) -> Vec<Option<Ready>> {
    if ready.len() == parts {
        ready.into_iter().map(Some).collect()
    } else {
        (0..parts).map(|_| None).collect()
    }
}

/// The rows after the step's last (`upper`) read on `reader`, once a stream's write is down
/// to its `INSERT … SELECT` ([`Go`]), decoded and decided on other threads; the next step's
/// writes made here, while this step's are on the server, rather than on its path between
/// one write and the next. `None` without a reader or after the table's last rows.
async fn read_next(
    reader: Option<MySqlConnection>,
    ctx: &Ctx<'_>,
    upper: Option<&Key>,
    (size, parts): (usize, usize),
    summing: bool,
    go: &tokio::sync::Semaphore,
) -> Option<Result<(MySqlConnection, Result<Ahead>), tokio::task::JoinError>> {
    let (Some(reader), Some(upper)) = (reader, upper) else {
        return None;
    };
    gone(go).await;
    let mut done = spawn_read_ahead(reader, ctx, upper, (size, parts), summing).await;
    if let Ok((_, Ok(ahead))) = done.as_mut() {
        ahead.ready = make_ready(ctx, ahead, upper, parts);
    }
    Some(done)
}

/// What the step's streams wrote, added up on the checkpoint `next`: the keys staged and,
/// when every stream summed, what the shadow should hold. The first stream's failure stands.
fn tally(written: Vec<Result<Written>>, next: &mut State) -> Result<(Vec<Key>, Option<Expected>)> {
    let mut staged = Vec::new();
    let mut expected = Some(Vec::new());
    for r in written {
        let w = r?;
        next.rows_changed += w.changed;
        next.rows_quarantined += w.quarantined;
        staged.extend(w.staged);
        expected = expected.zip(w.expected).map(|(mut all, part)| {
            all.extend(part);
            all
        });
    }
    Ok((staged, expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(lock_mode: i64, auto: Option<&str>, engine: &str, rc: bool) -> Facts {
        Facts {
            lock_mode,
            auto_increment: auto.map(String::from),
            engine: engine.into(),
            may_read_committed: rc,
        }
    }

    #[test]
    fn streams_run_together_only_where_the_server_lets_them() {
        let s = decide(&facts(1, Some("id"), "InnoDB", true));
        assert_eq!(s.count, 1);
        assert_eq!(
            s.why,
            "one copy stream (`id` is AUTO_INCREMENT and innodb_autoinc_lock_mode=1: each \
             INSERT … SELECT holds the AUTO-INC lock to its end; with mode 2, 2 streams)"
        );
        let s = decide(&facts(2, Some("id"), "InnoDB", true));
        assert_eq!(
            (s.count, s.why.as_str()),
            (
                MAX_STREAMS,
                "2 copy streams (innodb_autoinc_lock_mode=2: inserts into the shadow run together)"
            )
        );
        let s = decide(&facts(1, None, "innodb", true));
        assert_eq!(
            (s.count, s.why.as_str()),
            (MAX_STREAMS, "2 copy streams (no AUTO_INCREMENT column)")
        );
        assert!(decide(&facts(1, Some("id"), "InnoDB", true)).read_committed);
        for (engine, rc) in [("MyISAM", true), ("Aria", true), ("InnoDB", false)] {
            let s = decide(&facts(2, None, engine, rc));
            assert_eq!((s.count, s.read_committed), (1, false));
        }
    }
}

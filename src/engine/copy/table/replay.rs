//! Replay: the keys the triggers logged, re-read (locked) and copied again, in log order.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::keycodec;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::locked_read::read_locked;
use crate::engine::copy::table::locked_read::KEYS_PER_CHUNK;
use crate::engine::copy::table::read_sql::{any_of, count_sql, log_delete_sql, log_read_sql};
use crate::engine::copy::table::stage::clear_stage;
use crate::engine::copy::table::watermark::{self, Fate, Marks};
use crate::engine::copy::table::write::copy_rows;
use crate::engine::read::Key;
use anyhow::{anyhow, Context, Result};
use sqlx::{Acquire, MySqlConnection, Row};
use std::collections::HashSet;

/// Replays up to one chunk of the change log inside the caller's transaction. While the copy
/// runs (`marks`, where it stands), a key it has yet to read is only taken off the log, and
/// one it read ahead but has not copied is left there for the replay after the step that
/// copies it ([`watermark::fate`]). Adds to `replayed` the keys replayed and those held.
/// Returns log rows taken off.
pub(crate) async fn replay_chunk(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
    (marks, replayed): (Option<&Marks>, &mut HashSet<Vec<u8>>),
) -> Result<usize> {
    let b = ctx.plan;
    let log = ctx.names.log.as_str();
    let rows = sqlx::query(&log_read_sql(&b.schema, log, KEYS_PER_CHUNK))
        .fetch_all(&mut *conn)
        .await
        .context("reading the change log")?;
    if rows.is_empty() {
        return Ok(0);
    }
    let mut seen = HashSet::new();
    let mut held = HashSet::new();
    // Each key once: those to replay (and their packed form, for `replayed`), and how many the
    // copy has yet to read.
    let (mut keys, mut packed_keys): (Vec<Key>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    let mut unread = 0u64;
    // Exactly the ids read and not held: a lower id committed later than these is not ours
    // to delete yet.
    let mut ids: Vec<u64> = Vec::with_capacity(rows.len());
    for r in &rows {
        let packed: Vec<u8> = r.get(1);
        if seen.insert(packed.clone()) {
            let key = keycodec::unpack(&packed)
                .ok_or_else(|| anyhow!("the change log {} holds a malformed key", ctx.names.log))?;
            match marks.map_or(Fate::Replay, |m| watermark::fate(&key, m)) {
                Fate::Replay => {
                    keys.push(key);
                    packed_keys.push(packed.clone());
                }
                Fate::Hold => {
                    held.insert(packed.clone());
                }
                Fate::Drop => unread += 1,
            }
        }
        if held.is_empty() || !held.contains(&packed) {
            ids.push(r.get(0));
        }
    }
    state.rows_conflicted += unread;
    if !keys.is_empty() {
        replay_keys(conn, ctx, job, state, &keys).await?;
    }
    if !ids.is_empty() {
        sqlx::query(&log_delete_sql(&b.schema, log, &ids))
            .execute(&mut *conn)
            .await
            .context("removing replayed rows from the change log")?;
    }
    checkpoint::save(conn, &b.schema, job, &b.table, state).await?;
    replayed.extend(packed_keys);
    // A held row changed after it was read ahead: its step reads it again and decides it
    // afresh, as a replayed one's does. Its stale decision would be written as its new bytes
    // stand, and a cp1251 row rewritten in UTF-8, or a KOI8-R one named in a cp1251 `CASE`
    // rewritten with « » ё, makes strict mode refuse the whole step (then read again entire).
    replayed.extend(held);
    Ok(ids.len())
}

/// Copies the rows of `keys` again (recoded afresh), reading them locked: every key leaves the
/// shadow, and those still in the table come back.
async fn replay_keys(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
    keys: &[Key],
) -> Result<()> {
    let b = ctx.plan;
    let cond = any_of(&b.key, keys.len());
    let binds: Vec<Vec<u8>> = keys.concat();
    let present = match read_locked(conn, ctx, &cond, &binds).await {
        Ok(rows) => rows,
        Err(e) => {
            let out_of_step = e
                .chain()
                .find_map(|c| c.downcast_ref::<sqlx::Error>())
                .and_then(|s| crate::engine::error::index_out_of_step(s, &b.schema, &b.table));
            return Err(match out_of_step {
                Some(stop) => anyhow::Error::new(stop),
                None => e.context("re-reading changed rows"),
            });
        }
    };
    let (_, q) = copy_rows(conn, ctx, job, &present, (&cond, keys.len()), &binds).await?;
    state.rows_quarantined += q;
    state.rows_conflicted += keys.len() as u64;
    Ok(())
}

/// Replays at most `chunks` chunks of the log, each in its own transaction; returns log rows done.
pub(crate) async fn replay_some(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
    chunks: usize,
    (marks, replayed): (Option<&Marks>, &mut HashSet<Vec<u8>>),
) -> Result<usize> {
    let mut done = 0;
    for _ in 0..chunks {
        let mut next = state.clone();
        let mut tx = conn.begin().await?;
        let n = replay_chunk(&mut tx, ctx, job, &mut next, (marks, &mut *replayed)).await?;
        tx.commit().await.context("committing a replay")?;
        if n > 0 {
            clear_stage(conn).await?;
        }
        *state = next;
        done += n;
        // A shorter chunk: the log is done, or the rest is held for the copy's next step.
        if n < KEYS_PER_CHUNK {
            break;
        }
    }
    Ok(done)
}

/// How many keys the copy's change log holds.
pub(crate) async fn log_len(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<i64> {
    let sql = count_sql(&ctx.plan.schema, &ctx.names.log);
    Ok(sqlx::query_scalar(&sql).fetch_one(conn).await?)
}

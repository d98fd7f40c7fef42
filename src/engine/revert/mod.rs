//! `myrecode revert`: after a cut-over, until `cleanup`, the job's swapped tables are put
//! back as they were, with every write the application made since the swap, in their legacy
//! bytes. From the cut-over on, each swapped table's back log holds the keys the application
//! writes (`copy/cutover/carried/back_log.rs`); `revert` brings each written row into the kept
//! original (`<t>_myrecode_old`), its text encoded back by the server ([`catch_up`]), until
//! the back logs are short, then swaps every table back at one instant ([`swap_back`]): the
//! recoded table is kept as `<t>_myrecode_new` until `cleanup`. The bridge, if the job has
//! one, switches back by itself for every new login (it acts only on tables that are
//! utf8mb4); the sessions it bridged since the swap, still open, are counted for the DBA.
//!
//! A value the legacy charset cannot hold (an emoji, a letter cp1251 lacks) is listed by job,
//! table, key and column with its text in `_myrecode_unreverted`, and counted in the output;
//! the kept original gets the server's `?` in its place, and the recoded table, kept, holds it
//! whole. Kill-safe: the chunks are idempotent, the swap back is behind sentries; run again.

pub mod catch_up;
pub mod check;
pub mod sql;
pub mod swap_back;

use crate::bookkeeping::checkpoint;
use crate::db::connect::ConnectionConfig;
use crate::engine::bridge;
use crate::engine::copy::cutover::leftover::settle_leftover_cutover;
use crate::engine::copy::cutover::swap_sql::AUTOCOMMIT_OFF;
use crate::engine::copy::Phase;
use crate::engine::job_lock;
use crate::job::model::Job;
use anyhow::{Context, Result};
use check::{Found, Reverting};
use sqlx::{Executor, MySqlConnection};
use std::time::Duration;

/// Back log entries left for the swap back's lock to drain (fewer: a shorter pause).
const SHORT_ENOUGH: u64 = 1000;

/// What `revert` did, or would do, per table.
#[derive(Debug, Default)]
pub struct Reverted {
    /// Tables swapped back now: name, keys brought back by this run, values listed (by any
    /// run of the revert) as unable to go back.
    pub swapped: Vec<(String, usize, usize)>,
    /// Tables that would be swapped back (without `--execute`), with the keys waiting.
    pub would: Vec<(String, u64)>,
    /// Tables reverted before.
    pub already: Vec<String>,
    /// Tables `revert` does not take, with why and the fix.
    pub refused: Vec<(String, String)>,
    /// How long the tables were locked for the swap back.
    pub pause: Option<Duration>,
    /// The bridge's users and how many of their sessions opened since the cut-over's swap
    /// (bridged: they talk the legacy charset to tables latin1 again) are still open.
    pub bridged: Option<(Vec<String>, i64)>,
}

/// Reverts the job's swapped tables (with `execute`; otherwise says what it would do).
/// Refuses the whole revert, before anything is written, if one of them cannot go back:
/// the job's tables are switched together, and so are they switched back.
pub async fn revert(
    cfg: &ConnectionConfig,
    job: &Job,
    job_id: &str,
    execute: bool,
) -> Result<Reverted> {
    let schema = job.schema.as_str();
    let cfg = cfg.with_database(Some(schema));
    let mut conn = cfg.connect_one().await?;
    checkpoint::refuse_foreign(&mut conn, schema).await?;
    let _held = if execute {
        let held = job_lock::hold(&cfg, schema, job_id).await?;
        // A swap back a killed revert left queued is waited out (or stopped) first.
        settle_leftover_cutover(&mut conn, schema).await?;
        Some(held)
    } else {
        None
    };
    let mut out = Reverted::default();
    let mut ready = Vec::new();
    for f in check::find(&mut conn, job, job_id).await? {
        match f {
            Found::Ready(r) => ready.push(*r),
            Found::Reverted(t) => out.already.push(t),
            Found::Refused(t, why) => out.refused.push((t, why)),
        }
    }
    if !out.refused.is_empty() || ready.is_empty() {
        return Ok(out);
    }
    if !execute {
        for r in &ready {
            out.would
                .push((r.table.clone(), back_len(&mut conn, schema, r).await?));
        }
        return Ok(out);
    }
    conn.execute(sql::unreverted_ddl(schema).as_str())
        .await
        .context("creating the list of values revert cannot put back")?;
    conn.execute(AUTOCOMMIT_OFF).await?;
    let mut counts = vec![0usize; ready.len()];
    for (r, keys) in ready.iter().zip(counts.iter_mut()) {
        while back_len(&mut conn, schema, r).await? > SHORT_ENOUGH {
            let c = catch_up::chunk(&mut conn, schema, job_id, r).await?;
            *keys += c.keys;
        }
        // At least one chunk before the lock, for kill tests to land in.
        let c = catch_up::chunk(&mut conn, schema, job_id, r).await?;
        *keys += c.keys;
        if let Some(hold) = crate::engine::test_hooks::revert_hold() {
            tokio::time::sleep(hold).await;
        }
    }
    let pause = swap_back::swap_back(&mut conn, &cfg, schema, job_id, &ready).await?;
    for (r, keys) in ready.iter().zip(counts) {
        let mut state = r.state.clone();
        state.phase = Phase::Reverted.as_str().into();
        checkpoint::save(&mut conn, schema, job_id, &r.table, &state).await?;
        conn.execute("COMMIT").await?;
        // Every value listed for the table, by this run or one killed before it.
        let listed: i64 = sqlx::query_scalar(&sql::count_unreverted_sql(schema))
            .bind(job_id)
            .bind(&r.table)
            .fetch_one(&mut conn)
            .await?;
        out.swapped
            .push((r.table.clone(), keys, listed.max(0) as usize));
    }
    out.pause = Some(pause);
    if let Some(r) = bridge::recorded(&mut conn, schema, job_id).await? {
        if !r.removed && r.swap_mark.is_some() {
            let (_, since) = bridge::sessions(&mut conn, schema, &r).await?;
            out.bridged = Some((r.users, since));
        }
    }
    Ok(out)
}

/// Entries waiting in `r`'s back log.
async fn back_len(conn: &mut MySqlConnection, schema: &str, r: &Reverting) -> Result<u64> {
    let n: i64 = sqlx::query_scalar(&sql::back_len_sql(schema, &r.names))
        .fetch_one(&mut *conn)
        .await?;
    Ok(n.max(0) as u64)
}

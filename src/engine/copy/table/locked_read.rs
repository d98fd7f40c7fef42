//! A batch's rows read with shared row locks and decided, or taken as they were read ahead
//! with only the rows replayed since read again: what a copy step writes.

use crate::bookkeeping::keycodec;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::expect::{self, Expected, Target};
use crate::engine::copy::table::read_sql::{any_of, read_locked_sql};
use crate::engine::copy::table::ready::Ready;
use crate::engine::copy::table::recoded::Decisions;
use crate::engine::copy::table::watermark;
use crate::engine::read::{self, bind_all, read_key, stored_rows, Key};
use anyhow::{Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::MySqlConnection;
use std::collections::HashSet;
/// Keys re-read per locked read; the replay takes as many log rows per transaction.
pub(crate) const KEYS_PER_CHUNK: usize = 500;

/// Decides every job value of `rows` (read as `key…, job columns…`).
pub(crate) fn decide_rows(ctx: &Ctx<'_>, rows: &[MySqlRow]) -> Result<Vec<(Key, Decisions)>> {
    let (nk, nc) = (ctx.plan.key.len(), ctx.plan.columns.len());
    Ok(ctx.decider.decide_all(stored_rows(nk, nc, rows)?))
}

/// The batch's rows as the shadow should hold them, when the table's targets and every
/// decision tell ([`expect`]); `None` leaves the batch's check to the server.
pub(crate) fn expected_of(ctx: &Ctx<'_>, rows: &[(Key, Decisions)]) -> Option<Expected> {
    expect::batch(rows, ctx.targets.as_deref()?)
}

/// The targets to sum a batch's expectation with, when a trailing check will compare it.
pub(crate) fn sum_targets(ctx: &Ctx<'_>, sum: bool) -> Option<Vec<Target>> {
    ctx.targets.clone().filter(|_| sum)
}

/// Rows read and decided ahead of their batch, in key order, how many were asked for
/// (fewer: the table ends there), and, when a trailing check will compare them, what the
/// shadow should hold (aligned with the rows; [`crate::engine::copy::table::decide::Decider::decide_ahead`]).
/// `ready`: where made ahead too, each copy stream's write of them
/// ([`crate::engine::copy::table::parallel`]), in stream order; empty otherwise.
pub(crate) struct Ahead {
    pub(crate) rows: Vec<(Key, Decisions)>,
    pub(crate) asked: usize,
    pub(crate) expected: Option<Expected>,
    pub(crate) ready: Vec<Ready>,
}

/// The next batch after `last`, decided. Read ahead (`ahead`), its rows are not read again:
/// a row the application changed since then is in the change log, and its replay comes
/// after this batch, so whatever the copy writes for it now is overwritten; only the rows
/// whose log entries were already replayed since the read-ahead (`replayed`, packed keys)
/// are read again here, locked, and decided afresh. Without `ahead`, the batch is read
/// with shared row locks and decided here. With `sum`, what the shadow should hold comes
/// too.
pub(crate) async fn locked_batch(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    (last, size): (Option<&[Vec<u8>]>, usize),
    ahead: Option<Ahead>,
    replayed: &HashSet<Vec<u8>>,
    sum: bool,
) -> Result<Locked> {
    let b = ctx.plan;
    let nk = b.key.len();
    let Some(early) = ahead else {
        let read = read::read_batch(conn, b, &ctx.job_names(), last, size, true).await?;
        let rows = decide_rows(ctx, &read)?;
        return Ok(Locked {
            count: read.len(),
            end: read.len() < size,
            upper: read.last().map(|r| read_key(r, nk)).transpose()?,
            expected: expected_of(ctx, &rows).filter(|_| sum),
            rows,
            renewed: false,
        });
    };
    let count = early.rows.len();
    let end = count < early.asked;
    let upper = early.rows.last().map(|(k, _)| k.clone());
    // The few replayed keys unpacked once, rather than every row's key packed (an allocation
    // per row on the path between one write and the next, under a writer). With integer keys,
    // only those past `last` can be among the rows read ahead: a step whose range no change
    // reached looks at none of its rows here.
    let replayed: HashSet<Key> = (replayed.iter())
        .filter_map(|p| keycodec::unpack(p))
        .filter(|k| match last {
            Some(last) if ctx.named => watermark::unread(k, last),
            _ => true,
        })
        .collect();
    let (mut out, stale): (Vec<_>, Vec<_>) = if replayed.is_empty() {
        (early.rows, Vec::new())
    } else {
        early
            .rows
            .into_iter()
            .partition(|(k, _)| !replayed.contains(k))
    };
    let mut renewed = Vec::new();
    for chunk in stale.chunks(KEYS_PER_CHUNK) {
        let binds: Vec<Vec<u8>> = chunk.iter().flat_map(|(k, _)| k.iter().cloned()).collect();
        let rows = read_locked(conn, ctx, &any_of(&b.key, chunk.len()), &binds)
            .await
            .context("re-reading rows replayed since they were read ahead")?;
        renewed.extend(decide_rows(ctx, &rows)?);
    }
    let stale: Vec<Key> = stale.into_iter().map(|(k, _)| k).collect();
    let expected = match (early.expected, sum_targets(ctx, sum)) {
        (Some(e), Some(t)) => expect::renew(e, &stale, &renewed, &t),
        _ => None,
    };
    let any_renewed = !stale.is_empty();
    out.extend(renewed);
    Ok(Locked {
        count,
        end,
        upper,
        rows: out,
        expected,
        renewed: any_renewed,
    })
}

/// The rows of the table matching `cond` (its `?`s bound to `binds`), as `key…, job
/// columns…` raw bytes, with shared row locks until the transaction ends.
pub(crate) async fn read_locked(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    cond: &str,
    binds: &[Vec<u8>],
) -> Result<Vec<MySqlRow>> {
    let b = ctx.plan;
    let sql = read_locked_sql(&b.schema, &b.table, &b.key, &ctx.job_names(), cond);
    Ok(bind_all(sqlx::query(&sql), binds)
        .fetch_all(&mut *conn)
        .await?)
}

/// A locked batch: how many rows, whether the table ends with them, the last key in key
/// order, the decided rows, (when asked) what the shadow should hold for them, and whether
/// any row read ahead was read and decided again (a write made ready ahead is then stale).
pub(crate) struct Locked {
    pub(crate) count: usize,
    pub(crate) end: bool,
    pub(crate) upper: Option<Key>,
    pub(crate) rows: Vec<(Key, Decisions)>,
    pub(crate) expected: Option<Expected>,
    pub(crate) renewed: bool,
}

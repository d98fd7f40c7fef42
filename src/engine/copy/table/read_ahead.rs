//! The rows after a step read and decided ahead, off the step's path, and split into the
//! ranges its streams write.

use crate::db::keyset;
use crate::engine::copy::table::checker::compare;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::decide::Decider;
use crate::engine::copy::table::expect::Target;
use crate::engine::copy::table::locked_read::{sum_targets, Ahead};
use crate::engine::copy::table::read_sql::key_range;
use crate::engine::copy::table::ready::Ready;
use crate::engine::copy::table::recoded::Decisions;
use crate::engine::read::{self, bind_all, fetch_stored, stored_row, Key, Stored};
use anyhow::{Context, Result};
use futures_util::TryStreamExt;
use sqlx::{MySqlConnection, Row};
use std::sync::Arc;
/// Reads the `size` rows after `after` (from the start where `None`) without locks and
/// decides them on blocking threads, `parts` at once.
pub(crate) async fn read_decided(
    reader: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    after: Option<&[Vec<u8>]>,
    (size, parts): (usize, usize),
    sum: bool,
) -> Result<Ahead> {
    let targets = sum_targets(ctx, sum);
    let (sql, binds, hashed) = ahead_sql(ctx, after, size, targets.is_some());
    let b = ctx.plan;
    let read = fetch_ahead(
        bind_all(sqlx::query(&sql), &binds),
        reader,
        (b.key.len(), b.columns.len(), hashed),
    )
    .await
    .context("reading the next rows to copy")?;
    crate::db::packet::no_value_cut(reader, &b.table).await?;
    decide_parts(Arc::clone(&ctx.decider), read, parts, size, targets).await
}

/// The read of the `size` rows after `after`: key and job values as raw bytes and, when
/// `hashed` (a trailing check will compare them) and the table has a shadow, each row's hash
/// of its key and other columns ([`Compare::others_hash_sql`]), the table's side of the
/// check's sums taken in the same read. Returns the statement, its binds and whether the
/// hash is in it.
fn ahead_sql(
    ctx: &Ctx<'_>,
    after: Option<&[Vec<u8>]>,
    size: usize,
    hashed: bool,
) -> (String, Vec<Vec<u8>>, bool) {
    let b = ctx.plan;
    let mut exprs: Vec<String> = ctx.job_names().iter().map(|c| keyset::raw(c)).collect();
    if hashed {
        exprs.push(compare(ctx, &b.table, &ctx.names.shadow).others_hash_sql());
    }
    let (sql, binds) = read::batch_of(b, &exprs, after, size, false);
    (sql, binds, hashed)
}

/// Rows read as `key…, job values…[, others' hash]` (`nk` key columns, `nc` job columns,
/// the hash when `hashed`), each copied out of its packet as it arrives ([`fetch_stored`]).
async fn fetch_ahead(
    q: read::Query<'_>,
    conn: &mut MySqlConnection,
    (nk, nc, hashed): (usize, usize, bool),
) -> Result<Vec<(Key, Stored, Option<u32>)>> {
    if !hashed {
        let rows = fetch_stored(q, conn, (nk, nc)).await?;
        return Ok(rows.into_iter().map(|(k, s)| (k, s, None)).collect());
    }
    let mut rows = q.fetch(conn);
    let mut out = Vec::new();
    while let Some(row) = rows.try_next().await? {
        let (key, stored) = stored_row(nk, nc, &row)?;
        // A CRC32: 32 bits, whatever the integer type the server gives it.
        let hash = row.try_get::<u64, _>(nk + nc)? as u32;
        out.push((key, stored, Some(hash)));
    }
    Ok(out)
}

/// The read-ahead of a step as a task of its own: the `size` rows after `after` read on
/// `reader` (handed back with what was read), decoded and decided on other threads than the
/// one driving the step's writes and check, whose statements it would otherwise hold up
/// while it decodes.
pub(crate) fn spawn_read_ahead(
    mut reader: MySqlConnection,
    ctx: &Ctx<'_>,
    after: &[Vec<u8>],
    (size, parts): (usize, usize),
    sum: bool,
) -> tokio::task::JoinHandle<(MySqlConnection, Result<Ahead>)> {
    let targets = sum_targets(ctx, sum);
    let b = ctx.plan;
    let (sql, binds, hashed) = ahead_sql(ctx, Some(after), size, targets.is_some());
    let (nk, nc) = (b.key.len(), b.columns.len());
    let decider = Arc::clone(&ctx.decider);
    tokio::spawn(async move {
        let read = async {
            let q = bind_all(sqlx::query(&sql), &binds);
            let stored = fetch_ahead(q, &mut reader, (nk, nc, hashed))
                .await
                .context("reading the next rows to copy")?;
            decide_parts(decider, stored, parts, size, targets).await
        }
        .await;
        (reader, read)
    })
}

/// Decides `stored` rows (with the server's hash of each one's other columns, where read)
/// on blocking threads, `parts` at once, in order, with what the shadow should hold where
/// `targets` ([`Decider::decide_ahead`]); `asked`: how many rows were asked for.
async fn decide_parts(
    decider: Arc<Decider>,
    stored: Vec<(Key, Stored, Option<u32>)>,
    parts: usize,
    asked: usize,
    targets: Option<Vec<Target>>,
) -> Result<Ahead> {
    let per = stored.len().div_ceil(parts.max(1)).max(1);
    let mut tasks = Vec::new();
    let mut it = stored.into_iter();
    loop {
        let part: Vec<_> = it.by_ref().take(per).collect();
        if part.is_empty() {
            break;
        }
        let decider = Arc::clone(&decider);
        let targets = targets.clone();
        tasks.push(tokio::task::spawn_blocking(move || {
            decider.decide_ahead(part, targets.as_deref())
        }));
    }
    let (mut rows, mut expected) = (Vec::new(), Some(Vec::new()));
    for t in tasks {
        let (part, sums) = t.await.context("deciding rows to copy")?;
        rows.extend(part);
        expected = expected.zip(sums).map(|(mut all, part)| {
            all.extend(part);
            all
        });
    }
    Ok(Ahead {
        rows,
        asked,
        expected: expected.filter(|_| targets.is_some()),
        ready: Vec::new(),
    })
}

/// One stream's range: after `lo` (from the start where `None`) up to `hi`, and its rows
/// read ahead (with what the shadow should hold for them, when summed).
pub(crate) type Part = (Option<Key>, Key, Ahead);

/// Rows a part of `len` rows split `parts` ways holds ([`split`], [`make_ready`]).
fn per_part(len: usize, parts: usize) -> usize {
    len.div_ceil(parts.max(1)).max(1)
}

/// Splits rows decided ahead, in key order, into `parts` consecutive ranges of about equal
/// size.
pub(crate) fn split(last: Option<Key>, ahead: Ahead, parts: usize) -> Vec<Part> {
    let per = per_part(ahead.rows.len(), parts);
    let mut out = Vec::new();
    let mut lo = last;
    let mut it = ahead.rows.into_iter();
    let mut sums = ahead.expected.map(Vec::into_iter);
    loop {
        let rows: Vec<_> = it.by_ref().take(per).collect();
        let Some((hi, _)) = rows.last() else {
            return out;
        };
        let hi = hi.clone();
        let expected = sums.as_mut().map(|s| s.by_ref().take(rows.len()).collect());
        let asked = rows.len();
        let part = Ahead {
            rows,
            asked,
            expected,
            ready: Vec::new(),
        };
        out.push((lo.replace(hi.clone()), hi, part));
    }
}

/// A range of [`ranges`], borrowed: after, up to, its rows.
type Range<'a> = (Option<&'a Key>, &'a Key, &'a [(Key, Decisions)]);

/// The ranges [`split`] makes of `rows` after `last`.
fn ranges<'a>(last: Option<&'a Key>, rows: &'a [(Key, Decisions)], parts: usize) -> Vec<Range<'a>> {
    let mut lo = last;
    rows.chunks(per_part(rows.len(), parts))
        .map(|rows| {
            let hi = &rows[rows.len() - 1].0;
            (lo.replace(hi), hi, rows)
        })
        .collect()
}

/// The writes of rows read ahead, made ready for the `parts` streams of the step after
/// `last` (the step being copied while they are made), range by range as [`split`] will
/// split them.
pub(crate) fn make_ready(ctx: &Ctx<'_>, ahead: &Ahead, last: &Key, parts: usize) -> Vec<Ready> {
    ranges(Some(last), &ahead.rows, parts)
        .into_iter()
        .map(|(lo, hi, rows)| {
            let (cond, _) = key_range(&ctx.plan.key, lo.map(Vec::as_slice), Some(hi));
            Ready::gather(ctx, rows, (lo.map(Vec::as_slice), &cond))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_in_key_order_each_after_the_last_and_ready_writes_take_the_same() {
        let rows: Vec<(Key, Decisions)> = (1..=7u8).map(|i| (vec![vec![i]], vec![])).collect();
        let ahead = Ahead {
            rows,
            asked: 9,
            expected: Some((1..=7u64).map(|i| (i, i as u32, None)).collect()),
            ready: Vec::new(),
        };
        let borrowed: Vec<(Option<Key>, Key, usize)> = ranges(Some(&vec![vec![0]]), &ahead.rows, 3)
            .into_iter()
            .map(|(lo, hi, rows)| (lo.cloned(), hi.clone(), rows.len()))
            .collect();
        let parts = split(Some(vec![vec![0]]), ahead, 3);
        let bounds: Vec<(Option<Key>, Key, usize, Vec<u64>)> = parts
            .into_iter()
            .map(|(lo, hi, a)| {
                let tags = a.expected.unwrap().iter().map(|(t, _, _)| *t).collect();
                (lo, hi, a.rows.len(), tags)
            })
            .collect();
        assert_eq!(
            bounds,
            vec![
                (Some(vec![vec![0]]), vec![vec![3]], 3, vec![1, 2, 3]),
                (Some(vec![vec![3]]), vec![vec![6]], 3, vec![4, 5, 6]),
                (Some(vec![vec![6]]), vec![vec![7]], 1, vec![7]),
            ]
        );
        let none = Ahead {
            rows: Vec::new(),
            asked: 3,
            expected: None,
            ready: Vec::new(),
        };
        // The writes made ready ahead take the very ranges the step splits.
        assert_eq!(
            borrowed,
            vec![
                (Some(vec![vec![0]]), vec![vec![3]], 3),
                (Some(vec![vec![3]]), vec![vec![6]], 3),
                (Some(vec![vec![6]]), vec![vec![7]], 1),
            ]
        );
        assert!(ranges(None, &none.rows, 3).is_empty());
        assert!(split(None, none, 3).is_empty());
    }
}

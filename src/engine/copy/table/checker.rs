//! The check pass: every row of the table compared with the shadow, on the server; what
//! differs is queued in the change log for replay.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::keycodec;
use crate::db::keyset;
use crate::engine::copy::phase::Phase;
use crate::engine::copy::table::check_sql::{count_where_sql, Compare, CompareLayout};
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::locked_read::KEYS_PER_CHUNK;
use crate::engine::copy::table::read_sql::{any_of, key_range, log_insert_sql};
use crate::engine::read::{bind_all, bind_key, read_key, Key};
use crate::recode::value as recode;
use anyhow::{Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::{Acquire, MySqlConnection, Row};

/// Changed keys beyond which a batch is left to the server-side comparison: the change log's
/// backlog read, and the rows left out of the sums (each one more term in their condition).
pub(crate) const MAX_CHANGED: usize = 2000;
/// Rows a batch's sums may leave out (see [`MAX_CHANGED`]).
pub(crate) const MAX_LEFT_OUT: usize = 200;

/// One batch of a comparison in key order: how many source rows were read, the last key,
/// and the keys whose rows differ (or exist on one side only).
pub(crate) struct Compared {
    pub(crate) rows: usize,
    pub(crate) same: usize,
    pub(crate) upper: Option<Key>,
    pub(crate) differ: Vec<Vec<u8>>,
}

/// Compares up to `size` rows of `src` after `last` with the same key range of `dst`: every
/// other column equal, every job column the server's own conversion or a lossless reading of
/// the source bytes (a label's round trip gives them back exactly); the last batch (fewer
/// rows) also covers everything after in `dst`. The server compares: only rows that are not
/// the column's default conversion ([`JobColumn`]) travel, and are judged here. No locks:
/// within the caller's transaction both tables are one consistent snapshot, and anything
/// written after it is in the change log anyway.
pub(crate) async fn compare_batch(
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
pub(crate) async fn compare_range(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    (src, dst): (&str, &str),
    last: Option<&[Vec<u8>]>,
    upper: Option<&[Vec<u8>]>,
) -> Result<Compared> {
    let b = ctx.plan;
    let nc = b.columns.len();
    let (range, binds) = key_range(&b.key, last, upper);
    let rows = count_in(conn, ctx, src, &range, &binds).await?;
    let cmp = compare(ctx, src, dst);
    let (sql, at) = cmp.suspects_sql(&range);
    let suspects = bind_all(sqlx::query(&sql), &binds)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("comparing a batch of {src} with {dst}"))?;
    let mut differ = Vec::new();
    let mut missing = 0i64;
    for r in &suspects {
        let (gone, same) = judge(r, at, nc)?;
        missing += gone as i64;
        if !same {
            differ.push(keycodec::pack(&read_key(r, at.keys())?));
        }
    }
    let from_src = differ.len();
    // Rows only the copy has: looked for only when the counts say there are some (a copy
    // whose key is recoded holds no key range of the table: [`orphans`], once at the end).
    if !cmp.key_recoded() && count_in(conn, ctx, dst, &range, &binds).await? != rows - missing {
        let sql = cmp.only_in_dst_sql(&range);
        for r in bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut *conn)
            .await
            .with_context(|| format!("looking for rows only {dst} has"))?
        {
            differ.push(keycodec::pack(&read_key(&r, at.keys())?));
        }
    }
    Ok(Compared {
        rows: rows as usize,
        same: rows as usize - from_src,
        upper: None,
        differ,
    })
}

/// Judges one row of a comparison ([`Compare::suspects_sql`]): (whether `dst` lacks it,
/// whether it holds what it should): every other column equal, every job value the
/// server's conversion or a lossless reading of the stored bytes.
fn judge(r: &MySqlRow, at: CompareLayout, nc: usize) -> Result<(bool, bool)> {
    let cell = |i: usize| r.try_get::<Option<Vec<u8>>, _>(i);
    let gone: bool = r.try_get(at.missing())?;
    let others: bool = r.try_get(at.others_same())?;
    let mut same = !gone && others;
    for ci in 0..nc {
        if !same {
            break;
        }
        same = match (cell(at.stored(ci))?, cell(at.copied(ci))?) {
            (None, None) => true,
            (Some(stored), Some(got)) => {
                cell(at.declared(ci))?.as_deref() == Some(got.as_slice())
                    || std::str::from_utf8(&got)
                        .is_ok_and(|t| recode::is_lossless_reading(&stored, t))
            }
            _ => false,
        };
    }
    Ok((gone, same))
}

/// The comparison of `src` with `dst`, two tables of the copy.
pub(crate) fn compare<'a>(ctx: &'a Ctx<'_>, src: &'a str, dst: &'a str) -> Compare<'a> {
    let b = ctx.plan;
    Compare {
        schema: &b.schema,
        src,
        dst,
        key: &b.key,
        dst_key: &ctx.shadow_key,
        all_columns: &ctx.all_columns,
        job: &ctx.job_columns,
        target_charsets: &ctx.target_charsets,
    }
}

/// Compares the rows of `src` after `last` up to `upper` with the same range of `dst` by
/// checksums ([`crate::engine::copy::table::checksum_sql`]): the rows in `staged` (the keys the copy wrote
/// otherwise than by default) are judged one by one and their hashes accounted for; only when
/// the sums still disagree is the range compared row by row ([`compare_range`]).
pub(crate) async fn compare_by_sums(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    (src, dst): (&str, &str),
    (last, upper): (Option<&[Vec<u8>]>, &[Vec<u8>]),
    staged: &[Key],
) -> Result<Compared> {
    let b = ctx.plan;
    let nc = b.columns.len();
    let (range, binds) = key_range(&b.key, last, Some(upper));
    let cmp = compare(ctx, src, dst);
    if cmp.key_recoded() {
        // The shadow's key is recoded: a key range of the table is no range of the shadow
        // to sum; the rows are compared through the join.
        return compare_range(conn, ctx, (src, dst), last, Some(upper)).await;
    }
    let twice: Vec<Vec<u8>> = binds.iter().chain(&binds).cloned().collect();
    let sums = bind_all(sqlx::query(&cmp.sums_sql(&range)), &twice)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("summing a batch of {src} and {dst}"))?;
    let sum = |i: usize| -> Result<(i64, u64)> {
        let r = sums.get(i).context("a checksum row is missing")?;
        Ok((r.try_get(0)?, r.try_get(1)?))
    };
    let ((rows, mut want), (copied, got)) = (sum(0)?, sum(1)?);
    let mut agree = rows == copied;
    for chunk in staged.chunks(KEYS_PER_CHUNK) {
        if !agree {
            break;
        }
        let cond = format!("{range} AND ({})", any_of(&b.key, chunk.len()));
        let mut binds = binds.clone();
        binds.extend(chunk.iter().flat_map(|k| k.iter().cloned()));
        let (sql, at) = cmp.suspects_with_hashes_sql(&cond);
        for r in bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut *conn)
            .await
            .with_context(|| format!("comparing recoded rows of {src} with {dst}"))?
        {
            let (_, same) = judge(&r, at, nc)?;
            let expected: Option<u32> = r.try_get(at.others_same() + 1)?;
            let hash: Option<u32> = r.try_get(at.others_same() + 2)?;
            match (same, expected, hash) {
                (true, Some(e), Some(h)) => want ^= u64::from(e ^ h),
                _ => agree = false,
            }
        }
    }
    if agree && want == got {
        return Ok(Compared {
            rows: rows as usize,
            same: rows as usize,
            upper: None,
            differ: Vec::new(),
        });
    }
    compare_range(conn, ctx, (src, dst), last, Some(upper)).await
}

/// How many rows of `table` match `range` (its `?`s bound to `binds`).
pub(crate) async fn count_in(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    table: &str,
    range: &str,
    binds: &[Vec<u8>],
) -> Result<i64> {
    let sql = count_where_sql(&ctx.plan.schema, table, range);
    Ok(bind_all(sqlx::query(&sql), binds)
        .fetch_one(&mut *conn)
        .await
        .with_context(|| format!("counting a batch of {table} to compare"))?
        .try_get(0)?)
}

/// Compares the next batch of the table with the shadow; queues every difference
/// in the change log for replay. Returns how many rows differed.
pub(crate) async fn check_batch(
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
    let mut differ = c.differ.len() as u64;
    if c.rows < size {
        let found = orphans(&mut tx, ctx, (&b.table, &ctx.names.shadow)).await?;
        queue_for_replay(&mut tx, ctx, &found).await?;
        differ += found.len() as u64;
    }
    let mut next = state.clone();
    if c.rows < size {
        next.phase = Phase::Replaying.as_str().into();
        next.last_key = None;
    } else {
        next.last_key = c.upper.as_deref().map(keycodec::pack);
    }
    checkpoint::save(&mut tx, &b.schema, job, &b.table, &next).await?;
    tx.commit().await.context("committing a check batch")?;
    *state = next;
    Ok(differ)
}

/// The keys (packed) of the rows only `dst` has, when its key is recoded (none to look for
/// otherwise: each batch's comparison finds them in its own range). One pass over `dst`,
/// each row found in `src` by its index; a row the copy wrote that the table no longer has
/// (its delete logged and not yet replayed) is queued again, which is harmless.
pub(crate) async fn orphans(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    (src, dst): (&str, &str),
) -> Result<Vec<Vec<u8>>> {
    let cmp = compare(ctx, src, dst);
    if !cmp.key_recoded() {
        return Ok(Vec::new());
    }
    let nk = ctx.plan.key.len();
    let rows = sqlx::query(&cmp.orphans_sql())
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("looking for rows only {dst} has"))?;
    rows.iter()
        .map(|r| Ok(keycodec::pack(&read_key(r, nk)?)))
        .collect()
}

/// Queues `keys` (packed) in the change log, for replay.
pub(crate) async fn queue_for_replay(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    keys: &[Vec<u8>],
) -> Result<()> {
    for chunk in keys.chunks(500) {
        let sql = log_insert_sql(&ctx.plan.schema, &ctx.names.log, chunk.len());
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

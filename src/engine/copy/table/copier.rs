//! The copier: batches in key order into the shadow, each in one transaction with its
//! checkpoint, the next batch read and decided ahead while the current one is written.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::keycodec;
use crate::engine::copy::phase::Phase;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::expect::Expected;
use crate::engine::copy::table::locked_read::{locked_batch, Ahead, Locked};
use crate::engine::copy::table::parallel::{copy_wide, Wide};
use crate::engine::copy::table::read_ahead::{make_ready, read_decided};
use crate::engine::copy::table::read_sql::key_range;
use crate::engine::copy::table::ready::Ready;
use crate::engine::copy::table::stage::clear_stage;
use crate::engine::copy::table::trailing::hand_over;
use crate::engine::copy::table::trailing::Trailing;
use crate::engine::copy::table::write::write_step;
use crate::engine::read::Key;
use anyhow::{Context, Result};
use sqlx::{Acquire, MySqlConnection};
use sqlx::{MySql, Transaction};
use std::collections::HashSet;

/// What the copy carries from one batch to the next, beside its checkpoint.
pub(crate) struct Pipeline {
    /// Reads and decides the batch after the one being written.
    pub(crate) reader: Option<MySqlConnection>,
    /// That batch, once read.
    pub(crate) ahead: Option<Ahead>,
    /// Packed keys replayed, or held for its step, since it was read (see [`locked_batch`]).
    pub(crate) replayed: HashSet<Vec<u8>>,
    /// The check pass running one batch behind, when this process began the copy.
    pub(crate) trailing: Option<Trailing>,
    /// The writers of the copy streams ([`crate::engine::copy::table::parallel`]); none (a table without
    /// transactions, a statement-based binary log): one stream, on the main connection.
    pub(crate) writers: Vec<MySqlConnection>,
}

/// Copies the next batch in key order, in one transaction with its checkpoint; meanwhile the
/// batch after it is read and decided ahead, and the one before it is checked.
pub(crate) async fn copy_batch(
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
        writers,
    } = pipe;
    if !writers.is_empty() {
        let wide = Wide {
            writers,
            reader,
            ahead,
            replayed,
            trailing,
        };
        return copy_wide(conn, wide, ctx, job, size, state).await;
    }
    let mut tx = conn.begin().await?;
    let last = state.last_key.as_deref().and_then(keycodec::unpack);
    let sum = trailing.is_some();
    let mut early = ahead.take();
    let made = early
        .as_mut()
        .and_then(|a| std::mem::take(&mut a.ready).pop());
    let locked = locked_batch(&mut tx, ctx, (last.as_deref(), size), early, replayed, sum).await?;
    let (upper, end) = (locked.upper.clone(), locked.end);
    let mut next = state.clone();
    // The last batch's checkpoint starts the check pass from where the trailing check got to
    // ([`hand_over`] moves it on once the last batches are compared).
    let check_from = match &trailing {
        Some(t) if end => t.done_upto.as_deref().map(keycodec::pack),
        _ => None,
    };
    let replayed: &HashSet<Vec<u8>> = replayed;
    let check = async {
        match trailing.as_mut() {
            Some(t) => t.check_pending(ctx, replayed).await,
            None => Ok(()),
        }
    };
    let batch = (last.as_deref(), locked, made, sum);
    let write = write_batch(tx, ctx, job, batch, check_from, &mut next);
    let read_next = read_next(reader, ctx, upper.as_ref().filter(|_| !end), size, sum);
    let (written, read, checked) = futures_util::future::join3(write, read_next, check).await;
    let (staged, expected, stage_used) = written?;
    checked?;
    if let Some(t) = trailing.as_mut() {
        let step = ((last, upper, end), (staged, expected));
        hand_over(conn, ctx, job, t, step, &mut next).await?;
    }
    // A failed read-ahead costs only its head start: the next batch decides for itself.
    *ahead = read.ok().flatten();
    // A batch that staged nothing leaves the table empty: no `TRUNCATE` (which recreates it)
    // between one batch's write and the next.
    if stage_used {
        clear_stage(conn).await?;
    }
    *state = next;
    Ok(())
}

/// Writes a locked batch (the rows after `last`; by the write `made` ahead where it still
/// holds) and the checkpoint `next` moved past it (to the check pass, from `check_from`,
/// after the table's last rows), and commits. Returns the keys it staged, when summed what
/// the shadow should hold for its rows, and whether it used the staging table.
async fn write_batch(
    mut tx: Transaction<'_, MySql>,
    ctx: &Ctx<'_>,
    job: &str,
    (last, locked, made, sum): (Option<&[Vec<u8>]>, Locked, Option<Ready>, bool),
    check_from: Option<Vec<u8>>,
    next: &mut State,
) -> Result<(Vec<Key>, Option<Expected>, bool)> {
    let b = ctx.plan;
    let Locked {
        count,
        end,
        upper,
        rows,
        expected,
        renewed,
    } = locked;
    let (mut staged, mut expected) = (Vec::new(), expected.filter(|_| sum));
    let mut stage_used = false;
    if let Some(upper) = &upper {
        let (cond, binds) = key_range(&b.key, last, Some(upper));
        // Made while the step before was written, where it still holds.
        let ready = Ready::made_or_gather(made, renewed, ctx, &rows, (last, cond.as_str()));
        let w = write_step(&mut tx, ctx, job, (ready, &binds), (expected, sum), || ()).await?;
        (staged, expected, stage_used) = (w.staged, w.expected, w.stage_used);
        next.rows_changed += w.changed;
        next.rows_quarantined += w.quarantined;
        next.last_key = Some(keycodec::pack(upper));
        next.rows_read += count as u64;
    }
    if end {
        next.phase = Phase::Checking.as_str().into();
        next.last_key = check_from;
    }
    checkpoint::save(&mut tx, &b.schema, job, &b.table, next).await?;
    tx.commit().await.context("committing a copy batch")?;
    Ok((staged, expected, stage_used))
}

/// The batch after `upper` (none after the table's last) read on `reader` and decided ahead,
/// its write made ready while this step's is under way, off the path.
async fn read_next(
    reader: &mut Option<MySqlConnection>,
    ctx: &Ctx<'_>,
    upper: Option<&Key>,
    size: usize,
    sum: bool,
) -> Result<Option<Ahead>> {
    let (Some(upper), Some(reader)) = (upper, reader.as_mut()) else {
        return Ok(None);
    };
    let mut ahead = read_decided(reader, ctx, Some(upper), (size, 1), sum).await?;
    ahead.ready = make_ready(ctx, &ahead, upper, 1);
    Ok(Some(ahead))
}

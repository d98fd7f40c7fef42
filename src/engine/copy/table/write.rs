//! A batch's write into the shadow: its decided values staged or named by key, its rows
//! copied by one `INSERT … SELECT`, the undecidable quarantined; a value the server refuses
//! to convert read again, locked, and decided afresh.

use crate::bookkeeping::quarantine;
use crate::db::errno;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::decide::Decided;
use crate::engine::copy::table::expect::Expected;
use crate::engine::copy::table::locked_read::{decide_rows, expected_of, read_locked};
use crate::engine::copy::table::ready::Ready;
use crate::engine::copy::table::write_sql::{clear_shadow_sql, stage_delete_sql, stage_insert_sql};
use crate::engine::error::EngineError;
use crate::engine::read::{bind_all, Key};
use anyhow::{Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::MySqlConnection;
/// Copies the rows of `named` keys named one by one by `cond` ([`any_of`], its `?`s bound to
/// `binds`) into the shadow, with the recoded values of `rows` (read as `key…, job columns…`)
/// staged first. Returns (recoded, quarantined).
///
/// The staging table must be empty: callers empty it with [`clear_stage`] after their commit
/// (a rollback empties it too).
pub(crate) async fn copy_rows(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    rows: &[MySqlRow],
    (cond, named): (&str, usize),
    binds: &[Vec<u8>],
) -> Result<(u64, u64)> {
    let ready = Ready::gather(ctx, &decide_rows(ctx, rows)?, (None, cond));
    let changed = ready.decided.changed;
    let quarantined = write_rows(conn, ctx, job, (ready, Some(named)), binds, || ()).await?;
    Ok((changed, quarantined))
}

/// The keys of a batch's rows the copy writes otherwise than by default (the check pass
/// judges them one by one).
pub(crate) fn staged_keys(decided: &Decided) -> Vec<Key> {
    decided.special.clone()
}

/// Stages a batch's decided values, copies the rows of its key range (`ready` was made for
/// it; its `?`s bound to `binds`; `keys_named`: its condition names that many keys one by one
/// instead) into the shadow, and lists the undecidable values, calling `copying` once the
/// rows' `INSERT … SELECT` is all that is left (or the write failed before it). Returns how
/// many were newly quarantined.
pub(crate) async fn write_rows(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    (ready, keys_named): (Ready, Option<usize>),
    binds: &[Vec<u8>],
    copying: impl FnOnce(),
) -> Result<u64> {
    let b = ctx.plan;
    let nc = b.columns.len();
    let Ready {
        decided,
        insert,
        cond,
        ..
    } = ready;
    let Decided {
        staged,
        quarantine,
        chosen,
        ..
    } = decided;
    key_values_by_server(ctx, &staged, &quarantine)?;
    for chunk in staged.chunks(1000) {
        let sql = stage_insert_sql(&b.key, nc, chunk.len());
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
    // A statement naming keys is this batch's alone: not kept prepared on the server.
    let named = chosen.iter().any(|c| !c.is_empty());
    // Whatever the shadow holds for these keys goes first (a replay may have copied a row
    // ahead of the copy, or an earlier version of it), so a plain INSERT can follow: a
    // REPLACE would silently delete a *different* row that collides on a unique index
    // once recoded, where INSERT stops with the duplicate, and nothing is lost.
    let names = (
        b.schema.as_str(),
        b.table.as_str(),
        ctx.names.shadow.as_str(),
    );
    let delete = clear_shadow_sql(names, &ctx.shadow_key, &cond, keys_named);
    let cleared = bind_all(sqlx::query(&delete), binds)
        .execute(&mut *conn)
        .await;
    copying();
    cleared.context("clearing the shadow's rows for these keys")?;
    bind_all(sqlx::query(&insert).persistent(!named), binds)
        .execute(&mut *conn)
        .await
        .map_err(|e| {
            if errno::of(&e) == Some(errno::DUP_ENTRY) {
                EngineError::UniqueCollision {
                    table: b.table.clone(),
                    detail: e.to_string(),
                }
                .into()
            } else if errno::of(&e) == Some(errno::DATA_TOO_LONG) {
                EngineError::TargetTooShort {
                    table: b.table.clone(),
                    detail: e.to_string(),
                }
                .into()
            } else {
                anyhow::Error::new(e)
                    .context(format!("copying rows of {} into the shadow table", b.table))
            }
        })?;
    quarantine::save_latest(conn, &b.schema, job, &b.table, &quarantine).await
}

/// Refuses a batch in which a key part the job recodes is not the server's conversion of its
/// bytes: the shadow finds that row by the server's reading of its old key
/// ([`crate::db::keyset::KeyBind::Recoded`]), so a value no reading decided (its new key
/// would be a guess) or one our codec reads otherwise would be a row no replay finds again.
/// The batch is rolled back; nothing is swapped.
fn key_values_by_server(
    ctx: &Ctx<'_>,
    staged: &[(Key, crate::engine::copy::table::decide::StagedCells)],
    quarantine: &[quarantine::Quarantined],
) -> Result<()> {
    let b = ctx.plan;
    for (ci, c) in b.columns.iter().enumerate() {
        if b.key.is_empty() || !b.recoded_key.contains(&c.name) {
            continue;
        }
        if let Some(q) = quarantine.iter().find(|q| q.col == c.name) {
            let hex: String = q.value.iter().map(|b| format!("{b:02X}")).collect();
            anyhow::bail!(
                "key column '{}' of {} holds a value that cannot be decided ({}; stored bytes X'{hex}'): its new key would be a guess. \
                 Nothing was swapped; the original is untouched. Fix: correct that row, or leave the column out of the job",
                c.name,
                ctx.t(&b.table),
                q.reason
            );
        }
        if staged
            .iter()
            .any(|(_, values)| values.get(ci).is_some_and(|v| v.1 != 0))
        {
            anyhow::bail!(
                "key column '{}' of {} holds a value this server converts otherwise than myrecode reads it: \
                 the copy could not find its row again by key. Nothing was swapped; the original is untouched. \
                 Fix: leave the column out of the job, or correct that row",
                c.name,
                ctx.t(&b.table)
            );
        }
    }
    Ok(())
}

/// What a step's write did: values recoded, newly quarantined, the keys staged (the check pass
/// judges them one by one), and, when summed, what the shadow should hold for its rows;
/// `stage_used`: whether it put rows in the session's staging table, which must then be
/// emptied after the commit ([`crate::engine::copy::table::stage::clear_stage`]).
pub(crate) struct Written {
    pub(crate) changed: u64,
    pub(crate) quarantined: u64,
    pub(crate) staged: Vec<Key>,
    pub(crate) expected: Option<Expected>,
    pub(crate) stage_used: bool,
}

/// Writes a step's rows by `ready` ([`write_rows`], its `?`s bound to `binds`), with
/// `expected` its rows' sums. When the server refuses to convert a value of it
/// ([`errno::REFUSED_CONVERSION`]), the range's rows are read again with shared locks,
/// decided afresh (summed when `sum`) and written once more in the same transaction: a row
/// the application rewrote after it was read ahead may hold bytes the charset of its old
/// decision lacks (UTF-8 `И` is `D0 98`; cp1251 has no 0x98), which strict mode makes an
/// error where the row's replay would have put it right. A refusal that outlives the fresh
/// read is the table's own, and stops the copy as before.
pub(crate) async fn write_step(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    (ready, binds): (Ready, &[Vec<u8>]),
    (expected, sum): (Option<Expected>, bool),
    copying: impl FnOnce(),
) -> Result<Written> {
    let (changed, staged, cond, after) = (
        ready.decided.changed,
        staged_keys(&ready.decided),
        ready.cond.clone(),
        ready.after.clone(),
    );
    let stage_used = !ready.decided.staged.is_empty();
    if let Some(hold) = crate::engine::test_hooks::write_hold() {
        // Test hook: widen the window in which a row read ahead can change before its write.
        tokio::time::sleep(hold).await;
    }
    let number = match write_rows(conn, ctx, job, (ready, None), binds, copying).await {
        Ok(quarantined) => {
            return Ok(Written {
                changed,
                quarantined,
                staged,
                expected,
                stage_used,
            })
        }
        Err(e) => refused_conversion(&e).ok_or(e)?,
    };
    // The server's message is left out: it quotes the row's bytes.
    tracing::info!(
        table = %ctx.plan.table,
        "the server refused to convert a value read ahead (error {number}): its range is read again, locked, and decided afresh"
    );
    // The server undid the refused statement alone; the staged values of the stale write go too.
    sqlx::query(&stage_delete_sql())
        .execute(&mut *conn)
        .await
        .context("emptying the staging table")?;
    let read = read_locked(conn, ctx, &cond, binds)
        .await
        .context("reading again a range whose rows changed since they were read ahead")?;
    let rows = decide_rows(ctx, &read)?;
    let ready = Ready::gather(ctx, &rows, (after.as_deref(), &cond));
    let (changed, staged) = (ready.decided.changed, staged_keys(&ready.decided));
    let stage_used = !ready.decided.staged.is_empty();
    Ok(Written {
        stage_used,
        quarantined: write_rows(conn, ctx, job, (ready, None), binds, || ()).await?,
        changed,
        staged,
        expected: expected_of(ctx, &rows).filter(|_| sum),
    })
}

/// The server's error number when it refused to convert a value between charsets
/// ([`errno::REFUSED_CONVERSION`]).
fn refused_conversion(e: &anyhow::Error) -> Option<u16> {
    e.chain()
        .filter_map(|c| c.downcast_ref::<sqlx::Error>())
        .filter_map(errno::of)
        .find(|n| errno::REFUSED_CONVERSION.contains(n))
}

//! Writing one in-place batch: every changed value staged with the bytes it was decided on,
//! one compare-and-set `UPDATE` per column joined on the stage, the few rows the application
//! changed meanwhile re-read under lock and decided again, the originals backed up by one
//! statement from the stage.

use super::sql;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::quarantine::Quarantined;
use crate::engine::read::{bind_key, Key};
use crate::engine::table_plan::TablePlan;
use crate::recode::value::Action;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::HashMap;
use tokio::sync::oneshot;

/// About the most bytes of values one staging `INSERT` carries (twice that as hex): well
/// under every server's `max_allowed_packet` (4 MiB on MySQL 5.7, 16 MiB on MariaDB, 64 MiB
/// on MySQL 8). A bigger value goes alone.
const STAGE_BYTES: usize = 1 << 20;

/// One value to rewrite: where it is, the bytes it was decided on, what it becomes.
pub(super) struct Change {
    /// Index of the job column.
    pub(super) col: usize,
    /// The row's key, one byte string per key column.
    pub(super) key: Key,
    /// The label that justified it.
    pub(super) label: String,
    /// The bytes read.
    pub(super) old: Vec<u8>,
    /// The bytes to write (UTF-8 text, or bytes for a binary column).
    pub(super) new: Vec<u8>,
}

/// When a batch may run its compare-and-set `UPDATE`s: once the batch before ran its own
/// (`after`; a closed channel also lets it go), telling the batch after when it has (`then`).
/// An `UPDATE` reads its key range and the first row past it, which is the next batch's:
/// were the next batch's `UPDATE` to lock that row first, while it waits to commit after this
/// batch, this one would wait on it until the lock wait timeout. Only the `UPDATE`s take
/// turns; staging, backups and commits overlap.
pub(super) struct Turn {
    /// Ready once the batch before ran its `UPDATE`s.
    pub(super) after: oneshot::Receiver<()>,
    /// Told once this batch ran its own.
    pub(super) then: oneshot::Sender<()>,
}

/// What a batch wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Written {
    /// Values rewritten (each with its backup).
    pub(super) changed: u64,
    /// Values the application changed between the read and the write.
    pub(super) conflicted: u64,
}

/// (Re)creates this session's staging table for a table whose key columns are `key_types`,
/// and reads committed where the server allows it (see [`sql::READ_COMMITTED_SQL`]).
pub(super) async fn create_stage(conn: &mut MySqlConnection, key_types: &[String]) -> Result<()> {
    let may: Option<i64> = sqlx::query_scalar(sql::MAY_READ_COMMITTED_SQL)
        .fetch_one(&mut *conn)
        .await?;
    if may == Some(1) {
        conn.execute(sql::READ_COMMITTED_SQL).await?;
    }
    conn.execute(sql::stage_drop_sql().as_str()).await?;
    conn.execute(sql::stage_ddl(key_types).as_str())
        .await
        .context("creating the session's staging table. Fix: GRANT CREATE TEMPORARY TABLES on the schema to the job's user")?;
    Ok(())
}

/// Empties the staging table after a batch committed (the stage is empty before the first).
pub(super) async fn clear_stage(conn: &mut MySqlConnection) -> Result<()> {
    conn.execute(sql::stage_clear_sql().as_str()).await?;
    Ok(())
}

/// Writes `changes` of the batch whose keys run from after `range.0` (from the start
/// without one) to `range.1` inside the caller's transaction `tx`, each only where its row
/// still holds the bytes it was decided on. A value changed since is decided again by `decide`
/// on what the row holds now (under lock) and written, quarantined (into `quarantined`)
/// or kept accordingly. The batch's `UPDATE`s run in their `turn`.
pub(super) async fn write(
    tx: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    range: (Option<&[Vec<u8>]>, &[Vec<u8>]),
    (changes, staging, turn): (Vec<Change>, Vec<String>, Turn),
    decide: &(dyn Fn(usize, &[u8]) -> Action + Sync),
    quarantined: &mut Vec<Quarantined>,
) -> Result<Written> {
    let mut written = Written::default();
    if changes.is_empty() {
        let _ = turn.after.await;
        return Ok(written);
    }
    for sql in &staging {
        tx.execute(sql.as_str())
            .await
            .context("staging a batch's recoded values")?;
    }
    // An error (the batch before failed, or wrote no value) lets this one go on: its own
    // failure, not this batch, stops the run.
    let _ = turn.after.await;
    let mut redo = Vec::new();
    for (ci, col) in plan.columns.iter().enumerate() {
        let staged = changes.iter().filter(|c| c.col == ci).count() as u64;
        if staged == 0 {
            continue;
        }
        let (update, lower_binds, upper_binds) = sql::update_from_stage_sql(
            &plan.schema,
            &plan.table,
            &plan.key,
            &col.name,
            col.binary,
            range.0.is_some(),
        );
        let mut q = sqlx::query(&update).bind(&col.name);
        if let Some(lower) = range.0 {
            q = bind_key(q, lower, &lower_binds);
        }
        let matched = bind_key(q, range.1, &upper_binds)
            .execute(&mut *tx)
            .await
            .map_err(|e| too_long(e, &plan.table, &col.name))?
            .rows_affected();
        if matched < staged {
            redo.extend(unmatched(tx, plan, ci, &changes).await?);
        }
    }
    drop(turn.then);
    written.conflicted = redo.len() as u64;
    for chunk in redo.chunks(1000) {
        let sql = sql::stage_forget_sql(chunk.len());
        let mut q = sqlx::query(&sql).persistent(false);
        for (n, _) in chunk {
            q = q.bind(*n as i32);
        }
        q.execute(&mut *tx).await?;
    }
    written.changed = sqlx::query(&sql::backup_from_stage_sql(&plan.schema))
        .bind(job)
        .bind(&plan.table)
        .execute(&mut *tx)
        .await
        .context("saving original bytes to the backup table")?
        .rows_affected();
    let mut backups = Vec::new();
    for (n, now) in redo {
        let c = &changes[n];
        let Some(now) = now else { continue };
        let packed = keycodec::pack(&c.key);
        let name = &plan.columns[c.col].name;
        match decide(c.col, &now) {
            Action::Keep => {}
            Action::Quarantine { reason, runner_up } => quarantined.push(Quarantined {
                col: name.clone(),
                key: packed,
                value: now,
                reason,
                runner_up,
            }),
            Action::Rewrite { new, label } => {
                rewrite_one(tx, plan, c, &now, &new).await?;
                backups.push((c.col, packed, label.to_string(), now, new));
            }
        }
    }
    written.changed += backups.len() as u64;
    for chunk in backups.chunks(200) {
        let sql = sql::backup_insert_sql(&plan.schema, chunk.len());
        let mut q = sqlx::query(&sql);
        for (ci, key, label, old, new) in chunk {
            q = q
                .bind(job)
                .bind(&plan.table)
                .bind(&plan.columns[*ci].name)
                .bind(key)
                .bind(label)
                .bind(old)
                .bind(new);
        }
        q.execute(&mut *tx)
            .await
            .context("saving original bytes to the backup table")?;
    }
    // Freed elsewhere, as the copy's batches are: tens of thousands of buffers made on the
    // deciding thread, and the staging statements' megabytes.
    tokio::task::spawn_blocking(move || drop((changes, staging)));
    Ok(written)
}

/// The statements staging every change (`names`: the job columns'), bounded by bytes: built
/// where the batch is decided, off the connection that writes.
pub(super) fn stage_statements(
    key_columns: usize,
    names: &[String],
    changes: &[Change],
) -> Vec<String> {
    let packed: Vec<Vec<u8>> = changes.iter().map(|c| keycodec::pack(&c.key)).collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < changes.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < changes.len() && (end == start || bytes <= STAGE_BYTES) {
            let c = &changes[end];
            bytes += c.old.len() + c.new.len() + 2 * packed[end].len() + 64;
            end += 1;
        }
        let rows: Vec<sql::StageRow<'_>> = (start..end)
            .map(|n| {
                let c = &changes[n];
                sql::StageRow {
                    n,
                    key: &c.key,
                    col: &names[c.col],
                    packed: &packed[n],
                    label: &c.label,
                    old: &c.old,
                    new: &c.new,
                }
            })
            .collect();
        out.push(sql::stage_values_sql(key_columns, &rows));
        start = end;
    }
    out
}

/// The staged changes of job column `ci` the update did not match, by index into `changes`,
/// with what their rows hold now (locked until the batch commits; `None`: row or value gone).
async fn unmatched(
    tx: &mut MySqlConnection,
    plan: &TablePlan,
    ci: usize,
    changes: &[Change],
) -> Result<Vec<(usize, Option<Vec<u8>>)>> {
    let name = &plan.columns[ci].name;
    let rows = sqlx::query(&sql::staged_now_sql(
        &plan.schema,
        &plan.table,
        &plan.key,
        name,
    ))
    .bind(name)
    .fetch_all(&mut *tx)
    .await
    .context("re-reading rows changed since the batch read them")?;
    let now: HashMap<usize, Option<Vec<u8>>> = rows
        .iter()
        .map(|r| Ok((r.try_get::<i32, _>(0)? as usize, r.try_get(1)?)))
        .collect::<Result<_, sqlx::Error>>()?;
    let mut changed: Vec<(usize, Option<Vec<u8>>)> = now
        .into_iter()
        .filter(|(n, v)| v.as_deref() != Some(changes[*n].new.as_slice()))
        .collect();
    changed.sort_by_key(|(n, _)| *n);
    Ok(changed)
}

/// Writes one value of a row locked by [`unmatched`]; it cannot have changed meanwhile.
async fn rewrite_one(
    tx: &mut MySqlConnection,
    plan: &TablePlan,
    c: &Change,
    now: &[u8],
    new: &[u8],
) -> Result<()> {
    let col = &plan.columns[c.col];
    let sql = sql::update_if_unchanged_sql(&plan.schema, &plan.table, &plan.key, &col.name);
    let mut q = sqlx::query(&sql);
    q = if col.binary {
        q.bind(new.to_vec())
    } else {
        q.bind(String::from_utf8(new.to_vec()).context("a recoded value is not UTF-8")?)
    };
    for k in &c.key {
        q = q.bind(k.clone());
    }
    let affected = q
        .bind(now.to_vec())
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if affected != 1 {
        anyhow::bail!("row {:?} of {} changed under a row lock", c.key, plan.table);
    }
    Ok(())
}

/// A value longer than its column holds (1406, the tool's sessions being strict) named with
/// its fix; any other error with the batch it stopped.
fn too_long(e: sqlx::Error, table: &str, column: &str) -> anyhow::Error {
    if crate::db::errno::of(&e) == Some(crate::db::errno::DATA_TOO_LONG) {
        crate::engine::error::EngineError::ColumnTooShort {
            table: table.to_string(),
            column: column.to_string(),
            detail: e.to_string(),
        }
        .into()
    } else {
        anyhow::Error::new(e).context(format!("recoding a batch of {table}.{column}"))
    }
}

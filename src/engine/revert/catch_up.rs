//! The kept original brought up to date from the back log: each key written since the swap is
//! read from the live table and written into the kept original, its text encoded back into
//! its legacy charset (or removed there, if the live table no longer has it). A value that
//! charset cannot hold is listed first, by key and column, with its text.
//!
//! Idempotent: a key is taken from the live table as it stands, so a chunk done twice (a
//! kill between its writes and forgetting its log entries) writes the same row again.

use super::check::Reverting;
use super::sql::{
    copy_back_sql, delete_old_sql, forget_back_sql, forget_unreverted_sql, read_back_sql,
    record_unreverted_sql, unreverted_sql,
};
use crate::bookkeeping::keycodec;
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};

/// Keys a chunk takes from the back log.
pub const CHUNK: usize = 500;

/// What one chunk did: log entries read, keys brought back (the values listed are in
/// `_myrecode_unreverted`, counted from there).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Log entries read (0: the back log is empty).
    pub entries: usize,
    /// Distinct keys brought back.
    pub keys: usize,
}

/// Brings back the next chunk of `r`'s back log, in one transaction (`conn` has autocommit
/// off: under the swap back's `LOCK TABLES`, a `START TRANSACTION` would unlock).
pub async fn chunk(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    r: &Reverting,
) -> Result<Chunk> {
    let rows = sqlx::query(&read_back_sql(schema, &r.names, CHUNK))
        .fetch_all(&mut *conn)
        .await
        .context("reading the back log")?;
    let Some(last) = rows.last() else {
        return Ok(Chunk::default());
    };
    let last_id: u64 = last.try_get(0)?;
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for row in &rows {
        let k: Vec<u8> = row.try_get(1)?;
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut done = Chunk {
        entries: rows.len(),
        ..Chunk::default()
    };
    for k in &keys {
        bring_back(conn, schema, job, r, k).await?;
        done.keys += 1;
    }
    sqlx::query(&forget_back_sql(schema, &r.names))
        .bind(last_id)
        .execute(&mut *conn)
        .await?;
    conn.execute("COMMIT").await?;
    Ok(done)
}

/// One key: listed if a value cannot go back, then its row written afresh into the kept
/// original.
async fn bring_back(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    r: &Reverting,
    k: &[u8],
) -> Result<()> {
    let parts = keycodec::unpack(k)
        .ok_or_else(|| anyhow!("a back log entry of {} holds no key", r.table))?;
    if parts.len() != r.key.len() {
        return Err(anyhow!(
            "a back log entry of {} holds {} key parts, its key {}",
            r.table,
            parts.len(),
            r.key.len()
        ));
    }
    let mut lossy = false;
    if let Some((sql, names)) = unreverted_sql(schema, &r.table, &r.columns, &r.key) {
        let mut q = sqlx::query(&sql);
        for p in &parts {
            q = q.bind(p.clone());
        }
        let row = q
            .fetch_optional(&mut *conn)
            .await
            .context("looking for values the legacy charset cannot hold")?;
        let mut lost = Vec::new();
        if let Some(row) = row {
            for (i, name) in names.into_iter().enumerate() {
                if row.try_get::<i64, _>(2 * i)? != 0 {
                    lost.push((name, row.try_get::<String, _>(2 * i + 1)?));
                }
            }
        }
        lossy = !lost.is_empty();
        sqlx::query(&forget_unreverted_sql(schema))
            .bind(job)
            .bind(&r.table)
            .bind(k)
            .execute(&mut *conn)
            .await?;
        for (col, text) in lost {
            sqlx::query(&record_unreverted_sql(schema))
                .bind(job)
                .bind(&r.table)
                .bind(k)
                .bind(col)
                .bind(text)
                .execute(&mut *conn)
                .await?;
        }
    }
    for sql in [
        delete_old_sql(schema, &r.names, &r.key),
        copy_back_sql(schema, &r.table, &r.names, (&r.columns, lossy), &r.key),
    ] {
        let mut q = sqlx::query(&sql);
        for p in &parts {
            q = q.bind(p.clone());
        }
        q.execute(&mut *conn)
            .await
            .with_context(|| format!("bringing a row of {} back into {}", r.table, r.names.old))?;
    }
    Ok(())
}

//! Reading a table by key: batches in key order as raw bytes, and binding keys and values.

use super::table_plan::TablePlan;
use crate::db::keyset::{self, KeyColumn};
use anyhow::{Context, Result};
use futures_util::TryStreamExt;
use sqlx::mysql::{MySqlArguments, MySqlRow};
use sqlx::{MySql, MySqlConnection, Row};

/// A row's key, one byte string per key column.
pub type Key = Vec<Vec<u8>>;

/// A query being bound.
pub type Query<'q> = sqlx::query::Query<'q, MySql, MySqlArguments>;

/// One batch of `table` in key order: the key's raw bytes, then `exprs`, after a key when
/// `after` (binds: the key parts [`keyset::after`] names); `locking` adds shared row locks.
pub fn batch_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    exprs: &[String],
    after: bool,
    size: usize,
    locking: bool,
) -> (String, Vec<usize>) {
    let (sql, binds) = keyset::select_batch_of(schema, table, key, exprs, after, size);
    if locking {
        (format!("{sql} LOCK IN SHARE MODE"), binds)
    } else {
        (sql, binds)
    }
}

/// Reads the next `size` rows after key `after` (from the start without one) in key order,
/// as `key…, columns…` raw bytes; `locking` takes shared row locks until the transaction ends.
pub async fn read_batch(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    columns: &[String],
    after: Option<&[Vec<u8>]>,
    size: usize,
    locking: bool,
) -> Result<Vec<MySqlRow>> {
    let exprs: Vec<String> = columns.iter().map(|c| keyset::raw(c)).collect();
    read_batch_of(conn, plan, &exprs, after, size, locking).await
}

/// [`read_batch`] of the SQL expressions `exprs` (after the key's raw bytes) instead of columns.
pub async fn read_batch_of(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    exprs: &[String],
    after: Option<&[Vec<u8>]>,
    size: usize,
    locking: bool,
) -> Result<Vec<MySqlRow>> {
    let (sql, binds) = batch_of(plan, exprs, after, size, locking);
    let rows = bind_all(sqlx::query(&sql), &binds)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading a batch of {}", plan.table))?;
    crate::db::packet::no_value_cut(conn, &plan.table).await?;
    Ok(rows)
}

/// [`read_batch`] as each row's key and job values ([`fetch_stored`]), without locks.
pub async fn read_stored(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    columns: &[String],
    after: Option<&[Vec<u8>]>,
    size: usize,
) -> Result<Vec<(Key, Stored)>> {
    let exprs: Vec<String> = columns.iter().map(|c| keyset::raw(c)).collect();
    let (sql, binds) = batch_of(plan, &exprs, after, size, false);
    let stored = fetch_stored(
        bind_all(sqlx::query(&sql), &binds),
        &mut *conn,
        (plan.key.len(), columns.len()),
    )
    .await
    .with_context(|| format!("reading a batch of {}", plan.table))?;
    crate::db::packet::no_value_cut(conn, &plan.table).await?;
    Ok(stored)
}

/// A batch's statement without locks or with ([`batch_sql`]) and its binds, the parts of
/// `after` it names (none from the start).
pub fn batch_of(
    plan: &TablePlan,
    exprs: &[String],
    after: Option<&[Vec<u8>]>,
    size: usize,
    locking: bool,
) -> (String, Vec<Vec<u8>>) {
    let (sql, at) = batch_sql(
        &plan.schema,
        &plan.table,
        &plan.key,
        exprs,
        after.is_some(),
        size,
        locking,
    );
    let binds = after
        .map(|a| at.iter().map(|&i| a[i].clone()).collect())
        .unwrap_or_default();
    (sql, binds)
}

/// The key of a row read as `key…, …`: its first `n` columns' bytes.
pub fn read_key(row: &MySqlRow, n: usize) -> Result<Key> {
    (0..n)
        .map(|i| row.try_get::<Vec<u8>, _>(i).context("reading a key column"))
        .collect()
}

/// Binds key parts in the order `binds` names them.
pub fn bind_key<'q>(mut q: Query<'q>, key: &[Vec<u8>], binds: &[usize]) -> Query<'q> {
    for &i in binds {
        q = q.bind(key[i].clone());
    }
    q
}

/// A row's stored job values (`None`: NULL).
pub type Stored = Vec<Option<Vec<u8>>>;

/// A row's key and stored job values, of a row read as `key…, job columns…` (`nk` key
/// columns, `nc` job columns).
pub fn stored_row(nk: usize, nc: usize, row: &MySqlRow) -> Result<(Key, Stored)> {
    let cells = (nk..nk + nc)
        .map(|i| row.try_get::<Option<Vec<u8>>, _>(i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((read_key(row, nk)?, cells))
}

/// Each row's key and stored job values, of rows read as `key…, job columns…` (`nk` key
/// columns, `nc` job columns).
pub fn stored_rows(nk: usize, nc: usize, rows: &[MySqlRow]) -> Result<Vec<(Key, Stored)>> {
    rows.iter().map(|row| stored_row(nk, nc, row)).collect()
}

/// `q`'s rows (read as `key…, job columns…`) as [`stored_rows`], each row's packet freed as
/// soon as its bytes are copied out: a batch read whole first held every row twice at the
/// copy's peak (the server's rows and their copies).
pub async fn fetch_stored(
    q: Query<'_>,
    conn: &mut MySqlConnection,
    (nk, nc): (usize, usize),
) -> Result<Vec<(Key, Stored)>> {
    let mut rows = q.fetch(conn);
    let mut out = Vec::new();
    while let Some(row) = rows.try_next().await? {
        out.push(stored_row(nk, nc, &row)?);
    }
    Ok(out)
}

/// Binds each value in order.
pub fn bind_all<'q>(mut q: Query<'q>, values: &[Vec<u8>]) -> Query<'q> {
    for v in values {
        q = q.bind(v.clone());
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locking_batch_read_takes_shared_row_locks() {
        let key = [KeyColumn::plain("a`b"), KeyColumn::plain("order")];
        let exprs = [keyset::raw("na me")];
        let (sql, binds) = batch_sql("s", "таблица", &key, &exprs, true, 100, true);
        assert_eq!(
            sql,
            "SELECT CAST(`a``b` AS BINARY), CAST(`order` AS BINARY), CAST(`na me` AS BINARY) FROM `s`.`таблица` \
             WHERE `a``b` >= ? AND (`a``b` > ? OR (`a``b` = ? AND `order` > ?)) ORDER BY `a``b`, `order` LIMIT 100 \
             LOCK IN SHARE MODE"
        );
        assert_eq!(binds, vec![0, 0, 0, 1]);
        let (sql, binds) = batch_sql("s", "t", &key[..1], &[], false, 5, false);
        assert_eq!(
            sql,
            "SELECT CAST(`a``b` AS BINARY) FROM `s`.`t` ORDER BY `a``b` LIMIT 5"
        );
        assert!(binds.is_empty());
    }
}

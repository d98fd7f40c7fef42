//! Proves a run (every changed value decodes from and re-encodes to its backup) and undoes it;
//! compares a job's copied tables with the originals kept beside them.
//!
//! Both read the backup table in id order, in chunks. Rows the application changed
//! since the run are listed apart: verify does not count them as errors, rollback
//! does not clobber them (compare-and-set again).

use crate::bookkeeping::checkpoint::BACKUP;

use crate::bookkeeping::checkpoint::CHECKPOINT;

use super::copy;
use super::inplace::update_if_unchanged_sql;
use super::plans::plans;
use crate::bookkeeping::checkpoint::QUARANTINE;
use crate::bookkeeping::keycodec;
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::detect::Label;
use crate::inventory::model::{ColumnKind, Table};
use crate::job::model::{Job, Strategy};
use crate::recode::value::unrepair;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};

/// One backed-up value.
#[derive(Debug, Clone)]
pub struct BackupRow {
    /// Backup id.
    pub id: i64,
    /// Table.
    pub table: String,
    /// Column.
    pub column: String,
    /// Unpacked key.
    pub key: Vec<Vec<u8>>,
    /// Label the value was recoded under.
    pub label: String,
    /// Original bytes.
    pub old: Vec<u8>,
    /// Bytes written.
    pub new: Vec<u8>,
}

/// What verify or rollback found.
#[derive(Debug, Default, Clone)]
pub struct Findings {
    /// Values checked (verify) or restored (rollback).
    pub ok: u64,
    /// Rows changed by the application since the run (listed, not errors; not restored).
    pub changed_since: Vec<String>,
    /// Rows deleted since.
    pub deleted_since: Vec<String>,
    /// Values whose backup does not prove the current value: real errors.
    pub errors: Vec<String>,
}

/// The job's backup rows after an id, `chunk` at a time in id order (`?` job, `?` id):
/// id, table, column, packed key, label, original bytes, bytes written.
pub fn backup_chunk_sql(schema: &str, chunk: usize) -> String {
    format!(
        "SELECT id, CAST(tbl AS CHAR), CAST(col AS CHAR), key_bytes, CAST(label AS CHAR), old_value, new_value FROM {} WHERE job = ? AND id > ? ORDER BY id LIMIT {chunk}",
        quote::table(schema, BACKUP)
    )
}

/// One value of a row by its key, as its stored bytes; the key's `?`s in key order.
pub fn current_value_sql(schema: &str, table: &str, key: &[KeyColumn], column: &str) -> String {
    format!(
        "SELECT CAST({c} AS BINARY) FROM {} WHERE {}",
        quote::table(schema, table),
        keyset::equals(key),
        c = quote::ident(column)
    )
}

/// Forgets one backed-up value once it is restored, `?` its id.
pub fn backup_delete_sql(schema: &str) -> String {
    format!("DELETE FROM {} WHERE id = ?", quote::table(schema, BACKUP))
}

/// Forgets a job in one of the bookkeeping tables, `?` job.
pub fn forget_job_sql(schema: &str, table: &str) -> String {
    format!("DELETE FROM {} WHERE job = ?", quote::table(schema, table))
}

/// Reads the job's backup rows in id order, `chunk` at a time, after `after_id`.
pub async fn backup_chunk(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    after_id: i64,
    chunk: usize,
) -> Result<Vec<BackupRow>> {
    let rows = sqlx::query(&backup_chunk_sql(schema, chunk))
        .bind(job)
        .bind(after_id)
        .fetch_all(conn)
        .await
        .context("reading the backup table")?;
    rows.iter()
        .map(|r| {
            let packed: Vec<u8> = r.get(3);
            Ok(BackupRow {
                id: r.get(0),
                table: r.get(1),
                column: r.get(2),
                key: keycodec::unpack(&packed).context("a backup row has a malformed key")?,
                label: r.get(4),
                old: r.get(5),
                new: r.get(6),
            })
        })
        .collect()
}

/// The job's backup rows in id order, a chunk at a time.
struct BackupRows<'a> {
    schema: &'a str,
    job: &'a str,
    after_id: i64,
    chunk: usize,
}

impl<'a> BackupRows<'a> {
    fn new(schema: &'a str, job: &'a str, chunk: usize) -> Self {
        BackupRows {
            schema,
            job,
            after_id: 0,
            chunk,
        }
    }

    /// The next chunk; `None` once every row was read.
    async fn next(&mut self, conn: &mut MySqlConnection) -> Result<Option<Vec<BackupRow>>> {
        let rows = backup_chunk(conn, self.schema, self.job, self.after_id, self.chunk).await?;
        let Some(last) = rows.last() else {
            return Ok(None);
        };
        self.after_id = last.id;
        Ok(Some(rows))
    }
}

fn describe(b: &BackupRow) -> String {
    let key: Vec<String> = b
        .key
        .iter()
        .map(|k| crate::scan::accumulate::show_key(k))
        .collect();
    format!("{}.{} key [{}]", b.table, b.column, key.join(", "))
}

/// Whether `new` is exactly what `old` recodes to under `label`, both ways.
pub fn proves(label: &str, old: &[u8], new: &[u8]) -> bool {
    let Ok(label) = label.parse::<Label>() else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(new) else {
        return false;
    };
    label.repair(old).as_deref() == Some(text) && unrepair(label, text).iter().any(|b| b == old)
}

async fn current_value(
    conn: &mut MySqlConnection,
    schema: &str,
    key: &[KeyColumn],
    b: &BackupRow,
) -> Result<Option<Option<Vec<u8>>>> {
    let sql = current_value_sql(schema, &b.table, key, &b.column);
    let mut q = sqlx::query(&sql);
    for k in &b.key {
        q = q.bind(k.clone());
    }
    Ok(q.fetch_optional(conn)
        .await?
        .map(|r| r.get::<Option<Vec<u8>>, _>(0)))
}

/// Verifies every changed value of the job.
pub async fn verify(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[Table],
) -> Result<Findings> {
    let mut f = Findings::default();
    let mut backups = BackupRows::new(schema, job, 1000);
    while let Some(chunk) = backups.next(conn).await? {
        for b in &chunk {
            let Some(key) = tables
                .iter()
                .find(|t| t.name == b.table)
                .and_then(crate::scan::read::key_columns)
            else {
                f.errors
                    .push(format!("{}: the table or its key is gone", describe(b)));
                continue;
            };
            match current_value(conn, schema, &key, b).await? {
                None => f.deleted_since.push(describe(b)),
                Some(cur) if cur.as_deref() != Some(b.new.as_slice()) => {
                    f.changed_since.push(describe(b))
                }
                Some(_) if proves(&b.label, &b.old, &b.new) => f.ok += 1,
                Some(_) => f.errors.push(format!(
                    "{}: the backup ({}) does not decode as {} to the current value",
                    describe(b),
                    hex::encode(&b.old[..b.old.len().min(32)]),
                    b.label
                )),
            }
        }
    }
    Ok(f)
}

/// Forgets the job's rows of bookkeeping table `table` except those of the `keep` tables
/// (one `?` each, after the job's).
pub fn forget_job_except_sql(schema: &str, table: &str, keep: usize) -> String {
    if keep == 0 {
        return forget_job_sql(schema, table);
    }
    format!(
        "DELETE FROM {} WHERE job = ? AND tbl NOT IN ({})",
        quote::table(schema, table),
        vec!["?"; keep].join(", ")
    )
}

/// Puts the original bytes back wherever the value is still what the run wrote; then forgets
/// the job, except the bookkeeping of the tables it `copied` (a swapped copy is not undone
/// here, and `cleanup` needs its checkpoint to find the kept original and the log).
pub async fn rollback(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[Table],
    copied: &[String],
) -> Result<Findings> {
    let mut f = Findings::default();
    let mut backups = BackupRows::new(schema, job, 500);
    while let Some(chunk) = backups.next(conn).await? {
        let mut tx = sqlx::Acquire::begin(&mut *conn).await?;
        for b in &chunk {
            let Some(t) = tables.iter().find(|t| t.name == b.table) else {
                f.errors.push(format!("{}: the table is gone", describe(b)));
                continue;
            };
            let key = crate::scan::read::key_columns(t).context("the table lost its key")?;
            let binary = t
                .columns
                .iter()
                .any(|c| c.name == b.column && c.kind == ColumnKind::Binary);
            let sql = update_if_unchanged_sql(schema, &b.table, &key, &b.column);
            let mut q = sqlx::query(&sql);
            q = match (binary, String::from_utf8(b.old.clone())) {
                (false, Ok(text)) => q.bind(text),
                _ => q.bind(b.old.clone()),
            };
            for k in &b.key {
                q = q.bind(k.clone());
            }
            if q.bind(b.new.clone())
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1
            {
                f.ok += 1;
                sqlx::query(&backup_delete_sql(schema))
                    .bind(b.id)
                    .execute(&mut *tx)
                    .await?;
            } else {
                f.changed_since.push(describe(b));
            }
        }
        tx.commit().await?;
    }
    if f.changed_since.is_empty() && f.errors.is_empty() {
        for t in [CHECKPOINT, QUARANTINE] {
            let sql = forget_job_except_sql(schema, t, copied.len());
            let mut q = sqlx::query(&sql).bind(job);
            for c in copied {
                q = q.bind(c);
            }
            q.execute(&mut *conn).await?;
        }
    }
    Ok(f)
}

/// `verify` for the job's copied tables: each compared with the original kept beside it.
pub async fn verify_copies(
    conn: &mut MySqlConnection,
    job: &Job,
    job_id: &str,
) -> Result<Vec<(String, copy::CopyFindings)>> {
    if !job.tables.iter().any(|t| t.strategy == Strategy::Copy) {
        return Ok(Vec::new());
    }
    // A table refused now (its triggers back since the cut-over, say) was copied before: compare it.
    let plans = plans(conn, job).await?.all();
    let mut out = Vec::new();
    for p in plans.iter().filter(|p| p.strategy == Strategy::Copy) {
        out.push((p.table.clone(), copy::verify_table(conn, job_id, p).await?));
    }
    Ok(out)
}

/// One paragraph per copied table for `verify` and the demo.
pub fn describe_copy_findings(table: &str, c: &copy::CopyFindings) -> String {
    if let Some(why) = &c.skipped {
        return format!("{table}: copy not compared ({why})\n");
    }
    let mut out = format!(
        "{table}: {} row(s) equal their original (kept as {}), recoded; {} differ\n",
        c.equal,
        crate::bookkeeping::names::names(table).old,
        c.differ.len()
    );
    for k in c.differ.iter().take(20) {
        out.push_str(&format!(
            "  written since the cut-over (or only on one side): key {k}\n"
        ));
    }
    if c.differ.len() > 20 {
        out.push_str(&format!("  … and {} more\n", c.differ.len() - 20));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_statements_quote_every_name() {
        assert_eq!(
            backup_chunk_sql("my`db", 500),
            "SELECT id, CAST(tbl AS CHAR), CAST(col AS CHAR), key_bytes, CAST(label AS CHAR), old_value, new_value \
             FROM `my``db`.`_myrecode_backup` WHERE job = ? AND id > ? ORDER BY id LIMIT 500"
        );
        let key = [KeyColumn::plain("a`b"), KeyColumn::plain("order")];
        assert_eq!(
            current_value_sql("s", "таблица", &key, "na me"),
            "SELECT CAST(`na me` AS BINARY) FROM `s`.`таблица` WHERE `a``b` = ? AND `order` = ?"
        );
        assert_eq!(
            backup_delete_sql("база"),
            "DELETE FROM `база`.`_myrecode_backup` WHERE id = ?"
        );
        assert_eq!(
            forget_job_sql("s", QUARANTINE),
            "DELETE FROM `s`.`_myrecode_quarantine` WHERE job = ?"
        );
        assert_eq!(
            forget_job_except_sql("s", CHECKPOINT, 2),
            "DELETE FROM `s`.`_myrecode_checkpoint` WHERE job = ? AND tbl NOT IN (?, ?)"
        );
        assert_eq!(
            forget_job_except_sql("s", CHECKPOINT, 0),
            forget_job_sql("s", CHECKPOINT)
        );
        // The rollback writes back with the run's own compare-and-set.
        assert_eq!(
            update_if_unchanged_sql("s", "таблица", &key, "na me"),
            "UPDATE `s`.`таблица` SET `na me` = ? WHERE `a``b` = ? AND `order` = ? AND CAST(`na me` AS BINARY) = ?"
        );
    }
}

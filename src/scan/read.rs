//! The scan's only I/O: raw bytes in key order, batch by batch, with a pause between batches.
//!
//! Read-only: plain autocommit SELECTs (each a consistent read), no locks taken.

use super::accumulate::ColumnTally;
use super::model::{ColumnScan, ObjectScan, ScanReport, Strategy, TableScan, SCHEMA_VERSION};
use super::target;
use crate::db::keyset::{self, KeyBind, KeyColumn};
use crate::db::quote;
use crate::detect;
use crate::detect::Label;
use crate::inventory::model::{Column, ColumnKind, Inventory, Table};
use crate::inventory::objects::Kind;
use crate::recode::objects::Reading;
use anyhow::{Context, Result};
use futures_util::TryStreamExt;
use sqlx::mysql::MySqlRow;
use sqlx::{MySqlConnection, Row};
use std::time::{Duration, Instant};

/// How much to read and how gently.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows per table to read, spread over the key range; `None` reads every row.
    pub sample: Option<u64>,
    /// Rows per batch.
    pub batch_size: usize,
    /// Pause between batches, so production does not feel the scan.
    pub pause: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sample: None,
            batch_size: 1000,
            pause: Duration::from_millis(5),
        }
    }
}

/// Receives progress as the scan goes (a progress bar, log lines, or nothing).
pub trait Progress {
    /// A table starts; `estimated` is the server's row estimate (or the sample size).
    fn table_started(&self, schema: &str, table: &str, estimated: u64);
    /// `rows` more rows of the current table were read.
    fn rows_read(&self, rows: u64);
    /// The current table is done.
    fn table_done(&self, rows: u64, elapsed: Duration);
}

/// Progress that goes nowhere (tests, libraries).
pub struct Silent;

impl Progress for Silent {
    fn table_started(&self, _: &str, _: &str, _: u64) {}
    fn rows_read(&self, _: u64) {}
    fn table_done(&self, _: u64, _: Duration) {}
}

/// Scans every table of the inventory.
pub async fn scan(
    conn: &mut MySqlConnection,
    inv: &Inventory,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<ScanReport> {
    let mysql = inv.server.flavor == "MySQL";
    let mut tables = Vec::new();
    for t in &inv.tables {
        tables.push(scan_table(conn, t, opts, progress, mysql).await?);
    }
    let mut objects = Vec::new();
    for schema in &inv.schemas {
        let mut labels = Vec::new();
        for c in tables
            .iter()
            .filter(|t| &t.schema == schema)
            .flat_map(|t| &t.columns)
        {
            if let Some(l) = c.source.as_deref().and_then(|l| l.parse::<Label>().ok()) {
                if !labels.contains(&l) {
                    labels.push(l);
                }
            }
        }
        let reading = Reading {
            labels,
            collation: crate::scan::target::utf8mb4_collation(None, mysql).to_string(),
        };
        let described = match describe_objects(conn, schema, &reading).await {
            Ok(d) => d,
            // Read-only and best effort: a scan is not refused for what it may not read.
            Err(e) => vec![(
                Kind::View,
                "*".into(),
                Err(format!(
                    "cannot read the schema's views, routines and events: {e:#}. Fix: GRANT SHOW VIEW and SELECT on mysql.proc (MariaDB) or SHOW_ROUTINE (MySQL) to the scanning user"
                )),
            )],
        };
        for (kind, name, found) in described {
            let (changes, problem) = match found {
                Ok(c) => (c, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            objects.push(ObjectScan {
                schema: schema.clone(),
                kind: kind.word().to_string(),
                name,
                changes,
                problem,
            });
        }
    }
    let mut clients = Vec::new();
    for schema in &inv.schemas {
        // Read-only and best effort, as the objects: a scan is not refused for it.
        if let Ok(c) = crate::clients::read::read(conn, schema).await {
            clients.push(c);
        }
    }
    Ok(ScanReport {
        clients,
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        server: inv.server.clone(),
        mode: if opts.sample.is_some() {
            "sample"
        } else {
            "full"
        }
        .to_string(),
        sample_rows: opts.sample,
        tables,
        objects,
    })
}

/// The key columns of a table with how each binds back into comparisons.
pub fn key_columns(t: &Table) -> Option<Vec<KeyColumn>> {
    let key = t.recode_key.as_ref()?;
    Some(
        key.columns
            .iter()
            .map(|name| {
                let bind = match t.columns.iter().find(|c| &c.name == name) {
                    Some(c) if c.kind != ColumnKind::Binary => KeyBind::Text {
                        charset: c.charset.clone().unwrap_or_else(|| "binary".into()),
                        collation: c.collation.clone().unwrap_or_else(|| "binary".into()),
                    },
                    _ => KeyBind::Plain,
                };
                KeyColumn {
                    name: name.clone(),
                    bind,
                }
            })
            .collect(),
    )
}

/// Columns whose values are scanned: text, ENUM/SET (a value is its member's bytes, so the
/// members are decided with the column) and binary.
pub fn scanned_columns(t: &Table) -> Vec<&crate::inventory::model::Column> {
    t.columns.iter().collect()
}

/// Reads one table (every row, or the sample) and decides each of its columns.
async fn scan_table(
    conn: &mut MySqlConnection,
    t: &Table,
    opts: &Options,
    progress: &dyn Progress,
    mysql: bool,
) -> Result<TableScan> {
    let cols = scanned_columns(t);
    let names: Vec<String> = cols.iter().map(|c| c.name.clone()).collect();
    let mut tallies = vec![ColumnTally::default(); cols.len()];
    let started = Instant::now();
    // The server's estimate may be stale (0 right after a bulk load): the bar then just runs long.
    let target_rows = opts
        .sample
        .map_or(t.estimated_rows, |s| s.min(t.estimated_rows.max(1)));
    progress.table_started(&t.schema, &t.name, target_rows);
    let rows_scanned = match key_columns(t) {
        Some(key) => scan_by_key(conn, t, &key, &names, opts, progress, &mut tallies).await?,
        None => scan_keyless(conn, t, &names, opts, progress, &mut tallies).await?,
    };
    progress.table_done(rows_scanned, started.elapsed());
    Ok(table_scan(t, &cols, &tallies, mysql, rows_scanned))
}

/// Tallies the table in key order, batch by batch (a sample spread out); returns the rows.
async fn scan_by_key(
    conn: &mut MySqlConnection,
    t: &Table,
    key: &[KeyColumn],
    names: &[String],
    opts: &Options,
    progress: &dyn Progress,
    tallies: &mut [ColumnTally],
) -> Result<u64> {
    let mut rows_scanned = 0u64;
    let mut last: Option<Vec<Vec<u8>>> = None;
    let chunk = opts.batch_size.max(1);
    // In sample mode, read `chunk` rows, then jump ahead so the sample spans the table.
    let jumps = opts.sample.map(|s| {
        let chunks = s.div_ceil(chunk as u64).max(1);
        t.estimated_rows.saturating_sub(s) / chunks
    });
    loop {
        let want = match opts.sample {
            Some(s) => (s.saturating_sub(rows_scanned)).min(chunk as u64) as usize,
            None => chunk,
        };
        if want == 0 {
            break;
        }
        let (sql, binds) =
            keyset::select_batch(&t.schema, &t.name, key, names, last.is_some(), want);
        let rows = bind_key(sqlx::query(&sql), &binds, last.as_ref())
            .fetch_all(&mut *conn)
            .await
            .with_context(|| format!("scanning {}", quote::table(&t.schema, &t.name)))?;
        crate::db::packet::no_value_cut(conn, &t.name).await?;
        if rows.is_empty() {
            break;
        }
        let n = rows.len();
        last = Some(tally_rows(&rows, key.len(), tallies)?);
        rows_scanned += n as u64;
        progress.rows_read(n as u64);
        if n < want {
            break;
        }
        if let Some(skip) = jumps.filter(|s| *s > 0) {
            let (sql, binds) =
                keyset::select_key_at_offset(&t.schema, &t.name, key, true, skip - 1);
            let row = bind_key(sqlx::query(&sql), &binds, last.as_ref())
                .fetch_optional(&mut *conn)
                .await?;
            match row {
                Some(r) => last = Some(read_key(&r, key.len())?),
                None => break,
            }
        }
        if !opts.pause.is_zero() {
            tokio::time::sleep(opts.pause).await;
        }
    }
    Ok(rows_scanned)
}

/// Tallies a table without a key in one streamed pass; returns the rows read.
async fn scan_keyless(
    conn: &mut MySqlConnection,
    t: &Table,
    names: &[String],
    opts: &Options,
    progress: &dyn Progress,
    tallies: &mut [ColumnTally],
) -> Result<u64> {
    let mut rows_scanned = 0u64;
    let cols_sql: Vec<String> = names.iter().map(|n| keyset::raw(n)).collect();
    let limit = opts
        .sample
        .map(|s| format!(" LIMIT {s}"))
        .unwrap_or_default();
    let sql = format!(
        "SELECT {} FROM {}{limit}",
        cols_sql.join(", "),
        quote::table(&t.schema, &t.name)
    );
    let mut stream = sqlx::query(&sql).fetch(&mut *conn);
    let mut batch = Vec::with_capacity(opts.batch_size);
    while let Some(row) = stream.try_next().await? {
        batch.push(row);
        if batch.len() >= opts.batch_size {
            tally_rows(&batch, 0, tallies)?;
            rows_scanned += batch.len() as u64;
            progress.rows_read(batch.len() as u64);
            batch.clear();
        }
    }
    drop(stream);
    crate::db::packet::no_value_cut(conn, &t.name).await?;
    tally_rows(&batch, 0, tallies)?;
    rows_scanned += batch.len() as u64;
    progress.rows_read(batch.len() as u64);
    Ok(rows_scanned)
}

/// The table's scan entry: its columns decided from their tallies, its risks and strategy.
fn table_scan(
    t: &Table,
    cols: &[&Column],
    tallies: &[ColumnTally],
    mysql: bool,
    rows_scanned: u64,
) -> TableScan {
    let mut columns: Vec<ColumnScan> = cols
        .iter()
        .zip(tallies)
        .map(|(c, tally)| target::decide(c, tally, mysql))
        .collect();
    let mut risks: Vec<String> = t
        .risks
        .iter()
        .filter(|r| !r.starts_with("index `"))
        .cloned()
        .collect();
    risks.extend(super::index_risks::index_risks(t, &mut columns, !mysql));
    let strategy = if columns.iter().any(|c| c.strategy == Strategy::Copy) {
        Strategy::Copy
    } else if columns.iter().any(|c| c.strategy == Strategy::InPlace) {
        Strategy::InPlace
    } else {
        Strategy::None
    };
    TableScan {
        schema: t.schema.clone(),
        name: t.name.clone(),
        row_format: t.row_format.clone(),
        engine: Some(t.engine.clone()),
        key: t.recode_key.clone(),
        estimated_rows: t.estimated_rows,
        rows_scanned,
        strategy,
        columns,
        risks,
        triggers: t.triggers.clone(),
        foreign_keys: t.foreign_keys.clone(),
    }
}

fn bind_key<'q>(
    mut q: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
    binds: &[usize],
    last: Option<&Vec<Vec<u8>>>,
) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    if let Some(last) = last {
        for &i in binds {
            q = q.bind(last[i].clone());
        }
    }
    q
}

fn read_key(row: &MySqlRow, n: usize) -> Result<Vec<Vec<u8>>> {
    (0..n)
        .map(|i| row.try_get::<Vec<u8>, _>(i).context("reading a key column"))
        .collect()
}

/// Detects and tallies a batch, column by column (each column's batches so far form its
/// prior); returns the last key.
fn tally_rows(
    rows: &[MySqlRow],
    key_len: usize,
    tallies: &mut [ColumnTally],
) -> Result<Vec<Vec<u8>>> {
    let keys: Vec<Vec<Vec<u8>>> = rows
        .iter()
        .map(|r| read_key(r, key_len))
        .collect::<Result<_>>()?;
    for (ci, tally) in tallies.iter_mut().enumerate() {
        let values: Vec<Option<Vec<u8>>> = rows
            .iter()
            .map(|r| r.try_get::<Option<Vec<u8>>, _>(key_len + ci))
            .collect::<std::result::Result<_, _>>()
            .context("reading a value")?;
        let present: Vec<&[u8]> = values.iter().flatten().map(|v| v.as_slice()).collect();
        let verdicts = detect::detect_column_batch(&present, &mut tally.votes);
        let mut it = verdicts.iter();
        for (row, v) in values.iter().enumerate() {
            match v {
                None => tally.add_null(),
                Some(bytes) => {
                    tally.add(&keys[row], bytes, it.next().expect("one verdict per value"))
                }
            }
        }
    }
    Ok(keys.last().cloned().unwrap_or_default())
}

/// What the cut-over would change in each of the schema's views, routines and events, for
/// `scan` to report: (kind, name, changes or the reason it cannot be recreated).
pub async fn describe_objects(
    conn: &mut MySqlConnection,
    schema: &str,
    reading: &Reading,
) -> Result<Vec<(Kind, String, Result<Vec<String>, String>)>> {
    Ok(crate::inventory::objects::read_objects(conn, schema)
        .await?
        .iter()
        .map(|o| {
            (
                o.kind,
                o.name.clone(),
                crate::recode::objects::changes(o, reading),
            )
        })
        .filter(|(_, _, c)| c.as_ref().map_or(true, |c| !c.is_empty()))
        .collect())
}

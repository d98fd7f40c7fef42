//! In-place recoding of one table: batches by key, compare-and-set writes, backup, quarantine, checkpoint.
//!
//! Locks: each batch is one transaction. Its SELECT is a plain consistent read (no
//! locks); each UPDATE locks one row and only succeeds if the row still holds the
//! bytes we read (compare-and-set). A row the application changed meanwhile is
//! re-read under `FOR UPDATE`, decided again, and never overwritten with a stale
//! recode. Backups, quarantine entries and the checkpoint commit with the batch.

use super::checkpoint::{self, State, BACKUP, QUARANTINE};
use super::keycodec;
use super::pace::{Flow, Pacer};
use super::recode::{self, Action, Source};
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::detect::{self, ColumnPrior, Label};
use anyhow::{Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::{Acquire, MySqlConnection, Row};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// One column to recode.
#[derive(Debug, Clone)]
pub struct ColumnPlan {
    /// Column name.
    pub name: String,
    /// Where its encoding comes from.
    pub source: Source,
    /// Whether the column is binary (values are written as bytes, not text).
    pub binary: bool,
    /// Full column definition to end with (the copy strategy's shadow gets it).
    pub target: String,
}

/// One table to recode in place.
#[derive(Debug, Clone)]
pub struct TablePlan {
    /// Schema.
    pub schema: String,
    /// Table.
    pub table: String,
    /// In place, or by online copy ([`super::copy`]).
    pub strategy: crate::job::model::Strategy,
    /// Paging key.
    pub key: Vec<KeyColumn>,
    /// Columns to recode.
    pub columns: Vec<ColumnPlan>,
    /// What the job says about the table, fingerprinted to spot edits between runs.
    pub fingerprint: String,
    /// First batch size.
    pub batch_size: usize,
    /// Batch time the size is tuned toward.
    pub target_batch_time: Duration,
    /// Pause between batches.
    pub pause: Duration,
    /// Confidence a detected label needs.
    pub threshold: f32,
    /// Copy strategy: wait for `myrecode cutover` before swapping (`cutover: manual`).
    pub manual_cutover: bool,
}

/// How a table's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableOutcome {
    /// Every row done (now or in an earlier run).
    Done,
    /// Stopped on request after a committed batch.
    Interrupted,
    /// The operator ran `myrecode abort`: stopped, and a copy's objects removed.
    Aborted,
}

/// Receives progress (a bar, log lines or nothing).
pub trait Progress {
    /// Rows done so far and the estimate, after each batch.
    fn batch(&self, table: &str, state: &State, estimated: u64, rows_per_sec: f64);
}

/// Runs (or resumes) one table until done or asked to stop.
pub async fn run_table(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    estimated: u64,
    stop: &AtomicBool,
    pacer: &mut Pacer,
    progress: &dyn Progress,
) -> Result<(TableOutcome, State)> {
    let mut state = match checkpoint::load(conn, &plan.schema, job, &plan.table).await? {
        Some(s) if s.fingerprint != plan.fingerprint => anyhow::bail!(
            "the job changed for table '{}' since its run began (checkpoint at {} rows). \
             Fix: restore the job file as it was and run again to finish, or `myrecode rollback` the job and start it anew",
            plan.table,
            s.rows_read
        ),
        Some(s) => s,
        None => {
            let s = State {
                fingerprint: plan.fingerprint.clone(),
                priors: compute_priors(conn, plan).await?,
                ..State::default()
            };
            checkpoint::save(conn, &plan.schema, job, &plan.table, &s).await?;
            s
        }
    };
    if state.done {
        return Ok((TableOutcome::Done, state));
    }
    let priors = parse_priors(&state.priors);
    let names: Vec<String> = plan.columns.iter().map(|c| c.name.clone()).collect();
    let mut size = plan.batch_size.max(1);
    let started = Instant::now();
    let rows_at_start = state.rows_read;
    loop {
        match pacer.between_batches(conn, stop).await? {
            Flow::Go => {}
            Flow::Stop => return Ok((TableOutcome::Interrupted, state)),
            Flow::Abort => return Ok((TableOutcome::Aborted, state)),
        }
        let t0 = Instant::now();
        let mut tx = conn.begin().await?;
        let last = state.last_key.as_deref().and_then(keycodec::unpack);
        let rows = read_batch(&mut tx, plan, &names, last.as_deref(), size, false).await?;
        let n = rows.len();
        let mut next = state.clone();
        apply_batch(&mut tx, job, plan, &priors, &rows, &mut next).await?;
        if let Some(r) = rows.last() {
            next.last_key = Some(keycodec::pack(&read_key(r, plan.key.len())?));
        }
        next.rows_read += n as u64;
        next.done = n < size;
        checkpoint::save(&mut tx, &plan.schema, job, &plan.table, &next).await?;
        tx.commit().await.context("committing a batch")?;
        state = next;
        let rate =
            (state.rows_read - rows_at_start) as f64 / started.elapsed().as_secs_f64().max(1e-3);
        progress.batch(&plan.table, &state, estimated, rate);
        if state.done {
            return Ok((TableOutcome::Done, state));
        }
        size = tune(size, t0.elapsed(), plan.target_batch_time);
        if !plan.pause.is_zero() {
            tokio::time::sleep(plan.pause).await;
        }
    }
}

/// Reads the next `size` rows after key `after` (from the start without one) in key order,
/// as `key…, columns…` raw bytes; `locking` takes shared row locks until the transaction ends.
pub(crate) async fn read_batch(
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
pub(crate) async fn read_batch_of(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    exprs: &[String],
    after: Option<&[Vec<u8>]>,
    size: usize,
    locking: bool,
) -> Result<Vec<MySqlRow>> {
    let (sql, binds) = keyset::select_batch_of(
        &plan.schema,
        &plan.table,
        &plan.key,
        exprs,
        after.is_some(),
        size,
    );
    let sql = if locking {
        format!("{sql} LOCK IN SHARE MODE")
    } else {
        sql
    };
    let mut q = sqlx::query(&sql);
    if let Some(after) = after {
        for &i in &binds {
            q = q.bind(after[i].clone());
        }
    }
    q.fetch_all(conn)
        .await
        .with_context(|| format!("reading a batch of {}", plan.table))
}

/// Next batch size: steer toward the target time, at most doubling or halving per step.
pub fn tune(size: usize, took: Duration, target: Duration) -> usize {
    let ratio = target.as_secs_f64() / took.as_secs_f64().max(1e-4);
    ((size as f64 * ratio.clamp(0.5, 2.0)) as usize).clamp(10, 20_000)
}

fn read_key(row: &MySqlRow, n: usize) -> Result<Vec<Vec<u8>>> {
    (0..n)
        .map(|i| row.try_get::<Vec<u8>, _>(i).context("reading a key column"))
        .collect()
}

struct Backup {
    col: String,
    key: Vec<u8>,
    label: String,
    old: Vec<u8>,
    new: Vec<u8>,
}

/// An undecidable value, for the quarantine table.
pub(crate) struct Quarantined {
    /// Column.
    pub col: String,
    /// Packed key of its row.
    pub key: Vec<u8>,
    /// The stored bytes, left as they are.
    pub value: Vec<u8>,
    /// Why no reading was safe.
    pub reason: String,
    /// The best reading that was not good enough.
    pub runner_up: Option<String>,
}

async fn apply_batch(
    tx: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    priors: &BTreeMap<String, ColumnPrior>,
    rows: &[MySqlRow],
    state: &mut State,
) -> Result<()> {
    let target = quote::table(&plan.schema, &plan.table);
    let by_key = keyset::equals(&plan.key);
    let mut backups = Vec::new();
    let mut quarantined = Vec::new();
    for row in rows {
        let key = read_key(row, plan.key.len())?;
        let packed = keycodec::pack(&key);
        for (ci, col) in plan.columns.iter().enumerate() {
            let Some(stored) = row.try_get::<Option<Vec<u8>>, _>(plan.key.len() + ci)? else {
                continue;
            };
            let decide = |bytes: &[u8]| {
                recode::decide(&col.source, priors.get(&col.name), plan.threshold, bytes)
            };
            let mut current = stored;
            let mut action = decide(&current);
            let mut conflicted = false;
            loop {
                match action {
                    Action::Keep => break,
                    Action::Quarantine { reason, runner_up } => {
                        quarantined.push(Quarantined {
                            col: col.name.clone(),
                            key: packed.clone(),
                            value: current,
                            reason,
                            runner_up,
                        });
                        break;
                    }
                    Action::Rewrite { new, label } => {
                        let sql = format!(
                            "UPDATE {target} SET {c} = ? WHERE {by_key} AND CAST({c} AS BINARY) = ?",
                            c = quote::ident(&col.name)
                        );
                        let mut q = sqlx::query(&sql);
                        q = if col.binary {
                            q.bind(new.clone())
                        } else {
                            q.bind(
                                String::from_utf8(new.clone()).expect("recoded values are UTF-8"),
                            )
                        };
                        for k in &key {
                            q = q.bind(k.clone());
                        }
                        let affected = q
                            .bind(current.clone())
                            .execute(&mut *tx)
                            .await?
                            .rows_affected();
                        if affected == 1 {
                            backups.push(Backup {
                                col: col.name.clone(),
                                key: packed.clone(),
                                label: label.to_string(),
                                old: current,
                                new,
                            });
                            break;
                        }
                        if conflicted {
                            anyhow::bail!(
                                "row {:?} of {} changed twice under a row lock",
                                key,
                                plan.table
                            );
                        }
                        // The application changed the row since our read: read it again, locked, and decide afresh.
                        conflicted = true;
                        state.rows_conflicted += 1;
                        let sql = format!(
                            "SELECT CAST({c} AS BINARY) FROM {target} WHERE {by_key} FOR UPDATE",
                            c = quote::ident(&col.name)
                        );
                        let mut q = sqlx::query(&sql);
                        for k in &key {
                            q = q.bind(k.clone());
                        }
                        match q.fetch_optional(&mut *tx).await? {
                            Some(r) => match r.try_get::<Option<Vec<u8>>, _>(0)? {
                                Some(v) => {
                                    current = v;
                                    action = decide(&current);
                                }
                                None => break,
                            },
                            None => break,
                        }
                    }
                }
            }
        }
    }
    state.rows_changed += backups.len() as u64;
    state.rows_quarantined += quarantined.len() as u64;
    for chunk in backups.chunks(200) {
        let values = vec!["(?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        let sql = format!(
            "INSERT INTO {} (job, tbl, col, key_bytes, label, old_value, new_value) VALUES {values}",
            quote::table(&plan.schema, BACKUP)
        );
        let mut q = sqlx::query(&sql);
        for b in chunk {
            q = q
                .bind(job)
                .bind(&plan.table)
                .bind(&b.col)
                .bind(&b.key)
                .bind(&b.label)
                .bind(&b.old)
                .bind(&b.new);
        }
        q.execute(&mut *tx)
            .await
            .context("saving original bytes to the backup table")?;
    }
    save_quarantine(tx, &plan.schema, job, &plan.table, &quarantined).await?;
    Ok(())
}

/// Lists undecidable values in the quarantine table (once per job, table, column and key);
/// returns how many were new.
pub(crate) async fn save_quarantine(
    tx: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
    quarantined: &[Quarantined],
) -> Result<u64> {
    let mut added = 0;
    for chunk in quarantined.chunks(200) {
        let values = vec!["(?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        let sql = format!(
            "INSERT IGNORE INTO {} (job, tbl, col, key_bytes, value, reason, runner_up) VALUES {values}",
            quote::table(schema, QUARANTINE)
        );
        let mut q = sqlx::query(&sql);
        for r in chunk {
            q = q
                .bind(job)
                .bind(table)
                .bind(&r.col)
                .bind(&r.key)
                .bind(&r.value)
                .bind(&r.reason)
                .bind(&r.runner_up);
        }
        added += q
            .execute(&mut *tx)
            .await
            .context("listing undecidable values in the quarantine table")?
            .rows_affected();
    }
    Ok(added)
}

/// Rows sampled at the start of a job to form each auto column's prior.
pub const PRIOR_SAMPLE: usize = 2000;

/// Forms each auto column's prior from the first rows, once per job, so every resume decides alike.
pub(crate) async fn compute_priors(conn: &mut MySqlConnection, plan: &TablePlan) -> Result<String> {
    let names: Vec<String> = plan.columns.iter().map(|c| c.name.clone()).collect();
    let (sql, _) = keyset::select_batch(
        &plan.schema,
        &plan.table,
        &plan.key,
        &names,
        false,
        PRIOR_SAMPLE,
    );
    let rows = sqlx::query(&sql)
        .fetch_all(&mut *conn)
        .await
        .context("sampling rows for the column priors")?;
    let mut out: BTreeMap<String, Vec<(String, f32)>> = BTreeMap::new();
    for (ci, col) in plan.columns.iter().enumerate() {
        if col.source != Source::Auto {
            continue;
        }
        let values: Vec<Vec<u8>> = rows
            .iter()
            .filter_map(|r| {
                r.try_get::<Option<Vec<u8>>, _>(plan.key.len() + ci)
                    .ok()
                    .flatten()
            })
            .collect();
        let slices: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        let mut counts: BTreeMap<String, f32> = BTreeMap::new();
        for v in detect::detect_column(&slices) {
            if matches!(
                v.label,
                Label::Legacy(_) | Label::Mojibake { .. } | Label::Utf8
            ) {
                *counts.entry(v.label.to_string()).or_default() += 1.0;
            }
        }
        out.insert(col.name.clone(), counts.into_iter().collect());
    }
    Ok(serde_json::to_string(&out).expect("priors serialise"))
}

/// Parses the priors saved in the checkpoint.
pub(crate) fn parse_priors(json: &str) -> BTreeMap<String, ColumnPrior> {
    let raw: BTreeMap<String, Vec<(String, f32)>> = serde_json::from_str(json).unwrap_or_default();
    raw.into_iter()
        .map(|(col, counts)| {
            let labeled: Vec<(Label, f32)> = counts
                .into_iter()
                .filter_map(|(l, c)| l.parse::<Label>().ok().map(|l| (l, c)))
                .collect();
            (col, ColumnPrior::from_counts(&labeled))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_steers_toward_target_within_bounds() {
        assert_eq!(
            tune(1000, Duration::from_millis(250), Duration::from_millis(500)),
            2000
        );
        assert_eq!(
            tune(1000, Duration::from_secs(10), Duration::from_millis(500)),
            500
        );
        assert_eq!(
            tune(10, Duration::from_secs(10), Duration::from_millis(500)),
            10
        );
    }
}

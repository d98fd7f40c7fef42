//! In-place recoding of one table: batches by key, compare-and-set writes, backup, quarantine, checkpoint.
//!
//! Locks: each batch is one transaction. Its SELECT is a plain consistent read (no
//! locks); each UPDATE locks one row and only succeeds if the row still holds the
//! bytes we read (compare-and-set). A row the application changed meanwhile is
//! re-read under `FOR UPDATE`, decided again, and never overwritten with a stale
//! recode. Backups, quarantine entries and the checkpoint commit with the batch.

use super::batch::{self, Batches, Next};
use super::checkpoint::{self, State, BACKUP};
use super::error::EngineError;
use super::events::Events;
use super::keycodec;
use super::pace::Pacer;
use super::plan::{TableOutcome, TablePlan};
use super::priors;
use super::quarantine::{self, Quarantined};
use super::read::{read_batch, read_key};
use super::recode::{self, Action};
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::detect::ColumnPrior;
use anyhow::{Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::{Acquire, MySqlConnection, Row};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

/// Runs (or resumes) one table until done or asked to stop.
pub async fn run_table(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    estimated: u64,
    stop: &AtomicBool,
    pacer: &mut Pacer,
    events: &dyn Events,
) -> Result<(TableOutcome, State)> {
    let state = match checkpoint::load(conn, &plan.schema, job, &plan.table).await? {
        Some(s) if s.fingerprint != plan.fingerprint => {
            return Err(EngineError::JobEdited {
                table: plan.table.clone(),
                rows: s.rows_read,
                undo: "`myrecode rollback` the job and start it anew",
            }
            .into())
        }
        Some(s) => s,
        None => {
            let s = State {
                fingerprint: plan.fingerprint.clone(),
                priors: priors::compute(conn, plan).await?,
                ..State::default()
            };
            checkpoint::save(conn, &plan.schema, job, &plan.table, &s).await?;
            s
        }
    };
    if state.done {
        return Ok((TableOutcome::Done, state));
    }
    let mut work = InPlace {
        job,
        plan,
        priors: priors::parse(&state.priors),
        names: plan.columns.iter().map(|c| c.name.clone()).collect(),
        state,
    };
    let outcome = batch::run(conn, &mut work, plan, estimated, stop, pacer, events).await?;
    Ok((outcome, work.state))
}

/// The in-place strategy's batches over one table.
struct InPlace<'a> {
    job: &'a str,
    plan: &'a TablePlan,
    priors: BTreeMap<String, ColumnPrior>,
    names: Vec<String>,
    state: State,
}

impl Batches for InPlace<'_> {
    fn state(&self) -> &State {
        &self.state
    }

    /// One transaction: read a batch (no locks), compare-and-set each changed value, back
    /// up the originals, list the undecidable, advance the checkpoint.
    async fn batch(&mut self, conn: &mut MySqlConnection, size: usize) -> Result<Next> {
        let plan = self.plan;
        let mut tx = conn.begin().await?;
        let last = self.state.last_key.as_deref().and_then(keycodec::unpack);
        let rows = read_batch(&mut tx, plan, &self.names, last.as_deref(), size, false).await?;
        let n = rows.len();
        let mut next = self.state.clone();
        apply_batch(&mut tx, self.job, plan, &self.priors, &rows, &mut next).await?;
        if let Some(r) = rows.last() {
            next.last_key = Some(keycodec::pack(&read_key(r, plan.key.len())?));
        }
        next.rows_read += n as u64;
        next.done = n < size;
        checkpoint::save(&mut tx, &plan.schema, self.job, &plan.table, &next).await?;
        tx.commit().await.context("committing a batch")?;
        self.state = next;
        Ok(if self.state.done {
            Next::Done
        } else {
            Next::More { pause: true }
        })
    }
}

/// The compare-and-set write of one value: `?` new value, the key's `?`s, `?` the bytes read.
pub fn update_if_unchanged_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    column: &str,
) -> String {
    format!(
        "UPDATE {} SET {c} = ? WHERE {} AND CAST({c} AS BINARY) = ?",
        quote::table(schema, table),
        keyset::equals(key),
        c = quote::ident(column)
    )
}

/// Re-reads one value of a row the application changed since the batch read it, locked.
pub fn reread_locked_sql(schema: &str, table: &str, key: &[KeyColumn], column: &str) -> String {
    format!(
        "SELECT CAST({} AS BINARY) FROM {} WHERE {} FOR UPDATE",
        quote::ident(column),
        quote::table(schema, table),
        keyset::equals(key)
    )
}

/// Saves `rows` originals in the backup table, seven `?`s per row.
pub fn backup_insert_sql(schema: &str, rows: usize) -> String {
    format!(
        "INSERT INTO {} (job, tbl, col, key_bytes, label, old_value, new_value) VALUES {}",
        quote::table(schema, BACKUP),
        vec!["(?, ?, ?, ?, ?, ?, ?)"; rows].join(", ")
    )
}

struct Backup {
    col: String,
    key: Vec<u8>,
    label: String,
    old: Vec<u8>,
    new: Vec<u8>,
}

async fn apply_batch(
    tx: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    priors: &BTreeMap<String, ColumnPrior>,
    rows: &[MySqlRow],
    state: &mut State,
) -> Result<()> {
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
                        let sql = update_if_unchanged_sql(
                            &plan.schema,
                            &plan.table,
                            &plan.key,
                            &col.name,
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
                        let sql =
                            reread_locked_sql(&plan.schema, &plan.table, &plan.key, &col.name);
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
        let sql = backup_insert_sql(&plan.schema, chunk.len());
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
    quarantine::save(tx, &plan.schema, job, &plan.table, &quarantined).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_and_set_statements_quote_odd_identifiers() {
        let key = [KeyColumn::plain("id`x"), KeyColumn::plain("k")];
        assert_eq!(
            update_if_unchanged_sql("s`1", "t", &key, "na me"),
            "UPDATE `s``1`.`t` SET `na me` = ? WHERE `id``x` = ? AND `k` = ? AND CAST(`na me` AS BINARY) = ?"
        );
        assert_eq!(
            reread_locked_sql("s", "tы", &key[..1], "c"),
            "SELECT CAST(`c` AS BINARY) FROM `s`.`tы` WHERE `id``x` = ? FOR UPDATE"
        );
        assert_eq!(
            backup_insert_sql("s", 2),
            "INSERT INTO `s`.`_myrecode_backup` (job, tbl, col, key_bytes, label, old_value, new_value) \
             VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?)"
        );
    }
}

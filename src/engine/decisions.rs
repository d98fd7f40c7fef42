//! Applies the DBA's reviewed decisions to a job's quarantined values: the value's own
//! decision or its column's, each written compare-and-set with its original in the backup
//! table (so `verify` proves it and `rollback` undoes it), and only where the reading
//! round-trips losslessly ([`crate::review::decisions::Decisions::apply`]). A copied table's
//! are written into its shadow before its cut-over ([`super::copy::undecided`]).

use super::copy::undecided;
use super::inplace::{backup_insert_sql, update_if_unchanged_sql};
use super::table_plan::TablePlan;
use crate::bookkeeping::checkpoint::QUARANTINE;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::names::names;
use crate::bookkeeping::quarantine::quarantined;
use crate::db::quote;
use crate::job::model::Strategy;
use crate::review::decisions::{show_key, Applied, Decisions};
use anyhow::{Context, Result};
use sqlx::{Connection, MySqlConnection};

pub use crate::engine::copy::undecided::DecisionOutcome;

/// Applies `decisions` to one table's quarantined values (writes only when `execute`),
/// in one transaction.
pub async fn apply(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    job: &str,
    decisions: &Decisions,
    execute: bool,
) -> Result<DecisionOutcome> {
    let mut out = DecisionOutcome::default();
    let rows = quarantined(conn, &plan.schema, job, &plan.table).await?;
    if rows.is_empty() {
        return Ok(out);
    }
    if plan.strategy == Strategy::Copy {
        return copied(conn, plan, job, decisions, (execute, rows.len())).await;
    }
    let drop_sql = format!(
        "DELETE FROM {} WHERE id = ?",
        quote::table(&plan.schema, QUARANTINE)
    );
    let mut tx = conn
        .begin()
        .await
        .context("starting the decisions' transaction")?;
    for (id, col, packed, stored) in rows {
        let Some(key) = keycodec::unpack(&packed) else {
            out.refused.push(format!(
                "{}.{col}: quarantine row {id} holds no key myrecode wrote; left as it is",
                plan.table
            ));
            continue;
        };
        let binary = plan.columns.iter().any(|c| c.name == col && c.binary);
        match decisions.apply(&plan.table, &col, &key, &stored) {
            Applied::None => out.undecided += 1,
            Applied::Refused(why) => out.refused.push(why),
            Applied::Keep => {
                out.kept += 1;
                if execute {
                    sqlx::query(&drop_sql).bind(id).execute(&mut *tx).await?;
                }
            }
            Applied::Rewrite(new, label) => {
                if !execute {
                    out.rewritten += 1;
                    continue;
                }
                let sql = update_if_unchanged_sql(&plan.schema, &plan.table, &plan.key, &col);
                let mut q = sqlx::query(&sql);
                q = if binary {
                    q.bind(new.clone())
                } else {
                    q.bind(String::from_utf8(new.clone()).expect("recoded values are UTF-8"))
                };
                for k in &key {
                    q = q.bind(k.clone());
                }
                let affected = match q.bind(stored.clone()).execute(&mut *tx).await {
                    Ok(r) => r.rows_affected(),
                    Err(e) => match undecided::too_long(&plan.table, &col, &key, &e) {
                        // The statement alone was undone: the others of the transaction stand.
                        Some(why) => {
                            out.refused.push(why);
                            continue;
                        }
                        None => return Err(e.into()),
                    },
                };
                if affected != 1 {
                    out.refused.push(format!(
                        "{}.{col} key {}: the row changed or went since it was quarantined; \
                         decision not applied. Fix: run `myrecode review` again",
                        plan.table,
                        show_key(&key)
                    ));
                    continue;
                }
                sqlx::query(&backup_insert_sql(&plan.schema, 1))
                    .bind(job)
                    .bind(&plan.table)
                    .bind(&col)
                    .bind(&packed)
                    .bind(label.to_string())
                    .bind(&stored)
                    .bind(&new)
                    .execute(&mut *tx)
                    .await
                    .context("saving an original to the backup table")?;
                sqlx::query(&drop_sql).bind(id).execute(&mut *tx).await?;
                out.rewritten += 1;
            }
        }
    }
    tx.commit().await.context("committing the decisions")?;
    Ok(out)
}

/// A copied table's decisions: into its shadow before the cut-over, each remembered for the
/// replay ([`undecided::settle`]); a value no decision covers gets the column's fallback.
async fn copied(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    job: &str,
    decisions: &Decisions,
    (execute, listed): (bool, usize),
) -> Result<DecisionOutcome> {
    let fallback = undecided::by_fallback(plan);
    let resolve = |t: &str, c: &str, k: &[Vec<u8>], v: &[u8]| match decisions.apply(t, c, k, v) {
        Applied::None => fallback(t, c, k, v),
        a => a,
    };
    let n = names(&plan.table);
    if execute {
        // Tables made by an earlier version lack the one decisions are remembered in.
        crate::bookkeeping::checkpoint::ensure(conn, &plan.schema).await?;
    }
    if let Some(out) = undecided::settle(conn, (plan, &n, job), &resolve, execute).await? {
        return Ok(out);
    }
    // Swapped in before they were decided (by an earlier version): from the kept original.
    if let Some(out) = undecided::settle_swapped(conn, (plan, &n, job), &resolve, execute).await? {
        return Ok(out);
    }
    let mut out = DecisionOutcome {
        undecided: listed as u64,
        ..DecisionOutcome::default()
    };
    if decisions
        .named_columns()
        .iter()
        .any(|(t, _)| *t == plan.table)
    {
        out.refused.push(format!(
            "table '{}' was swapped in before its undecided values were decided, and its kept \
             original {} is gone (`cleanup`) or it has no key: their stored bytes are not here \
             to decide from. Fix: decide them by hand from a backup, or leave them as they are",
            plan.table, n.old
        ));
    }
    Ok(out)
}

//! Applies the DBA's reviewed decisions to a job's quarantined values: the value's own
//! decision or its column's, each written compare-and-set with its original in the backup
//! table (so `verify` proves it and `rollback` undoes it), and only where the reading
//! round-trips losslessly ([`crate::review::decisions::Decisions::apply`]).

use super::inplace::{backup_insert_sql, update_if_unchanged_sql};
use super::table_plan::TablePlan;
use crate::bookkeeping::checkpoint::QUARANTINE;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::quarantine::quarantined;
use crate::db::quote;
use crate::job::model::Strategy;
use crate::review::decisions::{show_key, Applied, Decisions};
use anyhow::{Context, Result};
use sqlx::{Connection, MySqlConnection};

/// What applying the decisions did to one table.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DecisionOutcome {
    /// Values rewritten as decided.
    pub rewritten: u64,
    /// Values the DBA chose to keep as stored (no longer listed).
    pub kept: u64,
    /// Quarantined values no decision covers (still listed).
    pub undecided: u64,
    /// Decisions refused, one sentence each naming the value, why and the fix.
    pub refused: Vec<String>,
}

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
        let named = decisions
            .named_columns()
            .iter()
            .any(|(t, _)| *t == plan.table);
        if named {
            out.refused.push(format!(
                "table '{}' was copied: decisions apply to in-place tables only, its undecided \
                 values keep the reading the copy gave them. Fix: recode it with `strategy: in-place`, \
                 or leave its values as they are",
                plan.table
            ));
        }
        out.undecided = rows.len() as u64;
        return Ok(out);
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
                let affected = q
                    .bind(stored.clone())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
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

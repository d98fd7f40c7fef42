//! The shadow's definition on the server: the facts [`shadow_sql`] needs, read from the
//! catalog, and the trial that builds it under a scratch name for `plan --check` and the
//! rehearsal, so what the server refuses stops there, before the first write.

use super::own_triggers_sql::{as_sent, Recode};
use super::shadow_sql::{self, GeneratedColumn, JobColumn, TableFacts, GENERATED_SQL, TABLE_SQL};
use super::sql::{create_like_sql, drop_table_sql};
use crate::db::{errno, quote};
use crate::detect::{ColumnPrior, Label};
use crate::engine::error::EngineError;
use crate::engine::priors;
use crate::engine::table_plan::TablePlan;
use crate::recode::value::Source;
use crate::scan::target::utf8mb4_collation;
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::BTreeMap;

/// Whether the server is MariaDB (its catalog differs from MySQL's here and there).
pub async fn is_mariadb(conn: &mut MySqlConnection) -> Result<bool> {
    let v: String = sqlx::query_scalar("SELECT VERSION()")
        .fetch_one(conn)
        .await?;
    Ok(v.contains("MariaDB"))
}

/// The table's comment, charset, generated columns and CHECK constraints.
pub async fn table_facts(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<TableFacts> {
    let t = sqlx::query(TABLE_SQL)
        .bind(schema)
        .bind(table)
        .fetch_one(&mut *conn)
        .await
        .with_context(|| format!("reading the table {}", quote::table(schema, table)))?;
    let generated: Vec<GeneratedColumn> = sqlx::query(GENERATED_SQL)
        .bind(schema)
        .bind(table)
        .fetch_all(&mut *conn)
        .await
        .context("reading the table's generated columns")?
        .iter()
        .map(|r| {
            let extra: String = r.get(5);
            GeneratedColumn {
                name: r.get(0),
                column_type: r.get(1),
                charset: r.get(2),
                nullable: r.get::<i64, _>(3) != 0,
                expression: r.get(4),
                stored: extra.to_ascii_uppercase().contains("STORED"),
                comment: r.get(6),
                invisible: extra.to_ascii_uppercase().contains("INVISIBLE"),
            }
        })
        .collect();
    let create: String = sqlx::query(&super::cutover_sql::show_create_sql(schema, table))
        .fetch_one(&mut *conn)
        .await
        .context("reading the table's definition")?
        .try_get(1)?;
    let (expressions, checks) = shadow_sql::expressions_of(&create).map_err(|e| {
        anyhow!(
            "cannot read the definition of {}: {e}",
            quote::table(schema, table)
        )
    })?;
    let generated = generated
        .into_iter()
        .map(|mut g: GeneratedColumn| {
            if let Some((_, e)) = expressions.iter().find(|(n, _)| *n == g.name) {
                g.expression = e.clone();
            }
            g
        })
        .collect();
    Ok(TableFacts {
        comment: t.get::<Option<String>, _>(0).unwrap_or_default(),
        charset: t.get(1),
        generated,
        checks,
    })
}

/// The labels a copied table's texts are read with: each column's fixed source, else the
/// label its prior holds most of, in the plan's order.
pub fn labels(plan: &TablePlan, priors: &BTreeMap<String, ColumnPrior>) -> Vec<Label> {
    let mut out = Vec::new();
    for c in &plan.columns {
        let l = match &c.source {
            Source::Fixed(l) => Some(*l),
            Source::Auto => priors
                .get(&c.name)
                .and_then(|p| p.dominant())
                .map(|(l, _)| l),
        };
        if let Some(l) = l.filter(|l| l.needs_recode() && !out.contains(l)) {
            out.push(l);
        }
    }
    out
}

/// The shadow's `ALTER TABLE` for `plan` (see [`shadow_sql`]), its texts read with `labels`.
pub async fn alter_sql(
    conn: &mut MySqlConnection,
    plan: &TablePlan,
    shadow: &str,
    labels: &[Label],
) -> Result<String> {
    let facts = table_facts(conn, &plan.schema, &plan.table).await?;
    let mariadb = is_mariadb(conn).await?;
    let targets: Vec<&str> = plan.columns.iter().map(|c| c.target.as_str()).collect();
    let collation = shadow_sql::table_collation(&targets, utf8mb4_collation(None, !mariadb));
    let columns: Vec<JobColumn> = plan
        .columns
        .iter()
        .map(|c| JobColumn {
            name: &c.name,
            target: &c.target,
        })
        .collect();
    shadow_sql::shadow_alter_sql(&plan.schema, shadow, &facts, &columns, &collation, labels)
        .map_err(|e| {
            anyhow!(
                "table {}: {e}. Nothing was changed. Fix: give the job's columns of this table a fixed `source:` (the label their values have), so its texts are read as they are",
                quote::table(&plan.schema, &plan.table)
            )
        })
}

/// Every copied table's shadow tried ([`trial`]), then, when every one passed, the schema's
/// views, routines and events ([`super::objects::trial_objects`]): each refusal with the
/// table it concerns (`None`: the schema's objects); none when all would be carried over.
pub async fn trial_job(
    conn: &mut MySqlConnection,
    plans: &[TablePlan],
) -> Vec<(Option<String>, anyhow::Error)> {
    let mut labels: Vec<Label> = Vec::new();
    let mut refused = Vec::new();
    let copies: Vec<&TablePlan> = plans
        .iter()
        .filter(|p| p.strategy == crate::job::model::Strategy::Copy)
        .collect();
    for p in &copies {
        match trial(conn, p).await {
            Ok(read) => {
                for l in read {
                    if !labels.contains(&l) {
                        labels.push(l);
                    }
                }
            }
            Err(e) => refused.push((Some(p.table.clone()), e)),
        }
    }
    let Some(first) = copies.first().filter(|_| refused.is_empty()) else {
        return refused;
    };
    let reading = crate::recode::objects::Reading {
        labels,
        collation: shadow_sql::plans_collation(copies.iter().copied()),
    };
    if let Err(e) = super::objects::trial_objects(conn, &first.schema, &reading).await {
        refused.push((None, e));
    }
    refused
}

/// Builds the shadow's definition under a scratch name and drops it: what the server
/// refuses (a CHECK the recoded values fail, an index too long, an expression) stops the
/// rehearsal or `plan --check` here with the server's reason, before anything is written.
/// Returns the labels the table's texts are read with.
pub async fn trial(conn: &mut MySqlConnection, plan: &TablePlan) -> Result<Vec<Label>> {
    let scratch = format!("{}_myrecode_try", plan.table);
    let priors = crate::bookkeeping::priors::parse(&priors::compute(conn, plan).await?);
    let labels = labels(plan, &priors);
    let alter = alter_sql(conn, plan, &scratch, &labels).await?;
    // The table's own triggers, as the cut-over will create them on the shadow.
    let recode = Recode {
        labels: labels.clone(),
        collation: shadow_sql::plans_collation([plan]),
    };
    for t in super::own_triggers::own_triggers(conn, &plan.schema, &plan.table).await? {
        as_sent(&t, Some(&recode)).map_err(|e| {
            anyhow!(
                "table {}: {e}. Nothing was changed. Fix: give the job's columns of this table a fixed `source:`, or recreate the trigger with the text it should hold before the job",
                quote::table(&plan.schema, &plan.table)
            )
        })?;
    }
    conn.execute(drop_table_sql(&plan.schema, &scratch).as_str())
        .await?;
    conn.execute(create_like_sql(&plan.schema, &plan.table, &scratch).as_str())
        .await
        .with_context(|| format!("creating a scratch copy of {}'s definition", plan.table))?;
    let tried = conn.execute(alter.as_str()).await;
    conn.execute(drop_table_sql(&plan.schema, &scratch).as_str())
        .await?;
    tried.map(|_| labels).map_err(|e| {
        if errno::of(&e).is_some_and(|n| errno::TOO_LARGE.contains(&n)) {
            return EngineError::TooLarge {
                table: plan.table.clone(),
                quoted: quote::table(&plan.schema, &plan.table),
                detail: e.to_string(),
            }
            .into();
        }
        anyhow!(
            "the new definition of table {} is refused by the server: {e}. Nothing was changed. Fix: correct the `target:` of the job's columns as the server's reason says (`myrecode plan` writes targets that keep the columns' definitions), or change the table first",
            quote::table(&plan.schema, &plan.table)
        )
    })
}

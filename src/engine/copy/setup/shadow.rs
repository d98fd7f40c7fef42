//! The shadow's definition on the server: the facts [`shadow_sql`] needs, read from the
//! catalog, and the trial that builds it under a scratch name for `plan --check` and the
//! rehearsal, so what the server refuses stops there, before the first write.

use crate::db::quote;
use crate::detect::{ColumnPrior, Label};
use crate::engine::copy::catalog::is_mariadb;
use crate::engine::copy::setup::shadow_sql::{
    self, GeneratedColumn, JobColumn, TableFacts, GENERATED_SQL, TABLE_SQL,
};
use crate::engine::table_plan::TablePlan;
use crate::recode::value::Source;
use crate::scan::target::utf8mb4_collation;
use anyhow::{anyhow, Context, Result};
use sqlx::{MySqlConnection, Row};
use std::collections::BTreeMap;

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
    let create: String = sqlx::query(&crate::engine::copy::catalog::show_create_sql(
        schema, table,
    ))
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

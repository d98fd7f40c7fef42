//! The trial of a job's copies before anything is written (the rehearsal, `plan --check`):
//! each shadow's definition built under a scratch name, each table's own triggers recoded as
//! the cut-over will create them, then the schema's views, routines and events.

use crate::db::{errno, quote};
use crate::detect::Label;
use crate::engine::copy::cutover::carried::own_triggers_sql::{as_sent, Recode};
use crate::engine::copy::setup::shadow::{alter_sql, labels};
use crate::engine::copy::setup::shadow_sql::{self};
use crate::engine::copy::setup::sql::{create_like_sql, drop_table_sql};
use crate::engine::error::EngineError;
use crate::engine::priors;
use crate::engine::table_plan::TablePlan;
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection};

/// Every copied table's shadow tried (`trial`), then, when every one passed, the schema's
/// views, routines and events ([`crate::engine::copy::cutover::carried::objects::trial_objects`]): each refusal with the
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
    if let Err(e) =
        crate::engine::copy::cutover::carried::objects::trial_objects(conn, &first.schema, &reading)
            .await
    {
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
    for t in crate::engine::copy::catalog::own_triggers(conn, &plan.schema, &plan.table).await? {
        as_sent(&t, Some(&recode)).map_err(|e| {
            anyhow!(
                "table {}: {e}. Nothing was changed. Fix: give the job's columns of this table a fixed `source:`, or recreate the trigger with the text it should hold before the job",
                quote::table(&plan.schema, &plan.table)
            )
        })?;
    }
    // The scratch name is never taken from the user: a table there is left alone, refused.
    if crate::engine::copy::catalog::table_exists(conn, &plan.schema, &scratch).await? {
        return Err(EngineError::NotOurs {
            kind: "table",
            name: quote::table(&plan.schema, &scratch),
            purpose: format!(
                "myrecode needs the name to try the new definition of '{}'; a rehearsal or `plan --check` killed mid-way may have left it, then drop it",
                plan.table
            ),
            owner: format!("table '{}'", plan.table),
        }
        .into());
    }
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

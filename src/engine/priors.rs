//! Column priors: what a column's first rows are, formed once per job and kept in its
//! checkpoint, so a short value is read in the light of its column and every resume decides alike.

use super::table_plan::TablePlan;
use crate::db::keyset;
use crate::detect;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};
use std::collections::BTreeMap;

/// Rows sampled at the start of a job to form each column's prior.
pub const PRIOR_SAMPLE: usize = 2000;

/// Forms each column's prior from the first rows, once per job, so every resume decides alike
/// (a fixed column's too: its values that are also valid UTF-8 are read under it).
pub async fn compute(conn: &mut MySqlConnection, plan: &TablePlan) -> Result<String> {
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
        let values: Vec<Vec<u8>> = rows
            .iter()
            .filter_map(|r| {
                r.try_get::<Option<Vec<u8>>, _>(plan.key.len() + ci)
                    .ok()
                    .flatten()
            })
            .collect();
        let slices: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        // The votes the scan adds up, each row its posterior: a run decides as the scan did
        // (hard counts of each row's label lent short values a stronger prior than the
        // scan's, and the run rewrote what the scan had left undecided).
        let mut counts: BTreeMap<String, f32> = BTreeMap::new();
        for (label, n) in detect::column_votes(&slices) {
            *counts.entry(label.to_string()).or_default() += n;
        }
        out.insert(col.name.clone(), counts.into_iter().collect());
    }
    Ok(serde_json::to_string(&out).expect("priors serialise"))
}

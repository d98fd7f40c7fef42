//! `run --decisions FILE`: the decision file checked against the job before anything is
//! written, and applied to the job's quarantined values: a copied table's before the pass
//! (its cut-over waits for them), an in-place table's after it.

use super::common::block_on;
use crate::db::connect::ConnectionConfig;
use crate::engine::{decisions, plans};
use crate::job::model::{Job, Strategy};
use crate::review::decisions::{parse, Decisions};
use anyhow::{anyhow, bail, Result};
use std::path::Path;

/// Reads and checks a decision file: it parses, names this job (when it names one), and every
/// table and column it decides is one the job recodes.
pub fn load(path: &Path, job: &Job, job_id: &str) -> Result<Decisions> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        anyhow!(
            "cannot read the decision file '{}': {e}. Fix: pass the file `myrecode review --out` wrote",
            path.display()
        )
    })?;
    let d = parse(&text).map_err(|e| anyhow!("decision file '{}': {e}", path.display()))?;
    check(&d, job, job_id).map_err(|e| anyhow!("decision file '{}': {e}", path.display()))?;
    Ok(d)
}

/// The checks of [`load`] on parsed decisions. Pure.
pub fn check(d: &Decisions, job: &Job, job_id: &str) -> Result<()> {
    if let Some(named) = &d.job {
        if named != job_id {
            bail!(
                "it was made for job '{named}', this run is job '{job_id}'. Fix: pass --job-id {named}, \
                 or review this job's values"
            );
        }
    }
    for (table, column) in d.named_columns() {
        let known = job
            .tables
            .iter()
            .any(|t| t.name == table && t.columns.iter().any(|c| c.name == column));
        if !known {
            bail!(
                "it decides '{table}.{column}', which the job does not recode. Fix: correct the \
                 name, or drop the entry"
            );
        }
    }
    Ok(())
}

/// Applies the decisions to the job's tables of `strategy` (copied tables before the run, so
/// their cut-over no longer waits; in-place ones after it); prints what each did. Returns
/// whether something still needs attention (values still undecided, decisions refused).
pub fn apply(
    cfg: &ConnectionConfig,
    job: &Job,
    job_id: &str,
    d: &Decisions,
    strategy: Strategy,
) -> Result<bool> {
    block_on(async {
        let mut conn = cfg.with_database(Some(&job.schema)).connect_one().await?;
        let plans = plans::plans(&mut conn, job).await?;
        let (ready, _) = plans.ready();
        let mut attention = false;
        for plan in ready.iter().filter(|p| p.strategy == strategy) {
            let out = decisions::apply(&mut conn, plan, job_id, d, true).await?;
            if out == decisions::DecisionOutcome::default() {
                continue;
            }
            println!(
                "{}: decisions applied: {} value(s) rewritten, {} kept as stored, {} still undecided, {} refused",
                plan.table,
                out.rewritten,
                out.kept,
                out.undecided,
                out.refused.len()
            );
            for why in &out.refused {
                println!("  refused: {why}");
            }
            attention |= out.undecided > 0 || !out.refused.is_empty();
        }
        Ok(attention)
    })
}

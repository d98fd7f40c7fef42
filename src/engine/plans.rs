//! The job's tables planned against the live schema: each table's plan (in place or by
//! copy, [`TablePlan`]) or why the refusal rules refuse it. The run, its rehearsal, `plan
//! --check`, `verify` and the rehearse command all start from these.

use super::error::EngineError;
use super::table_plan::{ColumnPlan, TablePlan};
use crate::bookkeeping::checkpoint;
use crate::detect::DEFAULT_THRESHOLD;
use crate::inventory::model::{ColumnKind, Table};
use crate::inventory::{self, Scope};
use crate::job::model::{Cutover, Job, Strategy, TableJob};
use crate::job::refusal::{self, Refusal, Refused};
use crate::scan::read::key_columns;
use anyhow::Result;
use sqlx::MySqlConnection;

/// One table of the job: its plan against the live table, or why it is refused.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The table's name in the job.
    pub table: String,
    /// Its plan and live table; `None` for a refused table no plan could be made for.
    pub planned: Option<(TablePlan, Table)>,
    /// Why the rules refuse it; empty when it may run.
    pub refusals: Vec<Refusal>,
}

/// The job's tables in job order, planned or refused.
#[derive(Debug, Clone)]
pub struct Plans {
    /// One entry per table of the job.
    pub entries: Vec<Entry>,
}

impl Plans {
    /// The tables that may run, with their live tables, in job order.
    pub fn ready(&self) -> (Vec<TablePlan>, Vec<Table>) {
        self.entries
            .iter()
            .filter(|e| e.refusals.is_empty())
            .filter_map(|e| e.planned.clone())
            .unzip()
    }

    /// Every table with a plan, refused or not (`verify` compares what was copied before).
    pub fn all(&self) -> Vec<TablePlan> {
        self.entries
            .iter()
            .filter_map(|e| e.planned.as_ref().map(|(p, _)| p.clone()))
            .collect()
    }

    /// The refused tables, as the error `run --execute` stops with; `None` when none is refused.
    pub fn refused(&self) -> Option<Refused> {
        let tables: Vec<(String, Vec<Refusal>)> = self
            .entries
            .iter()
            .filter(|e| !e.refusals.is_empty())
            .map(|e| (e.table.clone(), e.refusals.clone()))
            .collect();
        (!tables.is_empty()).then_some(Refused { tables })
    }
}

/// Turns the job's tables into plans (in place or copy), checked against the live schema;
/// the refusal rules' verdict is kept beside each, for the caller to print or stop on. A
/// table or column the job names but the schema lacks is an error (for a refused table, only
/// once the refusal is resolved).
pub async fn plans(conn: &mut MySqlConnection, job: &Job) -> Result<Plans> {
    let mut inv = inventory::take(
        conn,
        &Scope {
            schemas: vec![job.schema.clone()],
            tables: vec![],
        },
    )
    .await?;
    inventory::count_keyless(conn, &mut inv.tables, job.defaults.keyless_max_rows).await?;
    let mut entries = Vec::new();
    for tj in &job.tables {
        let Some(t) = inv.tables.iter().find(|t| t.name == tj.name) else {
            return Err(EngineError::JobMismatch(format!(
                "table '{}' in the job no longer exists in schema '{}' (or has no text column left). \
                 Fix: remove it from the job, or restore the table",
                tj.name,
                job.schema
            ))
            .into());
        };
        let mut refusals = refusal::refusals(t, tj, job.defaults.keyless_max_rows);
        let facts = refusal::Facts::of_table(t);
        refusals.extend(refusal::foreign_key_splits(&facts, tj, &job.tables));
        refusals.extend(refusal::group_splits(&facts, tj, job));
        // A key the job recodes: rows its new collation would make equal, asked of the
        // server now, before anything is written (one pass over the key's index).
        if refusals.is_empty() && !refusal::recoded_key_columns(&facts, tj).is_empty() {
            refusals.extend(super::collisions::find(conn, t, tj).await?);
        }
        let planned = match table_plan(job, tj, t) {
            Ok(p) => Some((p, t.clone())),
            Err(_) if !refusals.is_empty() => None,
            Err(e) => return Err(e),
        };
        entries.push(Entry {
            table: tj.name.clone(),
            planned,
            refusals,
        });
    }
    Ok(Plans { entries })
}

/// The plan of one job table against its live table `t`.
fn table_plan(job: &Job, tj: &TableJob, t: &Table) -> Result<TablePlan> {
    // Copy without a key, or of a key the job recodes (no row could be found by it in both
    // tables): rebuilt whole under the cut-over's lock (the rules bound its rows).
    let facts = refusal::Facts::of_table(t);
    let recoded_key: Vec<String> = refusal::recoded_key_columns(&facts, tj)
        .into_iter()
        .map(|(_, name)| name.to_string())
        .collect();
    let key = match key_columns(t) {
        // Online: batches page over the original's key, the shadow finds each row by it.
        Some(key) if refusal::recoded_key_online(&facts, tj) => key,
        Some(_) if !recoded_key.is_empty() => Vec::new(),
        Some(key) => key,
        None if tj.strategy == Strategy::Copy => Vec::new(),
        None => {
            return Err(EngineError::JobMismatch(format!(
                "table '{}' has no key to page over. Fix: add a primary key",
                tj.name
            ))
            .into())
        }
    };
    let mut columns = Vec::new();
    for cj in &tj.columns {
        let col = t.columns.iter().find(|c| c.name == cj.name).ok_or_else(|| {
            EngineError::JobMismatch(format!("table '{}' has no column '{}' (named in the job). Fix: correct the name in the job", tj.name, cj.name))
        })?;
        let binary = col.kind == ColumnKind::Binary;
        let source = cj.source.source().cloned().ok_or_else(|| {
            EngineError::JobMismatch(format!("{}.{}: unknown source label '{}'. Fix: `myrecode plan --check` lists the valid ones", tj.name, cj.name, cj.source))
        })?;
        columns.push(ColumnPlan {
            name: cj.name.clone(),
            source,
            fallback: cj
                .undecidable
                .unwrap_or(job.defaults.undecidable)
                .fallback(),
            binary,
            target: cj.target.clone(),
        });
    }
    let sources: Vec<String> = tj
        .columns
        .iter()
        .map(|c| format!("{}={}", c.name, c.source))
        .collect();
    let key_names: Vec<&str> = key.iter().map(|k| k.name.as_str()).collect();
    let mut described = format!("{}|{}|{}", tj.name, key_names.join(","), sources.join(","));
    if tj.strategy == Strategy::Copy {
        let targets: Vec<&str> = tj.columns.iter().map(|c| c.target.as_str()).collect();
        described.push_str(&format!("|copy|{}", targets.join("|")));
        if let Some(engine) = &tj.engine {
            described.push_str(&format!("|engine={engine}"));
        }
    }
    Ok(TablePlan {
        schema: job.schema.clone(),
        table: tj.name.clone(),
        strategy: tj.strategy,
        fingerprint: checkpoint::fingerprint(&described),
        key,
        recoded_key,
        columns,
        batch_size: tj.batch_size.unwrap_or(job.defaults.batch_size) as usize,
        target_batch_time: tj
            .target_batch_time
            .as_ref()
            .unwrap_or(&job.defaults.target_batch_time)
            .0,
        pause: job.defaults.pause_between_batches.0,
        threshold: DEFAULT_THRESHOLD,
        manual_cutover: job.defaults.cutover == Cutover::Manual,
        engine: tj.engine.clone(),
    })
}

//! What a copy finds out about its table before it writes: columns, key types, target
//! charsets, which values the server may convert, the decider; and the catalog lookups.

use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::decided;
use crate::bookkeeping::names::Names;
use crate::db::keyset::{KeyBind, KeyColumn};
use crate::db::quote;
use crate::engine::columns::{columns_of, key_types, ColumnDef};
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::table::decide::Decider;
use crate::engine::copy::table::expect::{self, Target};
use crate::engine::copy::table::job_column::JobColumn;
use crate::engine::copy::table::named_values;
use crate::engine::servercodec::{self, ServerCodec};
use crate::engine::table_plan::TablePlan;
use crate::recode::short_values::Remembered;
use crate::recode::value::Source;
use anyhow::{anyhow, bail, Result};
use sqlx::MySqlConnection;
use std::collections::HashMap;
use std::sync::Arc;

/// What a run found out about the table's columns and names.
pub(crate) struct Ctx<'a> {
    pub(crate) plan: &'a TablePlan,
    pub(crate) names: Names,
    /// Every stored (non-generated) column, copied by the server.
    pub(crate) all_columns: Vec<String>,
    /// Job columns, in the plan's order.
    pub(crate) job_columns: Vec<JobColumn>,
    /// Key columns' definitions, for the staging table.
    pub(crate) key_types: Vec<String>,
    /// The paging key as the shadow holds it: the plan's key, but for each part the job
    /// recodes ([`TablePlan::recoded_key`]), whose bound bytes (the original's) are read in
    /// the legacy charset, so a shadow row is found by the original's key ([`shadow_key`]).
    pub(crate) shadow_key: Vec<KeyColumn>,
    /// Each job column's charset in the shadow (`None`: binary), for the check pass.
    pub(crate) target_charsets: Vec<Option<String>>,
    /// Decides values (shared with the read-ahead's blocking thread).
    pub(crate) decider: Arc<Decider>,
    /// How each job column's shadow bytes follow from a decision, when they do for every
    /// column (the check then sums the decisions, [`crate::engine::copy::table::expect`]).
    pub(crate) targets: Option<Vec<Target>>,
    /// Whether the key is integers, so rows can be named by key in the copy's statement
    /// ([`crate::engine::copy::table::named_values`]).
    pub(crate) named: bool,
    /// Per job column, per other charset ([`Decider::others`]), which of its bytes the
    /// column's default charset holds ([`ServerCodec::holds`]; empty without a default).
    pub(crate) holds: Vec<Vec<[bool; 256]>>,
}

impl Ctx<'_> {
    /// The job columns' names, in the plan's order.
    pub(crate) fn job_names(&self) -> Vec<String> {
        self.plan.columns.iter().map(|c| c.name.clone()).collect()
    }
    /// `name` quoted in the table's schema.
    pub(crate) fn t(&self, name: &str) -> String {
        quote::table(&self.plan.schema, name)
    }
}

/// Every legacy charset whose conversion the server gives as our codec does, probed once
/// (`probed` caches what the job columns' defaults already asked); none when no job column
/// is text.
async fn others(
    conn: &mut MySqlConnection,
    probed: &mut HashMap<&'static str, Option<ServerCodec>>,
    job_columns: &[JobColumn],
) -> Result<Vec<ServerCodec>> {
    if job_columns.iter().all(|jc| jc.binary) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for label in servercodec::LABELS {
        let charset = servercodec::charset_of(label).unwrap_or_default();
        if !probed.contains_key(charset) {
            probed.insert(charset, servercodec::probe(conn, label).await?);
        }
        out.extend(probed[charset].clone().filter(|sc| sc.label == label));
    }
    Ok(out)
}

/// Reads what a run needs to know of `plan`'s table (see [`Ctx`]), its priors from `state`.
pub(crate) async fn context<'a>(
    conn: &mut MySqlConnection,
    (plan, job): (&'a TablePlan, &str),
    names: Names,
    state: &State,
) -> Result<Ctx<'a>> {
    let schema = plan.schema.as_str();
    let cols = columns_of(conn, schema, &plan.table).await?;
    // The target definitions: the shadow's, or the table's own once it was swapped in.
    let shadow_cols = if table_exists(conn, schema, &names.shadow).await? {
        columns_of(conn, schema, &names.shadow).await?
    } else {
        cols.clone()
    };
    let key_types = key_types(&cols, plan)?;
    let target_charsets: Vec<Option<String>> = plan
        .columns
        .iter()
        .map(|c| {
            shadow_cols
                .iter()
                .find(|s| s.0 == c.name)
                .and_then(|s| s.2.clone())
        })
        .collect();
    let priors = crate::bookkeeping::priors::parse(&state.priors);
    let mut probed: HashMap<&'static str, Option<ServerCodec>> = HashMap::new();
    let mut job_columns = Vec::new();
    for (c, cs) in plan.columns.iter().zip(&target_charsets) {
        let label = match &c.source {
            Source::Fixed(l) => Some(*l),
            Source::Auto => priors.get(&c.name).and_then(|p| {
                p.ranked()
                    .into_iter()
                    .find(|l| servercodec::charset_of(*l).is_some())
            }),
        };
        let server = match label.filter(|_| cs.is_some()) {
            Some(l) => {
                let charset = servercodec::charset_of(l).unwrap_or_default();
                if !probed.contains_key(charset) {
                    probed.insert(charset, servercodec::probe(conn, l).await?);
                }
                probed[charset].clone().filter(|sc| sc.label == l)
            }
            None => None,
        };
        job_columns.push(JobColumn {
            name: c.name.clone(),
            binary: cs.is_none(),
            server,
        });
    }
    let decider = Arc::new(Decider {
        columns: plan
            .columns
            .iter()
            .zip(&job_columns)
            .map(|(c, jc)| {
                (
                    c.source.clone(),
                    c.fallback,
                    priors.get(&c.name).cloned(),
                    jc.server.clone(),
                )
            })
            .collect(),
        threshold: plan.threshold,
        others: others(conn, &mut probed, &job_columns).await?,
        text: job_columns.iter().map(|jc| !jc.binary).collect(),
        seen: Remembered::new(plan.columns.len()),
        decided: {
            let mut d = decided::load(conn, schema, job, &plan.table).await?;
            (plan.columns.iter())
                .map(|c| d.remove(&c.name).unwrap_or_default())
                .collect()
        },
    });
    let holds = (job_columns.iter())
        .map(|jc| match &jc.server {
            Some(sc) => decider.others.iter().map(|o| sc.holds(o)).collect(),
            None => Vec::new(),
        })
        .collect();
    let shadow_key = shadow_key(plan, &job_columns, &target_charsets, &shadow_cols)?;
    let key_names: Vec<&str> = plan.key.iter().map(|k| k.name.as_str()).collect();
    let job_names: Vec<&str> = plan.columns.iter().map(|c| c.name.as_str()).collect();
    let targets = expect::targets(&target_charsets, &key_names, &job_names);
    Ok(Ctx {
        plan,
        targets,
        named: key_types.iter().all(|t| named_values::is_integer_type(t)),
        holds,
        job_columns,
        all_columns: cols.into_iter().map(|c| c.0).collect(),
        key_types,
        shadow_key,
        target_charsets,
        decider,
        names,
    })
}

/// The plan's key as the shadow holds it: a part the job recodes is found by the original's
/// bytes read in its legacy charset, which the server must convert exactly as our codec
/// does (what the copy wrote for the key is then the server's conversion, the same every
/// time); other parts are the plan's own.
fn shadow_key(
    plan: &TablePlan,
    job_columns: &[JobColumn],
    target_charsets: &[Option<String>],
    shadow_cols: &[ColumnDef],
) -> Result<Vec<KeyColumn>> {
    for k in plan
        .key
        .iter()
        .filter(|k| plan.recoded_key.contains(&k.name))
    {
        let j = job_columns.iter().position(|jc| jc.name == k.name);
        let exact =
            j.is_some_and(|j| job_columns[j].server.is_some() && target_charsets[j].is_some());
        if !exact {
            bail!(
                "table '{}': key column '{}' is recoded, but this server does not convert its \
                 label exactly as myrecode does, so the copy could not find its rows by key. \
                 Fix: raise `keyless_max_rows` above the table's rows so it is rebuilt whole under \
                 the cut-over's lock, or leave the column out of the job",
                plan.table,
                k.name
            );
        }
    }
    recoded_key(plan, shadow_cols)
}

/// The plan's key as a table of target definitions `cols` (the shadow, or the table once
/// swapped) holds it: each part the job recodes ([`TablePlan::recoded_key`]) found by the
/// original's bytes read in its `source:` label's server charset ([`KeyBind::Recoded`]).
pub(crate) fn recoded_key(plan: &TablePlan, cols: &[ColumnDef]) -> Result<Vec<KeyColumn>> {
    let mut out = Vec::with_capacity(plan.key.len());
    for k in &plan.key {
        if !plan.recoded_key.contains(&k.name) {
            out.push(k.clone());
            continue;
        }
        let from = (plan.columns.iter())
            .find(|c| c.name == k.name)
            .and_then(|c| match c.source {
                Source::Fixed(l) => l.server_charset(),
                Source::Auto => None,
            })
            .ok_or_else(|| {
                anyhow!(
                    "key column '{}' is recoded without a fixed label the server reads",
                    k.name
                )
            })?;
        let (charset, ty) = (cols.iter())
            .find(|c| c.0 == k.name)
            .map(|c| {
                (
                    c.2.clone().unwrap_or_else(|| "utf8mb4".into()),
                    c.1.as_str(),
                )
            })
            .ok_or_else(|| anyhow!("table '{}' has no column '{}'", plan.table, k.name))?;
        let collation = ty
            .rsplit_once(" COLLATE ")
            .map(|(_, c)| c.trim().to_string())
            .unwrap_or_else(|| format!("{charset}_bin"));
        out.push(KeyColumn {
            name: k.name.clone(),
            bind: KeyBind::Recoded {
                from: from.to_string(),
                charset,
                collation,
            },
        });
    }
    Ok(out)
}

//! `verify` of a copied table: its rows against the original kept beside it.

use crate::bookkeeping::checkpoint;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::names::names;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::cutover::rebuild::prepare_maps;
use crate::engine::copy::cutover::rebuild_sql::unmatched_rows_sql;
use crate::engine::copy::table::checker::compare_batch;
use crate::engine::copy::table::context::context;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::read_sql::count_sql;
use crate::engine::read::Key;
use crate::engine::table_plan::TablePlan;
use anyhow::Context;
use anyhow::Result;
use sqlx::MySqlConnection;

/// What `verify` found for a copied table: its rows against the kept original, recoded.
#[derive(Debug, Default, Clone)]
pub struct CopyFindings {
    /// Rows whose every value is a lossless reading of the original's.
    pub equal: u64,
    /// Keys (readable) of rows that differ, or exist on one side only: written since the cut-over.
    pub differ: Vec<String>,
    /// Why nothing could be compared (not cut over yet, or the original dropped).
    pub skipped: Option<String>,
}

/// Compares a cut-over table with the original kept beside it, row by row, as the check
/// pass does: every value the server's conversion or a lossless reading of the original.
pub async fn verify_table(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
) -> Result<CopyFindings> {
    let schema = plan.schema.as_str();
    let n = names(&plan.table);
    let state = match checkpoint::load(conn, schema, job, &plan.table).await? {
        Some(s) if s.done => s,
        _ => {
            return Ok(CopyFindings {
                skipped: Some("not cut over yet".into()),
                ..CopyFindings::default()
            })
        }
    };
    if !table_exists(conn, schema, &n.old).await? {
        return Ok(CopyFindings {
            skipped: Some(format!("{} was dropped by cleanup", n.old)),
            ..CopyFindings::default()
        });
    }
    let old = n.old.clone();
    let ctx = context(conn, (plan, job), n, &state).await?;
    // A key the job recoded: compared as multisets of rows, each value through its decision.
    if plan.key.is_empty() || !plan.recoded_key.is_empty() {
        return verify_rebuilt(conn, &ctx, &old).await;
    }
    let mut found = CopyFindings::default();
    let mut last: Option<Key> = None;
    loop {
        let c = compare_batch(conn, &ctx, (&old, &plan.table), last.as_deref(), 5000).await?;
        found.equal += c.same as u64;
        found.differ.extend(c.differ.iter().map(|k| {
            keycodec::unpack(k)
                .unwrap_or_default()
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect::<Vec<_>>()
                .join(",")
        }));
        if c.rows < 5000 {
            return Ok(found);
        }
        last = c.upper;
    }
}

/// `verify` of a rebuilt table: the kept original `old`, each value through the decision the
/// rebuild made (the same priors decide alike), against the table now, as multisets of rows.
pub(crate) async fn verify_rebuilt(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    old: &str,
) -> Result<CopyFindings> {
    let plan = ctx.plan;
    let maps = prepare_maps(conn, ctx, old, 0).await?;
    let rows: u64 = sqlx::query_scalar::<_, i64>(&count_sql(&plan.schema, old))
        .fetch_one(&mut *conn)
        .await? as u64;
    let sql = unmatched_rows_sql(
        &plan.schema,
        old,
        &plan.table,
        &ctx.all_columns,
        &ctx.job_columns,
        &ctx.target_charsets,
    );
    let unmatched: u64 = sqlx::query_scalar(&sql)
        .fetch_one(&mut *conn)
        .await
        .with_context(|| format!("comparing {} with {}", ctx.t(&plan.table), ctx.t(old)))?;
    maps.drop(conn).await?;
    let mut found = CopyFindings {
        equal: rows.saturating_sub(unmatched),
        ..CopyFindings::default()
    };
    if unmatched > 0 {
        found.differ.push(format!(
            "{unmatched} row(s) without an equal row on the other side (no key to name them: written since the cut-over, or a miss)"
        ));
    }
    Ok(found)
}

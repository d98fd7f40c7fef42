//! A table without a usable key, rebuilt whole under the cut-over's lock.
//!
//! Batches need a key to page over and the change log one to name a row, so such a table is
//! not copied ahead: its shadow is created empty, its triggers only name the gate (a write
//! released by the unlock waits for the rename, as on every copied table), and under the
//! cut-over's lock, where no write can reach it, it is read whole, each job column's distinct
//! values decided once, and the shadow filled by one `INSERT … SELECT` through the maps
//! ([`super::rebuild_sql`]). The job's `keyless_max_rows` bounds the rows and so the pause;
//! `plan` and the rehearsal say how long it is. A kill at any instant leaves the original
//! as it was: the rebuild is redone by the next cut-over attempt.

use super::context::Ctx;
use super::decide::{Recoded, Stage};
use super::rebuild_sql::{
    empty_sql, map_ddl, map_drop_sql, map_insert_sql, read_values_sql, rebuild_sql,
    unmatched_rows_sql,
};
use super::sql::{STAGED_DECLARED, STAGED_VALUE};
use super::verify::CopyFindings;
use crate::engine::checkpoint::State;
use crate::engine::keycodec;
use crate::engine::quarantine::{self, Quarantined};
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::HashMap;

/// Values per map insert.
const MAP_CHUNK: usize = 500;

/// One map row: the stored value, the value to write (if staged) and the staging flag.
type MapRow<'a> = (&'a Vec<u8>, Option<&'a Vec<u8>>, i8);

/// Per job column, each distinct stored value and what it becomes.
type Decided = Vec<HashMap<Vec<u8>, Recoded>>;

/// Reads every row's job values and decides each column's distinct values once; returns the
/// rows read and the decisions.
async fn decide_table(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    table: &str,
) -> Result<(Vec<Vec<Option<Vec<u8>>>>, Decided)> {
    let sql = read_values_sql(&ctx.plan.schema, table, &ctx.job_columns);
    let rows = sqlx::query(&sql)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading {} whole", ctx.t(table)))?;
    let nc = ctx.job_columns.len();
    let rows: Vec<Vec<Option<Vec<u8>>>> = rows
        .iter()
        .map(|r| {
            (0..nc)
                .map(|j| r.try_get::<Option<Vec<u8>>, _>(j))
                .collect()
        })
        .collect::<Result<_, _>>()?;
    let mut decided: Decided = vec![HashMap::new(); nc];
    for row in &rows {
        for (j, v) in row.iter().enumerate() {
            if let Some(v) = v {
                if !decided[j].contains_key(v) {
                    let r = ctx.decider.decide(j, v);
                    decided[j].insert(v.clone(), r);
                }
            }
        }
    }
    Ok((rows, decided))
}

/// Creates this session's maps and fills them with every value not written by the column's
/// default conversion.
async fn stage_maps(conn: &mut MySqlConnection, decided: &Decided) -> Result<()> {
    for (j, values) in decided.iter().enumerate() {
        conn.execute(map_drop_sql(j).as_str()).await?;
        conn.execute(map_ddl(j).as_str())
            .await
            .context("creating the session's value map. Fix: GRANT CREATE TEMPORARY TABLES on the schema to the job's user")?;
        let staged: Vec<MapRow<'_>> = values
            .iter()
            .filter_map(|(old, r)| match &r.stage {
                Stage::Server => None,
                Stage::Value(v) => Some((old, Some(v), STAGED_VALUE)),
                Stage::Declared => Some((old, None, STAGED_DECLARED)),
            })
            .collect();
        for chunk in staged.chunks(MAP_CHUNK) {
            let sql = map_insert_sql(j, chunk.len());
            let mut q = sqlx::query(&sql);
            for (old, new, flag) in chunk {
                q = q.bind(*old).bind(*old).bind(*new).bind(*flag);
            }
            q.execute(&mut *conn)
                .await
                .context("filling the session's value map")?;
        }
    }
    Ok(())
}

/// Rebuilds the shadow of keyless table `ctx` from the table as it is now: on the cut-over's
/// lock connection (autocommit off, every table locked), before the rename. The checkpoint's
/// counts (`state`) are those of this rebuild; the caller commits.
pub(super) async fn rebuild(
    locker: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<()> {
    let plan = ctx.plan;
    let (rows, decided) = decide_table(locker, ctx, &plan.table).await?;
    stage_maps(locker, &decided).await?;
    locker
        .execute(empty_sql(&plan.schema, &ctx.names.shadow).as_str())
        .await
        .context("emptying the shadow of a keyless table")?;
    let sql = rebuild_sql(
        &plan.schema,
        &plan.table,
        &ctx.names.shadow,
        &ctx.all_columns,
        &ctx.job_columns,
    );
    let written = locker
        .execute(sql.as_str())
        .await
        .with_context(|| format!("rebuilding {} under the cut-over lock", ctx.t(&plan.table)))?
        .rows_affected();
    if written != rows.len() as u64 {
        anyhow::bail!(
            "rebuilding {}: {written} rows written of {} read under the same lock",
            ctx.t(&plan.table),
            rows.len()
        );
    }
    let mut changed = 0;
    for row in &rows {
        for (j, v) in row.iter().enumerate() {
            if let Some(v) = v {
                changed += u64::from(decided[j][v].recoded);
            }
        }
    }
    // Without a key, an undecidable value is listed by itself: equal values share a decision.
    let quarantined: Vec<Quarantined> = decided
        .iter()
        .enumerate()
        .flat_map(|(j, values)| {
            values.iter().filter_map(move |(v, r)| {
                r.undecidable
                    .as_ref()
                    .map(|(reason, runner_up)| Quarantined {
                        col: plan.columns[j].name.clone(),
                        key: keycodec::pack(std::slice::from_ref(v)),
                        value: v.clone(),
                        reason: reason.clone(),
                        runner_up: runner_up.clone(),
                    })
            })
        })
        .collect();
    quarantine::save(locker, &plan.schema, job, &plan.table, &quarantined).await?;
    for j in 0..decided.len() {
        locker.execute(map_drop_sql(j).as_str()).await?;
    }
    state.rows_read = rows.len() as u64;
    state.rows_changed = changed;
    state.rows_quarantined = quarantined.len() as u64;
    Ok(())
}

/// `verify` of a rebuilt table: the kept original `old`, each value through the decision the
/// rebuild made (the same priors decide alike), against the table now, as multisets of rows.
pub(super) async fn verify_rebuilt(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    old: &str,
) -> Result<CopyFindings> {
    let plan = ctx.plan;
    let (rows, decided) = decide_table(conn, ctx, old).await?;
    stage_maps(conn, &decided).await?;
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
    for j in 0..decided.len() {
        conn.execute(map_drop_sql(j).as_str()).await?;
    }
    let mut found = CopyFindings {
        equal: (rows.len() as u64).saturating_sub(unmatched),
        ..CopyFindings::default()
    };
    if unmatched > 0 {
        found.differ.push(format!(
            "{unmatched} row(s) without an equal row on the other side (no key to name them: written since the cut-over, or a miss)"
        ));
    }
    Ok(found)
}

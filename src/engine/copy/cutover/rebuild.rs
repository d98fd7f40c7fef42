//! A table without a usable key, or whose key the job recodes, rebuilt whole under the
//! cut-over's lock.
//!
//! Batches need a key to page over and the change log one to name a row, so such a table is
//! not copied ahead: its shadow is created empty, its triggers only name the gate (a write
//! released by the unlock waits for the rename, as on every copied table), and under the
//! cut-over's lock, where no write can reach it, it is read whole, each job column's distinct
//! values decided once, and the shadow filled by one `INSERT … SELECT` through the maps
//! ([`crate::engine::copy::cutover::rebuild_sql`]). The job's `keyless_max_rows` bounds the rows and so the pause;
//! `plan` and the rehearsal say how long it is. A kill at any instant leaves the original
//! as it was: the rebuild is redone by the next cut-over attempt.

use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::quarantine::{self, Quarantined};
use crate::engine::copy::cutover::rebuild_sql::{
    empty_sql, map_ddl, map_drop_sql, map_insert_sql, read_values_sql, rebuild_sql,
};
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::job_column::{STAGED_DECLARED, STAGED_VALUE};
use crate::engine::copy::table::recoded::{Recoded, Stage};
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::HashMap;

/// Values per map insert.
const MAP_CHUNK: usize = 500;

/// One map row: the stored value, the value to write (if staged) and the staging flag.
type MapRow<'a> = (&'a Vec<u8>, Option<&'a Vec<u8>>, i8);

/// Per job column, each distinct stored value and what it becomes.
type Decided = Vec<HashMap<Vec<u8>, Recoded>>;

/// Reads every row's job values of `table` (the copied table, or its kept original).
async fn read_rows(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    table: &str,
) -> Result<Vec<Vec<Option<Vec<u8>>>>> {
    let sql = read_values_sql(&ctx.plan.schema, table, &ctx.job_columns);
    let rows = sqlx::query(&sql)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading {} whole", ctx.t(table)))?;
    let nc = ctx.job_columns.len();
    Ok(rows
        .iter()
        .map(|r| {
            (0..nc)
                .map(|j| r.try_get::<Option<Vec<u8>>, _>(j))
                .collect()
        })
        .collect::<Result<_, _>>()?)
}

/// The maps of the cut-over's table `i` in this session, and what they hold.
pub(crate) struct Maps {
    i: usize,
    decided: Decided,
}

impl Maps {
    /// Decides the values of `rows` not decided yet and adds them to the maps.
    async fn add(
        &mut self,
        conn: &mut MySqlConnection,
        ctx: &Ctx<'_>,
        rows: &[Vec<Option<Vec<u8>>>],
    ) -> Result<()> {
        let mut new: Decided = vec![HashMap::new(); ctx.job_columns.len()];
        for row in rows {
            for (j, v) in row.iter().enumerate() {
                if let Some(v) = v {
                    if !self.decided[j].contains_key(v) && !new[j].contains_key(v) {
                        new[j].insert(v.clone(), ctx.decider.decide(j, v));
                    }
                }
            }
        }
        undecided_key_value(ctx, &new)?;
        stage(conn, self.i, &new).await?;
        for (all, more) in self.decided.iter_mut().zip(new) {
            all.extend(more);
        }
        Ok(())
    }

    /// Drops the maps.
    pub(crate) async fn drop(self, conn: &mut MySqlConnection) -> Result<()> {
        for j in 0..self.decided.len() {
            conn.execute(map_drop_sql(self.i, j).as_str()).await?;
        }
        Ok(())
    }
}

/// Creates the maps of the cut-over's table `i` and fills them with the decisions on every
/// value `table` holds now: done before the cut-over's lock, so under it only the values
/// written since are decided.
pub(crate) async fn prepare_maps(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    table: &str,
    i: usize,
) -> Result<Maps> {
    for j in 0..ctx.job_columns.len() {
        conn.execute(map_drop_sql(i, j).as_str()).await?;
        conn.execute(map_ddl(i, j).as_str())
            .await
            .context("creating the session's value map. Fix: GRANT CREATE TEMPORARY TABLES on the schema to the job's user")?;
    }
    let mut maps = Maps {
        i,
        decided: vec![HashMap::new(); ctx.job_columns.len()],
    };
    let rows = read_rows(conn, ctx, table).await?;
    maps.add(conn, ctx, &rows).await?;
    Ok(maps)
}

/// Refuses a value of a key column the job recodes that cannot be decided: its new key
/// would be a guess, and a kept one (its bytes relabelled) a key the application never wrote.
/// Checked as the maps are filled, before the cut-over's lock and again under it, where it
/// stops the cut-over with nothing swapped.
fn undecided_key_value(ctx: &Ctx<'_>, decided: &Decided) -> Result<()> {
    let plan = ctx.plan;
    for (j, values) in decided.iter().enumerate() {
        let column = &plan.columns[j].name;
        if !plan.recoded_key.contains(column) {
            continue;
        }
        if let Some((v, (reason, _))) = values
            .iter()
            .find_map(|(v, r)| r.undecidable.as_ref().map(|u| (v, u)))
        {
            let hex: String = v.iter().map(|b| format!("{b:02X}")).collect();
            anyhow::bail!(
                "key column '{column}' of {} holds a value that cannot be decided ({reason}; stored bytes X'{hex}'): its new key would be a guess. \
                 Nothing was swapped; the original is untouched. Fix: correct that row, or leave the column out of the job",
                ctx.t(&plan.table)
            );
        }
    }
    Ok(())
}

/// Adds every value not written by the column's default conversion to the maps of table `i`.
async fn stage(conn: &mut MySqlConnection, i: usize, decided: &Decided) -> Result<()> {
    for (j, values) in decided.iter().enumerate() {
        let staged: Vec<MapRow<'_>> = values
            .iter()
            .filter_map(|(old, r)| match &r.stage {
                Stage::Server(_) => None,
                Stage::Value(v) | Stage::Other(_, v) => Some((old, Some(v), STAGED_VALUE)),
                Stage::Declared => Some((old, None, STAGED_DECLARED)),
            })
            .collect();
        for chunk in staged.chunks(MAP_CHUNK) {
            let sql = map_insert_sql(i, j, chunk.len());
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
/// lock connection (autocommit off, every table locked), before the rename, through `maps`
/// ([`prepare_maps`] before the lock). The checkpoint's counts (`state`) are those of this
/// rebuild; the caller commits.
pub(crate) async fn rebuild(
    locker: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
    mut maps: Maps,
) -> Result<()> {
    let plan = ctx.plan;
    let rows = read_rows(locker, ctx, &plan.table).await?;
    maps.add(locker, ctx, &rows).await?;
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
        maps.i,
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
    let decided = &maps.decided;
    let mut changed = 0;
    for row in &rows {
        for (j, v) in row.iter().enumerate() {
            if let Some(v) = v {
                changed += u64::from(decided[j][v].recoded);
            }
        }
    }
    // Without a key, an undecidable value is listed by itself: equal values share a decision.
    // Only values still in the table count (the maps may hold some deleted since).
    let mut quarantined: Vec<Quarantined> = Vec::new();
    for (j, values) in decided.iter().enumerate() {
        let present: std::collections::HashSet<&Vec<u8>> =
            rows.iter().filter_map(|r| r[j].as_ref()).collect();
        for (v, r) in values.iter().filter(|(v, _)| present.contains(v)) {
            if let Some((reason, runner_up)) = &r.undecidable {
                quarantined.push(Quarantined {
                    col: plan.columns[j].name.clone(),
                    key: keycodec::pack(std::slice::from_ref(v)),
                    value: v.clone(),
                    reason: reason.clone(),
                    runner_up: runner_up.clone(),
                });
            }
        }
    }
    quarantine::save(locker, &plan.schema, job, &plan.table, &quarantined).await?;
    maps.drop(locker).await?;
    state.rows_read = rows.len() as u64;
    state.rows_changed = changed;
    state.rows_quarantined = quarantined.len() as u64;
    Ok(())
}

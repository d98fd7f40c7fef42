//! Foreign keys across a cut-over (see [`crate::engine::copy::cutover::carried::foreign_sql`]): read from the catalog,
//! recorded before they move, moved under the cut-over lock, put back after a cut-over that
//! did not rename. The parents' triggers that log cascaded rows are [`crate::engine::copy::cutover::carried::cascade::logging`]'s.

use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::names::names;
use crate::bookkeeping::names::Names;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::foreign_sql::{
    add_sql, collect, drop_sql, foreign_key_checks_sql, forget_sql, moves, moves_ddl, record_sql,
    recorded_sql, swap_sql, ForeignKey, Move, CONSTRAINT_ON_SQL, FOREIGN_KEYS_SQL, MOVES,
};
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};

/// Every foreign key whose child is in `schema`.
pub(crate) async fn foreign_keys(
    conn: &mut MySqlConnection,
    schema: &str,
) -> Result<Vec<ForeignKey>> {
    let rows = sqlx::query(FOREIGN_KEYS_SQL)
        .bind(schema)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await
        .context("reading the foreign keys from information_schema")?;
    let rows = rows
        .iter()
        .map(|r| {
            Ok((
                r.try_get(0)?,
                r.try_get(1)?,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(4)?,
                r.try_get(5)?,
                r.try_get(6)?,
                r.try_get(7)?,
                r.try_get(8)?,
            ))
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(collect(rows))
}

/// Under the cut-over lock (every table involved held, `foreign_key_checks` off): the stand-ins
/// on the shadows, then (the last statements before the rename) the outside children's swaps.
async fn apply_moves(conn: &mut MySqlConnection, planned: &[Move]) -> Result<()> {
    for m in planned.iter().filter(|m| !m.outside()) {
        if !is_on(conn, &m.schema, &m.to, &m.tmp).await? {
            conn.execute(add_sql(&m.schema, &m.to, &m.moved).as_str())
                .await
                .with_context(|| format!("adding foreign key {} to {}", m.name, m.to))?;
        }
    }
    for m in planned.iter().filter(|m| m.outside()) {
        conn.execute(swap_sql(&m.schema, &m.child, &m.name, &m.moved).as_str())
            .await
            .with_context(|| {
                format!(
                    "pointing foreign key {} of {} at the new table",
                    m.name, m.child
                )
            })?;
    }
    Ok(())
}

async fn is_on(conn: &mut MySqlConnection, schema: &str, table: &str, name: &str) -> Result<bool> {
    Ok(sqlx::query(CONSTRAINT_ON_SQL)
        .bind(schema)
        .bind(table)
        .bind(name)
        .fetch_optional(&mut *conn)
        .await?
        .is_some())
}

/// Settles what a cut-over left of its moves; idempotent, so a kill anywhere in it is
/// settled by the next run. Swapped (the rename ran): each constraint gets its own name back
/// on the live child (the kept original gives the name up; the stand-in is swapped for the
/// name in one statement). Not swapped: the stand-ins go and the outside children get their
/// constraints back. Whether the rename ran is read from the tables themselves (a shadow
/// gone) when any child was swapped; otherwise the caller says (`swapped`).
async fn settle_moves(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    swapped: bool,
) -> Result<()> {
    if !table_exists(conn, schema, MOVES).await? {
        return Ok(());
    }
    let rows = sqlx::query(&recorded_sql(schema))
        .bind(job)
        .fetch_all(&mut *conn)
        .await?;
    let mut recorded = Vec::new();
    for r in &rows {
        recorded.push(Move {
            name: r.try_get(0)?,
            tmp: r.try_get(1)?,
            schema: r.try_get(2)?,
            child: r.try_get(3)?,
            to: r.try_get(4)?,
            original: r.try_get(5)?,
            moved: r.try_get(6)?,
        });
    }
    if recorded.is_empty() {
        return Ok(());
    }
    let swapped = match recorded.iter().find(|m| !m.outside()) {
        Some(m) => !table_exists(conn, &m.schema, &m.to).await?,
        None => swapped,
    };
    conn.execute(foreign_key_checks_sql(false).as_str()).await?;
    for m in &recorded {
        let (cs, child) = (m.schema.as_str(), m.child.as_str());
        if swapped {
            if !m.outside() {
                let old = names(child).old;
                if is_on(conn, cs, &old, &m.name).await? {
                    conn.execute(drop_sql(cs, &old, &m.name).as_str()).await?;
                }
            }
            // One statement: two cascading constraints on the same columns, even for a moment,
            // fail every update of the parent's key (1452).
            let given_back = match (
                is_on(conn, cs, child, &m.name).await?,
                is_on(conn, cs, child, &m.tmp).await?,
            ) {
                (false, true) => Some(swap_sql(cs, child, &m.tmp, &m.original)),
                (false, false) => Some(add_sql(cs, child, &m.original)),
                (true, true) => Some(drop_sql(cs, child, &m.tmp)),
                (true, false) => None,
            };
            if let Some(sql) = given_back {
                conn.execute(sql.as_str()).await.with_context(|| {
                    format!("giving foreign key {} its name back on {child}", m.name)
                })?;
            }
        } else {
            if is_on(conn, cs, &m.to, &m.tmp).await? {
                if m.outside() && !is_on(conn, cs, child, &m.name).await? {
                    conn.execute(swap_sql(cs, child, &m.tmp, &m.original).as_str())
                        .await
                        .with_context(|| {
                            format!("putting foreign key {} back on {child}", m.name)
                        })?;
                } else {
                    conn.execute(drop_sql(cs, &m.to, &m.tmp).as_str()).await?;
                }
            }
            if !is_on(conn, cs, child, &m.name).await? {
                conn.execute(add_sql(cs, child, &m.original).as_str())
                    .await
                    .with_context(|| format!("putting foreign key {} back on {child}", m.name))?;
            }
        }
    }
    conn.execute(foreign_key_checks_sql(true).as_str()).await?;
    sqlx::query(&forget_sql(schema))
        .bind(job)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The foreign keys a cut-over moves: each constraint of the group's tables stood in on its
/// shadow, and each outside child's pointed at its parent's shadow ([`Move`]).
#[derive(Default)]
pub(crate) struct ForeignKeys {
    /// The moves, in the order they are applied.
    pub(crate) moves: Vec<Move>,
}

impl Carried for ForeignKeys {
    /// The moves of the cut-over's tables, from every foreign key of the schema.
    async fn plan(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self> {
        let tables: Vec<(&str, &Names)> = (cut.ctxs.iter())
            .map(|c| (c.plan.table.as_str(), &c.names))
            .collect();
        let fks = foreign_keys(conn, cut.schema).await?;
        Ok(ForeignKeys {
            moves: moves(&fks, cut.schema, &tables),
        })
    }

    /// In `_myrecode_moves` (replacing any earlier record of the job), so a rerun finishes
    /// or undoes them whatever instant a kill chose.
    async fn record(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()> {
        if self.moves.is_empty() {
            return Ok(());
        }
        let (schema, job) = (cut.schema, cut.job);
        conn.execute(moves_ddl(schema).as_str()).await?;
        sqlx::query(&forget_sql(schema))
            .bind(job)
            .execute(&mut *conn)
            .await?;
        for m in &self.moves {
            sqlx::query(&record_sql(schema))
                .bind(job)
                .bind(&m.name)
                .bind(&m.tmp)
                .bind(&m.schema)
                .bind(&m.child)
                .bind(&m.to)
                .bind(&m.original)
                .bind(&m.moved)
                .execute(&mut *conn)
                .await
                .context("recording the foreign keys the cut-over moves")?;
        }
        Ok(())
    }

    /// Under the cut-over lock, `foreign_key_checks` off first ([`apply_moves`]).
    async fn apply(&self, conn: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<()> {
        if self.moves.is_empty() {
            return Ok(());
        }
        conn.execute(foreign_key_checks_sql(false).as_str()).await?;
        apply_moves(conn, &self.moves).await
    }

    /// [`settle_moves`], `cut.renamed` saying whether the rename ran where no child of the
    /// group tells.
    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        settle_moves(conn, cut.schema, cut.job, cut.renamed).await?;
        Ok(Vec::new())
    }
}

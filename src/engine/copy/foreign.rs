//! Foreign keys across the job's one cut-over (see [`super::foreign_sql`]): read from the
//! catalog, recorded before they move, moved under the cut-over lock, put back after a
//! cut-over that did not rename, and the triggers that log cascaded rows, on every table at
//! the head of a chain of cascades reaching a copied table.

use super::cascade_sql::{
    cascade_triggers, reconcile, Event, Existing, Target, CASCADE_TRIGGERS_SQL,
    LEFT_CASCADE_TRIGGERS_SQL, MAX_CHAINS,
};
use super::context::table_exists;
use super::foreign_sql::{
    add_sql, collect, drop_sql, foreign_key_checks_sql, forget_sql, moves, moves_ddl, record_sql,
    recorded_sql, swap_sql, ForeignKey, Move, CONSTRAINT_ON_SQL, FOREIGN_KEYS_SQL, MOVES,
};
use super::names::{names, Names};
use super::sql::{drop_trigger_sql, gate_ddl, log_ddl};
use crate::engine::error::EngineError;
use crate::engine::plan::TablePlan;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};

/// Every foreign key whose child is in `schema`.
pub(super) async fn foreign_keys(
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

/// The cut-over's moves of `tables`, recorded (replacing any earlier record of the job), so
/// a rerun finishes or undoes them whatever instant a kill chose.
pub(super) async fn plan_moves(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[(&str, &Names)],
) -> Result<Vec<Move>> {
    let fks = foreign_keys(conn, schema).await?;
    let planned = moves(&fks, schema, tables);
    if planned.is_empty() {
        return Ok(planned);
    }
    conn.execute(moves_ddl(schema).as_str()).await?;
    sqlx::query(&forget_sql(schema))
        .bind(job)
        .execute(&mut *conn)
        .await?;
    for m in &planned {
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
    Ok(planned)
}

/// Under the cut-over lock (every table involved held, `foreign_key_checks` off): the stand-ins
/// on the shadows, then (the last statements before the rename) the outside children's swaps.
pub(super) async fn apply_moves(conn: &mut MySqlConnection, planned: &[Move]) -> Result<()> {
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
/// on the live child (the kept original gives the name up; the name is added, then the
/// stand-in dropped). Not swapped: the stand-ins go and the outside children get their
/// constraints back. Whether the rename ran is read from the tables themselves (a shadow
/// gone) when any child was swapped; otherwise the caller says (`swapped`).
pub(super) async fn settle_moves(
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
            if !is_on(conn, cs, child, &m.name).await? {
                conn.execute(add_sql(cs, child, &m.original).as_str())
                    .await
                    .with_context(|| {
                        format!("giving foreign key {} its name back on {child}", m.name)
                    })?;
            }
            if is_on(conn, cs, child, &m.tmp).await? {
                conn.execute(drop_sql(cs, child, &m.tmp).as_str()).await?;
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

/// Creates, replaces or drops the triggers that log the rows cascading actions change in the
/// job's copied tables (`plans`), on every table at the head of a chain of cascades reaching
/// one of them, to any depth ([`super::cascade_sql`]); the logs are created here if missing
/// (a child copied later starts with them). Idempotent: a trigger already as wanted is left
/// alone; a stale one (the chains changed since it was made: another version of myrecode,
/// a constraint added) is replaced by one under its other name before it is dropped, so no
/// cascade goes unlogged in between.
pub(super) async fn ensure_cascade_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    plans: &[TablePlan],
) -> Result<()> {
    let fks = foreign_keys(conn, schema).await?;
    let logs: Vec<Names> = plans.iter().map(|p| names(&p.table)).collect();
    // A keyless child is rebuilt whole under the cut-over's lock: what cascades reach it is there.
    let targets: Vec<Target<'_>> = plans
        .iter()
        .zip(&logs)
        .filter(|(p, _)| !p.key.is_empty())
        .map(|(p, n)| Target {
            table: &p.table,
            log: &n.log,
            key: &p.key,
        })
        .collect();
    // A parent in another schema is not followed (its cascades are not logged): see the README.
    let want =
        cascade_triggers(&fks, schema, &targets).map_err(|e| EngineError::CascadeChains {
            table: e.table,
            event: e.event.sql(),
            limit: MAX_CHAINS,
        })?;
    let (have, taken) = our_cascade_triggers(conn, schema).await?;
    if want.is_empty() && have.is_empty() {
        return Ok(());
    }
    conn.execute(gate_ddl(schema).as_str()).await?;
    for n in &logs {
        conn.execute(log_ddl(schema, n).as_str()).await?;
    }
    let mut tables: Vec<&str> = want
        .iter()
        .map(|h| h.table.as_str())
        .chain(have.iter().map(|(t, _, _)| t.as_str()))
        .collect();
    tables.sort();
    tables.dedup();
    for table in tables {
        let n = names(table);
        let bodies = want.iter().find(|h| h.table == table).map(|h| &h.bodies);
        for (i, event) in [Event::Update, Event::Delete].into_iter().enumerate() {
            let there: Vec<Existing> = have
                .iter()
                .filter(|(t, e, x)| {
                    t == table
                        && e.eq_ignore_ascii_case(event.sql())
                        && n.cascade[i].contains(&x.name)
                })
                .map(|(_, _, x)| x.clone())
                .collect();
            let body = bodies.and_then(|b| b[i].as_deref());
            for sql in reconcile(schema, table, event, &n.cascade[i], body, &there, &taken) {
                conn.execute(sql.as_str()).await.with_context(|| {
                    format!("replacing a cascade-logging trigger on {table}. Fix: GRANT TRIGGER on the schema to the job's user")
                })?;
            }
        }
    }
    Ok(())
}

/// Our cascade-logging triggers in `schema`: on the tables whose names they bear (table,
/// event, the trigger), and the names of those on other tables (a kept original's).
async fn our_cascade_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
) -> Result<(Vec<(String, String, Existing)>, Vec<String>)> {
    let rows = sqlx::query(CASCADE_TRIGGERS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await
        .context("reading information_schema.TRIGGERS")?;
    let (mut have, mut taken) = (Vec::new(), Vec::new());
    for r in &rows {
        let (table, event, name, body): (String, String, String, String) =
            (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
        if names(&table).cascade.iter().flatten().any(|n| *n == name) {
            have.push((table, event, Existing { name, body }));
        } else {
            taken.push(name);
        }
    }
    Ok((have, taken))
}

/// Drops the cascade-logging triggers of every table in `schema` that has them (after the
/// cut-over, or when the job is aborted, before any change log goes).
pub(super) async fn drop_cascade_triggers(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    let rows: Vec<String> = sqlx::query_scalar(LEFT_CASCADE_TRIGGERS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    for name in rows {
        conn.execute(drop_trigger_sql(schema, &name).as_str())
            .await?;
    }
    Ok(())
}

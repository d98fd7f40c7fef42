//! Foreign keys across the job's one cut-over (see [`super::foreign_sql`]): read from the
//! catalog, recorded before they move, moved under the cut-over lock, put back after a
//! cut-over that did not rename, and the parents' triggers that log cascaded rows.

use super::context::table_exists;
use super::foreign_sql::{
    add_sql, cascade_trigger_ddl, cascades, collect, drop_sql, forget_sql, moves, moves_ddl,
    record_sql, recorded_sql, Cascaded, ForeignKey, Move, CONSTRAINT_ON_SQL, FOREIGN_KEYS_SQL,
};
use super::names::{names, Names};
use super::sql::{drop_trigger_sql, gate_ddl, log_ddl};
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

/// The cut-over's moves of `tables`, recorded (replacing any earlier record of the job), so a
/// kill between a constraint's drop and its add loses nothing. Outside tables whose
/// constraints move are returned too: the cut-over lock must hold them.
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
            .bind(&m.schema)
            .bind(&m.from)
            .bind(&m.to)
            .bind(&m.original)
            .bind(&m.moved)
            .execute(&mut *conn)
            .await
            .context("recording the foreign keys the cut-over moves")?;
    }
    Ok(planned)
}

/// Moves every constraint (the caller holds the cut-over lock over every table involved,
/// with `foreign_key_checks` off).
pub(super) async fn apply_moves(conn: &mut MySqlConnection, planned: &[Move]) -> Result<()> {
    for m in planned {
        conn.execute(drop_sql(&m.schema, &m.from, &m.name).as_str())
            .await
            .with_context(|| {
                format!("moving foreign key {}: dropping it from {}", m.name, m.from)
            })?;
    }
    for m in planned {
        conn.execute(add_sql(&m.schema, &m.to, &m.moved).as_str())
            .await
            .with_context(|| format!("moving foreign key {}: adding it to {}", m.name, m.to))?;
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

/// After a cut-over that did not rename (`swapped` false): every recorded constraint goes back
/// where it was, as it was. After one that did: the record is only forgotten. Idempotent.
pub(super) async fn settle_moves(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    swapped: bool,
) -> Result<()> {
    let exists: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
    )
    .bind(schema)
    .bind(super::foreign_sql::MOVES)
    .fetch_one(&mut *conn)
    .await?;
    if exists == 0 {
        return Ok(());
    }
    let rows = sqlx::query(&recorded_sql(schema))
        .bind(job)
        .fetch_all(&mut *conn)
        .await?;
    let mut swapped = swapped;
    for r in &rows {
        let (cs, from, to): (String, String, String) =
            (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
        // A shadow gone means the rename ran (a caller that could not tell, `abort`, asks).
        if to != from && !table_exists(conn, &cs, &to).await? {
            swapped = true;
        }
    }
    if !swapped {
        if !rows.is_empty() {
            conn.execute(super::foreign_sql::foreign_key_checks_sql(false).as_str())
                .await?;
        }
        for r in &rows {
            let (name, cs, from, to, original): (String, String, String, String, String) = (
                r.try_get(0)?,
                r.try_get(1)?,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(4)?,
            );
            let moved: String = r.try_get(5)?;
            // Back from where it went (the moved clause names the parent's shadow), then onto its table.
            let moved_there = is_on(conn, &cs, &to, &name).await?;
            let on_from = is_on(conn, &cs, &from, &name).await?;
            if moved_there && (to != from || moved != original) {
                conn.execute(drop_sql(&cs, &to, &name).as_str()).await?;
            }
            if !on_from || (to == from && moved_there && moved != original) {
                conn.execute(add_sql(&cs, &from, &original).as_str())
                    .await
                    .with_context(|| format!("putting foreign key {name} back on {from}"))?;
            }
        }
        conn.execute(super::foreign_sql::foreign_key_checks_sql(true).as_str())
            .await?;
    }
    sqlx::query(&forget_sql(schema))
        .bind(job)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Creates (or replaces) the triggers on every parent whose cascading actions change rows of
/// the job's copied tables (`plans`), so those rows reach their change logs; the logs are
/// created here if missing (a child copied later starts with them).
pub(super) async fn ensure_cascade_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    plans: &[TablePlan],
) -> Result<()> {
    let fks = foreign_keys(conn, schema).await?;
    let in_job =
        |fk: &ForeignKey| fk.child_schema == schema && plans.iter().any(|p| p.table == fk.child);
    // A parent in another schema is not followed (its cascades are not logged): see the README.
    let mut parents: Vec<(String, String)> = fks
        .iter()
        .filter(|f| in_job(f) && f.parent_schema == schema)
        .filter(|f| cascades(&f.on_update) || cascades(&f.on_delete))
        .map(|f| (f.parent_schema.clone(), f.parent.clone()))
        .collect();
    parents.sort();
    parents.dedup();
    if parents.is_empty() {
        return Ok(());
    }
    conn.execute(gate_ddl(schema).as_str()).await?;
    let logs: Vec<(String, Names)> = plans
        .iter()
        .map(|p| (p.table.clone(), names(&p.table)))
        .collect();
    for (_, n) in &logs {
        conn.execute(log_ddl(schema, n).as_str()).await?;
    }
    for (ps, parent) in &parents {
        let children: Vec<Cascaded<'_>> = fks
            .iter()
            .filter(|f| in_job(f) && &f.parent_schema == ps && &f.parent == parent)
            .map(|f| {
                let plan = plans
                    .iter()
                    .find(|p| p.table == f.child)
                    .expect("in the job");
                let log = &logs
                    .iter()
                    .find(|(t, _)| *t == f.child)
                    .expect("in the job")
                    .1
                    .log;
                Cascaded {
                    fk: f,
                    log,
                    key: &plan.key,
                }
            })
            .collect();
        let n = names(parent);
        for (name, ddl) in n
            .cascade
            .iter()
            .zip(cascade_trigger_ddl(ps, parent, &n.cascade, &children))
        {
            // Replaced every run: the job's tables (and so the children to log) may differ.
            conn.execute(drop_trigger_sql(ps, name).as_str()).await?;
            if let Some(ddl) = ddl {
                conn.execute(ddl.as_str())
                    .await
                    .with_context(|| format!("creating trigger {name} on {parent}. Fix: GRANT TRIGGER on the schema to the job's user"))?;
            }
        }
    }
    Ok(())
}

/// Drops the cascade-logging triggers of every table in `schema` that has them (after the
/// cut-over, or when the job is aborted, before any change log goes).
pub(super) async fn drop_cascade_triggers(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? \
         AND (TRIGGER_NAME LIKE '%\\_myrecode\\_bup' OR TRIGGER_NAME LIKE '%\\_myrecode\\_bde')",
    )
    .bind(schema)
    .fetch_all(&mut *conn)
    .await?;
    for name in rows {
        conn.execute(drop_trigger_sql(schema, &name).as_str())
            .await?;
    }
    Ok(())
}

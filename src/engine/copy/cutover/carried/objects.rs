//! The schema's views, routines and events across the job's cut-over (see
//! [`crate::engine::copy::cutover::carried::objects_sql`]): read and recorded before the last group's cut-over, recreated
//! right after its rename, settled by the next run from the record whatever instant a kill
//! chose; then the schema's default charset, once no table of it keeps a legacy one.

use crate::db::quote;
use crate::engine::copy::catalog::is_mariadb;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::cutover::carried::objects_sql::applied_sql;
use crate::engine::copy::cutover::carried::objects_sql::pending_sql;
use crate::engine::copy::cutover::carried::objects_sql::record_ddl;
use crate::engine::copy::cutover::carried::objects_sql::record_sql;
use crate::engine::copy::cutover::carried::objects_sql::recreate;
use crate::engine::copy::cutover::carried::objects_sql::schema_default_sql;
use crate::engine::copy::cutover::carried::objects_sql::LEGACY_TABLES_SQL;
use crate::engine::copy::cutover::carried::objects_sql::OBJECTS;
use crate::engine::copy::cutover::carried::objects_sql::SEPARATOR;
use crate::engine::copy::cutover::carried::own_triggers_sql::{
    session_sql, use_sql, CONTEXT_RESET_SQL, CONTEXT_SAVE_SQL,
};
use crate::inventory::objects::Kind;
use crate::inventory::objects::{read_objects, schema_charset};
use crate::recode::objects::Reading;
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection};

/// What the rehearsal and `plan --check` ask first: every view, routine and event that the
/// cut-over would recreate can be (its texts decided), and a view's new query is one the
/// server accepts (tried under a scratch name); an error names the object and the fix.
pub async fn trial_objects(
    conn: &mut MySqlConnection,
    schema: &str,
    reading: &Reading,
) -> Result<usize> {
    let mariadb = is_mariadb(conn).await?;
    let mut n = 0;
    for o in read_objects(conn, schema).await? {
        let Some(statements) = recreate(&o, reading, mariadb).map_err(|e| {
            anyhow!("{e}. Nothing was changed. Fix: give the job's columns a fixed `source:` (the label their values have), or recreate the object with the text it should hold before the job")
        })?
        else {
            continue;
        };
        n += 1;
        if o.kind != Kind::View {
            continue;
        }
        let scratch = "_myrecode_try_view";
        let as_scratch = statements[0].replacen(
            &format!(" VIEW {} AS ", quote::ident(&o.name)),
            &format!(" VIEW {} AS ", quote::ident(scratch)),
            1,
        );
        conn.execute(use_sql(schema).as_str()).await?;
        let tried = conn.execute(as_scratch.as_str()).await;
        conn.execute(format!("DROP VIEW IF EXISTS {}", quote::table(schema, scratch)).as_str())
            .await?;
        tried.map_err(|e| {
            anyhow!("the view `{}` recreated in UTF-8 is refused by the server: {e}. Nothing was changed. Fix: correct the view (its text is read as the job's values are) before the job", o.name)
        })?;
    }
    Ok(n)
}

/// Before the job's last cut-over: every view, routine and event holding legacy text or
/// declaring a legacy string, recorded with the statements that recreate it in UTF-8
/// (an object recorded by an earlier run keeps its record). Returns how many need it.
pub async fn record_objects(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    reading: &Reading,
) -> Result<usize> {
    let mariadb = is_mariadb(conn).await?;
    let objects = read_objects(conn, schema).await?;
    let mut wanted = Vec::new();
    for o in &objects {
        let statements = recreate(o, reading, mariadb).map_err(|e| {
            anyhow!("{e}. Nothing was changed. Fix: give the job's columns a fixed `source:` (the label their values have), so the schema's texts are read as they are")
        })?;
        if let Some(s) = statements {
            wanted.push((o, s));
        }
    }
    if wanted.is_empty() {
        return Ok(0);
    }
    conn.execute(record_ddl(schema).as_str()).await?;
    for (o, statements) in &wanted {
        sqlx::query(&record_sql(schema))
            .bind(job)
            .bind(o.kind.word())
            .bind(&o.name)
            .bind(&o.create)
            .bind(statements.join(SEPARATOR))
            .bind(&o.sql_mode)
            .execute(&mut *conn)
            .await
            .context("recording the views, routines and events the cut-over recreates")?;
    }
    Ok(wanted.len())
}

/// After the job's last rename (and by any later run): each recorded object not yet
/// recreated is, under its own `sql_mode` and a utf8mb4 client; idempotent.
pub(crate) async fn apply_objects(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
) -> Result<usize> {
    if !table_exists(conn, schema, OBJECTS).await? {
        return Ok(0);
    }
    let pending: Vec<(String, String, String, String)> = sqlx::query_as(&pending_sql(schema))
        .bind(job)
        .fetch_all(&mut *conn)
        .await?;
    if pending.is_empty() {
        return Ok(0);
    }
    conn.execute(CONTEXT_SAVE_SQL).await?;
    conn.execute(use_sql(schema).as_str()).await?;
    for (kind, name, statements, sql_mode) in &pending {
        conn.execute(session_sql(sql_mode, "utf8mb4", "utf8mb4_general_ci").as_str())
            .await?;
        for s in statements.split(SEPARATOR) {
            if let Err(e) = conn.execute(s).await {
                conn.execute(CONTEXT_RESET_SQL).await.ok();
                return Err(anyhow::Error::new(e).context(format!(
                    "recreating the {} `{name}` in UTF-8. Fix: the job's user needs CREATE VIEW / CREATE ROUTINE / ALTER ROUTINE / EVENT on the schema (and SET_USER_ID or SUPER to keep another definer); run the job again to finish",
                    kind.to_lowercase()
                )));
            }
        }
        sqlx::query(&applied_sql(schema))
            .bind(job)
            .bind(kind)
            .bind(name)
            .execute(&mut *conn)
            .await?;
    }
    conn.execute(CONTEXT_RESET_SQL).await?;
    Ok(pending.len())
}

/// Once no base table of the schema (besides myrecode's own) keeps a legacy default, the
/// schema's default becomes utf8mb4 too: tables and routines created later are UTF-8.
pub(crate) async fn schema_default(
    conn: &mut MySqlConnection,
    schema: &str,
    collation: &str,
) -> Result<bool> {
    let legacy: i64 = sqlx::query_scalar(LEGACY_TABLES_SQL)
        .bind(schema)
        .fetch_one(&mut *conn)
        .await?;
    if legacy > 0 || schema_charset(conn, schema).await? == "utf8mb4" {
        return Ok(false);
    }
    conn.execute(schema_default_sql(schema, collation).as_str())
    .await
    .context("making utf8mb4 the schema's default. Fix: the job's user needs ALTER on the schema; run the job again to finish")?;
    Ok(true)
}

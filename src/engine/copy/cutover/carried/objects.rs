//! The schema's views, routines and events across the job's cut-over (see
//! [`crate::engine::copy::cutover::carried::objects_sql`]): read and recorded before the last group's cut-over, recreated
//! right after its rename, settled by the next run from the record whatever instant a kill
//! chose; then the schema's default charset, once no table of it keeps a legacy one.

use crate::bookkeeping::checkpoint::State;
use crate::db::quote;
use crate::engine::copy::catalog::is_mariadb;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::objects_sql::applied_sql;
use crate::engine::copy::cutover::carried::objects_sql::pending_sql;
use crate::engine::copy::cutover::carried::objects_sql::record_ddl;
use crate::engine::copy::cutover::carried::objects_sql::record_sql;
use crate::engine::copy::cutover::carried::objects_sql::recreate;
use crate::engine::copy::cutover::carried::objects_sql::OBJECTS;
use crate::engine::copy::cutover::carried::objects_sql::SEPARATOR;
use crate::engine::copy::cutover::carried::own_triggers::recode_of;
use crate::engine::copy::cutover::carried::own_triggers_sql::{
    session_sql, use_sql, CONTEXT_RESET_SQL, CONTEXT_SAVE_SQL,
};
use crate::engine::copy::setup::shadow_sql::plans_collation;
use crate::engine::copy::table::context::Ctx;
use crate::engine::table_plan::TablePlan;
use crate::inventory::objects::read_objects;
use crate::inventory::objects::Kind;
use crate::inventory::objects::Object;
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

/// After the job's last rename (and by any later run): each recorded object not yet
/// recreated is, under its own `sql_mode` and a utf8mb4 client; idempotent.
async fn apply_objects(conn: &mut MySqlConnection, schema: &str, job: &str) -> Result<usize> {
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

/// The schema's views, routines and events the job's last cut-over recreates in UTF-8, each
/// with the statements that do it.
pub(crate) struct Objects {
    /// Every object holding legacy text or declaring a legacy string, with its statements.
    wanted: Vec<(Object, Vec<String>)>,
}

impl Carried for Objects {
    /// Every object of the schema, read as the last group's copies (`cut.ctxs`, `cut.plans`)
    /// read their texts ([`reading`]).
    async fn plan(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self> {
        let reading = reading(cut.ctxs, cut.plans);
        let mariadb = is_mariadb(conn).await?;
        let objects = read_objects(conn, cut.schema).await?;
        let mut wanted = Vec::new();
        for o in objects {
            let statements = recreate(&o, &reading, mariadb).map_err(|e| {
                anyhow!("{e}. Nothing was changed. Fix: give the job's columns a fixed `source:` (the label their values have), so the schema's texts are read as they are")
            })?;
            if let Some(s) = statements {
                wanted.push((o, s));
            }
        }
        Ok(Objects { wanted })
    }

    /// In `_myrecode_objects` before the last cut-over (an object recorded by an earlier run
    /// keeps its record).
    async fn record(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()> {
        if self.wanted.is_empty() {
            return Ok(());
        }
        let (schema, job) = (cut.schema, cut.job);
        conn.execute(record_ddl(schema).as_str()).await?;
        for (o, statements) in &self.wanted {
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
        Ok(())
    }

    /// After the job's last rename: from the record, as a later run would ([`Objects::settle`]).
    async fn apply(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()> {
        Self::settle(conn, cut).await.map(|_| ())
    }

    /// Each recorded object not yet recreated is ([`apply_objects`]); idempotent.
    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        apply_objects(conn, cut.schema, cut.job).await?;
        Ok(Vec::new())
    }
}

/// How the schema's views, routines and events are read, from the last group's copies: the
/// labels their texts have, and their targets' collation.
pub(crate) fn reading(ctxs: &[Ctx<'_>], plans: &[TablePlan]) -> Reading {
    let mut labels = Vec::new();
    for l in ctxs.iter().flat_map(|c| recode_of(c).labels) {
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    Reading {
        labels,
        collation: plans_collation(plans),
    }
}

//! The tables' own triggers across their cut-over (see [`crate::engine::copy::cutover::carried::own_triggers_sql`]): read,
//! recorded before the cut-over, moved to the shadows under its lock, and settled by the next
//! run whatever instant a kill chose.

use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::names::names;
use crate::engine::copy::catalog::own_triggers;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::catalog::OwnTrigger;
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::own_triggers_sql::{
    as_sent, context_sql, create_sql, forget_sql, record_ddl, record_sql, recorded_sql, use_sql,
    Recode, CONTEXT_RESET_SQL, CONTEXT_SAVE_SQL, MOVED_TRIGGERS, TRIGGER_TABLE_SQL,
};
use crate::engine::copy::setup::shadow::labels;
use crate::engine::copy::setup::shadow_sql::plans_collation;
use crate::engine::copy::setup::sql::drop_trigger_sql;
use crate::engine::copy::table::context::Ctx;
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::BTreeMap;

/// Creates `triggers` on `table` in order, each under its own `sql_mode` and character set
/// context, their legacy text recoded on a shadow ([`as_sent`]).
async fn create_all(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    triggers: &[&OwnTrigger],
    recode: Option<&Recode>,
) -> Result<()> {
    let sent = triggers
        .iter()
        .map(|t| as_sent(t, recode))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("{e}. Fix: give the job's columns of `{table}` a fixed `source:`, so the trigger's texts are read as its values are"))?;
    conn.execute(CONTEXT_SAVE_SQL).await?;
    conn.execute(use_sql(schema).as_str()).await?;
    for t in &sent {
        conn.execute(context_sql(t).as_str()).await?;
        let created = conn.execute(create_sql(table, t).as_str()).await;
        if let Err(e) = created {
            conn.execute(CONTEXT_RESET_SQL).await.ok();
            return Err(anyhow::Error::new(e).context(format!(
                "creating trigger `{}` on {table}. Fix: the job's user needs the TRIGGER privilege, and SET_USER_ID (MySQL) or SUPER to keep its definer {}",
                t.name, t.definer
            )));
        }
    }
    conn.execute(CONTEXT_RESET_SQL).await?;
    Ok(())
}

/// Under the cut-over lock, the last step before the rename: each table's own triggers
/// dropped from it and created on its shadow, in their order, their texts read with
/// `recode` (by table).
async fn apply_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    triggers: &[OwnTrigger],
    recode: &BTreeMap<String, Recode>,
) -> Result<()> {
    let mut tables: Vec<&str> = triggers.iter().map(|t| t.table.as_str()).collect();
    tables.dedup();
    for table in tables {
        let mine: Vec<&OwnTrigger> = triggers.iter().filter(|t| t.table == table).collect();
        for t in &mine {
            conn.execute(drop_trigger_sql(schema, &t.name).as_str())
                .await?;
        }
        create_all(conn, schema, &names(table).shadow, &mine, recode.get(table)).await?;
    }
    Ok(())
}

/// Settles what a cut-over left of its trigger moves; idempotent. Every recorded trigger
/// ends up on its table (the original before the rename, the recoded table after it: the
/// rename carried those on the shadow) and on no shadow. Then the record is forgotten.
async fn settle_triggers(conn: &mut MySqlConnection, schema: &str, job: &str) -> Result<()> {
    if !table_exists(conn, schema, MOVED_TRIGGERS).await? {
        return Ok(());
    }
    let rows = sqlx::query(&recorded_sql(schema))
        .bind(job)
        .fetch_all(&mut *conn)
        .await?;
    let mut recorded = Vec::new();
    for r in &rows {
        recorded.push(OwnTrigger {
            name: r.try_get(0)?,
            table: r.try_get(1)?,
            event: r.try_get(2)?,
            timing: r.try_get(3)?,
            order: r.try_get(4)?,
            body: r.try_get(5)?,
            sql_mode: r.try_get(6)?,
            definer: r.try_get(7)?,
            charset_client: r.try_get(8)?,
            collation_connection: r.try_get(9)?,
        });
    }
    let mut missing: Vec<&OwnTrigger> = Vec::new();
    for t in &recorded {
        let on: Option<String> = sqlx::query_scalar(TRIGGER_TABLE_SQL)
            .bind(schema)
            .bind(&t.name)
            .fetch_optional(&mut *conn)
            .await?;
        match on {
            Some(table) if table == t.table => {}
            Some(_) => {
                // On the shadow of a cut-over that did not rename.
                conn.execute(drop_trigger_sql(schema, &t.name).as_str())
                    .await?;
                missing.push(t);
            }
            None => missing.push(t),
        }
    }
    for table in recorded.iter().map(|t| t.table.as_str()) {
        let mine: Vec<&OwnTrigger> = missing
            .iter()
            .copied()
            .filter(|t| t.table == table)
            .collect();
        if !mine.is_empty() {
            create_all(conn, schema, table, &mine, None).await?;
            missing.retain(|t| t.table != table);
        }
    }
    sqlx::query(&forget_sql(schema))
        .bind(job)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// How a copied table's texts outside its values (trigger bodies) are read: its columns'
/// labels (fixed, or their priors') and the collation of its targets.
pub(crate) fn recode_of(ctx: &Ctx<'_>) -> Recode {
    let priors = (ctx.plan.columns.iter())
        .zip(&ctx.decider.columns)
        .filter_map(|(c, (_, _, p, _))| Some((c.name.clone(), p.clone()?)))
        .collect();
    Recode {
        labels: labels(ctx.plan, &priors),
        collation: plans_collation([ctx.plan]),
    }
}

/// The tables' own triggers a cut-over moves to their shadows, and how each table's are
/// read there.
#[derive(Default)]
pub(crate) struct OwnTriggers {
    /// The application's triggers on the cut-over's tables, table by table, in firing order.
    pub(crate) own: Vec<OwnTrigger>,
    /// How each table's triggers read their legacy text on the shadow.
    pub(crate) recode: BTreeMap<String, Recode>,
}

impl Carried for OwnTriggers {
    /// Every trigger of the application's on the cut-over's tables.
    async fn plan(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self> {
        let mut own = Vec::new();
        for ctx in cut.ctxs {
            own.extend(own_triggers(conn, cut.schema, &ctx.plan.table).await?);
        }
        let recode = (cut.ctxs.iter())
            .map(|c| (c.plan.table.clone(), recode_of(c)))
            .collect();
        Ok(OwnTriggers { own, recode })
    }

    /// In `_myrecode_triggers` (replacing any earlier record of the job).
    async fn record(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()> {
        if self.own.is_empty() {
            return Ok(());
        }
        let (schema, job) = (cut.schema, cut.job);
        conn.execute(record_ddl(schema).as_str()).await?;
        sqlx::query(&forget_sql(schema))
            .bind(job)
            .execute(&mut *conn)
            .await?;
        for t in &self.own {
            sqlx::query(&record_sql(schema))
                .bind(job)
                .bind(&t.name)
                .bind(&t.table)
                .bind(&t.event)
                .bind(&t.timing)
                .bind(t.order)
                .bind(&t.body)
                .bind(&t.sql_mode)
                .bind(&t.definer)
                .bind(&t.charset_client)
                .bind(&t.collation_connection)
                .execute(&mut *conn)
                .await
                .context("recording the triggers the cut-over moves")?;
        }
        Ok(())
    }

    /// Under the cut-over lock ([`apply_triggers`]).
    async fn apply(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()> {
        if self.own.is_empty() {
            return Ok(());
        }
        apply_triggers(conn, cut.schema, &self.own, &self.recode).await
    }

    /// [`settle_triggers`].
    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        settle_triggers(conn, cut.schema, cut.job).await?;
        Ok(Vec::new())
    }
}

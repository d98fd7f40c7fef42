//! The schema's and its tables' default charsets across the job's cut-over: each table whose
//! columns all hold UTF-8 (or no text) gets utf8mb4 as its default too (metadata only), and
//! once no base table of the schema holds a column in a legacy charset, the schema's default
//! becomes utf8mb4 with the job's collation, so tables, columns and routines created later
//! are UTF-8. Set after the job's last rename, after the views, routines and events;
//! idempotent, so a run after a kill sets them again.

use crate::bookkeeping::checkpoint::{self, State};
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::objects_sql::{
    default_only_tables_sql, legacy_tables_sql, schema_default_sql, table_default_sql,
};
use crate::engine::copy::setup::shadow_sql::plans_collation;
use crate::inventory::objects::schema_charset;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// The most rows of a table without transactions whose default is changed by the server's
/// rebuild (writes wait for it): as many as a keyless table rebuilt under the cut-over's lock.
const REBUILT_DEFAULT_MAX_ROWS: u64 = 10_000;

/// The tables whose only legacy is their default get utf8mb4 as it: metadata only on InnoDB;
/// a MyISAM or Aria table is rebuilt by the server (writes wait, reads go on), so only up to
/// [`REBUILT_DEFAULT_MAX_ROWS`]; a bigger one keeps its default and is named in the log with
/// the statement. Returns the tables kept.
async fn table_defaults(
    conn: &mut MySqlConnection,
    schema: &str,
    collation: &str,
) -> Result<Vec<String>> {
    let tables: Vec<(String, Option<String>, u64)> = sqlx::query_as(&default_only_tables_sql())
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    let mut kept = Vec::new();
    for (table, engine, rows) in tables {
        let instant = engine
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case("innodb"));
        let sql = table_default_sql(schema, &table, collation, instant);
        if !instant && rows > REBUILT_DEFAULT_MAX_ROWS {
            tracing::warn!(table = %table, rows, statement = %sql, "table default kept: the server would rebuild the table, writes waiting; run the statement in a quiet hour");
            kept.push(table);
            continue;
        }
        if let Err(e) = conn.execute(sql.as_str()).await {
            tracing::warn!(table = %table, engine = ?engine, error = %e, "table default kept");
            kept.push(table);
        }
    }
    Ok(kept)
}

/// Once no base table of the schema outside job `job` (and besides myrecode's own) holds a
/// column in a legacy charset, the schema's default becomes utf8mb4 too: tables and routines
/// created later are UTF-8. A column the job's tables keep single-byte was kept by the plan,
/// with its reason (ASCII tokens); a table outside the job may still hold legacy text the
/// application writes through its old connection. The tables' own defaults first
/// ([`table_defaults`]).
async fn schema_default(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    collation: &str,
) -> Result<bool> {
    table_defaults(conn, schema, collation).await?;
    let legacy: Vec<String> = sqlx::query_scalar(&legacy_tables_sql())
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    let mine = checkpoint::job_tables(conn, schema, job).await?;
    let outside = legacy.iter().filter(|t| !mine.contains(t)).count();
    if outside > 0 || schema_charset(conn, schema).await? == "utf8mb4" {
        return Ok(false);
    }
    conn.execute(schema_default_sql(schema, collation).as_str())
    .await
    .context("making utf8mb4 the schema's default. Fix: the job's user needs ALTER on the schema; run the job again to finish")?;
    Ok(true)
}

/// The collation the schema's default takes: the job's last group's targets'.
pub(crate) struct SchemaDefault {
    /// `utf8mb4_…`, as the group's copies have it.
    collation: String,
}

impl Carried for SchemaDefault {
    /// From `cut.plans`; reads nothing.
    async fn plan(_: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self> {
        Ok(SchemaDefault {
            collation: plans_collation(cut.plans),
        })
    }

    /// Nothing: the schema's own default is the record.
    async fn record(&self, _: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<()> {
        Ok(())
    }

    /// After the job's last rename and its objects ([`schema_default`]).
    async fn apply(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()> {
        schema_default(conn, cut.schema, cut.job, &self.collation)
            .await
            .map(|_| ())
    }

    /// Planned and applied again: idempotent.
    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        Self::plan(conn, cut).await?.apply(conn, cut).await?;
        Ok(Vec::new())
    }
}

/// At the end of a job without a copy (in place only), what the last cut-over does for a
/// copy: the tables' and the schema's defaults, with the collation of `plans`' targets.
pub(crate) async fn after_in_place(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    plans: &[crate::engine::table_plan::TablePlan],
) -> Result<()> {
    schema_default(conn, schema, job, &plans_collation(plans))
        .await
        .map(|_| ())
}

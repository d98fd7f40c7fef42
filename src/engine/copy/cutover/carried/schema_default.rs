//! The schema's default charset across the job's cut-over: once no base table of the schema
//! keeps a legacy default, utf8mb4 with the job's collation, so tables and routines created
//! later are UTF-8. Set after the job's last rename, after the views, routines and events;
//! idempotent, so a run after a kill sets it again.

use crate::bookkeeping::checkpoint::State;
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::objects_sql::{schema_default_sql, LEGACY_TABLES_SQL};
use crate::engine::copy::setup::shadow_sql::plans_collation;
use crate::inventory::objects::schema_charset;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// Once no base table of the schema (besides myrecode's own) keeps a legacy default, the
/// schema's default becomes utf8mb4 too: tables and routines created later are UTF-8.
async fn schema_default(conn: &mut MySqlConnection, schema: &str, collation: &str) -> Result<bool> {
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
        schema_default(conn, cut.schema, &self.collation)
            .await
            .map(|_| ())
    }

    /// Planned and applied again: idempotent.
    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        Self::plan(conn, cut).await?.apply(conn, cut).await?;
        Ok(Vec::new())
    }
}

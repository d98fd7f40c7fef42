//! The session's staging table: a batch's values only our codecs write, joined by the copy's
//! statement. Each connection that copies has its own.

use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::write_sql;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// (Re)creates this session's staging table: the key columns as in the table, a value and a flag per job column.
pub(crate) async fn create_stage(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<()> {
    if ctx.key_types.is_empty() {
        // A table rebuilt under the cut-over's lock (no key to page over, or one the job
        // recodes) stages nothing, and a stage keyed by no column is no table: the retry of
        // a failed cut-over asks for every table's.
        return Ok(());
    }
    conn.execute(write_sql::stage_drop_sql().as_str()).await?;
    conn.execute(write_sql::stage_ddl(&ctx.key_types, ctx.job_columns.len()).as_str())
        .await
        .context("creating the session's staging table. Fix: GRANT CREATE TEMPORARY TABLES on the schema to the job's user")?;
    Ok(())
}

/// Empties the staging table. Only outside a transaction: `TRUNCATE` commits (even for a
/// temporary table), but it is far cheaper than deleting a batch's rows inside one.
pub(crate) async fn clear_stage(conn: &mut MySqlConnection) -> Result<()> {
    conn.execute(write_sql::stage_truncate_sql().as_str())
        .await
        .context("emptying the staging table")?;
    Ok(())
}

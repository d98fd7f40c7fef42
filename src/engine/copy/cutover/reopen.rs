//! The tables a cut-over closed for its moves (their drained change logs dropped, so the
//! application's writes fail rather than go through half-moved) opened again, once what it
//! moved is settled, when its rename did not run.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::names;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::cutover::swap_sql::reopen_log_sql;
use crate::engine::copy::myisam::engines::has_transactions;
use crate::engine::copy::table::check_again::{check_again, checked_before};
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// Opens each of `tables` a cut-over closed and did not rename (its log gone, the spare
/// still there); called once what that cut-over moved is settled, never before. Returns
/// those without transactions, each sent back to its check first (with the checkpoint that
/// says so): a write refused there
/// while it was closed had changed its row before the trigger after it failed, unlogged. (A
/// keyless one is rebuilt from its rows as they stand; its phase never leaves `copying`.)
pub(crate) async fn reopen(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[&str],
) -> Result<Vec<(String, State)>> {
    let mut again = Vec::new();
    for table in tables {
        let n = names(table);
        if table_exists(conn, schema, &n.log).await?
            || !table_exists(conn, schema, &n.spare_log).await?
        {
            continue;
        }
        if !has_transactions(conn, schema, table).await? {
            if let Some(mut state) = checkpoint::load(conn, schema, job, table).await? {
                if !state.done && checked_before(&state) {
                    check_again(conn, schema, job, table, &mut state).await?;
                    again.push((table.to_string(), state));
                }
            }
        }
        conn.execute(reopen_log_sql(schema, &n).as_str())
            .await
            .with_context(|| format!("opening {table} again (its change log back)"))?;
    }
    Ok(again)
}

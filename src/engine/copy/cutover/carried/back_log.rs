//! The back log across the cut-over (its statements: [`crate::engine::copy::setup::back_log_sql`]):
//! the table (made with the change log since its triggers name it, and again here, if
//! missing, for a copy begun by an older myrecode), the triggers put on each shadow under it (after the
//! drains: the tool's own writes are not logged), carried to the live name by the rename.
//! From the swap until `cleanup`, every key the application writes is there for `revert`.
//!
//! Not for a table whose key the job recodes (its keys differ between the two tables) or
//! a keyless one: `revert` refuses those, saying why. Killed before the rename, the triggers
//! are left on a shadow; the settle drops them there, and the next cut-over puts them back.

use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::names::names;
use crate::db::sqlmode;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::setup::back_log_sql::{back_log_ddl, back_trigger_ddl};
use crate::engine::copy::setup::sql::drop_trigger_sql;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};

/// The back logs of the group's tables and their triggers' statements.
#[derive(Default)]
pub(crate) struct BackLog {
    /// The back logs' DDL, run before the lock.
    tables: Vec<String>,
    /// Drop-if-exists and create statements of the triggers, in order, run under it.
    statements: Vec<String>,
}

impl Carried for BackLog {
    async fn plan(_: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self> {
        let mut b = BackLog::default();
        for ctx in cut.ctxs {
            let key = &ctx.plan.key;
            if key.is_empty()
                || key.iter().any(|k| k.is_recoded())
                || ctx.shadow_key.iter().any(|k| k.is_recoded())
            {
                continue;
            }
            let n = &ctx.names;
            b.tables.push(back_log_ddl(cut.schema, n));
            for (name, ddl) in n
                .back_triggers
                .iter()
                .zip(back_trigger_ddl(cut.schema, &n.shadow, n, key))
            {
                b.statements.push(drop_trigger_sql(cut.schema, name));
                b.statements.push(ddl);
            }
        }
        // Created under the application's sql_mode, which they run under (db::sqlmode).
        b.statements = sqlmode::as_application(b.statements);
        Ok(b)
    }

    async fn record(&self, conn: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<()> {
        // The record is the back log itself, made now, before the lock.
        for ddl in &self.tables {
            conn.execute(ddl.as_str())
                .await
                .context("creating the back log `revert` reads after the cut-over")?;
        }
        Ok(())
    }

    async fn apply(&self, conn: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<()> {
        for s in &self.statements {
            conn.execute(s.as_str()).await?;
        }
        Ok(())
    }

    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        // Left on a shadow (the rename did not run): it would log the copy's own replays.
        for table in cut.tables {
            let n = names(table);
            if table_exists(conn, cut.schema, &n.shadow).await? {
                for name in &n.back_triggers {
                    conn.execute(drop_trigger_sql(cut.schema, name).as_str())
                        .await?;
                }
            }
        }
        Ok(Vec::new())
    }
}

//! The bridge's triggers across the cut-over (their statement:
//! [`crate::clients::bridge_sql::trigger_sql`]): planned from the bridge's record
//! (`_myrecode_bridge`, written before the copy, [`crate::engine::bridge::install`]) and the
//! group's copies, created on each shadow under the lock before the tables' own triggers
//! (so they fire first, and an application trigger sees the text as the client meant it),
//! carried to the live name by the rename. Killed before the rename, they are left on a
//! shadow, where they never fire for the job's sessions; the next cut-over drops them there
//! with the copy's other triggers ([`super::cascade::logging::settle_shadow_cascades`]) and
//! creates them again. Killed after it, they are on the live table already.

use crate::bookkeeping::checkpoint::State;
use crate::clients::bridge_sql::{trigger_sql, Bridge};
use crate::db::sqlmode;
use crate::engine::bridge::recorded;
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::setup::sql::drop_trigger_sql;
use anyhow::Result;
use sqlx::{Executor, MySqlConnection};

/// The statements that put the bridge's triggers on the group's shadows (none without a bridge).
#[derive(Default)]
pub(crate) struct BridgeTriggers {
    /// Drop-if-exists and create statements, in order.
    statements: Vec<String>,
}

impl Carried for BridgeTriggers {
    async fn plan(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self> {
        let Some(r) = recorded(conn, cut.schema, cut.job).await? else {
            return Ok(BridgeTriggers::default());
        };
        if r.removed {
            return Ok(BridgeTriggers::default());
        }
        let b = Bridge {
            schema: cut.schema.to_string(),
            legacy: r.legacy,
            users: r.users,
            probe: (String::new(), String::new()),
        };
        let mut statements = Vec::new();
        for ctx in cut.ctxs {
            let columns: Vec<String> = (ctx.job_names().into_iter())
                .zip(&ctx.target_charsets)
                .filter(|(_, cs)| cs.as_deref() == Some("utf8mb4"))
                .map(|(n, _)| n)
                .collect();
            if columns.is_empty() {
                continue;
            }
            for (i, name) in ctx.names.bridge.iter().enumerate() {
                statements.push(drop_trigger_sql(cut.schema, name));
                statements.push(trigger_sql(&b, &ctx.names.shadow, name, i == 1, &columns));
            }
        }
        // Created under the application's sql_mode, which they run under (db::sqlmode).
        Ok(BridgeTriggers {
            statements: sqlmode::as_application(statements),
        })
    }

    async fn record(&self, _: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<()> {
        // The record is the bridge's row, written before the copy.
        Ok(())
    }

    async fn apply(&self, conn: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<()> {
        for s in &self.statements {
            if let Err(e) = conn.execute(s.as_str()).await {
                // The tool's own mode back before the error goes up (its last statement).
                let _ = conn.execute(sqlmode::tool_mode_sql().as_str()).await;
                return Err(e.into());
            }
        }
        Ok(())
    }

    async fn settle(_: &mut MySqlConnection, _: &Cut<'_, '_>) -> Result<Vec<(String, State)>> {
        // Left on a shadow: dropped with the copy's triggers there; after the rename: in place.
        Ok(Vec::new())
    }
}

//! A copied table without transactions (MyISAM, Aria) across faults, where no rollback
//! cleans up after a lost connection or a crash.
//!
//! A statement of a connection that was cut (or of a killed run) goes on in the server until
//! it ends: on an InnoDB shadow its row locks hold the new attempt back and its transaction
//! rolls back, but on a MyISAM shadow it may write the rows the new attempt has just cleared,
//! and the new attempt's insert then collides with them. So before a copy touches a shadow
//! without transactions, every statement of an earlier connection still naming it is killed
//! and waited out.
//!
//! Its change log cannot keep the table itself exact through a crash either: a statement the
//! application runs right after a restart may change the table and then fail in its trigger
//! chain (MariaDB repairs a crashed MyISAM table on first open, and the first statements
//! through its triggers fail with 1146 on our log). InnoDB rolls back the log row; the MyISAM
//! change stays, unlogged. A crash repair may also drop rows the shadow holds. So at its
//! cut-over, when the server started since such a table's copy began or it was last compared
//! with its copy (the start is recorded on its checkpoint row), the table is checked by
//! `CHECK TABLE … MEDIUM` (which repairs a table marked crashed on opening it, and finds an
//! index out of step with the rows, which is then repaired: see [`crate::engine::copy::myisam::index_repair`]; what both
//! said is printed), then every row is compared again and each difference replayed.

use crate::engine::copy::myisam::engines::is_transactional;
use crate::engine::copy::myisam::index_repair::{check_said, messages};
use crate::engine::copy::myisam::restarts::{
    record, recorded_start, restarted_since, server_started,
};

use crate::bookkeeping::checkpoint::State;
use crate::db::quote;
use crate::engine::copy::catalog::ENGINE_SQL;
use crate::engine::copy::myisam::index_repair::{check_and_repair, Thoroughness};
use crate::engine::copy::table::check_again::{check_again_from_start, check_now};
use crate::engine::copy::table::context::Ctx;
use crate::engine::events::{Event, Events};
use anyhow::{Context, Result};
use sqlx::MySqlConnection;

/// The other connections of our user running a statement that names `?` (a `LIKE` pattern
/// from [`orphan_pattern`]). The catalog's `ID` is a signed `BIGINT` on MariaDB, unsigned on
/// MySQL: cast, it reads alike on both.
pub const ORPHANS_SQL: &str = "SELECT CAST(ID AS UNSIGNED) FROM information_schema.PROCESSLIST \
     WHERE ID <> CONNECTION_ID() AND USER = SUBSTRING_INDEX(USER(), '@', 1) AND INFO LIKE ?";

/// The `LIKE` pattern of a statement naming `schema`.`table` as our statements quote it.
pub fn orphan_pattern(schema: &str, table: &str) -> String {
    format!("%{}%", quote::table(schema, table))
}

/// Settles a shadow without transactions before a copy touches it (see the module docs):
/// every statement of an earlier connection still naming it killed and waited out; and when
/// the server restarted since the copy began or was last compared, the shadow repaired (a
/// crash leaves its index out of step with its rows: a delete then fails with 1032). What a
/// crash or the repair lost of its rows the cut-over's comparison finds and replays.
pub(crate) async fn settle_shadow(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
) -> Result<()> {
    if !end_orphan_writes(conn, ctx).await? {
        return Ok(());
    }
    let plan = ctx.plan;
    if !restarted_since(
        recorded_start(conn, job, plan).await?,
        server_started(conn).await?,
    ) {
        return Ok(());
    }
    let rows = sqlx::query(&crate::engine::copy::myisam::index_repair::repair_sql(
        &plan.schema,
        &ctx.names.shadow,
    ))
    .fetch_all(&mut *conn)
    .await
    .with_context(|| format!("REPAIR TABLE {}", ctx.names.shadow))?;
    let said = check_said(&messages(&rows));
    tracing::warn!(shadow = %ctx.names.shadow, repair = %said, "the server restarted since the copy began: its shadow without transactions repaired");
    Ok(())
}

/// Kills and waits out every statement of an earlier connection (cut, or of a killed run)
/// still naming this copy's shadow, when the shadow has no transactions (see the module
/// docs). Returns whether it has none.
async fn end_orphan_writes(conn: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<bool> {
    let schema = ctx.plan.schema.as_str();
    let engine: Option<String> = sqlx::query_scalar(ENGINE_SQL)
        .bind(schema)
        .bind(&ctx.names.shadow)
        .fetch_optional(&mut *conn)
        .await?;
    if engine.is_none_or(|e| is_transactional(&e)) {
        return Ok(false);
    }
    let pattern = orphan_pattern(schema, &ctx.names.shadow);
    for round in 0..100 {
        let ids: Vec<u64> = sqlx::query_scalar(ORPHANS_SQL)
            .bind(&pattern)
            .fetch_all(&mut *conn)
            .await
            .context("looking for statements of lost connections on the shadow")?;
        if ids.is_empty() {
            return Ok(true);
        }
        if round % 10 == 0 {
            tracing::warn!(shadow = %ctx.names.shadow, statements = ids.len(), "ending statements of lost connections still writing the shadow");
            for id in ids {
                // Gone meanwhile, or not ours to kill: the next round sees.
                let _ = sqlx::query(&crate::engine::copy::catalog::kill_query_sql(id))
                    .execute(&mut *conn)
                    .await;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    anyhow::bail!(
        "statements of an earlier connection still write {} after being killed for 10 s. Fix: KILL them (SHOW PROCESSLIST), then run again",
        ctx.t(&ctx.names.shadow)
    )
}

/// Compares a table without transactions with its copy again if the server started since it
/// last was (see the module docs). Keyless tables are rebuilt under the cut-over's lock anyway.
pub(crate) async fn recheck_if_restarted(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
    events: &dyn Events,
) -> Result<()> {
    let plan = ctx.plan;
    if plan.key.is_empty() {
        return Ok(());
    }
    let engine: Option<String> = sqlx::query_scalar(ENGINE_SQL)
        .bind(&plan.schema)
        .bind(&plan.table)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(engine) = engine.filter(|e| !is_transactional(e)) else {
        return Ok(());
    };
    let started = server_started(conn).await?;
    if !restarted_since(recorded_start(conn, job, plan).await?, started) {
        return Ok(());
    }
    // The comparison reads by key ranges: an index out of step would hide rows from it.
    let verdict = check_and_repair(conn, &plan.schema, &plan.table, Thoroughness::Medium).await?;
    events.event(&Event::Rechecked {
        table: &plan.table,
        engine: &engine,
        check: &verdict.check,
        repair: verdict.repair.as_deref(),
    });
    // Recorded before the pass: a restart during it changes the start, and the retried
    // cut-over compares again; a kill during it resumes the pass (its phase is saved).
    check_again_from_start(conn, job, plan, state).await?;
    record(conn, job, &plan.schema, &plan.table, started).await?;
    let differed = check_now(conn, ctx, job, state).await?;
    events.event(&Event::Checked {
        table: &plan.table,
        differed,
        batches: None,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_of_lost_connections_are_found_by_the_shadows_quoted_name() {
        assert_eq!(
            orphan_pattern("a`b", "t_myrecode_new"),
            "%`a``b`.`t_myrecode_new`%"
        );
        assert!(ORPHANS_SQL.contains("ID <> CONNECTION_ID()"));
    }
}

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
//! index out of step with the rows, which is then repaired: see [`super::repair`]; what both
//! said is printed), then every row is compared again and each difference replayed.

use super::cascade::{check_again_from_start, check_now};
use super::context::Ctx;
use super::repair::{check_and_repair, Thoroughness};
use super::sql::ENGINE_SQL;
use crate::bookkeeping::checkpoint::{self, State};
use crate::db::quote;
use crate::engine::events::{Event, Events};
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};

/// Storage engines whose writes roll back with the statement (the change log's row with them).
const TRANSACTIONAL: &[&str] = &["InnoDB", "TokuDB", "RocksDB", "ndbcluster"];

/// Whether a table of `engine` rolls its writes back with a failed statement.
pub fn is_transactional(engine: &str) -> bool {
    TRANSACTIONAL.iter().any(|e| e.eq_ignore_ascii_case(engine))
}

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
pub(super) async fn settle_shadow(
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
    let rows = sqlx::query(&super::repair::repair_sql(&plan.schema, &ctx.names.shadow))
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("REPAIR TABLE {}", ctx.names.shadow))?;
    let said = check_said(&messages(&rows));
    tracing::warn!(shadow = %ctx.names.shadow, repair = %said, "the server restarted since the copy began: its shadow without transactions repaired");
    Ok(())
}

/// Each row's message type and text, of a `CHECK TABLE` or `REPAIR TABLE`.
pub(super) fn messages(rows: &[sqlx::mysql::MySqlRow]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| {
            let text = |i| {
                r.try_get::<String, _>(i)
                    .or_else(|_| {
                        r.try_get::<Vec<u8>, _>(i)
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                    })
                    .unwrap_or_default()
            };
            (text(2), text(3))
        })
        .collect()
}

/// The server start recorded on the table's checkpoint row, if any.
pub(super) async fn recorded_start(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &crate::engine::table_plan::TablePlan,
) -> Result<Option<i64>> {
    let recorded: Option<Option<i64>> = sqlx::query_scalar(&recorded_checked_sql(&plan.schema))
        .bind(job)
        .bind(&plan.table)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(recorded.flatten())
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
                let _ = sqlx::query(&super::cutover_sql::kill_query_sql(id))
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

/// Seconds since the server started (`SHOW GLOBAL STATUS`, on MySQL and MariaDB alike).
pub const UPTIME_SQL: &str = "SHOW GLOBAL STATUS LIKE 'Uptime'";
/// The server's clock, in seconds since the epoch.
pub const NOW_SQL: &str = "SELECT CAST(UNIX_TIMESTAMP() AS SIGNED)";

/// Records on the checkpoint row (`?` start, `?` job, `?` table) the start of the server
/// the table's copy began on, or it was last compared on.
pub fn record_checked_sql(schema: &str) -> String {
    format!(
        "UPDATE {} SET checked_under_start = ? WHERE job = ? AND tbl = ?",
        quote::table(schema, checkpoint::CHECKPOINT)
    )
}

/// The recorded start (`?` job, `?` table).
pub fn recorded_checked_sql(schema: &str) -> String {
    format!(
        "SELECT checked_under_start FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, checkpoint::CHECKPOINT)
    )
}

/// Whether a table last compared on the server started at `recorded` (none: never, since
/// the job began) must be compared again on the one started at `now`. The start is computed
/// from whole seconds of uptime, so it wobbles by one; a restart takes longer than two.
pub fn restarted_since(recorded: Option<i64>, now: i64) -> bool {
    recorded.is_none_or(|r| (now - r).abs() > 2)
}

/// What `CHECK TABLE` said beyond "OK", joined; "OK" when nothing more.
pub fn check_said(rows: &[(String, String)]) -> String {
    let said: Vec<String> = rows
        .iter()
        .filter(|(kind, text)| !(kind.eq_ignore_ascii_case("status") && text == "OK"))
        .map(|(kind, text)| format!("{kind}: {text}"))
        .collect();
    if said.is_empty() {
        "OK".to_string()
    } else {
        said.join("; ")
    }
}

/// When the server started, in seconds since the epoch.
pub async fn server_started(conn: &mut MySqlConnection) -> Result<i64> {
    let uptime: String = sqlx::query(UPTIME_SQL)
        .fetch_one(&mut *conn)
        .await
        .context("reading the server's uptime")?
        .try_get(1)?;
    let now: i64 = sqlx::query_scalar(NOW_SQL).fetch_one(&mut *conn).await?;
    Ok(now - uptime.trim().parse::<i64>().unwrap_or(0))
}

/// Records the server's start on a new copy's checkpoint row: with no restart since, the
/// copy, its log and its check saw every change, and its cut-over compares nothing again.
pub(super) async fn record_start(
    conn: &mut MySqlConnection,
    job: &str,
    schema: &str,
    table: &str,
) -> Result<()> {
    let started = server_started(conn).await?;
    record(conn, job, schema, table, started).await
}

async fn record(
    conn: &mut MySqlConnection,
    job: &str,
    schema: &str,
    table: &str,
    started: i64,
) -> Result<()> {
    sqlx::query(&record_checked_sql(schema))
        .bind(started)
        .bind(job)
        .bind(table)
        .execute(&mut *conn)
        .await
        .context("recording the server start the table is compared on")?;
    Ok(())
}

/// Whether `schema`.`table` is in an engine with transactions (a table gone counts as one:
/// nothing of it is left to compare).
pub(super) async fn has_transactions(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<bool> {
    let engine: Option<String> = sqlx::query_scalar(ENGINE_SQL)
        .bind(schema)
        .bind(table)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(engine.is_none_or(|e| is_transactional(&e)))
}

/// Compares a table without transactions with its copy again if the server started since it
/// last was (see the module docs). Keyless tables are rebuilt under the cut-over's lock anyway.
pub(super) async fn recheck_if_restarted(
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
    fn only_tables_without_transactions_are_compared_again() {
        assert!(is_transactional("InnoDB"));
        assert!(is_transactional("innodb"));
        for e in ["MyISAM", "Aria", "MEMORY", "CSV", "ARCHIVE", "MRG_MyISAM"] {
            assert!(!is_transactional(e), "{e}");
        }
    }

    #[test]
    fn statements_of_lost_connections_are_found_by_the_shadows_quoted_name() {
        assert_eq!(
            orphan_pattern("a`b", "t_myrecode_new"),
            "%`a``b`.`t_myrecode_new`%"
        );
        assert!(ORPHANS_SQL.contains("ID <> CONNECTION_ID()"));
    }

    #[test]
    fn a_restart_is_a_start_more_than_two_seconds_away() {
        assert!(restarted_since(None, 1_000));
        assert!(!restarted_since(Some(1_000), 1_001));
        assert!(!restarted_since(Some(1_001), 999));
        assert!(restarted_since(Some(1_000), 1_003));
    }

    #[test]
    fn statements_and_what_check_table_said() {
        assert_eq!(
            record_checked_sql("s"),
            "UPDATE `s`.`_myrecode_checkpoint` SET checked_under_start = ? WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            recorded_checked_sql("s"),
            "SELECT checked_under_start FROM `s`.`_myrecode_checkpoint` WHERE job = ? AND tbl = ?"
        );
        let ok = [("status".to_string(), "OK".to_string())];
        assert_eq!(check_said(&ok), "OK");
        let repaired = [
            (
                "warning".to_string(),
                "1 client is using or hasn't closed the table properly".to_string(),
            ),
            ("status".to_string(), "OK".to_string()),
        ];
        assert_eq!(
            check_said(&repaired),
            "warning: 1 client is using or hasn't closed the table properly"
        );
    }
}

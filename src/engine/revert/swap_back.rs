//! The swap back, as the cut-over's swap is done (`copy/cutover/swap.rs`): a sentry in the
//! name each live table takes, one `LOCK TABLES` on a connection of its own, the back logs
//! drained under it, one `RENAME` of every pair queued on a second connection, then the
//! sentries dropped and the lock released, so the rename runs before any queued write.
//!
//! Killed anywhere before the rename, the server ends the lock with the run's connection and
//! the queued rename fails on the sentries: the application goes on writing to the recoded
//! tables, and the back logs keep every write for the next `revert`. Nothing is closed, so
//! nothing needs a guard.

use super::catch_up::chunk;
use super::check::Reverting;
use super::sql::{drop_revert_sentries_sql, revert_lock_sql, revert_rename_sql, revert_sentry_ddl};
use crate::bookkeeping::names::Names;
use crate::db::connect::ConnectionConfig;
use crate::engine::copy::catalog::{is_sentry, table_exists};
use crate::engine::copy::cutover::swap::{
    connect_renamer, hold_bridge_logins, locker_idle_limit, release_bridge_logins,
    wait_for_queued_rename,
};
use crate::engine::copy::cutover::swap_sql::AUTOCOMMIT_OFF;
use crate::engine::copy::setup::change_log::CUTOVER_LOCK_WAIT;
use crate::engine::copy::setup::sql::{lock_wait_timeout_sql, wait_timeout_sql, UNLOCK_TABLES};
use crate::engine::error::EngineError;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::time::{Duration, Instant};

/// Swaps every table of `tables` back at one instant; returns how long they were locked.
pub async fn swap_back(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    schema: &str,
    job: &str,
    tables: &[Reverting],
) -> Result<Duration> {
    for r in tables {
        place_sentry(conn, schema, r).await?;
    }
    let pairs: Vec<(&str, &Names)> = tables
        .iter()
        .map(|r| (r.table.as_str(), &r.names))
        .collect();
    let mut locker = cfg.connect_one().await?;
    locker
        .execute(lock_wait_timeout_sql(CUTOVER_LOCK_WAIT).as_str())
        .await?;
    // A run whose host vanishes holds the lock this long at most, as the cut-over's does.
    locker
        .execute(wait_timeout_sql(locker_idle_limit()).as_str())
        .await?;
    locker.execute(AUTOCOMMIT_OFF).await?;
    let (mut renamer, renamer_id) = connect_renamer(cfg).await?;
    // A bridged login waits on this until the rename is done, as at the cut-over: one opening
    // during the pause sees the tables latin1 again, and stays unbridged.
    hold_bridge_logins(&mut renamer, schema).await?;
    locker
        .execute(revert_lock_sql(schema, &pairs).as_str())
        .await
        .context("locking the tables for the swap back")?;
    let paused = Instant::now();
    for r in tables {
        while chunk(&mut locker, schema, job, r).await?.entries > 0 {}
    }
    if let Some(hold) = crate::engine::test_hooks::revert_hold() {
        // Test hook: kill tests land with the tables locked and drained.
        tokio::time::sleep(hold).await;
    }
    let rename_sql = revert_rename_sql(schema, &pairs);
    let rename = async {
        renamer
            .execute(rename_sql.as_str())
            .await
            .context("renaming the tables back")
    };
    let release = async {
        wait_for_queued_rename(conn, &mut locker, renamer_id).await?;
        let dropped = locker
            .execute(drop_revert_sentries_sql(schema, &pairs).as_str())
            .await
            .context("dropping the swap back's sentries");
        locker.execute(UNLOCK_TABLES).await?;
        dropped.map(|_| ())
    };
    let (renamed, released) = futures_util::future::join(rename, release).await;
    let pause = paused.elapsed();
    release_bridge_logins(&mut renamer, schema).await;
    released?;
    renamed?;
    Ok(pause)
}

/// A sentry in the name the live table takes (one of ours from a killed revert stays; a
/// table of the user's there stops the revert).
async fn place_sentry(conn: &mut MySqlConnection, schema: &str, r: &Reverting) -> Result<()> {
    let name = &r.names.shadow;
    if table_exists(conn, schema, name).await? {
        if !is_sentry(conn, schema, name).await? {
            return Err(EngineError::NotOurSentry {
                old: crate::db::quote::table(schema, name),
            }
            .into());
        }
        return Ok(());
    }
    conn.execute(revert_sentry_ddl(schema, &r.names).as_str())
        .await
        .context("creating the swap back's sentry")?;
    Ok(())
}

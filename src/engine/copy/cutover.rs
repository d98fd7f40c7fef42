//! The cut-over: the shadow swapped in atomically behind a sentry (see the module docs of
//! [`super`]), and the finish that follows it.

use super::carried::{self, Carried};
use super::cascade::{check_again, checked_before};
use super::cascade::{check_now, restore_cascades, settle_shadow_cascades};
use super::context::{is_sentry, table_exists, Ctx};
use super::cutover_sql::{
    auto_increment_sql, cutover_lock_sql, drop_sentries_sql, kill_query_sql, mark_pattern,
    rename_sql, sentry_ddl, show_create_sql, AUTOCOMMIT_OFF, COMMIT, CONNECTION_ID_SQL, MARKED_SQL,
    RENAME_QUEUED_SQL,
};
use super::nontx::has_transactions;
use super::rebuild::{prepare_maps, rebuild};
use super::replay::{log_len, replay_chunk, replay_some};
use super::setup::{clear_stage, create_stage, CUTOVER_LOCK_WAIT};
use super::sql::{
    close_logs_sql, drop_trigger_sql, lock_wait_timeout_sql, reopen_log_sql, spare_log_ddl,
    UNLOCK_TABLES,
};
use super::Phase;
use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::names;
use crate::bookkeeping::names::Names;
use crate::db::connect::ConnectionConfig;
use crate::engine::error::EngineError;
use crate::engine::table_plan::TablePlan;
use crate::engine::test_hooks;
use anyhow::{bail, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How long the queued rename may wait for the lock connection before giving up, in seconds.
pub(super) const RENAME_LOCK_WAIT: u32 = 20;
/// Cut-over attempts before the run stops (resumably).
pub(super) const CUTOVER_ATTEMPTS: u32 = 6;

/// Waits out (killing if need be) a cut-over rename a killed run left queued, so the tables
/// are looked at only once it has run or failed.
pub(super) async fn settle_leftover_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
) -> Result<()> {
    let pattern = mark_pattern();
    for round in 0..50 {
        let ids: Vec<u64> = sqlx::query_scalar(MARKED_SQL)
            .bind(schema)
            .bind(&pattern)
            .fetch_all(&mut *conn)
            .await
            .context("looking for a cut-over left queued by an earlier run")?;
        if ids.is_empty() {
            return Ok(());
        }
        if round == 5 {
            for id in &ids {
                let _ = conn.execute(kill_query_sql(*id).as_str()).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(EngineError::RenameLeftQueued {
        schema: schema.to_string(),
    }
    .into())
}

/// Opens each of `tables` a cut-over closed and did not rename (its log gone, the spare
/// still there); called once what that cut-over moved is settled, never before. Returns
/// those without transactions, each sent back to its check first: a write refused there
/// while it was closed had changed its row before the trigger after it failed, unlogged. (A
/// keyless one is rebuilt from its rows as they stand; its phase never leaves `copying`.)
pub(super) async fn reopen(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[&str],
) -> Result<Vec<String>> {
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
                    again.push(table.to_string());
                }
            }
        }
        conn.execute(reopen_log_sql(schema, &n).as_str())
            .await
            .with_context(|| format!("opening {table} again (its change log back)"))?;
    }
    Ok(again)
}

/// Swaps every shadow of the cut-over in at once (see the module docs), retrying; returns
/// how long the tables were locked (`None`: the rename ran but its run could not measure or
/// record the pause). `logged`: the copies still to be swapped, this cut-over's
/// among them (whose cascades must stay logged until their own cut-over).
pub(super) async fn cut_over(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    ctxs: &[Ctx<'_>],
    job: &str,
    foreign_keys: bool,
    states: &mut [State],
    logged: &[TablePlan],
) -> Result<Option<Duration>> {
    let schema = ctxs[0].plan.schema.as_str();
    let mut attempt = 0;
    loop {
        let e = match try_cut_over(conn, cfg, ctxs, job, foreign_keys, states, logged).await {
            Ok(d) => return Ok(Some(d)),
            Err(e) => e,
        };
        tracing::warn!(tables = ctxs.len(), error = %crate::db::redact::redact_error(&e), "cut-over failed");
        attempt += 1;
        settle_leftover_cutover(conn, schema).await?;
        if !table_exists(conn, schema, &ctxs[0].names.shadow).await? {
            // The rename did happen (its reply was lost): every table is swapped, and its
            // pause is known if the renaming connection could record it.
            return checkpoint::recorded_pause(conn, schema, job, &ctxs[0].plan.table).await;
        }
        let group: Vec<&str> = ctxs.iter().map(|c| c.plan.table.as_str()).collect();
        let mut again = carried::settle(conn, schema, job, false, &group).await?;
        // Cascade logging ended under the lock comes back; what went unlogged is checked again.
        if foreign_keys {
            settle_shadow_cascades(conn, schema, &group).await?;
            again.extend(restore_cascades(conn, schema, job, logged).await?);
        }
        if attempt >= CUTOVER_ATTEMPTS {
            return Err(e.context(format!(
                "the cut-over of {} table(s) failed {attempt} times; the copies stay attached and checkpointed: run again",
                ctxs.len()
            )));
        }
        tokio::time::sleep(crate::engine::retry::backoff(attempt)).await;
        for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
            if again.contains(&ctx.plan.table) {
                if let Some(s) = checkpoint::load(conn, schema, job, &ctx.plan.table).await? {
                    *state = s;
                }
                check_now(conn, ctx, job, state).await?;
            }
            create_stage(conn, ctx).await?;
            replay_some(conn, ctx, job, state, 50, (None, &mut HashSet::new())).await?;
        }
    }
}

/// `AUTO_INCREMENT=` of a `SHOW CREATE TABLE` text, if it has one.
pub fn auto_increment_of(create: &str) -> Option<u64> {
    let at = create.rfind(" AUTO_INCREMENT=")?;
    let digits: String = create[at + 16..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

pub(super) async fn try_cut_over(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    ctxs: &[Ctx<'_>],
    job: &str,
    foreign_keys: bool,
    states: &mut [State],
    logged: &[TablePlan],
) -> Result<Duration> {
    let schema = ctxs[0].plan.schema.as_str();
    for ctx in ctxs {
        let old = &ctx.names.old;
        if table_exists(conn, schema, old).await? {
            if !is_sentry(conn, schema, old).await? {
                return Err(EngineError::NotOurSentry { old: ctx.t(old) }.into());
            }
        } else {
            conn.execute(sentry_ddl(schema, old).as_str())
                .await
                .context("creating the cut-over sentry table")?;
        }
    }
    let tables: Vec<(&str, &crate::bookkeeping::names::Names)> = ctxs
        .iter()
        .map(|c| (c.plan.table.as_str(), &c.names))
        .collect();
    let carried = Carried::record(conn, schema, job, ctxs, foreign_keys, logged).await?;
    let closes = carried.tears();
    if closes {
        for ctx in ctxs {
            conn.execute(spare_log_ddl(schema, &ctx.names).as_str())
                .await
                .context("creating the change log's spare for the cut-over")?;
        }
    }
    let also = carried.also_locked(schema, &tables);
    let mut locker = cfg.connect_one().await?;
    // Keyless tables: every value decided now, so under the lock only those written since are.
    let mut maps = Vec::new();
    for (i, ctx) in ctxs.iter().enumerate() {
        maps.push(if ctx.plan.key.is_empty() {
            Some(prepare_maps(&mut locker, ctx, &ctx.plan.table, i).await?)
        } else {
            None
        });
    }
    let mut renamer = cfg.connect_one().await?;
    let renamer_id: u64 = sqlx::query_scalar(CONNECTION_ID_SQL)
        .fetch_one(&mut renamer)
        .await?;
    renamer
        .execute(lock_wait_timeout_sql(RENAME_LOCK_WAIT).as_str())
        .await?;
    locker
        .execute(lock_wait_timeout_sql(CUTOVER_LOCK_WAIT).as_str())
        .await?;
    // With autocommit off, COMMIT ends each drain chunk without releasing the table locks.
    locker.execute(AUTOCOMMIT_OFF).await?;
    locker
        .execute(cutover_lock_sql(schema, &tables, &also).as_str())
        .await
        .context("locking the tables for the cut-over")?;
    let paused = Instant::now();
    let drained = async {
        let mut next = states.to_vec();
        for ((ctx, state), maps) in ctxs.iter().zip(next.iter_mut()).zip(maps) {
            if log_len(&mut locker, ctx).await? > 0 {
                // A session's temporary table may be created under LOCK TABLES.
                create_stage(&mut locker, ctx).await?;
                while replay_chunk(&mut locker, ctx, job, state, (None, &mut HashSet::new()))
                    .await?
                    > 0
                {
                    locker.execute(COMMIT).await?;
                    clear_stage(&mut locker).await?;
                }
            }
            if let Some(maps) = maps {
                rebuild(&mut locker, ctx, job, state, maps).await?;
            }
            locker.execute(COMMIT).await?;
            let create: String = sqlx::query(&show_create_sql(schema, &ctx.plan.table))
                .fetch_one(&mut locker)
                .await?
                .try_get(1)?;
            if let Some(counter) = auto_increment_of(&create) {
                // A DDL statement under the lock costs a data-dictionary write: only when the
                // shadow's counter (raised by every id copied into it) is behind.
                let shadow: String = sqlx::query(&show_create_sql(schema, &ctx.names.shadow))
                    .fetch_one(&mut locker)
                    .await?
                    .try_get(1)?;
                if auto_increment_of(&shadow).is_none_or(|s| s < counter) {
                    locker
                        .execute(auto_increment_sql(schema, &ctx.names.shadow, counter).as_str())
                        .await
                        .context("carrying AUTO_INCREMENT over to the shadow")?;
                }
            }
        }
        if let Some(hold) = test_hooks::cutover_hold() {
            // Test hook: stretch the locked window so kill tests can land inside it.
            tokio::time::sleep(hold).await;
        }
        if !closes {
            // The constraints on the shadows: nothing the application sees moves.
            carried.apply(&mut locker, schema).await?;
        }
        anyhow::Ok(next)
    }
    .await;
    let next = match drained {
        Ok(drained) => drained,
        Err(e) => {
            let _ = locker.execute(UNLOCK_TABLES).await;
            let group: Vec<&str> = ctxs.iter().map(|c| c.plan.table.as_str()).collect();
            carried::settle(conn, schema, job, false, &group).await?;
            return Err(e.context("draining the change logs under the cut-over lock"));
        }
    };
    let rename_sql = rename_sql(schema, &tables, closes);
    let rename = async {
        renamer
            .execute(rename_sql.as_str())
            .await
            .context("renaming the tables")
    };
    let release = async {
        let give_up = Instant::now() + Duration::from_secs(5);
        loop {
            let queued: i64 = sqlx::query_scalar(RENAME_QUEUED_SQL)
                .bind(renamer_id)
                .fetch_one(&mut *conn)
                .await?;
            if queued > 0 {
                break;
            }
            if Instant::now() > give_up {
                // The sentries are still there: unlocked now, a late rename can only fail.
                let _ = locker.execute(UNLOCK_TABLES).await;
                let _ = conn.execute(kill_query_sql(renamer_id).as_str()).await;
                bail!("the rename never queued behind the cut-over lock");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if closes {
            // The rename holds the gate and waits for the first table, before any log's name:
            // the drained logs go, so from the first move the application could see until
            // the rename (or until a run settles a rename that failed) a write to these
            // tables fails, its trigger finding no log, instead of going through.
            let moved = async {
                let logs: Vec<&Names> = tables.iter().map(|(_, n)| *n).collect();
                locker
                    .execute(close_logs_sql(schema, &logs).as_str())
                    .await
                    .context("closing the tables for the cut-over's moves")?;
                // The constraints, the tables' own triggers and the cascade logging.
                carried.apply(&mut locker, schema).await?;
                if let Some(hold) = test_hooks::closed_hold() {
                    // Test hook: kill tests land with the tables closed and the moves made.
                    tokio::time::sleep(hold).await;
                }
                anyhow::Ok(())
            }
            .await;
            if let Err(e) = moved {
                // The sentries are still there: unlocked, the rename can only fail.
                let _ = locker.execute(UNLOCK_TABLES).await;
                return Err(e);
            }
        }
        // Drained, and the rename holds the gate and waits first in line: the sentries go,
        // then the lock.
        let dropped = locker
            .execute(drop_sentries_sql(schema, &tables).as_str())
            .await
            .context("dropping the cut-over sentries");
        locker.execute(UNLOCK_TABLES).await?;
        dropped.map(|_| ())
    };
    let (renamed, released) = futures_util::future::join(rename, release).await;
    let pause = paused.elapsed();
    if renamed.is_ok() {
        let swapped: Vec<&str> = tables.iter().map(|(t, _)| *t).collect();
        record_pause(&mut renamer, cfg, schema, job, &swapped, pause).await;
    }
    released?;
    renamed?;
    states.clone_from_slice(&next);
    Ok(pause)
}

/// Records the cut-over's pause right after its rename, on the connection that renamed (the
/// run's own may be the one a fault cut), else on a fresh one; unrecorded if neither answers
/// (the rerun that finishes the swap then says the pause was not measured).
async fn record_pause(
    renamer: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    schema: &str,
    job: &str,
    tables: &[&str],
    pause: Duration,
) {
    if checkpoint::record_pause(renamer, schema, job, tables, pause)
        .await
        .is_ok()
    {
        return;
    }
    if let Ok(mut fresh) = cfg.connect_one().await {
        if let Err(e) = checkpoint::record_pause(&mut fresh, schema, job, tables, pause).await {
            tracing::warn!(error = %crate::db::redact::redact_error(&e), "the cut-over's pause could not be recorded");
        }
    }
}

/// After the rename: drop the triggers (now on the old table); mark the table done.
///
/// The (drained) log stays: the application's cached prepared statements may still list it
/// among the tables the old triggers used, and MariaDB fails them with 1146 if it is gone.
/// It goes together with the old table, at `myrecode cleanup`.
pub(super) async fn finish(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<()> {
    let b = ctx.plan;
    // Writes that reached the original after the drain would be logged by the triggers, which
    // moved with it: never hide them (the cut-over's ordering is there to make this impossible).
    let left = log_len(conn, ctx).await?;
    if left > 0 {
        return Err(EngineError::CutoverAmbiguous {
            table: b.table.clone(),
            left,
            log: ctx.names.log.clone(),
            old: ctx.names.old.clone(),
        }
        .into());
    }
    for trg in &ctx.names.triggers {
        conn.execute(drop_trigger_sql(&b.schema, trg).as_str())
            .await
            .with_context(|| format!("dropping trigger {trg}"))?;
    }
    let mut next = state.clone();
    next.done = true;
    next.phase = Phase::Done.as_str().into();
    checkpoint::save(conn, &b.schema, job, &b.table, &next).await?;
    *state = next;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_increment_is_read_from_show_create_table() {
        let create = "CREATE TABLE `t` (\n  `id` int NOT NULL AUTO_INCREMENT,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=4711 DEFAULT CHARSET=latin1";
        assert_eq!(auto_increment_of(create), Some(4711));
        assert_eq!(
            auto_increment_of("CREATE TABLE `t` (`id` int) ENGINE=InnoDB"),
            None
        );
    }
}

//! The cut-over: the shadow swapped in atomically behind a sentry (see the module docs of
//! [`super`]), and the finish that follows it.

use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::Names;
use crate::db::connect::ConnectionConfig;
use crate::engine::copy::catalog::kill_query_sql;
use crate::engine::copy::catalog::show_create_sql;
use crate::engine::copy::catalog::{is_sentry, table_exists};
use crate::engine::copy::cutover::carried::cascade::logging::CascadeLogging;
use crate::engine::copy::cutover::carried::class::{Carried, Cut};
use crate::engine::copy::cutover::carried::under_lock::{self, UnderLock};
use crate::engine::copy::cutover::guard::Guard;
use crate::engine::copy::cutover::leftover::settle_leftover_cutover;
use crate::engine::copy::cutover::rebuild::Maps;
use crate::engine::copy::cutover::rebuild::{prepare_maps, rebuild};
use crate::engine::copy::cutover::swap_sql::{
    auto_increment_sql, cutover_lock_sql, drop_sentries_sql, rename_sql, sentry_ddl,
    AUTOCOMMIT_OFF, COMMIT, CONNECTION_ID_SQL, RENAME_QUEUED_SQL,
};
use crate::engine::copy::cutover::swap_sql::{close_logs_sql, spare_log_ddl};
use crate::engine::copy::setup::change_log::CUTOVER_LOCK_WAIT;
use crate::engine::copy::setup::sql::{lock_wait_timeout_sql, wait_timeout_sql, UNLOCK_TABLES};
use crate::engine::copy::table::check_again::check_now;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::replay::{log_len, replay_chunk, replay_some};
use crate::engine::copy::table::stage::{clear_stage, create_stage};
use crate::engine::copy::undecided::{refuse_held, FIX};
use crate::engine::error::{self, EngineError};
use crate::engine::table_plan::TablePlan;
use anyhow::{bail, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How long the queued rename may wait for the lock connection before giving up, in seconds.
pub(crate) const RENAME_LOCK_WAIT: u32 = 20;
/// Seconds the server keeps the lock connection when the run sends nothing: the run talks
/// to it every few milliseconds under the lock, so only a run whose host vanished (no guard
/// left to end it) stays silent that long, and the application waits no longer for it.
const LOCKER_IDLE_LIMIT: u32 = 10;

/// [`LOCKER_IDLE_LIMIT`], plus the pauses tests ask a locked window (the cut-over's, or
/// `revert`'s swap back) to hold.
pub(crate) fn locker_idle_limit() -> u32 {
    let hooks = [
        crate::engine::test_hooks::cutover_hold(),
        crate::engine::test_hooks::closed_hold(),
        crate::engine::test_hooks::revert_hold(),
    ];
    let held: u64 = hooks.iter().flatten().map(|d| d.as_secs()).sum();
    LOCKER_IDLE_LIMIT.saturating_add(u32::try_from(held).unwrap_or(u32::MAX))
}

/// Cut-over attempts before the run stops (resumably).
pub(crate) const CUTOVER_ATTEMPTS: u32 = 6;

/// Swaps every shadow of the cut-over in at once (see the module docs), retrying; returns
/// how long the tables were locked (`None`: the rename ran but its run could not measure or
/// record the pause). `logged`: the copies still to be swapped, this cut-over's
/// among them (whose cascades must stay logged until their own cut-over).
pub(crate) async fn cut_over(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    ctxs: &[Ctx<'_>],
    job: &str,
    foreign_keys: bool,
    states: &mut [State],
    logged: &[TablePlan],
) -> Result<Option<Duration>> {
    let schema = ctxs[0].plan.schema.as_str();
    // Killed from here on, the run leaves its guard to settle what it moved (`guard/`).
    let mut guarded: Vec<&str> = ctxs.iter().map(|c| c.plan.table.as_str()).collect();
    for p in logged {
        if !guarded.contains(&p.table.as_str()) {
            guarded.push(&p.table);
        }
    }
    let mut guard = Guard::arm(cfg, schema, job, &guarded);
    guard.watch(
        sqlx::query_scalar(CONNECTION_ID_SQL)
            .fetch_one(&mut *conn)
            .await?,
    );
    let mut attempt = 0;
    loop {
        let tried = try_cut_over(
            conn,
            cfg,
            ctxs,
            job,
            foreign_keys,
            states,
            logged,
            &mut guard,
        );
        let e = match tried.await {
            Ok(d) => return Ok(Some(d)),
            // Values undecided: no retry swaps them in.
            Err(e) if matches!(error::find(&e), Some(EngineError::Undecided { .. })) => {
                return Err(e)
            }
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
        let mut again = under_lock::settle(conn, schema, job, false, &group).await?;
        // Cascade logging ended under the lock comes back; what went unlogged is checked again.
        if foreign_keys {
            let cut = Cut {
                tables: &group,
                logged,
                ..Cut::of(schema, job)
            };
            again.extend(CascadeLogging::settle(conn, &cut).await?);
        }
        if attempt >= CUTOVER_ATTEMPTS {
            return Err(e.context(format!(
                "the cut-over of {} table(s) failed {attempt} times; the copies stay attached and checkpointed: run again",
                ctxs.len()
            )));
        }
        tokio::time::sleep(crate::engine::retry::backoff(attempt)).await;
        for (ctx, state) in ctxs.iter().zip(states.iter_mut()) {
            // The checkpoint a settle step wrote last for this copy is the one that stands.
            if let Some((_, s)) = again.iter().rev().find(|(t, _)| *t == ctx.plan.table) {
                *state = s.clone();
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

/// One try of the cut-over (see the module docs): the sentries placed, what is carried
/// across recorded, the tables locked and drained, the rename queued behind the lock, what
/// is carried moved, the lock released. Returns how long the tables were locked.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn try_cut_over(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    ctxs: &[Ctx<'_>],
    job: &str,
    foreign_keys: bool,
    states: &mut [State],
    logged: &[TablePlan],
    guard: &mut Guard,
) -> Result<Duration> {
    let schema = ctxs[0].plan.schema.as_str();
    // A replay since the group was ready (between tries) may have listed a value.
    refuse_held(conn, job, ctxs).await?;
    place_sentries(conn, ctxs).await?;
    let tables: Vec<(&str, &Names)> = ctxs
        .iter()
        .map(|c| (c.plan.table.as_str(), &c.names))
        .collect();
    let group: Vec<&str> = ctxs.iter().map(|c| c.plan.table.as_str()).collect();
    let cut = Cut {
        ctxs,
        tables: &group,
        logged,
        ..Cut::of(schema, job)
    };
    let carried = UnderLock::record(conn, &cut, foreign_keys).await?;
    let closes = carried.tears();
    if closes {
        make_spare_logs(conn, ctxs).await?;
    }
    let also = carried.also_locked(schema, &tables);
    if let Some(hold) = crate::engine::test_hooks::before_lock_hold() {
        // Test hook: kill tests land with the sentries placed and the moves recorded.
        tokio::time::sleep(hold).await;
    }
    let mut locker = cfg.connect_one().await?;
    guard.watch(
        sqlx::query_scalar(CONNECTION_ID_SQL)
            .fetch_one(&mut locker)
            .await?,
    );
    let maps = keyless_maps(&mut locker, ctxs).await?;
    let (mut renamer, renamer_id) = connect_renamer(cfg).await?;
    guard.watch(renamer_id);
    hold_bridge_logins(&mut renamer, schema).await?;
    lock(&mut locker, schema, &tables, &also).await?;
    let paused = Instant::now();
    let under_lock = (&carried, &cut, closes);
    let next = match drain(&mut locker, ctxs, job, states, maps, under_lock).await {
        Ok(drained) => drained,
        Err(e) => {
            let _ = locker.execute(UNLOCK_TABLES).await;
            under_lock::settle(conn, schema, job, false, &group).await?;
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
    let release = release(conn, &mut locker, renamer_id, &tables, under_lock);
    let (renamed, released) = futures_util::future::join(rename, release).await;
    let pause = paused.elapsed();
    release_bridge_logins(&mut renamer, schema).await;
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

/// A sentry in the kept original's place of every table (ours from an earlier try stays;
/// any other table there stops the cut-over): while it stands, a rename can only fail.
async fn place_sentries(conn: &mut MySqlConnection, ctxs: &[Ctx<'_>]) -> Result<()> {
    for ctx in ctxs {
        let schema = ctx.plan.schema.as_str();
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
    Ok(())
}

/// Each table's spare change log, which the rename brings back as its log once the drained
/// one is dropped (a cut-over that closes its tables for its moves).
async fn make_spare_logs(conn: &mut MySqlConnection, ctxs: &[Ctx<'_>]) -> Result<()> {
    for ctx in ctxs {
        conn.execute(spare_log_ddl(&ctx.plan.schema, &ctx.names).as_str())
            .await
            .context("creating the change log's spare for the cut-over")?;
    }
    Ok(())
}

/// Keyless tables: every value decided now, so under the lock only those written since are.
async fn keyless_maps(locker: &mut MySqlConnection, ctxs: &[Ctx<'_>]) -> Result<Vec<Option<Maps>>> {
    let mut maps = Vec::new();
    for (i, ctx) in ctxs.iter().enumerate() {
        maps.push(if ctx.plan.key.is_empty() {
            Some(prepare_maps(locker, ctx, &ctx.plan.table, i).await?)
        } else {
            None
        });
    }
    Ok(maps)
}

/// The connection that renames, with its id (to see its rename queued, or kill it) and its
/// bounded wait for the lock.
pub(crate) async fn connect_renamer(cfg: &ConnectionConfig) -> Result<(MySqlConnection, u64)> {
    let mut renamer = cfg.connect_one().await?;
    let renamer_id: u64 = sqlx::query_scalar(CONNECTION_ID_SQL)
        .fetch_one(&mut renamer)
        .await?;
    renamer
        .execute(lock_wait_timeout_sql(RENAME_LOCK_WAIT).as_str())
        .await?;
    Ok((renamer, renamer_id))
}

/// On the renaming connection, until its rename is done: a bridged login waits on this lock
/// (`crate::clients::bridge_sql::lock_name`), so one opening during the pause is bridged by
/// what the rename leaves, not by what was before it. The server frees it with the
/// connection if the run dies.
pub(crate) async fn hold_bridge_logins(renamer: &mut MySqlConnection, schema: &str) -> Result<()> {
    sqlx::query("DO GET_LOCK(?, 0)")
        .bind(crate::clients::bridge_sql::lock_name(schema))
        .execute(renamer)
        .await?;
    Ok(())
}

/// Lets bridged logins through again, once the rename is done (or failed).
pub(crate) async fn release_bridge_logins(renamer: &mut MySqlConnection, schema: &str) {
    let _ = sqlx::query("DO RELEASE_LOCK(?)")
        .bind(crate::clients::bridge_sql::lock_name(schema))
        .execute(renamer)
        .await;
}

/// `LOCK TABLES` on the lock connection over every table of the cut-over (with its shadow,
/// sentry and log), the bookkeeping tables and `also`, each wait bounded.
async fn lock(
    locker: &mut MySqlConnection,
    schema: &str,
    tables: &[(&str, &Names)],
    also: &[(&str, &str)],
) -> Result<()> {
    locker
        .execute(lock_wait_timeout_sql(CUTOVER_LOCK_WAIT).as_str())
        .await?;
    locker
        .execute(wait_timeout_sql(locker_idle_limit()).as_str())
        .await?;
    // With autocommit off, COMMIT ends each drain chunk without releasing the table locks.
    locker.execute(AUTOCOMMIT_OFF).await?;
    locker
        .execute(cutover_lock_sql(schema, tables, also).as_str())
        .await
        .context("locking the tables for the cut-over")?;
    Ok(())
}

/// Under the lock: every change log drained (a keyless table rebuilt), each `AUTO_INCREMENT`
/// carried over; then, unless the cut-over closes its tables, what is carried across moved
/// (onto the shadows: nothing the application sees). Returns the checkpoints drained to.
async fn drain(
    locker: &mut MySqlConnection,
    ctxs: &[Ctx<'_>],
    job: &str,
    states: &[State],
    maps: Vec<Option<Maps>>,
    (carried, cut, closes): (&UnderLock, &Cut<'_, '_>, bool),
) -> Result<Vec<State>> {
    let mut next = states.to_vec();
    for ((ctx, state), maps) in ctxs.iter().zip(next.iter_mut()).zip(maps) {
        let listed = state.rows_quarantined;
        drain_log(locker, ctx, job, state).await?;
        let keyless = maps.is_some();
        if let Some(maps) = maps {
            rebuild(locker, ctx, job, state, maps).await?;
        }
        // A row the drain (or the rebuild) wrote holds a value no reading decided: the
        // rename must not swap it in. The lock is released; the run stops, held.
        let undecided = if keyless {
            state.rows_quarantined
        } else {
            state.rows_quarantined.saturating_sub(listed)
        };
        if undecided > 0 {
            locker.execute(COMMIT).await?;
            return Err(EngineError::Undecided {
                tables: ctx.plan.table.clone(),
                count: undecided,
                fix: FIX,
            }
            .into());
        }
        locker.execute(COMMIT).await?;
        carry_auto_increment(locker, ctx).await?;
    }
    if let Some(hold) = crate::engine::test_hooks::cutover_hold() {
        // Test hook: stretch the locked window so kill tests can land inside it.
        tokio::time::sleep(hold).await;
    }
    if !closes {
        // The constraints on the shadows: nothing the application sees moves.
        carried.apply(locker, cut).await?;
    }
    Ok(next)
}

/// A table's change log replayed to its end under the lock, a chunk per commit.
async fn drain_log(
    locker: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    job: &str,
    state: &mut State,
) -> Result<()> {
    if log_len(locker, ctx).await? > 0 {
        // A session's temporary table may be created under LOCK TABLES.
        create_stage(locker, ctx).await?;
        while replay_chunk(locker, ctx, job, state, (None, &mut HashSet::new())).await? > 0 {
            locker.execute(COMMIT).await?;
            clear_stage(locker).await?;
        }
    }
    Ok(())
}

/// The table's `AUTO_INCREMENT` counter carried over to its shadow where the shadow's is
/// behind.
async fn carry_auto_increment(locker: &mut MySqlConnection, ctx: &Ctx<'_>) -> Result<()> {
    let schema = ctx.plan.schema.as_str();
    let create: String = sqlx::query(&show_create_sql(schema, &ctx.plan.table))
        .fetch_one(&mut *locker)
        .await?
        .try_get(1)?;
    if let Some(counter) = auto_increment_of(&create) {
        // A DDL statement under the lock costs a data-dictionary write: only when the
        // shadow's counter (raised by every id copied into it) is behind.
        let shadow: String = sqlx::query(&show_create_sql(schema, &ctx.names.shadow))
            .fetch_one(&mut *locker)
            .await?
            .try_get(1)?;
        if auto_increment_of(&shadow).is_none_or(|s| s < counter) {
            locker
                .execute(auto_increment_sql(schema, &ctx.names.shadow, counter).as_str())
                .await
                .context("carrying AUTO_INCREMENT over to the shadow")?;
        }
    }
    Ok(())
}

/// Once the rename is seen queued behind the lock: the tables closed and what is carried
/// across moved (when the cut-over closes them), then the sentries dropped and the lock
/// released, so the rename runs before every queued write.
async fn release(
    conn: &mut MySqlConnection,
    locker: &mut MySqlConnection,
    renamer_id: u64,
    tables: &[(&str, &Names)],
    (carried, cut, closes): (&UnderLock, &Cut<'_, '_>, bool),
) -> Result<()> {
    let schema = cut.schema;
    wait_for_queued_rename(conn, locker, renamer_id).await?;
    if closes {
        if let Err(e) = close_and_move(locker, tables, carried, cut).await {
            // The sentries are still there: unlocked, the rename can only fail.
            let _ = locker.execute(UNLOCK_TABLES).await;
            return Err(e);
        }
    }
    // Drained, and the rename holds the gate and waits first in line: the sentries go,
    // then the lock.
    let dropped = locker
        .execute(drop_sentries_sql(schema, tables).as_str())
        .await
        .context("dropping the cut-over sentries");
    locker.execute(UNLOCK_TABLES).await?;
    dropped.map(|_| ())
}

/// Waits (5 s at most) until the server shows the rename waiting for the lock; else the
/// lock is released and the rename killed: with the sentries still there, a late rename can
/// only fail.
pub(crate) async fn wait_for_queued_rename(
    conn: &mut MySqlConnection,
    locker: &mut MySqlConnection,
    renamer_id: u64,
) -> Result<()> {
    let give_up = Instant::now() + Duration::from_secs(5);
    loop {
        let queued: i64 = sqlx::query_scalar(RENAME_QUEUED_SQL)
            .bind(renamer_id)
            .fetch_one(&mut *conn)
            .await?;
        if queued > 0 {
            return Ok(());
        }
        if Instant::now() > give_up {
            // The sentries are still there: unlocked now, a late rename can only fail.
            let _ = locker.execute(UNLOCK_TABLES).await;
            let _ = conn.execute(kill_query_sql(renamer_id).as_str()).await;
            bail!("the rename never queued behind the cut-over lock");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The rename holds the gate and waits for the first table, before any log's name: the
/// drained logs go, so from the first move the application could see until the rename (or
/// until a run settles a rename that failed) a write to these tables fails, its trigger
/// finding no log, instead of going through. Then the constraints, the tables' own triggers
/// and the cascade logging move.
async fn close_and_move(
    locker: &mut MySqlConnection,
    tables: &[(&str, &Names)],
    carried: &UnderLock,
    cut: &Cut<'_, '_>,
) -> Result<()> {
    let schema = cut.schema;
    let logs: Vec<&Names> = tables.iter().map(|(_, n)| *n).collect();
    locker
        .execute(close_logs_sql(schema, &logs).as_str())
        .await
        .context("closing the tables for the cut-over's moves")?;
    carried.apply(locker, cut).await?;
    if let Some(hold) = crate::engine::test_hooks::closed_hold() {
        // Test hook: kill tests land with the tables closed and the moves made.
        tokio::time::sleep(hold).await;
    }
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

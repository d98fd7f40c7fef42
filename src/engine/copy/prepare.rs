//! One table's copy from its start (or resume) until it is ready for its group's cut-over.

use crate::bookkeeping::checkpoint;
use crate::bookkeeping::checkpoint::State;
use crate::bookkeeping::names::names;
use crate::db::connect::ConnectionConfig;
use crate::engine::batch;
use crate::engine::copy::cutover::leftover::settle_leftover_cutover;
use crate::engine::copy::cutover::leftover::{renamed, settle_table};
use crate::engine::copy::myisam::faults;
use crate::engine::copy::myisam::restarts;
use crate::engine::copy::phase::Phase;
use crate::engine::copy::setup::change_log::{ensure_triggers, start};
use crate::engine::copy::table::batches::Copy;
use crate::engine::copy::table::context::{context, Ctx};
use crate::engine::copy::table::copier::Pipeline;
use crate::engine::copy::table::parallel;
use crate::engine::copy::table::read_sql;
use crate::engine::copy::table::stage::create_stage;
use crate::engine::copy::table::trailing;
use crate::engine::copy::table::write_sql::clear_shadow_sql;
use crate::engine::error::EngineError;
use crate::engine::events::{Event, Events};
use crate::engine::table_plan::TableOutcome;
use crate::engine::table_plan::TablePlan;
use crate::engine::throttle::Pacer;
use crate::inventory::model::Table;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

/// Runs (or resumes) the copy of one table until it is ready for the cut-over (copied,
/// checked, its log nearly drained; [`crate::engine::copy::cutover::group::cut_over_group`] swaps each group's tables together),
/// or until asked to stop. A table already swapped comes back done.
#[allow(clippy::too_many_arguments)]
pub async fn prepare_table(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &str,
    plan: &TablePlan,
    table: &Table,
    stop: &AtomicBool,
    pacer: &mut Pacer<'_>,
    events: &dyn Events,
) -> Result<(TableOutcome, State)> {
    let schema = plan.schema.as_str();
    let n = names(&plan.table);
    conn.execute(read_sql::REPEATABLE_READ).await?;
    let state = match checkpoint::load(conn, schema, job, &plan.table).await? {
        Some(s) if s.fingerprint != plan.fingerprint => {
            return Err(EngineError::JobEdited {
                table: plan.table.clone(),
                rows: s.rows_read,
                undo: "`myrecode abort` the job and start anew",
            }
            .into())
        }
        Some(s) => s,
        None => {
            let s = start(conn, job, plan, &n).await?;
            restarts::record_start(conn, job, schema, &plan.table).await?;
            s
        }
    };
    if state.done {
        return Ok((TableOutcome::Done, state));
    }
    settle_leftover_cutover(conn, schema).await?;
    let ctx = context(conn, (plan, job), n, &state).await?;
    let mut state = state;
    faults::settle_shadow(conn, &ctx, job).await?;
    if renamed(conn, &ctx).await? {
        // Swapped by a run that lost its connection or its process before the finish: its
        // cut-over step finishes it and says the cut-over (once, whichever run that is).
        return Ok((TableOutcome::Done, state));
    }
    if let Some(done) = settle_table(conn, &ctx, job, &mut state).await? {
        return Ok((done, state));
    }
    ensure_triggers(conn, ctx.plan, &ctx.names).await?;
    if plan.key.is_empty() {
        // Nothing to copy ahead: rebuilt whole under the cut-over's lock (see `rebuild`).
        events.event(&Event::Rebuilds {
            table: &plan.table,
            rows: table.estimated_rows,
        });
        return Ok((TableOutcome::Done, state));
    }
    create_stage(conn, &ctx).await?;
    if Phase::of(&state) == Phase::Copying {
        forget_uncheckpointed(conn, &ctx, &state).await?;
    }
    let trailing = if Phase::of(&state) == Phase::Copying && state.last_key.is_none() {
        let mut conn = cfg.connect_one().await?;
        conn.execute(read_sql::REPEATABLE_READ).await?;
        Some(trailing::Trailing::new(conn))
    } else {
        None
    };
    let streams = parallel::detect(conn, schema, &plan.table).await?;
    let writers = if Phase::of(&state) == Phase::Copying && streams.read_committed {
        parallel::writers(cfg, &ctx, streams.count).await?
    } else {
        Vec::new()
    };
    let pipe = Pipeline {
        reader: Some(cfg.connect_one().await?),
        ahead: None,
        replayed: HashSet::new(),
        trailing,
        writers,
    };
    let mut work = Copy {
        ctx: &ctx,
        job,
        pipe,
        state,
        differed: 0,
        batches: None,
        events,
    };
    let outcome = batch::run(
        conn,
        &mut work,
        plan,
        table.estimated_rows,
        stop,
        pacer,
        events,
    )
    .await?;
    // Aborted: the runner removes every copy of the job, cascade triggers first.
    Ok((outcome, work.state))
}

/// A shadow without transactions (MyISAM, Aria: `LIKE` its table) keeps the rows of a batch
/// whose checkpoint a kill rolled back: they go, so the batch is copied again, once.
async fn forget_uncheckpointed(
    conn: &mut MySqlConnection,
    ctx: &Ctx<'_>,
    state: &State,
) -> Result<()> {
    let engine: Option<String> = sqlx::query_scalar(crate::engine::copy::catalog::ENGINE_SQL)
        .bind(&ctx.plan.schema)
        .bind(&ctx.names.shadow)
        .fetch_optional(&mut *conn)
        .await?;
    if engine.is_none_or(|e| e.eq_ignore_ascii_case("InnoDB")) {
        return Ok(());
    }
    let last = state
        .last_key
        .as_deref()
        .and_then(crate::bookkeeping::keycodec::unpack);
    let (cond, binds) = read_sql::key_range(&ctx.plan.key, last.as_deref(), None);
    let b = ctx.plan;
    let names = (
        b.schema.as_str(),
        b.table.as_str(),
        ctx.names.shadow.as_str(),
    );
    let delete = clear_shadow_sql(names, &ctx.shadow_key, &cond, None);
    crate::engine::read::bind_all(sqlx::query(&delete), &binds)
        .execute(&mut *conn)
        .await
        .context("removing the shadow's rows past the checkpoint")?;
    Ok(())
}

//! The rehearsal, `run` without `--execute`: every shadow built under a scratch name, so what
//! the server would refuse stops it here; then what a run would do, said as one event (the
//! text: [`crate::engine::rehearsal_text`], the copy's streams, the replicas). Nothing is
//! written.

use super::outcome::Outcome;
use crate::engine::copy;
use crate::engine::events::{Event, Events};
use crate::engine::plans::Plans;
use crate::engine::rehearsal_text::rehearsal;
use crate::engine::replicas::{self, topology::Topology};
use crate::engine::table_plan::TablePlan;
use crate::job::model::{Job, Strategy};
use anyhow::Result;
use sqlx::MySqlConnection;

/// Rehearses the job: `planned` every table of it, `plans` those that may run, `topology`
/// its replicas as surveyed.
pub(super) async fn dry_run(
    conn: &mut MySqlConnection,
    job: &Job,
    planned: &Plans,
    plans: &[TablePlan],
    topology: &Topology,
    events: &dyn Events,
) -> Result<Outcome> {
    // The rehearsal builds every shadow's definition under a scratch name (as `plan --check`
    // does): what the server refuses (a CHECK, a generated column, a key too long) or a text
    // no reading decides stops it, before `--execute` would write. `--execute` does not pay
    // for it again at every start (a resumed run must reach its cut-over at once); there a
    // shadow the server refuses stops its table before any of its rows is copied.
    if let Some((_, e)) = copy::trial_job(conn, plans).await.into_iter().next() {
        return Err(e);
    }
    let copies: Vec<(&str, &str)> = plans
        .iter()
        .filter(|p| matches!(p.strategy, Strategy::Copy))
        .map(|p| (p.schema.as_str(), p.table.as_str()))
        .collect();
    let text = rehearsal(planned, job)
        + &copy::rehearsal_lines(conn, &copies).await?
        + &replicas::rehearsal_lines(topology, job);
    events.event(&Event::Rehearsal { text: &text });
    Ok(Outcome::Rehearsed {
        refused: planned.refused().map_or(0, |r| r.tables.len()),
    })
}

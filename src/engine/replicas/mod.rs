//! Replicas: finding them ([`discover`]), what refuses a job on them and what the rehearsal
//! says ([`topology`]), measuring their lag by a heartbeat ([`lag`], [`watch`]).

pub mod checksum;
pub mod discover;
pub mod lag;
pub mod topology;
pub mod verify;
pub mod watch;

use crate::db::connect::ConnectionConfig;
use crate::job::model::Job;
use anyhow::{bail, Result};
use sqlx::MySqlConnection;
use topology::Topology;

/// A job's replicas as surveyed: the topology and each replica's settings, in its order.
pub type Surveyed = (Topology, Vec<ConnectionConfig>);

/// Finds the job's replicas below the primary `cfg` and adds the job's own; an error with
/// the topology, each reason and its fix, when the job may not run on it (before it writes).
pub async fn survey(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &Job,
) -> Result<Surveyed> {
    let (t, cfgs) = surveyed(conn, cfg, job).await?;
    let refused = topology::refusals(&t);
    if !refused.is_empty() {
        bail!(
            "the job cannot run on this replication topology, nothing was written:\n{}{}",
            rehearsal_lines(&t, job),
            refused
                .iter()
                .map(|r| format!("  refused: {r}\n"))
                .collect::<String>()
        );
    }
    Ok((t, cfgs))
}

/// The job's topology as found, with no judgment (`plan --check` makes findings of it).
pub async fn surveyed(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &Job,
) -> Result<Surveyed> {
    let named = job
        .defaults
        .replicas
        .iter()
        .map(|r| crate::engine::pace::replica_config(cfg, r))
        .collect::<Result<Vec<_>>>()?;
    discover::survey(conn, cfg, &named).await
}

/// The rehearsal's lines on the topology, with the job's limits.
pub fn rehearsal_lines(t: &Topology, job: &Job) -> String {
    topology::rehearsal_lines(
        t,
        job.defaults.max_replica_lag.0,
        job.defaults.max_replica_down.0,
    )
}

/// Starts watching the surveyed replicas for a run that writes (`None`: it has none).
pub async fn watch(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &Job,
    job_id: &str,
    surveyed: Surveyed,
) -> Result<Option<watch::Watch>> {
    let (t, cfgs) = surveyed;
    if cfgs.is_empty() {
        return Ok(None);
    }
    let replicas = t
        .replicas
        .into_iter()
        .map(|n| n.address)
        .zip(cfgs)
        .collect();
    watch::Watch::start(
        conn,
        cfg,
        &job.schema,
        job_id,
        replicas,
        job.defaults.max_replica_lag.0,
        job.defaults.max_replica_down.0,
    )
    .await
    .map(Some)
}

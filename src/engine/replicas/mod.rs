//! Replicas: finding them ([`discover`]), what refuses a job on them and what the rehearsal
//! says ([`topology`]), measuring their lag by a heartbeat ([`lag`], [`watch`]), and the
//! batch size their lag leaves room for ([`budget`]).

pub mod address;
pub mod budget;
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
        .map(|r| address::replica_config(cfg, r))
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
    let addresses: Vec<String> = t.replicas.iter().map(|n| n.address.clone()).collect();
    let replicas = t
        .replicas
        .into_iter()
        .zip(cfgs)
        .map(|(n, c)| {
            // The replica it relays from (`None`: the primary, or one the job does not watch).
            let source = n
                .below
                .as_ref()
                .and_then(|b| addresses.iter().position(|a| a == b));
            (n.address, c, source)
        })
        .collect();
    watch::Watch::start(
        conn,
        cfg,
        (&job.schema, job_id),
        replicas,
        job.defaults.max_replica_lag.0,
        job.defaults.max_replica_down.0,
    )
    .await
    .map(Some)
}

/// The replicas' bookkeeping tables: the heartbeat, the samples `status` reads, and the
/// checksums an older `verify` left. `rollback` reads none of them.
pub const BOOKKEEPING: [&str; 3] = [lag::HEARTBEAT, watch::REPLICA_STATE, checksum::CHECKSUMS];

/// Deletes `?` job's rows from the bookkeeping table `table`.
pub fn forget_sql(schema: &str, table: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ?",
        crate::db::quote::table(schema, table)
    )
}

/// Whether the bookkeeping table `table` still holds rows (another job's).
pub fn holds_rows_sql(schema: &str, table: &str) -> String {
    format!(
        "SELECT EXISTS (SELECT 1 FROM {})",
        crate::db::quote::table(schema, table)
    )
}

/// Drops the bookkeeping table `table` if it is there.
pub fn drop_sql(schema: &str, table: &str) -> String {
    format!(
        "DROP TABLE IF EXISTS {}",
        crate::db::quote::table(schema, table)
    )
}

/// Removes a finished job's rows from the replicas' bookkeeping tables, and drops each table
/// no other job has rows in (another job's watch writes its heartbeat there). Returns the
/// tables dropped.
pub async fn cleanup(conn: &mut MySqlConnection, schema: &str, job: &str) -> Result<Vec<String>> {
    use anyhow::Context;
    let mut dropped = Vec::new();
    for table in BOOKKEEPING {
        let there: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
        )
        .bind(schema)
        .bind(table)
        .fetch_optional(&mut *conn)
        .await
        .context("reading information_schema.TABLES")?;
        if there.is_none() {
            continue;
        }
        if !crate::bookkeeping::checkpoint::is_ours(conn, schema, table).await? {
            // A table of the user's under one of our names: never emptied nor dropped.
            tracing::warn!(
                table,
                "left as it is: a table of that name exists that myrecode did not create"
            );
            continue;
        }
        sqlx::query(&forget_sql(schema, table))
            .bind(job)
            .execute(&mut *conn)
            .await
            .with_context(|| format!("deleting the job's rows from {table}"))?;
        let others: i64 = sqlx::query_scalar(&holds_rows_sql(schema, table))
            .fetch_one(&mut *conn)
            .await
            .with_context(|| format!("reading {table}"))?;
        if others == 0 {
            sqlx::query(&drop_sql(schema, table))
                .execute(&mut *conn)
                .await
                .with_context(|| format!("dropping {table}"))?;
            dropped.push(table.to_string());
        }
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookkeeping_statements_quote_the_schema() {
        assert_eq!(
            BOOKKEEPING,
            [
                "_myrecode_heartbeat",
                "_myrecode_replicas",
                "_myrecode_checksums"
            ]
        );
        assert_eq!(
            forget_sql("a`b", "_myrecode_heartbeat"),
            "DELETE FROM `a``b`.`_myrecode_heartbeat` WHERE job = ?"
        );
        assert_eq!(
            holds_rows_sql("s", "_myrecode_replicas"),
            "SELECT EXISTS (SELECT 1 FROM `s`.`_myrecode_replicas`)"
        );
        assert_eq!(
            drop_sql("s", "_myrecode_checksums"),
            "DROP TABLE IF EXISTS `s`.`_myrecode_checksums`"
        );
    }
}

//! `verify` on replicas, the I/O around [`super::checksum`]: every job table checksummed on
//! the primary in statement form, the replicas waited for up to that point of the stream,
//! and each one's figures read and compared.

use super::checksum::{
    checksum_sql, ddl, differences, master_sql, not_comparable, own_sql, read_sql, Figures,
};
use crate::db::connect::ConnectionConfig;
use crate::db::errno;
use crate::job::model::Job;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};

/// How long `verify` waits for a replica to reach the primary's position.
const CATCH_UP: u64 = 60;

/// What `verify` found on one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compared {
    /// Every job table equal to the primary's (how many tables).
    Equal(usize),
    /// These tables differ, each with how.
    Differ(Vec<String>),
    /// Not compared, and why.
    NotCompared(String),
}

impl Compared {
    /// The line `verify` prints for `replica`.
    pub fn describe(&self, replica: &str) -> String {
        match self {
            Compared::Equal(n) => format!(
                "replica {replica}: every job table equal to the primary's ({n} tables, checksummed at one replication position)"
            ),
            Compared::Differ(d) => {
                format!("replica {replica}: differs from the primary: {}", d.join("; "))
            }
            Compared::NotCompared(why) => format!("replica {replica}: not compared: {why}"),
        }
    }
}

/// The primary's position now, and the statement that waits for it on a replica: MariaDB's
/// GTID position, or MySQL's executed GTID set.
async fn position(conn: &mut MySqlConnection) -> Result<(String, &'static str)> {
    match sqlx::query_scalar::<_, String>("SELECT CAST(@@global.gtid_binlog_pos AS CHAR)")
        .fetch_one(&mut *conn)
        .await
    {
        Ok(p) => Ok((p, "SELECT MASTER_GTID_WAIT(?, ?)")),
        Err(e) if errno::of(&e) == Some(errno::UNKNOWN_SYSTEM_VARIABLE) => {
            let p = sqlx::query_scalar::<_, String>("SELECT CAST(@@global.gtid_executed AS CHAR)")
                .fetch_one(&mut *conn)
                .await
                .context("reading the primary's executed GTID set")?;
            Ok((p, "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"))
        }
        Err(e) => Err(e).context("reading the primary's GTID position"),
    }
}

/// Checksums the job's tables on the primary `cfg` (over `conn`, in the job's schema) and
/// compares them on every replica found or named: one verdict per replica.
pub async fn verify(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &Job,
    job_id: &str,
) -> Result<Vec<(String, Compared)>> {
    let (topology, cfgs) = super::surveyed(conn, cfg, job).await?;
    if cfgs.is_empty() {
        return Ok(Vec::new());
    }
    let schema = job.schema.as_str();
    conn.execute("SET SESSION binlog_format = 'STATEMENT'")
        .await
        .context(
            "logging the replica checksums as statements (SET SESSION binlog_format). \
             Fix: grant the job's user BINLOG ADMIN (MariaDB 10.5+) or SUPER / SYSTEM_VARIABLES_ADMIN (MySQL)",
        )?;
    conn.execute(ddl(schema).as_str())
        .await
        .context("creating the checksum table")?;
    let tables: Vec<String> = job.tables.iter().map(|t| t.name.clone()).collect();
    for t in &tables {
        let columns: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
        )
        .bind(schema)
        .bind(t)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading the columns of {t}"))?;
        sqlx::query(&checksum_sql(schema, t, &columns))
            .bind(job_id)
            .bind(t)
            .execute(&mut *conn)
            .await
            .with_context(|| format!("checksumming {t}"))?;
        let (cnt, crc): (i64, u64) = sqlx::query_as(&own_sql(schema))
            .bind(job_id)
            .bind(t)
            .fetch_one(&mut *conn)
            .await?;
        sqlx::query(&master_sql(schema))
            .bind(cnt)
            .bind(crc)
            .bind(job_id)
            .bind(t)
            .execute(&mut *conn)
            .await?;
    }
    conn.execute("SET SESSION binlog_format = DEFAULT").await?;
    let (pos, wait) = position(conn).await?;
    let mut out = Vec::new();
    for (node, rcfg) in topology.replicas.iter().zip(cfgs) {
        let verdict = match not_comparable(&topology, node) {
            Some(why) => Compared::NotCompared(why),
            None => match compare(&rcfg, schema, job_id, &tables, &pos, wait).await {
                Ok(v) => v,
                Err(e) => Compared::NotCompared(format!("{e:#}")),
            },
        };
        out.push((node.address.clone(), verdict));
    }
    Ok(out)
}

/// One replica's figures once it has reached `pos`, against the primary's.
async fn compare(
    cfg: &ConnectionConfig,
    schema: &str,
    job_id: &str,
    tables: &[String],
    pos: &str,
    wait: &str,
) -> Result<Compared> {
    let mut c = cfg.connect_one().await?;
    let waited: Option<i64> = sqlx::query(wait)
        .bind(pos)
        .bind(CATCH_UP as i64)
        .fetch_one(&mut c)
        .await
        .context("waiting for the replica to reach the primary's position")?
        .get(0);
    if waited != Some(0) {
        anyhow::bail!("it did not reach the primary's position {pos} within {CATCH_UP} s");
    }
    let figures: Vec<Figures> = sqlx::query_as(&read_sql(schema))
        .bind(job_id)
        .fetch_all(&mut c)
        .await
        .context("reading the replica's checksums")?;
    let d = differences(tables, &figures);
    Ok(if d.is_empty() {
        Compared::Equal(tables.len())
    } else {
        Compared::Differ(d)
    })
}

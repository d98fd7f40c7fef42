//! Throwaway replication topologies on loopback: a primary and replicas of our own
//! `mariadbd`/`mysqld`, GTID replication, a chained replica relaying through another
//! (`log_slave_updates`), the binary log format chosen per topology.
//!
//! Every server is a [`ThrowawayServer`] started with binary-log options; the admin user
//! gets the primary's password everywhere (as replicated grants would give it), so a tool
//! that reaches the replicas with the primary's credentials finds them as in production.

use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::db::testuser::block_on_thread;
use crate::db::throwaway::ThrowawayServer;
use anyhow::{anyhow, bail, Context, Result};
use sqlx::{Executor, Row};
use std::time::{Duration, Instant};

/// The binary log format every server of a topology writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinlogFormat {
    /// Row images.
    Row,
    /// Statements, rows where a statement is unsafe (MariaDB's default).
    Mixed,
    /// Statements only.
    Statement,
}

impl BinlogFormat {
    /// The server's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BinlogFormat::Row => "ROW",
            BinlogFormat::Mixed => "MIXED",
            BinlogFormat::Statement => "STATEMENT",
        }
    }
}

/// A primary and its replicas, each replicating from the primary or from another replica.
pub struct ThrowawayReplicaSet {
    /// The primary (server id 1).
    pub primary: ThrowawayServer,
    /// The replicas in order of start (server ids 2, 3, ...), with the index of their source
    /// (`None`: the primary; `Some(i)`: replica `i`).
    pub replicas: Vec<(ThrowawayServer, Option<usize>)>,
    format: BinlogFormat,
}

impl std::fmt::Debug for ThrowawayReplicaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ThrowawayReplicaSet({}, {} replicas)",
            self.format.as_str(),
            self.replicas.len()
        )
    }
}

/// The options that make a server of ours part of a topology.
pub fn server_options(server_id: u32, format: BinlogFormat, relays: bool) -> Vec<String> {
    let mut o = vec![
        format!("--server-id={server_id}"),
        "--log-bin=binlog".to_string(),
        format!("--binlog-format={}", format.as_str()),
        "--report-host=127.0.0.1".to_string(),
        "--slave-net-timeout=5".to_string(),
    ];
    if relays {
        o.push("--log-slave-updates=ON".to_string());
    }
    o
}

/// `CHANGE MASTER TO` a source on loopback `port`, by GTID (the password is bound in by the caller's text).
pub fn change_master_sql(port: u16, user: &str, password: &str) -> String {
    format!(
        "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {port}, MASTER_USER = {}, MASTER_PASSWORD = {}, \
         MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
        quote::literal(user),
        quote::literal(password)
    )
}

impl ThrowawayReplicaSet {
    /// Starts a primary and one replica per entry of `sources` (`None`: replicating from the
    /// primary; `Some(i)`: from replica `i`, which then relays with `log_slave_updates`).
    pub fn start(format: BinlogFormat, sources: &[Option<usize>]) -> Result<Self> {
        for (i, s) in sources.iter().enumerate() {
            if s.is_some_and(|s| s >= i) {
                bail!("replica {i} must replicate from the primary or an earlier replica");
            }
        }
        let relays = |i: usize| sources.contains(&Some(i));
        let primary = ThrowawayServer::start_local_with(&server_options(1, format, false))
            .context("starting the primary")?;
        let mut replicas = Vec::new();
        for (i, source) in sources.iter().enumerate() {
            let opts = server_options(i as u32 + 2, format, relays(i));
            let r = ThrowawayServer::start_local_with(&opts)
                .with_context(|| format!("starting replica {i}"))?;
            replicas.push((r, *source));
        }
        let set = ThrowawayReplicaSet {
            primary,
            replicas,
            format,
        };
        set.wire().context("setting up replication")?;
        Ok(set)
    }

    /// The primary and two replicas, the second chained through the first.
    pub fn chained(format: BinlogFormat) -> Result<Self> {
        Self::start(format, &[None, Some(0)])
    }

    /// The format every server writes.
    pub fn format(&self) -> BinlogFormat {
        self.format
    }

    /// Connection settings for replica `i` with the primary's user and password.
    pub fn replica(&self, i: usize) -> ConnectionConfig {
        let mut c = self.primary.admin().clone();
        c.port = self.replicas[i].0.admin().port;
        c
    }

    fn wire(&self) -> Result<()> {
        let admin = self.primary.admin().clone();
        let password = admin
            .password()
            .ok_or_else(|| anyhow!("the primary's admin user has no password"))?
            .to_string();
        let user = admin.user.clone();
        let mut ports = vec![admin.port];
        ports.extend(self.replicas.iter().map(|(r, _)| r.admin().port));
        let sources: Vec<Option<usize>> = self.replicas.iter().map(|(_, s)| *s).collect();
        let roots: Vec<ConnectionConfig> = std::iter::once(&self.primary)
            .chain(self.replicas.iter().map(|(r, _)| r))
            .map(|s| {
                s.passwordless_root()
                    .ok_or_else(|| anyhow!("a topology needs servers of our own"))
            })
            .collect::<Result<_>>()?;
        block_on_thread(async move {
            for (i, root) in roots.iter().enumerate() {
                let mut c = root.connect_one().await?;
                if i > 0 {
                    for host in ["%", "localhost"] {
                        c.execute(
                            format!(
                                "ALTER USER {}@{} IDENTIFIED BY {}",
                                quote::literal(&user),
                                quote::literal(host),
                                quote::literal(&password)
                            )
                            .as_str(),
                        )
                        .await?;
                    }
                }
                // What set-up wrote (users, grants) is not the topology's history.
                c.execute("RESET MASTER").await?;
            }
            for (i, source) in sources.iter().enumerate() {
                let port = ports[source.map_or(0, |s| s + 1)];
                let mut c = roots[i + 1].connect_one().await?;
                c.execute("SET GLOBAL gtid_slave_pos = ''").await?;
                c.execute(change_master_sql(port, &user, &password).as_str())
                    .await?;
                c.execute("START SLAVE").await?;
            }
            Ok(())
        })?;
        self.sync(Duration::from_secs(60))
    }

    /// Waits until every replica has applied everything the primary has written so far.
    pub fn sync(&self, limit: Duration) -> Result<()> {
        let primary = self.primary.admin().clone();
        let replicas: Vec<ConnectionConfig> =
            (0..self.replicas.len()).map(|i| self.replica(i)).collect();
        block_on_thread(async move {
            let mut p = primary.connect_one().await?;
            // A marker every replica logs again: a transaction that changes nothing (a DELETE
            // of no row, logged as a statement) is applied by a relay but not logged again,
            // so a replica below it would never reach a position that ends with one.
            for sql in SYNC_MARK_SQL {
                p.execute(*sql).await?;
            }
            let pos: String = sqlx::query("SELECT CAST(@@global.gtid_binlog_pos AS CHAR)")
                .fetch_one(&mut p)
                .await?
                .get(0);
            let started = Instant::now();
            for r in &replicas {
                let mut c = r.connect_one().await?;
                let left = limit.saturating_sub(started.elapsed()).as_secs_f64();
                let waited: Option<i64> = sqlx::query("SELECT MASTER_GTID_WAIT(?, ?)")
                    .bind(&pos)
                    .bind(left)
                    .fetch_one(&mut c)
                    .await?
                    .get(0);
                if waited != Some(0) {
                    let mut every = String::new();
                    for (i, other) in replicas.iter().enumerate() {
                        let state = match other.connect_one().await {
                            Ok(mut o) => replica_state(&mut o).await,
                            Err(e) => format!("unreachable: {e}"),
                        };
                        every.push_str(&format!("\n  replica {i} ({other}): {state}"));
                    }
                    bail!(
                        "replica {r} did not reach the primary's position {pos} within {limit:?}:{every}\n  the primary's last events:{}",
                        last_events(&mut p).await
                    );
                }
            }
            Ok(())
        })
    }
}

/// The statements [`ThrowawayReplicaSet::sync`] marks the primary's position with: a row
/// changed (logged as a row, `ON DUPLICATE KEY UPDATE` being unsafe as a statement) in a
/// schema of the harness's own.
const SYNC_MARK_SQL: &[&str] = &[
    "CREATE DATABASE IF NOT EXISTS `myrecode_harness`",
    "CREATE TABLE IF NOT EXISTS `myrecode_harness`.`sync_mark` (id INT NOT NULL PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB",
    "INSERT INTO `myrecode_harness`.`sync_mark` (id, n) VALUES (1, 1) ON DUPLICATE KEY UPDATE n = n + 1",
];

/// The last events of the primary's binary log, one line each, for a failing test's message.
async fn last_events(p: &mut sqlx::MySqlConnection) -> String {
    let file: Option<String> = sqlx::query("SHOW MASTER STATUS")
        .fetch_optional(&mut *p)
        .await
        .ok()
        .flatten()
        .and_then(|r| r.try_get::<String, _>(0).ok());
    let Some(file) = file else {
        return " unreadable".to_string();
    };
    let rows = sqlx::query(&format!("SHOW BINLOG EVENTS IN {}", quote::literal(&file)))
        .fetch_all(&mut *p)
        .await
        .unwrap_or_default();
    let mut out = String::new();
    for r in rows.iter().rev().take(12).rev() {
        let kind: String = r.try_get::<String, _>(2).unwrap_or_default();
        let info: String = r
            .try_get::<String, _>(5)
            .or_else(|_| {
                r.try_get::<Vec<u8>, _>(5)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "\n    {kind}: {}",
            info.chars().take(200).collect::<String>()
        ));
    }
    out
}

/// A replica's threads and last errors, for a failing test's message.
async fn replica_state(c: &mut sqlx::MySqlConnection) -> String {
    use crate::engine::replicas::discover;
    let reading = match discover::status(c).await {
        Ok(Some(r)) => r.describe(),
        Ok(None) => "not a replica".to_string(),
        Err(e) => format!("status unreadable: {e:#}"),
    };
    format!("{reading}; {}", discover::threads_in_words(c).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_make_a_relay_only_of_a_replica_others_replicate_from() {
        let o = server_options(3, BinlogFormat::Mixed, true);
        assert!(o.contains(&"--server-id=3".to_string()));
        assert!(o.contains(&"--binlog-format=MIXED".to_string()));
        assert!(o.contains(&"--log-slave-updates=ON".to_string()));
        assert!(!server_options(2, BinlogFormat::Row, false)
            .iter()
            .any(|o| o.starts_with("--log-slave-updates")));
        assert_eq!(
            change_master_sql(3307, "rep'l", "p"),
            "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = 3307, MASTER_USER = 'rep''l', \
             MASTER_PASSWORD = 'p', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1"
        );
    }
}

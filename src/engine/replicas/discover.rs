//! Finding a job's replicas on the servers themselves: each server's facts, the replicas it
//! lists (`SHOW REPLICAS` / `SHOW SLAVE HOSTS`) and the `Binlog Dump` threads of its
//! processlist, recursively below the primary (as pt-online-schema-change's
//! `--recursion-method processlist,hosts` does), with the job's `replicas:` added or
//! overriding; and one replica's replication status.

use super::lag::{stopped_why, LagSource, Reading};
use super::topology::{self, Found, Node, ServerFacts, Topology};
use crate::db::connect::ConnectionConfig;
use crate::db::errno;
use anyhow::{Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::{Column, MySqlConnection, Row};
use std::time::Duration;

/// A server's own facts (no `wsrep_on` row: not built with Galera).
pub const FACTS_SQL: &str = "SELECT @@server_id, CAST(VERSION() AS CHAR), @@log_bin, CAST(@@binlog_format AS CHAR), @@log_slave_updates";
/// Whether Galera replication is on.
pub const WSREP_SQL: &str = "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'";
/// The replicas a server lists: MySQL 8.0.22+ spells it so.
pub const REPLICAS_SQL: &str = "SHOW REPLICAS";
/// The same on MariaDB and older MySQL.
pub const SLAVE_HOSTS_SQL: &str = "SHOW SLAVE HOSTS";
/// The hosts replicas read the binary log from (`Binlog Dump`, and `Binlog Dump GTID` on MySQL).
pub const DUMP_THREADS_SQL: &str = "SELECT CAST(HOST AS CHAR) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'";
/// A replica's replication status (no row: not a replica): MySQL 8.0.22+ and MariaDB 10.5.1+.
pub const REPLICA_STATUS_SQL: &str = "SHOW REPLICA STATUS";
/// The same on servers older than those, which know only this spelling.
pub const SLAVE_STATUS_SQL: &str = "SHOW SLAVE STATUS";

/// A column of `row` as text, whatever type the server sent it in (`""` when absent).
fn text(row: &MySqlRow, names: &[&str]) -> String {
    let Some(i) = row
        .columns()
        .iter()
        .position(|c| names.iter().any(|n| c.name().eq_ignore_ascii_case(n)))
    else {
        return String::new();
    };
    row.try_get::<Option<String>, _>(i)
        .ok()
        .flatten()
        .or_else(|| {
            row.try_get::<Option<Vec<u8>>, _>(i)
                .ok()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        })
        .or_else(|| {
            row.try_get::<Option<i64>, _>(i)
                .ok()
                .flatten()
                .map(|v| v.to_string())
        })
        .or_else(|| {
            row.try_get::<Option<u64>, _>(i)
                .ok()
                .flatten()
                .map(|v| v.to_string())
        })
        .unwrap_or_default()
}

/// Runs the first spelling, or the second where the server does not know the first.
async fn either(
    c: &mut MySqlConnection,
    new: &str,
    old: &str,
) -> Result<Vec<MySqlRow>, sqlx::Error> {
    match sqlx::query(new).fetch_all(&mut *c).await {
        Err(e) if errno::of(&e) == Some(errno::PARSE_ERROR) => sqlx::query(old).fetch_all(c).await,
        other => other,
    }
}

/// What a server says of itself.
pub async fn facts(c: &mut MySqlConnection) -> Result<ServerFacts> {
    let r = sqlx::query(FACTS_SQL)
        .fetch_one(&mut *c)
        .await
        .context("reading the server's id, version and binary log settings")?;
    let flag = |i: usize| -> bool {
        r.try_get::<Option<i64>, _>(i)
            .ok()
            .flatten()
            .map(|v| v != 0)
            .unwrap_or(false)
    };
    let wsrep = sqlx::query(WSREP_SQL)
        .fetch_optional(&mut *c)
        .await
        .context("reading wsrep_on")?;
    Ok(ServerFacts {
        server_id: r
            .try_get::<Option<i64>, _>(0)
            .ok()
            .flatten()
            .or_else(|| {
                r.try_get::<Option<u64>, _>(0)
                    .ok()
                    .flatten()
                    .map(|v| v as i64)
            })
            .unwrap_or(0) as u32,
        version: r.get::<Option<String>, _>(1).unwrap_or_default(),
        log_bin: flag(2),
        binlog_format: r.get::<Option<String>, _>(3).unwrap_or_default(),
        log_slave_updates: flag(4),
        wsrep_on: wsrep.is_some_and(|w| text(&w, &["Value"]).eq_ignore_ascii_case("ON")),
    })
}

/// The replicas a server lists and the hosts of its dump threads, as `host:port` candidates
/// (true: listed with their own port).
pub async fn listed(c: &mut MySqlConnection, port: u16) -> Result<Vec<(String, bool)>> {
    let hosts: Vec<(String, u16)> = either(c, REPLICAS_SQL, SLAVE_HOSTS_SQL)
        .await
        .context("listing the server's replicas (SHOW SLAVE HOSTS)")?
        .iter()
        .map(|r| {
            (
                text(r, &["Host"]),
                text(r, &["Port"]).parse().unwrap_or(3306),
            )
        })
        .collect();
    // Reading another user's threads takes PROCESS; without it only the hosts list counts.
    let dumps: Vec<String> = sqlx::query_scalar(DUMP_THREADS_SQL)
        .fetch_all(&mut *c)
        .await
        .unwrap_or_default();
    Ok(topology::candidates(&hosts, &dumps, port))
}

/// A replica's state now, by `SHOW REPLICA STATUS`: stopped (why), or replicating with its
/// `Seconds_Behind_Master`; `None`: the server is no replica.
pub async fn status(c: &mut MySqlConnection) -> Result<Option<Reading>> {
    let rows = either(c, REPLICA_STATUS_SQL, SLAVE_STATUS_SQL)
        .await
        .context("reading the replication status")?;
    let Some(r) = rows.first() else {
        return Ok(None);
    };
    let why = stopped_why(
        &text(r, &["Replica_IO_Running", "Slave_IO_Running"]),
        &text(r, &["Replica_SQL_Running", "Slave_SQL_Running"]),
        &text(r, &["Last_IO_Error"]),
        &text(r, &["Last_SQL_Error"]),
    );
    Ok(Some(match why {
        Some(w) => Reading::Stopped(w),
        None => match text(r, &["Seconds_Behind_Source", "Seconds_Behind_Master"]).parse::<u64>() {
            Ok(s) => Reading::Replicating(Duration::from_secs(s), LagSource::SecondsBehind),
            Err(_) => Reading::Stopped("Seconds_Behind_Master is NULL".to_string()),
        },
    }))
}

/// What a replica's threads are doing and where they are, in words: for a message when it
/// does not catch up although both threads run.
pub async fn threads_in_words(c: &mut MySqlConnection) -> String {
    let rows = match either(c, REPLICA_STATUS_SQL, SLAVE_STATUS_SQL).await {
        Ok(rows) => rows,
        Err(e) => return format!("status unreadable: {e}"),
    };
    let Some(r) = rows.first() else {
        return "not a replica".to_string();
    };
    let slave_pos: String = sqlx::query_scalar("SELECT CAST(@@global.gtid_slave_pos AS CHAR)")
        .fetch_one(&mut *c)
        .await
        .unwrap_or_default();
    format!(
        "IO thread: {}; SQL thread: {}; received {} (Gtid_IO_Pos), applied {} (gtid_slave_pos); \
         read {}:{}, executed {}:{}",
        text(r, &["Replica_IO_State", "Slave_IO_State"]),
        text(r, &["Replica_SQL_Running_State", "Slave_SQL_Running_State"]),
        text(r, &["Gtid_IO_Pos"]),
        slave_pos,
        text(r, &["Source_Log_File", "Master_Log_File"]),
        text(r, &["Read_Source_Log_Pos", "Read_Master_Log_Pos"]),
        text(r, &["Relay_Source_Log_File", "Relay_Master_Log_File"]),
        text(r, &["Exec_Source_Log_Pos", "Exec_Master_Log_Pos"]),
    )
}

/// A server found at `address`, reached with the job's credentials.
fn at(base: &ConnectionConfig, address: &str) -> Result<ConnectionConfig> {
    super::address::replica_config(base, address)
}

/// Every replica below the primary `cfg` (reached over `conn`), recursively, with `named`
/// (the job's `replicas:` as settings) added or overriding one found at the same address.
/// Returns the topology and each replica's settings, in the same order.
pub async fn survey(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    named: &[ConnectionConfig],
) -> Result<(Topology, Vec<ConnectionConfig>)> {
    let pf = facts(conn).await?;
    let paddr = topology::address(&cfg.host, cfg.port);
    let key = |c: &ConnectionConfig| topology::address(&c.host, c.port);
    // A stack, depth first: the job's own at the bottom (watched whether found or not),
    // each server's replicas pushed above it as it is reached.
    let mut stack: Vec<(ConnectionConfig, Found, Option<String>)> = named
        .iter()
        .rev()
        .map(|n| (n.clone(), Found::Named, None))
        .collect();
    if pf.log_bin {
        let below = listed(conn, cfg.port).await?;
        push_below(&mut stack, cfg, named, below, &paddr)?;
    }
    let mut seen_ids = vec![pf.server_id];
    let mut nodes: Vec<Node> = Vec::new();
    let mut cfgs: Vec<ConnectionConfig> = Vec::new();
    while let Some((c, found, below)) = stack.pop() {
        let address = key(&c);
        if address == paddr || nodes.iter().any(|n| n.address == address) {
            continue;
        }
        let (facts, reading) = match c.connect_one().await {
            Ok(mut rc) => {
                let f = facts(&mut rc).await?;
                if seen_ids.contains(&f.server_id) {
                    // A server met before under another address (a processlist host taken
                    // at the asking server's port is that server itself).
                    continue;
                }
                seen_ids.push(f.server_id);
                let reading = status(&mut rc).await?.unwrap_or_else(|| {
                    Reading::Stopped("not a replica (no replication status)".into())
                });
                if f.log_bin {
                    let below = listed(&mut rc, c.port).await?;
                    push_below(&mut stack, cfg, named, below, &address)?;
                }
                (Some(f), reading)
            }
            Err(e) => (None, Reading::Unreachable(format!("{e:#}"))),
        };
        nodes.push(Node {
            address,
            found,
            below,
            facts,
            reading,
        });
        cfgs.push(c);
    }
    Ok((
        Topology {
            primary: (paddr, pf),
            replicas: nodes,
        },
        cfgs,
    ))
}

/// Pushes the replicas `server` lists, the job's settings for those it names.
fn push_below(
    stack: &mut Vec<(ConnectionConfig, Found, Option<String>)>,
    base: &ConnectionConfig,
    named: &[ConnectionConfig],
    listed: Vec<(String, bool)>,
    server: &str,
) -> Result<()> {
    for (a, hosts) in listed.into_iter().rev() {
        let own = named
            .iter()
            .find(|n| topology::address(&n.host, n.port) == a);
        let found = match (hosts, own.is_some()) {
            (true, named) => Found::Hosts { named },
            (false, named) => Found::Processlist { named },
        };
        let c = match own {
            Some(n) => n.clone(),
            None => at(base, &a)?,
        };
        stack.push((c, found, Some(server.to_string())));
    }
    Ok(())
}

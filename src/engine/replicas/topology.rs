//! The replication topology of a job without I/O: what each server is, which replicas
//! discovery found and how, what the job's `replicas:` adds or overrides, what refuses a
//! job before it writes (a Galera node, a binary log in STATEMENT format), and the
//! rehearsal's account of it all.

use super::lag::Reading;
use std::time::Duration;

/// What one server says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerFacts {
    /// `@@server_id`.
    pub server_id: u32,
    /// `VERSION()`.
    pub version: String,
    /// `@@log_bin`: it writes a binary log.
    pub log_bin: bool,
    /// `@@binlog_format`: ROW, MIXED or STATEMENT.
    pub binlog_format: String,
    /// `@@log_slave_updates` (`log_replica_updates`): what it applies as a replica goes into
    /// its own binary log, for replicas chained below it.
    pub log_slave_updates: bool,
    /// `wsrep_on`: a Galera (MariaDB Cluster, Percona XtraDB Cluster) node.
    pub wsrep_on: bool,
}

/// How a replica came to be watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Named in the job's `replicas:` (and not found otherwise).
    Named,
    /// `SHOW SLAVE HOSTS` / `SHOW REPLICAS` of its source (found, and the job names it too:
    /// the job's user and address for it win).
    Hosts {
        /// The job's `replicas:` names it as well.
        named: bool,
    },
    /// A `Binlog Dump` thread in its source's processlist (its port taken as the source's).
    Processlist {
        /// The job's `replicas:` names it as well.
        named: bool,
    },
}

/// A replica in the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `host:port`, as watched.
    pub address: String,
    /// Where it was found.
    pub found: Found,
    /// The address of the server it was found below (`None`: named in the job).
    pub below: Option<String>,
    /// What it says of itself (`None`: not reached).
    pub facts: Option<ServerFacts>,
    /// Its replication state and lag when surveyed.
    pub reading: Reading,
}

/// The servers a job runs against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// The primary's address and facts.
    pub primary: (String, ServerFacts),
    /// Every replica, each once, in the order found (depth first below the primary).
    pub replicas: Vec<Node>,
}

/// The host of a `PROCESSLIST.HOST` value (`host:port` of the client's socket; the port
/// is the replica's outgoing one, not its server's).
pub fn processlist_host(host: &str) -> Option<String> {
    let h = host.trim();
    let h = match h.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None if h.matches(':').count() == 1 => h.split(':').next().unwrap_or(""),
        None => h,
    };
    (!h.is_empty()).then(|| h.to_string())
}

/// The replicas a server lists: `SHOW SLAVE HOSTS` rows (`host`, `port`; a replica that sets
/// no `report_host` has an empty host and is left to the processlist), then the hosts of the
/// processlist's `Binlog Dump` threads not listed so, at the asking server's port (as
/// pt-online-schema-change's `--recursion-method processlist` assumes). Each `host:port`.
pub fn candidates(
    hosts: &[(String, u16)],
    dump_threads: &[String],
    asker_port: u16,
) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for (h, p) in hosts {
        let a = address(h, *p);
        if !h.is_empty() && !out.iter().any(|(o, _)| *o == a) {
            out.push((a, true));
        }
    }
    for t in dump_threads {
        let Some(h) = processlist_host(t) else {
            continue;
        };
        if hosts.iter().any(|(hh, _)| *hh == h) {
            continue;
        }
        let a = address(&h, asker_port);
        if !out.iter().any(|(o, _)| *o == a) {
            out.push((a, false));
        }
    }
    out
}

/// `host:port`, with an IPv6 host in brackets.
pub fn address(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Why the job may not run on this topology, each with its fix (empty: it may).
pub fn refusals(t: &Topology) -> Vec<String> {
    let mut out = Vec::new();
    let (paddr, p) = &t.primary;
    if p.wsrep_on {
        out.push(format!(
            "{paddr} is a Galera node (wsrep_on=ON: MariaDB Cluster or Percona XtraDB Cluster). myrecode's cut-over \
             swaps tables under an explicit LOCK TABLES, which Galera neither replicates nor honours across nodes \
             (writes through another node would reach the tables mid-swap), and its triggers' change log would \
             race the certification of those writes. Fix: not supported yet; recode a standalone copy of the \
             schema (an asynchronous replica of the cluster promoted for the job), or stop writes through every \
             other node and run the job against one node with wsrep_OSU_method=TOI"
        ));
    }
    if t.replicas.is_empty() {
        return out;
    }
    let writers = std::iter::once((paddr.as_str(), Some(p), true)).chain(
        t.replicas
            .iter()
            .map(|n| (n.address.as_str(), n.facts.as_ref(), false)),
    );
    for (addr, facts, primary) in writers {
        let Some(f) = facts else { continue };
        let writes = f.log_bin && (primary || f.log_slave_updates);
        if writes && f.binlog_format.eq_ignore_ascii_case("STATEMENT") {
            out.push(format!(
                "{addr} writes its binary log in STATEMENT format, and it has replicas: a copied table's \
                 change-log triggers insert into an AUTO_INCREMENT table, and the copy reads its batches \
                 with LIMIT, which statement-based replication replays by each replica's own state (the \
                 server lists both as unsafe for it), so a replica's copy could differ from the primary's. \
                 myrecode requires ROW or MIXED (MIXED logs those statements as rows). Fix: \
                 SET GLOBAL binlog_format = 'ROW' (or 'MIXED') on {addr} and in its configuration, \
                 then reconnect the application (a session keeps the format it began with)"
            ));
        }
    }
    for n in &t.replicas {
        if n.facts.is_none() {
            let how = match (&n.found, &n.below) {
                (Found::Named, _) => "named in the job".to_string(),
                (_, Some(b)) => format!("found below {b}"),
                (_, None) => "found".to_string(),
            };
            out.push(format!(
                "replica {} ({how}) cannot be reached: {}. A replica the job cannot watch is one \
                 whose lag it cannot hold back. Fix: give the job a user that reaches it, naming it in \
                 defaults.replicas as mysql://user@{}/ (the password comes from MYSQL_PWD or the \
                 primary's URL)",
                n.address,
                match &n.reading {
                    Reading::Unreachable(e) => e.as_str(),
                    _ => "no answer",
                },
                n.address
            ));
        }
    }
    out
}

/// What a binary log format means for the job's replicas.
fn format_meaning(format: &str) -> &'static str {
    match format.to_ascii_uppercase().as_str() {
        "ROW" => "replicas apply the primary's row images: equal by construction",
        "MIXED" => "unsafe statements (the triggers' change log, LIMIT batches) go as rows, the rest as statements on the same data",
        "STATEMENT" => "refused when it has replicas (see above)",
        _ => "unknown format",
    }
}

/// The rehearsal's account of the topology: each server, how it was found, its format, its
/// relaying, its lag, and what that means for the job. Nothing for a primary without a binary log or replicas: no replication to speak of.
pub fn rehearsal_lines(t: &Topology, max_lag: Duration, max_down: Duration) -> String {
    let (paddr, p) = &t.primary;
    if !p.log_bin && t.replicas.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "Replication: primary {paddr} (server {}, {}), binary log {}\n",
        p.server_id,
        p.version,
        if p.log_bin {
            format!("{} ({})", p.binlog_format, format_meaning(&p.binlog_format))
        } else {
            "off".to_string()
        }
    );
    if t.replicas.is_empty() {
        out.push_str(
            "  no replicas found (SHOW SLAVE HOSTS, Binlog Dump threads) or named: no lag throttle\n",
        );
        return out;
    }
    for n in &t.replicas {
        let how = match (&n.found, &n.below) {
            (Found::Named, _) => "named in the job".to_string(),
            (Found::Hosts { named }, b) => format!(
                "SHOW SLAVE HOSTS of {}{}",
                b.as_deref().unwrap_or("?"),
                if *named { ", named in the job" } else { "" }
            ),
            (Found::Processlist { named }, b) => format!(
                "Binlog Dump thread on {}{}",
                b.as_deref().unwrap_or("?"),
                if *named { ", named in the job" } else { "" }
            ),
        };
        let facts = match &n.facts {
            Some(f) => format!(
                "server {}, binary log {}, log_slave_updates {}",
                f.server_id,
                if f.log_bin {
                    f.binlog_format.as_str()
                } else {
                    "off"
                },
                if f.log_slave_updates {
                    "ON (relays to replicas below it)"
                } else {
                    "OFF"
                }
            ),
            None => "not reached".to_string(),
        };
        out.push_str(&format!(
            "  replica {} ({how}): {facts}; {}\n",
            n.address,
            n.reading.describe()
        ));
    }
    out.push_str(&format!(
        "  The job writes a heartbeat on the primary every 100 ms and throttles while any replica lags more than \
         max_replica_lag {} ms; a stopped or unreachable replica throttles it too, and after max_replica_down {} s \
         stops it (run it again to resume). The cut-over waits until every replica is within max_replica_lag.\n",
        max_lag.as_millis(),
        max_down.as_secs()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::super::lag::LagSource;
    use super::*;

    fn facts(id: u32, format: &str, relays: bool) -> ServerFacts {
        ServerFacts {
            server_id: id,
            version: "10.11.19-MariaDB".into(),
            log_bin: true,
            binlog_format: format.into(),
            log_slave_updates: relays,
            wsrep_on: false,
        }
    }

    fn node(a: &str, f: Option<ServerFacts>) -> Node {
        Node {
            address: a.into(),
            found: Found::Hosts { named: false },
            below: Some("db1:3306".into()),
            reading: match f {
                Some(_) => Reading::Replicating(Duration::ZERO, LagSource::SecondsBehind),
                None => Reading::Unreachable("Connection refused".into()),
            },
            facts: f,
        }
    }

    #[test]
    fn processlist_hosts_lose_their_client_port() {
        assert_eq!(
            processlist_host("10.0.0.7:51234").as_deref(),
            Some("10.0.0.7")
        );
        assert_eq!(processlist_host("[::1]:4000").as_deref(), Some("::1"));
        assert_eq!(processlist_host("replica2").as_deref(), Some("replica2"));
        assert_eq!(processlist_host(""), None);
        assert_eq!(address("::1", 3306), "[::1]:3306");
    }

    #[test]
    fn listed_hosts_first_then_unlisted_dump_threads_at_the_askers_port() {
        let hosts = vec![
            ("10.0.0.2".to_string(), 3307),
            (String::new(), 3306),
            ("10.0.0.2".to_string(), 3307),
        ];
        let dumps = vec![
            "10.0.0.2:40000".to_string(),
            "10.0.0.9:40001".to_string(),
            "10.0.0.9:40002".to_string(),
        ];
        assert_eq!(
            candidates(&hosts, &dumps, 3306),
            vec![
                ("10.0.0.2:3307".to_string(), true),
                ("10.0.0.9:3306".to_string(), false)
            ]
        );
    }

    #[test]
    fn statement_format_is_refused_where_a_binary_log_feeds_replicas() {
        let t = |p: &str, r1: &str, relays: bool| Topology {
            primary: ("db1:3306".into(), facts(1, p, false)),
            replicas: vec![node("db2:3306", Some(facts(2, r1, relays)))],
        };
        assert!(refusals(&t("ROW", "ROW", true)).is_empty());
        assert!(refusals(&t("MIXED", "STATEMENT", false)).is_empty());
        let r = refusals(&t("STATEMENT", "ROW", false));
        assert_eq!(r.len(), 1);
        assert!(
            r[0].starts_with("db1:3306 writes its binary log in STATEMENT format"),
            "{}",
            r[0]
        );
        assert!(r[0].contains("Fix: SET GLOBAL binlog_format = 'ROW'"));
        // A relay in STATEMENT format feeds its own replicas by statements.
        let r = refusals(&t("ROW", "STATEMENT", true));
        assert!(r[0].starts_with("db2:3306 writes"), "{r:?}");
        // Without replicas the format matters to nobody.
        let mut alone = t("STATEMENT", "ROW", false);
        alone.replicas.clear();
        assert!(refusals(&alone).is_empty());
    }

    #[test]
    fn a_galera_node_and_an_unreachable_replica_are_refused_with_their_fix() {
        let mut p = facts(1, "ROW", false);
        p.wsrep_on = true;
        let t = Topology {
            primary: ("db1:3306".into(), p),
            replicas: vec![node("db3:3306", None)],
        };
        let r = refusals(&t);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].contains("is a Galera node (wsrep_on=ON"), "{}", r[0]);
        assert!(r[0].contains("LOCK TABLES"), "{}", r[0]);
        assert!(
            r[1].starts_with(
                "replica db3:3306 (found below db1:3306) cannot be reached: Connection refused"
            ),
            "{}",
            r[1]
        );
        assert!(r[1].contains("mysql://user@db3:3306/"), "{}", r[1]);
    }

    #[test]
    fn the_rehearsal_names_each_server_how_it_was_found_and_what_it_means() {
        let t = Topology {
            primary: ("db1:3306".into(), facts(1, "MIXED", false)),
            replicas: vec![
                node("db2:3306", Some(facts(2, "MIXED", true))),
                Node {
                    below: Some("db2:3306".into()),
                    found: Found::Processlist { named: true },
                    ..node("db3:3306", Some(facts(3, "ROW", false)))
                },
            ],
        };
        let text = rehearsal_lines(&t, Duration::from_millis(1500), Duration::from_secs(60));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Replication: primary db1:3306 (server 1, 10.11.19-MariaDB), binary log MIXED \
             (unsafe statements (the triggers' change log, LIMIT batches) go as rows, the rest as statements on the same data)"
        );
        assert_eq!(
            lines[1],
            "  replica db2:3306 (SHOW SLAVE HOSTS of db1:3306): server 2, binary log MIXED, \
             log_slave_updates ON (relays to replicas below it); lag 0 s (Seconds_Behind_Master: whole seconds, no heartbeat is written yet)"
        );
        assert!(
            lines[2].starts_with(
                "  replica db3:3306 (Binlog Dump thread on db2:3306, named in the job): server 3, binary log ROW, log_slave_updates OFF;"
            ),
            "{}",
            lines[2]
        );
        assert!(lines[3].contains("max_replica_lag 1500 ms"), "{}", lines[3]);
        let mut alone = t.clone();
        alone.replicas.clear();
        assert_eq!(
            rehearsal_lines(&alone, Duration::ZERO, Duration::ZERO).lines().nth(1),
            Some("  no replicas found (SHOW SLAVE HOSTS, Binlog Dump threads) or named: no lag throttle")
        );
        alone.primary.1.log_bin = false;
        assert_eq!(rehearsal_lines(&alone, Duration::ZERO, Duration::ZERO), "");
        assert!(lines[3].contains("max_replica_down 60 s"), "{}", lines[3]);
    }
}

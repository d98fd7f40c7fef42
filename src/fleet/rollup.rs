//! One report for the whole fleet, from each schema's scan report and the server's usage
//! snapshot: per server, schema and table, what is legacy and in which encodings, what is
//! undecided, what blocks (the refusals `plan` would give, [`crate::job::choose`]), the
//! estimated work, and whether the table looks used. Pure.

use super::pace;
use super::usage::{self, Counters, ServerUsage, Usage, Verdict};
use crate::clients::model::ClientsSeen;
use crate::job::choose;
use crate::scan::model::{ScanReport, Strategy, TableScan};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the roll-up's JSON layout.
pub const ROLLUP_VERSION: u32 = 1;

/// The fleet's roll-up (`DIR/fleet.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    /// Layout version.
    pub rollup_version: u32,
    /// myrecode version that wrote it.
    pub tool_version: String,
    /// One entry per server, in fleet-file order.
    pub servers: Vec<ServerRollup>,
    /// The fleet's sums.
    pub totals: Totals,
    /// The pace the estimated times use, and where it was measured.
    #[serde(default)]
    pub pace: String,
}

/// One server's part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRollup {
    /// Name in the fleet file.
    pub name: String,
    /// Where the usage counters came from, or why there are none.
    pub counters: String,
    /// When the usage snapshot was taken, and the uptime then ("since the counters started").
    pub counters_since: String,
    /// Schemas scanned.
    pub schemas: Vec<SchemaRollup>,
    /// Schemas whose scan failed, with the error (never a secret).
    pub failed: BTreeMap<String, String>,
    /// The server's sums.
    pub totals: Totals,
}

/// One schema's part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaRollup {
    /// Schema name.
    pub name: String,
    /// Its own scan report, relative to the output folder.
    pub report: String,
    /// `full` or `sample`.
    pub mode: String,
    /// Its tables.
    pub tables: Vec<TableRollup>,
    /// The schema's sums.
    pub totals: Totals,
    /// The clients seen on it while it was scanned, each with its charset
    /// (`user@host: 3 session(s), charset latin1`); empty where they could not be read.
    #[serde(default)]
    pub clients: Vec<String>,
}

/// One table's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableRollup {
    /// Table name.
    pub name: String,
    /// `in-place`, `copy` or `none`, as the scan says.
    pub strategy: Strategy,
    /// Columns holding legacy text, each with the encoding it holds (`body: cp1251`).
    pub legacy_columns: Vec<String>,
    /// Values per encoding found in those columns (ASCII and undecided values left out).
    pub encodings: BTreeMap<String, u64>,
    /// Values no reading decides.
    pub undecided: u64,
    /// Why `plan` would leave the table (or a column) out, one sentence each with the fix.
    pub blocks: Vec<String>,
    /// The server's row estimate.
    pub estimated_rows: u64,
    /// Rows the scan read.
    pub rows_scanned: u64,
    /// Data and index bytes, as the server estimated them before the scan (`None`: not read).
    pub bytes: Option<u64>,
    /// Seconds to recode its estimated rows at the measured pace (0: nothing to recode).
    #[serde(default)]
    pub estimated_seconds: u64,
    /// Used, unused or unknown, with the evidence.
    pub usage: Usage,
}

/// Sums over tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Tables.
    pub tables: u64,
    /// Tables holding legacy text.
    pub legacy_tables: u64,
    /// Legacy values (the sum of `encodings`).
    pub legacy_values: u64,
    /// Undecided values.
    pub undecided: u64,
    /// Tables with at least one block.
    pub blocked_tables: u64,
    /// Tables the counters call unused.
    pub unused_tables: u64,
    /// Estimated rows.
    pub estimated_rows: u64,
    /// Rows scanned.
    pub rows_scanned: u64,
    /// Estimated bytes.
    pub bytes: u64,
    /// Seconds to recode the tables holding legacy text, at the measured pace.
    #[serde(default)]
    pub estimated_seconds: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.tables += o.tables;
        self.legacy_tables += o.legacy_tables;
        self.legacy_values += o.legacy_values;
        self.undecided += o.undecided;
        self.blocked_tables += o.blocked_tables;
        self.unused_tables += o.unused_tables;
        self.estimated_rows += o.estimated_rows;
        self.rows_scanned += o.rows_scanned;
        self.bytes += o.bytes;
        self.estimated_seconds += o.estimated_seconds;
    }

    fn of_table(t: &TableRollup) -> Totals {
        Totals {
            tables: 1,
            legacy_tables: u64::from(!t.legacy_columns.is_empty()),
            legacy_values: t.encodings.values().sum(),
            undecided: t.undecided,
            blocked_tables: u64::from(!t.blocks.is_empty()),
            unused_tables: u64::from(t.usage.verdict == Verdict::Unused),
            estimated_rows: t.estimated_rows,
            rows_scanned: t.rows_scanned,
            bytes: t.bytes.unwrap_or(0),
            estimated_seconds: t.estimated_seconds,
        }
    }
}

/// One server's inputs: its usage snapshot, each schema's report with its path, failures.
#[derive(Debug, Clone)]
pub struct ServerInput {
    /// Name in the fleet file.
    pub name: String,
    /// The snapshot taken before its scans (`None`: it could not be taken).
    pub usage: Option<ServerUsage>,
    /// `(schema, report path relative to the output folder, report)`.
    pub reports: Vec<(String, String, ScanReport)>,
    /// Schemas whose scan failed, with the error.
    pub failed: BTreeMap<String, String>,
}

/// Labels that are not an encoding to recode from.
const NOT_LEGACY: [&str; 3] = ["ascii", "unknown", "binary"];

/// Rolls up one table of `report`.
fn table(t: &TableScan, all: &[&TableScan], usage: Option<&ServerUsage>) -> TableRollup {
    let mut legacy_columns = Vec::new();
    let mut encodings = BTreeMap::new();
    let mut blocks = Vec::new();
    for c in t.columns.iter().filter(|c| c.strategy != Strategy::None) {
        legacy_columns.push(format!(
            "{}: {}",
            c.name,
            c.source.as_deref().unwrap_or("mixed")
        ));
        for (label, n) in c
            .labels
            .iter()
            .filter(|(l, _)| !NOT_LEGACY.contains(&l.as_str()))
        {
            *encodings.entry(label.clone()).or_insert(0) += n;
        }
        if let Some(b) = &c.blocked {
            blocks.push(format!("{}: {b}", c.name));
        }
    }
    let choice = choose::choose_in(t, all);
    if !legacy_columns.is_empty() {
        blocks.extend(choice.out.iter().map(|r| r.to_string()));
        blocks.extend(
            choice
                .refused
                .iter()
                .map(|(c, r)| format!("{}: {r}", c.name)),
        );
    }
    blocks.dedup();
    let found = usage.and_then(|u| {
        u.schemas
            .iter()
            .find(|s| s.schema == t.schema)
            .and_then(|s| s.tables.iter().find(|x| x.table == t.name))
            .map(|x| (u, x))
    });
    let (usage, bytes) = match found {
        Some((u, x)) => (usage::classify(u, x), Some(x.bytes)),
        None => (
            Usage {
                verdict: Verdict::Unknown,
                evidence: "no counters (the table was not in the snapshot taken before the scan)"
                    .into(),
            },
            None,
        ),
    };
    let estimated_seconds = if legacy_columns.is_empty() {
        0
    } else {
        pace::seconds(t.strategy, t.estimated_rows)
    };
    TableRollup {
        estimated_seconds,
        name: t.name.clone(),
        strategy: t.strategy,
        legacy_columns,
        encodings,
        undecided: t.columns.iter().map(|c| c.undecided_total).sum(),
        blocks,
        estimated_rows: t.estimated_rows,
        rows_scanned: t.rows_scanned,
        bytes,
        usage,
    }
}

fn counters_text(u: Option<&ServerUsage>) -> (String, String) {
    match u {
        None => (
            "no counters (the snapshot could not be taken)".into(),
            String::new(),
        ),
        Some(u) => (
            match &u.counters {
                Counters::TableStatistics => {
                    "information_schema.TABLE_STATISTICS (userstat=1)".into()
                }
                Counters::PerformanceSchema => {
                    "performance_schema.table_io_waits_summary_by_table".into()
                }
                Counters::None { why } => format!("no counters ({why})"),
            },
            format!(
                "snapshot {} before the scan; server up {} then",
                u.taken_at,
                usage::human_duration(u.uptime_secs)
            ),
        ),
    }
}

/// Rolls up the whole fleet.
pub fn rollup(servers: &[ServerInput], tool_version: &str) -> Rollup {
    let mut totals = Totals::default();
    let servers = servers
        .iter()
        .map(|s| {
            let mut st = Totals::default();
            let schemas = s
                .reports
                .iter()
                .map(|(name, path, r)| {
                    let all: Vec<&TableScan> = r.tables.iter().collect();
                    let tables: Vec<TableRollup> = r
                        .tables
                        .iter()
                        .map(|t| table(t, &all, s.usage.as_ref()))
                        .collect();
                    let mut t = Totals::default();
                    tables.iter().for_each(|x| t.add(&Totals::of_table(x)));
                    st.add(&t);
                    SchemaRollup {
                        name: name.clone(),
                        report: path.clone(),
                        mode: r.mode.clone(),
                        tables,
                        totals: t,
                        clients: clients(r.clients.iter().find(|c| &c.schema == name)),
                    }
                })
                .collect();
            totals.add(&st);
            let (counters, counters_since) = counters_text(s.usage.as_ref());
            ServerRollup {
                name: s.name.clone(),
                counters,
                counters_since,
                schemas,
                failed: s.failed.clone(),
                totals: st,
            }
        })
        .collect();
    Rollup {
        rollup_version: ROLLUP_VERSION,
        tool_version: tool_version.to_string(),
        servers,
        totals,
        pace: pace::SOURCE.to_string(),
    }
}

/// The clients a schema's scan saw, one line each with its charset (`seen`: `None` where
/// the scan could not read them).
fn clients(seen: Option<&ClientsSeen>) -> Vec<String> {
    let Some(seen) = seen else {
        return Vec::new();
    };
    if seen.seen.is_empty() {
        return vec!["no client session on the schema while it was scanned".into()];
    }
    seen.seen
        .iter()
        .map(|c| {
            let charset = match &c.charset {
                Some(cs) => format!("charset {cs}"),
                None => format!(
                    "charset not readable per session here; one declaring none gets {}",
                    seen.server_handshake
                ),
            };
            format!(
                "{}@{}: {} session(s), {charset}{}{}",
                c.user,
                c.host,
                c.sessions,
                c.set_names
                    .as_ref()
                    .map(|n| format!(", SET NAMES {n}"))
                    .unwrap_or_default(),
                if c.privileged {
                    ", SUPER (init_connect skipped)"
                } else {
                    ""
                }
            )
        })
        .collect()
}

/// Whether anything needs attention: legacy text, undecided values, blocks or failures.
pub fn needs_action(r: &Rollup) -> bool {
    r.totals.legacy_tables > 0
        || r.totals.undecided > 0
        || r.totals.blocked_tables > 0
        || r.servers.iter().any(|s| !s.failed.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::usage::{SchemaUsage, TableUsage};

    /// A scan report as `scan --json` writes it, trimmed to what the roll-up reads.
    fn report() -> ScanReport {
        let col = |name: &str, strategy: &str, labels: &str, undecided: u64, source: &str| {
            serde_json::json!({
                "name": name, "column_type": "text", "charset": "latin1",
                "collation": "latin1_swedish_ci", "nullable": true, "declared_max_chars": 65535,
                "rows": 10, "nulls": 0, "empty": 0, "labels": serde_json::from_str::<serde_json::Value>(labels).unwrap(),
                "confidence": {}, "examples": {}, "undecided": [], "undecided_total": undecided,
                "max_bytes_now": 10, "max_bytes_after": 20, "max_chars_after": 10,
                "source": if source.is_empty() { serde_json::Value::Null } else { source.into() },
                "target": {"column_type": "text", "charset": "utf8mb4", "collation": "utf8mb4_unicode_ci", "why": ""},
                "strategy": strategy, "fits": true, "risks": []
            })
        };
        let table = |name: &str,
                     key: bool,
                     cols: Vec<serde_json::Value>,
                     strategy: &str,
                     est: u64| {
            serde_json::json!({
                "schema": "shop", "name": name, "row_format": "Dynamic", "engine": "InnoDB",
                "key": if key { serde_json::json!({"index": "PRIMARY", "columns": ["id"]}) } else { serde_json::Value::Null },
                "estimated_rows": est, "rows_scanned": if key { 10 } else { 0 }, "strategy": strategy,
                "columns": cols, "risks": []
            })
        };
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "tool_version": "t",
            "server": {"version": "10.11", "flavor": "MariaDB", "innodb_page_size": 16384, "default_row_format": "dynamic"},
            "mode": "full", "sample_rows": null,
            "tables": [
                table("posts", true, vec![col("body", "copy", r#"{"ascii": 3, "cp1251": 6, "unknown": 1}"#, 1, "cp1251")], "copy", 10),
                table("logs", true, vec![col("msg", "none", r#"{"ascii": 10}"#, 0, "")], "none", 10),
            ]
        }))
        .expect("the fixture is a scan report")
    }

    fn usage() -> ServerUsage {
        let t = |name: &str, read: u64| TableUsage {
            table: name.into(),
            rows_read: Some(read),
            rows_changed: Some(0),
            update_time: None,
            rows: 10,
            bytes: 16384,
        };
        ServerUsage {
            counters: Counters::TableStatistics,
            uptime_secs: 100,
            taken_at: "2026-12-06T14:00:00Z".into(),
            schemas: vec![SchemaUsage {
                schema: "shop".into(),
                tables: vec![t("posts", 7), t("logs", 0)],
            }],
        }
    }

    #[test]
    fn the_clients_seen_are_listed_with_their_charsets() {
        use crate::clients::model::ClientSeen;
        let app = |user: &str, charset: Option<&str>, privileged: bool| ClientSeen {
            user: user.into(),
            host: "10.0.0.5".into(),
            sessions: 3,
            charset: charset.map(str::to_string),
            set_names: None,
            privileged,
            idle_secs: 0,
        };
        let mut seen = ClientsSeen {
            schema: "shop".into(),
            server_handshake: "latin1".into(),
            ..ClientsSeen::default()
        };
        assert_eq!(
            clients(Some(&seen)),
            vec!["no client session on the schema while it was scanned"]
        );
        seen.seen = vec![app("shop", Some("latin1"), false), app("root", None, true)];
        assert_eq!(
            clients(Some(&seen)),
            vec![
                "shop@10.0.0.5: 3 session(s), charset latin1",
                "root@10.0.0.5: 3 session(s), charset not readable per session here; one declaring none gets latin1, SUPER (init_connect skipped)"
            ]
        );
        let mut r = report();
        r.clients = vec![seen];
        let input = ServerInput {
            name: "db1".into(),
            usage: None,
            reports: vec![("shop".into(), "db1/shop.json".into(), r)],
            failed: BTreeMap::new(),
        };
        assert_eq!(rollup(&[input], "v").servers[0].schemas[0].clients.len(), 2);
    }

    #[test]
    fn figures_sum_per_table_schema_server_and_fleet() {
        let input = ServerInput {
            name: "db1".into(),
            usage: Some(usage()),
            reports: vec![("shop".into(), "db1/shop.json".into(), report())],
            failed: BTreeMap::new(),
        };
        let r = rollup(
            &[
                input.clone(),
                ServerInput {
                    name: "db2".into(),
                    ..input
                },
            ],
            "v",
        );
        let posts = &r.servers[0].schemas[0].tables[0];
        assert_eq!(posts.legacy_columns, vec!["body: cp1251"]);
        assert_eq!(posts.encodings, BTreeMap::from([("cp1251".to_string(), 6)]));
        assert_eq!(posts.undecided, 1);
        assert_eq!(posts.usage.verdict, Verdict::Used);
        let logs = &r.servers[0].schemas[0].tables[1];
        assert!(logs.legacy_columns.is_empty());
        assert_eq!(logs.usage.verdict, Verdict::Unused);
        let s = &r.servers[0].totals;
        assert_eq!(
            (
                s.tables,
                s.legacy_tables,
                s.legacy_values,
                s.undecided,
                s.unused_tables,
                s.estimated_rows,
                s.bytes
            ),
            (2, 1, 6, 1, 1, 20, 32768)
        );
        assert_eq!(r.totals.tables, 4);
        // 10 estimated rows of copy: 1 s at the measured pace; `logs` has nothing to recode.
        assert_eq!((posts.estimated_seconds, logs.estimated_seconds), (1, 0));
        assert_eq!(r.totals.estimated_seconds, 2);
        assert!(r.pace.contains("108,000 rows/s"), "{}", r.pace);
        assert!(
            r.servers[0].schemas[0].clients.is_empty(),
            "not read: none listed"
        );
        assert_eq!(r.totals.legacy_values, 12);
        assert!(needs_action(&r));
    }

    #[test]
    fn a_table_without_a_key_is_blocked_by_the_plan_rules() {
        let mut rep = report();
        rep.tables[0].key = None;
        rep.tables[0].estimated_rows = 5_000_000;
        let input = ServerInput {
            name: "db1".into(),
            usage: None,
            reports: vec![("shop".into(), "db1/shop.json".into(), rep)],
            failed: BTreeMap::new(),
        };
        let r = rollup(&[input], "v");
        let posts = &r.servers[0].schemas[0].tables[0];
        assert!(!posts.blocks.is_empty(), "{posts:?}");
        assert!(posts.blocks[0].contains("Fix:"), "{:?}", posts.blocks);
        assert_eq!(posts.usage.verdict, Verdict::Unknown);
        assert_eq!(r.totals.blocked_tables, 1);
    }
}

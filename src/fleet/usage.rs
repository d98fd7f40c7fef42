//! Whether a table looks used, from what the server itself counts, with the evidence.
//!
//! Pure: the SQL that reads the counters (golden-tested; the schema is a bound parameter,
//! never pasted in) and the classification. The counters are read BEFORE the scan, since
//! the scan reads every table and moves them ([`super::snapshot`]).
//!
//! What the counters mean (MariaDB 10.11, measured; issue 46): with `userstat=1`,
//! `information_schema.TABLE_STATISTICS` holds a row per table read or changed since the
//! counters started (server start, `FLUSH TABLE_STATISTICS`, or `userstat` switched on), and
//! no row for a table nobody touched; nothing says whether `userstat` was off for a while.
//! MySQL 8 counts in `performance_schema.table_io_waits_summary_by_table` instead (written
//! from its manual; not run here).

use serde::{Deserialize, Serialize};

/// Where the counters come from on this server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Counters {
    /// MariaDB with `userstat=1`: `information_schema.TABLE_STATISTICS`.
    TableStatistics,
    /// MySQL with the performance schema on: `table_io_waits_summary_by_table`.
    PerformanceSchema,
    /// No counter exists; why (e.g. "userstat is off").
    None {
        /// The reason, as the report prints it.
        why: String,
    },
}

/// One table's figures as read before the scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableUsage {
    /// Table name.
    pub table: String,
    /// Rows read since the counters started (`None`: no counter).
    pub rows_read: Option<u64>,
    /// Rows changed since the counters started (`None`: no counter).
    pub rows_changed: Option<u64>,
    /// `information_schema.TABLES.UPDATE_TIME` (as text), when the server keeps it.
    pub update_time: Option<String>,
    /// `TABLE_ROWS`, the server's estimate.
    pub rows: u64,
    /// `DATA_LENGTH + INDEX_LENGTH`, bytes on disk as the server estimates them.
    pub bytes: u64,
}

/// A server's usage snapshot for one schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaUsage {
    /// Schema name.
    pub schema: String,
    /// Its tables.
    pub tables: Vec<TableUsage>,
}

/// What was read from one server before its scans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerUsage {
    /// Where the counters came from.
    pub counters: Counters,
    /// `Uptime` in seconds when read: the counters are at most this old.
    pub uptime_secs: u64,
    /// When the snapshot was taken (UTC, RFC 3339, from the server's `UTC_TIMESTAMP()`).
    pub taken_at: String,
    /// The schemas read.
    pub schemas: Vec<SchemaUsage>,
}

/// The verdict on one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Read or changed since the counters started.
    Used,
    /// Neither read nor changed since the counters started.
    Unused,
    /// No counter says.
    Unknown,
}

/// A verdict and the evidence that backs it, one sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Used, unused, or unknown.
    pub verdict: Verdict,
    /// The counters, their age and the update time, as a DBA would check them.
    pub evidence: String,
}

/// The counters' age: seconds since the server started (MariaDB and MySQL alike; the
/// second column, `Value`, holds it).
pub const UPTIME_SQL: &str = "SHOW GLOBAL STATUS LIKE 'Uptime'";

/// Whether MariaDB's `userstat` is on (1) or off (0).
pub const USERSTAT_SQL: &str = "SELECT @@GLOBAL.userstat";

/// Whether MySQL's performance schema is on.
pub const PERFORMANCE_SCHEMA_SQL: &str = "SELECT @@GLOBAL.performance_schema";

/// The snapshot's time, the server's clock.
pub const NOW_SQL: &str = "SELECT DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%dT%H:%i:%sZ')";

/// Base tables of one schema (bound `?`): name, estimated rows, bytes, update time.
pub const TABLES_SQL: &str =
    "SELECT CAST(TABLE_NAME AS CHAR), CAST(IFNULL(TABLE_ROWS, 0) AS UNSIGNED), \
CAST(IFNULL(DATA_LENGTH, 0) + IFNULL(INDEX_LENGTH, 0) AS UNSIGNED), \
DATE_FORMAT(UPDATE_TIME, '%Y-%m-%d %H:%i:%s') \
FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1";

/// MariaDB `userstat` counters of one schema (bound `?`): table, rows read, rows changed.
pub const TABLE_STATISTICS_SQL: &str =
    "SELECT CAST(TABLE_NAME AS CHAR), CAST(ROWS_READ AS UNSIGNED), \
CAST(ROWS_CHANGED AS UNSIGNED) FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ?";

/// MySQL 8 counters of one schema (bound `?`): table, reads, writes (by the manual's
/// `table_io_waits_summary_by_table`; not run here).
pub const PERFORMANCE_SCHEMA_TABLES_SQL: &str =
    "SELECT CAST(OBJECT_NAME AS CHAR), CAST(COUNT_READ AS UNSIGNED), \
CAST(COUNT_WRITE AS UNSIGNED) FROM performance_schema.table_io_waits_summary_by_table \
WHERE OBJECT_TYPE = 'TABLE' AND OBJECT_SCHEMA = ?";

/// "16 KiB", "3 MiB", "12 GiB": sizes a DBA reads at a glance.
pub fn human_bytes(n: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut i) = (n as f64, 0);
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.0} {}", units[i])
    }
}

/// "3d 4h", "2h 5m", "40s": an uptime a DBA reads at a glance.
pub fn human_duration(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {}s", secs % 60)
    } else {
        format!("{secs}s")
    }
}

/// Classifies one table from the snapshot: used, unused since the counters started, or
/// unknown where no counter exists, always with the evidence.
pub fn classify(server: &ServerUsage, t: &TableUsage) -> Usage {
    let since = format!(
        "since the counters started (server up {} at {})",
        human_duration(server.uptime_secs),
        server.taken_at
    );
    let updated = match &t.update_time {
        Some(u) => format!("UPDATE_TIME {u}"),
        None => "UPDATE_TIME unknown (NULL: InnoDB keeps none until a write after a restart)"
            .to_string(),
    };
    let source = match &server.counters {
        Counters::TableStatistics => "TABLE_STATISTICS",
        Counters::PerformanceSchema => "table_io_waits_summary_by_table",
        Counters::None { why } => {
            return Usage {
                verdict: Verdict::Unknown,
                evidence: format!("no counters ({why}); {updated}"),
            }
        }
    };
    let (read, changed) = (t.rows_read.unwrap_or(0), t.rows_changed.unwrap_or(0));
    let verdict = if read == 0 && changed == 0 {
        Verdict::Unused
    } else {
        Verdict::Used
    };
    Usage {
        verdict,
        evidence: format!("{source}: {read} rows read, {changed} changed {since}; {updated}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(counters: Counters) -> ServerUsage {
        ServerUsage {
            counters,
            uptime_secs: 3 * 86_400 + 4 * 3600 + 7,
            taken_at: "2026-12-06T14:00:00Z".into(),
            schemas: vec![],
        }
    }

    fn table(read: Option<u64>, changed: Option<u64>, upd: Option<&str>) -> TableUsage {
        TableUsage {
            table: "t".into(),
            rows_read: read,
            rows_changed: changed,
            update_time: upd.map(str::to_string),
            rows: 10,
            bytes: 16384,
        }
    }

    #[test]
    fn no_row_in_table_statistics_is_unused_since_the_counters_started() {
        let u = classify(&server(Counters::TableStatistics), &table(None, None, None));
        assert_eq!(u.verdict, Verdict::Unused);
        assert_eq!(
            u.evidence,
            "TABLE_STATISTICS: 0 rows read, 0 changed since the counters started (server up 3d 4h \
             at 2026-12-06T14:00:00Z); UPDATE_TIME unknown (NULL: InnoDB keeps none until a write after a restart)"
        );
    }

    #[test]
    fn any_read_or_change_is_used() {
        let s = server(Counters::TableStatistics);
        assert_eq!(
            classify(&s, &table(Some(5), Some(0), None)).verdict,
            Verdict::Used
        );
        assert_eq!(
            classify(&s, &table(Some(0), Some(2), None)).verdict,
            Verdict::Used
        );
        let p = server(Counters::PerformanceSchema);
        let u = classify(&p, &table(Some(1), Some(0), Some("2026-12-01 10:00:00")));
        assert_eq!(u.verdict, Verdict::Used);
        assert!(u
            .evidence
            .contains("table_io_waits_summary_by_table: 1 rows read"));
        assert!(u.evidence.ends_with("UPDATE_TIME 2026-12-01 10:00:00"));
    }

    #[test]
    fn without_counters_it_says_so_rather_than_guess() {
        let s = server(Counters::None {
            why: "userstat is off".into(),
        });
        let u = classify(&s, &table(None, None, Some("2026-12-01 10:00:00")));
        assert_eq!(u.verdict, Verdict::Unknown);
        assert_eq!(
            u.evidence,
            "no counters (userstat is off); UPDATE_TIME 2026-12-01 10:00:00"
        );
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(human_duration(40), "40s");
        assert_eq!(human_duration(125), "2m 5s");
        assert_eq!(human_duration(7500), "2h 5m");
        assert_eq!(human_duration(90_000), "1d 1h");
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(16384), "16 KiB");
        assert_eq!(human_bytes(3 << 30), "3 GiB");
    }

    #[test]
    fn counter_sql_binds_the_schema_never_pastes_it() {
        for sql in [
            TABLES_SQL,
            TABLE_STATISTICS_SQL,
            PERFORMANCE_SCHEMA_TABLES_SQL,
        ] {
            assert_eq!(sql.matches('?').count(), 1, "{sql}");
        }
        assert_eq!(
            TABLE_STATISTICS_SQL,
            "SELECT CAST(TABLE_NAME AS CHAR), CAST(ROWS_READ AS UNSIGNED), CAST(ROWS_CHANGED AS UNSIGNED) \
             FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ?"
        );
    }
}

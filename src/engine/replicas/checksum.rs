//! `verify` on replicas: each job table checksummed on the primary by a statement logged as
//! a statement, so every replica runs the same statement on its own rows at the same point
//! of the replication stream (as pt-table-checksum does); the primary's figures follow by a
//! second statement, and each replica then holds both. The SQL is built here, without I/O.
//!
//! A relay that logs rows (ROW, or MIXED, which logs this unsafe statement as rows) passes
//! its own results down, not the statement: the replicas below it are not compared, and said
//! so (pt-table-checksum's limit too).

use super::topology::{Node, Topology};
use crate::db::quote;

/// Where the checksums are kept, in the job's schema.
pub const CHECKSUMS: &str = "_myrecode_checksums";

/// DDL of the checksum table: per job and table, the rows and checksum this server computed,
/// and the primary's.
pub fn ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, \
         cnt BIGINT NOT NULL, crc BIGINT UNSIGNED NOT NULL, master_cnt BIGINT NULL, master_crc BIGINT UNSIGNED NULL, \
         PRIMARY KEY (job, tbl)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, CHECKSUMS)
    )
}

/// Checksums `table` (`?` job, `?` table name) into the checksum table: its row count and the
/// XOR of each row's CRC32 over every column (NULLs told from empty strings).
pub fn checksum_sql(schema: &str, table: &str, columns: &[String]) -> String {
    let cols: Vec<String> = columns.iter().map(|c| quote::ident(c)).collect();
    let nulls: Vec<String> = cols.iter().map(|c| format!("ISNULL({c})")).collect();
    format!(
        "REPLACE INTO {} (job, tbl, cnt, crc, master_cnt, master_crc) SELECT ?, ?, COUNT(*), \
         COALESCE(BIT_XOR(CRC32(CONCAT_WS('#', {}, CONCAT({})))), 0), NULL, NULL FROM {}",
        quote::table(schema, CHECKSUMS),
        cols.join(", "),
        nulls.join(", "),
        quote::table(schema, table)
    )
}

/// The primary's figures of `?` job's `?` table, as it computed them.
pub fn own_sql(schema: &str) -> String {
    format!(
        "SELECT cnt, crc FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKSUMS)
    )
}

/// Sets the primary's figures (`?` count, `?` checksum) beside `?` job's `?` table's.
pub fn master_sql(schema: &str) -> String {
    format!(
        "UPDATE {} SET master_cnt = ?, master_crc = ? WHERE job = ? AND tbl = ?",
        quote::table(schema, CHECKSUMS)
    )
}

/// A server's figures for `?` job: table, its count and checksum, the primary's.
pub fn read_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(tbl AS CHAR), cnt, crc, master_cnt, master_crc FROM {} WHERE job = ? ORDER BY tbl",
        quote::table(schema, CHECKSUMS)
    )
}

/// One table's figures on a replica: (table, count, checksum, primary's count, primary's checksum).
pub type Figures = (String, i64, u64, Option<i64>, Option<u64>);

/// The tables whose figures on a replica differ from the primary's, with how; a table of
/// `expected` with no figures there has not arrived.
pub fn differences(expected: &[String], figures: &[Figures]) -> Vec<String> {
    let mut out = Vec::new();
    for t in expected {
        match figures.iter().find(|f| f.0 == *t) {
            None => out.push(format!("{t}: no checksum arrived")),
            Some((_, cnt, crc, Some(mc), Some(mk))) if cnt == mc && crc == mk => {}
            Some((_, cnt, crc, mc, mk)) => out.push(format!(
                "{t}: {cnt} rows, checksum {crc:08x}; the primary {} rows, checksum {}",
                mc.map_or("?".into(), |v| v.to_string()),
                mk.map_or("?".into(), |v| format!("{v:08x}"))
            )),
        }
    }
    out
}

/// Why a replica cannot be compared by replicated statements: a server on its way from the
/// primary that relays the statement as rows (`None`: it can).
pub fn not_comparable(t: &Topology, replica: &Node) -> Option<String> {
    let mut below = replica.below.as_deref();
    while let Some(addr) = below {
        if addr == t.primary.0 {
            return None;
        }
        let relay = t.replicas.iter().find(|n| n.address == addr)?;
        if let Some(f) = &relay.facts {
            if !f.binlog_format.eq_ignore_ascii_case("STATEMENT") {
                return Some(format!(
                    "its relay {addr} logs {} and passes on its own checksums as rows, not the statement",
                    f.binlog_format
                ));
            }
        }
        below = relay.below.as_deref();
    }
    // Named in the job, not found below the primary: its source is unknown.
    replica
        .below
        .is_none()
        .then(|| "it was not found below the primary (named in the job only)".to_string())
}

#[cfg(test)]
mod tests {
    use super::super::lag::{LagSource, Reading};
    use super::super::topology::{Found, ServerFacts};
    use super::*;
    use std::time::Duration;

    #[test]
    fn checksum_statements_quote_every_name() {
        assert_eq!(
            checksum_sql("s", "or`der", &["id".into(), "na me".into()]),
            "REPLACE INTO `s`.`_myrecode_checksums` (job, tbl, cnt, crc, master_cnt, master_crc) SELECT ?, ?, COUNT(*), \
             COALESCE(BIT_XOR(CRC32(CONCAT_WS('#', `id`, `na me`, CONCAT(ISNULL(`id`), ISNULL(`na me`))))), 0), NULL, NULL \
             FROM `s`.`or``der`"
        );
        assert_eq!(
            master_sql("s"),
            "UPDATE `s`.`_myrecode_checksums` SET master_cnt = ?, master_crc = ? WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            own_sql("s"),
            "SELECT cnt, crc FROM `s`.`_myrecode_checksums` WHERE job = ? AND tbl = ?"
        );
        assert_eq!(
            read_sql("s"),
            "SELECT CAST(tbl AS CHAR), cnt, crc, master_cnt, master_crc FROM `s`.`_myrecode_checksums` WHERE job = ? ORDER BY tbl"
        );
        assert!(ddl("a`b").starts_with("CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_checksums` ("));
    }

    #[test]
    fn a_table_differs_by_count_checksum_or_absence() {
        let want = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let figures = vec![
            ("a".to_string(), 5, 0xdead, Some(5), Some(0xdead)),
            ("b".to_string(), 5, 0xbeef, Some(6), Some(0xbeef)),
        ];
        assert_eq!(
            differences(&want, &figures),
            vec![
                "b: 5 rows, checksum 0000beef; the primary 6 rows, checksum 0000beef".to_string(),
                "c: no checksum arrived".to_string()
            ]
        );
    }

    #[test]
    fn replicas_below_a_relay_logging_rows_are_not_comparable() {
        let facts = |f: &str| ServerFacts {
            binlog_format: f.into(),
            log_bin: true,
            ..ServerFacts::default()
        };
        let node = |a: &str, below: Option<&str>, f: &str| Node {
            address: a.into(),
            found: Found::Hosts { named: false },
            below: below.map(str::to_string),
            facts: Some(facts(f)),
            reading: Reading::Replicating(Duration::ZERO, LagSource::SecondsBehind),
        };
        let t = Topology {
            primary: ("p:1".into(), facts("STATEMENT")),
            replicas: vec![
                node("r1:1", Some("p:1"), "MIXED"),
                node("r2:1", Some("r1:1"), "ROW"),
                node("r3:1", None, "ROW"),
            ],
        };
        assert_eq!(not_comparable(&t, &t.replicas[0]), None);
        assert_eq!(
            not_comparable(&t, &t.replicas[1]).as_deref(),
            Some("its relay r1:1 logs MIXED and passes on its own checksums as rows, not the statement")
        );
        assert!(not_comparable(&t, &t.replicas[2]).is_some());
    }
}

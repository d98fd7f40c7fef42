//! `verify` on replicas, the SQL and the judgments without I/O: a job table cut into key
//! ranges along its key (as pt-table-checksum chunks it), each range's row count and
//! checksum, the rows of a range that differs, and the replication positions compared.
//!
//! Every server reads its own rows, so a replica below a relay is compared like any other
//! (the relay's binary log format does not matter: nothing is replicated for `verify`).

use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::review::decisions::show_key;
use std::collections::{BTreeMap, HashMap};

/// Rows per key range on the primary: small enough that a range that differs is read row
/// by row on both sides at once, large enough that a table of millions takes thousands of
/// ranges, not millions of queries.
pub const RANGE_ROWS: u64 = 1000;

/// At most this many differing rows named per range (the rest counted).
pub const NAMED_ROWS: usize = 10;

/// Where `verify` of an older myrecode kept its checksums (replicated statements); `cleanup`
/// still drops it where one was left.
pub const CHECKSUMS: &str = "_myrecode_checksums";

/// A key, one byte string per key column.
pub type Key = Vec<Vec<u8>>;

/// A range along a table's key: after `lower` (from the first row: `None`), up to and
/// including `upper` (to the last row: `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The key the range begins after.
    pub lower: Option<Key>,
    /// The last key of the range.
    pub upper: Option<Key>,
}

/// One row's digest as every server computes it: the first 64 bits of the MD5 of each
/// column's stored bytes (`#`-separated) and which columns are NULL, so a NULL is told from
/// an empty string and a value's bytes count, not its collation's idea of equal.
pub fn row_digest(columns: &[String]) -> String {
    let raw: Vec<String> = columns.iter().map(|c| keyset::raw(c)).collect();
    let nulls: Vec<String> = columns
        .iter()
        .map(|c| format!("ISNULL({})", quote::ident(c)))
        .collect();
    format!(
        "CAST(CONV(LEFT(MD5(CONCAT_WS('#', {}, CONCAT({}))), 16), 16, 10) AS UNSIGNED)",
        raw.join(", "),
        nulls.join(", ")
    )
}

/// `WHERE` of `range` (empty: the whole table) and the key parts to bind, in order.
pub fn range_where(key: &[KeyColumn], range: &Range) -> (String, Vec<Vec<u8>>) {
    let mut conds = Vec::new();
    let mut binds = Vec::new();
    if let Some(lower) = &range.lower {
        let (c, order) = keyset::after(key);
        conds.push(format!("({c})"));
        binds.extend(order.iter().map(|&i| lower[i].clone()));
    }
    if let Some(upper) = &range.upper {
        let (c, order) = keyset::at_most(key);
        conds.push(format!("({c})"));
        binds.extend(order.iter().map(|&i| upper[i].clone()));
    }
    (conds.join(" AND "), binds)
}

fn with_where(sql: String, cond: &str) -> String {
    if cond.is_empty() {
        sql
    } else {
        format!("{sql} WHERE {cond}")
    }
}

/// A range's row count and checksum (the XOR of its rows' digests, 0 for no rows; unsigned,
/// where a `COALESCE` would make it a decimal), binding [`range_where`]'s key parts.
pub fn range_checksum_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    columns: &[String],
    range: &Range,
) -> (String, Vec<Vec<u8>>) {
    let (cond, binds) = range_where(key, range);
    let sql = format!(
        "SELECT COUNT(*), BIT_XOR({}) FROM {}",
        row_digest(columns),
        quote::table(schema, table)
    );
    (with_where(sql, &cond), binds)
}

/// A range's rows: each key's raw bytes, then the row's digest, binding [`range_where`]'s key
/// parts.
pub fn range_rows_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    columns: &[String],
    range: &Range,
) -> (String, Vec<Vec<u8>>) {
    let (cond, binds) = range_where(key, range);
    let mut cols: Vec<String> = key.iter().map(|k| keyset::raw(&k.name)).collect();
    cols.push(row_digest(columns));
    let sql = format!(
        "SELECT {} FROM {}",
        cols.join(", "),
        quote::table(schema, table)
    );
    (with_where(sql, &cond), binds)
}

/// The key that ends the range beginning after `after_key` (or at the first row): the one
/// [`RANGE_ROWS`] rows on, in key order; none when fewer are left (the last range).
pub fn range_end_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    after_key: bool,
) -> (String, Vec<usize>) {
    keyset::select_key_at_offset(schema, table, key, after_key, RANGE_ROWS - 1)
}

/// A range as the DBA reads it: `id <= [1000]`, `[1000] < id <= [2000]`, `id > [2000]`,
/// `(a, b) <= [1, x]`; `all rows` for a table read whole.
pub fn describe_range(key: &[KeyColumn], range: &Range) -> String {
    let names: Vec<&str> = key.iter().map(|k| k.name.as_str()).collect();
    let cols = if names.len() == 1 {
        names[0].to_string()
    } else {
        format!("({})", names.join(", "))
    };
    match (&range.lower, &range.upper) {
        (None, None) => "all rows".to_string(),
        (None, Some(u)) => format!("{cols} <= {}", show_key(u)),
        (Some(l), None) => format!("{cols} > {}", show_key(l)),
        (Some(l), Some(u)) => format!("{} < {cols} <= {}", show_key(l), show_key(u)),
    }
}

/// How a row of a range differs on a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowDiff {
    /// On both, with other values.
    Values,
    /// On the primary only.
    Missing,
    /// On the replica only.
    Extra,
}

impl RowDiff {
    /// As `verify` says it.
    pub fn describe(self) -> &'static str {
        match self {
            RowDiff::Values => "differs",
            RowDiff::Missing => "missing on the replica",
            RowDiff::Extra => "only on the replica",
        }
    }
}

/// The rows of one range that differ, from each side's (key, digest): the primary's in its
/// order, then the replica's own.
pub fn row_differences(primary: &[(Key, u64)], replica: &[(Key, u64)]) -> Vec<(Key, RowDiff)> {
    let theirs: HashMap<&Key, u64> = replica.iter().map(|(k, d)| (k, *d)).collect();
    let ours: HashMap<&Key, u64> = primary.iter().map(|(k, d)| (k, *d)).collect();
    let mut out = Vec::new();
    for (k, d) in primary {
        match theirs.get(k) {
            None => out.push((k.clone(), RowDiff::Missing)),
            Some(t) if t != d => out.push((k.clone(), RowDiff::Values)),
            Some(_) => {}
        }
    }
    for (k, _) in replica {
        if !ours.contains_key(k) {
            out.push((k.clone(), RowDiff::Extra));
        }
    }
    out
}

/// A table's range as `verify` names it: `notes, key range id <= [1000]`.
pub fn range_label(table: &str, key: &[KeyColumn], range: &Range) -> String {
    if key.is_empty() {
        format!("{table}: its rows (no key to name them)")
    } else {
        format!("{table}, key range {}", describe_range(key, range))
    }
}

/// One range that differs, as a line of `verify`: the table, the range, the rows named (at
/// most [`NAMED_ROWS`]) and how many more.
pub fn describe_difference(
    table: &str,
    key: &[KeyColumn],
    range: &Range,
    rows: &[(Key, RowDiff)],
) -> String {
    let what = range_label(table, key, range);
    if rows.is_empty() {
        return format!("{what}: the checksum differs");
    }
    let named: Vec<String> = rows
        .iter()
        .take(NAMED_ROWS)
        .map(|(k, d)| format!("key {} {}", show_key(k), d.describe()))
        .collect();
    let more = rows.len().saturating_sub(NAMED_ROWS);
    format!(
        "{what}: {}{}",
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// A GTID position (`0-1-100,1-2-7`) as domain → (server, sequence number); `None` for text
/// that is not one (MySQL's GTID sets are compared as text).
pub fn parse_position(p: &str) -> Option<BTreeMap<u64, (u64, u64)>> {
    let mut out = BTreeMap::new();
    for part in p.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let mut n = part.split('-').map(|x| x.parse::<u64>().ok());
        let (Some(Some(d)), Some(Some(s)), Some(Some(q)), None) =
            (n.next(), n.next(), n.next(), n.next())
        else {
            return None;
        };
        out.insert(d, (s, q));
    }
    Some(out)
}

/// Whether a replica that read at `replica` read at the primary's position `primary`: every
/// domain of the primary's at the same transaction (domains only the replica has are its
/// own business).
pub fn same_position(primary: &str, replica: &str) -> bool {
    match (parse_position(primary), parse_position(replica)) {
        (Some(p), Some(r)) => p.iter().all(|(d, at)| r.get(d) == Some(at)),
        _ => primary.trim() == replica.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::keyset::KeyBind;

    fn b(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn a_range_checksum_reads_by_key_range_and_quotes_every_name() {
        let key = [KeyColumn::plain("i`d")];
        let cols = vec!["i`d".to_string(), "na me".to_string()];
        let r = Range {
            lower: Some(vec![b("1000")]),
            upper: Some(vec![b("2000")]),
        };
        let (sql, binds) = range_checksum_sql("s", "or`der", &key, &cols, &r);
        assert_eq!(
            sql,
            "SELECT COUNT(*), BIT_XOR(CAST(CONV(LEFT(MD5(CONCAT_WS('#', CAST(`i``d` AS BINARY), \
             CAST(`na me` AS BINARY), CONCAT(ISNULL(`i``d`), ISNULL(`na me`)))), 16), 16, 10) AS UNSIGNED)) \
             FROM `s`.`or``der` WHERE (`i``d` > ?) AND (`i``d` <= ?)"
        );
        assert_eq!(binds, vec![b("1000"), b("2000")]);
        let whole = Range {
            lower: None,
            upper: None,
        };
        let (sql, binds) = range_checksum_sql("s", "t", &[], &["c".to_string()], &whole);
        assert!(sql.ends_with(" FROM `s`.`t`"), "{sql}");
        assert!(binds.is_empty());
    }

    #[test]
    fn a_composite_text_key_binds_each_part_in_its_collation() {
        let key = [
            KeyColumn::plain("a"),
            KeyColumn {
                name: "b".into(),
                bind: KeyBind::Text {
                    charset: "utf8mb4".into(),
                    collation: "utf8mb4_bin".into(),
                },
            },
        ];
        let r = Range {
            lower: None,
            upper: Some(vec![b("7"), b("x")]),
        };
        let (sql, binds) = range_rows_sql("s", "t", &key, &["a".into(), "b".into()], &r);
        assert_eq!(
            sql,
            "SELECT CAST(`a` AS BINARY), CAST(`b` AS BINARY), CAST(CONV(LEFT(MD5(CONCAT_WS('#', CAST(`a` AS BINARY), \
             CAST(`b` AS BINARY), CONCAT(ISNULL(`a`), ISNULL(`b`)))), 16), 16, 10) AS UNSIGNED) FROM `s`.`t` \
             WHERE (`a` <= ? AND (`a` < ? OR (`a` = ? AND `b` <= CONVERT(? USING utf8mb4) COLLATE utf8mb4_bin)))"
        );
        assert_eq!(binds, vec![b("7"), b("7"), b("7"), b("x")]);
        assert_eq!(describe_range(&key, &r), "(a, b) <= [7, x]");
    }

    #[test]
    fn a_range_ends_a_thousand_rows_on() {
        let (sql, binds) = range_end_sql("s", "t", &[KeyColumn::plain("id")], true);
        assert_eq!(
            sql,
            "SELECT CAST(`id` AS BINARY) FROM `s`.`t` WHERE `id` > ? ORDER BY `id` LIMIT 999, 1"
        );
        assert_eq!(binds, vec![0]);
    }

    #[test]
    fn ranges_are_described_by_their_bounds() {
        let key = [KeyColumn::plain("id")];
        let r = |l: Option<&str>, u: Option<&str>| Range {
            lower: l.map(|x| vec![b(x)]),
            upper: u.map(|x| vec![b(x)]),
        };
        assert_eq!(describe_range(&key, &r(None, Some("1000"))), "id <= [1000]");
        assert_eq!(
            describe_range(&key, &r(Some("1000"), Some("2000"))),
            "[1000] < id <= [2000]"
        );
        assert_eq!(describe_range(&key, &r(Some("2000"), None)), "id > [2000]");
        assert_eq!(describe_range(&key, &r(None, None)), "all rows");
    }

    #[test]
    fn rows_differ_by_values_absence_or_presence() {
        let k = |x: &str| vec![b(x)];
        let primary = vec![(k("1"), 10), (k("2"), 20), (k("3"), 30)];
        let replica = vec![(k("1"), 10), (k("2"), 21), (k("4"), 40)];
        assert_eq!(
            row_differences(&primary, &replica),
            vec![
                (k("2"), RowDiff::Values),
                (k("3"), RowDiff::Missing),
                (k("4"), RowDiff::Extra)
            ]
        );
        let key = [KeyColumn::plain("id")];
        let r = Range {
            lower: None,
            upper: Some(k("1000")),
        };
        assert_eq!(
            describe_difference("notes", &key, &r, &row_differences(&primary, &replica)),
            "notes, key range id <= [1000]: key [2] differs, key [3] missing on the replica, key [4] only on the replica"
        );
        let many: Vec<(Key, RowDiff)> = (0..13)
            .map(|i| (k(&i.to_string()), RowDiff::Values))
            .collect();
        assert!(describe_difference("t", &key, &r, &many).ends_with("key [9] differs and 3 more"));
        assert_eq!(
            describe_difference("t", &[], &r, &[]),
            "t: its rows (no key to name them): the checksum differs"
        );
    }

    #[test]
    fn positions_are_the_same_when_every_domain_of_the_primary_is() {
        assert!(same_position("0-1-100", "0-1-100"));
        assert!(same_position("0-1-100,1-3-5", "1-3-5, 0-1-100"));
        assert!(same_position("0-1-100", "0-1-100,9-9-9"));
        assert!(!same_position("0-1-100", "0-1-101"));
        assert!(!same_position("0-1-100,1-3-5", "0-1-100"));
        assert!(same_position("", ""));
        assert!(same_position("uuid:1-5", "uuid:1-5"));
        assert!(!same_position("uuid:1-5", "uuid:1-6"));
        assert_eq!(parse_position("0-1-x"), None);
    }
}

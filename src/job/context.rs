//! The encoding a column with no legacy text of its own is read as: an empty or all-ASCII
//! column still becomes utf8mb4 (so the application's later writes are UTF-8), and what is
//! written into it during the copy, and its DEFAULT and COMMENT, are read as its declared
//! charset says, else as its table's other columns are, else as its schema's. Pure.

use crate::detect::Label;
use crate::scan::model::{ColumnScan, TableScan};
use std::collections::BTreeMap;

/// Where a column's reading came from, for the plan's comment.
#[derive(Debug, Clone, PartialEq)]
pub enum Context {
    /// The column's declared charset is itself a legacy encoding (`cp1251`, `koi8r`, …).
    Declared(String),
    /// The legacy encoding most values of the table's other columns have.
    Table(String),
    /// The legacy encoding most values of the schema's columns have.
    Schema(String),
}

impl Context {
    /// The label.
    pub fn label(&self) -> &str {
        match self {
            Context::Declared(l) | Context::Table(l) | Context::Schema(l) => l,
        }
    }

    /// Why, for the comment beside `source:`.
    pub fn why(&self) -> String {
        match self {
            Context::Declared(l) => {
                format!("no legacy text at scan time: read as its declared charset ({l})")
            }
            Context::Table(l) => {
                format!("no legacy text at scan time: read as the table's other columns ({l})")
            }
            Context::Schema(l) => {
                format!("no legacy text at scan time: read as the schema's columns ({l})")
            }
        }
    }
}

/// The label of a legacy single-byte charset as the server names it, if it is one we read.
fn declared(charset: &str) -> Option<&'static str> {
    match charset {
        "cp1251" => Some("cp1251"),
        "koi8r" => Some("koi8-r"),
        "koi8u" => Some("koi8-u"),
        "cp866" => Some("cp866"),
        _ => None,
    }
}

/// Values per legacy label (not mojibake chains, which belong to UTF-8 columns) in `columns`.
fn tally<'a>(columns: impl Iterator<Item = &'a ColumnScan>, into: &mut BTreeMap<String, u64>) {
    for c in columns {
        for (l, n) in &c.labels {
            if matches!(l.parse::<Label>(), Ok(Label::Legacy(_))) {
                *into.entry(l.clone()).or_default() += n;
            }
        }
    }
}

/// The label with the most values, if any.
fn dominant(counts: &BTreeMap<String, u64>) -> Option<String> {
    counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .max_by_key(|(_, n)| **n)
        .map(|(l, _)| l.clone())
}

/// The reading of column `c` of `table` (in a schema of `tables`) when it has no legacy text
/// of its own; `None` when nothing in the schema says which encoding it would be.
pub fn context(c: &ColumnScan, table: &TableScan, tables: &[&TableScan]) -> Option<Context> {
    if let Some(l) = c.charset.as_deref().and_then(declared) {
        return Some(Context::Declared(l.to_string()));
    }
    let mut counts = BTreeMap::new();
    tally(table.columns.iter(), &mut counts);
    if let Some(l) = dominant(&counts) {
        return Some(Context::Table(l));
    }
    tally(tables.iter().flat_map(|t| t.columns.iter()), &mut counts);
    dominant(&counts).map(Context::Schema)
}

/// Whether `c` has no legacy text of its own (no label to recode).
pub fn without_text(c: &ColumnScan) -> bool {
    super::scan_target::recodable_labels(c).is_empty()
}

/// How column `c` of `table` is read when it has no legacy text of its own ([`context`]);
/// `None` when it has some (its own labels say how).
pub fn reading(c: &ColumnScan, table: &TableScan, tables: &[&TableScan]) -> Option<Context> {
    without_text(c).then(|| context(c, table, tables)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, charset: &str, labels: &[(&str, u64)]) -> ColumnScan {
        serde_json::from_value(serde_json::json!({
            "name": name, "column_type": "varchar(50)", "charset": charset, "collation": null,
            "nullable": false, "declared_max_chars": 50, "rows": 4, "nulls": 0, "empty": 0,
            "labels": labels.iter().map(|(l, n)| (l.to_string(), *n)).collect::<BTreeMap<_, _>>(),
            "confidence": {}, "examples": {}, "undecided": [],
            "undecided_total": 0, "max_bytes_now": 8, "max_bytes_after": 8, "max_chars_after": 8,
            "source": null, "strategy": "copy", "fits": true, "risks": [],
            "target": {"column_type": "varchar(50)", "charset": "utf8mb4", "collation": null, "why": ""}
        }))
        .unwrap()
    }

    fn table(name: &str, columns: Vec<ColumnScan>) -> TableScan {
        serde_json::from_value(serde_json::json!({
            "schema": "s", "name": name, "row_format": "Dynamic", "key": null,
            "estimated_rows": 4, "rows_scanned": 4, "strategy": "copy", "columns": columns, "risks": []
        }))
        .unwrap()
    }

    #[test]
    fn an_empty_column_is_read_as_its_charset_then_its_table_then_its_schema() {
        let users = table(
            "users",
            vec![
                column("name", "latin1", &[]),
                column("city", "latin1", &[("koi8-r", 3), ("ascii", 9)]),
                column("title", "utf8mb4", &[("cp1251>latin1", 50)]),
            ],
        );
        let posts = table(
            "posts",
            vec![column("body", "latin1", &[("cp1251", 90), ("koi8-r", 2)])],
        );
        let empty = table("empty", vec![column("x", "latin1", &[])]);
        let all = [&users, &posts, &empty];
        // The table's own legacy text wins over the schema's, and chains of UTF-8 columns do not count.
        assert_eq!(
            context(&users.columns[0], &users, &all),
            Some(Context::Table("koi8-r".into()))
        );
        assert_eq!(
            context(&empty.columns[0], &empty, &all),
            Some(Context::Schema("cp1251".into()))
        );
        let honest = column("x", "cp1251", &[]);
        assert_eq!(
            context(&honest, &empty, &all),
            Some(Context::Declared("cp1251".into()))
        );
        assert_eq!(context(&empty.columns[0], &empty, &[&empty]), None);
        assert!(without_text(&users.columns[0]) && !without_text(&posts.columns[0]));
    }
}

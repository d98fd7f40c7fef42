//! The indexes a table's utf8mb4 targets would push over its limits, as the server applies
//! them: a column that would make the copy's ALTER fail is blocked with the fix, one the server
//! adapts itself is a risk said out loud. Pure.

use super::model::{ColumnScan, Strategy};
use crate::inventory::model::Table;

/// Index risks given the chosen targets: only columns that really become utf8mb4 grow.
///
/// A column whose growth would push an index over the table's limits is marked `blocked`
/// (the copy would fail at its `ALTER`): the plan leaves it out, with this reason and the fix.
///
/// On MariaDB, some over-long MyISAM and Aria indexes are not blocked: the server adapts them
/// itself ([`crate::inventory::keylen::server_adapts`]). InnoDB refuses (errors 1709 and
/// 1071), as MySQL does.
pub fn index_risks(table: &Table, columns: &mut [ColumnScan], mariadb: bool) -> Vec<String> {
    let grows = |columns: &[ColumnScan], name: &str| {
        columns.iter().any(|c| {
            c.name == name
                && c.strategy == Strategy::Copy
                && c.target.charset.as_deref() == Some("utf8mb4")
        })
    };
    let mut risks = Vec::new();
    for idx in &table.indexes {
        if matches!(idx.index_type.as_str(), "FULLTEXT" | "SPATIAL" | "HASH") {
            continue;
        }
        let parts: Vec<u64> = idx
            .parts
            .iter()
            .map(|p| {
                if grows(columns, &p.column) {
                    p.bytes_utf8mb4
                } else {
                    p.bytes
                }
            })
            .collect();
        let total: u64 = parts.iter().sum();
        let widest = parts.iter().copied().max().unwrap_or(0);
        if widest <= table.key_part_limit && total <= table.key_limit {
            continue;
        }
        let cols: Vec<&str> = idx
            .parts
            .iter()
            .map(|p| p.column.as_str())
            .filter(|c| grows(columns, c))
            .collect();
        if cols.is_empty() {
            continue;
        }
        if let Some(adapted) = server_adapts(table, idx, total.max(widest), &cols, mariadb) {
            risks.push(adapted);
            continue;
        }
        risks.push(format!(
            "index `{}` would need {total} bytes once {} {} utf8mb4 (limit {} per column, {} per key, row format {}). \
             Fix: index a prefix of at most {} characters, use ROW_FORMAT=DYNAMIC, or keep the column single-byte",
            idx.name,
            cols.join(", "),
            if cols.len() == 1 { "becomes" } else { "become" },
            table.key_part_limit,
            table.key_limit,
            table.row_format,
            table.key_part_limit / 4
        ));
        if idx.overflows_now {
            // Over a limit already (server settings changed since): the server copes; don't block on it.
            continue;
        }
        // The prefix that fits the first growing column beside the other parts as they will be.
        let first = idx
            .parts
            .iter()
            .position(|p| p.column == cols[0])
            .unwrap_or(0);
        let others = total - parts[first];
        let prefix_chars = table
            .key_part_limit
            .min(table.key_limit.saturating_sub(others))
            / 4;
        let reason = blocked_reason(table, idx, total, widest, cols[0], prefix_chars);
        for c in columns
            .iter_mut()
            .filter(|c| cols.contains(&c.name.as_str()))
        {
            c.blocked.get_or_insert_with(|| reason.clone());
        }
    }
    risks
}

/// What MariaDB does itself with an index of a MyISAM or Aria table that outgrows the
/// engine's key limit once `cols` are utf8mb4 ([`index_risks`]), as the plan's note; `None`
/// where the server would refuse the copy's ALTER instead.
fn server_adapts(
    table: &Table,
    idx: &crate::inventory::model::Index,
    bytes: u64,
    cols: &[&str],
    mariadb: bool,
) -> Option<String> {
    let engine = table.engine.to_ascii_lowercase();
    if !mariadb
        || !matches!(engine.as_str(), "myisam" | "aria")
        || !crate::inventory::keylen::server_adapts(&idx.name, idx.unique, idx.parts.len())
    {
        return None;
    }
    let what = if idx.unique {
        "MariaDB keeps it as UNIQUE … USING HASH: the whole values stay unique, checked by a hash"
    } else {
        "MariaDB shortens it to the prefix that fits (note 1071): lookups read the rest from the row and answer the same"
    };
    Some(format!(
        "index `{}` would need {bytes} bytes once {} {} utf8mb4, over {}'s {} per key: {what}",
        idx.name,
        cols.join(", "),
        if cols.len() == 1 { "becomes" } else { "become" },
        table.engine,
        table.key_limit
    ))
}

/// The sentence a DBA reads next to a column left out for an index: what, why, and the fix first.
fn blocked_reason(
    table: &Table,
    idx: &crate::inventory::model::Index,
    total: u64,
    widest: u64,
    column: &str,
    prefix_chars: u64,
) -> String {
    // With ROW_FORMAT=DYNAMIC (16 KiB pages) one column may use the whole-key limit.
    let dynamic_fits = widest <= table.key_limit && total <= table.key_limit;
    let compact = matches!(
        table.row_format.to_ascii_lowercase().as_str(),
        "compact" | "redundant"
    );
    let over = if widest > table.key_part_limit {
        format!(
            "{widest} bytes for one column under utf8mb4, over the limit of {} on row format {}",
            table.key_part_limit, table.row_format
        )
    } else {
        format!(
            "{total} bytes under utf8mb4, over the limit of {} per key",
            table.key_limit
        )
    };
    let mut prefix = format!("index the prefix {column}({prefix_chars})");
    if idx.unique {
        prefix.push_str(&format!(
            ", which makes only the first {prefix_chars} characters unique"
        ));
    }
    let fix = if compact && dynamic_fits {
        format!(
            "ALTER TABLE {} ROW_FORMAT=DYNAMIC (or {prefix}), then scan and plan again",
            crate::db::quote::ident(&table.name)
        )
    } else {
        format!("{prefix}, then scan and plan again")
    };
    format!(
        "index `{}` would need {over}: the copy would fail at its ALTER. Fix: {fix}",
        idx.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::keylen::key_limits;
    use crate::inventory::model::{Index, IndexPart, RecodeKey, RowSize};

    /// A scanned latin1 column holding cp1251 text: copied into utf8mb4 unless blocked.
    fn scanned(name: &str, strategy: &str, charset: &str) -> ColumnScan {
        serde_json::from_value(serde_json::json!({
            "name": name, "column_type": "varchar(255)", "charset": "latin1", "collation": null,
            "nullable": false, "declared_max_chars": 255, "rows": 4, "nulls": 0, "empty": 0,
            "labels": {"cp1251": 4}, "confidence": {}, "examples": {}, "undecided": [],
            "undecided_total": 0, "max_bytes_now": 32, "max_bytes_after": 61, "max_chars_after": 32,
            "source": "cp1251", "strategy": strategy, "fits": true, "risks": [],
            "target": {"column_type": "varchar(255)", "charset": charset, "collation": null, "why": ""}
        }))
        .unwrap()
    }

    fn index(name: &str, unique: bool, columns: &[&str], bytes: u64) -> Index {
        Index {
            name: name.into(),
            unique,
            index_type: "BTREE".into(),
            parts: columns
                .iter()
                .map(|c| IndexPart {
                    column: (*c).into(),
                    prefix: None,
                    bytes,
                    bytes_utf8mb4: bytes * 4,
                })
                .collect(),
            bytes: bytes * columns.len() as u64,
            bytes_utf8mb4: bytes * 4 * columns.len() as u64,
            overflows_now: false,
            overflows_utf8mb4: true,
        }
    }

    /// `categories` with `name` and `slug` VARCHAR(255) latin1, each indexed, on `row_format`.
    fn categories(row_format: &str, indexes: Vec<Index>) -> Table {
        let (part, whole) = key_limits("InnoDB", row_format, 16384);
        Table {
            schema: "shop".into(),
            name: "categories".into(),
            engine: "InnoDB".into(),
            row_format: row_format.into(),
            estimated_rows: 4,
            collation: Some("latin1_swedish_ci".into()),
            key_part_limit: part,
            key_limit: whole,
            primary_key: Some(vec!["id".into()]),
            recode_key: Some(RecodeKey {
                index: "PRIMARY".into(),
                columns: vec!["id".into()],
            }),
            columns: Vec::new(),
            indexes,
            triggers: Vec::new(),
            foreign_keys: Vec::new(),
            row_size: RowSize {
                bytes: 0,
                bytes_utf8mb4: 0,
                limit: 65535,
            },
            risks: Vec::new(),
        }
    }

    #[test]
    fn a_column_that_would_overflow_a_compact_index_is_blocked_with_the_fix() {
        let t = categories(
            "Compact",
            vec![
                index("u_name", true, &["name"], 255),
                index("k_slug", false, &["slug"], 255),
            ],
        );
        let mut cols = vec![
            scanned("name", "copy", "utf8mb4"),
            // Pure ASCII stays latin1: its index does not grow, nothing blocks it.
            scanned("slug", "none", "latin1"),
        ];
        let risks = index_risks(&t, &mut cols, false);
        assert_eq!(risks.len(), 1, "{risks:?}");
        assert!(
            risks[0].starts_with("index `u_name` would need 1020 bytes once name becomes utf8mb4"),
            "{risks:?}"
        );
        let why = cols[0].blocked.as_deref().expect("name is blocked");
        assert_eq!(
            why,
            "index `u_name` would need 1020 bytes for one column under utf8mb4, over the limit of 767 \
             on row format Compact: the copy would fail at its ALTER. Fix: ALTER TABLE `categories` \
             ROW_FORMAT=DYNAMIC (or index the prefix name(191), which makes only the first 191 \
             characters unique), then scan and plan again"
        );
        assert_eq!(cols[1].blocked, None);
        // The report still says what the column needs once the index allows it.
        assert_eq!(cols[0].strategy, Strategy::Copy);
    }

    #[test]
    fn a_key_over_the_whole_key_limit_needs_a_prefix_not_a_row_format() {
        // Two VARCHAR(500) in one DYNAMIC key: each fits alone (2000 bytes), the pair (4000) does not.
        let t = categories("Dynamic", vec![index("k_pair", false, &["a", "b"], 500)]);
        let mut cols = vec![
            scanned("a", "copy", "utf8mb4"),
            scanned("b", "copy", "utf8mb4"),
        ];
        let risks = index_risks(&t, &mut cols, false);
        assert_eq!(risks.len(), 1, "{risks:?}");
        assert!(risks[0].contains("once a, b become utf8mb4"), "{risks:?}");
        let why = cols[1]
            .blocked
            .as_deref()
            .expect("both columns are blocked");
        assert!(
            why.contains("would need 4000 bytes under utf8mb4, over the limit of 3072 per key"),
            "{why}"
        );
        // 3072 less the other part's 2000 leaves 1072 bytes: 268 characters.
        assert!(
            why.ends_with("Fix: index the prefix a(268), then scan and plan again"),
            "{why}"
        );
        assert!(!why.contains("ROW_FORMAT"), "{why}");
    }

    #[test]
    fn mariadb_adapts_an_overlong_myisam_index_itself_but_not_the_primary_key() {
        let mut t = categories(
            "Fixed",
            vec![
                index("u_name", true, &["name"], 255),
                index("k_slug", false, &["slug"], 255),
            ],
        );
        t.engine = "MyISAM".into();
        (t.key_part_limit, t.key_limit) = (1000, 1000);
        let both = || {
            vec![
                scanned("name", "copy", "utf8mb4"),
                scanned("slug", "copy", "utf8mb4"),
            ]
        };
        let mut cols = both();
        let risks = index_risks(&t, &mut cols, true);
        assert!(cols.iter().all(|c| c.blocked.is_none()), "{cols:?}");
        assert!(
            risks[0].contains("MariaDB keeps it as UNIQUE … USING HASH"),
            "{risks:?}"
        );
        assert!(
            risks[1].contains("shortens it to the prefix that fits"),
            "{risks:?}"
        );
        // MySQL refuses both; so does MariaDB on InnoDB, for a primary key and for a plain
        // index of several columns.
        let mut cols = both();
        index_risks(&t, &mut cols, false);
        assert!(cols.iter().all(|c| c.blocked.is_some()));
        t.indexes = vec![index("k_both", false, &["name", "slug"], 255)];
        let mut cols = both();
        index_risks(&t, &mut cols, true);
        assert!(cols[0].blocked.is_some());
        t.indexes = vec![index("PRIMARY", true, &["name"], 255)];
        let mut cols = both();
        index_risks(&t, &mut cols, true);
        assert!(cols[0].blocked.is_some());
    }

    #[test]
    fn an_index_that_fits_blocks_nothing() {
        let t = categories("Dynamic", vec![index("u_name", true, &["name"], 255)]);
        let mut cols = vec![scanned("name", "copy", "utf8mb4")];
        assert!(index_risks(&t, &mut cols, false).is_empty());
        assert_eq!(cols[0].blocked, None);
    }
}

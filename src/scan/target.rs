//! What a scanned column should become, and how: pure decisions from the tally and the inventory.
//!
//! The rules a DBA would apply by hand: pure-ASCII columns keep their single-byte
//! charset (an index on hex tokens must not grow fourfold for nothing), binary data
//! stays binary, utf8mb4/utf8mb3 columns holding mojibake are repaired in place,
//! single-byte columns holding legacy text are copied into utf8mb4.

use super::accumulate::ColumnTally;
use super::collation::is_utf8_charset;
pub use super::collation::utf8mb4_collation;
use super::model::{ColumnScan, Strategy, Target};
use super::no_text::{free_text_kept, no_text_yet_target, single_byte_text, token_index};
use crate::inventory::model::{Column, ColumnKind, Table};

/// Byte capacity of the TEXT/BLOB family, which keeps bytes, not characters, when the charset changes.
pub fn capacity(data_type: &str) -> Option<u64> {
    match data_type {
        "tinytext" | "tinyblob" => Some(255),
        "text" | "blob" => Some(65_535),
        "mediumtext" | "mediumblob" => Some(16_777_215),
        "longtext" | "longblob" => Some(4_294_967_295),
        _ => None,
    }
}

fn next_text_type(bytes: u64) -> &'static str {
    match bytes {
        0..=255 => "tinytext",
        256..=65_535 => "text",
        65_536..=16_777_215 => "mediumtext",
        _ => "longtext",
    }
}

/// Decides target, strategy, fit and risks for one column.
pub fn decide(col: &Column, tally: &ColumnTally, mysql: bool) -> ColumnScan {
    let mut risks = Vec::new();
    let (target, strategy) = choose_target(col, tally, mysql, &mut risks);
    let fits = fits(col, &target, tally);
    outcome_risks(col, tally, &target, strategy, fits, &mut risks);
    column_scan(col, tally, target, strategy, fits, risks)
}

/// The column's definition kept as it is, for the reason `why`.
fn kept(col: &Column, why: String) -> Target {
    Target {
        column_type: col.column_type.clone(),
        charset: col.charset.clone(),
        collation: col.collation.clone(),
        why,
    }
}

/// What the column becomes and how, by the module's rules; a rule's risks go onto `risks`.
fn choose_target(
    col: &Column,
    tally: &ColumnTally,
    mysql: bool,
    risks: &mut Vec<String>,
) -> (Target, Strategy) {
    let non_empty = tally.rows - tally.nulls - tally.empty;
    let binary = tally.count("binary");
    let needs = !tally.recode_labels.is_empty();
    let keep = |why: String| kept(col, why);
    if col.definition.generated.is_some() {
        (
            keep("generated: the server computes it; a copy of the table recreates it in utf8mb4 with its expression's text recoded".into()),
            Strategy::None,
        )
    } else if col.kind == ColumnKind::Binary {
        if needs {
            (
                keep(
                    "legacy text in a binary column: bytes rewritten as UTF-8 in place, type kept"
                        .into(),
                ),
                Strategy::InPlace,
            )
        } else {
            (
                keep("binary column without legacy text: nothing to do".into()),
                Strategy::None,
            )
        }
    } else if non_empty > 0 && binary * 2 >= non_empty {
        risks.push(format!(
            "holds binary data ({binary} of {non_empty} values) in a text column: those values are never recoded. \
             Fix: change the column to VARBINARY/BLOB"
        ));
        (
            keep(format!(
                "binary data ({binary} of {non_empty} values): kept as is, never recoded"
            )),
            Strategy::None,
        )
    } else if !needs && single_byte_text(col) {
        match token_index(col, tally) {
            Some(why) => {
                if let Some(risk) = free_text_kept(col) {
                    risks.push(risk);
                }
                (keep(why), Strategy::None)
            }
            None => (no_text_yet_target(col, tally, mysql), Strategy::Copy),
        }
    } else if !needs {
        (keep(nothing_to_recode(col, tally)), Strategy::None)
    } else if is_utf8_charset(col.charset.as_deref())
        && matches!(col.kind, ColumnKind::Enum | ColumnKind::Set)
    {
        risks.push(format!(
            "an {} of a UTF-8 column whose members hold mojibake: a value can only be one of its members, so it is not rewritten in place. \
             Fix: give the column its members' real text by hand (ALTER TABLE … MODIFY with the members read right, values mapped by member number)",
            col.data_type.to_uppercase()
        ));
        (
            keep("ENUM/SET members in mojibake in a UTF-8 column: left as they are".into()),
            Strategy::None,
        )
    } else if is_utf8_charset(col.charset.as_deref()) {
        (
            keep("mojibake in a UTF-8 column: values repaired in place, type kept".into()),
            Strategy::InPlace,
        )
    } else {
        (copy_target(col, tally, mysql, risks), Strategy::Copy)
    }
}

/// Why a text column with nothing to recode is kept as it is.
fn nothing_to_recode(col: &Column, tally: &ColumnTally) -> String {
    if tally.labels.keys().all(|l| l == "ascii") {
        format!(
            "pure ASCII: stays {} so its indexes do not grow",
            col.charset.as_deref().unwrap_or("as is")
        )
    } else if is_utf8_charset(col.charset.as_deref()) {
        "already UTF-8: nothing to do".to_string()
    } else {
        "nothing decidable to recode".to_string()
    }
}

/// The utf8mb4 target a column of legacy text is copied into, its TEXT type widened if need be.
fn copy_target(col: &Column, tally: &ColumnTally, mysql: bool, risks: &mut Vec<String>) -> Target {
    let collation = utf8mb4_collation(col.collation.as_deref(), mysql);
    let base = match capacity(&col.data_type) {
        Some(cap) if tally.max_bytes_after > cap => {
            let bigger = next_text_type(tally.max_bytes_after);
            risks.push(format!(
                "recoded values need up to {} bytes, more than {} holds ({cap}): target widened to {bigger}",
                tally.max_bytes_after, col.data_type
            ));
            bigger.to_string()
        }
        _ => col.column_type.clone(),
    };
    let source = tally.dominant_source().unwrap_or_default();
    Target {
        column_type: base,
        charset: Some("utf8mb4".into()),
        collation: Some(collation.into()),
        why: format!(
            "{source} text in a {} column: copied into utf8mb4",
            col.charset.as_deref().unwrap_or("?")
        ),
    }
}

/// Pushes the risks of the chosen target and of the values it leaves alone onto `risks`.
fn outcome_risks(
    col: &Column,
    tally: &ColumnTally,
    target: &Target,
    strategy: Strategy,
    fits: bool,
    risks: &mut Vec<String>,
) {
    let binary = tally.count("binary");
    if strategy == Strategy::Copy && binary > 0 {
        // A utf8mb4 column cannot hold arbitrary bytes: the copy converts them as the server
        // would (reversibly), so the stored bytes of images and the like change.
        let cs = col.charset.as_deref().unwrap_or("latin1");
        risks.push(format!(
            "holds {binary} binary value(s) (images, compressed data) among its text: utf8mb4 cannot keep their bytes, \
             so the copy stores their {cs} reading as UTF-8 (CONVERT(col USING {cs}) gives the bytes back, \
             but an application reading them over a utf8mb4 connection gets different bytes). \
             Fix: move them to a BLOB column before the job, or leave this column out"
        ));
    }
    if !fits {
        risks.push(format!(
            "recoded values need up to {} characters / {} bytes, more than {} holds. Fix: widen the target column in the job",
            tally.max_chars_after, tally.max_bytes_after, target.column_type
        ));
    }
    if tally.serialized[1] > 0 {
        risks.push(format!(
            "{} value(s) look PHP-serialized but do not parse (a count does not match its string): \
             they are left as they are and quarantined, since recoded as text unserialize() would fail on them too",
            tally.serialized[1]
        ));
    }
    if tally.undecided_total > 0 {
        risks.push(format!(
            "{} value(s) could not be decided: they will be left as they are and listed in the quarantine",
            tally.undecided_total
        ));
    }
}

/// The column's scan entry: its definition, what the tally found, and the decision.
fn column_scan(
    col: &Column,
    tally: &ColumnTally,
    target: Target,
    strategy: Strategy,
    fits: bool,
    risks: Vec<String>,
) -> ColumnScan {
    ColumnScan {
        name: col.name.clone(),
        column_type: col.column_type.clone(),
        charset: col.charset.clone(),
        collation: col.collation.clone(),
        nullable: col.nullable,
        definition: col.definition.clone(),
        declared_max_chars: col.max_chars,
        rows: tally.rows,
        nulls: tally.nulls,
        empty: tally.empty,
        labels: tally.labels.clone(),
        confidence: tally.confidence.clone(),
        examples: tally.examples.clone(),
        undecided: tally.undecided.clone(),
        undecided_total: tally.undecided_total,
        serialized: tally.serialized[0],
        serialized_unparsed: tally.serialized[1],
        max_bytes_now: tally.max_bytes_now,
        max_bytes_after: tally.max_bytes_after,
        max_chars_after: tally.max_chars_after,
        source: tally.dominant_source(),
        target,
        strategy,
        fits,
        risks,
        blocked: None,
    }
}

/// Whether the longest recoded value fits the target definition.
fn fits(col: &Column, target: &Target, tally: &ColumnTally) -> bool {
    let data_type = target.column_type.split('(').next().unwrap_or("").trim();
    if let Some(cap) = capacity(data_type) {
        return tally.max_bytes_after <= cap;
    }
    match (col.kind, col.max_chars) {
        (ColumnKind::Binary, _) => tally.max_bytes_after <= col.max_bytes.unwrap_or(u64::MAX),
        (_, Some(n)) => tally.max_chars_after <= n,
        _ => true,
    }
}

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

    fn text_column(charset: &str) -> Column {
        Column {
            name: "v".into(),
            position: 2,
            kind: ColumnKind::Text,
            data_type: "mediumtext".into(),
            column_type: "mediumtext".into(),
            charset: Some(charset.into()),
            collation: Some(format!("{charset}_general_ci")),
            max_chars: Some(16_777_215),
            max_bytes: Some(16_777_215),
            max_bytes_utf8mb4: Some(16_777_215),
            nullable: true,
            definition: Default::default(),
            in_primary_key: false,
            indexes: Vec::new(),
        }
    }

    #[test]
    fn the_collation_follows_the_old_ones_meaning() {
        for (old, mariadb, mysql) in [
            (
                "latin1_swedish_ci",
                "utf8mb4_general_ci",
                "utf8mb4_general_ci",
            ),
            (
                "cp1251_general_ci",
                "utf8mb4_general_ci",
                "utf8mb4_general_ci",
            ),
            (
                "koi8r_general_ci",
                "utf8mb4_general_ci",
                "utf8mb4_general_ci",
            ),
            ("cp1251_bin", "utf8mb4_bin", "utf8mb4_bin"),
            ("latin1_general_cs", "utf8mb4_bin", "utf8mb4_bin"),
            (
                "utf8mb3_unicode_ci",
                "utf8mb4_unicode_ci",
                "utf8mb4_unicode_ci",
            ),
            (
                "utf8mb3_unicode_520_ci",
                "utf8mb4_unicode_520_ci",
                "utf8mb4_unicode_520_ci",
            ),
            (
                "latin1_general_nopad_ci",
                "utf8mb4_general_nopad_ci",
                "utf8mb4_general_nopad_ci",
            ),
        ] {
            assert_eq!(utf8mb4_collation(Some(old), false), mariadb, "{old}");
            assert_eq!(utf8mb4_collation(Some(old), true), mysql, "{old}");
        }
        assert_eq!(utf8mb4_collation(None, false), "utf8mb4_general_ci");
        assert_eq!(utf8mb4_collation(None, true), "utf8mb4_0900_ai_ci");
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

    fn tally(labels: &[(&str, u64)]) -> ColumnTally {
        let mut t = ColumnTally::default();
        for (l, n) in labels {
            t.rows += n;
            t.labels.insert(l.to_string(), *n);
            if *l == "cp1251" {
                t.recode_labels.insert(l.to_string(), *n);
            }
        }
        t
    }

    #[test]
    fn images_in_a_text_column_stay_as_they_are() {
        let c = decide(
            &text_column("latin1"),
            &tally(&[("binary", 4), ("ascii", 1)]),
            false,
        );
        assert_eq!(c.strategy, Strategy::None);
        assert_eq!(c.target.charset.as_deref(), Some("latin1"));
        assert_eq!(c.target.column_type, "mediumtext");
        assert_eq!(
            c.target.why,
            "binary data (4 of 5 values): kept as is, never recoded"
        );
        assert!(c.risks[0].starts_with("holds binary data (4 of 5 values) in a text column"));
    }

    #[test]
    fn a_few_images_among_copied_text_are_a_risk_said_out_loud() {
        let c = decide(
            &text_column("latin1"),
            &tally(&[("binary", 1), ("cp1251", 3)]),
            false,
        );
        assert_eq!(c.strategy, Strategy::Copy);
        assert!(
            c.risks.iter().any(|r| r.starts_with(
                "holds 1 binary value(s) (images, compressed data) among its text: utf8mb4 cannot keep their bytes"
            )),
            "{:?}",
            c.risks
        );
        // Repaired in place in a utf8mb4 column, binary values are kept byte for byte: no such risk.
        let c = decide(
            &text_column("utf8mb4"),
            &tally(&[("binary", 1), ("cp1251", 3)]),
            false,
        );
        assert_eq!(c.strategy, Strategy::InPlace);
        assert!(c.risks.is_empty(), "{:?}", c.risks);
    }

    #[test]
    fn an_index_that_fits_blocks_nothing() {
        let t = categories("Dynamic", vec![index("u_name", true, &["name"], 255)]);
        let mut cols = vec![scanned("name", "copy", "utf8mb4")];
        assert!(index_risks(&t, &mut cols, false).is_empty());
        assert_eq!(cols[0].blocked, None);
    }
}

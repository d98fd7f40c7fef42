//! What a scanned column should become, and how: pure decisions from the tally and the inventory.
//!
//! The rules a DBA would apply by hand: pure-ASCII columns keep their single-byte
//! charset (an index on hex tokens must not grow fourfold for nothing), binary data
//! stays binary, utf8mb4/utf8mb3 columns holding mojibake are repaired in place,
//! single-byte columns holding legacy text are copied into utf8mb4.

use super::accumulate::ColumnTally;
use super::model::{ColumnScan, Strategy, Target};
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

fn is_utf8_charset(cs: Option<&str>) -> bool {
    matches!(cs, Some("utf8mb4" | "utf8mb3" | "utf8"))
}

/// The utf8mb4 collation that keeps the column's comparison behaviour as near as we can.
pub fn utf8mb4_collation(old: Option<&str>, mysql: bool) -> &'static str {
    match old {
        Some(c) if c.ends_with("_bin") || c.ends_with("_cs") => "utf8mb4_bin",
        _ if mysql => "utf8mb4_0900_ai_ci",
        _ => "utf8mb4_unicode_ci",
    }
}

/// Decides target, strategy, fit and risks for one column.
pub fn decide(col: &Column, tally: &ColumnTally, mysql: bool) -> ColumnScan {
    let non_empty = tally.rows - tally.nulls - tally.empty;
    let binary = tally.count("binary");
    let needs = !tally.recode_labels.is_empty();
    let mut risks = Vec::new();
    let keep = |why: String| Target {
        column_type: col.column_type.clone(),
        charset: col.charset.clone(),
        collation: col.collation.clone(),
        why,
    };
    let (target, strategy) = if col.kind == ColumnKind::Binary {
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
            keep("mostly binary data: kept as is".into()),
            Strategy::None,
        )
    } else if !needs {
        let why = if tally.labels.keys().all(|l| l == "ascii") {
            format!(
                "pure ASCII: stays {} so its indexes do not grow",
                col.charset.as_deref().unwrap_or("as is")
            )
        } else if is_utf8_charset(col.charset.as_deref()) {
            "already UTF-8: nothing to do".to_string()
        } else {
            "nothing decidable to recode".to_string()
        };
        (keep(why), Strategy::None)
    } else if is_utf8_charset(col.charset.as_deref()) {
        (
            keep("mojibake in a UTF-8 column: values repaired in place, type kept".into()),
            Strategy::InPlace,
        )
    } else {
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
        (
            Target {
                column_type: base,
                charset: Some("utf8mb4".into()),
                collation: Some(collation.into()),
                why: format!(
                    "{source} text in a {} column: copied into utf8mb4",
                    col.charset.as_deref().unwrap_or("?")
                ),
            },
            Strategy::Copy,
        )
    };
    let fits = fits(col, &target, tally);
    if !fits {
        risks.push(format!(
            "recoded values need up to {} characters / {} bytes, more than {} holds. Fix: widen the target column in the job",
            tally.max_chars_after, tally.max_bytes_after, target.column_type
        ));
    }
    if tally.undecided_total > 0 {
        risks.push(format!(
            "{} value(s) could not be decided: they will be left as they are and listed in the quarantine",
            tally.undecided_total
        ));
    }
    ColumnScan {
        name: col.name.clone(),
        column_type: col.column_type.clone(),
        charset: col.charset.clone(),
        collation: col.collation.clone(),
        nullable: col.nullable,
        declared_max_chars: col.max_chars,
        rows: tally.rows,
        nulls: tally.nulls,
        empty: tally.empty,
        labels: tally.labels.clone(),
        confidence: tally.confidence.clone(),
        examples: tally.examples.clone(),
        undecided: tally.undecided.clone(),
        undecided_total: tally.undecided_total,
        max_bytes_now: tally.max_bytes_now,
        max_bytes_after: tally.max_bytes_after,
        max_chars_after: tally.max_chars_after,
        source: tally.dominant_source(),
        target,
        strategy,
        fits,
        risks,
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
pub fn index_risks(table: &Table, columns: &[ColumnScan]) -> Vec<String> {
    let grows = |name: &str| {
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
                if grows(&p.column) {
                    p.bytes_utf8mb4
                } else {
                    p.bytes
                }
            })
            .collect();
        let total: u64 = parts.iter().sum();
        if parts.iter().any(|b| *b > table.key_part_limit) || total > table.key_limit {
            let cols: Vec<&str> = idx
                .parts
                .iter()
                .map(|p| p.column.as_str())
                .filter(|c| grows(c))
                .collect();
            risks.push(format!(
                "index `{}` would need {total} bytes once {} become utf8mb4 (limit {} per column, {} per key, row format {}). \
                 Fix: index a prefix of at most {} characters, use ROW_FORMAT=DYNAMIC, or keep the column single-byte",
                idx.name,
                cols.join(", "),
                table.key_part_limit,
                table.key_limit,
                table.row_format,
                table.key_part_limit / 4
            ));
        }
    }
    risks
}

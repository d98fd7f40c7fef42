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
use crate::inventory::model::{Column, ColumnKind};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! How `review` shows undecided values: a side-by-side listing for the terminal, and a
//! decision file to edit, every value's readings in comments beside its `use: '?'`. Pure.

use super::decisions::show_key_part;
use super::list::Undecided;
use std::fmt::Write as _;

/// A text cell: control characters shown escaped, so a value cannot break the layout.
fn shown(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// A YAML scalar (JSON's double-quoted strings are valid YAML).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

/// The side-by-side listing.
pub fn listing(values: &[Undecided]) -> String {
    let mut s = String::new();
    for v in values {
        let key: Vec<String> = v.key.iter().map(|k| show_key_part(k)).collect();
        let (label, conf) = v.review.column_verdict;
        let favoured: Vec<String> = v
            .review
            .column_labels
            .iter()
            .take(3)
            .map(|l| l.to_string())
            .collect();
        let _ = writeln!(
            s,
            "{}.{} key [{}]  stored {}",
            v.table,
            v.column,
            key.join(", "),
            hex::encode(&v.stored)
        );
        let _ = writeln!(
            s,
            "  column verdict: {label} ({conf:.2}); the column's rows read as: {}",
            if favoured.is_empty() {
                "(no prior)".to_string()
            } else {
                favoured.join(", ")
            }
        );
        for r in &v.review.readings {
            let score = if r.score.is_finite() {
                format!("{:6.1}", r.score)
            } else {
                "     -".to_string()
            };
            let text = r
                .text
                .as_deref()
                .map_or("(not lossless: cannot be chosen)".to_string(), |t| {
                    format!("«{}»", shown(t))
                });
            let _ = writeln!(s, "  {:<18} {score}  {text}", r.label.to_string());
        }
    }
    s
}

/// A decision file with every undecided value and column, each `use: '?'` until the DBA
/// writes a reading or `keep`; the readings are comments beside it.
pub fn decision_file(job: &str, values: &[Undecided]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Decisions for the values job {} left undecided (myrecode review).\n\
         # Replace each '?' with a reading listed beside it (only lossless ones are listed) or\n\
         # `keep`, then: myrecode run JOB.yaml --execute --decisions THIS_FILE\n\
         # A value's own decision wins over its column's; '?' entries are ignored.",
        quoted(job)
    );
    let _ = writeln!(s, "job: {}", quoted(job));
    let mut columns: Vec<(&str, &str, &Undecided)> = Vec::new();
    for v in values {
        if !columns
            .iter()
            .any(|(t, c, _)| *t == v.table && *c == v.column)
        {
            columns.push((&v.table, &v.column, v));
        }
    }
    let _ = writeln!(s, "columns:");
    for (t, c, v) in &columns {
        let n = values
            .iter()
            .filter(|x| x.table == *t && x.column == *c)
            .count();
        let favoured = v
            .review
            .column_labels
            .first()
            .map_or("no prior".to_string(), |l| format!("its rows read as {l}"));
        let _ = writeln!(s, "  # {n} undecided; {favoured}");
        let _ = writeln!(
            s,
            "  - {{ table: {}, column: {}, use: '?' }}",
            quoted(t),
            quoted(c)
        );
    }
    let _ = writeln!(s, "values:");
    for v in values {
        let key: Vec<String> = v.key.iter().map(|k| quoted(&show_key_part(k))).collect();
        let _ = writeln!(
            s,
            "  # column verdict: {} ({:.2})",
            v.review.column_verdict.0, v.review.column_verdict.1
        );
        for r in v.review.readings.iter().filter(|r| r.text.is_some()) {
            let _ = writeln!(
                s,
                "  #   {:<18} {}",
                r.label.to_string(),
                shown(r.text.as_deref().unwrap_or_default())
            );
        }
        let _ = writeln!(
            s,
            "  - {{ table: {}, column: {}, key: [{}], stored: {}, use: '?' }}",
            quoted(&v.table),
            quoted(&v.column),
            key.join(", "),
            hex::encode(&v.stored)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::decisions::{parse, Applied};
    use super::super::readings::review;
    use super::*;

    fn undecided(stored: &[u8]) -> Undecided {
        Undecided {
            table: "t\"x".into(),
            column: "name".into(),
            key: vec![b"7".to_vec(), vec![0xFF]],
            stored: stored.to_vec(),
            review: review(stored, None),
        }
    }

    #[test]
    fn the_written_file_parses_and_once_filled_in_applies() {
        let values = [undecided(&[0xCD, 0xB3])];
        let listing = listing(&values);
        assert!(listing.contains("«Ні»"), "{listing}");
        let file = decision_file("job", &values);
        let d = parse(&file).expect(&file);
        assert!(d.is_empty(), "nothing is decided until the DBA says so");
        let filled = file.replacen("stored: cdb3, use: '?'", "stored: cdb3, use: cp1251", 1);
        let d = parse(&filled).expect(&filled);
        assert_eq!(
            d.apply("t\"x", "name", &values[0].key, &[0xCD, 0xB3]),
            Applied::Rewrite("Ні".as_bytes().to_vec(), "cp1251".parse().unwrap())
        );
    }
}

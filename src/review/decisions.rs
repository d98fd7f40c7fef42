//! The DBA's decision file: which reading an undecided value (or a whole column's undecided
//! values) really is. Pure: parses, validates and matches; the engine applies.
//!
//! ```yaml
//! job: shop                    # optional: must be the run's job name when given
//! columns:                     # every still-undecided value of a column
//!   - { table: customers, column: city, use: cp1251 }
//! values:                      # one value, by key; applied only while it still holds `stored`
//!   - { table: customers, column: name, key: ["42"], stored: cdb3, use: cp1251 }
//! ```

use crate::detect::Label;
use crate::recode::value as recode;
use serde::{Deserialize, Serialize};

/// What the DBA says a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Rewrite it as this reading (a legacy encoding or a mojibake chain).
    Read(Label),
    /// Leave the stored bytes as they are and stop listing the value.
    Keep,
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Choice::Read(l) => write!(f, "{l}"),
            Choice::Keep => f.write_str("keep"),
        }
    }
}

/// A decision for every undecided value of one column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnDecision {
    /// Table name.
    pub table: String,
    /// Column name.
    pub column: String,
    /// A label (`cp1251`, `koi8-r`, `utf-8>latin1`, ...) or `keep`.
    #[serde(rename = "use")]
    pub choice: String,
}

/// A decision for one value, by its row's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueDecision {
    /// Table name.
    pub table: String,
    /// Column name.
    pub column: String,
    /// The row's key, one string per key column (`hex:` prefix for bytes that are not UTF-8).
    pub key: Vec<String>,
    /// The stored bytes the DBA reviewed, in hex: the decision holds only while they are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<String>,
    /// A label or `keep`; `?` (as `review` writes it) means not decided yet.
    #[serde(rename = "use")]
    pub choice: String,
}

/// The decision file as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionFile {
    /// The job the decisions were made for (checked against the run's when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Per-column decisions.
    #[serde(default)]
    pub columns: Vec<ColumnDecision>,
    /// Per-value decisions.
    #[serde(default)]
    pub values: Vec<ValueDecision>,
}

/// One validated per-value decision.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyDecision {
    /// The row's key parts as stored bytes.
    pub key: Vec<Vec<u8>>,
    /// The bytes reviewed, if the file names them.
    pub stored: Option<Vec<u8>>,
    /// What to do.
    pub choice: Choice,
}

/// The validated decisions, ready to consult per value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    /// The job they were made for, if named.
    pub job: Option<String>,
    /// `(table, column, choice)` for every undecided value of the column.
    pub columns: Vec<(String, String, Choice)>,
    /// `(table, column, decision)` per value.
    pub values: Vec<(String, String, KeyDecision)>,
}

/// What a decision makes of one stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// No decision covers it.
    None,
    /// Write these UTF-8 bytes (the round trip was proven), under this label.
    Rewrite(Vec<u8>, Label),
    /// Leave it and stop listing it.
    Keep,
    /// The decision cannot be applied; the value stays as it is. Why, for the DBA.
    Refused(String),
}

/// Parses one choice: a rewriting label or `keep`; `?` is "not decided yet".
pub fn parse_choice(s: &str) -> Result<Option<Choice>, String> {
    match s.trim() {
        "?" | "" => Ok(None),
        "keep" => Ok(Some(Choice::Keep)),
        t => match t.parse::<Label>() {
            Ok(l) if l.needs_recode() => Ok(Some(Choice::Read(l))),
            Ok(Label::Utf8 | Label::Ascii | Label::Binary) => Ok(Some(Choice::Keep)),
            _ => Err(format!(
                "unknown reading '{t}'. Fix: use one of the readings `myrecode review` lists \
                 (cp1251, koi8-r, koi8-u, cp866, iso-8859-5, tcvn3, utf-8>latin1, cp1251>latin1, ...) or `keep`"
            )),
        },
    }
}

/// Parses a key part as written by `review`: text, or `hex:` and the bytes.
pub fn parse_key_part(s: &str) -> Result<Vec<u8>, String> {
    match s.strip_prefix("hex:") {
        Some(h) => hex::decode(h).map_err(|e| format!("key part '{s}': bad hex ({e})")),
        None => Ok(s.as_bytes().to_vec()),
    }
}

/// Writes a key part the way [`parse_key_part`] reads it.
pub fn show_key_part(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) if !s.starts_with("hex:") => s.to_owned(),
        _ => format!("hex:{}", hex::encode(b)),
    }
}

/// Parses and validates a decision file; the error names the entry, the problem and the fix.
pub fn parse(text: &str) -> Result<Decisions, String> {
    let file: DecisionFile = serde_yaml::from_str(text).map_err(|e| {
        format!(
            "{e}. Fix: keep to the layout `myrecode review --out` writes (job, columns, values)"
        )
    })?;
    let mut out = Decisions {
        job: file.job,
        ..Decisions::default()
    };
    for (i, c) in file.columns.iter().enumerate() {
        let at = || format!("columns[{i}] ({}.{})", c.table, c.column);
        if let Some(choice) = parse_choice(&c.choice).map_err(|e| format!("{}: {e}", at()))? {
            if out
                .columns
                .iter()
                .any(|(t, col, _)| *t == c.table && *col == c.column)
            {
                return Err(format!(
                    "{}: the column is decided twice. Fix: keep one entry",
                    at()
                ));
            }
            out.columns
                .push((c.table.clone(), c.column.clone(), choice));
        }
    }
    for (i, v) in file.values.iter().enumerate() {
        let at = || format!("values[{i}] ({}.{} key {:?})", v.table, v.column, v.key);
        let Some(choice) = parse_choice(&v.choice).map_err(|e| format!("{}: {e}", at()))? else {
            continue;
        };
        if v.key.is_empty() {
            return Err(format!(
                "{}: no key. Fix: copy the key `review` listed",
                at()
            ));
        }
        let key = v
            .key
            .iter()
            .map(|k| parse_key_part(k))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: {e}", at()))?;
        let stored = match &v.stored {
            Some(h) => Some(hex::decode(h).map_err(|e| {
                format!(
                    "{}: `stored` is not hex ({e}). Fix: copy it from `review`, or drop it",
                    at()
                )
            })?),
            None => None,
        };
        out.values.push((
            v.table.clone(),
            v.column.clone(),
            KeyDecision {
                key,
                stored,
                choice,
            },
        ));
    }
    Ok(out)
}

impl Decisions {
    /// True when nothing is decided.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty() && self.values.is_empty()
    }

    /// Every `(table, column)` the decisions name, for checking against the job.
    pub fn named_columns(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = self
            .columns
            .iter()
            .map(|(t, c, _)| (t.as_str(), c.as_str()))
            .chain(self.values.iter().map(|(t, c, _)| (t.as_str(), c.as_str())))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The decision for one undecided value: the value's own (by key) first, then its column's.
    /// A per-key decision made on other bytes than those stored now is refused: the row changed.
    pub fn apply(&self, table: &str, column: &str, key: &[Vec<u8>], stored: &[u8]) -> Applied {
        let own = self
            .values
            .iter()
            .find(|(t, c, d)| t == table && c == column && d.key == key);
        let choice = match own {
            Some((_, _, d)) if d.stored.as_deref().is_some_and(|s| s != stored) => {
                return Applied::Refused(format!(
                    "{table}.{column} key {}: the row changed since it was reviewed ({} now); \
                     decision not applied. Fix: run `myrecode review` again and decide anew",
                    show_key(key),
                    hex::encode(stored)
                ))
            }
            Some((_, _, d)) => d.choice,
            None => match self
                .columns
                .iter()
                .find(|(t, c, _)| t == table && c == column)
            {
                Some((_, _, choice)) => *choice,
                None => return Applied::None,
            },
        };
        match choice {
            Choice::Keep => Applied::Keep,
            Choice::Read(label) => match recode::rewrite(label, stored) {
                Some(new) => Applied::Rewrite(new, label),
                None => Applied::Refused(format!(
                    "{table}.{column} key {}: {label} does not read these bytes ({}) losslessly; \
                     decision refused, the value is left as it is. Fix: choose another reading \
                     `myrecode review` lists, or `keep`",
                    show_key(key),
                    hex::encode(stored)
                )),
            },
        }
    }
}

/// A key as the DBA reads it: `[42]`, `[7, hex:00ff]`.
pub fn show_key(key: &[Vec<u8>]) -> String {
    let parts: Vec<String> = key.iter().map(|k| show_key_part(k)).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "
job: shop
columns:
  - { table: customers, column: city, use: koi8-r }
  - { table: customers, column: note, use: '?' }
values:
  - { table: customers, column: name, key: ['42'], stored: cdb3, use: cp1251 }
  - { table: customers, column: name, key: ['43'], use: keep }
  - { table: customers, column: name, key: ['44'], use: '?' }
";

    #[test]
    fn a_value_decision_rewrites_only_the_bytes_reviewed() {
        let d = parse(FILE).unwrap();
        assert_eq!(d.job.as_deref(), Some("shop"));
        assert_eq!(d.columns.len(), 1, "undecided entries are skipped");
        assert_eq!(d.values.len(), 2);
        let k = |s: &str| vec![s.as_bytes().to_vec()];
        // "Ні" in cp1251: valid UTF-8 too, which is why it was listed.
        assert_eq!(
            d.apply("customers", "name", &k("42"), &[0xCD, 0xB3]),
            Applied::Rewrite("Ні".as_bytes().to_vec(), "cp1251".parse().unwrap())
        );
        assert!(matches!(
            d.apply("customers", "name", &k("42"), &[0xCD, 0xB4]),
            Applied::Refused(m) if m.contains("changed since it was reviewed")
        ));
        assert_eq!(
            d.apply("customers", "name", &k("43"), &[0xFF]),
            Applied::Keep
        );
        assert_eq!(
            d.apply("customers", "name", &k("44"), &[0xFF]),
            Applied::None
        );
        assert_eq!(
            d.apply("customers", "other", &k("42"), &[0xFF]),
            Applied::None
        );
    }

    #[test]
    fn a_column_decision_covers_its_undecided_values_but_never_a_lossy_one() {
        let d = parse(FILE).unwrap();
        let key = vec![b"1".to_vec()];
        // KOI8-R "Ёж".
        assert_eq!(
            d.apply("customers", "city", &key, &[0xB3, 0xD6]),
            Applied::Rewrite("Ёж".as_bytes().to_vec(), "koi8-r".parse().unwrap())
        );
        // Already UTF-8 text: re-reading it as KOI8-R would not give the bytes back as UTF-8.
        let d = parse("columns: [{table: t, column: c, use: tcvn3}]").unwrap();
        assert!(matches!(
            d.apply("t", "c", &key, &[0x80]),
            Applied::Refused(m) if m.contains("losslessly") && m.contains("Fix:")
        ));
    }

    #[test]
    fn bad_files_name_the_entry_and_the_fix() {
        let e = parse("values: [{table: t, column: c, key: ['1'], use: cp1252x}]").unwrap_err();
        assert!(e.contains("values[0]") && e.contains("Fix:"), "{e}");
        let e = parse("columns: [{table: t, column: c, use: cp1251, extra: 1}]").unwrap_err();
        assert!(e.contains("extra") && e.contains("Fix:"), "{e}");
        let e = parse("values: [{table: t, column: c, key: ['1'], stored: zz, use: keep}]")
            .unwrap_err();
        assert!(e.contains("not hex"), "{e}");
        let e = parse(
            "columns: [{table: t, column: c, use: cp1251}, {table: t, column: c, use: keep}]",
        )
        .unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn key_parts_round_trip_through_text() {
        for k in [b"42".to_vec(), vec![0, 0xFF], b"hex:x".to_vec(), vec![]] {
            assert_eq!(parse_key_part(&show_key_part(&k)).unwrap(), k);
        }
    }
}

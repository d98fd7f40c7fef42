//! Per-column aggregation of verdicts: counts, confidence, examples, undecided keys, lengths after recoding.
//!
//! Memory stays bounded whatever the table size: one example per label and at most
//! [`UNDECIDED_KEEP`] undecided keys are kept.

use super::model::Example;
use crate::detect::{Label, Verdict};
use crate::recode::serialized;
use std::collections::BTreeMap;

/// How many undecided rows a report lists by key (the total is always counted).
pub const UNDECIDED_KEEP: usize = 1000;

/// Running totals for one column.
#[derive(Debug, Default, Clone)]
pub struct ColumnTally {
    /// The detector's votes of the batches read so far: the column's prior for the next.
    pub votes: crate::detect::ColumnVotes,
    /// Rows seen.
    pub rows: u64,
    /// NULL values.
    pub nulls: u64,
    /// Empty strings.
    pub empty: u64,
    /// Values per label.
    pub labels: BTreeMap<String, u64>,
    /// Non-ASCII verdicts per confidence bucket.
    pub confidence: BTreeMap<String, u64>,
    /// First example per label.
    pub examples: BTreeMap<String, Example>,
    /// First undecided values.
    pub undecided: Vec<Example>,
    /// All undecided values.
    pub undecided_total: u64,
    /// Longest stored value, bytes.
    pub max_bytes_now: u64,
    /// Longest value after recoding, bytes.
    pub max_bytes_after: u64,
    /// Longest value after recoding, characters.
    pub max_chars_after: u64,
    /// Values that need recoding, per label.
    pub recode_labels: BTreeMap<String, u64>,
    /// PHP-serialized values: `[parsed, looked serialized but did not parse]`.
    pub serialized: [u64; 2],
    /// The shape of the non-empty values while every one of them is a token ([`Tokens`]);
    /// `None` once a value is not, or before any.
    pub tokens: Option<Tokens>,
    /// Whether a non-empty value has been seen that is not a token.
    pub not_tokens: bool,
}

/// What the non-empty values of an all-token column share: hashes, hex ids, codes, whose every
/// character and meaning is ASCII.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Tokens {
    /// Shortest value, bytes.
    pub min_len: u64,
    /// Longest value, bytes.
    pub max_len: u64,
    /// Whether every value is hexadecimal digits only.
    pub hex: bool,
    /// Whether some value holds a digit.
    pub digit: bool,
}

impl Tokens {
    /// Whether the values look machine-made: hex of at least 8 digits, or one fixed length
    /// of at least 8 with digits among them (hashes, UUIDs, session ids). Words do not, even
    /// of one length (`users`, `backend`), nor logins or slugs, so they are converted.
    pub fn machine_made(&self) -> bool {
        (self.hex && self.min_len >= 8)
            || (self.min_len == self.max_len && self.min_len >= 8 && self.digit)
    }
}

/// Whether `raw` is one token: letters, digits, `_`, `-`, `.` and `:` only (no space, no `/`
/// or `@`, which URLs and addresses have).
fn is_token(raw: &[u8]) -> bool {
    raw.iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

/// Confidence bucket names, low to high.
pub fn bucket(confidence: f32) -> &'static str {
    match confidence {
        c if c < 0.5 => "<0.5",
        c if c < 0.8 => "0.5-0.8",
        c if c < 0.95 => "0.8-0.95",
        c if c < 0.99 => "0.95-0.99",
        _ => ">=0.99",
    }
}

/// Renders a key value for a report: text when printable UTF-8, else `0x…`.
pub fn show_key(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_string(),
        _ => format!("0x{}", hex::encode(bytes)),
    }
}

fn truncate_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn example(key: &[Vec<u8>], raw: &[u8], v: &Verdict) -> Example {
    let shown = &raw[..raw.len().min(64)];
    Example {
        key: key.iter().map(|k| show_key(k)).collect(),
        raw_hex: format!(
            "{}{}",
            hex::encode(shown),
            if raw.len() > 64 { "…" } else { "" }
        ),
        decoded: v.decoded.as_deref().map(|d| truncate_chars(d, 80)),
        label: v.label.to_string(),
        confidence: v.confidence,
        runner_up: v.runner_up.map(|(l, p)| format!("{l} ({p:.2})")),
    }
}

impl ColumnTally {
    /// Counts a NULL.
    pub fn add_null(&mut self) {
        self.rows += 1;
        self.nulls += 1;
    }

    /// Counts one value and its verdict.
    pub fn add(&mut self, key: &[Vec<u8>], raw: &[u8], v: &Verdict) {
        self.rows += 1;
        if raw.is_empty() {
            self.empty += 1;
            return;
        }
        self.count_token(raw);
        if serialized::looks_serialized(raw) {
            self.serialized[usize::from(serialized::payloads(raw).is_err())] += 1;
        }
        let label = v.label.to_string();
        *self.labels.entry(label.clone()).or_default() += 1;
        // Decided values only: an undecided value's number is how sure its best reading was
        // not, which would muddle what a bucket means.
        if !matches!(v.label, Label::Ascii | Label::Unknown) {
            *self
                .confidence
                .entry(bucket(v.confidence).to_string())
                .or_default() += 1;
        }
        self.max_bytes_now = self.max_bytes_now.max(raw.len() as u64);
        let (after_bytes, after_chars) = match (&v.label, &v.decoded) {
            (Label::Binary | Label::Unknown, _) | (_, None) => {
                // Left as stored; as latin1 text each byte is one character of up to 2 UTF-8 bytes.
                let high = raw.iter().filter(|b| **b >= 0x80).count() as u64;
                (raw.len() as u64 + high, raw.len() as u64)
            }
            (_, Some(d)) => (d.len() as u64, d.chars().count() as u64),
        };
        self.max_bytes_after = self.max_bytes_after.max(after_bytes);
        self.max_chars_after = self.max_chars_after.max(after_chars);
        if v.actionable() {
            *self.recode_labels.entry(label.clone()).or_default() += 1;
        }
        if matches!(v.label, Label::Unknown) {
            self.undecided_total += 1;
            if self.undecided.len() < UNDECIDED_KEEP {
                self.undecided.push(example(key, raw, v));
            }
        }
        self.examples
            .entry(label)
            .or_insert_with(|| example(key, raw, v));
    }

    /// Folds one non-empty value into [`ColumnTally::tokens`].
    fn count_token(&mut self, raw: &[u8]) {
        if self.not_tokens {
            return;
        }
        if !is_token(raw) {
            self.not_tokens = true;
            self.tokens = None;
            return;
        }
        let len = raw.len() as u64;
        let hex = raw.iter().all(u8::is_ascii_hexdigit);
        let digit = raw.iter().any(u8::is_ascii_digit);
        let t = self.tokens.get_or_insert(Tokens {
            min_len: len,
            max_len: len,
            hex,
            digit,
        });
        t.min_len = t.min_len.min(len);
        t.max_len = t.max_len.max(len);
        t.hex &= hex;
        t.digit |= digit;
    }

    /// The label most values needing recoding carry.
    pub fn dominant_source(&self) -> Option<String> {
        self.recode_labels
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(l, _)| l.clone())
    }

    /// Count for a label.
    pub fn count(&self, label: &str) -> u64 {
        self.labels.get(label).copied().unwrap_or(0)
    }
}

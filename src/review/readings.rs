//! Every reading of an undecided value side by side, with the column's verdict: what
//! `myrecode review` shows the DBA. Pure.

use crate::detect::{self, ColumnPrior, Context, Label};

/// One candidate reading of a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The label it would be applied under.
    pub label: Label,
    /// Evidence that it is real text (nats; higher is better).
    pub score: f32,
    /// The text it gives, when its round trip is lossless (only those can be chosen).
    pub text: Option<String>,
}

/// A value with all its readings and what its column makes of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    /// Readings, best first; the stored bytes as UTF-8 among them when they are valid UTF-8.
    pub readings: Vec<Reading>,
    /// The column's verdict: the label detection gives with the column's prior, and its confidence.
    pub column_verdict: (Label, f32),
    /// The labels the column's rows favoured, most favoured first.
    pub column_labels: Vec<Label>,
}

/// Readings of one stored value, and the column's verdict under `prior`.
pub fn review(stored: &[u8], prior: Option<&ColumnPrior>) -> Review {
    let mut readings: Vec<Reading> = detect::explain(stored)
        .into_iter()
        .filter(|(l, _)| !matches!(l, Label::Binary | Label::Unknown | Label::Ascii))
        .map(|(label, score)| Reading {
            label,
            score: if score.is_finite() { score } else { 0.0 },
            text: label.repair(stored),
        })
        .collect();
    // A legacy reading the scorer skipped (a byte it does not map) still deserves a line when
    // it round-trips: the DBA may know better than the models.
    for label in detect::label::REVIEW_LABELS {
        if readings.iter().any(|r| r.label == *label) {
            continue;
        }
        if let Some(text) = label.repair(stored) {
            readings.push(Reading {
                label: *label,
                score: f32::NEG_INFINITY,
                text: Some(text),
            });
        }
    }
    readings.sort_by(|a, b| b.score.total_cmp(&a.score));
    let v = detect::detect(
        stored,
        &Context {
            prior,
            ..Context::default()
        },
    );
    Review {
        readings,
        column_verdict: (v.label, v.confidence),
        column_labels: prior.map(|p| p.ranked()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lossless_reading_is_listed_with_its_text() {
        // "Ні" in cp1251 is also valid UTF-8 (one archaic Greek letter).
        let r = review(&[0xCD, 0xB3], None);
        let text = |l: &str| {
            r.readings
                .iter()
                .find(|x| x.label.to_string() == l)
                .and_then(|x| x.text.clone())
        };
        assert_eq!(text("cp1251").as_deref(), Some("Ні"));
        assert_eq!(text("utf-8").as_deref(), Some("\u{373}"));
        assert_eq!(text("koi8-r").as_deref(), Some("мЁ"));
        let prior = ColumnPrior::from_counts(&[("cp1251".parse().unwrap(), 5000.0)]);
        let r = review(&[0xCD, 0xB3], Some(&prior));
        assert_eq!(r.column_labels[0].to_string(), "cp1251");
        assert_eq!(r.column_verdict.0.to_string(), "cp1251");
    }
}

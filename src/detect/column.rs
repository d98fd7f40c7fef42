//! Column context: the other rows of a column form a prior over labels.

use super::{analyze, decide, posteriors, Analysis, Context, Label, Verdict, DEFAULT_THRESHOLD};

/// Pseudo-count per label: keeps a small column from over-trusting itself.
const ALPHA: f32 = 0.5;
/// Labels a prior spreads over (the alphabet of plausible readings).
const K: f32 = 12.0;
/// Bounds of a prior's bonus (nats): a column can tip a close call, but
/// a row with strong evidence of its own still wins in mixed columns.
const MAX_BONUS: f32 = 3.0;
const MIN_BONUS: f32 = -6.0;

/// A column's prior over labels, as nats added to each reading's score.
#[derive(Debug, Clone, Default)]
pub struct ColumnPrior {
    bonus: Vec<(Label, f32)>,
    unseen: f32,
}

impl ColumnPrior {
    /// The bonus (nats, may be negative) for a reading under this label.
    pub fn bonus(&self, label: Label) -> f32 {
        self.bonus
            .iter()
            .find(|(l, _)| *l == label)
            .map_or(self.unseen, |(_, b)| *b)
    }

    /// The share of the column's rows that read as `label` (0..1).
    pub fn share(&self, label: Label) -> f32 {
        // The bonus is ln(share · K) and never reaches its upper clamp (share ≤ 1).
        self.bonus(label).exp() / K
    }

    /// The reading most of the column's rows share, with its share. KOI8-R and KOI8-U
    /// count as one: they differ in eight bytes, and a KOI8-U row without them reads as KOI8-R.
    pub fn dominant(&self) -> Option<(Label, f32)> {
        let (label, _) = self
            .bonus
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .copied()?;
        let share = self
            .bonus
            .iter()
            .filter(|(l, _)| same_family(*l, label))
            .map(|(_, b)| b.exp() / K)
            .sum::<f32>()
            .min(1.0);
        Some((label, share))
    }

    /// The labels the column's rows favoured, most favoured first.
    pub fn ranked(&self) -> Vec<Label> {
        let mut b = self.bonus.clone();
        b.sort_by(|x, y| y.1.total_cmp(&x.1));
        b.into_iter().map(|(l, _)| l).collect()
    }

    /// Builds a prior from soft label counts.
    pub fn from_counts(counts: &[(Label, f32)]) -> Self {
        let total: f32 = counts.iter().map(|(_, c)| c).sum();
        let denom = total + ALPHA * K;
        let f = |c: f32| (((c + ALPHA) / denom) * K).ln().clamp(MIN_BONUS, MAX_BONUS);
        ColumnPrior {
            bonus: counts.iter().map(|&(l, c)| (l, f(c))).collect(),
            unseen: f(0.0),
        }
    }
}

/// True when two labels read the same bytes alike but for a few: KOI8-R and KOI8-U, alone or
/// as the same mojibake chain.
pub fn same_family(a: Label, b: Label) -> bool {
    use crate::codec::Encoding::{Koi8R, Koi8U};
    let koi = |e| matches!(e, Koi8R | Koi8U);
    match (a, b) {
        (Label::Legacy(x), Label::Legacy(y)) => x == y || (koi(x) && koi(y)),
        (
            Label::Mojibake {
                real: x,
                read_as: r,
            },
            Label::Mojibake {
                real: y,
                read_as: s,
            },
        ) => r == s && (x == y || (koi(x) && koi(y))),
        _ => a == b,
    }
}

/// Adds `p` to the soft count of `label`.
fn add(counts: &mut Vec<(Label, f32)>, label: Label, p: f32) {
    match counts.iter_mut().find(|(l, _)| *l == label) {
        Some((_, c)) => *c += p,
        None => counts.push((label, p)),
    }
}

/// The prior a column's rows give each other: each row votes with its own
/// posterior, so ambiguous rows spread their vote and decided rows count fully.
pub(crate) fn prior_of(analyses: &[Analysis]) -> ColumnPrior {
    let mut counts = Vec::new();
    add_votes(analyses, &mut counts);
    ColumnPrior::from_counts(&counts)
}

/// Adds the votes of `analyses` to soft label counts (see [`prior_of`]).
pub(crate) fn add_votes(analyses: &[Analysis], counts: &mut Vec<(Label, f32)>) {
    let mut probs = Vec::new();
    for a in analyses {
        match a {
            Analysis::Fixed(v) if v.label == Label::Utf8 => add(counts, Label::Utf8, 1.0),
            Analysis::Fixed(_) => {}
            Analysis::Scored { cands, .. } => {
                // Rows that read as no text at all (foreign encodings, blobs)
                // vote "none of these": their least-bad reading means nothing,
                // and a column full of them must not lift any reading.
                if !cands.iter().any(super::looks_like_text) {
                    add(counts, Label::Unknown, 1.0);
                    continue;
                }
                // A value of one to three letters that two readings read about as well
                // ("33 л": cp1251 litres or TCVN3 "ở") is no evidence of the column's
                // encoding: alone it is undecided, and a column of nothing else (a column of
                // quantities) must not vote itself into either reading.
                if short_and_close(cands) {
                    continue;
                }
                posteriors(cands, None, &mut probs);
                for (c, &p) in cands.iter().zip(&probs) {
                    add(counts, c.label, p);
                }
            }
        }
    }
}

/// True when the best reading of a value holds one to three letters and another reading is
/// within [`super::SHORT_LEAD`] of it: the values the decision leaves undecided alone.
fn short_and_close(cands: &[super::Cand]) -> bool {
    let Some(best) = cands.iter().max_by(|a, b| a.score.total_cmp(&b.score)) else {
        return false;
    };
    best.text.word_letters <= 3
        && cands
            .iter()
            .filter(|c| !std::ptr::eq(*c, best))
            .any(|c| best.score - c.score < super::SHORT_LEAD)
}

/// The soft label counts a sample of a column's values votes (each row its posterior, as
/// the scan's batches add them up): what [`ColumnPrior::from_counts`] turns into the prior
/// the scan decides with, kept by a run so it decides as the scan did.
pub fn column_votes(values: &[&[u8]]) -> Vec<(Label, f32)> {
    let analyses: Vec<Analysis> = values.iter().map(|v| analyze(v)).collect();
    let mut counts = Vec::new();
    add_votes(&analyses, &mut counts);
    counts
}

/// The prior a sample of a column's values gives: for scans that read a
/// column in batches, build it once from a sample and pass it in
/// [`Context::prior`] to [`super::detect`] for every value.
pub fn column_prior(values: &[&[u8]]) -> ColumnPrior {
    let analyses: Vec<Analysis> = values.iter().map(|v| analyze(v)).collect();
    prior_of(&analyses)
}

/// The soft label counts of a column's values decided so far, for a column read in batches.
#[derive(Debug, Clone, Default)]
pub struct ColumnVotes(Vec<(Label, f32)>);

/// [`detect_column`] for a column read in batches: each batch is decided under the votes of
/// the batches before it and its own, then adds its votes. A short value in the last few
/// rows of a table reads in the light of the whole column, not of its batch alone.
pub fn detect_column_batch(values: &[&[u8]], seen: &mut ColumnVotes) -> Vec<Verdict> {
    let analyses: Vec<Analysis> = values.iter().map(|v| analyze(v)).collect();
    add_votes(&analyses, &mut seen.0);
    let prior = ColumnPrior::from_counts(&seen.0);
    let ctx = Context {
        threshold: DEFAULT_THRESHOLD,
        prior: Some(&prior),
    };
    values
        .iter()
        .zip(analyses)
        .map(|(v, a)| decide(v, a, &ctx))
        .collect()
}

/// Detects every value of one column, each read in the light of the others.
pub fn detect_column(values: &[&[u8]]) -> Vec<Verdict> {
    detect_column_with(values, DEFAULT_THRESHOLD)
}

/// [`detect_column`] with a chosen confidence threshold.
pub fn detect_column_with(values: &[&[u8]], threshold: f32) -> Vec<Verdict> {
    let analyses: Vec<Analysis> = values.iter().map(|v| analyze(v)).collect();
    let prior = prior_of(&analyses);
    let ctx = Context {
        threshold,
        prior: Some(&prior),
    };
    values
        .iter()
        .zip(analyses)
        .map(|(v, a)| decide(v, a, &ctx))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of a Russian column: addresses, names, delivery notes.
    const RUSSIAN: [&str; 8] = [
        "Привет, как дела?",
        "Москва, ул. Ленина, д. 5",
        "Иванов Иван",
        "Доставка курьером",
        "Заказ отменён по просьбе покупателя",
        "Петрова Анна Сергеевна",
        "Ключи оставить у консьержа",
        "Смирнова Ольга",
    ];

    #[test]
    fn a_sampled_prior_carries_over_to_single_values() {
        let rows: Vec<Vec<u8>> = RUSSIAN[..7]
            .iter()
            .cycle()
            .take(70)
            .map(|s| encoding_rs::KOI8_R.encode(s).0.into_owned())
            .collect();
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        // Seven rows are too few to lend a two-letter value its lead (the pseudo-counts keep a
        // small column from over-trusting itself, and "Ёж" stays undecided); seventy are not.
        let few = column_prior(&refs[..7]);
        let v = super::super::detect(
            &encoding_rs::KOI8_R.encode("Ёж").0,
            &Context {
                threshold: DEFAULT_THRESHOLD,
                prior: Some(&few),
            },
        );
        assert_eq!(v.label, Label::Unknown, "{v:?}");
        let prior = column_prior(&refs);
        let ctx = Context {
            threshold: DEFAULT_THRESHOLD,
            prior: Some(&prior),
        };
        // "Ёж" alone is too short to call; in this KOI8-R column it is KOI8-R.
        let v = super::super::detect(&encoding_rs::KOI8_R.encode("Ёж").0, &ctx);
        assert_eq!(v.label.to_string(), "koi8-r", "{v:?}");
    }

    #[test]
    fn a_column_read_in_batches_lends_its_last_batch_the_whole_column() {
        let rows: Vec<Vec<u8>> = RUSSIAN[..7]
            .iter()
            .cycle()
            .take(70)
            .map(|s| encoding_rs::KOI8_R.encode(s).0.into_owned())
            .collect();
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        let last_batch = [&rows[0][..], &encoding_rs::KOI8_R.encode("Ёж").0[..]];
        // Alone, a batch of two rows lends "Ёж" too little.
        let alone = detect_column(&last_batch);
        assert_eq!(alone[1].label, Label::Unknown, "{alone:?}");
        let mut seen = ColumnVotes::default();
        for chunk in refs.chunks(32) {
            detect_column_batch(chunk, &mut seen);
        }
        let v = detect_column_batch(&last_batch, &mut seen);
        assert_eq!(v[1].label.to_string(), "koi8-r", "{v:?}");
    }

    #[test]
    fn a_column_does_not_rewrite_a_value_without_letters_of_its_reading() {
        // A Danish "Malmø" among `cp866>latin1` rows reads as "Malm°" through the chain: no
        // Cyrillic letter, so the column is no evidence for it and it stays as stored.
        let chain = |s: &str| {
            let raw = encoding_rs::IBM866.encode(s).0;
            encoding_rs::WINDOWS_1252.decode(&raw).0.into_owned()
        };
        let mut rows: Vec<String> = RUSSIAN.iter().cycle().take(60).map(|s| chain(s)).collect();
        rows.push("Malmø".to_owned());
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_bytes()).collect();
        let verdicts = detect_column(&refs);
        assert_eq!(verdicts[0].label.to_string(), "cp866>latin1");
        let last = verdicts.last().unwrap();
        assert!(!last.actionable(), "{last:?}");
    }

    /// A column of 300 Russian rows stored through `enc` (then read as latin1 when `latin1`),
    /// with `extra` last.
    fn column_with(enc: &'static encoding_rs::Encoding, latin1: bool, extra: &str) -> Verdict {
        let store = |s: &str| {
            let raw = enc.encode(s).0.into_owned();
            if latin1 {
                encoding_rs::WINDOWS_1252
                    .decode(&raw)
                    .0
                    .into_owned()
                    .into_bytes()
            } else {
                raw
            }
        };
        let mut rows: Vec<Vec<u8>> = RUSSIAN.iter().cycle().take(300).map(|s| store(s)).collect();
        rows.push(store(extra));
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        detect_column(&refs).pop().unwrap()
    }

    #[test]
    fn an_abbreviation_reads_as_its_column() {
        // "ГБ" in KOI8-R is "зв" in cp1251, a likelier pair of letters: in a KOI8-R column it
        // is KOI8-R all the same, though its letters score below the usual floor.
        let v = column_with(encoding_rs::KOI8_R, false, "ГБ");
        assert_eq!(v.label.to_string(), "koi8-r", "{v:?}");
        assert_eq!(v.decoded.as_deref(), Some("ГБ"));
        // "ГиБ" through `cp866>latin1` is C1 controls around "¨" as stored, no text itself.
        let v = column_with(encoding_rs::IBM866, true, "ГиБ");
        assert_eq!(v.label.to_string(), "cp866>latin1", "{v:?}");
        assert_eq!(v.decoded.as_deref(), Some("ГиБ"));
    }

    #[test]
    fn a_short_value_reads_as_its_column() {
        // "в" (cp1251 0xE2) alone is anyone's guess; in a cp1251 column it is cp1251.
        let mut rows: Vec<Vec<u8>> = [
            "Привет, как дела?",
            "Москва, ул. Ленина, д. 5",
            "Иванов Иван",
        ]
        .iter()
        .map(|s| encoding_rs::WINDOWS_1251.encode(s).0.into_owned())
        .collect();
        rows.push(b"\xe2 \xf1\xf0\xe5\xe4\xf3".to_vec()); // "в среду"
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        let verdicts = detect_column(&refs);
        assert!(
            verdicts.iter().all(|v| v.label.to_string() == "cp1251"),
            "{verdicts:?}"
        );
    }
}

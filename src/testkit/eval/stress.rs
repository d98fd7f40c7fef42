//! Stress experiments on the corpus: values of a stress set put into the legacy and mojibake
//! columns of a held-out set and decided under each column's prior, to count what would be
//! rewritten that must not be. Used by `examples/detect_score.rs`.
//!
//! Pure: takes parsed rows ([`super`]), returns counts.

use super::{class_of, judge_verdict, Row, Tally};
use crate::detect::{detect, Context};
use std::collections::BTreeMap;

/// Genuine values (`extra`, never to be rewritten) put into every mojibake column of `rows`
/// (one (label, language) group each) at a 5% share, a batch at a time, each decided under
/// the prior of its column with the batch in it: how many of them would be rewritten, in all
/// and per column. A column that is mostly mojibake yet holds some genuine UTF-8 (a table
/// half repaired) must leave that UTF-8 alone.
pub fn injected_rewrites(rows: &[Row], extra: &[Row]) -> (usize, Vec<(String, usize)>) {
    let mut groups: BTreeMap<(String, String), Vec<&[u8]>> = BTreeMap::new();
    for r in rows.iter().filter(|r| class_of(&r.expected) == "mojibake") {
        groups
            .entry((r.expected.clone(), r.lang.clone()))
            .or_default()
            .push(&r.bytes);
    }
    let mut per = Vec::new();
    for ((label, lang), values) in &groups {
        let batch = (values.len() / 20).max(1);
        let mut bad = 0;
        for chunk in extra.chunks(batch) {
            let mut all = values.clone();
            all.extend(chunk.iter().map(|r| r.bytes.as_slice()));
            let prior = crate::detect::column_prior(&all);
            let ctx = Context {
                prior: Some(&prior),
                ..Context::default()
            };
            bad += chunk
                .iter()
                .filter(|r| detect(&r.bytes, &ctx).actionable())
                .count();
        }
        per.push((format!("{label} {lang}"), bad));
    }
    (per.iter().map(|(_, n)| n).sum(), per)
}

/// What values put into the columns of a set become (see [`column_stress`]).
#[derive(Debug, Clone, Default)]
pub struct ColumnStress {
    /// Values of a column's own label and language, judged as the column's rows are.
    pub own: Tally,
    /// Genuine values (ASCII, UTF-8, foreign encodings) put into every legacy and mojibake
    /// column.
    pub genuine: usize,
    /// ... of which would be rewritten.
    pub genuine_rewritten: usize,
    /// Values of a column's language under another label of its class (KOI8-R rows in a
    /// cp1251 column).
    pub cross: usize,
    /// ... of which would be rewritten wrongly.
    pub cross_rewritten: usize,
    /// Every wrong answer for a value of the column's own label (kept or rewritten) and every
    /// genuine value rewritten: `column<TAB>expected<TAB>answer<TAB>text`.
    pub wrongs: Vec<String>,
    /// The same for every value of the column's own label left undecided.
    pub undecided: Vec<String>,
}

impl ColumnStress {
    fn add(&mut self, o: &ColumnStress) {
        self.own.add(&o.own);
        self.genuine += o.genuine;
        self.genuine_rewritten += o.genuine_rewritten;
        self.cross += o.cross;
        self.cross_rewritten += o.cross_rewritten;
        self.wrongs.extend(o.wrongs.iter().cloned());
        self.undecided.extend(o.undecided.iter().cloned());
    }

    /// One line of figures.
    pub fn render(&self) -> String {
        let o = &self.own;
        format!(
            "own {} right {} unknown {} wrong {} (rewritten wrongly {}) | genuine {} rewritten {} | \
             other label {} rewritten wrongly {}",
            o.n,
            o.correct,
            o.abstained,
            o.wrong,
            o.corrupting,
            self.genuine,
            self.genuine_rewritten,
            self.cross,
            self.cross_rewritten
        )
    }
}

/// Puts the values of `extra` (a stress set) into the legacy and mojibake columns of `rows`
/// (one (label, language) group each) and decides each under the prior of its column with
/// them in it: values of the column's own label and language (are they read as the column?),
/// genuine values (ASCII, UTF-8, text in encodings we do not handle: never to be rewritten)
/// in every column, and values of the column's language under another label of its class (a
/// column that mixes tables: never to be rewritten as the column's). Each kind goes in
/// separately, a batch at a time: 5% of the column, or one value at a time with `single`.
/// Returns the total and the figures per column.
pub fn column_stress(
    rows: &[Row],
    extra: &[Row],
    single: bool,
) -> (ColumnStress, Vec<(String, ColumnStress)>) {
    use crate::detect::column::add_votes;
    use crate::detect::{analyze, decide, Analysis, ColumnPrior};
    let mut groups: BTreeMap<(String, String), Vec<&Row>> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| matches!(class_of(&r.expected), "legacy" | "mojibake"))
    {
        groups
            .entry((r.expected.clone(), r.lang.clone()))
            .or_default()
            .push(r);
    }
    let extra_an: Vec<Analysis> = extra.iter().map(|r| analyze(&r.bytes)).collect();
    let mut total = ColumnStress::default();
    let mut per = Vec::new();
    for ((label, lang), members) in &groups {
        let class = class_of(label);
        let an: Vec<Analysis> = members.iter().map(|r| analyze(&r.bytes)).collect();
        let mut base = Vec::new();
        add_votes(&an, &mut base);
        let batch = if single {
            1
        } else {
            (members.len() / 20).max(1)
        };
        let mut s = ColumnStress::default();
        // 0: own label and language, 1: genuine, 2: another label of the class.
        for kind in 0..3 {
            let pick: Vec<usize> = (0..extra.len())
                .filter(|&i| {
                    let r = &extra[i];
                    let c = class_of(&r.expected);
                    match kind {
                        0 => r.expected == *label && r.lang == *lang,
                        1 => matches!(c, "ascii/utf-8" | "foreign"),
                        _ => c == class && r.lang == *lang && r.expected != *label,
                    }
                })
                .collect();
            for chunk in pick.chunks(batch) {
                let mut counts = base.clone();
                let chunk_an: Vec<Analysis> = chunk.iter().map(|&i| extra_an[i].clone()).collect();
                add_votes(&chunk_an, &mut counts);
                let prior = ColumnPrior::from_counts(&counts);
                let ctx = Context {
                    prior: Some(&prior),
                    ..Context::default()
                };
                for (&i, a) in chunk.iter().zip(chunk_an) {
                    let r = &extra[i];
                    let v = decide(&r.bytes, a, &ctx);
                    let wrong = |v: &crate::detect::Verdict| {
                        format!(
                            "{label} {lang}\t{}\t{} {:.2}\t{}",
                            r.expected, v.label, v.confidence, r.text
                        )
                    };
                    match kind {
                        0 => {
                            let t = judge_verdict(r, &v);
                            if t.wrong > 0 {
                                s.wrongs.push(wrong(&v));
                            } else if t.abstained > 0 {
                                s.undecided.push(wrong(&v));
                            }
                            s.own.add(&t);
                        }
                        1 => {
                            s.genuine += 1;
                            s.genuine_rewritten += v.actionable() as usize;
                            if v.actionable() {
                                s.wrongs.push(wrong(&v));
                            }
                        }
                        _ => {
                            s.cross += 1;
                            let bad = judge_verdict(r, &v).corrupting;
                            s.cross_rewritten += bad;
                            if bad > 0 {
                                s.wrongs.push(format!("other label: {}", wrong(&v)));
                            }
                        }
                    }
                }
            }
        }
        total.add(&s);
        per.push((format!("{label} {lang}"), s));
    }
    (total, per)
}

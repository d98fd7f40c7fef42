//! Issue 42: the run decides a value as the scan and the plan said it would. Each (label,
//! language) group of the held-out set is one column, and its names and one- or two-word
//! values another (a forum's author column): the scan decides it in batches (each
//! under the votes of those before and its own, as `scan` does), the plan fixes its `source:`
//! where every non-ASCII value the scan decided has one label (else `auto`), and the run
//! decides each value by `recode::value::decide` under the prior it forms from the column's
//! first rows (as `engine::priors` does: the scan's soft votes). Then every legacy word whose bytes are also valid
//! UTF-8 (`data/stress_lookalike.tsv`, cp1251 "Ні." is UTF-8 "ͳ.") is put into the column of
//! its encoding and language, one at a time. The run must agree with the scan on every value:
//! a label the scan read is the run's rewrite under it, UTF-8 the scan kept is kept, and what
//! the scan left undecided is never rewritten.

use myrecode::codec::Encoding;
use myrecode::detect::{self, ColumnPrior, ColumnVotes, Label};
use myrecode::recode::value::{self, Action, Source};
use myrecode::testkit::eval::{self, Row};
use std::collections::BTreeMap;

/// Rows the scan reads a batch of (`scan --full`'s default).
const SCAN_BATCH: usize = 1000;
/// Rows the run forms its prior from (`engine::priors::PRIOR_SAMPLE`).
const PRIOR_SAMPLE: usize = 2000;

fn corpus(name: &str) -> Vec<Row> {
    let path = format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"));
    eval::parse_corpus(&std::fs::read_to_string(&path).expect(&path)).expect("parse")
}

/// The plan's `source:` for a column the scan read as `labels`: the one label every non-ASCII
/// value has, else `auto` (`job::plan`'s rule).
fn planned(labels: &[Label]) -> Source {
    let mut non_ascii: Vec<Label> = labels
        .iter()
        .copied()
        .filter(|l| *l != Label::Ascii)
        .collect();
    non_ascii.sort();
    non_ascii.dedup();
    match non_ascii.as_slice() {
        [one @ (Label::Legacy(_) | Label::Mojibake { .. })] => Source::Fixed(*one),
        _ => Source::Auto,
    }
}

/// The run's prior before issue 42: each of the first rows' labels counted whole (now the
/// run keeps the scan's soft votes, [`detect::column_votes`]).
fn run_prior_before(sample: &[&[u8]]) -> ColumnPrior {
    let mut counts: BTreeMap<Label, f32> = BTreeMap::new();
    for v in detect::detect_column(sample) {
        if matches!(
            v.label,
            Label::Legacy(_) | Label::Mojibake { .. } | Label::Utf8
        ) {
            *counts.entry(v.label).or_default() += 1.0;
        }
    }
    let counts: Vec<(Label, f32)> = counts.into_iter().collect();
    ColumnPrior::from_counts(&counts)
}

/// Whether the run's action is the scan's verdict: a rewrite under the label it read (or its
/// KOI8 sibling, which gives the same text where both read it), UTF-8 kept, undecided left.
fn agrees(scan: Label, run: &Action) -> bool {
    match (scan, run) {
        (Label::Ascii | Label::Utf8 | Label::Binary, Action::Keep) => true,
        (Label::Unknown, Action::Quarantine { .. } | Action::Keep) => true,
        (l, Action::Rewrite { label, .. }) => detect::same_family(l, *label),
        _ => false,
    }
}

/// Decides `bytes` as the run did before issue 42: valid UTF-8 under a fixed label kept.
fn decide_before(source: &Source, prior: &ColumnPrior, bytes: &[u8]) -> Action {
    if matches!(source, Source::Fixed(l) if !matches!(l, Label::Mojibake { .. }))
        && !bytes.is_ascii()
        && std::str::from_utf8(bytes).is_ok()
    {
        return Action::Keep;
    }
    value::decide(source, None, Some(prior), detect::DEFAULT_THRESHOLD, bytes)
}

/// What one column (and the look-alikes put into it) gave: values, disagreements now and
/// before, and a few examples of each.
#[derive(Default)]
struct Tally {
    values: usize,
    differ: usize,
    differ_before: usize,
    examples: Vec<String>,
}

#[test]
fn the_run_decides_every_value_as_the_scan_read_it() {
    let heldout = corpus("heldout_corpus.tsv");
    let lookalike = corpus("stress_lookalike.tsv");
    // Each group whole, and its names and one- or two-word values alone (an author column).
    let mut groups: BTreeMap<(String, String, &str), Vec<&Row>> = BTreeMap::new();
    let recoded = |l: Label| matches!(l, Label::Legacy(_) | Label::Mojibake { .. });
    for r in heldout
        .iter()
        .filter(|r| r.expected.parse::<Label>().is_ok_and(recoded))
    {
        let mut kinds = vec!["all"];
        if matches!(r.shape.as_str(), "name" | "short") {
            kinds.push("names");
        }
        for kind in kinds {
            groups
                .entry((r.expected.clone(), r.lang.clone(), kind))
                .or_default()
                .push(r);
        }
    }
    let mut total = Tally::default();
    let mut fixed = 0;
    for ((label, lang, _), rows) in &groups {
        let values: Vec<&[u8]> = rows.iter().map(|r| r.bytes.as_slice()).collect();
        let mut votes = ColumnVotes::default();
        let mut scanned: Vec<Label> = Vec::new();
        for batch in values.chunks(SCAN_BATCH) {
            scanned.extend(eval::labels(&detect::detect_column_batch(
                batch, &mut votes,
            )));
        }
        let source = planned(&scanned);
        fixed += usize::from(matches!(source, Source::Fixed(_)));
        let sample = &values[..values.len().min(PRIOR_SAMPLE)];
        let prior = ColumnPrior::from_counts(&detect::column_votes(sample));
        let prior_before = run_prior_before(sample);
        // The look-alikes of this column's encoding and language, each scanned with the
        // column's votes (as one more row of its last batch).
        let own: Vec<&Row> = lookalike
            .iter()
            .filter(|r| &r.expected == label && &r.lang == lang)
            .collect();
        // The scan's votes over the whole column (its last batch's prior).
        let scan_prior = detect::column_prior(&values);
        let ctx = detect::Context {
            threshold: detect::DEFAULT_THRESHOLD,
            prior: Some(&scan_prior),
        };
        let extra: Vec<(&[u8], Label)> = own
            .iter()
            .map(|r| (r.bytes.as_slice(), detect::detect(&r.bytes, &ctx).label))
            .collect();
        let all = values
            .iter()
            .copied()
            .zip(scanned.iter().copied())
            .chain(extra);
        for (bytes, scan) in all {
            let run = value::decide(
                &source,
                None,
                Some(&prior),
                detect::DEFAULT_THRESHOLD,
                bytes,
            );
            let before = decide_before(&source, &prior_before, bytes);
            total.values += 1;
            total.differ_before += usize::from(!agrees(scan, &before));
            if !agrees(scan, &run) {
                total.differ += 1;
                if total.examples.len() < 20 {
                    total.examples.push(format!(
                        "{label}/{lang} {}: scan {scan}, run {run:?}",
                        String::from_utf8_lossy(bytes)
                    ));
                }
            }
        }
    }
    println!(
        "run as scan: {} columns ({fixed} with a fixed source), {} values: {} decided otherwise than \
         the scan (before issue 42: {})",
        groups.len(),
        total.values,
        total.differ,
        total.differ_before
    );
    assert!(groups.len() >= 60 && total.values > 20_000);
    assert_eq!(total.differ, 0, "{:#?}", total.examples);
}

#[test]
fn a_value_the_run_rewrote_is_never_rewritten_again() {
    // An in-place run never reads again a row its checkpoint passed; and read again (a copy
    // of values already converted), a rewritten value is UTF-8 text of the column's script.
    let heldout = corpus("heldout_corpus.tsv");
    let mut again = 0;
    let mut n = 0;
    for r in heldout.iter().filter(|r| r.expected == "cp1251") {
        let cp1251 = Source::Fixed(Label::Legacy(Encoding::Windows1251));
        let Action::Rewrite { new, .. } =
            value::decide(&cp1251, None, None, detect::DEFAULT_THRESHOLD, &r.bytes)
        else {
            continue;
        };
        n += 1;
        if matches!(
            value::decide(&cp1251, None, None, detect::DEFAULT_THRESHOLD, &new),
            Action::Rewrite { .. }
        ) {
            again += 1;
        }
    }
    assert!(n > 1_000, "{n}");
    assert_eq!(again, 0, "{again} of {n} rewritten twice");
}

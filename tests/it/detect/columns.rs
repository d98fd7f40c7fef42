//! Issue 28: no silent wrong value in a column that is one encoding. On the held-out set
//! (each (label, language) group one column), on cp1251 / KOI8 / CP866 / ISO-8859-5 words
//! whose bytes are also valid UTF-8 put into columns of their encoding
//! (`data/stress_lookalike.tsv`), on genuine UTF-8 put into legacy columns, and on columns
//! of prices, quantities, addresses, phones and initials (`data/stress_units.tsv`): nothing
//! rewritten wrongly and nothing wrong kept; undecided is allowed and counted.

use myrecode::testkit::eval::{self, stress};

fn corpus(name: &str) -> Vec<eval::Row> {
    let path = format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"));
    eval::parse_corpus(&std::fs::read_to_string(&path).expect(&path)).expect("parse")
}

#[test]
fn heldout_columns_keep_nothing_wrong_and_rewrite_nothing_wrong() {
    let rows = corpus("heldout_corpus.tsv");
    let report = eval::evaluate(&rows);
    let mut right = 0;
    let mut n = 0;
    for (label, t) in &report.column {
        assert_eq!(t.corrupting, 0, "{label}: rewritten wrongly");
        assert_eq!(t.wrong, 0, "{label}: wrong values kept or rewritten");
        right += t.correct;
        n += t.n;
    }
    let share = right as f64 / n as f64;
    assert!(share >= 0.999, "per column right {share:.5} < 0.999");
}

#[test]
fn legacy_words_that_are_valid_utf8_follow_their_column() {
    let rows = corpus("heldout_corpus.tsv");
    let lookalike = corpus("stress_lookalike.tsv");
    assert!(
        lookalike.len() > 1_500,
        "look-alike set: {}",
        lookalike.len()
    );
    assert!(lookalike
        .iter()
        .all(|r| std::str::from_utf8(&r.bytes).is_ok()));
    for single in [true, false] {
        let (total, _) = stress::column_stress(&rows, &lookalike, single);
        assert_eq!(
            total.own.n,
            lookalike.len(),
            "every value put into its column"
        );
        assert_eq!(
            total.own.wrong, 0,
            "single {single}: kept as UTF-8 or read wrongly: {:#?}",
            total.wrongs
        );
        // Most are decided: undecided is safe, but a column that decided none would pass.
        assert!(
            total.own.correct * 10 >= total.own.n * 7,
            "single {single}: only {} of {} decided",
            total.own.correct,
            total.own.n
        );
    }
}

#[test]
fn genuine_utf8_in_a_legacy_column_stays_utf8() {
    let rows = corpus("heldout_corpus.tsv");
    let genuine: Vec<eval::Row> = rows
        .iter()
        .filter(|r| r.expected == "utf-8")
        .cloned()
        .collect();
    assert!(genuine.len() > 2_000);
    for single in [true, false] {
        let (total, _) = stress::column_stress(&rows, &genuine, single);
        assert!(total.genuine > 50_000);
        assert_eq!(total.genuine_rewritten, 0, "{:#?}", total.wrongs);
    }
}

#[test]
fn columns_of_prices_addresses_and_initials_are_never_read_wrongly() {
    // One column per (label, language, shape): "47319 руб." in a cp1251 column of prices
    // had read as KOI8-R "47319 ПСА." at 0.95-0.99, the whole column with it.
    let mut rows = corpus("stress_units.tsv");
    assert!(rows.len() > 10_000, "units set: {}", rows.len());
    for r in &mut rows {
        r.lang = format!("{}/{}", r.lang, r.shape);
    }
    let report = eval::evaluate(&rows);
    let mut decided = 0;
    for (label, t) in &report.column {
        assert_eq!(t.wrong, 0, "{label}: {:#?}", report.column_misses);
        decided += t.correct;
    }
    for (label, t) in &report.alone {
        assert_eq!(t.corrupting, 0, "{label} alone: rewritten wrongly");
    }
    assert!(
        decided * 2 >= rows.len(),
        "only {decided} of {} decided",
        rows.len()
    );
}

#[test]
fn confidence_means_what_it_says_on_the_heldout_set() {
    // Values decided at confidence c are right at least c of the time, for every bucket from
    // 0.9 and every length (1-2 words, 3-10, longer), alone and per column.
    let report = eval::evaluate(&corpus("heldout_corpus.tsv"));
    for (mode, r) in [
        ("alone", &report.calibration_alone),
        ("per column", &report.calibration_column),
    ] {
        assert!(
            r.failures().is_empty(),
            "{mode}: {:?}\n{}",
            r.failures(),
            r.render(mode)
        );
        // The top bucket holds most decisions: a table of empty buckets would pass too.
        assert!(r.cell(0, 4).0 > 5_000, "{}", r.render(mode));
    }
}

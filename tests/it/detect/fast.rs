//! Issue 31: the fast reading (`detect::fast::in_column`) gives a value its column's label
//! only where the full decision under the same prior gives that label too. Checked on every
//! value of the held-out set, the development set and the stress sets put into every
//! Cyrillic column of the held-out set (its own values, the same language under other
//! tables, genuine UTF-8 and ASCII), and on the units set's own columns; and, for the second
//! table's reading, in every column of one table that holds a tenth of another's rows.

use myrecode::detect::{column_prior, detect, fast, ColumnPrior, Context, Label};
use myrecode::testkit::eval;
use std::collections::BTreeMap;

fn corpus(name: &str) -> Vec<eval::Row> {
    let path = format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"));
    eval::parse_corpus(&std::fs::read_to_string(&path).expect(&path)).expect("parse")
}

/// The held-out set, and every other set (development, look-alike and units stress sets).
fn every_set() -> (Vec<eval::Row>, Vec<eval::Row>) {
    let others = ["dev_corpus.tsv", "stress_lookalike.tsv", "stress_units.tsv"]
        .iter()
        .flat_map(|n| corpus(n))
        .collect();
    (corpus("heldout_corpus.tsv"), others)
}

/// Values the fast reading took, and those among them the full decision reads otherwise.
#[derive(Default)]
struct Agreement {
    taken: usize,
    disagree: Vec<String>,
    /// Values taken whose text is not what the column's reading gives (another table, or
    /// text in no table we read): wrong even where the full decision would agree.
    wrong: Vec<String>,
}

impl Agreement {
    fn check(&mut self, column: &str, row: &eval::Row, prior: &ColumnPrior) {
        let Some(label) = fast::in_column(&row.bytes, prior, 0.95) else {
            return;
        };
        self.taken += 1;
        // KOI8-U text without its eight letters is KOI8-R byte for byte: the text decides.
        if label.repair(&row.bytes).as_deref() != Some(row.text.as_str()) {
            self.wrong.push(format!(
                "{column}: {} {:?} taken as {label}",
                row.expected, row.text
            ));
        }
        let v = detect(
            &row.bytes,
            &Context {
                threshold: 0.95,
                prior: Some(prior),
            },
        );
        if v.label != label || !v.actionable() {
            self.disagree.push(format!(
                "{column}: {} {:?}: fast {label}, full {} {:.2}",
                row.expected, row.text, v.label, v.confidence
            ));
        }
    }
}

/// Each (label, language) group of `rows` whose label is a single-byte Cyrillic table.
fn cyrillic_columns(rows: &[eval::Row]) -> BTreeMap<(String, String), Vec<&eval::Row>> {
    let mut groups: BTreeMap<(String, String), Vec<&eval::Row>> = BTreeMap::new();
    for r in rows {
        if matches!(
            r.expected.as_str(),
            // The corpora's names (`cp1251`, `cp866`) and the WHATWG ones alike.
            "cp1251" | "windows-1251" | "koi8-r" | "cp866" | "ibm866" | "iso-8859-5"
        ) {
            groups
                .entry((r.expected.clone(), r.lang.clone()))
                .or_default()
                .push(r);
        }
    }
    groups
}

fn prior_of(members: &[&eval::Row]) -> ColumnPrior {
    let values: Vec<&[u8]> = members.iter().map(|r| r.bytes.as_slice()).collect();
    column_prior(&values)
}

#[test]
fn the_fast_reading_agrees_with_the_full_decision_in_every_column() {
    let (heldout, others) = every_set();
    let columns = cyrillic_columns(&heldout);
    assert!(columns.len() >= 8, "{} Cyrillic columns", columns.len());
    let (mut own, mut foreign) = (Agreement::default(), Agreement::default());
    let mut long_own = 0;
    for ((label, lang), members) in &columns {
        let prior = prior_of(members);
        let name = format!("{label} {lang}");
        assert!(
            matches!(prior.dominant(), Some((Label::Legacy(_), _))),
            "{name}"
        );
        for r in members {
            long_own += (r.text.chars().filter(|c| !c.is_ascii()).count() >= 12) as usize;
            own.check(&name, r, &prior);
        }
        // Every other value: another table's text, another language, genuine UTF-8, ASCII.
        for r in heldout.iter().chain(&others) {
            if !(r.expected == *label && r.lang == *lang) {
                foreign.check(&name, r, &prior);
            }
        }
    }
    println!(
        "fast reading: {} of the columns' own values ({} with 12 letters or more), {} others",
        own.taken, long_own, foreign.taken
    );
    assert!(own.disagree.is_empty(), "{:#?}", own.disagree);
    assert!(foreign.disagree.is_empty(), "{:#?}", foreign.disagree);
    assert!(own.wrong.is_empty(), "{:#?}", own.wrong);
    assert!(foreign.wrong.is_empty(), "{:#?}", foreign.wrong);
    // It serves: most long values of a column take it.
    assert!(own.taken * 2 >= long_own, "{} of {long_own}", own.taken);
}

#[test]
fn the_fast_reading_agrees_on_columns_of_prices_addresses_and_initials() {
    let rows = corpus("stress_units.tsv");
    let mut groups: BTreeMap<String, Vec<&eval::Row>> = BTreeMap::new();
    for r in &rows {
        groups
            .entry(format!("{} {} {}", r.expected, r.lang, r.shape))
            .or_default()
            .push(r);
    }
    let mut a = Agreement::default();
    for (name, members) in &groups {
        let prior = prior_of(members);
        for r in members {
            a.check(name, r, &prior);
        }
    }
    println!("fast reading: {} of {} unit values", a.taken, rows.len());
    assert!(a.disagree.is_empty(), "{:#?}", a.disagree);
    assert!(a.wrong.is_empty(), "{:#?}", a.wrong);
}

/// A prior from `main`'s rows with every `step`-th row of `second` among them: a column of
/// one table that holds some rows of another (KOI8-R rows in a cp1251 column).
fn mixed_prior(main: &[&eval::Row], second: &[&eval::Row], step: usize) -> ColumnPrior {
    let values: Vec<&[u8]> = main
        .iter()
        .map(|r| r.bytes.as_slice())
        .chain(second.iter().step_by(step).map(|r| r.bytes.as_slice()))
        .collect();
    column_prior(&values)
}

#[test]
fn the_second_tables_reading_agrees_in_columns_that_hold_two_tables() {
    let (heldout, others) = every_set();
    let columns = cyrillic_columns(&heldout);
    let mut a = Agreement::default();
    let (mut second_taken, mut second_long) = (0, 0);
    let mut pairs = 0;
    for ((label, lang), members) in &columns {
        for ((label2, lang2), members2) in &columns {
            if label == label2 {
                continue;
            }
            // About one row in ten of the other table, as in a column an old client wrote to.
            let prior = mixed_prior(members, members2, 10);
            let Some((Label::Legacy(_), share)) = prior.dominant() else {
                panic!("{label} {lang} + {label2} {lang2}: no legacy reading dominates");
            };
            if share < 0.85 {
                continue;
            }
            pairs += 1;
            let name = format!("{label} {lang} with {label2} {lang2}");
            for r in members2 {
                let before = a.taken;
                a.check(&name, r, &prior);
                second_taken += a.taken - before;
                second_long += (r.text.chars().filter(|c| !c.is_ascii()).count() >= 24) as usize;
            }
            for r in heldout.iter().chain(&others) {
                if !(r.expected == *label2 && r.lang == *lang2) {
                    a.check(&name, r, &prior);
                }
            }
        }
    }
    println!(
        "second table's reading: {pairs} mixed columns; {second_taken} of the second table's \
         {second_long} values of 24 letters or more taken; {} values taken in all",
        a.taken
    );
    assert!(pairs >= 100, "{pairs} mixed columns");
    assert!(a.disagree.is_empty(), "{:#?}", a.disagree);
    assert!(a.wrong.is_empty(), "{:#?}", a.wrong);
    // It serves: most long values of the second table take it.
    assert!(
        second_taken * 2 >= second_long,
        "{second_taken} of {second_long}"
    );
}

#[test]
fn in_a_column_of_two_tables_half_and_half_each_reading_agrees() {
    let (heldout, others) = every_set();
    let columns = cyrillic_columns(&heldout);
    let mut a = Agreement::default();
    let (mut taken_own, mut long_own, mut pairs) = (0, 0, 0);
    let keys: Vec<_> = columns.keys().collect();
    for (i, k1) in keys.iter().enumerate() {
        for k2 in &keys[i + 1..] {
            if k1.0 == k2.0 {
                continue;
            }
            // Two old clients' tables, row for row.
            let prior = mixed_prior(&columns[*k1], &columns[*k2], 1);
            pairs += 1;
            let name = format!("{} {} and {} {}", k1.0, k1.1, k2.0, k2.1);
            for r in columns[*k1].iter().chain(&columns[*k2]) {
                let before = a.taken;
                a.check(&name, r, &prior);
                taken_own += a.taken - before;
                long_own += (r.text.chars().filter(|c| !c.is_ascii()).count() >= 24) as usize;
            }
            for r in heldout.iter().chain(&others) {
                let own = |k: &(String, String)| r.expected == k.0 && r.lang == k.1;
                if !own(k1) && !own(k2) {
                    a.check(&name, r, &prior);
                }
            }
        }
    }
    println!(
        "two tables half and half: {pairs} columns; {taken_own} of their {long_own} values of \
         24 letters or more taken; {} values taken in all",
        a.taken
    );
    assert!(pairs >= 60, "{pairs} mixed columns");
    assert!(a.disagree.is_empty(), "{:#?}", a.disagree);
    assert!(a.wrong.is_empty(), "{:#?}", a.wrong);
    assert!(taken_own * 2 >= long_own, "{taken_own} of {long_own}");
}

#[test]
fn in_a_column_of_three_tables_of_one_language_each_reading_agrees() {
    let (heldout, others) = every_set();
    let columns = cyrillic_columns(&heldout);
    let keys: Vec<_> = columns.keys().collect();
    let mut a = Agreement::default();
    let (mut taken_own, mut triples) = (0, 0);
    for (i, k1) in keys.iter().enumerate() {
        for (j, k2) in keys.iter().enumerate().skip(i + 1) {
            for k3 in &keys[j + 1..] {
                let labels = [&k1.0, &k2.0, &k3.0];
                if !(k1.1 == k2.1 && k2.1 == k3.1)
                    || labels[0] == labels[1]
                    || labels[1] == labels[2]
                    || labels[0] == labels[2]
                {
                    continue;
                }
                // Three old clients' tables, a third each, as in a forum's posts.
                let rows: Vec<&eval::Row> = columns[*k1]
                    .iter()
                    .chain(&columns[*k2])
                    .chain(&columns[*k3])
                    .copied()
                    .collect();
                let prior = prior_of(&rows);
                triples += 1;
                let name = format!("{} {} {} {}", k1.0, k2.0, k3.0, k1.1);
                for r in &rows {
                    let before = a.taken;
                    a.check(&name, r, &prior);
                    taken_own += a.taken - before;
                }
                for r in heldout.iter().chain(&others) {
                    if !rows.iter().any(|o| std::ptr::eq(*o, r)) {
                        a.check(&name, r, &prior);
                    }
                }
            }
        }
    }
    println!(
        "three tables a third each: {triples} columns; {taken_own} of their own values taken; \
         {} values taken in all",
        a.taken
    );
    assert!(triples >= 6, "{triples} columns of three tables");
    assert!(a.disagree.is_empty(), "{:#?}", a.disagree);
    assert!(a.wrong.is_empty(), "{:#?}", a.wrong);
    assert!(taken_own > 0);
}

//! Issue 16 on text nobody here wrote: the held-out set (`data/heldout_corpus.tsv`, cut by
//! `scripts/gen_heldout.py` from Debian's translation catalogs in `tests/data/heldout/`),
//! its targets alone and per column, and one test per class of miss the issue names.

use myrecode::codec::{self, Encoding};
use myrecode::detect::{chars, detect, detect_column, Context, Label};
use myrecode::testkit::eval;

fn heldout() -> Vec<eval::Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/heldout_corpus.tsv");
    eval::parse_corpus(&std::fs::read_to_string(path).expect("held-out corpus")).expect("parse")
}

/// Every message of one language's held-out text.
fn heldout_text(lang: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/data/heldout/{lang}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .expect("held-out text")
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, t)| t.to_owned()))
        .collect()
}

/// Rows of the held-out set with this label and language: one database column.
fn column_of<'a>(rows: &'a [eval::Row], label: &str, lang: &str) -> Vec<&'a eval::Row> {
    rows.iter()
        .filter(|r| r.expected == label && r.lang == lang)
        .collect()
}

#[test]
fn heldout_targets_alone_and_per_column() {
    let rows = heldout();
    assert!(
        rows.len() > 15_000,
        "held-out set too small: {}",
        rows.len()
    );
    let r = eval::evaluate(&rows);
    let pct = |t: &eval::Tally, k: usize| 100.0 * k as f64 / t.n.max(1) as f64;
    let legacy = eval::class_total(&r.alone, "legacy");
    let moj = eval::class_total(&r.alone, "mojibake");
    let left_alone = eval::class_total(&r.alone, "ascii/utf-8");
    let mut column = eval::Tally::default();
    for class in ["legacy", "mojibake", "ascii/utf-8"] {
        let t = eval::class_total(&r.column, class);
        column.n += t.n;
        column.correct += t.correct;
        column.corrupting += t.corrupting;
    }
    let table = r.render();
    // Issue 16's targets that are met: hold them.
    assert!(pct(&legacy, legacy.wrong) <= 0.1, "{table}");
    assert!(
        pct(&r.short_alone, r.short_alone.correct) >= 92.0,
        "{table}"
    );
    assert_eq!(left_alone.corrupting, 0, "{table}");
    assert_eq!(column.corrupting, 0, "no wrong rewrite per column\n{table}");
    // Met since the fourth pass: 17,183 of 17,200 (99.90%).
    assert!(pct(&column, column.correct) >= 99.9, "{table}");
    // Not met (README, "Held-out set"): legacy alone >= 98%, mojibake alone >= 99.5%. These
    // floors are today's figures, so nothing slides back.
    assert!(pct(&legacy, legacy.correct) >= 96.3, "{table}");
    assert!(pct(&moj, moj.correct) >= 97.4, "{table}");
    // Issue 42: mojibake kept as UTF-8 in silence, 91 of 7,200 (1.26%) before the chain that
    // beats the UTF-8 reading by the threshold's log-odds was listed, 52 (0.72%) now.
    assert!(pct(&moj, moj.wrong) <= 0.75, "{table}");
    assert_eq!(left_alone.correct, left_alone.n, "{table}");
}

#[test]
fn class1_short_values_in_a_uniform_column_read_as_the_column() {
    // One or two words (names, interjections, initials) among a language's cp1251 rows: the
    // column decides every one whose cp1251 reading is text, and never wrongly.
    let rows = heldout();
    let (mut short, mut right) = (0, 0);
    for lang in ["ru", "uk", "be", "bg", "sr", "mk"] {
        let col = column_of(&rows, "cp1251", lang);
        let values: Vec<&[u8]> = col.iter().map(|r| r.bytes.as_slice()).collect();
        for (row, v) in col.iter().zip(detect_column(&values)) {
            if v.actionable() {
                assert_eq!(v.decoded.as_deref(), Some(row.text.as_str()), "{v:?}");
                assert_eq!(v.label, Label::Legacy(Encoding::Windows1251), "{v:?}");
            }
            if row.text.split_whitespace().count() <= 2 {
                short += 1;
                right += v.actionable() as usize;
            }
        }
    }
    assert!(short > 500, "{short}");
    assert!(
        right * 1000 >= short * 999,
        "{right} of {short} short values decided"
    );
}

/// Words and word pairs of the held-out text whose bytes in `enc` are valid UTF-8 that reads
/// as characters rare in text: the look-alikes of class 2.
fn lookalikes(enc: Encoding) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for lang in ["ru", "uk", "be", "bg", "sr", "mk"] {
        for msg in heldout_text(lang) {
            let words: Vec<&str> = msg
                .split(|c: char| !c.is_alphabetic())
                .filter(|w| !w.is_empty())
                .collect();
            for w in &words {
                let Ok(bytes) = codec::encode(enc, w) else {
                    continue;
                };
                let rare = std::str::from_utf8(&bytes)
                    .is_ok_and(|s| !s.is_ascii() && s.chars().any(chars::rare_in_text));
                if rare && !out.iter().any(|(t, _)| t == w) {
                    out.push((w.to_string(), bytes));
                }
            }
        }
    }
    out
}

#[test]
fn class2_valid_utf8_is_not_proof_for_short_values() {
    let rows = heldout();
    let (mut seen, mut right) = (0, 0);
    for (enc, label, lang) in [
        (Encoding::Windows1251, "cp1251", "uk"),
        (Encoding::Koi8U, "koi8-u", "uk"),
        (Encoding::Ibm866, "cp866", "ru"),
        (Encoding::Iso8859_5, "iso-8859-5", "ru"),
    ] {
        let found = lookalikes(enc);
        seen += found.len();
        let column = column_of(&rows, label, lang);
        let utf8 = column_of(&rows, "utf-8", lang);
        for (text, bytes) in &found {
            // Alone: never UTF-8 at full confidence; at most undecided.
            let v = detect(bytes, &Context::default());
            assert!(
                !(v.label == Label::Utf8 && v.confidence >= 0.95),
                "{text:?} alone: {v:?}"
            );
            assert!(
                !v.actionable() || v.decoded.as_deref() == Some(text.as_str()),
                "{v:?}"
            );
            // In a legacy column: the legacy reading wins, or (odd-case fragments such as
            // "нН" from "[нН]") the value is listed; it is never kept as UTF-8.
            let mut values: Vec<&[u8]> = column.iter().map(|r| r.bytes.as_slice()).collect();
            values.push(bytes);
            let v = detect_column(&values).pop().unwrap();
            assert_ne!(v.label, Label::Utf8, "{text:?} in {label}: {v:?}");
            assert!(
                !v.actionable() || v.decoded.as_deref() == Some(text.as_str()),
                "{text:?} in {label}: {v:?}"
            );
            right += (v.decoded.as_deref() == Some(text.as_str())) as usize;
            // In a UTF-8 column the same bytes are UTF-8, as stored.
            let mut values: Vec<&[u8]> = utf8.iter().map(|r| r.bytes.as_slice()).collect();
            values.push(bytes);
            let v = detect_column(&values).pop().unwrap();
            assert_eq!(v.label, Label::Utf8, "{text:?} in utf-8: {v:?}");
        }
    }
    assert!(seen >= 20, "only {seen} look-alikes in the held-out text");
    assert!(
        right * 10 >= seen * 9,
        "{right} of {seen} read right in their column"
    );
}

#[test]
fn class3_mixed_latin_and_cyrillic_values_are_read_like_prose() {
    // Messages mixing Latin words (software names, protocols, code) with Cyrillic ones.
    let rows = heldout();
    let mixed: Vec<&eval::Row> = rows
        .iter()
        .filter(|r| r.shape == "mixed" && eval::class_of(&r.expected) != "ascii/utf-8")
        .filter(|r| r.lang != "vi")
        .collect();
    assert!(mixed.len() > 300, "{}", mixed.len());
    let (mut right, mut corrupt) = (0, 0);
    for r in &mixed {
        let v = detect(&r.bytes, &Context::default());
        // KOI8-R and KOI8-U read a value without KOI8-U's own bytes alike: the text decides.
        let ok = v.actionable() && v.decoded.as_deref() == Some(r.text.as_str());
        right += ok as usize;
        corrupt += (!ok && v.actionable()) as usize;
    }
    assert_eq!(corrupt, 0);
    assert!(
        right * 100 >= mixed.len() * 98,
        "{right} of {} mixed values right alone",
        mixed.len()
    );
}

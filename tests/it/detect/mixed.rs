//! Issue 42's "0 values silently wrong on mixed cp1251/KOI8-R columns": every language's
//! cp1251 and KOI8 rows of the committed (synthetic) corpus, the held-out and the development
//! sets put in one column three ways (half and half, each table with a tenth of the other's
//! rows) and detected as a column: a value is right (its table, its text), or left undecided
//! for review, never read under the other table.

use myrecode::detect::{detect_column, Label};
use myrecode::testkit::eval;

fn set(name: &str) -> Vec<eval::Row> {
    let path = format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"));
    eval::parse_corpus(&std::fs::read_to_string(path).expect("corpus")).expect("parse")
}

/// The values of `rows`' mixed columns detected wrongly (another table, or another text),
/// with how many values were detected in all.
fn silently_wrong(rows: &[eval::Row]) -> (Vec<String>, usize) {
    let koi8 = |l: &str| l.starts_with("koi8-");
    let (mut wrong, mut seen) = (Vec::new(), 0);
    for (name, col) in eval::mixed::cp1251_koi8_columns(rows) {
        let values: Vec<&[u8]> = col.iter().map(|r| r.bytes.as_slice()).collect();
        for (r, v) in col.iter().zip(detect_column(&values)) {
            seen += 1;
            let label = v.label.to_string();
            let same = label == r.expected || (koi8(&label) && koi8(&r.expected));
            let text_ok = !v.actionable() || v.decoded.as_deref() == Some(r.text.as_str());
            if v.label != Label::Unknown && !(same && text_ok) {
                wrong.push(format!(
                    "{name}: {} read as {label}: {:?}",
                    r.expected, r.text
                ));
            }
        }
    }
    (wrong, seen)
}

#[test]
fn mixed_cp1251_and_koi8_columns_hold_no_silently_wrong_value() {
    for name in ["detect_corpus.tsv", "heldout_corpus.tsv", "dev_corpus.tsv"] {
        let (wrong, seen) = silently_wrong(&set(name));
        assert!(seen > 1000, "{name}: {seen} values in mixed columns");
        assert!(
            wrong.is_empty(),
            "{name}: {} of {seen} wrong: {wrong:#?}",
            wrong.len()
        );
    }
}

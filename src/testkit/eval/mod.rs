//! Corpus evaluation: per-label correct / wrong / abstained, ours beside
//! chardetng. Used by `examples/detect_score.rs` and `tests/it/detect/corpus.rs`.
//!
//! Pure: takes parsed rows, returns numbers and a rendered table.

pub mod calibration;
pub mod mixed;
pub mod stress;

use crate::detect::{detect, detect_column, Context, Label, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One labelled corpus value.
#[derive(Debug, Clone)]
pub struct Row {
    /// The answer detection should give.
    pub expected: String,
    /// Language or source of the text (groups rows into columns).
    pub lang: String,
    /// What kind of value (name, address, sentence, word, ...).
    pub shape: String,
    /// The stored bytes.
    pub bytes: Vec<u8>,
    /// The real text, for rows that are text.
    pub text: String,
}

/// Parses the corpus TSV (`label lang shape hex text`; `#` lines are comments).
pub fn parse_corpus(tsv: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (n, line) in tsv.lines().enumerate() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.splitn(5, '\t').collect();
        if f.len() < 4 {
            return Err(format!("line {}: expected 5 tab-separated fields", n + 1));
        }
        let bytes = hex::decode(f[3]).map_err(|e| format!("line {}: bad hex: {e}", n + 1))?;
        rows.push(Row {
            expected: f[0].to_owned(),
            lang: f[1].to_owned(),
            shape: f[2].to_owned(),
            bytes,
            text: f.get(4).copied().unwrap_or("").to_owned(),
        });
    }
    Ok(rows)
}

/// Outcome counts for one expected label.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    /// Rows in this group.
    pub n: usize,
    /// Right label (and right text where the label rewrites).
    pub correct: usize,
    /// Any other label except `unknown`.
    pub wrong: usize,
    /// `unknown`: left alone and listed.
    pub abstained: usize,
    /// Wrong answers that would rewrite the value: corruption.
    pub corrupting: usize,
}

impl Tally {
    fn pct(&self, k: usize) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            100.0 * k as f64 / self.n as f64
        }
    }
    /// Adds another tally's counts.
    pub(super) fn add(&mut self, o: &Tally) {
        self.n += o.n;
        self.correct += o.correct;
        self.wrong += o.wrong;
        self.abstained += o.abstained;
        self.corrupting += o.corrupting;
    }
}

/// What kind of answer an expected label is, for the targets.
pub fn class_of(expected: &str) -> &'static str {
    match expected {
        "ascii" | "utf-8" => "ascii/utf-8",
        "binary" => "binary",
        "unknown" => "foreign",
        s if s.contains('>') => "mojibake",
        _ => "legacy",
    }
}

/// Scores one verdict against a row: (correct, wrong, abstained, corrupting).
fn judge(row: &Row, label: &str, decoded: Option<&str>, rewrites: bool) -> Tally {
    let mut t = Tally {
        n: 1,
        ..Tally::default()
    };
    // KOI8-R and KOI8-U agree outside 8 bytes: a KOI8-U value without them
    // decodes identically under either label, so either is right.
    let same = label == row.expected
        || (matches!(
            (label, row.expected.as_str()),
            ("koi8-r", "koi8-u") | ("koi8-u", "koi8-r")
        ) && decoded == Some(row.text.as_str()));
    let text_ok = !rewrites || row.text.is_empty() || decoded == Some(row.text.as_str());
    if same && text_ok {
        t.correct = 1;
    } else if label == "unknown" {
        t.abstained = 1;
    } else {
        t.wrong = 1;
        t.corrupting = rewrites as usize;
    }
    t
}

pub(super) fn judge_verdict(row: &Row, v: &Verdict) -> Tally {
    judge(
        row,
        &v.label.to_string(),
        v.decoded.as_deref(),
        v.actionable(),
    )
}

/// chardetng's answer mapped to our labels (`other:<name>` outside them).
fn chardetng_label(bytes: &[u8]) -> String {
    let mut d = chardetng::EncodingDetector::new();
    d.feed(bytes, true);
    map_chardetng(d.guess(None, true), bytes)
}

fn map_chardetng(e: &'static encoding_rs::Encoding, bytes: &[u8]) -> String {
    if bytes.is_ascii() {
        return "ascii".into(); // any ASCII-compatible guess is right there
    }
    let name = e.name();
    match name {
        "UTF-8" => "utf-8".into(),
        "windows-1251" => "cp1251".into(),
        "KOI8-R" => "koi8-r".into(),
        "KOI8-U" => "koi8-u".into(),
        "IBM866" => "cp866".into(),
        "ISO-8859-5" => "iso-8859-5".into(),
        _ => format!("other:{name}"),
    }
}

/// chardetng verdict judged free (any guess counts) or restricted (guesses
/// outside our encodings count as abstentions).
fn judge_chardetng(row: &Row, guess: &str, restricted: bool) -> Tally {
    let decoded = |enc: &'static encoding_rs::Encoding| {
        enc.decode_without_bom_handling(&row.bytes).0.into_owned()
    };
    let dec = encoding_rs::Encoding::for_label(guess.as_bytes())
        .or(match guess {
            "cp1251" => Some(encoding_rs::WINDOWS_1251),
            "cp866" => Some(encoding_rs::IBM866),
            _ => None,
        })
        .map(decoded);
    if restricted && guess.starts_with("other:") {
        let mut t = Tally {
            n: 1,
            ..Tally::default()
        };
        t.abstained = 1;
        return t;
    }
    let rewrites = !matches!(guess, "ascii" | "utf-8");
    judge(row, guess, dec.as_deref(), rewrites)
}

/// All numbers of one evaluation.
#[derive(Debug, Default)]
pub struct Report {
    /// Ours, each value alone, by expected label.
    pub alone: BTreeMap<String, Tally>,
    /// Ours, each (label, language) group as one column.
    pub column: BTreeMap<String, Tally>,
    /// Ours on columns that mix encodings row by row.
    pub mixed_column: Tally,
    /// chardetng free guess, each value alone.
    pub cd_free: BTreeMap<String, Tally>,
    /// chardetng restricted to our encodings, each value alone.
    pub cd_restricted: BTreeMap<String, Tally>,
    /// chardetng fed a whole group at once (its best case), free guess.
    pub cd_column: BTreeMap<String, Tally>,
    /// Ours alone on legacy and mojibake values of one or two words.
    pub short_alone: Tally,
    /// Ours per column on the same short values.
    pub short_column: Tally,
    /// Wrong answers, for inspection: (expected, got, text).
    pub mistakes: Vec<(String, String, String)>,
    /// Values a column gets wrong, with their column and what the column saw.
    pub column_misses: Vec<ColumnMiss>,
    /// Confidence against accuracy of decided non-ASCII values, each alone.
    pub calibration_alone: calibration::Reliability,
    /// The same, each decided in its (label, language) column.
    pub calibration_column: calibration::Reliability,
}

/// One value its column gets wrong: where it is, what it got, and why.
#[derive(Debug, Clone)]
pub struct ColumnMiss {
    /// The answer expected (the column's label).
    pub expected: String,
    /// The column's language.
    pub lang: String,
    /// The value's shape (name, short, title, prose, mixed, ...).
    pub shape: String,
    /// The answer given.
    pub got: String,
    /// True when that answer would rewrite the value.
    pub rewrites: bool,
    /// The real text.
    pub text: String,
    /// The column's dominant reading and share, every reading's own score with the
    /// column's bonus, and the verdict's reasons.
    pub detail: String,
}

/// True for a value of one or two words (the short fields a column must carry).
pub fn is_short(row: &Row) -> bool {
    matches!(class_of(&row.expected), "legacy" | "mojibake")
        && !row.text.is_empty()
        && row.text.split_whitespace().count() <= 2
}

/// Runs ours (alone and per column) and chardetng over the corpus.
pub fn evaluate(rows: &[Row]) -> Report {
    let mut r = Report::default();
    let ctx = Context::default();
    for row in rows {
        let v = detect(&row.bytes, &ctx);
        let t = judge_verdict(row, &v);
        if t.correct == 0 {
            let why: Vec<String> = crate::detect::explain(&row.bytes)
                .iter()
                .take(3)
                .map(|(l, s)| format!("{l}:{s:.1}"))
                .collect();
            r.mistakes.push((
                row.expected.clone(),
                format!("{} {:.2} [{}]", v.label, v.confidence, why.join(" ")),
                row.text.clone(),
            ));
        }
        r.alone.entry(row.expected.clone()).or_default().add(&t);
        calibrate(&mut r.calibration_alone, row, &v, &t);
        if is_short(row) {
            r.short_alone.add(&t);
        }
        let g = chardetng_label(&row.bytes);
        r.cd_free
            .entry(row.expected.clone())
            .or_default()
            .add(&judge_chardetng(row, &g, false));
        r.cd_restricted
            .entry(row.expected.clone())
            .or_default()
            .add(&judge_chardetng(row, &g, true));
    }
    // Column mode: each (label, language) group is one column.
    let mut groups: BTreeMap<(String, String), Vec<&Row>> = BTreeMap::new();
    for row in rows {
        groups
            .entry((row.expected.clone(), row.lang.clone()))
            .or_default()
            .push(row);
    }
    for ((label, _), members) in &groups {
        let values: Vec<&[u8]> = members.iter().map(|m| m.bytes.as_slice()).collect();
        let mut prior = None;
        for (row, v) in members.iter().zip(detect_column(&values)) {
            let t = judge_verdict(row, &v);
            calibrate(&mut r.calibration_column, row, &v, &t);
            if t.correct == 0 {
                r.mistakes.push((
                    format!("column:{}", row.expected),
                    format!("{} {:.2}", v.label, v.confidence),
                    row.text.clone(),
                ));
                let prior = prior.get_or_insert_with(|| crate::detect::column_prior(&values));
                r.column_misses.push(column_miss(row, &v, prior));
            }
            r.column.entry(label.clone()).or_default().add(&t);
            if is_short(row) {
                r.short_column.add(&t);
            }
        }
        let mut d = chardetng::EncodingDetector::new();
        for m in members {
            d.feed(&m.bytes, false);
            d.feed(b"\n", false);
        }
        d.feed(b"", true);
        let guess = d.guess(None, true);
        for row in members {
            let g = map_chardetng(guess, &row.bytes);
            r.cd_column
                .entry(label.clone())
                .or_default()
                .add(&judge_chardetng(row, &g, false));
        }
    }
    // Mixed columns: the Russian rows of every legacy encoding interleaved.
    let mixed: Vec<&Row> = rows
        .iter()
        .filter(|x| x.lang == "ru" && class_of(&x.expected) == "legacy")
        .collect();
    let values: Vec<&[u8]> = mixed.iter().map(|m| m.bytes.as_slice()).collect();
    for (row, v) in mixed.iter().zip(detect_column(&values)) {
        r.mixed_column.add(&judge_verdict(row, &v));
    }
    r
}

/// Counts a decided non-ASCII value in a reliability table (ASCII is decided by structure
/// and always right: it would only dilute the buckets).
fn calibrate(r: &mut calibration::Reliability, row: &Row, v: &Verdict, t: &Tally) {
    if v.label != Label::Unknown && !row.bytes.is_ascii() {
        r.add(
            v.confidence,
            row.text.split_whitespace().count(),
            t.correct == 1,
        );
    }
}

/// Describes a value its column got wrong (diagnostics only: recomputes the prior).
fn column_miss(row: &Row, v: &Verdict, prior: &crate::detect::ColumnPrior) -> ColumnMiss {
    let mut detail = match prior.dominant() {
        Some((l, share)) => format!("column {l} {:.1}%;", share * 100.0),
        None => "column -;".to_owned(),
    };
    for (l, s) in crate::detect::explain(&row.bytes).iter().take(4) {
        let _ = write!(detail, " {l}:{s:.1}{:+.1}", prior.bonus(*l));
    }
    let _ = write!(detail, "; {}", v.reasons.join("; "));
    ColumnMiss {
        expected: row.expected.clone(),
        lang: row.lang.clone(),
        shape: row.shape.clone(),
        got: format!("{} {:.2}", v.label, v.confidence),
        rewrites: v.actionable(),
        text: row.text.clone(),
        detail,
    }
}

/// Sums tallies of the labels in one class.
pub fn class_total(m: &BTreeMap<String, Tally>, class: &str) -> Tally {
    let mut t = Tally::default();
    for (k, v) in m {
        if class_of(k) == class {
            t.add(v);
        }
    }
    t
}

impl Report {
    /// The table: one line per expected label, ours beside chardetng.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let cell = |t: &Tally| {
            format!(
                "{:5.1} {:4.1} {:5.1}",
                t.pct(t.correct),
                t.pct(t.wrong),
                t.pct(t.abstained)
            )
        };
        let _ = writeln!(
            s,
            "{:<18} {:>5} | {:^16} | {:^16} | {:^16} | {:^16} | {:^16}",
            "label",
            "n",
            "ours alone",
            "ours --column",
            "chardetng free",
            "chardetng restr.",
            "chardetng column"
        );
        let _ = writeln!(
            s,
            "{:<18} {:>5} | {:^16} | {:^16} | {:^16} | {:^16} | {:^16}",
            "",
            "",
            "ok% wrong% abst%",
            "ok% wrong% abst%",
            "ok% wrong% abst%",
            "ok% wrong% abst%",
            "ok% wrong% abst%"
        );
        let line = |s: &mut String,
                    name: &str,
                    a: &Tally,
                    c: &Tally,
                    f: &Tally,
                    rr: &Tally,
                    cc: &Tally| {
            let _ = writeln!(
                s,
                "{:<18} {:>5} | {} | {} | {} | {} | {}",
                name,
                a.n,
                cell(a),
                cell(c),
                cell(f),
                cell(rr),
                cell(cc)
            );
        };
        for (k, a) in &self.alone {
            let g = |m: &BTreeMap<String, Tally>| m.get(k).copied().unwrap_or_default();
            line(
                &mut s,
                k,
                a,
                &g(&self.column),
                &g(&self.cd_free),
                &g(&self.cd_restricted),
                &g(&self.cd_column),
            );
        }
        let _ = writeln!(s, "{}", "-".repeat(120));
        for class in ["legacy", "mojibake", "ascii/utf-8", "binary", "foreign"] {
            let g = |m: &BTreeMap<String, Tally>| class_total(m, class);
            line(
                &mut s,
                &format!("[{class}]"),
                &g(&self.alone),
                &g(&self.column),
                &g(&self.cd_free),
                &g(&self.cd_restricted),
                &g(&self.cd_column),
            );
        }
        let m = &self.mixed_column;
        let _ = writeln!(s, "mixed-encoding ru column ({} rows): {}", m.n, cell(m));
        let _ = writeln!(
            s,
            "one or two words, legacy+mojibake ({} values): alone {} | column {}",
            self.short_alone.n,
            cell(&self.short_alone),
            cell(&self.short_column)
        );
        let mut all_col = Tally::default();
        for t in self.column.values() {
            all_col.add(t);
        }
        let _ = writeln!(
            s,
            "all values per column ({}): {}",
            all_col.n,
            cell(&all_col)
        );
        let corrupt_alone: usize = self.alone.values().map(|t| t.corrupting).sum();
        let corrupt_col: usize = self.column.values().map(|t| t.corrupting).sum();
        let _ = writeln!(s, "corrupting answers (would rewrite wrongly): alone {corrupt_alone}, column {corrupt_col}");
        s
    }

    /// The issue's targets that this report misses (empty when all are met).
    pub fn target_failures(&self) -> Vec<String> {
        let mut f = Vec::new();
        let legacy = class_total(&self.alone, "legacy");
        if legacy.pct(legacy.correct) < 97.0 {
            f.push(format!(
                "legacy alone correct {:.2}% < 97%",
                legacy.pct(legacy.correct)
            ));
        }
        if legacy.pct(legacy.wrong) > 0.3 {
            f.push(format!(
                "legacy alone wrong {:.2}% > 0.3%",
                legacy.pct(legacy.wrong)
            ));
        }
        let moj = class_total(&self.alone, "mojibake");
        if moj.pct(moj.correct) < 99.0 {
            f.push(format!(
                "mojibake alone correct {:.2}% < 99%",
                moj.pct(moj.correct)
            ));
        }
        let au = class_total(&self.alone, "ascii/utf-8");
        if au.correct != au.n {
            f.push(format!(
                "ascii/utf-8 alone: {} of {} labelled otherwise",
                au.n - au.correct,
                au.n
            ));
        }
        // Binary rows labelled a legacy encoding or chain.
        let bin = self.alone.get("binary").copied().unwrap_or_default();
        if bin.pct(bin.corrupting) > 0.1 {
            f.push(format!(
                "binary labelled legacy {:.2}% > 0.1%",
                bin.pct(bin.corrupting)
            ));
        }
        let col = class_total(&self.column, "legacy");
        if col.pct(col.correct) < 99.5 {
            f.push(format!(
                "legacy column correct {:.2}% < 99.5%",
                col.pct(col.correct)
            ));
        }
        if col.pct(col.wrong) > 0.05 {
            f.push(format!(
                "legacy column wrong {:.2}% > 0.05%",
                col.pct(col.wrong)
            ));
        }
        f
    }
}

impl Report {
    /// The held-out set's targets (issue 16) that this report misses.
    pub fn heldout_failures(&self) -> Vec<String> {
        let mut f = Vec::new();
        let mut need = |what: &str, got: f64, ok: bool, bound: &str| {
            if !ok {
                f.push(format!("{what} {got:.2}% (target {bound})"));
            }
        };
        let legacy = class_total(&self.alone, "legacy");
        let moj = class_total(&self.alone, "mojibake");
        let short = self.short_alone;
        need(
            "legacy alone right",
            legacy.pct(legacy.correct),
            legacy.pct(legacy.correct) >= 98.0,
            ">= 98%",
        );
        need(
            "legacy alone wrong",
            legacy.pct(legacy.wrong),
            legacy.pct(legacy.wrong) <= 0.1,
            "<= 0.1%",
        );
        need(
            "one or two words alone right",
            short.pct(short.correct),
            short.pct(short.correct) >= 92.0,
            ">= 92%",
        );
        need(
            "mojibake alone right",
            moj.pct(moj.correct),
            moj.pct(moj.correct) >= 99.5,
            ">= 99.5%",
        );
        let left_alone = class_total(&self.alone, "ascii/utf-8");
        need(
            "ascii/utf-8 alone rewritten",
            left_alone.pct(left_alone.corrupting),
            left_alone.corrupting == 0,
            "none",
        );
        f.extend(self.column_failures());
        f
    }

    /// Grouped as columns: at least 99.9% right and no wrong rewrite (both sets).
    pub fn column_failures(&self) -> Vec<String> {
        let mut all = Tally::default();
        for t in self.column.values() {
            all.add(t);
        }
        let mut f = Vec::new();
        if all.pct(all.correct) < 99.9 {
            f.push(format!(
                "per column right {:.2}% (target >= 99.9%)",
                all.pct(all.correct)
            ));
        }
        if all.corrupting > 0 {
            f.push(format!(
                "per column {} wrong rewrites (target none)",
                all.corrupting
            ));
        }
        f
    }
}

/// Labels of a column's verdicts, for quick checks.
pub fn labels(verdicts: &[Verdict]) -> Vec<Label> {
    verdicts.iter().map(|v| v.label).collect()
}

//! The decision over a value's scored readings: posteriors under the column's prior, the
//! threshold, and the rules that decide short values (a clear lead, the column's own
//! encoding); the reason each verdict gives.

use super::*;

/// True when a reading's own evidence is that of real text, per letter.
pub(crate) fn looks_like_text(c: &Cand) -> bool {
    c.score >= MIN_EVIDENCE && c.score / c.text.non_ascii_letters.max(1) as f32 >= MIN_PER_LETTER
}

/// Probabilities of the candidates (same order), against the null hypothesis.
pub(crate) fn posteriors(cands: &[Cand], prior: Option<&ColumnPrior>, out: &mut Vec<f32>) {
    out.clear();
    let adj = |c: &Cand| c.score + prior.map_or(0.0, |p| p.bonus(c.label));
    let max = cands.iter().map(adj).fold(NULL_SCORE, f32::max);
    let mut sum = (NULL_SCORE - max).exp();
    for c in cands {
        let e = (adj(c) - max).exp();
        out.push(e);
        sum += e;
    }
    for p in out.iter_mut() {
        *p /= sum;
    }
}

/// Turns an analysis into a verdict under a column prior and threshold.
pub(crate) fn decide(bytes: &[u8], analysis: Analysis, ctx: &Context) -> Verdict {
    let v = decide_scored(bytes, analysis, ctx);
    if v.label == Label::Utf8 {
        // Never kept as UTF-8 in silence when a lone letter is also a legacy word.
        return lookalike::lone_letter_word(bytes, ctx).unwrap_or(v);
    }
    v
}

/// [`decide`] before its last check on values kept as UTF-8.
fn decide_scored(bytes: &[u8], analysis: Analysis, ctx: &Context) -> Verdict {
    let (cands, utf8) = match analysis {
        Analysis::Fixed(v) if v.label == Label::Utf8 && ctx.prior.is_some() => {
            return lookalike::in_legacy_column(bytes, ctx).unwrap_or(v)
        }
        Analysis::Fixed(v) => return v,
        Analysis::Scored { cands, utf8 } => (cands, utf8),
    };
    let mut probs = Vec::with_capacity(cands.len());
    posteriors(&cands, ctx.prior, &mut probs);
    let (best, runner) = rank(&cands, &probs);
    let (label, conf) = (cands[best].label, probs[best]);
    let mut reasons = best_reasons(&cands[best], ctx);
    if label == Label::Utf8 {
        return utf8_reads_best(bytes, &cands, best, conf, runner, reasons, ctx);
    }
    let against = against_column(&cands[best], utf8, ctx);
    let doubt = present_rival(&cands, &cands[best], ctx);
    if conf >= ctx.threshold && clears_the_bars(&cands, best, ctx) && !against && !doubt {
        if let Some(decoded) = label.repair(bytes) {
            return Verdict {
                label,
                confidence: conf,
                decoded: Some(decoded),
                runner_up: runner,
                reasons,
            };
        }
        reasons.push(Cow::Borrowed("repair does not round-trip"));
    } else {
        reasons.push(Cow::Owned(format!(
            "confidence {} below threshold {}",
            Dec(conf, 2),
            Dec(ctx.threshold, 2)
        )));
    }
    if !against {
        if let Some(v) = clear_lead(bytes, &cands, best) {
            return v;
        }
    }
    if doubt {
        reasons.push(Cow::Borrowed(
            "another table the column holds reads it as well-formed text too",
        ));
    }
    if let Some(v) = column_decides(bytes, &cands, ctx) {
        return v;
    }
    if utf8 {
        return undecided_utf8(bytes, &cands, &probs, (label, conf), reasons, ctx);
    }
    binary_or_unknown(bytes, &cands[best], conf, Some((label, conf)), reasons)
}

/// The most probable reading (its index) and the runner-up's label and probability.
fn rank(cands: &[Cand], probs: &[f32]) -> (usize, Option<(Label, f32)>) {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]));
    let best = order[0];
    let runner = order.get(1).map(|&i| (cands[i].label, probs[i]));
    (best, runner)
}

/// The first reasons of a scored verdict: the best reading and whether a prior applied.
fn best_reasons(c: &Cand, ctx: &Context) -> Vec<Cow<'static, str>> {
    let mut reasons: Vec<Cow<'static, str>> = Vec::with_capacity(3);
    let t = &c.text;
    reasons.push(Cow::Owned(format!(
        "{} reads best (score {}{}{})",
        c.label,
        Dec(c.score, 1),
        if t.cyr_lang.is_some() { ", " } else { "" },
        t.cyr_lang.map_or("", |l| model::CYR_LANGS[l as usize]),
    )));
    if ctx.prior.is_some() {
        reasons.push(Cow::Borrowed("column prior applied"));
    }
    reasons
}

/// The verdict on a value whose UTF-8 reading reads best.
fn utf8_reads_best(
    bytes: &[u8],
    cands: &[Cand],
    best: usize,
    conf: f32,
    runner: Option<(Label, f32)>,
    mut reasons: Vec<Cow<'static, str>>,
    ctx: &Context,
) -> Verdict {
    // Valid UTF-8 whose UTF-8 reading is itself broken text (a symbol glued to a letter,
    // odd case: "C¸diz", "PÝsek", TCVN3 "Cádiz" and "Písek" read as latin1) in a column
    // that nearly all reads one other way: the column decides it as any other value.
    // Genuine text ("Cádiz" as stored) reads well-formed and is never taken.
    if ctx.prior.is_some() && reads_broken(&cands[best].text, bytes) {
        if let Some(v) = column_decides(bytes, cands, ctx) {
            return v;
        }
    }
    if ctx.prior.is_some() {
        if let Some(v) = lookalike::in_column(bytes, cands, ctx) {
            return v;
        }
    }
    // Rare characters in a column whose rows are legacy text: likely a legacy value
    // that is valid UTF-8 by chance, which no reading decides. List it.
    let legacy_column = ctx
        .prior
        .and_then(|p| p.dominant())
        .is_some_and(|(l, share)| l.needs_recode() && share >= UNIFORM_SHARE);
    if legacy_column
        && bytes.len() <= SHORT_UTF8
        && std::str::from_utf8(bytes).is_ok_and(|s| s.chars().any(chars::rare_in_text))
    {
        reasons.push(Cow::Borrowed("rare characters as UTF-8 in a legacy column"));
        return Verdict {
            label: Label::Unknown,
            confidence: 1.0 - conf,
            decoded: None,
            runner_up: runner,
            reasons,
        };
    }
    let decoded = std::str::from_utf8(bytes).ok().map(str::to_owned);
    Verdict {
        label: Label::Utf8,
        confidence: conf.max(0.5),
        decoded,
        runner_up: runner,
        reasons,
    }
}

/// Whether a column that nearly all reads another way holds this rewriting reading back.
fn against_column(c: &Cand, utf8: bool, ctx: &Context) -> bool {
    // A column that nearly all reads one way lets another rewriting reading through only on
    // strong evidence of the value's own: "^[нН]" in a cp1251 column is not KOI8-R. In a
    // UTF-8 column, valid UTF-8 is never re-read as a legacy table, however well it reads.
    let label = c.label;
    ctx.prior
        .and_then(|p| p.dominant())
        .is_some_and(|(l, share)| {
            share >= UNIFORM_SHARE
                && !column::same_family(l, label)
                && (c.score < AGAINST_COLUMN || (l == Label::Utf8 && utf8 && label.is_legacy()))
        })
}

/// True when a column holds rows of another table (at least [`PRESENT_SHARE`] of them) and
/// that table reads the value as well-formed text with its own evidence no more than
/// [`PRESENT_MARGIN`] behind `c`'s: KOI8-R "не" in a cp1251 column with a tenth of KOI8-R
/// rows reads "ОЕ" through cp1251. The column's share is no evidence between two tables it
/// holds both of: only the value's own can tell them, and where it does not the value is
/// listed (issue 42: such values had been rewritten as the majority's reading).
pub(super) fn present_rival(cands: &[Cand], c: &Cand, ctx: &Context) -> bool {
    let Some(prior) = ctx.prior else {
        return false;
    };
    // KOI8-R and KOI8-U count as one table: a KOI8-U row without its eight letters is read
    // as KOI8-R.
    let family_share = |l: Label| match l {
        Label::Legacy(Encoding::Koi8R | Encoding::Koi8U) => {
            prior.share(Label::Legacy(Encoding::Koi8R))
                + prior.share(Label::Legacy(Encoding::Koi8U))
        }
        _ => prior.share(l),
    };
    // Upper-case abbreviations ("ГБ", "ГФМТ") score far below a wrong table's lower-case
    // reading of their bytes ("зв", "зжнф"): for short values the margin is wider.
    let margin = if c.text.word_letters <= UNIFORM_SHORT_LETTERS {
        PRESENT_MARGIN_SHORT
    } else {
        PRESENT_MARGIN
    };
    cands.iter().any(|o| {
        o.label.needs_recode()
            && !column::same_family(o.label, c.label)
            && o.text.odd_symbols == 0
            && o.text.mixed_words == 0
            && o.text.non_ascii_letters > 0
            && o.score >= c.score - margin
            && family_share(o.label) >= PRESENT_SHARE
    })
}

/// Whether the best reading's own evidence and lead are enough to decide the value.
fn clears_the_bars(cands: &[Cand], best: usize, ctx: &Context) -> bool {
    let label = cands[best].label;
    let evidence = cands[best].score + ctx.prior.map_or(0.0, |p| p.bonus(label));
    // The per-letter bar is on the value's own evidence: a column prior may
    // settle a close call, never make text of something that is not.
    // A column that is mostly this label (bonus ≥ STRONG_PRIOR) vouches for
    // names and rare words our models know poorly, down to RELAXED_PER_LETTER.
    let vouched = ctx.prior.is_some_and(|p| p.bonus(label) >= STRONG_PRIOR)
        && cands[best].score / cands[best].text.non_ascii_letters.max(1) as f32
            >= RELAXED_PER_LETTER;
    // One to three letters alone ("МБ", "є") read as text under several tables: only a
    // clear lead over every other reading decides them. The letters counted are those of the
    // words holding a non-ASCII letter: Vietnamese "Tiếng Việt" has two non-ASCII letters,
    // but its syllables' ASCII letters are evidence too.
    // Under a column's prior the lead counts the prior's bonuses: a column that reads one
    // way lends its short values the lead, one that says nothing (a column of quantities,
    // "11 л", cp1251 litres or TCVN3 "ở") lends none.
    let bonus = |l: Label| ctx.prior.map_or(0.0, |p| p.bonus(l));
    let short_close = cands[best].text.word_letters <= 3
        && cands.iter().enumerate().any(|(i, o)| {
            i != best && cands[best].score + bonus(label) - o.score - bonus(o.label) < SHORT_LEAD
        });
    evidence >= MIN_EVIDENCE && (looks_like_text(&cands[best]) || vouched) && !short_close
}

/// The verdict on valid UTF-8 that no reading decided, `best` the best (label, probability).
fn undecided_utf8(
    bytes: &[u8],
    cands: &[Cand],
    probs: &[f32],
    best: (Label, f32),
    reasons: Vec<Cow<'static, str>>,
    ctx: &Context,
) -> Verdict {
    let (label, conf) = best;
    let runner_up = Some(best);
    // Valid UTF-8 we dare not un-mangle stays as it is: that is safe.
    let p_utf8 = cands
        .iter()
        .zip(probs)
        .find(|(c, _)| c.label == Label::Utf8)
        .map_or(0.0, |(_, p)| *p);
    // A legacy reading beat UTF-8 that reads as rare characters: the bytes are
    // likely legacy text; list them rather than call them UTF-8.
    let rare_utf8 = std::str::from_utf8(bytes)
        .is_ok_and(|s| bytes.len() <= SHORT_UTF8 && s.chars().any(chars::rare_in_text));
    // In a column whose rows are UTF-8, valid UTF-8 is UTF-8 unless its own evidence
    // says otherwise strongly (see `against_column`).
    let utf8_column = ctx
        .prior
        .and_then(|p| p.dominant())
        .is_some_and(|(l, share)| l == Label::Utf8 && share >= UNIFORM_SHARE);
    // A chain that beats the UTF-8 reading by the threshold's own odds, pair against pair,
    // would be decided against it were it the only rival: it is held back only by another
    // chain sharing its mass (cp1251 and KOI8-R read "не" alike) or by the short-value lead.
    // Such a value is listed, never kept as UTF-8 in silence.
    let beaten = label.needs_recode() && chain_beats_utf8(cands, ctx.threshold);
    if utf8_column || (conf < SUSPECT_CHAIN && !(rare_utf8 && label.is_legacy()) && !beaten) {
        if let Some(v) = lookalike::in_column(bytes, cands, ctx) {
            return v;
        }
        let decoded = std::str::from_utf8(bytes).ok().map(str::to_owned);
        return Verdict {
            label: Label::Utf8,
            confidence: p_utf8,
            decoded,
            runner_up,
            reasons,
        };
    }
    Verdict {
        label: Label::Unknown,
        confidence: 1.0 - conf,
        decoded: None,
        runner_up,
        reasons,
    }
}

/// True when the best mojibake chain's score beats the UTF-8 reading's (head start included)
/// by at least the log-odds of `threshold`: taken as a pair, the chain is as sure as a rewrite
/// needs. Held to the "none of these" hypothesis too, it kept 0.4% of the held-out set's
/// mojibake as UTF-8 in silence ("Сэлэнгэ", "КиБ": both readings score low, UTF-8 far lower).
fn chain_beats_utf8(cands: &[Cand], threshold: f32) -> bool {
    let Some(utf8) = cands.iter().find(|c| c.label == Label::Utf8) else {
        return false;
    };
    let keep = utf8.score;
    let chain = cands
        .iter()
        .filter(|c| matches!(c.label, Label::Mojibake { .. }))
        .map(|c| c.score)
        .fold(f32::MIN, f32::max);
    let t = threshold.clamp(0.5, 0.999);
    chain - keep >= (t / (1.0 - t)).ln()
}

/// The verdict on bytes that are not UTF-8 and no reading decided: binary or unknown.
fn binary_or_unknown(
    bytes: &[u8],
    best: &Cand,
    conf: f32,
    runner_up: Option<(Label, f32)>,
    mut reasons: Vec<Cow<'static, str>>,
) -> Verdict {
    // Not UTF-8 and no reading believable: blob or undecidable text.
    // Text in an encoding we do not handle (Western, Greek, ...) or in a
    // language we have no model for also reads badly, but it is mostly
    // letters, or nearly all printable ASCII and letters; random bytes are
    // letters about half the time and printable-or-letter about 60%.
    let letters = bytes.iter().filter(|b| b.is_ascii_alphabetic()).count()
        + best.text.non_ascii_letters as usize;
    let printable = bytes.iter().filter(|b| (0x20..0x7F).contains(*b)).count();
    let textish = printable + best.text.non_ascii_letters as usize;
    let blob = letters * 10 < bytes.len() * 7 && textish * 100 < bytes.len() * 85;
    if best.score < -6.0 && bytes.len() >= 8 && blob {
        reasons.push(Cow::Borrowed("no reading looks like text"));
        return Verdict {
            label: Label::Binary,
            confidence: 0.9,
            decoded: None,
            runner_up,
            reasons,
        };
    }
    Verdict {
        label: Label::Unknown,
        confidence: 1.0 - conf,
        decoded: None,
        runner_up,
        reasons,
    }
}

/// A number shown with this many decimals, rounded by integer arithmetic: `{:.1}` on a
/// float takes the exact (bignum) path often enough that formatting every verdict's reason
/// had cost a twentieth of detection time.
pub(super) struct Dec(pub(super) f32, pub(super) u32);

impl std::fmt::Display for Dec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scale = 10u64.pow(self.1);
        let v = (f64::from(self.0) * scale as f64).round() as i64;
        // Digits written right to left into a small buffer and handed over at once: the
        // formatter's integer and width machinery had been a fiftieth of detection time.
        let mut buf = [0u8; 40];
        let mut i = buf.len();
        let mut a = v.unsigned_abs();
        for _ in 0..self.1 {
            i -= 1;
            buf[i] = b'0' + (a % 10) as u8;
            a /= 10;
        }
        if self.1 > 0 {
            i -= 1;
            buf[i] = b'.';
        }
        loop {
            i -= 1;
            buf[i] = b'0' + (a % 10) as u8;
            a /= 10;
            if a == 0 {
                break;
            }
        }
        if v < 0 {
            i -= 1;
            buf[i] = b'-';
        }
        f.write_str(std::str::from_utf8(&buf[i..]).map_err(|_| std::fmt::Error)?)
    }
}

/// True when the UTF-8 reading `t` of valid UTF-8 `bytes` is broken text: a word in odd case
/// ("PÝsek"), or a symbol odd in text glued to a letter ("C¸diz"). Genuine text almost never
/// is.
fn reads_broken(t: &TextScore, bytes: &[u8]) -> bool {
    t.odd_case_words > 0 || std::str::from_utf8(bytes).is_ok_and(symbols::glued_odd_symbol)
}

/// True when a reading is well-formed text: no odd case, symbol or script switch in a word.
pub(super) fn well_formed(c: &Cand) -> bool {
    c.text.odd_case_words == 0 && c.text.odd_symbols == 0 && c.text.mixed_words == 0
}

/// The best reading wins by a clear lead over every other and is well-formed text: rare
/// names score low under every model, yet the wrong tables score far lower.
fn clear_lead(bytes: &[u8], cands: &[Cand], best: usize) -> Option<Verdict> {
    let c = &cands[best];
    if !c.label.needs_recode() || !well_formed(c) {
        return None;
    }
    let letters = c.text.non_ascii_letters.max(1) as f32;
    if c.score / letters < LEAD_PER_LETTER {
        return None;
    }
    let second = cands
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != best)
        .map(|(_, o)| o.score)
        .fold(NULL_SCORE - CLEAR_LEAD, f32::max);
    if c.score - second < CLEAR_LEAD {
        return None;
    }
    let decoded = c.label.repair(bytes)?;
    Some(Verdict {
        label: c.label,
        confidence: DEFAULT_THRESHOLD,
        decoded: Some(decoded),
        runner_up: None,
        reasons: vec![Cow::Owned(format!(
            "{} well-formed and {:.0} nats ahead of every other reading",
            c.label,
            c.score - second
        ))],
    })
}

/// A column whose rows nearly all read one way decides a value whose reading that way is
/// well-formed text, unless another believable reading is clearly better (class 1 of
/// issue 16). Only a lossless repair is ever returned.
pub(super) fn column_decides(bytes: &[u8], cands: &[Cand], ctx: &Context) -> Option<Verdict> {
    let (label, share) = ctx.prior?.dominant()?;
    if share < UNIFORM_SHARE || !label.needs_recode() {
        return None;
    }
    // Within the KOI8 family the value's own bytes choose: a KOI8-U letter is box drawing
    // in KOI8-R, and such a reading is not clean.
    let c = cands
        .iter()
        .filter(|c| column::same_family(c.label, label))
        .max_by(|a, b| a.score.total_cmp(&b.score))?;
    let label = c.label;
    let letters = c.text.non_ascii_letters.max(1) as f32;
    // Odd case is allowed ("МакДональд", "КиБ"): its toll is in the score, and a wrong
    // table's flipped case ("пРИВЕТ") costs far more than the floor allows.
    // A reading with no letter of its own ("Alg·", a Western "Algú" through `cp866>latin1`)
    // is no evidence of the column's encoding, however clean.
    let clean = c.text.odd_symbols == 0 && c.text.mixed_words == 0 && c.text.non_ascii_letters > 0;
    let tcvn3 = matches!(
        label,
        Label::Legacy(Encoding::Tcvn3)
            | Label::Mojibake {
                real: Encoding::Tcvn3,
                ..
            }
    );
    let utf8_chain = matches!(
        label,
        Label::Mojibake {
            real: Encoding::Utf8,
            ..
        }
    );
    // A short value of Cyrillic letters alone: stored as legacy bytes, or as valid UTF-8 that
    // does not read as text itself (a genuine Icelandic "ÞÚ" does, and keeps the floor).
    let short = c.text.word_letters <= UNIFORM_SHORT_LETTERS
        && !bytes.iter().any(u8::is_ascii_alphabetic)
        && (label.is_legacy()
            || cands
                .iter()
                .find(|u| u.label == Label::Utf8)
                .is_some_and(|u| reads_broken(&u.text, bytes) || u.text.mixed_words > 0));
    let floor = if tcvn3 {
        UNIFORM_PER_LETTER_TCVN3
    } else if utf8_chain {
        UNIFORM_PER_LETTER_UTF8_CHAIN
    } else if short {
        UNIFORM_PER_LETTER_SHORT
    } else {
        UNIFORM_PER_LETTER
    };
    // In a `tcvn3>latin1` column a foreign name is judged without its toll ("Hérault"): the
    // genuine UTF-8 it might be instead reads far better as itself, and loses on the margin.
    // Not in a TCVN3 column: there the alternative is Western legacy text, which through
    // TCVN3 reads as foreign names too ("Abordóri"), and the toll holds it back.
    let own = if tcvn3 && !label.is_legacy() {
        c.score + text::FOREIGN_IN_VI * c.text.foreign_words as f32
    } else {
        c.score
    };
    if !clean || own / letters < floor {
        return None;
    }
    let prior = ctx.prior?;
    let rival = cands
        .iter()
        .filter(|o| {
            !column::same_family(o.label, label) && (looks_like_text(o) || o.label == Label::Utf8)
        })
        .map(|o| o.score + prior.bonus(o.label))
        .fold(f32::MIN, f32::max);
    if rival - (c.score + prior.bonus(label)) > UNIFORM_MARGIN || present_rival(cands, c, ctx) {
        return None;
    }
    let decoded = label.repair(bytes)?;
    Some(Verdict {
        label,
        confidence: share.min(0.99),
        decoded: Some(decoded),
        runner_up: None,
        reasons: vec![Cow::Owned(format!(
            "the column reads as {label} ({:.0}% of rows) and so does this value, well-formed",
            share * 100.0
        ))],
    })
}

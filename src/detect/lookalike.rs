//! Valid UTF-8 in a legacy column: legacy text whose bytes happen to be well-formed UTF-8.
//!
//! cp1251 "Ні." is `CD B3 2E`, also UTF-8 for "ͳ." (archaic Greek); ISO-8859-5 "ЧАША" is
//! "ǰȰ"; KOI8-U "ні" is "Φ". Alone such bytes are rightly left as UTF-8: nothing says
//! otherwise. In a column whose other rows are one legacy table, their UTF-8 reading has to
//! earn its place as text like any other reading: letters of a script the column's text is
//! in, or text our models rate as such. When it does not, the column's reading decides the
//! value (always through a lossless round trip), or the value is listed as undecided; it is
//! never kept as UTF-8 in silence.

use super::decide::{column_decides, well_formed};
use super::*;

/// Longest valid UTF-8 (bytes) checked against its legacy column. On the look-alike stress
/// set (`scripts/gen_stress.py lookalike`) the longest look-alike among the 20,000 most
/// frequent words of five languages is 8 bytes (ISO-8859-5 upper case, with its full stop);
/// phrases of such words run longer, and the check costs nothing outside legacy columns.
const LOOKALIKE_BYTES: usize = 64;

/// The answer for valid UTF-8 `bytes` in a column that nearly all reads as one legacy table,
/// when its UTF-8 reading is not text of the column's script: the column's reading when it
/// decides the value, else `unknown` when that reading is clean text. `None` leaves the
/// value's own verdict standing (a column of another kind, real text written as UTF-8, or a
/// legacy reading that is itself no text).
pub(crate) fn in_legacy_column(bytes: &[u8], ctx: &Context) -> Option<Verdict> {
    let (label, share) = ctx.prior?.dominant()?;
    if share < UNIFORM_SHARE || !label.is_legacy() || bytes.len() > LOOKALIKE_BYTES {
        return None;
    }
    let s = std::str::from_utf8(bytes).ok()?;
    if s.is_ascii() {
        return None;
    }
    let k = Script::count(s, label);
    // Text of the column's script written as UTF-8 (an application that began to write
    // UTF-8 one day) stays, but one or two letters are no evidence either way: KOI8-U "пі"
    // is UTF-8 "Ц".
    if k.foreign == 0 && k.latin == 0 && k.ours > SHORT_LETTERS {
        return None;
    }
    let mut cands = Vec::with_capacity(7);
    legacy_candidates(bytes, 0.0, Label::Legacy, &mut cands);
    let own = cands
        .iter()
        .filter(|c| column::same_family(c.label, label))
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .copied()?;
    // The column's reading must be letters where the UTF-8 reading has its multi-byte
    // characters: "Ні", "ЧАША", not "Г±" (a genuine "ñ").
    let letters_only = own.label.repair(bytes).is_some_and(|t| {
        t.chars()
            .filter(|c| !c.is_ascii())
            .all(chars::is_alphabetic)
    });
    if !letters_only || own.text.odd_symbols > 0 || own.text.mixed_words > 0 {
        return None;
    }
    let text = text::score_chars(s.chars());
    let utf8 = Cand {
        label: Label::Utf8,
        score: text.score + UTF8_BONUS
            - RARE_UTF8 * k.rare as f32
            - FOREIGN_SCRIPT * k.foreign.saturating_sub(k.rare) as f32,
        text,
    };
    // A reading with no letter of a script our models know (letters of another script,
    // symbols, code points no text uses) is no text the column holds: the column's reading
    // may decide it.
    if k.latin == 0 && (k.ours == 0 || k.foreign > 0) {
        cands.push(utf8);
        if let Some(mut v) = column_decides(bytes, &cands, ctx) {
            v.reasons.push(Cow::Borrowed(
                "valid UTF-8 by chance: its UTF-8 reading is no text of the column's script",
            ));
            return Some(v);
        }
    }
    // Real text the models know (a Western name, Vietnamese) written as UTF-8 stays; one
    // or two letters of it are no evidence.
    let plausible = k.rare == 0
        && well_formed(&utf8)
        && utf8.text.word_letters > SHORT_LETTERS
        && looks_like_text(&utf8);
    if plausible {
        return None;
    }
    Some(Verdict {
        label: Label::Unknown,
        confidence: 0.0,
        decoded: None,
        runner_up: Some((own.label, share)),
        reasons: vec![Cow::Owned(format!(
            "valid UTF-8 that may be {} text by chance, in a column that reads as {label} ({:.0}% of rows): \
             neither reading is sure",
            own.label,
            share * 100.0,
        ))],
    })
}

/// Valid UTF-8 about to be kept as UTF-8 under a column's prior: [`in_legacy_column`], else
/// [`doubt_in_column`].
pub(crate) fn in_column(bytes: &[u8], cands: &[Cand], ctx: &Context) -> Option<Verdict> {
    in_legacy_column(bytes, ctx).or_else(|| doubt_in_column(bytes, cands, ctx))
}

/// Valid UTF-8 about to be kept as UTF-8 in a column that nearly all reads as one mojibake
/// chain, when the chain reads it as clean text too: `unknown`, listed, rather than kept in
/// silence. Both readings are text ("Potosí" as stored, or the TCVN3 the column holds read
/// as latin1), and only a DBA can tell; a UTF-8 reading that is itself real text of some
/// length while the chain's reading is not clean stays UTF-8.
pub(crate) fn doubt_in_column(bytes: &[u8], cands: &[Cand], ctx: &Context) -> Option<Verdict> {
    let (label, share) = ctx.prior?.dominant()?;
    if share < UNIFORM_SHARE || !matches!(label, Label::Mojibake { .. }) {
        return None;
    }
    let own = cands
        .iter()
        .filter(|c| column::same_family(c.label, label))
        .max_by(|a, b| a.score.total_cmp(&b.score))?;
    // Letters with no odd symbol: a word mixing scripts ("ДдYy", a keyboard layout) is
    // enough for doubt, though never for a rewrite.
    let letters = own.text.odd_symbols == 0 && own.text.non_ascii_letters > 0;
    if !letters || own.label.repair(bytes).is_none() {
        return None;
    }
    Some(Verdict {
        label: Label::Unknown,
        confidence: 0.0,
        decoded: None,
        runner_up: Some((own.label, share)),
        reasons: vec![Cow::Owned(format!(
            "valid UTF-8 that also reads as clean {} text, in a column that reads as {label} ({:.0}% of rows): \
             neither reading is sure",
            own.label,
            share * 100.0,
        ))],
    })
}

/// Legacy tables whose reading of a lone letter may be a word (`lone_letter_word`).
const WORD_TABLES: [Encoding; 5] = [
    Encoding::Windows1251,
    Encoding::Koi8R,
    Encoding::Koi8U,
    Encoding::Ibm866,
    Encoding::Iso8859_5,
];

/// Valid UTF-8 about to be kept as UTF-8 outside a UTF-8 column, whose UTF-8 reading is one
/// letter of Latin Extended-A or -B standing alone ("Ũ", "ţ.") while a legacy table reads the
/// same bytes as a frequent Cyrillic word of one to four letters in regular case (cp1251 "ЕЁ",
/// KOI8-R "её"): `unknown`, listed. Two readings, one a word and the other a letter no
/// Western text holds alone: nothing in the value tells them, and keeping it as UTF-8 was
/// silently wrong for the legacy word. A lone Latin-1 letter ("ó", "ü"), Greek or Cyrillic
/// letter stays: those stand alone in honest text (initials, units, grades), and in a legacy
/// column [`in_legacy_column`] weighs them first.
pub(crate) fn lone_letter_word(bytes: &[u8], ctx: &Context) -> Option<Verdict> {
    if bytes.len() > 8 {
        return None;
    }
    let utf8_column = ctx
        .prior
        .and_then(|p| p.dominant())
        .is_some_and(|(l, share)| l == Label::Utf8 && share >= UNIFORM_SHARE);
    if utf8_column {
        return None;
    }
    let s = std::str::from_utf8(bytes).ok()?;
    // One non-ASCII letter; the rest ASCII punctuation or spaces (no ASCII letter or digit).
    let mut letter = None;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || (!c.is_ascii() && letter.replace(c).is_some()) {
            return None;
        }
    }
    let c = letter?;
    if !(0x100..=0x24F).contains(&(c as u32)) || !chars::is_alphabetic(c) {
        return None;
    }
    let word = WORD_TABLES.into_iter().find_map(|enc| {
        let t = crate::codec::decode(enc, bytes).ok()?;
        frequent_short_word(&t).then_some((enc, t))
    })?;
    let (enc, text) = word;
    Some(Verdict {
        label: Label::Unknown,
        confidence: 0.0,
        decoded: None,
        runner_up: Some((Label::Legacy(enc), 0.5)),
        reasons: vec![Cow::Owned(format!(
            "valid UTF-8 of one letter alone, \"{s}\", that {} reads as the word \"{}\": \
             neither reading is sure",
            Label::Legacy(enc),
            text.trim_matches(|c: char| c.is_ascii()),
        ))],
    })
}

/// True when `t`'s one Cyrillic word (ASCII punctuation around it) has one to four letters in
/// lower, Title or UPPER case and is among the frequent short words (`model::cyr_short`).
fn frequent_short_word(t: &str) -> bool {
    let w = t.trim_matches(|c: char| c.is_ascii_punctuation() || c == ' ');
    let n = w.chars().count();
    if !(1..=4).contains(&n) || w.chars().any(|c| model::cyr_index(c).is_none()) {
        return false;
    }
    let upper = w.chars().filter(|&c| chars::is_uppercase(c)).count();
    let first_upper = w.chars().next().is_some_and(chars::is_uppercase);
    if !(upper == 0 || upper == n || (upper == 1 && first_upper)) {
        return false;
    }
    let hash = w
        .chars()
        .filter_map(model::cyr_index)
        .fold(model::WORD_HASH0, model::word_hash);
    model::cyr_short(hash)
}

/// Letters up to which a UTF-8 reading is no evidence of its own.
const SHORT_LETTERS: u32 = 2;
/// Toll (nats) on the UTF-8 reading per letter or symbol outside the scripts our models know
/// (and not already tolled as rare): Gujarati "ય" (CP866 "ркп") in a Russian column.
const FOREIGN_SCRIPT: f32 = 3.0;

/// What the non-ASCII characters of a UTF-8 reading are, against its column.
#[derive(Debug, Clone, Copy, Default)]
struct Script {
    /// Letters of the script the column's encoding writes (Cyrillic, or Vietnamese for TCVN3).
    ours: u32,
    /// Latin letters the models score (Latin-1, Latin Extended-A, Vietnamese) and Latin-1's
    /// signs.
    latin: u32,
    /// Letters of other scripts, characters rare in text, code points past the BMP.
    foreign: u32,
    /// ... of which rare in text (tolled already as such).
    rare: u32,
}

impl Script {
    fn count(s: &str, column: Label) -> Self {
        let vietnamese = matches!(column, Label::Legacy(Encoding::Tcvn3));
        let mut k = Script::default();
        for c in s.chars().filter(|c| !c.is_ascii()) {
            let o = c as u32;
            let rare = chars::rare_in_text(c);
            k.rare += u32::from(rare);
            let cyrillic = symbols::kind(c) == symbols::Kind::Cyr;
            // The letters the Latin and Vietnamese models score; the rest of Latin Extended-B
            // ("ǰȰ", ISO-8859-5 "ЧАША") is no text of ours.
            let latin = matches!(o, 0xC0..=0x17F | 0x1A0 | 0x1A1 | 0x1AF | 0x1B0 | 0x1EA0..=0x1EF9)
                && o != 0xD7
                && o != 0xF7;
            if (cyrillic && !vietnamese) || (latin && vietnamese) {
                k.ours += 1;
            } else if latin || (0xA0..=0xBF).contains(&o) {
                // Latin-1's signs count with its letters: a genuine "º" or "°" stays.
                k.latin += 1;
            } else if rare || o > 0xFFFF || chars::is_alphabetic(c) {
                k.foreign += 1;
            }
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verdict for `value` (encoded by `enc`) last in a column of 300 rows of `rows` so encoded.
    fn in_column(enc: &'static encoding_rs::Encoding, rows: &[&str], value: &[u8]) -> Verdict {
        let mut all: Vec<Vec<u8>> = rows
            .iter()
            .cycle()
            .take(300)
            .map(|s| enc.encode(s).0.into_owned())
            .collect();
        all.push(value.to_vec());
        let refs: Vec<&[u8]> = all.iter().map(|r| r.as_slice()).collect();
        detect_column(&refs).pop().unwrap()
    }

    const UK: &[&str] = &[
        "Київ",
        "Харків",
        "Одеса",
        "Дніпро",
        "Львів",
        "Запоріжжя",
        "Кривий Ріг",
        "Миколаїв",
        "Вінниця",
        "Херсон",
    ];

    #[test]
    fn cp1251_that_is_valid_utf8_follows_its_column() {
        // "Ні." is CD B3 2E: UTF-8 for "ͳ." (U+0373, archaic Greek).
        let value = encoding_rs::WINDOWS_1251.encode("Ні.").0;
        assert!(std::str::from_utf8(&value).is_ok());
        let v = in_column(encoding_rs::WINDOWS_1251, UK, &value);
        assert_eq!(v.label.to_string(), "cp1251", "{v:?}");
        assert_eq!(v.decoded.as_deref(), Some("Ні."));
    }

    #[test]
    fn iso_8859_5_capitals_that_are_valid_utf8_follow_their_column() {
        let rows = [
            "МОСКВА",
            "ЧЕЛЯБИНСК",
            "Санкт-Петербург",
            "Новосибирск",
            "Ярославль",
        ];
        let value = encoding_rs::ISO_8859_5.encode("ЧАША").0;
        assert!(std::str::from_utf8(&value).is_ok());
        let v = in_column(encoding_rs::ISO_8859_5, &rows, &value);
        assert!(
            v.label.to_string() == "iso-8859-5" || v.label == Label::Unknown,
            "never kept as UTF-8: {v:?}"
        );
        assert_ne!(v.label, Label::Utf8);
    }

    #[test]
    fn real_utf8_text_in_a_legacy_column_stays_utf8() {
        for genuine in ["Київ", "Crème brûlée", "Đà Nẵng", "São Paulo", "Łódź"] {
            let v = in_column(encoding_rs::WINDOWS_1251, UK, genuine.as_bytes());
            assert_eq!(v.label, Label::Utf8, "{genuine}: {v:?}");
        }
    }
}

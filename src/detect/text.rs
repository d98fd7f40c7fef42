//! Scorer: how much a candidate decoding looks like real text.
//!
//! The score is a log-likelihood ratio in nats against "some other reading":
//! each letter transition earns `H - cost` under the best language model, so
//! text the models know scores above zero and wrong decodings fall below.
//! Pure-ASCII words score zero: every candidate decodes them the same way, so
//! they carry no evidence and must not tip the balance. Case patterns, words
//! that mix scripts, and symbols unusual in text are penalised.

use super::chars;
use super::model::{self, CYR_N, LATIN_N, SCALE};
use super::syllables::{fnv, has_tone, vi_syllable_hashes, SyllableSet, FNV0};
use super::symbols::{glues, kind, symbol_score, Kind};

/// Baseline per transition for the Cyrillic models (nats): genuine text costs
/// about 2.6 per transition, a wrong Cyrillic decoding 4.4 or more.
const H_CYR: f32 = 3.5;
/// Baseline for the Latin model: genuine ≈ 3.3, Latin-1 mojibake ≈ 7.7.
const H_LATIN: f32 = 4.5;
/// Baseline for the Vietnamese model: genuine text costs ≈ 2.8 per
/// transition that touches a non-ASCII letter (the only ones counted).
const H_VI: f32 = 4.5;
/// Toll (nats) on a Western word in a reading that claims to be Vietnamese (TCVN3): the
/// smallest that turned no Western word in cp1250/cp1252/cp1254 (wordfreq's held-out ranks)
/// into TCVN3 text; 4 did ("supără").
pub(crate) const FOREIGN_IN_VI: f32 = 6.0;
/// Number of Cyrillic language models.
const NL: usize = model::CYR_LANGS.len();
/// Toll (nats) for ASCII and Cyrillic letters glued in one word ("Perchи",
/// Italian read as cp1251): real Cyrillic text almost never does it.
const SCRIPT_SWITCH: f32 = 7.0;
/// Evidence (nats) a lower- or Title-case Cyrillic word of four letters or more earns when
/// it is among the 20,000 most frequent words of one of the languages
/// (`model::cyr_known`): letter bigrams rate loanwords ("файл") and some common words
/// poorly, yet a wrong table's reading of real text is almost never a frequent word.
/// Measured on the development set's words (`tests/data/dev`) read through every wrong
/// table: 9% of the wrong two-letter readings and 0.6% of the three-letter ones are such
/// words, 0.04% of those of four letters or more (0.015% with 10,000 words a language), so
/// shorter words need [`TOP_WORD`]. Belarusian has
/// no frequency list: a word of four to eight letters among hunspell-be's forms
/// (`model::be_known`) earns the same.
const KNOWN_WORD: f32 = 3.0;
/// Evidence a lower- or Title-case word of two or three letters earns when it is among the
/// 100 most frequent words of one of the languages ("на", "для"). Measured as above, such a
/// word is the right reading 93% of the time (two letters) and the wrong reading of a
/// lower-case word 0.2%, but the wrong reading of an upper-case abbreviation ("МБ" read
/// through another table) 6.5%: ln(0.93 / 0.065) ≈ 2.7 nats, the smaller ratio, taken.
const TOP_WORD: f32 = 2.5;
/// Toll (nats) on each ё inside a word: the models fold it into е (text writes ё as е as
/// often as not), which rates it as likely as е, yet in the development set's Russian and
/// Belarusian text ё is a fiftieth of е (ln ≈ 3.9); a wrong table reads ё from common bytes
/// (cp1251 "с" is ISO-8859-5 "ё", "і" is KOI8 "Ё"). Chosen on the development set: 3 (legacy
/// alone misses 223 → 222, mojibake 146 → 144, wrong rewrites alone 3 → 2; short stress set
/// wrong rewrites 112 → 111); 4 lost a mojibake value. A word's first letter is spared: on
/// every ё the toll was one more miss and one less wrong rewrite, but "Ёж" in a KOI8-R
/// column was no longer decided.
const YO_TOLL: f32 = 3.0;
/// Evidence (nats) a lower-case Cyrillic token of two to four letters earns where units and
/// abbreviations stand (after a number, before a full stop) when it is a frequent short word
/// (`model::cyr_short`: "руб", "ул", "тел", "кг"): a price column of "47319 руб." read as
/// KOI8-R "47319 ПСА." had scored the wrong table 2 nats ahead.
const SHORT_TOKEN: f32 = 2.5;
/// The same for one letter ("д.", "г.", "5 л"): most single letters are such tokens, in the
/// right reading and a wrong one alike.
const SHORT_TOKEN_ONE: f32 = 1.0;

/// What came just before the current character, for [`SHORT_TOKEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    None,
    /// Digits, with any decimal separator between them.
    Digits,
    /// Digits and one space.
    Space,
}

/// Cost (nats) of a letter a model has no index for.
const UNSEEN: u32 = (10.0 * SCALE) as u32;

/// What the scorer found in one candidate decoding.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextScore {
    /// Total evidence that this is real text (nats; > 0 means plausible).
    pub score: f32,
    /// Best Cyrillic language (index into `CYR_LANGS`), if any Cyrillic word.
    pub cyr_lang: Option<u8>,
    /// Letters outside ASCII: how much the non-ASCII evidence rests on.
    pub non_ascii_letters: u32,
    /// Letters of the words that hold a non-ASCII letter ("lỗi" has one non-ASCII letter
    /// and three such letters): how long the text the evidence rests on is.
    pub word_letters: u32,
    /// Words that mix Cyrillic with Latin letters.
    pub mixed_words: u32,
    /// Words with an irregular case pattern (e.g. `пРИВЕТ`).
    pub odd_case_words: u32,
    /// Characters that are rare in text (box drawing, controls, odd symbols).
    pub odd_symbols: u32,
    /// Vietnamese syllables found in the known-syllable list.
    pub vi_syllables: u32,
    /// Words scored with the Vietnamese model as the better reading.
    pub vi_words: u32,
    /// Words of a reading that claims to be Vietnamese scored as foreign names, at
    /// [`FOREIGN_IN_VI`] each ("Cádiz"); saturates at 255 (a byte keeps `TextScore` as small
    /// as it was: a larger one cost a percent of detection time in copies).
    pub foreign_words: u8,
}

/// Accumulates one word's evidence under every model at once.
struct Word {
    letters: u32,
    upper: u32,
    first_upper: bool,
    case_breaks: u32,
    last_upper: bool,
    cyr: u32,
    ascii: u32,
    ext: u32,
    other: u32,
    cyr_prev: usize,
    cyr_cost: [u32; NL],
    /// `model::word_hash` of the word's Cyrillic letters.
    cyr_hash: u32,
    /// The word follows a number and a space ("47319 руб", "5 кг"): a unit's place.
    after_number: bool,
    /// A symbol that does not sit beside words in text touches the word ([`glues`]).
    glued: bool,
    lat_prev: usize,
    lat_cost: u32,
    vi_prev: usize,
    vi_cost: u32,
    /// Latin-script transitions counted: only those touching a non-ASCII
    /// letter, because ASCII letters read the same in every candidate.
    lat_t: u32,
    prev_ext: bool,
    tones: u32,
    hash: u64,
    /// Toneless letters for the Vietnamese syllable-shape check.
    base: [char; 8],
    base_len: usize,
    /// A letter outside the Vietnamese alphabet was seen.
    not_vi: bool,
    /// The (last) tone seen in the word.
    tone: u8,
}

impl Word {
    fn new(vi_n: usize) -> Self {
        Word {
            letters: 0,
            upper: 0,
            first_upper: false,
            case_breaks: 0,
            last_upper: false,
            cyr: 0,
            ascii: 0,
            ext: 0,
            other: 0,
            cyr_prev: CYR_N - 1,
            cyr_cost: [0; NL],
            cyr_hash: model::WORD_HASH0,
            after_number: false,
            glued: false,
            lat_prev: LATIN_N - 1,
            lat_cost: 0,
            vi_prev: vi_n - 1,
            vi_cost: 0,
            lat_t: 0,
            prev_ext: false,
            tones: 0,
            hash: FNV0,
            base: ['\0'; 8],
            base_len: 0,
            not_vi: false,
            tone: 0,
        }
    }
}

/// Scores a candidate decoding given as characters.
pub fn score_chars(chars: impl Iterator<Item = char>) -> TextScore {
    score_chars_as(chars, false)
}

/// Scores a candidate decoding; `vietnamese` says the reading claims to be
/// Vietnamese (TCVN3), so accented Latin words are judged as Vietnamese
/// syllables only: a Western word must not pass for TCVN3 text.
pub fn score_chars_as(chars: impl Iterator<Item = char>, vietnamese: bool) -> TextScore {
    let mut scorer = Scorer::new(vietnamese);
    for c in chars {
        scorer.push(c);
    }
    scorer.finish()
}

impl Word {
    /// The toll on the word's case pattern, if it is odd and the word holds a non-ASCII letter.
    fn odd_case_toll(&self, non_ascii: u32) -> Option<f32> {
        let n = self.letters;
        // Case: lower, Title, or UPPER are normal; anything else is the
        // signature of a wrong table (KOI8 read as cp1251 flips case). A pure-ASCII
        // word ("GetSrvRec", "PowerPoint") reads alike under every table: its case says
        // nothing about the reading, so it costs nothing and does not count as odd.
        if non_ascii > 0
            && n >= 2
            && self.upper > 0
            && self.upper < n
            && !(self.upper == 1 && self.first_upper)
        {
            let breaks = self.case_breaks.saturating_sub(u32::from(self.first_upper));
            // "лЕБЕДЕВ" (a capitalised KOI8 word read as cp1251) costs most.
            let flipped = !self.first_upper && self.upper + 1 == n;
            return Some(4.0 + 2.0 * breaks.min(6) as f32 + if flipped { 4.0 } else { 0.0 });
        }
        None
    }

    /// The Cyrillic word's [`KNOWN_WORD`] or [`TOP_WORD`] evidence, if its shape lets it count.
    fn known_word_evidence(&self) -> Option<f32> {
        let n = self.letters;
        // A fragment glued to a symbol ("др№ср", "╥жак") is no word of its own. Any
        // language's lexicon counts for all: they are incomplete and close kin, and
        // choosing the language is the bigrams' job.
        // Upper case counts from four letters on ("ФАЙЛ"): a wrong table's upper-case
        // reading of that length is a frequent word 0.04% of the time (measured as for
        // `KNOWN_WORD`), while two- and three-letter ones often are ("ДП" read as "до").
        let case_ok =
            self.upper == 0 || (self.upper == 1 && self.first_upper) || (self.upper == n && n >= 4);
        if !(n >= 3 && !self.glued && case_ok) {
            return None;
        }
        Some(match model::cyr_known(self.cyr_hash) {
            model::Known::Top => {
                if n >= 4 {
                    KNOWN_WORD
                } else {
                    TOP_WORD
                }
            }
            model::Known::Frequent if n >= 4 => KNOWN_WORD,
            model::Known::No if (4..=8).contains(&n) && model::be_known(self.cyr_hash) => {
                KNOWN_WORD
            }
            _ => 0.0,
        })
    }

    /// The Cyrillic word's [`SHORT_TOKEN`] evidence, if it is a short token in a unit's place.
    fn short_token_evidence(&self, next: char) -> Option<f32> {
        let n = self.letters;
        // A unit, currency or abbreviation in its place: a lower-case short token after a
        // number or before a full stop ("47319 руб.", "ул.", "5 кг"). A wrong table's
        // reading of it is mostly upper case ("ПСА."), which such places do not hold.
        if n <= 4
            && self.upper == 0
            && !self.glued
            && (next == '.' || self.after_number)
            && model::cyr_short(self.cyr_hash)
        {
            return Some(if n == 1 { SHORT_TOKEN_ONE } else { SHORT_TOKEN });
        }
        None
    }

    /// Adds the Cyrillic word's evidence under each language model to `totals`.
    fn add_cyr_evidence(&self, totals: &mut [f32; NL]) {
        let t = (self.letters + 1) as f32;
        for (l, total) in totals.iter_mut().enumerate() {
            let last = self.cyr_cost[l] + model::cyr(l)[self.cyr_prev * CYR_N + CYR_N - 1] as u32;
            *total += t * H_CYR - last as f32 / SCALE;
        }
    }

    /// The Latin word's evidence as Latin and as Vietnamese, and whether it is a known syllable.
    fn latin_readings(&self, vi: &model::Vietnamese, vi_set: &SyllableSet) -> (f32, f32, bool) {
        let (mut lat_cost, mut vi_cost, mut t) = (self.lat_cost, self.vi_cost, self.lat_t);
        if self.prev_ext {
            lat_cost += model::latin()[self.lat_prev * LATIN_N + LATIN_N - 1] as u32;
            vi_cost += vi.table[self.vi_prev * vi.n + vi.n - 1] as u32;
            t += 1;
        }
        let t = t as f32;
        let lat = t * H_LATIN - lat_cost as f32 / SCALE;
        let mut vis = t * H_VI - vi_cost as f32 / SCALE;
        let known = vi_set.contains(&self.hash);
        if self.tones > 1 {
            vis -= 4.0 * (self.tones - 1) as f32;
        } else if known {
            vis += 4.0;
        }
        // Vietnamese is a closed set of one-syllable shapes: "mựller"
        // (German read as TCVN3) is not one, whatever its letters.
        if !known
            && (self.not_vi || !model::vi_syllable_shape(&self.base[..self.base_len], self.tone))
        {
            vis -= 6.0;
        }
        (lat, vis, known)
    }

    /// Whether a letter of kind `k` switches between ASCII and Cyrillic within the word.
    #[inline]
    fn switches_script(&self, k: Kind) -> bool {
        let cyr_now = k == Kind::Cyr;
        let cyr_before = self.cyr > 0;
        let ascii_before = self.ascii > 0 && self.cyr == 0 && self.ext == 0;
        (cyr_now && ascii_before) || (k == Kind::AsciiLetter && cyr_before && self.ascii == 0)
    }

    /// Adds a Cyrillic letter to the word; true when it is a ё owing [`YO_TOLL`].
    #[inline]
    fn push_cyr(&mut self, c: char) -> bool {
        self.cyr += 1;
        let i = model::cyr_index(c).unwrap_or(0);
        self.cyr_hash = model::word_hash(self.cyr_hash, i);
        let inner_yo = (c == 'ё' || c == 'Ё') && self.letters > 1;
        for l in 0..NL {
            self.cyr_cost[l] += model::cyr(l)[self.cyr_prev * CYR_N + i] as u32;
        }
        self.cyr_prev = i;
        inner_yo
    }

    /// Adds a Latin letter (`ext`: outside ASCII) to the word.
    #[inline]
    fn push_latin(&mut self, c: char, ext: bool, vi: &model::Vietnamese) {
        if ext {
            self.ext += 1;
        } else {
            self.ascii += 1;
        }
        let counted = ext || self.prev_ext;
        self.lat_t += counted as u32;
        self.prev_ext = ext;
        match model::latin_index(c) {
            Some(i) => {
                if counted {
                    self.lat_cost += model::latin()[self.lat_prev * LATIN_N + i] as u32;
                }
                self.lat_prev = i;
            }
            None => {
                self.lat_cost += UNSEEN;
                self.lat_prev = LATIN_N - 1;
            }
        }
        match vi.index(c) {
            Some(i) => {
                if counted {
                    self.vi_cost += vi.table[self.vi_prev * vi.n + i] as u32;
                }
                self.vi_prev = i;
                if vi.tone[i] != 0 {
                    self.tone = vi.tone[i];
                }
                if self.base_len < self.base.len() {
                    self.base[self.base_len] = vi.base[i];
                    self.base_len += 1;
                } else {
                    self.not_vi = true;
                }
            }
            None => {
                self.vi_cost += UNSEEN;
                self.vi_prev = vi.n - 1;
                self.not_vi = true;
            }
        }
        self.tones += has_tone(c) as u32;
        let lower = if c.is_ascii() {
            c.to_ascii_lowercase()
        } else {
            chars::lower(c)
        };
        self.hash = fnv(self.hash, lower);
    }
}

/// The scoring state of one candidate decoding, fed one character at a time.
struct Scorer {
    vi: &'static model::Vietnamese,
    vi_set: &'static SyllableSet,
    /// The reading claims to be Vietnamese (TCVN3).
    vietnamese: bool,
    out: TextScore,
    /// Evidence under every model alike (symbols, case, known words, Latin-script words).
    common: f32,
    /// Each Cyrillic language model's evidence over the Cyrillic words.
    cyr_total: [f32; NL],
    /// Some Cyrillic word was scored.
    any_cyr: bool,
    w: Word,
    /// An odd symbol right after a letter; a letter right after it means the
    /// symbol sits inside a word, where real text never has one.
    odd_after_letter: bool,
    /// The previous character was an odd symbol.
    odd_before: bool,
    /// Length of the current run of non-ASCII symbols that began right after
    /// a letter: "á»‘" (UTF-8 read as latin1) glues such runs to letters.
    glued_run: u32,
    /// The previous character was a symbol that [`glues`].
    glue_before: bool,
    /// Whether a number (and one space) came just before: a unit's place.
    number: Number,
}

impl Scorer {
    /// A scorer before the first character.
    fn new(vietnamese: bool) -> Self {
        let vi = model::vietnamese();
        Scorer {
            vi,
            vi_set: vi_syllable_hashes(),
            vietnamese,
            out: TextScore::default(),
            common: 0.0,
            cyr_total: [0.0; NL],
            any_cyr: false,
            w: Word::new(vi.n),
            odd_after_letter: false,
            odd_before: false,
            glued_run: 0,
            glue_before: false,
            number: Number::None,
        }
    }

    /// Reads the next character.
    #[inline(always)]
    fn push(&mut self, c: char) {
        let k = kind(c);
        if matches!(k, Kind::Other) {
            self.symbol(c);
        } else {
            self.letter(c, k);
        }
    }

    /// Reads a character that is no letter: it ends the word and is scored as a symbol.
    #[inline(always)]
    fn symbol(&mut self, c: char) {
        let was_letter = self.w.letters > 0;
        let glue = glues(c);
        self.w.glued |= glue;
        self.glue_before = glue;
        self.finish_word(c);
        self.number = match (c, self.number) {
            ('0'..='9', _) | ('.' | ',', Number::Digits) => Number::Digits,
            (' ', Number::Digits) => Number::Space,
            _ => Number::None,
        };
        let (s, odd) = symbol_score(c);
        self.common += s;
        self.out.odd_symbols += odd as u32;
        // Any non-ASCII symbol glued between two letters is suspect
        // ("l·n", "L¹t"), the apostrophe ’ aside.
        self.odd_after_letter =
            was_letter && (odd || (!c.is_ascii() && c != '\u{2019}' && c != '\u{2BC}'));
        if !c.is_ascii() && c != '\u{2019}' && (was_letter || self.glued_run > 0) {
            self.glued_run += 1;
            if self.glued_run == 2 {
                self.common -= 4.0;
            }
        } else {
            self.glued_run = 0;
        }
    }

    /// Reads a letter of kind `k` into the current word.
    #[inline(always)]
    fn letter(&mut self, c: char, k: Kind) {
        self.glued_run = 0;
        if self.odd_after_letter {
            self.common -= 4.0;
            self.odd_after_letter = false;
        }
        if self.odd_before {
            // "╜анок": a box-drawing byte glued to the start of a word is a
            // letter of another table (KOI8-U ґ read as KOI8-R).
            self.common -= 3.0;
        }
        self.odd_before = false;
        // A switch between ASCII and Cyrillic letters ends a word ("кодM5",
        // "Tiєng"): each part is scored alone, with a small toll for the switch.
        if self.w.letters > 0 && self.w.switches_script(k) {
            self.finish_word(c);
            self.common -= SCRIPT_SWITCH;
            self.out.mixed_words += 1;
        }
        let upper = chars::is_uppercase(c);
        let w = &mut self.w;
        if w.letters == 0 {
            w.first_upper = upper;
            w.glued = self.glue_before;
            w.after_number = self.number == Number::Space;
            self.number = Number::None;
        } else if upper != w.last_upper {
            w.case_breaks += 1;
        }
        w.last_upper = upper;
        w.letters += 1;
        w.upper += upper as u32;
        match k {
            Kind::Cyr => {
                if w.push_cyr(c) {
                    self.common -= YO_TOLL;
                }
            }
            Kind::AsciiLetter | Kind::LatinExt => w.push_latin(c, k == Kind::LatinExt, self.vi),
            _ => w.other += 1,
        }
    }

    /// Scores the current word, if any, ended by `next`, and starts a new one.
    fn finish_word(&mut self, next: char) {
        let w = &self.w;
        if w.letters == 0 {
            return;
        }
        let non_ascii = w.cyr + w.ext + w.other;
        if let Some(toll) = w.odd_case_toll(non_ascii) {
            self.out.odd_case_words += 1;
            self.common -= toll;
        }
        self.out.non_ascii_letters += non_ascii;
        if non_ascii > 0 {
            self.out.word_letters += w.letters;
        }
        if non_ascii == 0 {
            // Pure ASCII word: identical in every candidate, no evidence.
        } else if w.cyr > 0 && (w.ascii + w.ext + w.other) > 0 {
            self.out.mixed_words += 1;
            self.common -= 4.0 + 2.5 * non_ascii as f32;
        } else if w.cyr > 0 {
            self.any_cyr = true;
            if let Some(e) = w.known_word_evidence() {
                self.common += e;
            }
            if let Some(e) = w.short_token_evidence(next) {
                self.common += e;
            }
            w.add_cyr_evidence(&mut self.cyr_total);
        } else if w.ext > 0 && w.other == 0 {
            self.latin_word();
        } else {
            // Other scripts (Greek, CJK, ...) in a UTF-8 reading: no model,
            // neutral; mixed with Latin it is odd.
            if w.ascii + w.ext > 0 {
                self.common -= 3.0;
            }
        }
        self.w = Word::new(self.vi.n);
    }

    /// Scores the current accented Latin word as a Latin word or a Vietnamese syllable.
    fn latin_word(&mut self) {
        let (lat, vis, known) = self.w.latin_readings(self.vi, self.vi_set);
        if self.vietnamese || vis > lat {
            self.out.vi_words += 1;
            if known {
                self.out.vi_syllables += 1;
            }
        }
        // Vietnamese text names foreign places and people ("Cádiz"): a word the Latin
        // model rates far better than the syllable model may be one, at a toll.
        self.common += if self.vietnamese {
            if lat - FOREIGN_IN_VI > vis {
                self.out.foreign_words = self.out.foreign_words.saturating_add(1);
            }
            vis.max(lat - FOREIGN_IN_VI)
        } else {
            lat.max(vis)
        };
    }

    /// Scores the last word and sums the evidence, the best Cyrillic language's included.
    fn finish(mut self) -> TextScore {
        self.finish_word('\0');
        let mut best = 0.0;
        if self.any_cyr {
            let (l, s) = self
                .cyr_total
                .iter()
                .enumerate()
                .fold(
                    (0, f32::MIN),
                    |acc, (i, &s)| if s > acc.1 { (i, s) } else { acc },
                );
            self.out.cyr_lang = Some(l as u8);
            best = s;
        }
        self.out.score = self.common + best;
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> f32 {
        score_chars(t.chars()).score
    }

    #[test]
    fn real_text_beats_wrong_tables() {
        assert!(s("Привет, как дела?") > 5.0);
        // "Привет" in KOI8-R read as cp1251, and cp1251 read as ISO-8859-5.
        assert!(s("рТЙЧЕФ") < -5.0);
        assert!(s("Яаржтхђ") < 0.0);
        assert!(s("Tiếng Việt") > 3.0);
        assert!(s("Ïðèâåò") < -10.0);
        assert!(s("café crème") > 0.0);
    }

    #[test]
    fn ascii_words_are_neutral() {
        assert_eq!(s("hello world 123"), 0.0);
        // Their case too: "GetSrvRec" reads alike under every table.
        assert_eq!(s("Ошибка GetSrvRec для"), s("Ошибка getsrvrec для"));
        assert_eq!(score_chars("PowerPoint".chars()).odd_case_words, 0);
        assert_eq!(score_chars("пРИВЕТ".chars()).odd_case_words, 1);
    }

    #[test]
    fn frequent_words_earn_evidence_and_glued_fragments_do_not() {
        // The same letters glued to "№" are no word of their own: the difference is the bonus.
        assert_eq!(s("№ файл") - s("№файл"), KNOWN_WORD);
        assert_eq!(s("№ ФАЙЛ") - s("№ФАЙЛ"), KNOWN_WORD);
        assert_eq!(s("№ для") - s("№для"), TOP_WORD);
        // Upper case below four letters earns nothing ("ДП" reads as "до" in KOI8-R), nor
        // does a two-letter word, nor a word no list holds.
        assert_eq!(s("№ ДЛЯ") - s("№ДЛЯ"), 0.0);
        assert_eq!(s("№ на") - s("№на"), 0.0);
        assert_eq!(s("№ фаыл") - s("№фаыл"), 0.0);
    }

    #[test]
    fn units_and_abbreviations_count_in_their_place() {
        let sym = |c: char| symbol_score(c).0;
        let close = |a: f32, b: f32| (a - b).abs() < 1e-3;
        // Before a full stop, against the same word before a comma.
        let stop = s("руб.") - s("руб,") - (sym('.') - sym(','));
        assert!(close(stop, SHORT_TOKEN), "{stop}");
        // After a number, against the word alone.
        let unit = s("5 кг") - s("кг") - sym('5') - sym(' ');
        assert!(close(unit, SHORT_TOKEN), "{unit}");
        let one = s("д.") - s("д,") - (sym('.') - sym(','));
        assert!(close(one, SHORT_TOKEN_ONE), "{one}");
        // The wrong table's upper-case reading earns nothing, nor a fragment glued to a symbol,
        // nor a rare word ("пса" read from KOI8 is not lower case here, "ъыь" is no word).
        for t in ["ПСА", "№руб", "ъыь"] {
            let d = s(&format!("{t}.")) - s(&format!("{t},")) - (sym('.') - sym(','));
            assert!(close(d, 0.0), "{t}: {d}");
        }
    }

    #[test]
    fn a_foreign_name_in_vietnamese_text_is_tolled_not_ruled_out() {
        let vi = |t: &str| score_chars_as(t.chars(), true).score;
        // "Cádiz" is no Vietnamese syllable, but a Western word at a toll.
        assert_eq!(vi("Cádiz"), s("Cádiz") - FOREIGN_IN_VI);
        assert_eq!(score_chars_as("Cádiz".chars(), true).foreign_words, 1);
        assert_eq!(score_chars_as("Tiếng Việt".chars(), true).foreign_words, 0);
        // ... still ahead of its readings through the other tables.
        assert!(vi("Cádiz") > s("Cёdiz") + 2.0, "{}", vi("Cádiz"));
        // Vietnamese still reads as Vietnamese.
        assert!(vi("Tiếng Việt") > 3.0);
    }
}

//! The embedded letter-bigram models (built by `scripts/build_models.py`).
//!
//! A model is an N×N table of costs, `round(-ln P(next | prev) * 8)`, with
//! index N-1 standing for a word boundary. Costs stay integers in the hot
//! loop and turn into nats once per word.

use std::collections::HashSet;
use std::sync::OnceLock;

/// Cost units per nat in the model files.
pub const SCALE: f32 = 8.0;

/// Languages of the Cyrillic models, in table order.
pub const CYR_LANGS: [&str; 6] = ["ru", "uk", "be", "bg", "sr", "mk"];
/// Size of a Cyrillic model's alphabet, boundary included.
pub const CYR_N: usize = 50;
/// Size of the Latin model's alphabet, boundary included.
pub const LATIN_N: usize = 188;

static CYR: [&[u8; CYR_N * CYR_N]; 6] = [
    include_bytes!("models/cyr-ru.bin"),
    include_bytes!("models/cyr-uk.bin"),
    include_bytes!("models/cyr-be.bin"),
    include_bytes!("models/cyr-bg.bin"),
    include_bytes!("models/cyr-sr.bin"),
    include_bytes!("models/cyr-mk.bin"),
];
static LATIN: &[u8; LATIN_N * LATIN_N] = include_bytes!("models/latin.bin");
static VI: &[u8] = include_bytes!("models/vi.bin");
static CYR_WORDS: &[u8] = include_bytes!("models/cyr-words.bin");
static BE_WORDS: &[u8] = include_bytes!("models/be-words.bin");
static CYR_SHORT: &[u8] = include_bytes!("models/cyr-short.bin");
static VI_ALPHABET: &str = include_str!("models/vi-alphabet.txt");
static VI_SYLLABLES: &str = include_str!("models/vi-syllables.txt");
static VI_BASE: &str = include_str!("models/vi-base.txt");
static VI_TONE: &str = include_str!("models/vi-tone.txt");

/// The cost table of Cyrillic language `lang` (index into [`CYR_LANGS`]).
#[inline]
pub fn cyr(lang: usize) -> &'static [u8; CYR_N * CYR_N] {
    CYR[lang]
}

/// The Western/Central European Latin cost table.
#[inline]
pub fn latin() -> &'static [u8; LATIN_N * LATIN_N] {
    LATIN
}

/// Index of a Cyrillic letter (either case) in the Cyrillic models.
#[inline]
pub fn cyr_index(c: char) -> Option<usize> {
    let o = c as u32;
    match o {
        // ё is written as е as often as not: the models fold it (as the build script does).
        0x451 | 0x401 => Some(5),
        0x430..=0x45F => Some((o - 0x430) as usize),
        0x410..=0x42F => Some((o - 0x410) as usize),
        0x400..=0x40F => Some((o - 0x400 + 0x20) as usize),
        0x490 | 0x491 => Some(48),
        _ => None,
    }
}

/// True for an upper-case Cyrillic letter of the modelled range.
#[inline]
pub fn cyr_is_upper(c: char) -> bool {
    matches!(c as u32, 0x400..=0x42F | 0x490)
}

/// Index of a Latin letter (either case) in the Latin model.
#[inline]
pub fn latin_index(c: char) -> Option<usize> {
    let o = c as u32;
    match o {
        0x61..=0x7A => Some((o - 0x61) as usize),
        0x41..=0x5A => Some((o - 0x41) as usize),
        0xDF..=0xFF if o != 0xF7 => Some((26 + o - 0xDF) as usize),
        0xC0..=0xDE if o != 0xD7 => Some((26 + o + 0x20 - 0xDF) as usize),
        0x100..=0x17F => {
            // Latin Extended-A pairs case mostly as even/odd; the few
            // exceptions only blur two rare letters together.
            let lower = super::chars::lower(c) as u32;
            let lower = if (0x100..=0x17F).contains(&lower) {
                lower
            } else {
                o
            };
            Some((59 + lower - 0x100) as usize)
        }
        _ => None,
    }
}

/// Starting value of [`word_hash`].
pub const WORD_HASH0: u32 = 0x811C_9DC5;

/// One step of FNV-1a over a word's Cyrillic model indices (ё folded into е, either case),
/// as `scripts/build_models.py` hashes the lexicon's words.
#[inline]
pub fn word_hash(h: u32, index: usize) -> u32 {
    (h ^ index as u32).wrapping_mul(0x0100_0193)
}

/// The known-word lexicon: sorted word hashes and, for each, its [`Known`] tier.
struct Lexicon {
    hashes: Vec<u32>,
    tiers: &'static [u8],
    /// Where the hashes with each value of their top [`BUCKET_BITS`] bits start (and, at
    /// the end, `hashes.len()`): a lookup scans a dozen hashes in one or two cache lines
    /// rather than binary-searching 80,000 (a binary search cost a tenth of detection time).
    starts: Vec<u32>,
}

/// Bits of a word hash that pick its bucket in [`Lexicon::starts`].
const BUCKET_BITS: u32 = 13;

fn lexicon() -> &'static Lexicon {
    static LEX: OnceLock<Lexicon> = OnceLock::new();
    LEX.get_or_init(|| {
        let n = CYR_WORDS.len() / 5;
        assert_eq!(
            n * 5,
            CYR_WORDS.len(),
            "cyr-words.bin: 4-byte hashes then 1-byte tiers"
        );
        let hashes: Vec<u32> = CYR_WORDS[..4 * n]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        debug_assert!(hashes.windows(2).all(|w| w[0] < w[1]));
        let starts = (0..=1u32 << BUCKET_BITS)
            .map(|b| hashes.partition_point(|&h| h >> (32 - BUCKET_BITS) < b) as u32)
            .collect();
        Lexicon {
            hashes,
            tiers: &CYR_WORDS[4 * n..],
            starts,
        }
    })
}

/// Bits of a word hash that pick its bucket among the Belarusian forms; the next 16 bits are
/// stored (a 30-bit key).
const BE_BUCKET_BITS: u32 = 14;

/// Where each bucket's remainders start in `models/be-words.bin` (after the bucket counts),
/// and at the end their number: 64 kB, built once.
fn be_starts() -> &'static [u32] {
    static STARTS: OnceLock<Vec<u32>> = OnceLock::new();
    STARTS.get_or_init(|| {
        let counts = &BE_WORDS[..1 << BE_BUCKET_BITS];
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut at = 0u32;
        for &c in counts {
            starts.push(at);
            at += u32::from(c);
        }
        starts.push(at);
        assert_eq!(
            (1usize << BE_BUCKET_BITS) + 2 * at as usize,
            BE_WORDS.len(),
            "be-words.bin: bucket counts, then 2-byte remainders"
        );
        starts
    })
}

/// True when the Cyrillic word with this [`word_hash`] is a Belarusian word form of four to
/// eight letters (hunspell-be's stems with their suffixes; Belarusian has no frequency list).
#[inline]
pub fn be_known(hash: u32) -> bool {
    let starts = be_starts();
    let b = (hash >> (32 - BE_BUCKET_BITS)) as usize;
    let rem = ((hash >> (16 - BE_BUCKET_BITS)) as u16).to_le_bytes();
    let base = 1 << BE_BUCKET_BITS;
    BE_WORDS[base + 2 * starts[b] as usize..base + 2 * starts[b + 1] as usize]
        .chunks_exact(2)
        .any(|c| c == rem)
}

/// How frequent a Cyrillic word is in the languages' word lists (`scripts/build_models.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Not in the lexicon: among none of the languages' 20,000 most frequent words, or a
    /// three-letter word outside their 100 most frequent (the lexicon leaves those out, and
    /// words of one or two letters, as the scorer never asks about them).
    No,
    /// Among the 100 most frequent words of one language: the function words.
    Top,
    /// Among the 20,000 most frequent words of one language.
    Frequent,
}

/// The [`Known`] tier of the Cyrillic word with this [`word_hash`].
#[inline]
pub fn cyr_known(hash: u32) -> Known {
    let lex = lexicon();
    let b = (hash >> (32 - BUCKET_BITS)) as usize;
    let (start, end) = (lex.starts[b] as usize, lex.starts[b + 1] as usize);
    match lex.hashes[start..end].iter().position(|&h| h == hash) {
        Some(i) if lex.tiers[start + i] == 1 => Known::Top,
        Some(_) => Known::Frequent,
        None => Known::No,
    }
}

/// True when the Cyrillic word with this [`word_hash`] is a frequent word of one to four
/// letters (`models/cyr-short.bin`: units, currencies, abbreviations). Asked only for short
/// lower-case words in a unit's place, so a binary search over the sorted hashes suffices.
pub fn cyr_short(hash: u32) -> bool {
    let n = CYR_SHORT.len() / 4;
    let at = |i: usize| {
        u32::from_le_bytes([
            CYR_SHORT[4 * i],
            CYR_SHORT[4 * i + 1],
            CYR_SHORT[4 * i + 2],
            CYR_SHORT[4 * i + 3],
        ])
    };
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match at(mid).cmp(&hash) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// The Vietnamese model: alphabet lookup, cost table and known syllables.
pub struct Vietnamese {
    /// Number of letters plus one (the boundary).
    pub n: usize,
    /// Index of each lower-case letter; precomposed letters only.
    index: std::collections::HashMap<char, u8>,
    /// The same for every character of either case below [`super::chars::TABLED`]
    /// ([`NONE`]: not a letter of the alphabet), so the scorer does not hash per character.
    by_char: Vec<u8>,
    /// Cost table, `n * n` bytes.
    pub table: &'static [u8],
    /// Syllables seen in the training split (lower case, NFC).
    pub syllables: HashSet<&'static str>,
    /// The toneless base letter of each alphabet index.
    pub base: Vec<char>,
    /// The tone of each alphabet index: 0 none, 1 grave, 2 acute, 3 tilde, 4 hook, 5 dot.
    pub tone: Vec<u8>,
}

impl Vietnamese {
    /// Index of a Vietnamese letter (either case).
    #[inline]
    pub fn index(&self, c: char) -> Option<usize> {
        if c.is_ascii_alphabetic() {
            return Some((c.to_ascii_lowercase() as u8 - b'a') as usize);
        }
        if (c as u32) < 0xC0 {
            return None;
        }
        if let Some(&i) = self.by_char.get(c as usize) {
            return (i != NONE).then_some(i as usize);
        }
        let lower = c.to_lowercase().next().unwrap_or(c);
        self.index.get(&lower).map(|&i| i as usize)
    }
}

/// Marks a character outside the Vietnamese alphabet in [`Vietnamese`]'s table.
const NONE: u8 = u8::MAX;

/// The Vietnamese model, parsed once.
pub fn vietnamese() -> &'static Vietnamese {
    static VIET: OnceLock<Vietnamese> = OnceLock::new();
    VIET.get_or_init(|| {
        let index: std::collections::HashMap<char, u8> = VI_ALPHABET
            .chars()
            .enumerate()
            .map(|(i, c)| (c, i as u8))
            .collect();
        let n = index.len() + 1;
        assert_eq!(VI.len(), n * n, "vi.bin does not match vi-alphabet.txt");
        assert_eq!(
            VI_BASE.chars().count(),
            n - 1,
            "vi-base.txt does not match vi-alphabet.txt"
        );
        let by_char = (0..super::chars::TABLED as u32)
            .map(|o| {
                char::from_u32(o)
                    .and_then(|c| index.get(&super::chars::lower(c)).copied())
                    .unwrap_or(NONE)
            })
            .collect();
        Vietnamese {
            n,
            index,
            by_char,
            table: VI,
            syllables: VI_SYLLABLES.lines().filter(|l| !l.is_empty()).collect(),
            base: VI_BASE.chars().collect(),
            tone: VI_TONE.bytes().map(|b| b - b'0').collect(),
        }
    })
}

/// Vietnamese onsets, longest first so "ngh" is tried before "ng" and "n".
const VI_ONSETS: &[&str] = &[
    "ngh", "ng", "gh", "gi", "kh", "nh", "ph", "th", "tr", "ch", "qu", "b", "c", "d", "đ", "g",
    "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "x", "",
];
/// Vietnamese codas (final consonants; vowel-final glides count as vowels).
const VI_CODAS: &[&str] = &["ch", "nh", "ng", "c", "m", "n", "p", "t", ""];
const VI_VOWELS: &str = "aăâeêioôơuưy";

/// True when toneless lower-case `base` with `tone` has the shape of a
/// Vietnamese syllable: onset, one to three vowels, coda; a syllable ending
/// in a stop (p, t, c, ch) only takes the acute or dot-below tone.
pub fn vi_syllable_shape(base: &[char], tone: u8) -> bool {
    let s: String = base.iter().collect();
    let stop = s.ends_with('p') || s.ends_with('t') || s.ends_with('c') || s.ends_with("ch");
    if stop && matches!(tone, 1 | 3 | 4) {
        return false;
    }
    VI_ONSETS.iter().filter(|o| s.starts_with(**o)).any(|o| {
        let rest: Vec<char> = s[o.len()..].chars().collect();
        (1..=3.min(rest.len())).any(|nv| {
            rest[..nv].iter().all(|c| VI_VOWELS.contains(*c)) && {
                let coda: String = rest[nv..].iter().collect();
                VI_CODAS.contains(&coda.as_str())
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word_cost(table: &[u8], n: usize, idx: &[usize]) -> f32 {
        let b = n - 1;
        let mut prev = b;
        let mut cost = 0u32;
        for &i in idx.iter().chain(std::iter::once(&b)) {
            cost += table[prev * n + i] as u32;
            prev = i;
        }
        cost as f32 / SCALE
    }

    #[test]
    fn the_vietnamese_table_answers_as_the_alphabet_does() {
        let vi = vietnamese();
        for o in 0xC0..super::super::chars::TABLED as u32 {
            if let Some(c) = char::from_u32(o) {
                let lower = c.to_lowercase().next().unwrap_or(c);
                assert_eq!(
                    vi.index(c),
                    vi.index.get(&lower).map(|&i| i as usize),
                    "{o:#x}"
                );
            }
        }
    }

    #[test]
    fn russian_model_prefers_russian_letter_order() {
        let good: Vec<usize> = "привет".chars().map(|c| cyr_index(c).unwrap()).collect();
        let bad: Vec<usize> = "ъыьйщж".chars().map(|c| cyr_index(c).unwrap()).collect();
        assert!(word_cost(cyr(0), CYR_N, &good) + 10.0 < word_cost(cyr(0), CYR_N, &bad));
    }

    #[test]
    fn vietnamese_syllable_shapes() {
        let ok = |w: &str| vi_syllable_shape(&w.chars().collect::<Vec<_>>(), 0);
        assert!(ok("nghieng") && ok("gi") && ok("qua") && ok("đuong") && ok("khuya"));
        assert!(!ok("muller") && !ok("strasse") && !ok("ab"));
        // "chèt" is no syllable: stop-final syllables take only sắc or nặng.
        assert!(!vi_syllable_shape(&['c', 'h', 'e', 't'], 1));
        assert!(vi_syllable_shape(&['c', 'h', 'e', 't'], 2));
    }

    #[test]
    fn the_lexicon_knows_frequent_words_and_not_wrong_table_readings() {
        let known = |w: &str| {
            let h = w
                .chars()
                .fold(WORD_HASH0, |h, c| word_hash(h, cyr_index(c).unwrap()));
            cyr_known(h)
        };
        assert_eq!(known("для"), Known::Top);
        assert_eq!(known("але"), Known::Top);
        assert_eq!(known("файл"), Known::Frequent);
        assert_eq!(known("време"), Known::Top);
        // ё is folded into е as the bigram models fold it.
        assert_eq!(known("всё"), known("все"));
        // "Для" in KOI8-R read as cp1251 and "на" in cp1251 read as CP866 are no words.
        assert_eq!(known("дкъ"), Known::No);
        assert_eq!(known("эр"), Known::No);
        // Belarusian forms: a stem with its suffixes ("шрыфт" → "шрыфту"), not another
        // language's word nor a wrong table's reading.
        let be = |w: &str| {
            be_known(
                w.chars()
                    .fold(WORD_HASH0, |h, c| word_hash(h, cyr_index(c).unwrap())),
            )
        };
        assert!(be("шрыфту") && be("мовы"));
        assert!(!be("шрыфтэ") && !be("ЛЬКРЧЕММ"));
    }

    #[test]
    fn vietnamese_model_loads() {
        let v = vietnamese();
        assert!(v.index('ệ').is_some() && v.index('Ệ').is_some());
        assert!(v.syllables.contains("việt"));
    }
}

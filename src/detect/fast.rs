//! The column's own reading, taken in one pass where the value is plainly that text.
//!
//! The full decision scores every legacy reading of a value (five tables, each with its word
//! models) and weighs them under the column's prior; in a copy of a column that is nearly
//! all one Cyrillic table, nearly every value ends as that table's reading, after four
//! readings scored for nothing. Here a value is given its column's label after scoring that
//! one reading, only when the value leaves no room for another: the column is at least
//! [`UNIFORM_SHARE`] that table; the bytes are not valid UTF-8; every byte is printable
//! ASCII or one of the table's Cyrillic letters (no symbol another table would read as a
//! letter); and the reading is long text of sound words, at [`FAST_PER_LETTER`] nats a letter
//! or more with no word of odd case, none mixing scripts, no odd symbol. Anything else, and
//! every value under another prior, goes the whole way ([`super::detect`]). The caller still
//! proves the rewrite by its round trip.
//!
//! A wrong table's reading of real text breaks case in nearly every word and scores far
//! below zero a letter; a value in another table read through the column's (a KOI8-R row in
//! a cp1251 column) does the same, so it fails the bar. Where the column holds rows of that
//! other table (at least [`SECOND_SHARE`] of them in its prior), the other table's reading is
//! tried next under the same bar with a longer text asked ([`SECOND_MIN_LETTERS`]: under a
//! minority table the whole decision abstains on some values of 12 to 20 letters that the
//! bar passes); a KOI8-R row then costs two readings, not six. The bars are set where
//! `tests/it/detect/fast.rs` finds the full decision giving the same label for every value the
//! fast one takes, on the held-out set and the stress sets in every column, in every
//! column of one table holding a tenth of another's rows, and in columns of two or three
//! tables (none at [`UNIFORM_SHARE`], all of them together), where each table is tried so.

use super::column::ColumnPrior;
use super::tables::{self, UNMAPPED};
use super::text;
use super::{model, Label, UNIFORM_SHARE};
use crate::codec::Encoding;

/// Nats a letter the column's reading must earn (genuine text earns about 0.9, a wrong
/// table's reading of it far below zero).
pub const FAST_PER_LETTER: f32 = 0.5;
/// Letters outside ASCII the reading must hold: shorter values are decided whole (and
/// remembered per column by the copy, so they cost little).
pub const FAST_MIN_LETTERS: u32 = 12;
/// A threshold above this asks for more certainty than the bar gives: decided whole.
const FAST_MAX_THRESHOLD: f32 = 0.99;

/// The single-byte Cyrillic tables the fast reading serves.
const TABLES: [Encoding; 4] = [
    Encoding::Windows1251,
    Encoding::Koi8R,
    Encoding::Ibm866,
    Encoding::Iso8859_5,
];

/// Share of a column's rows another table must hold for its reading to be taken in one pass
/// too, where the column's own reading fails (a KOI8-R row in a cp1251 column that has them).
pub const SECOND_SHARE: f32 = 0.02;
/// Letters outside ASCII another table's reading must hold: under a minority table the
/// whole decision abstains on some shorter values the bar passes (the column's prior
/// weighs against the reading), and the fast one must never take what it would not.
pub const SECOND_MIN_LETTERS: u32 = 24;

/// The column's label for `bytes` when the value is plainly the column's text (see the
/// module's note), or plainly the text of another table the column holds rows of (at least
/// [`SECOND_SHARE`]) where the column's own reading is not; in a column of several tables
/// with none at [`UNIFORM_SHARE`] but all of them together, plainly one of them under the
/// longer bar. `None`: decide it whole.
pub fn in_column(bytes: &[u8], prior: &ColumnPrior, threshold: f32) -> Option<Label> {
    if threshold > FAST_MAX_THRESHOLD || bytes.is_ascii() || std::str::from_utf8(bytes).is_ok() {
        return None;
    }
    let (label, share) = prior.dominant()?;
    let own = match label {
        Label::Legacy(enc) if share >= UNIFORM_SHARE && TABLES.contains(&enc) => Some(enc),
        // A column plainly of another reading (KOI8-U, whose label the KOI8-R one is not).
        _ if share >= UNIFORM_SHARE => return None,
        _ => None,
    };
    // Nearly every value of a column of one table ends here, before any other table's share
    // is looked at.
    if let Some(enc) = own {
        if plainly(bytes, enc, FAST_MIN_LETTERS) {
            return Some(label);
        }
    }
    // The Cyrillic tables the column holds rows of, most rows first (the column's own among
    // them, with its 85%: the sum below only ever refuses a column without one).
    let mut held: Vec<(Encoding, f32)> = TABLES
        .iter()
        .map(|&e| (e, table_share(prior, e)))
        .filter(|&(_, s)| s >= SECOND_SHARE)
        .collect();
    held.sort_by(|a, b| b.1.total_cmp(&a.1));
    if held.iter().map(|(_, s)| s).sum::<f32>() < UNIFORM_SHARE {
        return None;
    }
    // Another table of the column's: a wrong table's reading of real text fails the bar as
    // the column's own did, so at most one of them can pass it.
    held.into_iter()
        .filter(|&(e, _)| Some(e) != own)
        .find(|&(e, _)| plainly(bytes, e, SECOND_MIN_LETTERS))
        .map(|(e, _)| Label::Legacy(e))
}

/// The share of the column's rows in table `enc` (KOI8-R with KOI8-U: a KOI8-U row without
/// its eight letters is KOI8-R byte for byte).
fn table_share(prior: &ColumnPrior, enc: Encoding) -> f32 {
    let own = prior.share(Label::Legacy(enc));
    if enc == Encoding::Koi8R {
        own + prior.share(Label::Legacy(Encoding::Koi8U))
    } else {
        own
    }
}

/// Whether `bytes` (not ASCII, not UTF-8) read through table `enc` are plainly its text:
/// every byte printable ASCII or one of its Cyrillic letters, and a reading of long text of
/// sound words, `letters` of them or more outside ASCII (see the module's note).
fn plainly(bytes: &[u8], enc: Encoding, letters: u32) -> bool {
    // KOI8-R's column may hold KOI8-U rows: its eight bytes differ, decide those whole.
    if enc == Encoding::Koi8R && bytes.iter().any(|&b| tables::koi8u_only(b)) {
        return false;
    }
    let table = tables::decode_table(enc);
    let printable = |b: u8| (0x20..0x7F).contains(&b) || matches!(b, b'\t' | b'\n' | b'\r');
    let letter = |b: u8| {
        let c = table[(b - 0x80) as usize];
        c != UNMAPPED && model::cyr_index(c).is_some()
    };
    if !bytes
        .iter()
        .all(|&b| if b < 0x80 { printable(b) } else { letter(b) })
    {
        return false;
    }
    let t = text::score_chars(bytes.iter().map(|&b| {
        if b < 0x80 {
            b as char
        } else {
            table[(b - 0x80) as usize]
        }
    }));
    let plain = t.odd_case_words == 0 && t.mixed_words == 0 && t.odd_symbols == 0;
    plain
        && t.non_ascii_letters >= letters
        && t.score >= FAST_PER_LETTER * t.non_ascii_letters as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::column_prior;

    fn enc(e: Encoding, s: &str) -> Vec<u8> {
        crate::codec::encode(e, s).unwrap()
    }

    #[test]
    fn plain_text_of_the_columns_table_takes_the_columns_label() {
        let texts = [
            "Доставка по Москве в течение двух дней",
            "Спасибо за быстрый ответ и хорошую работу",
            "Оплата при получении заказа курьеру",
        ];
        // A column of some size: a prior from three rows says little.
        let col: Vec<Vec<u8>> = texts
            .iter()
            .cycle()
            .take(300)
            .map(|t| enc(Encoding::Windows1251, t))
            .collect();
        let refs: Vec<&[u8]> = col.iter().map(Vec::as_slice).collect();
        let prior = column_prior(&refs);
        let cp1251 = Label::Legacy(Encoding::Windows1251);
        for v in &col[..3] {
            assert_eq!(in_column(v, &prior, 0.95), Some(cp1251));
        }
        // A KOI8-R row in the cp1251 column reads with broken case: decided whole.
        let koi = enc(Encoding::Koi8R, "Доставка по Москве в течение двух дней");
        assert_eq!(in_column(&koi, &prior, 0.95), None);
        // Short values, symbols another table reads as letters, a stricter threshold: whole.
        assert_eq!(
            in_column(&enc(Encoding::Windows1251, "Москва"), &prior, 0.95),
            None
        );
        let quoted = enc(Encoding::Windows1251, "«Доставка по Москве в течение дня»");
        assert_eq!(in_column(&quoted, &prior, 0.95), None);
        assert_eq!(in_column(&col[0], &prior, 0.999), None);
    }

    #[test]
    fn a_second_table_the_column_holds_is_read_in_one_pass_when_long() {
        let texts = [
            "Доставка по Москве в течение двух дней после оплаты заказа",
            "Спасибо за быстрый ответ и хорошую работу вашей службы поддержки",
            "Оплата при получении заказа курьеру наличными или картой",
        ];
        // The prior of 300 rows of `texts`, row `i` in table `table(i)`.
        let prior_of = |table: &dyn Fn(usize) -> Encoding| {
            let col: Vec<Vec<u8>> = (0..300).map(|i| enc(table(i), texts[i % 3])).collect();
            let refs: Vec<&[u8]> = col.iter().map(Vec::as_slice).collect();
            column_prior(&refs)
        };
        // Nine rows of cp1251 to one of KOI8-R, as an old client left them.
        let prior = prior_of(&|i| {
            if i % 10 == 9 {
                Encoding::Koi8R
            } else {
                Encoding::Windows1251
            }
        });
        let koi = enc(Encoding::Koi8R, texts[1]);
        assert_eq!(
            in_column(&koi, &prior, 0.95),
            Some(Label::Legacy(Encoding::Koi8R))
        );
        // Shorter than the second table's bar: decided whole.
        let short = enc(Encoding::Koi8R, "Доставка за два дня");
        assert_eq!(in_column(&short, &prior, 0.95), None);
        // A table the column holds no rows of: decided whole.
        let dos = enc(Encoding::Ibm866, texts[1]);
        assert_eq!(in_column(&dos, &prior, 0.95), None);
        // Half and half: neither table is the column's, each is read so when long.
        let prior = prior_of(&|i| {
            if i % 2 == 0 {
                Encoding::Koi8R
            } else {
                Encoding::Ibm866
            }
        });
        assert_eq!(
            in_column(&dos, &prior, 0.95),
            Some(Label::Legacy(Encoding::Ibm866))
        );
        assert_eq!(
            in_column(&koi, &prior, 0.95),
            Some(Label::Legacy(Encoding::Koi8R))
        );
        assert_eq!(
            in_column(&enc(Encoding::Ibm866, "Доставка за два дня"), &prior, 0.95),
            None
        );
    }
}

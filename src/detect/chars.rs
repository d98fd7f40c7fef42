//! Unicode properties the scorer asks of every character of every candidate reading, from
//! tables built once out of the standard library's own answers: the standard lookups
//! dominated detection time. Characters beyond the tables fall back to the standard library,
//! so every answer is the standard library's.

use std::sync::OnceLock;

/// Characters below this are in the tables (Latin, Greek, Cyrillic, Vietnamese, punctuation,
/// box drawing: everything a legacy byte decodes to).
pub const TABLED: usize = 0x2600;
const ALPHA: u8 = 1;
const UPPER: u8 = 2;

struct Tables {
    class: [u8; TABLED],
    lower: [u16; TABLED],
}

fn tables() -> &'static Tables {
    static T: OnceLock<Box<Tables>> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Box::new(Tables {
            class: [0; TABLED],
            lower: [0; TABLED],
        });
        for o in 0..TABLED {
            let Some(c) = char::from_u32(o as u32) else {
                continue;
            };
            t.class[o] = (c.is_alphabetic() as u8 * ALPHA) | (c.is_uppercase() as u8 * UPPER);
            let l = c.to_lowercase().next().unwrap_or(c) as u32;
            // Every lower-case form of these characters fits 16 bits; keep the rule honest.
            t.lower[o] = u16::try_from(l).unwrap_or(o as u16);
        }
        t
    })
}

/// `c.is_alphabetic()`.
#[inline]
pub fn is_alphabetic(c: char) -> bool {
    match tables().class.get(c as usize) {
        Some(f) => f & ALPHA != 0,
        None => c.is_alphabetic(),
    }
}

/// `c.is_uppercase()`.
#[inline]
pub fn is_uppercase(c: char) -> bool {
    match tables().class.get(c as usize) {
        Some(f) => f & UPPER != 0,
        None => c.is_uppercase(),
    }
}

/// The first character of `c.to_lowercase()`.
#[inline]
pub fn lower(c: char) -> char {
    match tables().lower.get(c as usize) {
        Some(&l) => char::from_u32(l as u32).unwrap_or(c),
        None => c.to_lowercase().next().unwrap_or(c),
    }
}

/// Characters real text almost never holds, in a UTF-8 reading: C1 controls, phonetic and
/// combining marks standing alone, archaic Greek, historic and minority Cyrillic, Syriac,
/// Thaana, NKo, historic and minority scripts, technical symbols, Braille, mathematical
/// operators, rare CJK, presentation forms, private use. A short legacy value whose bytes
/// happen to be valid UTF-8 reads as these ("Ні" in cp1251 is U+0373, archaic Greek; "так"
/// in CP866 is U+282A, Braille).
pub fn rare_in_text(c: char) -> bool {
    matches!(
        c as u32,
        0x80..=0x9F
            | 0x250..=0x36F
            | 0x370..=0x385
            | 0x3CF..=0x3FF
            | 0x460..=0x48F
            | 0x492..=0x52F
            | 0x700..=0x8FF
            | 0x1680..=0x1DFF
            | 0x2200..=0x23FF
            | 0x2800..=0x2DFF
            | 0x3400..=0x4DBF
            | 0xA000..=0xABFF
            | 0xE000..=0xF8FF
            | 0xFB50..=0xFDFF
            | 0xFE70..=0xFEFF
            | 0xFFF0..=0xFFFF
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_agree_with_the_standard_library() {
        for o in 0..TABLED as u32 + 64 {
            if let Some(c) = char::from_u32(o) {
                assert_eq!(is_alphabetic(c), c.is_alphabetic(), "{o:#x}");
                assert_eq!(is_uppercase(c), c.is_uppercase(), "{o:#x}");
                assert_eq!(lower(c), c.to_lowercase().next().unwrap(), "{o:#x}");
            }
        }
    }
}

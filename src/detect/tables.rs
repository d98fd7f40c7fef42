//! Byte tables derived once from our codecs, so scoring can walk bytes
//! without allocating a decoded string per candidate.

use crate::codec::{self, Encoding};
use std::sync::OnceLock;

/// Marks a byte the encoding does not define.
pub const UNMAPPED: char = '\u{FFFF}';

/// The high half (0x80..=0xFF) of a single-byte encoding, as our codec decodes it.
pub fn decode_table(enc: Encoding) -> &'static [char; 128] {
    static T: OnceLock<Vec<(Encoding, [char; 128])>> = OnceLock::new();
    let all = T.get_or_init(|| {
        [
            Encoding::Windows1251,
            Encoding::Koi8R,
            Encoding::Koi8U,
            Encoding::Ibm866,
            Encoding::Iso8859_5,
            Encoding::Latin1,
        ]
        .into_iter()
        .map(|e| {
            let mut t = [UNMAPPED; 128];
            for (i, slot) in t.iter_mut().enumerate() {
                if let Ok(s) = codec::decode(e, &[0x80 + i as u8]) {
                    let mut it = s.chars();
                    if let (Some(c), None) = (it.next(), it.next()) {
                        *slot = c;
                    }
                }
            }
            (e, t)
        })
        .collect()
    });
    &all.iter()
        .find(|(e, _)| *e == enc)
        .expect("single-byte encoding")
        .1
}

/// Characters below this code point are looked up directly when encoding.
const DIRECT: usize = 0x500;

/// One encoding's inverse: the byte of each character below [`DIRECT`] (0 = none: the table's
/// bytes are all ≥ 0x80), then sorted (char, byte) pairs for the rest (punctuation, €, №).
struct EncodeTable {
    direct: [u8; DIRECT],
    rest: Vec<(char, u8)>,
}

/// The inverse of [`decode_table`] for latin1 and cp1251: a direct lookup for Latin-1 and
/// Cyrillic letters, which a binary search had made a twentieth of detection time.
fn encode_table(enc: Encoding) -> &'static EncodeTable {
    static T: OnceLock<Vec<(Encoding, EncodeTable)>> = OnceLock::new();
    let all = T.get_or_init(|| {
        [Encoding::Latin1, Encoding::Windows1251]
            .into_iter()
            .map(|e| {
                let mut t = EncodeTable {
                    direct: [0; DIRECT],
                    rest: Vec::new(),
                };
                for (i, &c) in decode_table(e).iter().enumerate() {
                    let b = 0x80 + i as u8;
                    match c {
                        UNMAPPED => {}
                        c if (c as usize) < DIRECT => t.direct[c as usize] = b,
                        c => t.rest.push((c, b)),
                    }
                }
                t.rest.sort_unstable();
                (e, t)
            })
            .collect()
    });
    &all.iter()
        .find(|(e, _)| *e == enc)
        .expect("latin1 or cp1251")
        .1
}

/// Encodes `s` with a single-byte encoding, or `None` if a character has no byte.
///
/// Allocates the result; used to undo a wrong latin1/cp1251 read.
pub fn encode_single(enc: Encoding, s: &str) -> Option<Vec<u8>> {
    let table = encode_table(enc);
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c as u8);
        } else if let Some(&b) = table.direct.get(c as usize) {
            if b == 0 {
                return None;
            }
            out.push(b);
        } else {
            let i = table.rest.binary_search_by(|(k, _)| k.cmp(&c)).ok()?;
            out.push(table.rest[i].1);
        }
    }
    Some(out)
}

/// Whether byte `b` is one of the eight where KOI8-U and KOI8-R differ (Ukrainian letters in
/// KOI8-U, box drawing in KOI8-R): a value without them reads the same in both.
pub fn koi8u_only(b: u8) -> bool {
    matches!(b, 0xA4 | 0xA6 | 0xA7 | 0xAD | 0xB4 | 0xB6 | 0xB7 | 0xBD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_a_character_inverts_the_decode_table() {
        for enc in [Encoding::Latin1, Encoding::Windows1251] {
            let table = decode_table(enc);
            for o in 0x80..0x3000u32 {
                let Some(c) = char::from_u32(o) else { continue };
                let byte = table.iter().position(|&d| d == c).map(|i| 0x80 + i as u8);
                assert_eq!(
                    encode_single(enc, &c.to_string()),
                    byte.map(|b| vec![b]),
                    "{enc:?} {o:#x}"
                );
            }
        }
        assert_eq!(
            encode_single(Encoding::Windows1251, "№ Ёж"),
            Some(vec![0xB9, b' ', 0xA8, 0xE6])
        );
    }
}

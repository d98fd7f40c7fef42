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

/// Sorted (char, byte) pairs of one encoding.
type EncodeTable = Vec<(char, u8)>;

/// Sorted (char, byte) pairs: the inverse of [`decode_table`].
fn encode_table(enc: Encoding) -> &'static [(char, u8)] {
    static T: OnceLock<Vec<(Encoding, EncodeTable)>> = OnceLock::new();
    let all = T.get_or_init(|| {
        [Encoding::Latin1, Encoding::Windows1251]
            .into_iter()
            .map(|e| {
                let mut v: Vec<(char, u8)> = decode_table(e)
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c != UNMAPPED)
                    .map(|(i, &c)| (c, 0x80 + i as u8))
                    .collect();
                v.sort_unstable();
                (e, v)
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
        } else {
            let i = table.binary_search_by(|(k, _)| k.cmp(&c)).ok()?;
            out.push(table[i].1);
        }
    }
    Some(out)
}

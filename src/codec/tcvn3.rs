//! TCVN3 (TCVN 5712:1993 VN3), in the two conventions found in real data.
//!
//! * **Single-byte**: the 75-character VN3 table. It has no toned capitals;
//!   text written with VN3 fonts spells them with the lower-case byte (an
//!   upper-case font draws it as a capital), so decoding yields lower case.
//! * **Two-byte**: a toned capital is its base capital (ASCII `A E I O U Y`,
//!   or the VN3 bytes for `Ă Â Ê Ô Ơ Ư`) followed by the lower-case toned byte,
//!   e.g. `Ấ` = `0xA2 0xCA` (`Â` + `ấ`).
//!
//! The decoder reads both at once: a base capital followed by the toned
//! byte of the same letter becomes the toned capital. That reading is
//! ambiguous only for a base capital followed by its own toned lower-case
//! letter (`Aà`), which Vietnamese spelling never produces; the two-byte
//! encoder refuses to write such a pair, so its output always decodes back to
//! the same text. Because a base capital may be the first half of a pair, the
//! streaming decoder holds back a base capital at the end of a buffer until
//! it sees the next byte.

use super::ascii::{is_ascii_chunk, STRIDE};
use super::single_byte::SingleByte;
use super::tables::{TCVN3, TCVN3_PAIRS};

/// The single-byte VN3 table and everything derived from it.
pub(crate) static VN3: SingleByte = SingleByte::new(&TCVN3);

/// Which TCVN3 convention to write (the decoder accepts both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tcvn3Convention {
    /// VN3 table only; toned capitals cannot be written.
    SingleByte,
    /// VN3 table plus base capital + toned lower-case byte for toned capitals.
    #[default]
    TwoByte,
}

impl Tcvn3Convention {
    /// Short name for messages and the `--tcvn3` flag.
    pub fn label(self) -> &'static str {
        match self {
            Tcvn3Convention::SingleByte => "single-byte",
            Tcvn3Convention::TwoByte => "two-byte",
        }
    }
}

/// Number of base capitals (A E I O U Y Ă Â Ê Ô Ơ Ư).
const BASES: usize = 12;

/// For every byte: 1 + its index among the base capitals, or 0.
static BASE_INDEX: [u8; 256] = {
    let mut idx = [0u8; 256];
    let mut k = 0;
    let mut n = 0;
    while k < TCVN3_PAIRS.len() {
        let b = TCVN3_PAIRS[k].1 as usize;
        if idx[b] == 0 {
            n += 1;
            idx[b] = n;
        }
        k += 1;
    }
    assert!(n as usize == BASES);
    idx
};

/// `PAIRS_UTF8[base index][second byte - 0x80]`: packed UTF-8 (as in
/// `SingleByte::utf8`) of the toned capital, or 0 if the bytes are no pair.
static PAIRS_UTF8: [[u32; 128]; BASES + 1] = {
    let mut t = [[0u32; 128]; BASES + 1];
    let mut k = 0;
    while k < TCVN3_PAIRS.len() {
        let (cp, b1, b2) = TCVN3_PAIRS[k];
        assert!(b2 >= 0x80);
        let cp = cp as u32;
        // Every toned capital is a 2- or 3-byte UTF-8 character.
        let packed = if cp < 0x800 {
            (0xC0 | (cp >> 6)) | ((0x80 | (cp & 0x3F)) << 8) | (2 << 24)
        } else {
            (0xE0 | (cp >> 12))
                | ((0x80 | ((cp >> 6) & 0x3F)) << 8)
                | ((0x80 | (cp & 0x3F)) << 16)
                | (3 << 24)
        };
        t[BASE_INDEX[b1 as usize] as usize][(b2 - 0x80) as usize] = packed;
        k += 1;
    }
    t
};

/// True if `b1 b2` is a two-byte toned capital.
#[inline]
pub(crate) fn is_pair(b1: u8, b2: u8) -> bool {
    b2 >= 0x80 && PAIRS_UTF8[BASE_INDEX[b1 as usize] as usize][(b2 - 0x80) as usize] != 0
}

/// The two bytes of a toned capital with no VN3 byte.
#[inline]
pub(crate) fn pair_of(c: char) -> Option<(u8, u8)> {
    let cp = u16::try_from(c as u32).ok()?;
    TCVN3_PAIRS
        .binary_search_by_key(&cp, |&(c, _, _)| c)
        .ok()
        .map(|k| (TCVN3_PAIRS[k].1, TCVN3_PAIRS[k].2))
}

/// Appends packed UTF-8 to `out`.
#[inline(always)]
fn push_packed(out: &mut Vec<u8>, e: u32) {
    out.extend_from_slice(&e.to_le_bytes()[..(e >> 24) as usize]);
}

/// Decodes `src` reading both conventions, appending to `out`.
///
/// `pending` carries a base capital held back at the end of the previous
/// buffer. With `last == false`, a base capital ending `src` is held back in
/// `pending` instead of being written. On an unmapped byte, stops there and
/// returns its index in `src` (a pending byte is always a valid character,
/// so errors never point before `src`).
pub(crate) fn decode_append(
    src: &[u8],
    last: bool,
    pending: &mut Option<u8>,
    out: &mut String,
) -> Result<(), usize> {
    let mut buf = std::mem::take(out).into_bytes();
    let result = decode_append_bytes(src, last, pending, &mut buf);
    debug_assert!(std::str::from_utf8(&buf).is_ok());
    // Safety: `buf` held a valid String and decode_append_bytes only appends
    // whole sequences from `VN3.utf8` and `PAIRS_UTF8`, both built from
    // non-surrogate BMP code points by the const code above.
    *out = unsafe { String::from_utf8_unchecked(buf) };
    result
}

/// Byte-level body of [`decode_append`].
///
/// Same scheme as the single-byte decoder: long ASCII runs are copied with
/// one memcpy, everything else is decoded in blocks into a zero-filled tail
/// of `out` (at most 3 output bytes per input byte, 4-byte stores).
fn decode_append_bytes(
    src: &[u8],
    last: bool,
    pending: &mut Option<u8>,
    out: &mut Vec<u8>,
) -> Result<(), usize> {
    const BLOCK: usize = 4096;
    let table = &VN3.utf8;
    let n = src.len();
    let mut start = 0;
    if let Some(p) = pending.take() {
        match src.first() {
            None if !last => {
                *pending = Some(p);
                return Ok(());
            }
            Some(&b2) if is_pair(p, b2) => {
                push_packed(
                    out,
                    PAIRS_UTF8[BASE_INDEX[p as usize] as usize][(b2 - 0x80) as usize],
                );
                start = 1;
            }
            _ => push_packed(out, table[p as usize]),
        }
    }
    while start < n {
        // A pair's second byte is >= 0x80, so an ASCII run can be copied
        // whole: its last byte pairs with nothing inside the run, and the
        // byte after it is handled below, where the base is looked at again.
        let run = super::ascii::ascii_prefix_len(&src[start..]);
        if run >= 2 * STRIDE || start + run == n {
            // Leave a final base capital to the block loop (it may pair with
            // the next byte or need holding back).
            let copy = if start + run < n || !last {
                run.saturating_sub(1)
            } else {
                run
            };
            out.extend_from_slice(&src[start..start + copy]);
            start += copy;
            if start == n {
                break;
            }
        }
        let end_block = n.min(start + BLOCK);
        let base = out.len();
        out.resize(base + 3 * (end_block - start) + 4, 0);
        let dst = &mut out[base..];
        let (mut i, mut o) = (start, 0);
        let mut result = Ok(());
        'block: while i < end_block {
            // ASCII words whose following byte cannot complete a pair.
            while i + STRIDE < end_block && src[i + STRIDE] < 0x80 {
                let chunk: &[u8; STRIDE] = src[i..i + STRIDE].try_into().expect("STRIDE");
                if !is_ascii_chunk(chunk) {
                    break;
                }
                dst[o..o + STRIDE].copy_from_slice(chunk);
                i += STRIDE;
                o += STRIDE;
            }
            // Then up to one word byte by byte before trying words again.
            let end = end_block.min(i + STRIDE);
            while i < end {
                let b = src[i];
                let bi = BASE_INDEX[b as usize] as usize;
                if bi != 0 {
                    // Look at the next byte even past the block: pairs never split.
                    match src.get(i + 1) {
                        Some(&b2) if b2 >= 0x80 => {
                            let e = PAIRS_UTF8[bi][(b2 - 0x80) as usize];
                            if e != 0 {
                                dst[o..o + 4].copy_from_slice(&e.to_le_bytes());
                                o += (e >> 24) as usize;
                                i += 2;
                                continue;
                            }
                        }
                        None if !last => {
                            *pending = Some(b);
                            i += 1;
                            break 'block;
                        }
                        _ => {}
                    }
                }
                let e = table[b as usize];
                if e == 0 {
                    result = Err(i);
                    break 'block;
                }
                dst[o..o + 4].copy_from_slice(&e.to_le_bytes());
                o += (e >> 24) as usize;
                i += 1;
            }
        }
        out.truncate(base + o);
        result?;
        start = i;
    }
    Ok(())
}

/// Why a character could not be written (see `EncodeErrorKind`).
pub(crate) enum Tcvn3EncodeFailure {
    /// No byte (or pair) at all.
    Unmappable,
    /// A toned capital, which only the two-byte convention can write.
    NeedsTwoByte,
    /// Would merge with the preceding base capital (char) into a pair.
    Ambiguous(char),
}

/// Encodes `text` in `convention`, appending to `out`.
///
/// `prev` carries the base capital last written (by a previous call too), so
/// the two-byte encoder can refuse a character that would merge with it.
/// On failure returns the byte offset in `text`, the character and why.
pub(crate) fn encode_append(
    text: &str,
    convention: Tcvn3Convention,
    prev: &mut Option<char>,
    out: &mut Vec<u8>,
) -> Result<(), (usize, char, Tcvn3EncodeFailure)> {
    let bytes = text.as_bytes();
    out.reserve(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let ascii = super::ascii::ascii_prefix_len(&bytes[i..]);
        if ascii > 0 {
            out.extend_from_slice(&bytes[i..i + ascii]);
            i += ascii;
            let last = bytes[i - 1];
            *prev = (BASE_INDEX[last as usize] != 0).then_some(last as char);
            if i == bytes.len() {
                break;
            }
        }
        let c = text[i..].chars().next().expect("non-empty");
        if let Some(b) = VN3.encode_char(c) {
            if convention == Tcvn3Convention::TwoByte {
                if let Some(p) = *prev {
                    let pb = VN3.encode_char(p).expect("base capitals are in VN3");
                    if is_pair(pb, b) {
                        return Err((i, c, Tcvn3EncodeFailure::Ambiguous(p)));
                    }
                }
            }
            out.push(b);
            *prev = (BASE_INDEX[b as usize] != 0).then_some(c);
        } else if let Some((b1, b2)) = pair_of(c) {
            if convention == Tcvn3Convention::SingleByte {
                return Err((i, c, Tcvn3EncodeFailure::NeedsTwoByte));
            }
            out.push(b1);
            out.push(b2);
            *prev = None;
        } else {
            return Err((i, c, Tcvn3EncodeFailure::Unmappable));
        }
        i += c.len_utf8();
    }
    Ok(())
}

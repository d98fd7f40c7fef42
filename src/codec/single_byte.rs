//! The one shape every single-byte codec shares: a generated `[u16; 128]` for
//! the high half, from which everything else is derived at compile time.
//!
//! Decoding looks each byte up in a 256-entry table of ready-made UTF-8
//! (up to three bytes, packed little-endian, with the length in the top byte),
//! so the hot loop is one load, one 4-byte store and one add per byte, with a
//! 16-bytes-at-a-time ASCII fast path in front of it.
//!
//! Encoding uses two direct 128-entry blocks (U+0080..U+00FF and
//! U+0400..U+047F, where nearly all the characters of these codecs live) and
//! falls back to a binary search of the sorted reverse table.

use super::ascii::{is_ascii_chunk, STRIDE};

/// Derived lookup tables for one single-byte codec.
pub(crate) struct SingleByte {
    /// Code points of bytes 0x80..=0xFF; 0 = unmapped.
    pub high: &'static [u16; 128],
    /// For every byte: its UTF-8 bytes packed little-endian in bits 0..24 and
    /// their count in bits 24..32; 0 = unmapped.
    pub utf8: [u32; 256],
    /// Byte for U+0080 + i; 0 = not in this codec (no high byte is 0).
    latin_block: [u8; 128],
    /// Byte for U+0400 + i (Cyrillic); 0 = not in this codec.
    cyrillic_block: [u8; 128],
    /// (code point, byte) of every mapped high byte, sorted by code point;
    /// only the first `rev_len` entries are meaningful.
    rev: [(u16, u8); 128],
    rev_len: usize,
}

/// UTF-8 of a BMP code point packed as described on [`SingleByte::utf8`].
const fn pack_utf8(cp: u32) -> u32 {
    if cp < 0x80 {
        cp | (1 << 24)
    } else if cp < 0x800 {
        (0xC0 | (cp >> 6)) | ((0x80 | (cp & 0x3F)) << 8) | (2 << 24)
    } else {
        (0xE0 | (cp >> 12))
            | ((0x80 | ((cp >> 6) & 0x3F)) << 8)
            | ((0x80 | (cp & 0x3F)) << 16)
            | (3 << 24)
    }
}

impl SingleByte {
    /// Builds every derived table from the generated high half (compile time).
    pub const fn new(high: &'static [u16; 128]) -> SingleByte {
        let mut utf8 = [0u32; 256];
        let mut i = 0;
        while i < 128 {
            utf8[i] = pack_utf8(i as u32);
            i += 1;
        }
        let mut latin_block = [0u8; 128];
        let mut cyrillic_block = [0u8; 128];
        let mut rev = [(0xFFFFu16, 0u8); 128];
        let mut rev_len = 0;
        let mut i = 0;
        while i < 128 {
            let cp = high[i];
            let byte = (0x80 + i) as u8;
            if cp != 0 {
                // Surrogates can never be in a table; a code point below 0x80
                // in the high half would break the ASCII fast path's premise.
                assert!(cp >= 0x80 && !(cp >= 0xD800 && cp <= 0xDFFF));
                utf8[0x80 + i] = pack_utf8(cp as u32);
                if cp < 0x100 {
                    assert!(
                        latin_block[(cp - 0x80) as usize] == 0,
                        "duplicate code point"
                    );
                    latin_block[(cp - 0x80) as usize] = byte;
                } else if cp >= 0x400 && cp < 0x480 {
                    assert!(
                        cyrillic_block[(cp - 0x400) as usize] == 0,
                        "duplicate code point"
                    );
                    cyrillic_block[(cp - 0x400) as usize] = byte;
                }
                // Insertion sort: 128 entries, once, at compile time.
                let mut j = rev_len;
                while j > 0 && rev[j - 1].0 > cp {
                    rev[j] = rev[j - 1];
                    j -= 1;
                }
                assert!(j == 0 || rev[j - 1].0 != cp, "duplicate code point");
                rev[j] = (cp, byte);
                rev_len += 1;
            }
            i += 1;
        }
        SingleByte {
            high,
            utf8,
            latin_block,
            cyrillic_block,
            rev,
            rev_len,
        }
    }

    /// The byte for `c`, if this codec has one.
    #[inline]
    pub fn encode_char(&self, c: char) -> Option<u8> {
        let cp = c as u32;
        if cp < 0x80 {
            return Some(cp as u8);
        }
        let byte = if cp < 0x100 {
            self.latin_block[(cp - 0x80) as usize]
        } else if (0x400..0x480).contains(&cp) {
            self.cyrillic_block[(cp - 0x400) as usize]
        } else if cp > 0xFFFF {
            0
        } else {
            let rev = &self.rev[..self.rev_len];
            match rev.binary_search_by_key(&(cp as u16), |&(c, _)| c) {
                Ok(k) => rev[k].1,
                Err(_) => 0,
            }
        };
        (byte != 0).then_some(byte)
    }

    /// The character of `byte`, if mapped.
    #[inline]
    pub fn decode_byte(&self, byte: u8) -> Option<char> {
        if byte < 0x80 {
            return Some(byte as char);
        }
        match self.high[(byte - 0x80) as usize] {
            0 => None,
            cp => char::from_u32(cp as u32),
        }
    }

    /// Appends the UTF-8 of `src` to `out`; on an unmapped byte stops there
    /// (everything before it is appended) and returns its index in `src`.
    pub fn decode_append(&self, src: &[u8], out: &mut String) -> Result<(), usize> {
        // Work on the String's bytes; the Safety note at the end says why
        // handing them back unchecked is sound.
        let mut buf = std::mem::take(out).into_bytes();
        let result = self.decode_append_bytes(src, &mut buf);
        debug_assert!(std::str::from_utf8(&buf).is_ok());
        // Safety: `buf` held a valid String, and decode_append_bytes only
        // appends whole UTF-8 sequences copied from `self.utf8`, each of which
        // `pack_utf8` built from a non-surrogate BMP code point (asserted in
        // `new`); tests/it/codec/oracles.rs checks every entry against
        // `char::encode_utf8` as well.
        *out = unsafe { String::from_utf8_unchecked(buf) };
        result
    }

    /// Byte-level body of [`decode_append`](Self::decode_append).
    fn decode_append_bytes(&self, src: &[u8], buf: &mut Vec<u8>) -> Result<(), usize> {
        // Non-ASCII text is decoded in blocks into a zero-filled tail of
        // `buf` (safe indexing, no uninitialised memory): each input byte
        // becomes at most 3 output bytes and each store writes 4, so a block
        // of BLOCK bytes needs 3 * BLOCK + 4 spare. Blocks keep that tail in
        // L1. Long ASCII runs skip it and are copied with one memcpy.
        const BLOCK: usize = 4096;
        let table = &self.utf8;
        let mut start = 0;
        while start < src.len() {
            // Scan an L1-sized piece, then copy it while it is still in
            // cache: one trip to memory for long ASCII runs, not two.
            loop {
                let piece = &src[start..src.len().min(start + BLOCK)];
                let run = super::ascii::ascii_prefix_len(piece);
                if run < 2 * STRIDE && start + run != src.len() {
                    break; // short run: the block loop handles it in place
                }
                buf.extend_from_slice(&piece[..run]);
                start += run;
                if run < piece.len() || start == src.len() {
                    break;
                }
            }
            if start == src.len() {
                break;
            }
            let block = &src[start..src.len().min(start + BLOCK)];
            let base = buf.len();
            buf.resize(base + 3 * block.len() + 4, 0);
            let dst = &mut buf[base..];
            let n = block.len();
            let (mut i, mut o) = (0, 0);
            let mut failed = None;
            'outer: while i < n {
                // ASCII fast path: copy whole 16-byte words while they last.
                while i + STRIDE <= n {
                    let chunk: &[u8; STRIDE] = block[i..i + STRIDE].try_into().expect("STRIDE");
                    if !is_ascii_chunk(chunk) {
                        break;
                    }
                    dst[o..o + STRIDE].copy_from_slice(chunk);
                    i += STRIDE;
                    o += STRIDE;
                }
                // Table path, four bytes per step: one bounds check for four
                // stores, as the masked lengths (<= 3 each) keep every store
                // inside the 16-byte window.
                let end = n.min(i + STRIDE);
                while i + 4 <= end {
                    let e = [
                        table[block[i] as usize],
                        table[block[i + 1] as usize],
                        table[block[i + 2] as usize],
                        table[block[i + 3] as usize],
                    ];
                    if e.contains(&0) {
                        break; // the scalar loop below finds the exact byte
                    }
                    let d: &mut [u8; 16] = (&mut dst[o..o + 16]).try_into().expect("16");
                    // Lengths masked to 0..=3 let the compiler prove every
                    // store below stays inside `d` (last one ends at <= 13).
                    let len = |e: u32| ((e >> 24) & 3) as usize;
                    let k1 = len(e[0]);
                    let k2 = k1 + len(e[1]);
                    let k3 = k2 + len(e[2]);
                    let k = k3 + len(e[3]);
                    d[..4].copy_from_slice(&e[0].to_le_bytes());
                    d[k1..k1 + 4].copy_from_slice(&e[1].to_le_bytes());
                    d[k2..k2 + 4].copy_from_slice(&e[2].to_le_bytes());
                    d[k3..k3 + 4].copy_from_slice(&e[3].to_le_bytes());
                    o += k;
                    i += 4;
                }
                while i < end {
                    let e = table[block[i] as usize];
                    if e == 0 {
                        failed = Some(start + i);
                        break 'outer;
                    }
                    dst[o..o + 4].copy_from_slice(&e.to_le_bytes());
                    o += (e >> 24) as usize;
                    i += 1;
                }
            }
            buf.truncate(base + o);
            if let Some(at) = failed {
                return Err(at);
            }
            start += n;
        }
        Ok(())
    }

    /// Appends the bytes of `text` to `out`; on a character this codec lacks,
    /// stops there and returns its byte offset in `text` and the character.
    pub fn encode_append(&self, text: &str, out: &mut Vec<u8>) -> Result<(), (usize, char)> {
        let bytes = text.as_bytes();
        out.reserve(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let ascii = super::ascii::ascii_prefix_len(&bytes[i..]);
            out.extend_from_slice(&bytes[i..i + ascii]);
            i += ascii;
            if i == bytes.len() {
                break;
            }
            // Non-ASCII: decode one char from the str (i is a char boundary
            // because only whole chars were consumed).
            let c = text[i..].chars().next().expect("non-empty");
            match self.encode_char(c) {
                Some(b) => out.push(b),
                None => return Err((i, c)),
            }
            i += c.len_utf8();
        }
        Ok(())
    }
}

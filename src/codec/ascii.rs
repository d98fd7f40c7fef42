//! ASCII fast path shared by every decoder: a word-at-a-time scan.
//!
//! Plain safe Rust on `u128` words: the compiler turns the 16-byte load and
//! mask into one SSE2/NEON load and test, which is all the speed we need
//! without `unsafe` or target-specific intrinsics.

/// High bit of every byte in a 16-byte word.
const HIGH_BITS: u128 = 0x8080_8080_8080_8080_8080_8080_8080_8080;

/// Bytes the fast path looks at per step.
pub const STRIDE: usize = 16;

/// True if the 16 bytes at `chunk` are all ASCII.
#[inline(always)]
pub fn is_ascii_chunk(chunk: &[u8; STRIDE]) -> bool {
    u128::from_le_bytes(*chunk) & HIGH_BITS == 0
}

/// Length of the all-ASCII prefix of `bytes` (the offset of the first byte >= 0x80).
#[inline]
pub fn ascii_prefix_len(bytes: &[u8]) -> usize {
    let mut i = 0;
    // Four words per step while the input is long: OR-ing the words costs
    // nothing and the loop overhead (bounds, branch) is paid once per 64 bytes.
    while let Some(block) = bytes.get(i..i + 4 * STRIDE) {
        let word = |k: usize| {
            let w: &[u8; STRIDE] = block[k * STRIDE..(k + 1) * STRIDE]
                .try_into()
                .expect("STRIDE");
            u128::from_le_bytes(*w)
        };
        if (word(0) | word(1) | word(2) | word(3)) & HIGH_BITS != 0 {
            break;
        }
        i += 4 * STRIDE;
    }
    // Whole words next; the scalar tail below finds the exact byte.
    while let Some(chunk) = bytes.get(i..i + STRIDE) {
        let chunk: &[u8; STRIDE] = chunk.try_into().expect("STRIDE bytes");
        if !is_ascii_chunk(chunk) {
            break;
        }
        i += STRIDE;
    }
    while i < bytes.len() && bytes[i] < 0x80 {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_finds_first_high_byte_at_every_position() {
        for len in 0..150 {
            let mut v = vec![b'a'; len];
            assert_eq!(ascii_prefix_len(&v), len);
            for pos in 0..len {
                v[pos] = 0x80;
                assert_eq!(ascii_prefix_len(&v), pos, "len {len} pos {pos}");
                v[pos] = b'a';
            }
        }
    }
}

//! Strict UTF-8 (RFC 3629) validation as a table-driven DFA.
//!
//! The automaton is the classic byte-class one (Hoehrmann's design): each
//! byte maps to one of 12 classes chosen so that every special case of
//! RFC 3629 has its own class (E0 needs A0..BF next to forbid overlongs, ED
//! needs 80..9F to forbid surrogates, F0 needs 90..BF, F4 needs 80..8F to stay
//! at or below U+10FFFF; C0, C1 and F5..FF can never appear), and a
//! state x class table gives the next state.
//!
//! For speed the class and transition tables are folded at compile time into
//! one `u64` per byte value holding the next state for every current state
//! (6 bits each, the state number being its bit offset), so one step is
//! `state = ROW[byte] >> state`: a single shift on the critical path instead
//! of two dependent loads. ASCII runs skip the automaton 16 bytes at a time.

use super::ascii::{ascii_prefix_len, STRIDE};

/// Byte classes; see the module comment for why these twelve.
const fn class_of(b: u8) -> usize {
    match b {
        0x00..=0x7F => 0,
        0x80..=0x8F => 1,
        0x90..=0x9F => 2,
        0xA0..=0xBF => 3,
        0xC0 | 0xC1 | 0xF5..=0xFF => 4,
        0xC2..=0xDF => 5,
        0xE0 => 6,
        0xE1..=0xEC | 0xEE | 0xEF => 7,
        0xED => 8,
        0xF0 => 9,
        0xF1..=0xF3 => 10,
        0xF4 => 11,
    }
}

/// Between sequences (the only accepting state).
const ACCEPT: usize = 0;
/// Absorbing error state.
const REJECT: usize = 1;
/// Expecting one more continuation byte (80..BF).
const TAIL1: usize = 2;
/// Expecting two more continuation bytes.
const TAIL2: usize = 3;
/// After E0: expecting A0..BF, then one more.
const AFTER_E0: usize = 4;
/// After ED: expecting 80..9F, then one more.
const AFTER_ED: usize = 5;
/// After F0: expecting 90..BF, then two more.
const AFTER_F0: usize = 6;
/// After F1..F3: expecting three continuation bytes.
const TAIL3: usize = 7;
/// After F4: expecting 80..8F, then two more.
const AFTER_F4: usize = 8;
/// Number of states.
const STATES: usize = 9;

/// `TRANSITIONS[state][class]` = next state.
const TRANSITIONS: [[usize; 12]; STATES] = {
    let r = REJECT;
    [
        // class:  ascii 80-8F 90-9F A0-BF bad  C2-DF E0        E1-EF ED        F0        F1-F3 F4
        /*ACCEPT*/
        [
            ACCEPT, r, r, r, r, TAIL1, AFTER_E0, TAIL2, AFTER_ED, AFTER_F0, TAIL3, AFTER_F4,
        ],
        /*REJECT*/ [r; 12],
        /*TAIL1 */ [r, ACCEPT, ACCEPT, ACCEPT, r, r, r, r, r, r, r, r],
        /*TAIL2 */ [r, TAIL1, TAIL1, TAIL1, r, r, r, r, r, r, r, r],
        /*E0    */ [r, r, r, TAIL1, r, r, r, r, r, r, r, r],
        /*ED    */ [r, TAIL1, TAIL1, r, r, r, r, r, r, r, r, r],
        /*F0    */ [r, r, TAIL2, TAIL2, r, r, r, r, r, r, r, r],
        /*TAIL3 */ [r, TAIL2, TAIL2, TAIL2, r, r, r, r, r, r, r, r],
        /*F4    */ [r, TAIL2, r, r, r, r, r, r, r, r, r, r],
    ]
};

/// Bytes the automaton runs between reject checks (longer runs amortise the
/// check; the slow path re-scans at most this much).
const DFA_RUN: usize = 2 * STRIDE;

/// Bits per state in a shift row; a state's value is its bit offset.
const BITS: usize = 6;

/// `ROWS[byte] >> (state * BITS)` has the next state (times BITS) in its low bits.
static ROWS: [u64; 256] = {
    let mut rows = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let class = class_of(b as u8);
        let mut s = 0;
        while s < STATES {
            rows[b] |= ((TRANSITIONS[s][class] * BITS) as u64) << (s * BITS);
            s += 1;
        }
        b += 1;
    }
    rows
};

/// A DFA state as carried between calls: the accepting state is 0.
pub(crate) type State = u64;
/// The accepting state.
pub(crate) const S_ACCEPT: State = (ACCEPT * BITS) as u64;
/// The rejecting state.
pub(crate) const S_REJECT: State = (REJECT * BITS) as u64;

/// One DFA step. `wrapping_shr` masks the amount to 6 bits, which is exactly
/// the state field, so no `& 63` is needed on the critical path.
#[inline(always)]
pub(crate) fn step(state: State, byte: u8) -> State {
    ROWS[byte as usize].wrapping_shr(state as u32) & 63
}

/// Where and why validation failed, with the same meaning as
/// [`std::str::Utf8Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf8Error {
    /// Length of the longest valid prefix.
    pub valid_up_to: usize,
    /// Length of the invalid sequence at `valid_up_to` (1..=3), or `None` if
    /// the input ends in the middle of a sequence that could still be valid.
    pub error_len: Option<u8>,
}

impl std::fmt::Display for Utf8Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.error_len {
            Some(n) => write!(
                f,
                "invalid UTF-8 sequence of {n} byte(s) at offset {}",
                self.valid_up_to
            ),
            None => write!(
                f,
                "incomplete UTF-8 sequence at end of input (offset {})",
                self.valid_up_to
            ),
        }
    }
}

impl std::error::Error for Utf8Error {}

/// Checks that `bytes` is strict UTF-8 (RFC 3629: no overlongs, no
/// surrogates, nothing above U+10FFFF), reporting the first invalid byte.
pub fn validate_utf8(bytes: &[u8]) -> Result<(), Utf8Error> {
    let n = bytes.len();
    let mut i = 0;
    let mut state = S_ACCEPT;
    while i < n {
        // Look for an ASCII run only where one starts: in Cyrillic text the
        // next byte is usually a lead byte, and the call would be wasted.
        if state == S_ACCEPT && bytes[i] < 0x80 {
            i += ascii_prefix_len(&bytes[i..]);
            if i == n {
                break;
            }
        }
        // Run the automaton over one word without looking at the state; the
        // reject state is absorbing, so one check per word is enough.
        let chunk_start = i;
        let chunk_state = state;
        let end = n.min(i + DFA_RUN);
        // Skip the unshifted `& 63` inside the loop: only the low 6 bits
        // of the shift amount are used, so garbage above them is harmless.
        let mut s = state;
        while i < end {
            s = ROWS[bytes[i] as usize].wrapping_shr(s as u32);
            i += 1;
        }
        state = s & 63;
        if state == S_REJECT {
            return Err(locate_error(bytes, chunk_start, chunk_state));
        }
    }
    if state != S_ACCEPT {
        // Incomplete final sequence: it starts at the last lead byte.
        let mut start = n - 1;
        while bytes[start] & 0xC0 == 0x80 {
            start -= 1;
        }
        return Err(Utf8Error {
            valid_up_to: start,
            error_len: None,
        });
    }
    Ok(())
}

/// Slow path once a word is known to contain an error: finds the start of the
/// sequence in progress at `chunk_start` and steps byte by byte from there.
#[cold]
fn locate_error(bytes: &[u8], chunk_start: usize, chunk_state: State) -> Utf8Error {
    let mut seq_start = chunk_start;
    if chunk_state != S_ACCEPT {
        // A sequence was in progress: its lead byte is at most 3 bytes back.
        seq_start -= 1;
        while bytes[seq_start] & 0xC0 == 0x80 {
            seq_start -= 1;
        }
    }
    let mut state = S_ACCEPT;
    let mut i = seq_start;
    loop {
        if state == S_ACCEPT {
            seq_start = i;
        }
        let next = step(state, bytes[i]);
        if next == S_REJECT {
            // A bad lead byte is itself the invalid sequence; otherwise the
            // bytes before this one are (the maximal subpart, as in std).
            let len = if i == seq_start { 1 } else { i - seq_start };
            return Utf8Error {
                valid_up_to: seq_start,
                error_len: Some(len as u8),
            };
        }
        state = next;
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn std_result(b: &[u8]) -> Result<(), Utf8Error> {
        std::str::from_utf8(b).map(|_| ()).map_err(|e| Utf8Error {
            valid_up_to: e.valid_up_to(),
            error_len: e.error_len().map(|n| n as u8),
        })
    }

    #[test]
    fn every_sequence_of_up_to_two_bytes_matches_std() {
        for a in 0..=255u8 {
            assert_eq!(validate_utf8(&[a]), std_result(&[a]));
            for b in 0..=255u8 {
                assert_eq!(
                    validate_utf8(&[a, b]),
                    std_result(&[a, b]),
                    "{a:02X} {b:02X}"
                );
            }
        }
    }

    #[test]
    fn every_three_byte_sequence_with_a_multibyte_lead_matches_std() {
        for a in 0xC0..=0xFFu8 {
            for b in 0x70..=0xC5u8 {
                for c in 0..=255u8 {
                    let s = [a, b, c];
                    assert_eq!(validate_utf8(&s), std_result(&s), "{s:02X?}");
                }
            }
        }
    }

    #[test]
    fn boundaries_of_rfc_3629() {
        assert!(validate_utf8(
            "\u{7F}\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFF}\u{10000}\u{10FFFF}".as_bytes()
        )
        .is_ok());
        for bad in [
            &b"\xC0\x80"[..],
            b"\xE0\x9F\xBF",
            b"\xED\xA0\x80",
            b"\xF0\x8F\xBF\xBF",
            b"\xF4\x90\x80\x80",
            b"\xF8\x88\x80\x80\x80",
        ] {
            assert_eq!(validate_utf8(bad), std_result(bad), "{bad:02X?}");
            assert!(validate_utf8(bad).is_err());
        }
    }

    #[test]
    fn errors_after_long_ascii_runs_are_located_exactly() {
        for pad in 0..40 {
            for bad in [
                &b"\xFF"[..],
                b"\xD0",
                b"\xD0\x41",
                b"\xE2\x82",
                b"\xE2\x82\x41",
            ] {
                let mut v = vec![b'x'; pad];
                v.extend_from_slice("Привет".as_bytes());
                v.extend_from_slice(bad);
                v.extend_from_slice(b"tail of text here......");
                assert_eq!(validate_utf8(&v), std_result(&v), "pad {pad} {bad:02X?}");
                v.truncate(v.len() - 23);
                assert_eq!(
                    validate_utf8(&v),
                    std_result(&v),
                    "pad {pad} {bad:02X?} at end"
                );
            }
        }
    }
}

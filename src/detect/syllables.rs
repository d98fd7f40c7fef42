//! The known Vietnamese syllables as a set of hashes, and the tone marks, for the scorer's
//! Vietnamese words ([`super::text`]). Pure.

use super::model;

/// FNV-1a over the lower-case letters of a syllable, for the syllable set.
#[inline]
pub(super) fn fnv(h: u64, c: char) -> u64 {
    (h ^ c as u64).wrapping_mul(0x100000001b3)
}

/// FNV-1a's offset basis: the hash of an empty syllable.
pub(super) const FNV0: u64 = 0xcbf29ce484222325;

/// A hasher that takes a key that is already a hash (FNV-1a of a syllable) as it is: SipHash
/// over it had been a fortieth of detection time.
#[derive(Default, Clone, Copy)]
pub(super) struct PreHashed(u64);

impl std::hash::Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = fnv(self.0, b as char);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A set of syllable hashes.
pub(super) type SyllableSet =
    std::collections::HashSet<u64, std::hash::BuildHasherDefault<PreHashed>>;

/// Hashes of the known Vietnamese syllables.
pub(super) fn vi_syllable_hashes() -> &'static SyllableSet {
    static SET: std::sync::OnceLock<SyllableSet> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        model::vietnamese()
            .syllables
            .iter()
            .map(|s| s.chars().fold(FNV0, fnv))
            .collect()
    })
}

/// True when a character carries a Vietnamese tone mark.
#[inline]
pub(super) fn has_tone(c: char) -> bool {
    let o = c as u32;
    // Precomposed toned vowels: Latin-1 (à á ã è é ì í ò ó õ ù ú ý), ĩ ũ, and
    // the Vietnamese block except the plain circumflex/breve/horn letters.
    matches!(
        o,
        0xC0 | 0xC1
            | 0xC3
            | 0xC8
            | 0xC9
            | 0xCC
            | 0xCD
            | 0xD2
            | 0xD3
            | 0xD5
            | 0xD9
            | 0xDA
            | 0xDD
            | 0xE0
            | 0xE1
            | 0xE3
            | 0xE8
            | 0xE9
            | 0xEC
            | 0xED
            | 0xF2
            | 0xF3
            | 0xF5
            | 0xF9
            | 0xFA
            | 0xFD
            | 0x128
            | 0x129
            | 0x168
            | 0x169
            | 0x1EA0..=0x1EF9
    )
}

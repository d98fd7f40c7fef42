//! What a character is in running text: a letter of which kind (for word segmentation), or
//! a symbol and what it costs there. Pure; used by the scorer ([`super::text`]) and by the
//! column rules that ask whether a UTF-8 reading is broken.

use super::chars;

/// Cost (nats, negative) of a non-letter character in running text.
#[inline]
pub(super) fn symbol_score(c: char) -> (f32, bool) {
    let o = c as u32;
    if o < 0x80 {
        // ASCII controls other than whitespace never occur in real text.
        return if o < 0x20 && !matches!(o, 0x09 | 0x0A | 0x0D) || o == 0x7F {
            (-12.0, true)
        } else {
            (0.0, false)
        };
    }
    match o {
        // NBSP, «», °, §, ©, ·, –, —, ‘’“”„, …, №, €: all at home in text.
        0xA0 | 0xAB | 0xBB | 0xB0 | 0xA7 | 0xA9 | 0xB7 | 0x2013 | 0x2014 | 0x2018 | 0x2019
        | 0x201C | 0x201D | 0x201E | 0x2026 | 0x2116 | 0x20AC => (-1.0, false),
        0x80..=0x9F | 0xFFFD => (-14.0, true),
        0x2500..=0x25FF | 0x2219 | 0x221A | 0x2248 | 0x2264 | 0x2265 | 0x2320 | 0x2321 => {
            (-7.0, true)
        }
        0xAD => (-5.0, true),
        // Superscripts, fractions, ±, ×, µ, ®, ™: unusual but honest in text.
        0xB2 | 0xB3 | 0xB9 | 0xBC..=0xBE | 0xB1 | 0xD7 | 0xB5 | 0xAE | 0x2122 => (-1.5, false),
        _ => (-4.0, true),
    }
}

/// True for a non-ASCII symbol that does not sit right beside a word in text: quotes,
/// dashes, the apostrophe, the ellipsis and the no-break space do.
#[inline]
pub(super) fn glues(c: char) -> bool {
    !c.is_ascii()
        && !matches!(
            c,
            '\u{A0}' | '«' | '»' | '„' | '“' | '”' | '‘' | '’' | '\u{2BC}' | '–' | '—' | '…'
        )
}

/// True when a symbol odd in text sits right before or after a letter ("C¸diz", "£Á"); one
/// beside a digit or a space ("£5") does not count. Asked only of a UTF-8 reading in a
/// column's context, so the scorer's loop does not pay for it.
pub fn glued_odd_symbol(s: &str) -> bool {
    let mut prev_letter = false;
    let mut odd_pending = false;
    for c in s.chars() {
        let letter = !matches!(kind(c), Kind::Other);
        if letter {
            if odd_pending {
                return true;
            }
            prev_letter = true;
        } else {
            let odd = symbol_score(c).1;
            if odd && prev_letter {
                return true;
            }
            odd_pending = odd;
            prev_letter = false;
        }
    }
    false
}

/// What kind of letter a character is, for word segmentation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A letter of the Cyrillic models (Russian, Ukrainian, Belarusian, South Slavic).
    Cyr,
    /// An ASCII letter.
    AsciiLetter,
    /// A Latin letter beyond ASCII (Latin-1, Latin Extended, Vietnamese).
    LatinExt,
    /// A letter of another script.
    OtherLetter,
    /// Anything else: digits, spaces, punctuation, symbols.
    Other,
}

#[inline]
pub(super) fn kind(c: char) -> Kind {
    let o = c as u32;
    if o < 0x80 {
        return if c.is_ascii_alphabetic() {
            Kind::AsciiLetter
        } else {
            Kind::Other
        };
    }
    match o {
        // ª and º are letters to Unicode but never sit inside a word.
        0xAA | 0xBA => Kind::Other,
        0x400..=0x45F | 0x490 | 0x491 => Kind::Cyr,
        0xC0..=0x24F if o != 0xD7 && o != 0xF7 => Kind::LatinExt,
        0x1E00..=0x1EFF => Kind::LatinExt,
        _ if chars::is_alphabetic(c) => Kind::OtherLetter,
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_symbols_glued_to_letters_are_found() {
        let glued = glued_odd_symbol;
        // A cedilla or a pound sign against a letter is mojibake ("C¸diz" is TCVN3 "Cádiz"
        // read as latin1); beside a digit or a space it may be genuine.
        assert!(glued("C¸diz"));
        assert!(glued("£Á"));
        assert!(glued("x£5"));
        assert!(!glued("£5"));
        assert!(!glued("cost £ 5"));
        assert!(!glued("Cádiz"));
    }
}

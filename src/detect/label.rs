//! Verdict labels: what the bytes really are, and the codec steps that repair them.

use crate::codec::{self, Encoding};
use std::fmt;
use std::str::FromStr;

/// What a value's bytes really are.
///
/// Mojibake chains are named by the wrong steps taken, first the encoding the
/// text really had, then the one it was wrongly read as before being stored
/// again as UTF-8: `cp1251>latin1` is cp1251 bytes read through a latin1
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Label {
    /// Only bytes below 0x80 (and no control junk): nothing to recode.
    Ascii,
    /// Valid UTF-8 with non-ASCII text that reads as itself.
    Utf8,
    /// Text in a legacy single-byte (or TCVN3) encoding.
    Legacy(Encoding),
    /// UTF-8 that holds text mangled by reading `real` bytes as `read_as`.
    Mojibake {
        /// The encoding the text really had.
        real: Encoding,
        /// The encoding it was wrongly read as (latin1 or cp1251).
        read_as: Encoding,
    },
    /// Not text: images, compressed data, hashes, random bytes.
    Binary,
    /// Undecided: the row is left alone and listed.
    Unknown,
}

/// One step of a repair: what the engine applies, in order, to the stored bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairStep {
    /// Read the stored bytes as UTF-8 text.
    DecodeUtf8,
    /// Encode the current text with this encoding, giving bytes.
    Encode(Encoding),
    /// Decode the current bytes with this encoding, only if re-encoding gives them back.
    DecodeLossless(Encoding),
}

/// Every reading `review` offers beside the scored ones: the legacy encodings and the
/// mojibake chains detection knows, so a DBA may choose one the models ranked low.
pub const REVIEW_LABELS: &[Label] = &[
    Label::Utf8,
    Label::Legacy(Encoding::Windows1251),
    Label::Legacy(Encoding::Koi8R),
    Label::Legacy(Encoding::Koi8U),
    Label::Legacy(Encoding::Ibm866),
    Label::Legacy(Encoding::Iso8859_5),
    Label::Legacy(Encoding::Tcvn3),
    Label::Mojibake {
        real: Encoding::Utf8,
        read_as: Encoding::Latin1,
    },
    Label::Mojibake {
        real: Encoding::Utf8,
        read_as: Encoding::Windows1251,
    },
    Label::Mojibake {
        real: Encoding::Windows1251,
        read_as: Encoding::Latin1,
    },
    Label::Mojibake {
        real: Encoding::Koi8R,
        read_as: Encoding::Latin1,
    },
    Label::Mojibake {
        real: Encoding::Ibm866,
        read_as: Encoding::Latin1,
    },
    Label::Mojibake {
        real: Encoding::Iso8859_5,
        read_as: Encoding::Latin1,
    },
    Label::Mojibake {
        real: Encoding::Tcvn3,
        read_as: Encoding::Latin1,
    },
];

/// The short name of an encoding as it appears in labels.
pub fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Utf8 => "utf-8",
        Encoding::Windows1251 => "cp1251",
        Encoding::Koi8R => "koi8-r",
        Encoding::Koi8U => "koi8-u",
        Encoding::Ibm866 => "cp866",
        Encoding::Iso8859_5 => "iso-8859-5",
        Encoding::Latin1 => "latin1",
        Encoding::Tcvn3 => "tcvn3",
    }
}

/// Parses a label's encoding name (also common aliases a DBA may type).
pub fn parse_encoding(s: &str) -> Option<Encoding> {
    Some(match s.to_ascii_lowercase().as_str() {
        "utf-8" | "utf8" | "utf8mb4" | "utf8mb3" => Encoding::Utf8,
        "cp1251" | "windows-1251" => Encoding::Windows1251,
        "koi8-r" | "koi8r" => Encoding::Koi8R,
        "koi8-u" | "koi8u" => Encoding::Koi8U,
        "cp866" | "ibm866" => Encoding::Ibm866,
        "iso-8859-5" | "iso8859-5" => Encoding::Iso8859_5,
        "latin1" | "cp1252" => Encoding::Latin1,
        "tcvn3" | "tcvn" | "vn3" => Encoding::Tcvn3,
        _ => return None,
    })
}

impl Label {
    /// The MySQL/MariaDB charset that decodes this label, where the server has one (TCVN3,
    /// ISO-8859-5 and the rest have none: only our codecs read them).
    pub fn server_charset(self) -> Option<&'static str> {
        match self {
            Label::Legacy(Encoding::Windows1251) => Some("cp1251"),
            Label::Legacy(Encoding::Koi8R) => Some("koi8r"),
            Label::Legacy(Encoding::Koi8U) => Some("koi8u"),
            Label::Legacy(Encoding::Ibm866) => Some("cp866"),
            Label::Legacy(Encoding::Latin1) => Some("latin1"),
            _ => None,
        }
    }

    /// True when the engine would rewrite the value under this label.
    pub fn needs_recode(self) -> bool {
        matches!(self, Label::Legacy(_) | Label::Mojibake { .. })
    }

    /// True for labels that name a legacy encoding or a mojibake chain.
    pub fn is_legacy(self) -> bool {
        matches!(self, Label::Legacy(_))
    }

    /// The steps that turn stored bytes under this label into the real text.
    ///
    /// `cp1251>latin1` is `[DecodeUtf8, Encode(latin1), DecodeLossless(cp1251)]`:
    /// undo the wrong read, then read the bytes as what they really are.
    pub fn repair_chain(self) -> Vec<RepairStep> {
        match self {
            Label::Ascii | Label::Utf8 => vec![RepairStep::DecodeUtf8],
            Label::Legacy(e) => vec![RepairStep::DecodeLossless(e)],
            Label::Mojibake { real, read_as } => vec![
                RepairStep::DecodeUtf8,
                RepairStep::Encode(read_as),
                RepairStep::DecodeLossless(real),
            ],
            Label::Binary | Label::Unknown => Vec::new(),
        }
    }

    /// The real text of `bytes` under this label, only if every step round-trips.
    ///
    /// Returns `None` for `binary`/`unknown` and whenever a step would lose
    /// information (the data-protecting rule: nothing lossy is ever written).
    pub fn repair(self, bytes: &[u8]) -> Option<String> {
        match self {
            Label::Ascii | Label::Utf8 => std::str::from_utf8(bytes).ok().map(str::to_owned),
            Label::Legacy(e) => codec::decode_lossless(e, bytes).ok(),
            Label::Mojibake { real, read_as } => {
                let shown = std::str::from_utf8(bytes).ok()?;
                let raw = codec::encode(read_as, shown).ok()?;
                // The wrong read must itself be reversible, or we would be
                // "repairing" text the mojibake step never produced.
                if codec::decode(read_as, &raw).ok()?.as_str() != shown {
                    return None;
                }
                if real == Encoding::Utf8 {
                    return String::from_utf8(raw).ok();
                }
                codec::decode_lossless(real, &raw).ok()
            }
            Label::Binary | Label::Unknown => None,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Ascii => f.write_str("ascii"),
            Label::Utf8 => f.write_str("utf-8"),
            Label::Legacy(e) => f.write_str(encoding_name(*e)),
            Label::Mojibake { real, read_as } => {
                f.write_str(encoding_name(*real))?;
                f.write_str(">")?;
                f.write_str(encoding_name(*read_as))
            }
            Label::Binary => f.write_str("binary"),
            Label::Unknown => f.write_str("unknown"),
        }
    }
}

/// Error for a string that names no label.
#[derive(Debug, thiserror::Error)]
#[error("unknown detection label {0:?} (expected e.g. ascii, utf-8, cp1251, koi8-r, cp866, iso-8859-5, tcvn3, binary, unknown, cp1251>latin1)")]
pub struct ParseLabelError(pub String);

impl FromStr for Label {
    type Err = ParseLabelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseLabelError(s.to_owned());
        match s {
            "ascii" => return Ok(Label::Ascii),
            "binary" => return Ok(Label::Binary),
            "unknown" => return Ok(Label::Unknown),
            _ => {}
        }
        if let Some((real, read_as)) = s.split_once('>') {
            let real = parse_encoding(real).ok_or_else(err)?;
            let read_as = parse_encoding(read_as).ok_or_else(err)?;
            return Ok(Label::Mojibake { real, read_as });
        }
        match parse_encoding(s).ok_or_else(err)? {
            Encoding::Utf8 => Ok(Label::Utf8),
            e => Ok(Label::Legacy(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_through_strings() {
        for s in [
            "ascii",
            "utf-8",
            "cp1251",
            "koi8-r",
            "koi8-u",
            "cp866",
            "iso-8859-5",
            "tcvn3",
            "binary",
            "unknown",
            "utf-8>latin1",
            "utf-8>cp1251",
            "cp1251>latin1",
            "tcvn3>latin1",
        ] {
            assert_eq!(s.parse::<Label>().unwrap().to_string(), s);
        }
        assert!("ebcdic".parse::<Label>().is_err());
    }

    #[test]
    fn repair_undoes_a_latin1_read_of_cp1251() {
        let label: Label = "cp1251>latin1".parse().unwrap();
        assert_eq!(label.repair("Ïðèâåò".as_bytes()).as_deref(), Some("Привет"));
        let label: Label = "utf-8>cp1251".parse().unwrap();
        assert_eq!(
            label.repair("РџСЂРёРІРµС‚".as_bytes()).as_deref(),
            Some("Привет")
        );
    }
}

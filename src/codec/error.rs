//! What a codec could not do, and where: the errors every decode and encode reports.

use super::Encoding;
use std::fmt;

/// A label that names no encoding we support.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown encoding {0:?} (known: utf-8, cp1251, koi8-r, koi8-u, cp866, iso-8859-5, latin1, tcvn3)")]
pub struct UnknownEncoding(pub String);

/// What kind of bytes a decoder could not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// A byte the codec has no character for.
    Unmapped,
    /// Bytes that are not a valid UTF-8 sequence.
    InvalidUtf8,
    /// A UTF-8 sequence cut off by the end of the input.
    IncompleteUtf8,
}

/// Bytes that cannot be decoded, with where they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    /// The encoding that was being decoded.
    pub encoding: Encoding,
    /// Offset of the first offending byte from the start of the input (or
    /// of the stream, for [`Decoder`]).
    pub offset: usize,
    /// What went wrong.
    pub kind: DecodeErrorKind,
    bytes: [u8; 4],
    len: u8,
}

impl DecodeError {
    /// An error at `offset`, keeping up to four of the offending bytes for the message.
    pub(super) fn new(
        encoding: Encoding,
        offset: usize,
        kind: DecodeErrorKind,
        bad: &[u8],
    ) -> Self {
        let mut bytes = [0; 4];
        let len = bad.len().min(4);
        bytes[..len].copy_from_slice(&bad[..len]);
        DecodeError {
            encoding,
            offset,
            kind,
            bytes,
            len: len as u8,
        }
    }

    /// The offending byte(s): one for single-byte codecs, the invalid or
    /// incomplete sequence for UTF-8.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex: Vec<String> = self.bytes().iter().map(|b| format!("0x{b:02X}")).collect();
        let hex = hex.join(" ");
        match self.kind {
            DecodeErrorKind::Unmapped => write!(
                f,
                "byte {hex} at offset {} has no {} character",
                self.offset, self.encoding
            ),
            DecodeErrorKind::InvalidUtf8 => {
                write!(f, "invalid UTF-8 {hex} at offset {}", self.offset)
            }
            DecodeErrorKind::IncompleteUtf8 => write!(
                f,
                "incomplete UTF-8 sequence {hex} at offset {} (end of input)",
                self.offset
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a character could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeErrorKind {
    /// The encoding has no byte for the character.
    Unmappable,
    /// A TCVN3 toned capital: only the two-byte convention can write it.
    Tcvn3NeedsTwoByte,
    /// TCVN3 two-byte convention: after the base capital `previous`, this
    /// character's byte would read back as one toned capital.
    Tcvn3Ambiguous {
        /// The base capital written just before.
        previous: char,
    },
}

/// A character that cannot be encoded, with where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeError {
    /// The target encoding.
    pub encoding: Encoding,
    /// Byte offset of the character in the UTF-8 input (or stream, for
    /// [`Encoder`]).
    pub offset: usize,
    /// The character.
    pub ch: char,
    /// Why it cannot be written.
    pub kind: EncodeErrorKind,
}

/// `U+4E2D '中'`, with controls and invisible characters escaped.
fn describe_char(c: char) -> String {
    format!("U+{:04X} '{}'", c as u32, c.escape_debug())
}

impl EncodeError {
    /// The character and why it cannot be written, without the offset:
    /// `U+4E2D '中' has no cp1251 byte`.
    pub fn describe(&self) -> String {
        let c = describe_char(self.ch);
        match self.kind {
            EncodeErrorKind::Unmappable => format!("{c} has no {} byte", self.encoding),
            EncodeErrorKind::Tcvn3NeedsTwoByte => format!(
                "{c} has no single-byte tcvn3 byte (the two-byte convention can write it)"
            ),
            EncodeErrorKind::Tcvn3Ambiguous { previous } => format!(
                "{c} cannot follow {} in two-byte tcvn3: the two bytes would read back as one capital",
                describe_char(previous)
            ),
        }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // "U+4E2D '中' at offset 2 has no cp1251 byte": the offset right
        // after the character it belongs to.
        let d = self.describe();
        let c = describe_char(self.ch);
        write!(f, "{c} at offset {}{}", self.offset, &d[c.len()..])
    }
}

impl std::error::Error for EncodeError {}

/// Why [`decode_lossless`] refused a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The bytes do not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The decoded text does not encode back.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The text re-encodes, but to different bytes.
    #[error("{encoding} round trip differs from the original at byte offset {offset}")]
    NotLossless {
        /// The encoding tried.
        encoding: Encoding,
        /// First byte offset where the re-encoded bytes differ.
        offset: usize,
    },
}

//! Where the server's own `CONVERT` gives exactly what our codec gives, proven byte by byte.
//!
//! The copy decides every value with our detector and codecs, but writing a decided value
//! does not need the value to travel back: when the server's conversion of the stored bytes
//! (`CONVERT(CAST(c AS BINARY) USING cp1251)`) is byte for byte our decoding, the server can
//! copy the row itself, as `ALTER TABLE` would. Which bytes agree is not assumed from a table
//! of what servers ship: it is asked of the server the job runs against, once per charset,
//! and a value takes the server's path only if the detector chose that label for it and
//! every one of its bytes is one the server decodes as we do.

use crate::codec::{self, Encoding};
use crate::db::quote;
use crate::detect::Label;
use anyhow::{Context, Result};
use sqlx::MySqlConnection;

/// The server's name for a single-byte legacy label it can convert (none for ISO-8859-5 and
/// TCVN3, which MySQL and MariaDB lack).
pub fn charset_of(label: Label) -> Option<&'static str> {
    label.server_charset()
}

/// Every label with a server charset ([`charset_of`]).
pub const LABELS: [Label; 5] = [
    Label::Legacy(Encoding::Windows1251),
    Label::Legacy(Encoding::Koi8R),
    Label::Legacy(Encoding::Koi8U),
    Label::Legacy(Encoding::Ibm866),
    Label::Legacy(Encoding::Latin1),
];

/// A label whose decoding the server reproduces, and for which bytes.
#[derive(Debug, Clone)]
pub struct ServerCodec {
    /// The label our detector must have chosen.
    pub label: Label,
    /// The server's charset for it.
    pub charset: &'static str,
    agree: [bool; 256],
}

impl ServerCodec {
    /// Whether the server's conversion of `stored` under this charset is our decoding of it.
    pub fn reproduces(&self, stored: &[u8]) -> bool {
        stored.iter().all(|&b| self.agree[b as usize])
    }

    /// Which bytes of `other`'s charset the server converts into this one and back to the
    /// text we read in them: byte `b` when the server decodes it as we do, and our codec
    /// encodes its character into a byte of this charset the server decodes as we do too. A
    /// value of `other` the copy names by key may then be written in this charset, its
    /// column's default's ([`crate::engine::copy`]'s choices).
    pub fn holds(&self, other: &ServerCodec) -> [bool; 256] {
        let mut holds = [false; 256];
        let (Label::Legacy(to), Label::Legacy(from)) = (self.label, other.label) else {
            return holds;
        };
        for (b, h) in holds.iter_mut().enumerate() {
            *h = other.agree[b]
                && codec::decode(from, &[b as u8])
                    .ok()
                    .and_then(|text| codec::encode(to, &text).ok())
                    .is_some_and(|bytes| self.reproduces(&bytes));
        }
        holds
    }

    /// Whether the server converts UTF-8 `text` into this charset and back unchanged: every
    /// character our codec encodes into a byte the server decodes as we do.
    pub fn writes(&self, text: &[u8]) -> bool {
        let Label::Legacy(enc) = self.label else {
            return false;
        };
        std::str::from_utf8(text)
            .ok()
            .and_then(|t| codec::encode(enc, t).ok())
            .is_some_and(|bytes| self.reproduces(&bytes))
    }

    /// The SQL giving the server's conversion of `column` (qualified and quoted by the caller).
    pub fn expr(&self, column: &str) -> String {
        format!(
            "CONVERT(CAST({column} AS BINARY) USING {})",
            quote::ident(self.charset)
        )
    }

    /// Builds it from what the server made of the bytes 0..=255 (`converted`, as UTF-8):
    /// `None` unless it gave one character per byte.
    pub fn from_server(label: Label, converted: &str) -> Option<ServerCodec> {
        let Label::Legacy(enc) = label else {
            return None;
        };
        let charset = charset_of(label)?;
        let chars: Vec<char> = converted.chars().collect();
        if chars.len() != 256 {
            return None;
        }
        let mut agree = [false; 256];
        for (b, server) in chars.iter().enumerate() {
            let ours = codec::decode(enc, &[b as u8]).ok();
            // A server that cannot map a byte writes '?': only a real '?' (0x3F) agrees.
            let unmapped = *server == '?' && b != 0x3F;
            agree[b] = !unmapped && ours.as_deref().and_then(|s| s.chars().next()) == Some(*server);
        }
        Some(ServerCodec {
            label,
            charset,
            agree,
        })
    }
}

/// Converts the bytes bound to `?` from `charset` to utf8mb4, as the server does, and hands
/// them back as bytes.
pub fn probe_sql(charset: &str) -> String {
    format!(
        "SELECT CAST(CONVERT(CONVERT(? USING {}) USING utf8mb4) AS BINARY)",
        quote::ident(charset)
    )
}

/// Asks the server to convert every byte under `label`'s charset and compares with our codec.
pub async fn probe(conn: &mut MySqlConnection, label: Label) -> Result<Option<ServerCodec>> {
    let Some(charset) = charset_of(label) else {
        return Ok(None);
    };
    let all: Vec<u8> = (0..=255u8).collect();
    let got: Option<Vec<u8>> = sqlx::query_scalar(&probe_sql(charset))
        .bind(all)
        .fetch_one(conn)
        .await
        .with_context(|| format!("asking the server how it converts {charset}"))?;
    Ok(got
        .and_then(|g| String::from_utf8(g).ok())
        .and_then(|s| ServerCodec::from_server(label, &s)))
}

/// What a server that decodes exactly as our codec does answers to the probe (for tests).
#[cfg(test)]
pub(crate) fn ours(enc: Encoding) -> String {
    (0..=255u8)
        .map(|b| {
            codec::decode(enc, &[b])
                .ok()
                .and_then(|s| s.chars().next())
                .unwrap_or('?')
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_decodes_as_we_do_agrees_on_every_mapped_byte() {
        let label = Label::Legacy(Encoding::Windows1251);
        let sc = ServerCodec::from_server(label, &ours(Encoding::Windows1251)).unwrap();
        let cp1251 = codec::encode(Encoding::Windows1251, "Привет, мир!").unwrap();
        assert!(sc.reproduces(&cp1251));
        // 0x98 is unmapped in windows-1251: never the server's to convert.
        assert!(!sc.reproduces(&[0x41, 0x98]));
        // Text it can hold goes into cp1251 and back unchanged; a letter it lacks does not.
        assert!(sc.writes("«Привет», № 5 — мир!".as_bytes()));
        assert!(!sc.writes("Привет ╔ мир".as_bytes()));
        assert!(!sc.writes("café".as_bytes()));
        assert!(!sc.writes(b"\xff"));
        // KOI8-R's letters and ASCII go into cp1251; its box drawing (0x80..) does not.
        let koi8 = Encoding::Koi8R;
        let koi = ServerCodec::from_server(Label::Legacy(koi8), &ours(koi8)).unwrap();
        let holds = sc.holds(&koi);
        assert!(holds[b'A' as usize] && holds[0xF0] && holds[0xC1] && holds[0xA3]);
        assert!(!holds[0x80] && !holds[0x81] && !holds[0xB5]);
        assert_eq!(sc.holds(&sc), std::array::from_fn(|b| sc.agree[b]));
        assert_eq!(
            sc.expr("`t`.`c`"),
            "CONVERT(CAST(`t`.`c` AS BINARY) USING `cp1251`)"
        );
        assert_eq!(
            probe_sql(sc.charset),
            "SELECT CAST(CONVERT(CONVERT(? USING `cp1251`) USING utf8mb4) AS BINARY)"
        );
    }

    #[test]
    fn a_byte_the_server_maps_differently_is_left_to_our_codec() {
        let label = Label::Legacy(Encoding::Koi8R);
        let mut server: Vec<char> = ours(Encoding::Koi8R).chars().collect();
        server[0xE1] = 'Z';
        server[0xC1] = '?';
        let sc = ServerCodec::from_server(label, &server.iter().collect::<String>()).unwrap();
        assert!(!sc.reproduces(&[0xE1]));
        assert!(!sc.reproduces(&[0xC1]));
        assert!(sc.reproduces(&[0xC2, b'?', b'a']));
    }

    #[test]
    fn labels_the_server_lacks_or_short_answers_give_no_codec() {
        assert!(charset_of(Label::Legacy(Encoding::Tcvn3)).is_none());
        assert!(charset_of(Label::Legacy(Encoding::Iso8859_5)).is_none());
        assert!(ServerCodec::from_server(Label::Legacy(Encoding::Windows1251), "abc").is_none());
        assert!(ServerCodec::from_server(Label::Utf8, &ours(Encoding::Latin1)).is_none());
    }
}

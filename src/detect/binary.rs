//! Scorer: is this a blob rather than text? Magic numbers and control bytes.

/// Well-known file and stream signatures that no text starts with.
const MAGIC: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "PNG signature"),
    (b"\xFF\xD8\xFF", "JPEG signature"),
    (b"GIF87a", "GIF signature"),
    (b"GIF89a", "GIF signature"),
    (b"\x1F\x8B\x08", "gzip signature"),
    (b"PK\x03\x04", "ZIP signature"),
    (b"%PDF-", "PDF signature"),
    (b"\x7FELF", "ELF signature"),
    (b"BZh", "bzip2 signature"),
    (b"\xFD7zXZ\x00", "xz signature"),
    (b"\x28\xB5\x2F\xFD", "zstd signature"),
    (b"RIFF", "RIFF signature"),
    (b"\xFF\xFE", "UTF-16LE byte-order mark"),
    (b"\xFE\xFF", "UTF-16BE byte-order mark"),
];

/// Why `bytes` must be binary, if it must; `None` when it may be text.
///
/// Text never carries NUL or C0 control bytes (tab, CR and LF aside), so one
/// is enough in a value that is not valid UTF-8; valid UTF-8 gets more
/// leeway because terminals' escape codes do end up in text columns.
pub fn binary_reason(bytes: &[u8], valid_utf8: bool) -> Option<&'static str> {
    if bytes.len() >= 3 && !bytes.is_ascii() {
        for (magic, what) in MAGIC {
            if bytes.starts_with(magic) {
                return Some(what);
            }
        }
        // zlib: CMF 0x78 and a header checksum divisible by 31, without a preset
        // dictionary (FDICT, 0x20): "x " (0x78 0x20) opens text, never a stream we meet.
        if bytes[0] == 0x78
            && (u16::from(bytes[0]) << 8 | u16::from(bytes[1])) % 31 == 0
            && bytes[1] & 0x20 == 0
            && !valid_utf8
        {
            return Some("zlib header");
        }
    }
    let mut controls = 0usize;
    for &b in bytes {
        if b == 0 {
            return Some("NUL byte");
        }
        if (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7F {
            controls += 1;
        }
    }
    if controls > 0 && (!valid_utf8 || controls * 10 > bytes.len()) {
        return Some("control bytes");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_binary_and_text_is_not() {
        assert!(binary_reason(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", false).is_some());
        assert!(binary_reason(b"\x78\x9c\xcb\x48\xcd\xc9\xc9\x07\x00", false).is_some());
        assert!(binary_reason(b"ab\x01\xe9", false).is_some());
        // "x перечислять" in cp1251 opens with a valid zlib checksum but FDICT set.
        assert!(binary_reason(b"x \xef\xe5\xf0\xe5", false).is_none());
        assert!(binary_reason("Привет\tмир\r\n".as_bytes(), true).is_none());
        assert!(binary_reason(b"\xcf\xf0\xe8\xe2\xe5\xf2", false).is_none());
    }
}

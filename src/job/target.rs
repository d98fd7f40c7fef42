//! A column's `target:` definition parsed into the facts the checks need.
//!
//! `VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL` becomes type
//! `varchar`, length 255, charset `utf8mb4`, collation `utf8mb4_unicode_ci`, not null.

/// The parts of a target column definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetDef {
    /// Base type, lower case: `varchar`, `text`, `varbinary`, ...
    pub data_type: String,
    /// Length in characters (bytes for binary types), for CHAR/VARCHAR/BINARY/VARBINARY.
    pub length: Option<u64>,
    /// Character set, lower case, `utf8` read as `utf8mb3`; `None` for binary types (or when not given).
    pub charset: Option<String>,
    /// Collation, lower case, if given.
    pub collation: Option<String>,
    /// Whether the definition says `NOT NULL`.
    pub not_null: bool,
}

/// Text types a target may name.
pub const TEXT_TYPES: &[&str] = &[
    "char",
    "varchar",
    "tinytext",
    "text",
    "mediumtext",
    "longtext",
    "enum",
    "set",
];
/// Binary types a target may name.
pub const BINARY_TYPES: &[&str] = &[
    "binary",
    "varbinary",
    "tinyblob",
    "blob",
    "mediumblob",
    "longblob",
];

impl TargetDef {
    /// Whether the type is binary (no character set).
    pub fn is_binary(&self) -> bool {
        BINARY_TYPES.contains(&self.data_type.as_str())
    }

    /// Bytes per character in its charset at most (1 for binary); `None` for an unknown charset.
    pub fn bytes_per_char(&self) -> Option<u64> {
        if self.is_binary() {
            return Some(1);
        }
        charset_maxlen(self.charset.as_deref()?)
    }

    /// Largest value in bytes the type holds: length × bytes per char for CHAR/VARCHAR, the
    /// fixed capacity for the TEXT/BLOB family.
    pub fn byte_capacity(&self) -> Option<u64> {
        match self.data_type.as_str() {
            "char" | "varchar" => Some(self.length? * self.bytes_per_char()?),
            "binary" | "varbinary" => self.length,
            t => lob_capacity(t),
        }
    }

    /// Largest value in characters, for CHAR/VARCHAR (bytes for BINARY/VARBINARY).
    pub fn char_capacity(&self) -> Option<u64> {
        match self.data_type.as_str() {
            "char" | "varchar" | "binary" | "varbinary" => self.length,
            _ => None,
        }
    }
}

/// Byte capacity of the TEXT and BLOB family.
pub fn lob_capacity(data_type: &str) -> Option<u64> {
    match data_type {
        "tinytext" | "tinyblob" => Some(255),
        "text" | "blob" => Some(65_535),
        "mediumtext" | "mediumblob" => Some(16_777_215),
        "longtext" | "longblob" => Some(4_294_967_295),
        _ => None,
    }
}

/// `MAXLEN` of a character set (bytes per character at most); `None` if unknown to us.
pub fn charset_maxlen(charset: &str) -> Option<u64> {
    Some(match normalize_charset(charset).as_str() {
        "utf8mb4" | "utf16" | "utf16le" | "utf32" | "gb18030" => 4,
        "utf8mb3" | "ujis" | "eucjpms" => 3,
        "ucs2" | "big5" | "sjis" | "cp932" | "euckr" | "gb2312" | "gbk" => 2,
        "latin1" | "latin2" | "latin5" | "latin7" | "ascii" | "binary" | "cp1250" | "cp1251"
        | "cp1256" | "cp1257" | "cp850" | "cp852" | "cp866" | "koi8r" | "koi8u" | "greek"
        | "hebrew" | "armscii8" | "dec8" | "hp8" | "swe7" | "tis620" | "keybcs2" | "macce"
        | "macroman" | "geostd8" => 1,
        _ => return None,
    })
}

/// Lower case, `utf8` as `utf8mb3`.
pub fn normalize_charset(charset: &str) -> String {
    let c = charset.to_ascii_lowercase();
    if c == "utf8" {
        "utf8mb3".into()
    } else {
        c
    }
}

/// Whether a charset can hold any Unicode text (UTF-8 or UTF-16/32).
pub fn holds_unicode(charset: &str) -> bool {
    matches!(
        normalize_charset(charset).as_str(),
        "utf8mb4" | "utf16" | "utf16le" | "utf32"
    )
}

/// Parses a target definition; the error says what is wrong in one sentence.
pub fn parse(text: &str) -> Result<TargetDef, String> {
    let s = text.trim();
    let type_end = s
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(s.len());
    let data_type = s[..type_end].to_ascii_lowercase();
    if data_type.is_empty() {
        return Err("the target is empty or does not start with a type".into());
    }
    if !TEXT_TYPES.contains(&data_type.as_str()) && !BINARY_TYPES.contains(&data_type.as_str()) {
        return Err(format!("'{}' is not a text or binary type", &s[..type_end]));
    }
    let mut rest = s[type_end..].trim_start();
    let mut length = None;
    if rest.starts_with('(') {
        let close = matching_paren(rest).ok_or("unbalanced parentheses")?;
        let inner = &rest[1..close];
        if !matches!(data_type.as_str(), "enum" | "set") {
            length = Some(
                inner
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("length '({inner})' is not a whole number"))?,
            );
        }
        rest = rest[close + 1..].trim_start();
    } else if matches!(data_type.as_str(), "enum" | "set") {
        return Err(format!(
            "{} needs its members, e.g. {}('a','b')",
            data_type.to_uppercase(),
            data_type.to_uppercase()
        ));
    }
    match data_type.as_str() {
        "varchar" | "varbinary" if length.is_none() => {
            return Err(format!(
                "{} needs a length, e.g. {}(255)",
                data_type.to_uppercase(),
                data_type.to_uppercase()
            ))
        }
        "char" | "binary" if length.is_none() => length = Some(1),
        _ => {}
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (mut charset, mut collation, mut not_null) = (None, None, false);
    let mut i = 0;
    let upper = |k: usize| words.get(k).map(|w| w.to_ascii_uppercase());
    while i < words.len() {
        let w = words[i].to_ascii_uppercase();
        let next = words.get(i + 1).map(|v| v.trim_matches(['\'', '"', '`']));
        match w.as_str() {
            "CHARACTER" if upper(i + 1).as_deref() == Some("SET") => {
                let v = words.get(i + 2).ok_or("CHARACTER SET needs a name")?;
                charset = Some(normalize_charset(v.trim_matches(['\'', '"', '`'])));
                i += 3;
            }
            "CHARSET" => {
                charset = Some(normalize_charset(next.ok_or("CHARSET needs a name")?));
                i += 2;
            }
            "COLLATE" => {
                collation = Some(next.ok_or("COLLATE needs a name")?.to_ascii_lowercase());
                i += 2;
            }
            "NOT" if upper(i + 1).as_deref() == Some("NULL") => {
                not_null = true;
                i += 2;
            }
            _ => i += 1,
        }
    }
    if charset.is_none() {
        if let Some(c) = &collation {
            charset = c.split('_').next().map(normalize_charset);
        }
    }
    let binary = BINARY_TYPES.contains(&data_type.as_str());
    if binary && charset.is_some() {
        return Err(format!(
            "{} is a binary type and takes no CHARACTER SET or COLLATE",
            data_type.to_uppercase()
        ));
    }
    if let (Some(cs), Some(co)) = (&charset, &collation) {
        let prefix = co
            .split('_')
            .next()
            .map(normalize_charset)
            .unwrap_or_default();
        if &prefix != cs && co != "binary" {
            return Err(format!(
                "collation {co} does not belong to character set {cs}"
            ));
        }
    }
    Ok(TargetDef {
        data_type,
        length,
        charset,
        collation,
        not_null,
    })
}

fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_definition() {
        let t = parse("VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL")
            .unwrap();
        assert_eq!(t.data_type, "varchar");
        assert_eq!(t.length, Some(255));
        assert_eq!(t.charset.as_deref(), Some("utf8mb4"));
        assert_eq!(t.collation.as_deref(), Some("utf8mb4_unicode_ci"));
        assert!(t.not_null);
        assert_eq!(t.byte_capacity(), Some(1020));
    }

    #[test]
    fn charset_from_collation_and_aliases() {
        let t = parse("text collate utf8_general_ci").unwrap();
        assert_eq!(t.charset.as_deref(), Some("utf8mb3"));
        assert_eq!(t.byte_capacity(), Some(65_535));
        let t = parse("char(8) charset latin1").unwrap();
        assert_eq!((t.length, t.bytes_per_char()), (Some(8), Some(1)));
        let t = parse("ENUM('a','b)') CHARACTER SET utf8mb4").unwrap();
        assert_eq!(t.data_type, "enum");
        let t = parse("VARBINARY(64)").unwrap();
        assert!(t.is_binary());
        assert_eq!(t.byte_capacity(), Some(64));
    }

    #[test]
    fn rejects_what_cannot_be_a_target() {
        for (bad, why) in [
            ("INT", "not a text or binary type"),
            ("VARCHAR CHARACTER SET utf8mb4", "needs a length"),
            ("VARCHAR(abc)", "not a whole number"),
            ("VARCHAR(10", "unbalanced"),
            (
                "VARCHAR(10) CHARACTER SET utf8mb4 COLLATE latin1_swedish_ci",
                "does not belong",
            ),
            ("BLOB CHARACTER SET utf8mb4", "binary type"),
            ("", "empty"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}

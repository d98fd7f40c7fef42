//! Quoting of identifiers and literals: every name we put into SQL goes through here.

/// Quotes an identifier with backticks, doubling any backtick inside (names may hold spaces, quotes, backticks).
pub fn ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('`');
    for c in name.chars() {
        if c == '`' {
            out.push('`');
        }
        out.push(c);
    }
    out.push('`');
    out
}

/// Quotes `schema`.`table`.
pub fn table(schema: &str, table: &str) -> String {
    format!("{}.{}", ident(schema), ident(table))
}

/// Quotes a string literal for the rare statements that cannot take bind parameters (e.g. `SHOW ... LIKE`).
pub fn literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Appends `bytes` as the hex digits of a hex literal (`X'…'` without its frame) to `out`:
/// a batch's staging statement carries megabytes of them, so one pass by table, no
/// per-digit `char` iterator.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        buf.push(DIGITS[(b >> 4) as usize]);
        buf.push(DIGITS[(b & 15) as usize]);
    }
    // Only ASCII digits were pushed.
    out.push_str(std::str::from_utf8(&buf).unwrap_or_default());
}

/// The value of the quoted string `s` starts with (`'…'` or `"…"`, doubled quotes and
/// backslash escapes undone) and the bytes it spans.
pub fn unquote_prefix(s: &str) -> Option<(String, usize)> {
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut out = String::new();
    let mut it = s.char_indices().skip(1).peekable();
    while let Some((i, c)) = it.next() {
        if c == q {
            if it.peek().map(|(_, n)| *n) == Some(q) {
                out.push(q);
                it.next();
                continue;
            }
            return Some((out, i + 1));
        }
        if c == '\\' {
            let (_, e) = it.next()?;
            if matches!(e, '%' | '_') {
                // MySQL keeps the backslash of `\%` and `\_` (they are LIKE escapes).
                out.push('\\');
            }
            out.push(match e {
                '0' => '\0',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'b' => '\u{8}',
                'Z' => '\u{1a}',
                e => e,
            });
            continue;
        }
        out.push(c);
    }
    None
}

/// The members of an ENUM/SET type's list (`'a','b'`), unquoted.
pub fn members(list: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        let (m, used) = unquote_prefix(rest)?;
        out.push(m);
        rest = rest[used..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits_match_the_hex_crate() {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut out = String::from("X'");
        push_hex(&mut out, &bytes);
        assert_eq!(out, format!("X'{}", hex::encode(&bytes)));
        push_hex(&mut out, &[]);
        assert_eq!(out.len(), 2 + 512);
    }

    #[test]
    fn doubles_backticks() {
        assert_eq!(ident("we`ird tab'le"), "`we``ird tab'le`");
        assert_eq!(table("a b", "c`d"), "`a b`.`c``d`");
    }

    #[test]
    fn escapes_literals() {
        assert_eq!(literal("it's a \\ test"), "'it''s a \\\\ test'");
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

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

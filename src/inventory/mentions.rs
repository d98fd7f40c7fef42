//! Which tables a trigger's body names, read from its text. Pure.
//!
//! The cut-over groups' rules must know when a trigger on one table reads or writes another:
//! between two groups' instants that would carry text between a table already recoded and one
//! not yet. The body is read as SQL tokens (quoted strings and comments skipped), and every
//! identifier that may be a table is a candidate; the caller keeps the candidates that are
//! tables of the schema. It errs towards naming a table (a column named like a table counts),
//! never towards missing one written in the body; a table reached only through a stored
//! routine the body calls is not seen.

/// Reserved words that cannot name a table unquoted: a bare `ORDER` or `KEY` is the keyword.
const RESERVED: &[&str] = &[
    "add", "all", "and", "as", "asc", "begin", "between", "by", "call", "case", "declare",
    "default", "delete", "desc", "distinct", "do", "each", "else", "elseif", "end", "exists",
    "for", "from", "group", "having", "if", "ignore", "in", "inner", "insert", "into", "is",
    "join", "key", "left", "like", "limit", "loop", "not", "null", "on", "or", "order", "replace",
    "return", "right", "row", "select", "set", "signal", "sqlstate", "then", "union", "update",
    "using", "values", "when", "where", "while", "new", "old",
];

/// One identifier as written: its text and whether it was backquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ident {
    text: String,
    quoted: bool,
}

/// The identifiers of `body` in order, each chain of `a.b.c` grouped, strings and comments
/// skipped.
fn chains(body: &str) -> Vec<Vec<Ident>> {
    let chars: Vec<char> = body.chars().collect();
    let mut out: Vec<Vec<Ident>> = Vec::new();
    let mut i = 0;
    // Whether the last token was a `.` right after an identifier: the next one joins its chain.
    let mut joined = false;
    // Whether the last token was an identifier.
    let mut after_ident = false;
    let push = |out: &mut Vec<Vec<Ident>>, id: Ident, joined: bool| match out.last_mut() {
        Some(chain) if joined => chain.push(id),
        _ => out.push(vec![id]),
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '-' && next == Some('-') || c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            joined = false;
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
            joined = false;
        } else if c == '\'' || c == '"' {
            i += 1;
            while i < chars.len() {
                // A backslash escape, or the quote doubled: two characters, still inside.
                if chars[i] == '\\' || (chars[i] == c && chars.get(i + 1) == Some(&c)) {
                    i += 2;
                } else if chars[i] == c {
                    i += 1;
                    break;
                } else {
                    i += 1;
                }
            }
            joined = false;
        } else if c == '`' {
            let mut text = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == '`' && chars.get(i + 1) == Some(&'`') {
                    text.push('`');
                    i += 2;
                } else if chars[i] == '`' {
                    i += 1;
                    break;
                } else {
                    text.push(chars[i]);
                    i += 1;
                }
            }
            push(&mut out, Ident { text, quoted: true }, joined);
            joined = false;
            after_ident = true;
            continue;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            // A number is no identifier.
            let number = text.chars().all(|c| c.is_ascii_digit());
            if !number {
                push(
                    &mut out,
                    Ident {
                        text,
                        quoted: false,
                    },
                    joined,
                );
            }
            joined = false;
            after_ident = !number;
            continue;
        } else if c == '.' {
            joined = after_ident;
            i += 1;
        } else {
            joined = false;
            i += 1;
        }
        after_ident = false;
    }
    out
}

/// Every identifier in `body` that may name a table of schema `schema`: a bare or quoted name
/// (not a reserved word written bare), the table of `schema.table` or `schema.table.column`,
/// and the qualifier of `table.column`; never `NEW.x` or `OLD.x`. Deduplicated, in order.
pub fn candidates(body: &str, schema: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: &str| {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for chain in chains(body) {
        let is = |id: &Ident, word: &str| id.text.eq_ignore_ascii_case(word);
        match chain.as_slice() {
            [one] => {
                if one.quoted || !RESERVED.iter().any(|r| is(one, r)) {
                    add(&one.text);
                }
            }
            [first, ..] if !first.quoted && (is(first, "new") || is(first, "old")) => {}
            [first, second, ..] => {
                if first.text.eq_ignore_ascii_case(schema) {
                    add(&second.text);
                } else {
                    add(&first.text);
                }
            }
            [] => {}
        }
    }
    out
}

/// The tables among `tables` (of the trigger's schema `schema`) that `body` names, compared
/// case-insensitively (a server with `lower_case_table_names` folds them), in `tables` order.
pub fn tables_named<'a>(body: &str, schema: &str, tables: &[&'a str]) -> Vec<&'a str> {
    among(&candidates(body, schema), tables)
}

/// The tables among `tables` that are among the `found` candidates ([`candidates`]),
/// compared case-insensitively, in `tables` order.
pub fn among<'a>(found: &[String], tables: &[&'a str]) -> Vec<&'a str> {
    tables
        .iter()
        .copied()
        .filter(|t| found.iter().any(|f| f.eq_ignore_ascii_case(t)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_written_and_read_are_found_keywords_columns_and_strings_are_not() {
        let body = "BEGIN\n  -- keeps `audit` (a comment: not a table)\n  \
                    INSERT INTO users_ft (id, name) VALUES (NEW.id, NEW.name);\n  \
                    UPDATE `shop`.`stats` SET n = n + 1 WHERE label = 'orders' /* not orders */;\n  \
                    SET NEW.total = (SELECT SUM(l.price) FROM order_lines l WHERE l.order_id = NEW.id);\n  \
                    DELETE FROM shop.log_x;\nEND";
        let c = candidates(body, "shop");
        for t in ["users_ft", "stats", "order_lines", "id", "name"] {
            assert!(c.contains(&t.to_string()), "{t} in {c:?}");
        }
        for t in [
            "audit", "orders", "total", "BEGIN", "INSERT", "NEW", "shop", "1",
        ] {
            assert!(!c.contains(&t.to_string()), "{t} not in {c:?}");
        }
        assert_eq!(
            tables_named(
                body,
                "shop",
                &["posts", "ORDER_LINES", "stats", "users", "log_x"]
            ),
            ["ORDER_LINES", "stats", "log_x"]
        );
    }

    #[test]
    fn quoting_escapes_and_qualified_names() {
        let body = r#"BEGIN SET @x = 'it''s \' users'; SET @y = "posts"; INSERT INTO `we``ird` VALUES (1); CALL other.proc(OLD.id); UPDATE `order` SET a = 1; END"#;
        let c = candidates(body, "shop");
        assert!(c.contains(&"we`ird".to_string()), "{c:?}");
        assert!(c.contains(&"order".to_string()), "quoted: a table: {c:?}");
        assert!(!c.contains(&"users".to_string()), "{c:?}");
        assert!(!c.contains(&"posts".to_string()), "{c:?}");
        // `other.proc`: `other` may be a table qualifying a column, so it is kept.
        assert!(c.contains(&"other".to_string()), "{c:?}");
        assert!(!c.contains(&"proc".to_string()), "{c:?}");
    }
}

//! String types declared in a routine, trigger or event (parameters, RETURNS, DECLAREd
//! variables), found over the lexer's tokens, and the charset clause added to each: what
//! the cut-over needs to recreate a routine in UTF-8.

use super::{err, tokens, LexError, LexErrorKind, Mode, Token, TokenKind};
use std::ops::Range;

/// Where a string type was found in a routine, trigger or event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A routine parameter, or a MariaDB cursor parameter.
    Param,
    /// A function's RETURNS type.
    Returns,
    /// A DECLAREd variable, or a field of a MariaDB `ROW(…)` variable.
    Variable,
}

/// A string data type (CHAR, VARCHAR, TEXT family, ENUM, SET) and the charset clause after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringType {
    /// Which part of the statement declares it.
    pub site: Site,
    /// Parameter or variable name (`a, b` for `DECLARE a, b …`), empty for RETURNS.
    pub name: String,
    /// The type with its length or member list; ` CHARACTER SET x` belongs at `span.end`.
    pub span: Range<usize>,
    /// The CHARACTER SET/CHARSET/ASCII/UNICODE/BYTE/BINARY/COLLATE words already there, if any.
    pub explicit: Option<Range<usize>>,
    /// The charset those words name, lower-case (ASCII is latin1, UNICODE ucs2, BYTE binary).
    pub charset: Option<String>,
}

/// Significant tokens (no whitespace, comments or executable markers) with their text.
struct Sig<'a> {
    sql: &'a str,
    t: &'a [&'a Token],
}

impl<'a> Sig<'a> {
    fn sub(&self, a: usize, b: usize) -> Sig<'a> {
        let t = self.t.get(a..b).unwrap_or(&[]);
        Sig { sql: self.sql, t }
    }
    fn text(&self, i: usize) -> &'a str {
        self.t.get(i).map_or("", |t| &self.sql[t.span.clone()])
    }
    fn is(&self, i: usize, kw: &str) -> bool {
        self.t.get(i).is_some_and(|t| t.kind == TokenKind::Word)
            && self.text(i).eq_ignore_ascii_case(kw)
    }
    fn any(&self, i: usize, kws: &[&str]) -> bool {
        kws.iter().any(|k| self.is(i, k))
    }
    fn punct(&self, i: usize, p: &str) -> bool {
        self.t.get(i).is_some_and(|t| t.kind == TokenKind::Punct) && self.text(i) == p
    }
    fn name(&self, i: usize) -> Option<String> {
        match &self.t.get(i)?.kind {
            TokenKind::Word => Some(self.text(i).to_string()),
            TokenKind::QuotedIdent(n) => Some(n.clone()),
            TokenKind::Str(l) => Some(l.value.clone()),
            _ => None,
        }
    }
    fn close(&self, open: usize) -> Option<usize> {
        let mut depth = 0usize;
        for k in open..self.t.len() {
            if self.punct(k, "(") {
                depth += 1;
            } else if self.punct(k, ")") {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
        }
        None
    }
}

/// Reads a string type starting at token `i`; `None` for every other type (and national ones).
fn parse_type(s: &Sig, i: usize, site: Site, name: String) -> Option<StringType> {
    let w = s.text(i).to_ascii_uppercase();
    let mut k = i + 1;
    match w.as_str() {
        _ if !s.is(i, &w) => return None,
        "CHAR" | "CHARACTER" => k += usize::from(s.is(k, "VARYING")),
        "VARCHAR" | "VARCHARACTER" | "VARCHAR2" | "TINYTEXT" | "TEXT" | "MEDIUMTEXT"
        | "LONGTEXT" | "CLOB" | "ENUM" | "SET" => {}
        "LONG" if s.is(k, "VARBINARY") => return None,
        "LONG" if s.is(k, "CHAR") && s.is(k + 1, "VARYING") => k += 2,
        "LONG" => k += usize::from(s.is(k, "VARCHAR")),
        _ => return None,
    }
    if s.punct(k, "(") {
        k = s.close(k)? + 1;
    } else if w == "ENUM" || w == "SET" {
        return None;
    }
    let span = s.t[i].span.start..s.t[k - 1].span.end;
    let (first, mut charset) = (k, None);
    loop {
        let step = if s.any(k, &["CHARACTER", "CHAR"]) && s.is(k + 1, "SET") {
            3
        } else if s.any(k, &["CHARSET", "COLLATE"]) {
            2
        } else if s.any(k, &["ASCII", "UNICODE", "BYTE", "BINARY"]) {
            1
        } else {
            break;
        };
        // A one-word step names itself, so only a missing charset/collation name stops here.
        let Some(named) = s.name(k + step - 1).map(|n| n.to_ascii_lowercase()) else {
            break;
        };
        charset = match s.text(k).to_ascii_uppercase().as_str() {
            "COLLATE" | "BINARY" => charset,
            "ASCII" => Some("latin1".into()),
            "UNICODE" => Some("ucs2".into()),
            "BYTE" => Some("binary".into()),
            _ => Some(named),
        };
        k += step;
    }
    let explicit = (k > first).then(|| s.t[first].span.start..s.t[k - 1].span.end);
    Some(StringType {
        site,
        name,
        span,
        explicit,
        charset,
    })
}

/// Reads a comma-separated `[IN|OUT|INOUT] name type` list (the text between the parentheses).
fn fields(s: &Sig, modes: bool, site: Site, out: &mut Vec<StringType>) {
    let (mut from, mut depth) = (0, 0i64);
    for k in 0..=s.t.len() {
        depth += i64::from(s.punct(k, "(")) - i64::from(s.punct(k, ")"));
        if k < s.t.len() && !(depth == 0 && s.punct(k, ",")) {
            continue;
        }
        let seg = s.sub(from, k);
        let x = usize::from(modes && seg.t.len() > 2 && seg.any(0, &["IN", "OUT", "INOUT"]));
        if let Some(name) = seg.name(x) {
            out.extend(parse_type(&seg, x + 1, site, name));
        }
        from = k + 1;
    }
}

/// Reads what follows a DECLARE keyword; handlers, conditions and plain cursors hold no types
/// (`DECLARE CONTINUE HANDLER` falls out because HANDLER is no type).
fn declare(s: &Sig, mut k: usize, out: &mut Vec<StringType>) {
    let mut names = Vec::new();
    while let Some(n) = s
        .name(k)
        .filter(|_| !matches!(s.t[k].kind, TokenKind::Str(_)))
    {
        names.push(n);
        k += 1;
        if !s.punct(k, ",") {
            break;
        }
        k += 1;
    }
    if names.is_empty() || s.is(k, "CONDITION") {
        return;
    }
    if s.any(k, &["CURSOR", "ROW"]) && s.punct(k + 1, "(") {
        let site = [Site::Variable, Site::Param][usize::from(s.is(k, "CURSOR"))];
        if let Some(c) = s.close(k + 1) {
            fields(&s.sub(k + 2, c), false, site, out);
        }
        return;
    }
    out.extend(parse_type(s, k, Site::Variable, names.join(", ")));
}

/// Lists the string types of a CREATE PROCEDURE/FUNCTION as SHOW CREATE prints it: parameters,
/// RETURNS and DECLAREd variables (any block depth); for CREATE TRIGGER/EVENT, the DECLAREs only.
pub fn routine_string_types(create_stmt: &str, mode: Mode) -> Result<Vec<StringType>, LexError> {
    use TokenKind::*;
    let toks = tokens(create_stmt, mode)?;
    let quiet = |t: &&Token| !matches!(t.kind, Whitespace | Comment | ExecOpen | ExecClose);
    let sig: Vec<&Token> = toks.iter().filter(quiet).collect();
    let s = Sig {
        sql: create_stmt,
        t: &sig,
    };
    let not_routine = |offset| err(offset, LexErrorKind::NotARoutine);
    let kind = (0..sig.len())
        .find(|&k| s.any(k, &["PROCEDURE", "FUNCTION", "TRIGGER", "EVENT"]))
        .ok_or(not_routine(0))?;
    let (mut out, mut body) = (Vec::new(), kind + 1);
    if s.any(kind, &["PROCEDURE", "FUNCTION"]) {
        let offset = sig[kind].span.start;
        let open = (kind..sig.len()).find(|&k| s.punct(k, "("));
        let open = open.ok_or(not_routine(offset))?;
        let close = s.close(open).ok_or(not_routine(offset))?;
        fields(&s.sub(open + 1, close), true, Site::Param, &mut out);
        body = close + 1;
        if s.is(body, "RETURNS") {
            out.extend(parse_type(&s, body + 1, Site::Returns, String::new()));
        }
    }
    for k in body..sig.len() {
        // DECLARE is a reserved word: unquoted, it always starts a DECLARE statement.
        if s.is(k, "DECLARE") {
            declare(&s, k + 1, &mut out);
        }
    }
    out.sort_by_key(|t| t.span.start);
    Ok(out)
}

/// Adds ` CHARACTER SET <charset>` after every string type of [`routine_string_types`] that
/// has no explicit charset/collation words yet; all other bytes are kept.
pub fn routine_add_charset(
    create_stmt: &str,
    mode: Mode,
    charset: &str,
) -> Result<String, LexError> {
    let (mut out, mut done) = (String::with_capacity(create_stmt.len() + 64), 0);
    for t in routine_string_types(create_stmt, mode)? {
        if t.explicit.is_none() {
            out.push_str(&create_stmt[done..t.span.end]);
            out.push_str(" CHARACTER SET ");
            out.push_str(charset);
            done = t.span.end;
        }
    }
    out.push_str(&create_stmt[done..]);
    Ok(out)
}

//! Lexer of MySQL/MariaDB SQL text, exact enough to find and rewrite every string literal.
//!
//! Objects created through a latin1 connection with cp1251 bytes show their bodies as the
//! UTF-8 text of the latin1 reading (`'Ìîñêâà'` for `'Москва'`). Recreating them means
//! rewriting each string literal and nothing else, so this lexer must agree with the server
//! on where literals start and end. Pure text in, text out: no I/O.
//!
//! Recognised:
//! - string literals `'…'` and `"…"` (unless ANSI_QUOTES) with doubled quotes and backslash
//!   escapes (unless NO_BACKSLASH_ESCAPES); charset introducers `_latin1'…'` (whitespace may
//!   separate them; only real charset names count, so `_col 'alias'` stays a word); `N'…'`;
//! - adjacent literals `'a' 'b'`, which the server concatenates: each is its own [`Literal`],
//!   later parts flagged `continuation` and inheriting the first part's introducer/national flag;
//! - hex/bit literals `X'41'` `0x41` `B'01'` `0b01` (bytes, never text), backtick identifiers
//!   (and `"…"` under ANSI_QUOTES), user/system variables `@x` `@'x'` `@@x`;
//! - comments `-- ` (two dashes then whitespace, control char or end), `#`, `/* … */`, and
//!   executable comments `/*! … */`, `/*!50001 … */`, `/*M! … */` whose content is lexed as SQL;
//! - words, numbers, one-char punctuation, whitespace;
//! - string data types of stored routines (parameters, RETURNS, DECLAREd variables) and of
//!   DECLAREs in trigger/event bodies, so a `CHARACTER SET` can be added where the database
//!   default charset would otherwise apply. Types that already say CHARACTER SET, CHARSET,
//!   ASCII, UNICODE, BYTE, BINARY or COLLATE are reported ([`StringType::explicit`]) but left
//!   alone by [`routine_add_charset`]: replacing a stated charset is the caller's decision.
//!   NATIONAL/NCHAR types are already utf8 and are not reported.
//!
//! Deliberately not handled:
//! - version numbers of executable comments: the content always counts as SQL;
//! - `COLLATE` after a literal is not part of it: once `_latin1` becomes `_utf8mb4`, a following
//!   `COLLATE latin1_…` is invalid, so callers must look at the next tokens themselves;
//! - the user part of `'user'@'host'` lexes as a string literal, as on the server (SHOW CREATE
//!   prints backticks there); the host part is a [`TokenKind::Variable`];
//! - hex literals, even with an introducer (`_cp1251 X'CCEE'`): they are bytes, left as they are;
//! - nested `/* */` comments (the server does not nest them), client syntax (`DELIMITER`),
//!   sql_mode=ORACLE routine syntax, and connection charsets whose multi-byte characters can
//!   hold `\` or quote bytes: the text here is already UTF-8.

mod routine;

pub use routine::{routine_add_charset, routine_string_types, Site, StringType};
use std::fmt;
use std::ops::Range;

/// The sql_mode flags that change how quotes and backslashes are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mode {
    /// ANSI_QUOTES: `"…"` quotes an identifier, not a string.
    pub ansi_quotes: bool,
    /// NO_BACKSLASH_ESCAPES: `\` is an ordinary character inside strings.
    pub no_backslash_escapes: bool,
}

impl Mode {
    /// Reads the flags from a sql_mode value as the server reports it (comma-separated names).
    pub fn from_sql_mode(sql_mode: &str) -> Mode {
        let has = |n: &str| {
            sql_mode
                .split(',')
                .any(|m| m.trim().eq_ignore_ascii_case(n))
        };
        Mode {
            ansi_quotes: has("ANSI_QUOTES") || has("ANSI"),
            no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"),
        }
    }
}

/// One lexical unit; `span` is its byte range in the lexed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What the token is.
    pub kind: TokenKind,
    /// Byte range in the text; the tokens of a text tile it without gaps.
    pub span: Range<usize>,
}

/// The kinds of [`Token`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// Spaces, tabs, newlines.
    Whitespace,
    /// `-- …`, `# …` (both without the newline) or `/* … */`.
    Comment,
    /// `/*!`, `/*!50001` or `/*M!…` opening an executable comment.
    ExecOpen,
    /// The `*/` closing an executable comment.
    ExecClose,
    /// A string literal, with its introducer or `N` if any.
    Str(Literal),
    /// `X'41'`, `0x41`, `B'01'`, `0b01`.
    HexBits,
    /// A quoted identifier with its unescaped name.
    QuotedIdent(String),
    /// `@name`, `@'name'`, `@@name`.
    Variable,
    /// A keyword or unquoted identifier (including `_latin1` not followed by a string).
    Word,
    /// A decimal number.
    Number,
    /// Any other single character.
    Punct,
}

/// A string literal as the server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    /// Byte range from the introducer or `N` (if any) through the closing quote.
    pub span: Range<usize>,
    /// Byte range of the quoted part, both quotes included.
    pub quote_span: Range<usize>,
    /// `'` or `"`.
    pub quote: char,
    /// The value with doubled quotes and escapes resolved.
    pub value: String,
    /// Charset of the introducer, lower-case without `_`; inherited by continuations.
    pub introducer: Option<String>,
    /// `N'…'`; inherited by continuations.
    pub national: bool,
    /// True when the server glues this literal to the previous one (`'a' 'b'`).
    pub continuation: bool,
}

/// Why some text could not be lexed or analysed; `offset` is a byte offset into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    /// Where the offending construct starts.
    pub offset: usize,
    /// What went wrong.
    pub kind: LexErrorKind,
}

/// The kinds of [`LexError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexErrorKind {
    /// A string, hex or bit literal without its closing quote.
    UnterminatedString,
    /// A quoted identifier or variable name without its closing quote.
    UnterminatedIdentifier,
    /// A `/*` or executable comment without `*/`.
    UnterminatedComment,
    /// No PROCEDURE, FUNCTION (with a parameter list), TRIGGER or EVENT found.
    NotARoutine,
}

impl Token {
    /// The literal, when this token is a string literal.
    pub fn literal(&self) -> Option<&Literal> {
        match &self.kind {
            TokenKind::Str(l) => Some(l),
            _ => None,
        }
    }
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            LexErrorKind::UnterminatedString => "unterminated string literal",
            LexErrorKind::UnterminatedIdentifier => "unterminated quoted identifier",
            LexErrorKind::UnterminatedComment => "unterminated comment",
            LexErrorKind::NotARoutine => "not a CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT",
        };
        write!(f, "{what} at byte {}", self.offset)
    }
}

impl std::error::Error for LexError {}

/// Charsets the server accepts as `_name` introducers (MySQL 8 and MariaDB 11 lists).
const CHARSETS: &[&str] = &[
    "armscii8", "ascii", "big5", "binary", "cp1250", "cp1251", "cp1256", "cp1257", "cp850",
    "cp852", "cp866", "cp932", "dec8", "eucjpms", "euckr", "gb18030", "gb2312", "gbk", "geostd8",
    "greek", "hebrew", "hp8", "keybcs2", "koi8r", "koi8u", "latin1", "latin2", "latin5", "latin7",
    "macce", "macroman", "sjis", "swe7", "tis620", "ucs2", "ujis", "utf16", "utf16le", "utf32",
    "utf8", "utf8mb3", "utf8mb4",
];

fn is_word_byte(c: u8) -> bool {
    // Every byte of a non-ASCII character is >= 0x80, so words never end inside a character.
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Index of the first byte at or after `i` that `keep` rejects.
fn skip(b: &[u8], mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && keep(b[i]) {
        i += 1;
    }
    i
}

fn err(offset: usize, kind: LexErrorKind) -> LexError {
    LexError { offset, kind }
}

/// Reads a quoted run whose opening quote is at `start`; returns its end and unescaped value.
fn quoted(
    sql: &str,
    start: usize,
    esc: bool,
    kind: LexErrorKind,
) -> Result<(usize, String), LexError> {
    let b = sql.as_bytes();
    let q = b[start];
    let (mut i, mut run, mut val) = (start + 1, start + 1, String::new());
    // Slices are only cut next to ASCII bytes, hence always on char boundaries.
    while i < b.len() {
        if b[i] == q && b.get(i + 1) == Some(&q) {
            val.push_str(&sql[run..=i]);
            i += 2;
            run = i;
        } else if b[i] == q {
            val.push_str(&sql[run..i]);
            return Ok((i + 1, val));
        } else if b[i] == b'\\' && esc && i + 1 < b.len() {
            val.push_str(&sql[run..i]);
            let fixed = match b[i + 1] {
                b'0' => "\0",
                b'b' => "\x08",
                b'n' => "\n",
                b'r' => "\r",
                b't' => "\t",
                b'Z' => "\x1a",
                // The server keeps these two escaped so LIKE patterns still see them.
                b'%' => "\\%",
                b'_' => "\\_",
                _ => "",
            };
            val.push_str(fixed);
            // An unknown escape stands for the character itself, which starts the next run.
            run = if fixed.is_empty() { i + 1 } else { i + 2 };
            i += 2;
        } else {
            i += 1;
        }
    }
    Err(err(start, kind))
}

/// Splits SQL text into tokens; executable comments' content is lexed like any other SQL.
pub fn tokens(sql: &str, mode: Mode) -> Result<Vec<Token>, LexError> {
    let mut lx = Lexer {
        sql,
        b: sql.as_bytes(),
        mode,
        out: Vec::new(),
        exec: None,
        last_sig: None,
    };
    let mut i = 0;
    while i < lx.b.len() {
        let (end, kind) = lx.token_at(i)?;
        if !matches!(kind, TokenKind::Whitespace | TokenKind::Comment) {
            lx.last_sig = Some(lx.out.len());
        }
        lx.out.push(Token { kind, span: i..end });
        i = end;
    }
    match lx.exec {
        Some(open) => Err(err(open, LexErrorKind::UnterminatedComment)),
        None => Ok(lx.out),
    }
}

/// The state of [`tokens`] over one text.
struct Lexer<'a> {
    sql: &'a str,
    b: &'a [u8],
    mode: Mode,
    out: Vec<Token>,
    /// Where the executable comment we are in opened.
    exec: Option<usize>,
    /// Index in `out` of the last significant token (a literal there makes the next one its
    /// continuation).
    last_sig: Option<usize>,
}

impl Lexer<'_> {
    /// The byte at `k`, or 0 past the end.
    fn at(&self, k: usize) -> u8 {
        self.b.get(k).copied().unwrap_or(0)
    }

    /// Whether backslash escapes are on in strings.
    fn esc(&self) -> bool {
        !self.mode.no_backslash_escapes
    }

    /// Whether `c` opens a string literal (`"` does unless ANSI_QUOTES).
    fn string_quote(&self, c: u8) -> bool {
        c == b'\'' || (c == b'"' && !self.mode.ansi_quotes)
    }

    /// The token starting at `i`: where it ends and what it is.
    fn token_at(&mut self, i: usize) -> Result<(usize, TokenKind), LexError> {
        let c = self.b[i];
        if is_space(c) {
            Ok((skip(self.b, i, is_space), TokenKind::Whitespace))
        } else if c == b'#'
            || (c == b'-' && self.at(i + 1) == b'-' && matches!(self.at(i + 2), 0..=32 | 127))
        {
            let end = self.sql[i..].find('\n').map_or(self.b.len(), |p| i + p);
            Ok((end, TokenKind::Comment))
        } else if c == b'/' && self.at(i + 1) == b'*' {
            self.block_comment(i)
        } else if c == b'*' && self.at(i + 1) == b'/' && self.exec.is_some() {
            self.exec = None;
            Ok((i + 2, TokenKind::ExecClose))
        } else if self.string_quote(c) {
            self.string(i)
        } else if c == b'`' || c == b'"' {
            let (end, name) = quoted(self.sql, i, false, LexErrorKind::UnterminatedIdentifier)?;
            Ok((end, TokenKind::QuotedIdent(name)))
        } else if c == b'@' {
            self.variable(i)
        } else if c.is_ascii_digit() {
            Ok(self.number(i))
        } else if is_word_byte(c) {
            self.word(i)
        } else {
            Ok((i + 1, TokenKind::Punct))
        }
    }

    /// A `/* … */` comment, or an executable comment's opening (`/*!`, `/*!50001`, `/*M!`).
    fn block_comment(&mut self, start: usize) -> Result<(usize, TokenKind), LexError> {
        let i = start;
        let marker = match (self.at(i + 2), self.at(i + 3)) {
            (b'!', _) => 3,
            (b'M', b'!') => 4,
            _ => 0,
        };
        if marker > 0 && self.exec.is_none() {
            let digits = skip(self.b, i + marker, |d| d.is_ascii_digit()) - i - marker;
            self.exec = Some(start);
            Ok((
                i + marker + if digits >= 5 { digits.min(6) } else { 0 },
                TokenKind::ExecOpen,
            ))
        } else {
            let end = self.sql[i + 2..]
                .find("*/")
                .ok_or(err(start, LexErrorKind::UnterminatedComment))?;
            Ok((i + end + 4, TokenKind::Comment))
        }
    }

    /// A quoted string literal, continuing the previous significant token when that is one.
    fn string(&self, start: usize) -> Result<(usize, TokenKind), LexError> {
        let c = self.b[start];
        let (end, value) = quoted(
            self.sql,
            start,
            self.esc(),
            LexErrorKind::UnterminatedString,
        )?;
        let prev = self.last_sig.and_then(|k| self.out[k].literal());
        let literal = Literal {
            span: start..end,
            quote_span: start..end,
            quote: c as char,
            value,
            introducer: prev.and_then(|p| p.introducer.clone()),
            national: prev.is_some_and(|p| p.national),
            continuation: prev.is_some(),
        };
        Ok((end, TokenKind::Str(literal)))
    }

    /// `@name`, `@@name`, `@'name'`.
    fn variable(&self, start: usize) -> Result<(usize, TokenKind), LexError> {
        let mut i = start + 1 + usize::from(self.at(start + 1) == b'@');
        if matches!(self.at(i), b'\'' | b'"' | b'`') {
            // The server reads quoted variable names without backslash escapes.
            i = quoted(self.sql, i, false, LexErrorKind::UnterminatedIdentifier)?.0;
        } else {
            i = skip(self.b, i, |d| is_word_byte(d) || d == b'.');
        }
        Ok((i, TokenKind::Variable))
    }

    /// A token starting with a digit: a hex or bit literal, a number, or a word (`1abc`).
    fn number(&self, start: usize) -> (usize, TokenKind) {
        let (b, c) = (self.b, self.b[start]);
        let mut i = start;
        // Only lower-case `0x`/`0b` prefixes make hex/bit literals; `0X41` is a name.
        let j = match (c, self.at(i + 1)) {
            (b'0', b'x') => skip(b, i + 2, |d| d.is_ascii_hexdigit()),
            (b'0', b'b') => skip(b, i + 2, |d| d == b'0' || d == b'1'),
            _ => i,
        };
        if j > i + 2 && !is_word_byte(self.at(j)) {
            return (j, TokenKind::HexBits);
        }
        i = skip(b, i, |d| d.is_ascii_digit());
        if self.at(i) == b'.' {
            i = skip(b, i + 1, |d| d.is_ascii_digit());
        }
        let sign = usize::from(matches!(self.at(i + 1), b'+' | b'-'));
        if matches!(self.at(i), b'e' | b'E') && self.at(i + 1 + sign).is_ascii_digit() {
            i = skip(b, i + 1 + sign, |d| d.is_ascii_digit());
        }
        // `1abc` is a valid unquoted identifier.
        let word = is_word_byte(self.at(i));
        i = skip(b, i, is_word_byte);
        (
            i,
            if word {
                TokenKind::Word
            } else {
                TokenKind::Number
            },
        )
    }

    /// A word, or the literal it starts (`X'…'`, `B'…'`, `N'…'`, `_latin1 '…'`).
    fn word(&self, start: usize) -> Result<(usize, TokenKind), LexError> {
        let (sql, b) = (self.sql, self.b);
        let i = skip(b, start, is_word_byte);
        let w = &sql[start..i];
        let one = |s: &str| w.eq_ignore_ascii_case(s) && self.at(i) == b'\'';
        let intro = (w.strip_prefix('_').map(|n| n.to_ascii_lowercase()))
            .filter(|n| CHARSETS.contains(&n.as_str()));
        let j = if intro.is_some() {
            skip(b, i, is_space)
        } else {
            i
        };
        if one("x") || one("b") {
            let end = i
                + sql[i + 1..]
                    .find('\'')
                    .ok_or(err(start, LexErrorKind::UnterminatedString))?
                + 2;
            Ok((end, TokenKind::HexBits))
        } else if one("n") || (intro.is_some() && self.string_quote(self.at(j))) {
            let (end, value) = quoted(sql, j, self.esc(), LexErrorKind::UnterminatedString)?;
            let literal = Literal {
                span: start..end,
                quote_span: j..end,
                quote: b[j] as char,
                value,
                national: intro.is_none(),
                introducer: intro,
                continuation: false,
            };
            Ok((end, TokenKind::Str(literal)))
        } else {
            Ok((i, TokenKind::Word))
        }
    }
}

/// Quotes `value` as a literal with `quote`: the quote doubled, `\` and NUL escaped when
/// backslash escapes are on, every other character (newlines too) kept as is.
pub fn quote_literal(value: &str, quote: char, mode: Mode) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push(quote);
    for c in value.chars() {
        match c {
            '\\' if !mode.no_backslash_escapes => out.push_str("\\\\"),
            '\0' if !mode.no_backslash_escapes => out.push_str("\\0"),
            _ if c == quote => {
                out.push(c);
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Replaces each literal for which `f` returns a new value, leaving all other bytes as they were.
///
/// `_binary` literals (and their continuations) are never passed to `f`. When any part of an
/// adjacent-literal run gets a new value and the run's introducer is neither `_utf8mb4` nor
/// `_utf8`/`_utf8mb3`, the introducer is replaced by `_utf8mb4`: the new text is UTF-8 and an
/// explicit introducer keeps its meaning independent of the session's character_set_connection.
pub fn rewrite_literals(
    sql: &str,
    mode: Mode,
    mut f: impl FnMut(&Literal) -> Option<String>,
) -> Result<String, LexError> {
    let toks = tokens(sql, mode)?;
    let lits: Vec<&Literal> = toks.iter().filter_map(Token::literal).collect();
    let new: Vec<Option<String>> = lits
        .iter()
        .map(|l| match l.introducer.as_deref() {
            Some("binary") => None,
            _ => f(l),
        })
        .collect();
    // The introducer sits on the run's first part but governs all parts of it.
    let (mut retag, mut head) = (vec![false; lits.len()], 0);
    for (k, l) in lits.iter().enumerate() {
        if !l.continuation {
            head = k;
        }
        retag[head] |= new[k].is_some();
    }
    let (mut out, mut done) = (String::with_capacity(sql.len() + 16), 0);
    for (k, l) in lits.iter().enumerate() {
        if let (true, false, Some(cs)) = (retag[k], l.continuation, &l.introducer) {
            if !matches!(cs.as_str(), "utf8mb4" | "utf8" | "utf8mb3") {
                out.push_str(&sql[done..l.span.start]);
                out.push_str("_utf8mb4");
                done = l.span.start + 1 + cs.len();
            }
        }
        if let Some(v) = &new[k] {
            out.push_str(&sql[done..l.quote_span.start]);
            out.push_str(&quote_literal(v, l.quote, mode));
            done = l.quote_span.end;
        }
    }
    out.push_str(&sql[done..]);
    Ok(out)
}

#[cfg(test)]
mod tests;

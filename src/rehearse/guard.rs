//! What a dump may run on a server rehearse did not start (`MYSQL_TEST_URL`): only statements
//! that create and fill the dump's own schemas. Anything else — another schema named, users,
//! grants, server-wide settings, files read or written on either machine, plugins, SQL built
//! at run time, a second statement hidden in what the client sends as one — is refused by
//! name, with its line, before a byte of the dump is sent.
//!
//! Pure: each statement the client would send ([`super::statements`]) in, allowed or refused
//! with the reason out. The session's sql_mode is followed statement by statement (it decides
//! where strings end); ANSI_QUOTES set by the dump (`mariadb-dump --compatible=ansi`) is
//! followed too, `"` quoting names from there on. Refused: a change of sql_mode the guard
//! cannot read before sending, a `\` inside a double-quoted name under ANSI_QUOTES (the one
//! place the client, which reads `\` as an escape there, and the server cut apart), and a
//! client charset in which a `\` byte can end a character.

use super::statements::Piece;
use crate::db::sqltext::{self, Mode, TokenKind};
use std::collections::HashMap;

/// One statement refused, for the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The dump line it starts on.
    pub line: usize,
    /// Its first words, on one line.
    pub head: String,
    /// Why it is refused.
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: `{}` {}", self.line, self.head, self.reason)
    }
}

/// Words that refuse any statement holding them outside strings and quoted names, with why.
const FORBIDDEN: &[(&str, &str)] = &[
    ("GRANT", "grants privileges"),
    ("REVOKE", "revokes privileges"),
    ("GLOBAL", "changes a server-wide setting (GLOBAL)"),
    (
        "PREPARE",
        "runs SQL built at run time (PREPARE), which cannot be read before it runs",
    ),
    (
        "EXECUTE",
        "runs SQL built at run time (EXECUTE), which cannot be read before it runs",
    ),
    (
        "LOAD_FILE",
        "reads a file of the server's machine (LOAD_FILE)",
    ),
    (
        "OUTFILE",
        "writes a file on the server's machine (INTO OUTFILE)",
    ),
    (
        "DUMPFILE",
        "writes a file on the server's machine (INTO DUMPFILE)",
    ),
    ("SONAME", "loads a shared library into the server (SONAME)"),
    ("INSTALL", "installs a server plugin"),
    ("UNINSTALL", "removes a server plugin"),
    ("SHUTDOWN", "stops the server"),
    (
        "DIRECTORY",
        "puts table files outside the server's data directory (DATA/INDEX DIRECTORY)",
    ),
    (
        "CONNECTION",
        "connects a table to another server (CONNECTION=)",
    ),
];

/// Engines that read files or other servers.
const REMOTE_ENGINES: &[&str] = &["CONNECT", "FEDERATED", "FEDERATEDX", "SPIDER"];

/// Client charsets in which the second byte of a character can be `\` (0x5C), so the server
/// and the client would read string ends apart.
const UNSAFE_CHARSETS: &[&str] = &[
    "big5", "cp932", "gbk", "sjis", "gb18030", "ucs2", "utf16", "utf16le", "utf32",
];

/// Why a statement of an unknown kind is refused.
const NOT_THE_DUMPS: &str = "is not a statement that creates or fills the dump's own schemas";

/// The state of a dump's reading: its schemas, the server's others, the session's sql_mode.
#[derive(Debug)]
pub struct Guard {
    own: Vec<String>,
    others: Vec<String>,
    mode: Mode,
    /// What user variables hold, as far as sql_mode and the client charset go.
    vars: HashMap<String, Held>,
    /// What was refused so far.
    pub refused: Vec<Refusal>,
}

/// What a user variable holds, as far as the guard follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    /// A string literal.
    Literal(String),
    /// The session's sql_mode at the time.
    SessionMode(Mode),
    /// The session's client charset (safe: the guard refuses unsafe ones).
    SessionCharset,
    /// Anything else.
    Unknown,
}

/// One significant token: its kind and its text (upper-cased for words).
#[derive(Debug, Clone, PartialEq, Eq)]
enum T {
    Word(String),
    Name(String),
    Str(String),
    Var(String),
    Punct(char),
    Other,
}

impl Guard {
    /// A guard for a dump whose schemas are `own`, on a server holding `others` too; the
    /// session starts in `mode`.
    pub fn new(own: &[String], others: &[String], mode: Mode) -> Self {
        Self {
            own: own.to_vec(),
            others: others
                .iter()
                .filter(|o| !own.iter().any(|s| s.eq_ignore_ascii_case(o)))
                .cloned()
                .collect(),
            mode,
            vars: HashMap::new(),
            refused: Vec::new(),
        }
    }

    /// Takes one piece of the dump; returns the sql_mode the next one is read under.
    pub fn piece(&mut self, p: Piece) -> Mode {
        match p {
            Piece::Statement { text, line } => {
                if let Err(reason) = self.statement(&text) {
                    let head = String::from_utf8_lossy(&text[..text.len().min(400)]);
                    self.refused.push(Refusal {
                        line,
                        head: head_of(&head),
                        reason,
                    });
                }
            }
            Piece::DelimiterInside(line) => self.refused.push(Refusal {
                line,
                head: "DELIMITER".into(),
                reason: "comes inside an unfinished statement, where the client's reading of it is not certain".into(),
            }),
            Piece::TooLong(line) => self.refused.push(Refusal {
                line,
                head: "…".into(),
                reason: "is a statement longer than the limit a dump line may have".into(),
            }),
        }
        self.mode
    }

    /// Whether one statement may run; on success the session state it sets is taken.
    pub fn statement(&mut self, text: &[u8]) -> Result<(), String> {
        let sql = String::from_utf8_lossy(text);
        let lexed =
            sqltext::tokens(&sql, self.mode).map_err(|e| format!("cannot be read as SQL ({e})"))?;
        if self.mode.ansi_quotes {
            let apart = lexed.iter().any(|k| {
                matches!(k.kind, TokenKind::QuotedIdent(_))
                    && sql[k.span.clone()].starts_with('"')
                    && sql[k.span.clone()].contains('\\')
            });
            if apart {
                return Err("holds a `\\` inside a double-quoted name under ANSI_QUOTES, where the client reads it as an escape and the server does not, so the two would cut the dump apart".into());
            }
        }
        let significant: Vec<&sqltext::Token> = lexed
            .iter()
            .filter(|k| {
                !matches!(
                    k.kind,
                    TokenKind::Whitespace
                        | TokenKind::Comment
                        | TokenKind::ExecOpen
                        | TokenKind::ExecClose
                )
            })
            .collect();
        // Names as written (words are upper-cased in `t` for matching keywords).
        let raw: Vec<String> = significant
            .iter()
            .map(|k| match &k.kind {
                TokenKind::QuotedIdent(n) => n.clone(),
                _ => sql[k.span.clone()].to_string(),
            })
            .collect();
        let t: Vec<T> = significant
            .into_iter()
            .filter_map(|k| {
                let s = &sql[k.span.clone()];
                Some(match &k.kind {
                    TokenKind::Whitespace
                    | TokenKind::Comment
                    | TokenKind::ExecOpen
                    | TokenKind::ExecClose => return None,
                    TokenKind::Word => T::Word(s.to_ascii_uppercase()),
                    TokenKind::QuotedIdent(n) => T::Name(n.clone()),
                    TokenKind::Str(l) => T::Str(l.value.clone()),
                    TokenKind::Variable => T::Var(s.to_ascii_lowercase()),
                    TokenKind::Punct => T::Punct(s.chars().next().unwrap_or(' ')),
                    TokenKind::HexBits | TokenKind::Number => T::Other,
                })
            })
            .collect();
        if t.is_empty() {
            return Ok(());
        }
        let word = |i: usize, w: &str| matches!(t.get(i), Some(T::Word(x)) if x == w);
        let compound = word(0, "CREATE")
            && matches!(definition_kind(&t), Some((_, k)) if ["TRIGGER", "PROCEDURE", "FUNCTION", "EVENT"].contains(&k));
        self.everywhere(&t, &raw, compound)?;
        if compound {
            // Read statement by statement: where the body ends, what each one inside does.
            let (k, kind) = definition_kind(&t).expect("a compound statement has its kind");
            let from = body::start(&t, k, kind).ok_or_else(|| {
                format!("is a {kind} whose body cannot be found, so it cannot be read before it is sent")
            })?;
            body::check(&t, from)?;
        }
        match &t[0] {
            T::Word(w) => match w.as_str() {
                "SET" => self.set(&t[1..]),
                "USE" => match name(&t, &raw, 1) {
                    Some(s) if self.is_own(&s) => Ok(()),
                    Some(s) => Err(format!("switches to schema `{s}`, which is not the dump's")),
                    None => Err(NOT_THE_DUMPS.into()),
                },
                "CREATE" | "DROP" | "ALTER" => self.definition(&t, &raw),
                "INSERT" | "REPLACE" | "UPDATE" | "DELETE" | "TRUNCATE" | "LOCK" | "UNLOCK"
                | "BEGIN" | "COMMIT" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" => Ok(()),
                "RENAME" if word(1, "TABLE") => Ok(()),
                "START" if word(1, "TRANSACTION") => Ok(()),
                "LOAD" if t.iter().any(|x| matches!(x, T::Word(w) if w == "LOCAL")) => Err(
                    "reads a file of the machine rehearse runs on into the database (LOAD DATA LOCAL INFILE)".into(),
                ),
                "LOAD" => Err("reads a file of the server's machine (LOAD DATA/XML INFILE)".into()),
                _ => Err(NOT_THE_DUMPS.into()),
            },
            _ => Err(NOT_THE_DUMPS.into()),
        }
    }

    /// The checks on every token of any statement: forbidden words, accounts, remote
    /// engines, other schemas named, and a second statement after a `;`.
    fn everywhere(&self, t: &[T], raw: &[String], compound: bool) -> Result<(), String> {
        for (i, x) in t.iter().enumerate() {
            let next = t.get(i + 1);
            match x {
                T::Word(w) => {
                    if let Some((_, why)) = FORBIDDEN.iter().find(|(f, _)| f == w) {
                        return Err((*why).into());
                    }
                    let account = matches!(next, Some(T::Word(n)) if n == "USER" || n == "ROLE")
                        && ["CREATE", "DROP", "ALTER", "RENAME"].contains(&w.as_str());
                    let set_account = w == "SET"
                        && matches!(next, Some(T::Word(n)) if ["PASSWORD", "ROLE", "DEFAULT"].contains(&n.as_str()));
                    if account || set_account {
                        return Err("creates or changes accounts or roles".into());
                    }
                    if w == "ENGINE" {
                        let e = match (next, t.get(i + 2)) {
                            (Some(T::Punct('=')), Some(e)) => Some(e),
                            (e, _) => e,
                        };
                        if let Some(T::Word(e) | T::Name(e)) = e {
                            if REMOTE_ENGINES.iter().any(|r| r.eq_ignore_ascii_case(e)) {
                                return Err(format!("makes a table of engine {e}, which reads files or other servers"));
                            }
                        }
                    }
                    let schema_ddl = ["CREATE", "DROP", "ALTER"].contains(&w.as_str())
                        && matches!(next, Some(T::Word(n)) if n == "DATABASE" || n == "SCHEMA");
                    if compound && schema_ddl {
                        return Err(
                            "creates, alters or drops a schema inside a trigger, routine or event"
                                .into(),
                        );
                    }
                }
                T::Var(v) if v.starts_with("@@global.") => {
                    return Err("changes a server-wide setting (@@GLOBAL)".into());
                }
                T::Punct(';') if !compound && i + 1 < t.len() => {
                    return Err("holds more than one statement (a `;` inside what the client sends as one), which would run unread".into());
                }
                _ => {}
            }
            if let (T::Word(_) | T::Name(_), Some(T::Punct('.'))) = (x, next) {
                let s = &raw[i];
                if self.others.iter().any(|o| o.eq_ignore_ascii_case(s)) {
                    return Err(format!("names schema `{s}`, which is not the dump's"));
                }
            }
        }
        Ok(())
    }

    /// `CREATE`/`DROP`/`ALTER`: of tables, views, indexes, sequences, triggers, routines and
    /// events; of the dump's own schemas; nothing else.
    fn definition(&self, t: &[T], raw: &[String]) -> Result<(), String> {
        let Some((i, kind)) = definition_kind(t) else {
            return Err(NOT_THE_DUMPS.into());
        };
        match kind {
            "TABLE" | "VIEW" | "INDEX" | "SEQUENCE" | "TRIGGER" | "PROCEDURE" | "FUNCTION"
            | "EVENT" => Ok(()),
            "DATABASE" | "SCHEMA" => {
                let mut j = i + 1;
                while matches!(t.get(j), Some(T::Word(w)) if ["IF", "NOT", "EXISTS"].contains(&w.as_str()))
                {
                    j += 1;
                }
                match name(t, raw, j) {
                    Some(s) if self.is_own(&s) => Ok(()),
                    None if matches!(t[0], T::Word(ref w) if w == "ALTER") => Ok(()),
                    Some(s) => Err(format!(
                        "{} schema `{s}`, which is not the dump's",
                        verb(&t[0])
                    )),
                    None => Err(NOT_THE_DUMPS.into()),
                }
            }
            _ => Err(NOT_THE_DUMPS.into()),
        }
    }

    /// `SET` of session variables and user variables; sql_mode and the client charset are
    /// followed, server-wide settings and accounts refused.
    fn set(&mut self, t: &[T]) -> Result<(), String> {
        let mut mode = self.mode;
        let mut vars = Vec::new();
        for a in assignments(t) {
            let mut a = a;
            if matches!(a.first(), Some(T::Word(w)) if w == "SESSION" || w == "LOCAL") {
                a = &a[1..];
            }
            let (target, value) = match a {
                [T::Word(w), rest @ ..] if w == "NAMES" => {
                    unsafe_charset(rest.first())?;
                    continue;
                }
                [T::Word(w), T::Word(s), rest @ ..] if w == "CHARACTER" && s == "SET" => {
                    unsafe_charset(rest.first())?;
                    continue;
                }
                [T::Word(w), rest @ ..] if w == "CHARSET" => {
                    unsafe_charset(rest.first())?;
                    continue;
                }
                [T::Word(w), ..] if w == "TRANSACTION" => continue,
                [T::Word(w), ..] if w == "STATEMENT" => {
                    return Err("sets variables for one statement (SET STATEMENT … FOR), which is not read here".into())
                }
                [target, T::Punct(':'), T::Punct('='), value @ ..] | [target, T::Punct('='), value @ ..] => {
                    (target, value)
                }
                _ => return Err(NOT_THE_DUMPS.into()),
            };
            match target {
                T::Var(v) if !v.starts_with("@@") => {
                    let held = match value {
                        [T::Str(s)] => Held::Literal(s.clone()),
                        [T::Var(x)] if is_sql_mode_var(x) => Held::SessionMode(mode),
                        [T::Var(x)]
                            if x.ends_with("character_set_client") && x.starts_with("@@") =>
                        {
                            Held::SessionCharset
                        }
                        _ => Held::Unknown,
                    };
                    vars.push((v.clone(), held));
                }
                T::Var(v) | T::Word(v) => {
                    let v = v.to_ascii_lowercase();
                    let v = v.trim_start_matches("@@");
                    let v = v
                        .strip_prefix("session.")
                        .or_else(|| v.strip_prefix("local."))
                        .unwrap_or(v);
                    let held = |x: &String| {
                        vars.iter()
                            .rev()
                            .find(|(n, _)| n == x)
                            .map(|(_, h)| h.clone())
                            .or_else(|| self.vars.get(x).cloned())
                            .unwrap_or(Held::Unknown)
                    };
                    if v == "sql_mode" {
                        let new = match value {
                            [T::Str(s)] => mode_of(s),
                            [T::Var(x)] if is_sql_mode_var(x) => mode,
                            [T::Var(x)] => match held(x) {
                                Held::Literal(s) => mode_of(&s),
                                Held::SessionMode(m) => m,
                                _ => return Err(format!("sets sql_mode from {x}, whose value is not known before the dump runs")),
                            },
                            _ => return Err("sets sql_mode from an expression whose value is not known before the dump runs".into()),
                        };
                        // ANSI_QUOTES is followed: `"` quotes a name from here on
                        // ([`Guard::statement`] refuses the one place the client reads it apart).
                        mode = new;
                    } else if v == "character_set_client" || v == "character_set_connection" {
                        match value {
                            [T::Var(x)] if !x.starts_with("@@") => match held(x) {
                                Held::Literal(s) => unsafe_charset(Some(&T::Str(s)))?,
                                Held::SessionCharset => {}
                                _ => return Err(format!("sets the client charset from {x}, whose value is not known before the dump runs")),
                            },
                            _ => unsafe_charset(value.first())?,
                        }
                    }
                }
                _ => return Err(NOT_THE_DUMPS.into()),
            }
        }
        self.mode = mode;
        self.vars.extend(vars);
        Ok(())
    }

    fn is_own(&self, s: &str) -> bool {
        self.own.iter().any(|o| o == s)
    }
}

/// Where the object kind of a `CREATE`/`DROP`/`ALTER` is, and the kind (`TABLE`, `TRIGGER`,
/// …), past `OR REPLACE`, `DEFINER=…`, `ALGORITHM=…`, `SQL SECURITY …` and the like.
fn definition_kind(t: &[T]) -> Option<(usize, &str)> {
    let mut i = 1;
    while let Some(T::Word(w)) = t.get(i) {
        match w.as_str() {
            "OR" | "REPLACE" | "TEMPORARY" | "UNIQUE" | "FULLTEXT" | "SPATIAL" | "ONLINE"
            | "OFFLINE" | "IGNORE" | "AGGREGATE" | "SQL" | "SECURITY" | "INVOKER" => i += 1,
            "ALGORITHM" | "DEFINER" => {
                // ALGORITHM=x, DEFINER=user@host (or CURRENT_USER)
                i += 1;
                while t.get(i).is_some_and(|x| {
                    !matches!(x, T::Word(w) if ["VIEW", "TRIGGER", "PROCEDURE", "FUNCTION", "EVENT", "SQL", "DEFINER", "ALGORITHM"].contains(&w.as_str()))
                }) {
                    i += 1;
                }
            }
            _ => break,
        }
    }
    match t.get(i) {
        Some(T::Word(k)) => Some((i, k.as_str())),
        _ => None,
    }
}

/// The assignments of a `SET`, split at commas outside parentheses.
fn assignments(t: &[T]) -> Vec<&[T]> {
    let (mut out, mut depth, mut from) = (Vec::new(), 0i32, 0);
    for (i, x) in t.iter().enumerate() {
        match x {
            T::Punct('(') => depth += 1,
            T::Punct(')') => depth -= 1,
            T::Punct(',') if depth == 0 => {
                out.push(&t[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&t[from..]);
    out
}

/// The quote-reading flags of a sql_mode value; the combination modes that hold ANSI_QUOTES count.
fn mode_of(sql_mode: &str) -> Mode {
    let mut m = Mode::from_sql_mode(sql_mode);
    let combos = ["ORACLE", "DB2", "MSSQL", "POSTGRESQL", "MAXDB"];
    if sql_mode
        .split(',')
        .any(|x| combos.iter().any(|c| c.eq_ignore_ascii_case(x.trim())))
    {
        m.ansi_quotes = true;
    }
    m
}

fn is_sql_mode_var(v: &str) -> bool {
    matches!(v, "@@sql_mode" | "@@session.sql_mode" | "@@local.sql_mode")
}

fn unsafe_charset(v: Option<&T>) -> Result<(), String> {
    if let Some(T::Word(c) | T::Str(c) | T::Name(c)) = v {
        let c = c.to_ascii_lowercase();
        if UNSAFE_CHARSETS.contains(&c.as_str()) {
            return Err(format!(
                "reads the rest of the dump in charset {c}, in which a `\\` byte can end a character"
            ));
        }
    }
    Ok(())
}

fn name(t: &[T], raw: &[String], i: usize) -> Option<String> {
    match t.get(i)? {
        T::Word(_) | T::Name(_) => Some(raw[i].clone()),
        _ => None,
    }
}

fn verb(t: &T) -> &'static str {
    match t {
        T::Word(w) if w == "DROP" => "drops",
        T::Word(w) if w == "ALTER" => "alters",
        _ => "creates",
    }
}

/// The first 80 characters of a statement, on one line.
fn head_of(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(80) {
        Some((k, _)) => format!("{}…", &one[..k]),
        None => one,
    }
}

mod body;

#[cfg(test)]
mod tests;

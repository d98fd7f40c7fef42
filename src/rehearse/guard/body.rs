//! The body of a trigger, routine or event in a dump, read statement by statement rather than
//! word by word: where the body ends (its `BEGIN … END`, or its one statement), so a second
//! statement after it in the same packet is caught; and what each statement inside starts
//! with, so a body that would kill, flush, reset or stop something when it fires later is
//! refused, and one that changes the session (`USE`, `SET NAMES`, `SET sql_mode`) too, while
//! the same words as a column's name (`NEW.names`) or inside a string are nothing.
//!
//! Pure: the statement's tokens in (strings, quoted names and comments already told apart by
//! [`crate::db::sqltext`]), the reason out.

use super::T;

/// Statements a body may not start: they act on the server, not on the dump's data.
const DENIED: &[&str] = &[
    "KILL",
    "FLUSH",
    "RESET",
    "PURGE",
    "CHANGE",
    "STOP",
    "SHUTDOWN",
    "BINLOG",
    "CACHE",
    "INSTALL",
    "UNINSTALL",
    "LOAD",
    "USE",
    "RESTART",
];

/// Words that open a block closed by `END` at a statement's start.
const OPENERS: &[&str] = &["BEGIN", "IF", "CASE", "WHILE", "LOOP", "REPEAT"];

/// Words after which a statement starts.
const LEADS: &[&str] = &["BEGIN", "THEN", "ELSE", "DO", "LOOP", "REPEAT"];

/// Session settings a body's `SET` may not change.
const SESSION: &[&str] = &["NAMES", "SQL_MODE", "CHARACTER_SET_CLIENT", "CHARACTER"];

/// Words that start a routine's body after its parameters, return type and characteristics
/// (and every word of [`DENIED`], which starts one too: see [`starts_body`]).
const STARTS: &[&str] = &[
    "BEGIN",
    "RETURN",
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "REPLACE",
    "SET",
    "CALL",
    "IF",
    "CASE",
    "WHILE",
    "LOOP",
    "REPEAT",
    "DO",
    "DECLARE",
    "SIGNAL",
    "RESIGNAL",
    "TRUNCATE",
    "CREATE",
    "DROP",
    "ALTER",
    "START",
    "COMMIT",
    "ROLLBACK",
    "SHOW",
    "ANALYZE",
    "OPTIMIZE",
    "REPAIR",
    "CHECK",
    "RENAME",
    "GRANT",
    "REVOKE",
    "PREPARE",
    "EXECUTE",
    "DEALLOCATE",
    "LOCK",
    "UNLOCK",
    "LEAVE",
    "ITERATE",
    "OPEN",
    "FETCH",
    "CLOSE",
    "WITH",
    "VALUES",
];

/// Whether word `w` starts a routine's body: one of [`STARTS`] or of [`DENIED`].
fn starts_body(w: &str) -> bool {
    STARTS.contains(&w) || DENIED.contains(&w)
}

fn word(t: Option<&T>) -> Option<&str> {
    match t {
        Some(T::Word(w)) => Some(w.as_str()),
        _ => None,
    }
}

/// Where the body of `CREATE … kind` (tokens `t`, kind at `k`) starts, if it can be found.
pub(super) fn start(t: &[T], k: usize, kind: &str) -> Option<usize> {
    match kind {
        // … FOR EACH ROW [FOLLOWS|PRECEDES name] body
        "TRIGGER" => {
            let row = (k..t.len())
                .find(|&i| word(t.get(i)) == Some("EACH") && word(t.get(i + 1)) == Some("ROW"))?
                + 2;
            match word(t.get(row)) {
                Some("FOLLOWS" | "PRECEDES") => Some(row + 2),
                _ => Some(row),
            }
        }
        // … ON SCHEDULE … DO body
        "EVENT" => (k..t.len())
            .find(|&i| word(t.get(i)) == Some("DO"))
            .map(|i| i + 1),
        // … name (params) [RETURNS type] [characteristics] body
        _ => {
            let open = (k..t.len()).find(|&i| matches!(t[i], T::Punct('(')))?;
            let mut depth = 0usize;
            let mut close = None;
            for (i, x) in t.iter().enumerate().skip(open) {
                match x {
                    T::Punct('(') => depth += 1,
                    T::Punct(')') => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            (close? + 1..t.len()).find(|&i| {
                let label = matches!(t[i], T::Word(_) | T::Name(_))
                    && matches!(t.get(i + 1), Some(T::Punct(':')));
                let statement = word(t.get(i)).is_some_and(starts_body)
                    // `RETURNS VARCHAR(9) CHARACTER SET x`: not a SET statement.
                    && !(word(t.get(i)) == Some("SET") && word(t.get(i.wrapping_sub(1))) == Some("CHARACTER"));
                label || statement
            })
        }
    }
}

/// Checks the body starting at `from`: each statement's first word, and nothing after the
/// body's end.
pub(super) fn check(t: &[T], from: usize) -> Result<(), String> {
    let mut depth = 0usize;
    let mut at_start = true;
    let mut i = from;
    while i < t.len() {
        let w = word(t.get(i));
        if at_start {
            // A label: `name: BEGIN`.
            if matches!(t[i], T::Word(_) | T::Name(_))
                && matches!(t.get(i + 1), Some(T::Punct(':')))
            {
                i += 2;
                continue;
            }
            if let Some(w) = w {
                if DENIED.contains(&w) {
                    return Err(format!(
                        "holds {w} in the body of a trigger, routine or event, which acts on the server (or the session) when it runs, not on the dump's data"
                    ));
                }
                if w == "SET" {
                    set_session(&t[i + 1..])?;
                }
                if w == "START" && word(t.get(i + 1)) != Some("TRANSACTION") {
                    return Err("holds START in the body of a trigger, routine or event, which acts on the server when it runs, not on the dump's data".into());
                }
            }
        }
        at_start = false;
        match (&t[i], w) {
            (_, Some("END")) => {
                depth = depth.saturating_sub(1);
                // END IF / END LOOP / END label: the next word closes nothing more.
                if matches!(t.get(i + 1), Some(T::Word(_) | T::Name(_)))
                    && !matches!(t.get(i + 2), Some(T::Punct('.')))
                {
                    i += 1;
                }
                if depth == 0 {
                    return after_end(&t[i + 1..]);
                }
            }
            (_, Some(o)) if OPENERS.contains(&o) && (o == "CASE" || starts(t, i, from)) => {
                depth += 1;
            }
            (T::Punct(';'), _) if depth == 0 => return after_end(&t[i + 1..]),
            (T::Punct(';'), _) => at_start = true,
            _ => {}
        }
        if w.is_some_and(|w| LEADS.contains(&w)) {
            at_start = true;
        }
        i += 1;
    }
    Ok(())
}

/// Whether the token at `i` starts a statement (the body's first, or after `;`, a label or
/// a word that leads one).
fn starts(t: &[T], i: usize, from: usize) -> bool {
    if i == from {
        return true;
    }
    match t.get(i - 1) {
        Some(T::Punct(';' | ':')) => true,
        Some(T::Word(w)) => LEADS.contains(&w.as_str()),
        _ => false,
    }
}

/// What follows the body's end: nothing but a `;`.
fn after_end(rest: &[T]) -> Result<(), String> {
    if rest.iter().all(|x| matches!(x, T::Punct(';'))) {
        Ok(())
    } else {
        Err("holds more than one statement (another after the body of a trigger, routine or event, in what the client sends as one), which would run unread".into())
    }
}

/// A body's `SET` (tokens after it) that would change the session's names, charset or sql_mode.
fn set_session(t: &[T]) -> Result<(), String> {
    let mut target = true;
    let mut depth = 0usize;
    for x in t {
        match x {
            T::Punct(';') if depth == 0 => break,
            T::Punct('(') => depth += 1,
            T::Punct(')') => depth = depth.saturating_sub(1),
            T::Punct(',') if depth == 0 => {
                target = true;
                continue;
            }
            T::Word(w) if target && (w == "SESSION" || w == "LOCAL") => continue,
            T::Word(w) if target && SESSION.contains(&w.as_str()) => {
                return Err(format!("holds SET {w} inside a trigger, routine or event (it would change the session)"));
            }
            T::Var(v)
                if target
                    && (v.ends_with("sql_mode") || v.ends_with("character_set_client"))
                    && v.starts_with("@@") =>
            {
                return Err(format!("holds SET {v} inside a trigger, routine or event (it would change the session)"));
            }
            _ => {}
        }
        target = false;
    }
    Ok(())
}

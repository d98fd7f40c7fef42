//! The session sql_mode every connection of the tool works under: the server's, without the
//! modes that change how quotes and backslashes are read (`NO_BACKSLASH_ESCAPES`,
//! `ANSI_QUOTES` and the combination modes holding it), and with `STRICT_TRANS_TABLES`. Every
//! literal and identifier the tool writes ([`super::quote`]) is then read as written, whatever
//! the server's global sql_mode; and a value its column cannot hold (too long for the job's
//! `target:`, a character the charset lacks) is refused with an error, never truncated or
//! turned into `?` with a warning, on a server without strict mode too. Not
//! `STRICT_ALL_TABLES`: in a MyISAM table a row the application rewrote after the copy read it
//! ahead then fails a multi-row step mid-way, where under `STRICT_TRANS_TABLES` it is written
//! with a warning and put right by its replay (`copy::a_row_rewritten_…_myisam`); a MyISAM
//! table keeps the server's own strict-mode reading for rows after a statement's first.
//!
//! The triggers the tool creates (change log, cascades, bridge) run inside the application's
//! statements, under the sql_mode recorded when they were created: they are created under the
//! application's mode (the session's first mode without the quote modes, kept in
//! [`APP_MODE_VAR`]), so strictness the tool adds for itself never fails an application's
//! write ([`as_application`]). The application's own triggers, routines and events are
//! recreated under their own recorded sql_mode, set for that statement and reset after it.
//!
//! Pure: SQL text out.

/// The modes left out: they change where a string literal or a quoted name ends.
pub const QUOTE_MODES: &[&str] = &[
    "NO_BACKSLASH_ESCAPES",
    "ANSI_QUOTES",
    "ANSI",
    "ORACLE",
    "DB2",
    "MSSQL",
    "POSTGRESQL",
    "MAXDB",
];

/// `sql_mode` (comma-separated names, as the server reports it) without [`QUOTE_MODES`];
/// anything that is not a plain mode name is left out too, so the result quotes safely.
pub fn without_quote_modes(sql_mode: &str) -> String {
    sql_mode
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .filter(|m| !QUOTE_MODES.iter().any(|q| q.eq_ignore_ascii_case(m)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The mode the tool adds for its own writes: a value its column cannot hold is an error.
pub const STRICT: &str = "STRICT_TRANS_TABLES";

/// The session variable holding the application's mode (the session's first, without
/// [`QUOTE_MODES`]), set by [`tool_session_sql`].
pub const APP_MODE_VAR: &str = "@myrecode_app_sql_mode";

/// The session's own sql_mode without [`QUOTE_MODES`], as an SQL expression.
fn cleaned_mode_expr() -> String {
    let mut expr = "CONCAT(',', @@SESSION.sql_mode, ',')".to_string();
    for m in QUOTE_MODES {
        expr = format!("REPLACE({expr}, ',{m},', ',')");
    }
    format!("TRIM(BOTH ',' FROM {expr})")
}

/// The statement a session loading the application's own statements (a dump) runs first: the
/// session's own sql_mode without [`QUOTE_MODES`], computed by the server in one round trip.
/// Written with plain single-quoted literals and no backslash, so it reads the same under any
/// sql_mode.
pub fn clean_session_sql() -> String {
    format!("SET SESSION sql_mode = {}", cleaned_mode_expr())
}

/// `mode` (an SQL expression) with [`STRICT`] added.
fn strict_of(mode: &str) -> String {
    format!("CONCAT_WS(',', NULLIF({mode}, ''), '{STRICT}')")
}

/// The statement each connection of the tool runs first: keeps the application's mode (the
/// session's own without [`QUOTE_MODES`]) in [`APP_MODE_VAR`] and works under it plus
/// [`STRICT`]. One statement (the server evaluates every right-hand side before assigning,
/// so the expression is written twice); like [`clean_session_sql`], it reads the same under
/// any sql_mode.
pub fn tool_session_sql() -> String {
    let app = cleaned_mode_expr();
    format!(
        "SET {APP_MODE_VAR} = {app}, SESSION sql_mode = {}",
        strict_of(&app)
    )
}

/// Back to the application's mode (or, on a session [`tool_session_sql`] did not start, the
/// session's own), for creating what runs in the application's statements.
pub fn application_mode_sql() -> String {
    format!("SET SESSION sql_mode = COALESCE({APP_MODE_VAR}, @@SESSION.sql_mode)")
}

/// Back to the tool's mode after [`application_mode_sql`].
pub fn tool_mode_sql() -> String {
    format!(
        "SET SESSION sql_mode = {}",
        strict_of(&format!("COALESCE({APP_MODE_VAR}, @@SESSION.sql_mode)"))
    )
}

/// `statements` (triggers that run in the application's statements) framed so they are
/// created under the application's mode and the tool's mode is back after them: a trigger
/// keeps the mode it was created under, and the tool's [`STRICT`] in it could fail an
/// application's write that its own mode lets through.
pub fn as_application(statements: Vec<String>) -> Vec<String> {
    if statements.is_empty() {
        return statements;
    }
    let mut out = Vec::with_capacity(statements.len() + 2);
    out.push(application_mode_sql());
    out.extend(statements);
    out.push(tool_mode_sql());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sqltext::{tokens, Mode, TokenKind};

    #[test]
    fn the_quote_modes_are_left_out_and_the_rest_kept() {
        assert_eq!(
            without_quote_modes(
                "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ANSI,NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES"
            ),
            "REAL_AS_FLOAT,PIPES_AS_CONCAT,IGNORE_SPACE,STRICT_TRANS_TABLES"
        );
        assert_eq!(without_quote_modes(""), "");
        assert_eq!(
            without_quote_modes("STRICT_ALL_TABLES,x'; DROP"),
            "STRICT_ALL_TABLES"
        );
    }

    #[test]
    fn the_session_statements_read_the_same_under_every_mode() {
        let sql = clean_session_sql();
        assert!(sql.starts_with(
            "SET SESSION sql_mode = TRIM(BOTH ',' FROM REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ','), ',ANSI_QUOTES,', ',')"
        ), "{sql}");
        let modes = [(false, false), (true, false), (false, true), (true, true)];
        let read = |sql: &str, m: (bool, bool)| {
            let mode = Mode {
                ansi_quotes: m.0,
                no_backslash_escapes: m.1,
            };
            tokens(sql, mode)
                .unwrap()
                .into_iter()
                .map(|t| (t.span, matches!(t.kind, TokenKind::Str(_))))
                .collect::<Vec<_>>()
        };
        for sql in [
            sql,
            tool_session_sql(),
            application_mode_sql(),
            tool_mode_sql(),
        ] {
            assert!(!sql.contains('\\') && !sql.contains('"'), "{sql}");
            for m in modes {
                assert_eq!(
                    read(&sql, m),
                    read(&sql, (false, false)),
                    "{sql} under {m:?}"
                );
            }
        }
    }

    #[test]
    fn the_tool_works_strict_and_creates_triggers_under_the_applications_mode() {
        let sql = tool_session_sql();
        let cleaned = cleaned_mode_expr();
        assert_eq!(
            sql,
            format!(
                "SET @myrecode_app_sql_mode = {cleaned}, SESSION sql_mode = CONCAT_WS(',', NULLIF({cleaned}, ''), 'STRICT_TRANS_TABLES')"
            )
        );
        assert_eq!(
            application_mode_sql(),
            "SET SESSION sql_mode = COALESCE(@myrecode_app_sql_mode, @@SESSION.sql_mode)"
        );
        assert_eq!(
            tool_mode_sql(),
            "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(COALESCE(@myrecode_app_sql_mode, @@SESSION.sql_mode), ''), 'STRICT_TRANS_TABLES')"
        );
        assert_eq!(
            as_application(vec!["CREATE TRIGGER a".into(), "CREATE TRIGGER b".into()]),
            vec![
                application_mode_sql(),
                "CREATE TRIGGER a".into(),
                "CREATE TRIGGER b".into(),
                tool_mode_sql()
            ]
        );
        assert!(as_application(Vec::new()).is_empty());
    }
}

//! The session sql_mode every connection of the tool works under: the server's, without the
//! modes that change how quotes and backslashes are read (`NO_BACKSLASH_ESCAPES`,
//! `ANSI_QUOTES` and the combination modes holding it). Every literal and identifier the tool
//! writes ([`super::quote`]) is then read as written, whatever the server's global sql_mode;
//! the application's triggers, routines and events are still recreated under their own
//! recorded sql_mode, set for that statement and reset after it.
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

/// The statement each connection runs first: the session's own sql_mode without
/// [`QUOTE_MODES`], computed by the server in one round trip. Written with plain
/// single-quoted literals and no backslash, so it reads the same under any sql_mode.
pub fn clean_session_sql() -> String {
    let mut expr = "CONCAT(',', @@SESSION.sql_mode, ',')".to_string();
    for m in QUOTE_MODES {
        expr = format!("REPLACE({expr}, ',{m},', ',')");
    }
    format!("SET SESSION sql_mode = TRIM(BOTH ',' FROM {expr})")
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
    fn the_cleaning_statement_reads_the_same_under_every_mode() {
        let sql = clean_session_sql();
        assert!(sql.starts_with(
            "SET SESSION sql_mode = TRIM(BOTH ',' FROM REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ','), ',ANSI_QUOTES,', ',')"
        ), "{sql}");
        assert!(!sql.contains('\\') && !sql.contains('"'), "{sql}");
        let modes = [(false, false), (true, false), (false, true), (true, true)];
        let read = |m: (bool, bool)| {
            let mode = Mode {
                ansi_quotes: m.0,
                no_backslash_escapes: m.1,
            };
            tokens(&sql, mode)
                .unwrap()
                .into_iter()
                .map(|t| (t.span, matches!(t.kind, TokenKind::Str(_))))
                .collect::<Vec<_>>()
        };
        for m in modes {
            assert_eq!(read(m), read((false, false)), "{m:?}");
        }
    }
}

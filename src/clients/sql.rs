//! The statements that read a schema's clients (pure; bound parameters: the schema).

/// MariaDB and MySQL: the sessions on a schema, by user and client host (port cut off):
/// user, host, sessions, longest idle (`Sleep`) in seconds. Our own session is left out.
pub const SESSIONS_SQL: &str = "SELECT CAST(USER AS CHAR), CAST(SUBSTRING_INDEX(HOST, ':', 1) AS CHAR), COUNT(*), \
     CAST(MAX(IF(COMMAND = 'Sleep', TIME, 0)) AS SIGNED) FROM information_schema.PROCESSLIST \
     WHERE DB = ? AND ID <> CONNECTION_ID() AND USER <> SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AND COMMAND NOT IN ('Daemon', 'Binlog Dump', 'Killed') \
     GROUP BY 1, 2 ORDER BY 1, 2";

/// The user names holding SUPER or CONNECTION ADMIN (for which the server runs no
/// `init_connect`), as `information_schema.USER_PRIVILEGES` shows them to the job's user.
pub const PRIVILEGED_SQL: &str =
    "SELECT DISTINCT CAST(SUBSTRING_INDEX(SUBSTRING(GRANTEE, 2), '''@''', 1) AS CHAR) \
     FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE IN ('SUPER', 'CONNECTION ADMIN')";

/// MySQL 8 only (MariaDB has no `variables_by_thread`; written from MySQL's manual, not run
/// here): each session's `character_set_client` on the schema, by user and host.
pub const CHARSETS_SQL: &str = "SELECT CAST(t.PROCESSLIST_USER AS CHAR), CAST(t.PROCESSLIST_HOST AS CHAR), \
     CAST(v.VARIABLE_VALUE AS CHAR), COUNT(*) FROM performance_schema.threads t \
     JOIN performance_schema.variables_by_thread v ON v.THREAD_ID = t.THREAD_ID AND v.VARIABLE_NAME = 'character_set_client' \
     WHERE t.PROCESSLIST_DB = ? GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";

/// Where performance_schema is on (MySQL by default, MariaDB when started with it): the
/// `SET NAMES` / `SET CHARACTER SET` statements each user and host sent on the schema, each
/// distinct one once, from the statement history of the live sessions (their last 10
/// statements each); the reader keeps the one the bridge cannot cover, if any.
pub const SET_NAMES_SQL: &str = "SELECT DISTINCT CAST(t.PROCESSLIST_USER AS CHAR), CAST(t.PROCESSLIST_HOST AS CHAR), \
     CAST(h.SQL_TEXT AS CHAR) FROM performance_schema.events_statements_history h \
     JOIN performance_schema.threads t ON t.THREAD_ID = h.THREAD_ID \
     WHERE t.PROCESSLIST_DB = ? AND (h.SQL_TEXT LIKE 'SET NAMES%' OR h.SQL_TEXT LIKE 'SET CHARACTER SET%')";

/// How many of the two consumers the statement history needs are on (2: it is kept).
pub const STATEMENT_CONSUMERS_SQL: &str =
    "SELECT CAST(COUNT(*) AS SIGNED) FROM performance_schema.setup_consumers \
     WHERE NAME IN ('events_statements_current', 'events_statements_history') AND ENABLED = 'YES'";

/// How to make the statement history seen, for a plan that could not read it.
pub const HISTORY_FIX: &str = "start the server with performance_schema=ON, then before the scan run UPDATE performance_schema.setup_consumers \
     SET ENABLED = 'YES' WHERE NAME IN ('events_statements_current', 'events_statements_history')";

/// The charset a `SET NAMES x` / `SET CHARACTER SET x` statement names (lower case,
/// unquoted), if it is one.
pub fn named_charset(statement: &str) -> Option<String> {
    let s = statement.trim().to_ascii_lowercase();
    let rest = s
        .strip_prefix("set names")
        .or_else(|| s.strip_prefix("set character set"))?;
    let word = rest.split_whitespace().next()?;
    let word = word.trim_matches(|c| c == '\'' || c == '"' || c == '`' || c == ';');
    (!word.is_empty()).then(|| word.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_names_statements_name_their_charset() {
        assert_eq!(named_charset("SET NAMES latin1").as_deref(), Some("latin1"));
        assert_eq!(
            named_charset("set names 'utf8mb4' collate utf8mb4_unicode_ci").as_deref(),
            Some("utf8mb4")
        );
        assert_eq!(
            named_charset("SET CHARACTER SET cp1251;").as_deref(),
            Some("cp1251")
        );
        assert_eq!(named_charset("SELECT 1"), None);
    }

    #[test]
    fn the_reads_name_the_schema_by_parameter_only() {
        for sql in [SESSIONS_SQL, CHARSETS_SQL, SET_NAMES_SQL] {
            assert_eq!(sql.matches('?').count(), 1, "{sql}");
        }
        assert!(SESSIONS_SQL.contains("ID <> CONNECTION_ID()"));
    }
}

//! Reads the clients of a schema from the server (read-only): its sessions, the users that
//! skip `init_connect`, and, where the server keeps them, each session's charset (MySQL 8)
//! and `SET NAMES` statements (performance_schema on). What is not readable is left unknown,
//! never guessed: MariaDB cannot say a session's charset, so a client is then taken to talk
//! the server's default.

use super::model::{ClientSeen, ClientsSeen};
use super::sql::{
    named_charset, CHARSETS_SQL, PRIVILEGED_SQL, SESSIONS_SQL, SET_NAMES_SQL,
    STATEMENT_CONSUMERS_SQL,
};
use anyhow::Result;
use sqlx::MySqlConnection;

/// The clients with sessions on `schema` now.
pub async fn read(conn: &mut MySqlConnection, schema: &str) -> Result<ClientsSeen> {
    let (version, server_handshake, ps): (String, String, i64) = sqlx::query_as(
        "SELECT VERSION(), CAST(@@global.character_set_server AS CHAR), CAST(@@global.performance_schema AS SIGNED)",
    )
    .fetch_one(&mut *conn)
    .await?;
    let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(SESSIONS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    let privileged: Vec<String> = sqlx::query_scalar(PRIVILEGED_SQL)
        .fetch_all(&mut *conn)
        .await
        .unwrap_or_default();
    let mut seen: Vec<ClientSeen> = rows
        .into_iter()
        .map(|(user, host, sessions, idle)| ClientSeen {
            privileged: privileged.contains(&user),
            user,
            host,
            sessions: sessions.max(0) as u64,
            charset: None,
            set_names: None,
            idle_secs: idle.max(0) as u64,
        })
        .collect();
    let mysql = !version.contains("MariaDB");
    let per_session = mysql
        && match sqlx::query_as::<_, (String, String, String, i64)>(CHARSETS_SQL)
            .bind(schema)
            .fetch_all(&mut *conn)
            .await
        {
            Ok(rows) => {
                for (user, host, cs, _) in rows {
                    if let Some(c) = seen.iter_mut().find(|c| c.user == user && c.host == host) {
                        c.charset = Some(match c.charset.take() {
                            Some(prev) => format!("{prev}, {cs}"),
                            None => cs,
                        });
                    }
                }
                true
            }
            Err(_) => false,
        };
    // The history is kept only with both consumers on (MariaDB starts with them off, even
    // with performance_schema on): otherwise it reads empty, which must not pass for "none".
    let consumers: i64 = if ps == 1 {
        sqlx::query_scalar(STATEMENT_CONSUMERS_SQL)
            .fetch_one(&mut *conn)
            .await
            .unwrap_or(0)
    } else {
        0
    };
    let history = consumers == 2
        && match sqlx::query_as::<_, (String, String, Option<String>)>(SET_NAMES_SQL)
            .bind(schema)
            .fetch_all(&mut *conn)
            .await
        {
            Ok(rows) => {
                for (user, host, text) in rows {
                    if let Some(c) = seen.iter_mut().find(|c| c.user == user && c.host == host) {
                        let named = text.as_deref().and_then(named_charset);
                        c.set_names = super::model::either_set_names(c.set_names.take(), named);
                    }
                }
                true
            }
            Err(_) => false,
        };
    Ok(ClientsSeen {
        schema: schema.to_string(),
        server_handshake,
        per_session,
        history,
        seen,
    })
}

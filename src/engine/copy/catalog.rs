//! What the copy reads of the server's catalog about the tables it works on: whether a table
//! is there, its comment (our sentry's), its triggers (ours and the application's), its
//! engine, its definition; and which server this is. Read by every phase.

use crate::bookkeeping::names::is_copy_trigger;
use crate::db::quote;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};

/// A table's comment, `?` schema and `?` table; no row at all when there is no such table.
pub const TABLE_COMMENT_SQL: &str = "SELECT CAST(TABLE_COMMENT AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?";

/// The triggers on a table, `?` schema and `?` table.
pub const TRIGGERS_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?";

/// A table's storage engine, `?` schema and `?` table; no row when there is no such table.
pub const ENGINE_SQL: &str = "SELECT CAST(ENGINE AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?";

/// Comment of the sentry table, told apart from a real kept original by it.
pub const SENTRY_COMMENT: &str = "myrecode cut-over sentry";

/// `SHOW CREATE TABLE`, for the table's next `AUTO_INCREMENT`.
pub fn show_create_sql(schema: &str, table: &str) -> String {
    format!("SHOW CREATE TABLE {}", quote::table(schema, table))
}

/// The table's comment, or `None` when there is no such table.
pub(crate) async fn table_comment(
    conn: &mut MySqlConnection,
    schema: &str,
    name: &str,
) -> Result<Option<String>> {
    sqlx::query_scalar(TABLE_COMMENT_SQL)
        .bind(schema)
        .bind(name)
        .fetch_optional(conn)
        .await
        .context("reading information_schema.TABLES")
}

/// Whether `schema`.`name` is there (a table or a view).
pub(crate) async fn table_exists(
    conn: &mut MySqlConnection,
    schema: &str,
    name: &str,
) -> Result<bool> {
    Ok(table_comment(conn, schema, name).await?.is_some())
}

/// Whether `name` is our cut-over sentry (rather than a kept original).
pub(crate) async fn is_sentry(
    conn: &mut MySqlConnection,
    schema: &str,
    name: &str,
) -> Result<bool> {
    Ok(table_comment(conn, schema, name).await?.as_deref() == Some(SENTRY_COMMENT))
}

/// The names of the triggers on `schema`.`table`, ours and the application's.
pub(crate) async fn trigger_names(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<String>> {
    let rows = sqlx::query(TRIGGERS_SQL)
        .bind(schema)
        .bind(table)
        .fetch_all(conn)
        .await
        .context("reading information_schema.TRIGGERS")?;
    Ok(rows.iter().map(|r| r.get::<String, _>(0)).collect())
}

/// Whether the server is MariaDB (its catalog differs from MySQL's here and there).
pub async fn is_mariadb(conn: &mut MySqlConnection) -> Result<bool> {
    let v: String = sqlx::query_scalar("SELECT VERSION()")
        .fetch_one(conn)
        .await?;
    Ok(v.contains("MariaDB"))
}

/// A table's triggers (`?` schema, `?` table) in firing order: name, event, timing, order,
/// body, `sql_mode`, definer, `character_set_client`, `collation_connection`.
pub const OWN_TRIGGERS_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR), CAST(EVENT_MANIPULATION AS CHAR), \
CAST(ACTION_TIMING AS CHAR), CAST(ACTION_ORDER AS SIGNED), CAST(ACTION_STATEMENT AS CHAR), CAST(SQL_MODE AS CHAR), \
CAST(DEFINER AS CHAR), CAST(CHARACTER_SET_CLIENT AS CHAR), CAST(COLLATION_CONNECTION AS CHAR) \
FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? \
ORDER BY EVENT_MANIPULATION, ACTION_TIMING, ACTION_ORDER";

/// One trigger of the application's, as the catalog defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnTrigger {
    /// Trigger name (unique in its schema).
    pub name: String,
    /// The table it is on.
    pub table: String,
    /// `INSERT`, `UPDATE` or `DELETE`.
    pub event: String,
    /// `BEFORE` or `AFTER`.
    pub timing: String,
    /// Its place among the table's triggers of the same event and timing.
    pub order: i64,
    /// The body (`BEGIN … END` or one statement).
    pub body: String,
    /// The `sql_mode` it was created under.
    pub sql_mode: String,
    /// `user@host`.
    pub definer: String,
    /// `character_set_client` it was created under.
    pub charset_client: String,
    /// `collation_connection` it was created under.
    pub collation_connection: String,
}

impl OwnTrigger {
    /// Whether the body can be sent again exactly: ASCII reads the same in every client
    /// character set; other text only when the client set was UTF-8 (as this connection's is).
    pub fn portable(&self) -> bool {
        crate::inventory::model::Trigger::body_portable(&self.body, &self.charset_client)
    }
}

/// The application's triggers on `table` (the copy's own are left out), in firing order.
pub(crate) async fn own_triggers(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<OwnTrigger>> {
    let rows = sqlx::query(OWN_TRIGGERS_SQL)
        .bind(schema)
        .bind(table)
        .fetch_all(&mut *conn)
        .await
        .context("reading information_schema.TRIGGERS")?;
    let mut out = Vec::new();
    for r in &rows {
        let name: String = r.try_get(0)?;
        // The change log's and the cascade logging's (of any pair) are the copy's, not moved.
        if is_copy_trigger(&name) {
            continue;
        }
        out.push(OwnTrigger {
            name,
            table: table.to_string(),
            event: r.try_get(1)?,
            timing: r.try_get(2)?,
            order: r.try_get(3)?,
            body: r.try_get(4)?,
            sql_mode: r.try_get(5)?,
            definer: r.try_get(6)?,
            charset_client: r.try_get(7)?,
            collation_connection: r.try_get(8)?,
        });
    }
    Ok(out)
}

/// Stops the statement connection `id` runs (the connection itself lives on).
pub fn kill_query_sql(id: u64) -> String {
    format!("KILL QUERY {id}")
}

/// Ends connection `id` (its statement and its session: its locks go with it).
pub fn kill_connection_sql(id: u64) -> String {
    format!("KILL CONNECTION {id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements() {
        assert_eq!(
            show_create_sql("s", "order"),
            "SHOW CREATE TABLE `s`.`order`"
        );
        assert_eq!(kill_query_sql(42), "KILL QUERY 42");
        assert_eq!(kill_connection_sql(42), "KILL CONNECTION 42");
    }
}

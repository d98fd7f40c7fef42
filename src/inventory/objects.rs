//! The schema's views, stored routines and events as the catalog shows them: what `scan`
//! reports on and the copy's cut-over recreates in UTF-8.

use crate::db::quote;
use anyhow::{anyhow, Context, Result};
use sqlx::{MySqlConnection, Row};

/// What kind of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `CREATE VIEW`.
    View,
    /// `CREATE PROCEDURE`.
    Procedure,
    /// `CREATE FUNCTION`.
    Function,
    /// `CREATE EVENT`.
    Event,
}

impl Kind {
    /// The word `SHOW CREATE` and the bookkeeping use.
    pub fn word(self) -> &'static str {
        match self {
            Kind::View => "VIEW",
            Kind::Procedure => "PROCEDURE",
            Kind::Function => "FUNCTION",
            Kind::Event => "EVENT",
        }
    }

    /// The kind named by [`Kind::word`].
    pub fn from_word(w: &str) -> Option<Kind> {
        [Kind::View, Kind::Procedure, Kind::Function, Kind::Event]
            .into_iter()
            .find(|k| k.word().eq_ignore_ascii_case(w))
    }
}

/// One object as the server shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// View, routine or event.
    pub kind: Kind,
    /// Its name (in the job's schema).
    pub name: String,
    /// `SHOW CREATE …`'s statement (for an event: its `DO` body, see [`Object::comment`]).
    pub create: String,
    /// The `sql_mode` it was created under (views keep none: the server's default).
    pub sql_mode: String,
    /// The charset its text was written in: the schema's default of its day (routines,
    /// events: `DATABASE_COLLATION`'s; views: their client's), which its literals are compared in.
    pub charset: String,
    /// An event's `DEFINER` (`user@host`) and COMMENT; unused for the others.
    pub definer: String,
    /// An event's COMMENT.
    pub comment: String,
}

/// `SHOW CREATE <kind> schema.name`.
pub fn show_create_sql(kind: Kind, schema: &str, name: &str) -> String {
    format!("SHOW CREATE {} {}", kind.word(), quote::table(schema, name))
}

/// The views of `?` schema.
pub const VIEWS_SQL: &str =
    "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ? ORDER BY 1";

/// The routines of `?` schema: name, type, database collation's charset.
pub const ROUTINES_SQL: &str = "SELECT CAST(r.ROUTINE_NAME AS CHAR), CAST(r.ROUTINE_TYPE AS CHAR), CAST(c.CHARACTER_SET_NAME AS CHAR) \
     FROM information_schema.ROUTINES r JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = r.DATABASE_COLLATION \
     WHERE r.ROUTINE_SCHEMA = ? ORDER BY 1, 2";

/// The events of `?` schema: name, body, sql_mode, definer, comment, database collation's charset.
pub const EVENTS_SQL: &str = "SELECT CAST(e.EVENT_NAME AS CHAR), CAST(e.EVENT_DEFINITION AS CHAR), CAST(e.SQL_MODE AS CHAR), \
     CAST(e.DEFINER AS CHAR), CAST(e.EVENT_COMMENT AS CHAR), CAST(c.CHARACTER_SET_NAME AS CHAR) \
     FROM information_schema.EVENTS e JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = e.DATABASE_COLLATION \
     WHERE e.EVENT_SCHEMA = ? ORDER BY 1";

/// The schema's default charset.
pub async fn schema_charset(conn: &mut MySqlConnection, schema: &str) -> Result<String> {
    Ok(sqlx::query_scalar(
        "SELECT CAST(DEFAULT_CHARACTER_SET_NAME AS CHAR) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
    )
    .bind(schema)
    .fetch_one(conn)
    .await?)
}

/// `SHOW CREATE`'s statement (its third column for routines, second for views).
async fn show_create(
    conn: &mut MySqlConnection,
    kind: Kind,
    schema: &str,
    name: &str,
) -> Result<(String, String)> {
    let row = sqlx::query(&show_create_sql(kind, schema, name))
        .fetch_one(conn)
        .await
        .with_context(|| format!("reading the {} `{name}`", kind.word().to_lowercase()))?;
    Ok(match kind {
        Kind::View => (row.try_get(1)?, String::new()),
        _ => (row.try_get(2)?, row.try_get(1)?),
    })
}

/// The schema's views, routines and events as the server shows them.
pub async fn read_objects(conn: &mut MySqlConnection, schema: &str) -> Result<Vec<Object>> {
    let default = schema_charset(conn, schema).await?;
    let mut out = Vec::new();
    let views: Vec<String> = sqlx::query_scalar(VIEWS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    for name in views {
        let (create, _) = show_create(conn, Kind::View, schema, &name).await?;
        // A view keeps no default of its day: its literals are compared with the schema's
        // legacy columns, so they are read in the schema's charset.
        out.push(Object {
            kind: Kind::View,
            name,
            create,
            sql_mode: String::new(),
            charset: default.clone(),
            definer: String::new(),
            comment: String::new(),
        });
    }
    let routines: Vec<(String, String, String)> = sqlx::query_as(ROUTINES_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    for (name, ty, charset) in routines {
        let kind = Kind::from_word(&ty).ok_or_else(|| anyhow!("unknown routine type {ty}"))?;
        let (create, sql_mode) = show_create(conn, kind, schema, &name).await?;
        out.push(Object {
            kind,
            name,
            create,
            sql_mode,
            charset,
            definer: String::new(),
            comment: String::new(),
        });
    }
    let events: Vec<(String, String, String, String, String, String)> = sqlx::query_as(EVENTS_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await?;
    for (name, body, sql_mode, definer, comment, charset) in events {
        out.push(Object {
            kind: Kind::Event,
            name,
            create: body,
            sql_mode,
            charset,
            definer,
            comment,
        });
    }
    Ok(out)
}

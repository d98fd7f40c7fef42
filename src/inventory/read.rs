//! Reads the catalog from `information_schema`: read-only, bind parameters only, no locks.

use super::keylen::ColumnFacts;
use super::model::{ServerInfo, Trigger};
use anyhow::{Context, Result};
use sqlx::mysql::MySqlRow;
use sqlx::{MySqlConnection, Row};

/// The catalog rows `inventory` is assembled from.
#[derive(Debug, Default)]
pub struct RawCatalog {
    /// Server facts.
    pub server: Option<ServerInfo>,
    /// Base tables: schema, name, engine, row format, estimated rows, collation.
    pub tables: Vec<RawTable>,
    /// Every column of those tables, in table order.
    pub columns: Vec<(String, String, ColumnFacts)>,
    /// Index parts, ordered by schema, table, index, position.
    pub index_parts: Vec<RawIndexPart>,
    /// Triggers per table.
    pub triggers: Vec<(String, String, Trigger)>,
    /// Foreign key column pairs touching the schemas.
    pub foreign_keys: Vec<RawForeignKey>,
}

/// A base table row.
#[derive(Debug, Clone)]
pub struct RawTable {
    /// Schema.
    pub schema: String,
    /// Name.
    pub name: String,
    /// Engine.
    pub engine: String,
    /// Row format.
    pub row_format: String,
    /// Estimated rows.
    pub rows: u64,
    /// Default collation.
    pub collation: Option<String>,
}

/// One column of one index.
#[derive(Debug, Clone)]
pub struct RawIndexPart {
    /// Schema.
    pub schema: String,
    /// Table.
    pub table: String,
    /// Index name.
    pub index: String,
    /// Whether the index allows duplicates.
    pub non_unique: bool,
    /// Column name (`None` for a functional key part).
    pub column: Option<String>,
    /// Prefix length.
    pub sub_part: Option<u64>,
    /// Index type.
    pub index_type: String,
}

/// One column pair of a foreign key.
#[derive(Debug, Clone)]
pub struct RawForeignKey {
    /// Constraint name.
    pub name: String,
    /// Referencing schema.
    pub schema: String,
    /// Referencing table.
    pub table: String,
    /// Referencing column.
    pub column: String,
    /// Referenced schema.
    pub ref_schema: String,
    /// Referenced table.
    pub ref_table: String,
    /// Referenced column.
    pub ref_column: String,
}

/// Schemas that hold the server's own tables, never ours to recode.
pub const SYSTEM_SCHEMAS: [&str; 4] = ["mysql", "information_schema", "performance_schema", "sys"];

/// Whether `name` is one of the server's [`SYSTEM_SCHEMAS`] (the server reads their names
/// without case).
pub fn is_system_schema(name: &str) -> bool {
    SYSTEM_SCHEMAS.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// Lists user schemas on the server.
pub async fn list_schemas(conn: &mut MySqlConnection) -> Result<Vec<String>> {
    let rows =
        sqlx::query("SELECT CAST(SCHEMA_NAME AS CHAR) FROM information_schema.SCHEMATA ORDER BY 1")
            .fetch_all(conn)
            .await
            .context("cannot list schemas")?;
    Ok(rows
        .iter()
        .map(|r| r.get::<String, _>(0))
        .filter(|s| !SYSTEM_SCHEMAS.contains(&s.to_ascii_lowercase().as_str()))
        .collect())
}

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

async fn fetch(
    conn: &mut MySqlConnection,
    sql: &str,
    schemas: &[String],
    times: usize,
) -> Result<Vec<MySqlRow>> {
    let mut q = sqlx::query(sql);
    for _ in 0..times {
        for s in schemas {
            q = q.bind(s);
        }
    }
    q.fetch_all(conn)
        .await
        .with_context(|| format!("catalog query failed: {sql}"))
}

/// Reads every catalog row for the given schemas.
pub async fn read_catalog(conn: &mut MySqlConnection, schemas: &[String]) -> Result<RawCatalog> {
    let ph = placeholders(schemas.len());
    let server = read_server(conn).await?;
    let mariadb = server.flavor == "MariaDB";
    let tables = read_tables(conn, schemas, &ph).await?;
    let columns = read_columns(conn, schemas, &ph, mariadb).await?;
    let index_parts = read_index_parts(conn, schemas, &ph).await?;
    let triggers = read_triggers(conn, schemas, &ph).await?;
    let foreign_keys = read_foreign_keys(conn, schemas, &ph).await?;
    Ok(RawCatalog {
        server: Some(server),
        tables,
        columns,
        index_parts,
        triggers,
        foreign_keys,
    })
}

/// The server's version, flavour, InnoDB page size and default row format.
async fn read_server(conn: &mut MySqlConnection) -> Result<ServerInfo> {
    let server = sqlx::query(
        "SELECT VERSION(), CAST(@@innodb_page_size AS UNSIGNED), CAST(@@innodb_default_row_format AS CHAR)",
    )
    .fetch_one(conn)
    .await
    .context("cannot read server variables")?;
    let version: String = server.get(0);
    Ok(ServerInfo {
        flavor: if version.contains("MariaDB") {
            "MariaDB"
        } else {
            "MySQL"
        }
        .to_string(),
        version,
        innodb_page_size: server.get::<u64, _>(1) as u32,
        default_row_format: server.get(2),
    })
}

/// The schemas' base tables.
async fn read_tables(
    conn: &mut MySqlConnection,
    schemas: &[String],
    ph: &str,
) -> Result<Vec<RawTable>> {
    Ok(fetch(
        conn,
        &format!(
            "SELECT CAST(TABLE_SCHEMA AS CHAR), CAST(TABLE_NAME AS CHAR), CAST(IFNULL(ENGINE,'') AS CHAR), \
             CAST(IFNULL(ROW_FORMAT,'') AS CHAR), CAST(IFNULL(TABLE_ROWS,0) AS UNSIGNED), CAST(TABLE_COLLATION AS CHAR) \
             FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA IN ({ph}) ORDER BY 1, 2"
        ),
        schemas,
        1,
    )
    .await?
    .iter()
    .map(|r| RawTable {
        schema: r.get(0),
        name: r.get(1),
        engine: r.get(2),
        row_format: r.get(3),
        rows: r.get(4),
        collation: r.get(5),
    })
    .collect())
}

/// Every column of the schemas' tables, in table order, with its facts.
async fn read_columns(
    conn: &mut MySqlConnection,
    schemas: &[String],
    ph: &str,
    mariadb: bool,
) -> Result<Vec<(String, String, ColumnFacts)>> {
    Ok(fetch(
        conn,
        &format!(
            "SELECT CAST(c.TABLE_SCHEMA AS CHAR), CAST(c.TABLE_NAME AS CHAR), CAST(c.COLUMN_NAME AS CHAR), \
             CAST(c.DATA_TYPE AS CHAR), CAST(c.COLUMN_TYPE AS CHAR), CAST(c.CHARACTER_SET_NAME AS CHAR), \
             CAST(c.CHARACTER_MAXIMUM_LENGTH AS UNSIGNED), CAST(c.CHARACTER_OCTET_LENGTH AS UNSIGNED), \
             CAST(c.NUMERIC_PRECISION AS UNSIGNED), CAST(c.NUMERIC_SCALE AS UNSIGNED), \
             CAST(c.DATETIME_PRECISION AS UNSIGNED), CAST(c.IS_NULLABLE = 'YES' AS SIGNED), \
             CAST(IFNULL(cs.MAXLEN, 1) AS UNSIGNED), CAST(c.COLLATION_NAME AS CHAR), \
             CAST(c.COLUMN_DEFAULT AS CHAR), CAST(c.EXTRA AS CHAR), CAST(c.COLUMN_COMMENT AS CHAR), \
             CAST(c.GENERATION_EXPRESSION AS CHAR) \
             FROM information_schema.COLUMNS c \
             LEFT JOIN information_schema.CHARACTER_SETS cs ON cs.CHARACTER_SET_NAME = c.CHARACTER_SET_NAME \
             WHERE c.TABLE_SCHEMA IN ({ph}) ORDER BY 1, 2, c.ORDINAL_POSITION"
        ),
        schemas,
        1,
    )
    .await?
    .iter()
    .map(|r| {
        let facts = ColumnFacts {
            name: r.get(2),
            data_type: r.get::<String, _>(3).to_ascii_lowercase(),
            column_type: r.get(4),
            charset: r.get(5),
            max_chars: r.get(6),
            max_bytes: r.get(7),
            numeric_precision: r.get(8),
            numeric_scale: r.get(9),
            datetime_precision: r.get(10),
            nullable: r.get::<i64, _>(11) != 0,
            mbmaxlen: r.get(12),
            collation: r.get(13),
            definition: super::definition::from_catalog(
                mariadb,
                r.get(14),
                &r.get::<Option<String>, _>(15).unwrap_or_default(),
                r.get::<Option<String>, _>(16).unwrap_or_default(),
                r.get(17),
            ),
        };
        (r.get(0), r.get(1), facts)
    })
    .collect())
}

/// Every index part of the schemas' tables, ordered by table, index and position.
async fn read_index_parts(
    conn: &mut MySqlConnection,
    schemas: &[String],
    ph: &str,
) -> Result<Vec<RawIndexPart>> {
    Ok(fetch(
        conn,
        &format!(
            "SELECT CAST(TABLE_SCHEMA AS CHAR), CAST(TABLE_NAME AS CHAR), CAST(INDEX_NAME AS CHAR), \
             CAST(NON_UNIQUE AS SIGNED), CAST(COLUMN_NAME AS CHAR), CAST(SUB_PART AS UNSIGNED), CAST(INDEX_TYPE AS CHAR) \
             FROM information_schema.STATISTICS WHERE TABLE_SCHEMA IN ({ph}) ORDER BY 1, 2, 3, SEQ_IN_INDEX"
        ),
        schemas,
        1,
    )
    .await?
    .iter()
    .map(|r| RawIndexPart {
        schema: r.get(0),
        table: r.get(1),
        index: r.get(2),
        non_unique: r.get::<i64, _>(3) != 0,
        column: r.get(4),
        sub_part: r.get(5),
        index_type: r.get(6),
    })
    .collect())
}

/// The schemas' triggers, each with every name its body may mention as a table.
async fn read_triggers(
    conn: &mut MySqlConnection,
    schemas: &[String],
    ph: &str,
) -> Result<Vec<(String, String, Trigger)>> {
    Ok(fetch(
        conn,
        &format!(
            "SELECT CAST(EVENT_OBJECT_SCHEMA AS CHAR), CAST(EVENT_OBJECT_TABLE AS CHAR), CAST(TRIGGER_NAME AS CHAR), \
             CAST(ACTION_TIMING AS CHAR), CAST(EVENT_MANIPULATION AS CHAR), CAST(ACTION_STATEMENT AS CHAR), \
             CAST(CHARACTER_SET_CLIENT AS CHAR) \
             FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA IN ({ph}) ORDER BY 1, 2, 3"
        ),
        schemas,
        1,
    )
    .await?
    .iter()
    .map(|r| {
        let body: String = r.get(5);
        let client: String = r.get(6);
        let portable = Trigger::body_portable(&body, &client);
        let schema: String = r.get(0);
        // Every name that may be a table; `assemble` keeps those that are tables of the schema.
        let tables = super::mentions::candidates(&body, &schema);
        (schema, r.get(1), Trigger { name: r.get(2), timing: r.get(3), event: r.get(4), portable, tables })
    })
    .collect())
}

/// The column pairs of every foreign key from or into the schemas.
async fn read_foreign_keys(
    conn: &mut MySqlConnection,
    schemas: &[String],
    ph: &str,
) -> Result<Vec<RawForeignKey>> {
    Ok(fetch(
        conn,
        &format!(
            "SELECT CAST(CONSTRAINT_NAME AS CHAR), CAST(TABLE_SCHEMA AS CHAR), CAST(TABLE_NAME AS CHAR), \
             CAST(COLUMN_NAME AS CHAR), CAST(REFERENCED_TABLE_SCHEMA AS CHAR), CAST(REFERENCED_TABLE_NAME AS CHAR), \
             CAST(REFERENCED_COLUMN_NAME AS CHAR) \
             FROM information_schema.KEY_COLUMN_USAGE WHERE REFERENCED_TABLE_NAME IS NOT NULL \
             AND (TABLE_SCHEMA IN ({ph}) OR REFERENCED_TABLE_SCHEMA IN ({ph})) \
             ORDER BY 2, 3, 1, ORDINAL_POSITION"
        ),
        schemas,
        2,
    )
    .await?
    .iter()
    .map(|r| RawForeignKey {
        name: r.get(0),
        schema: r.get(1),
        table: r.get(2),
        column: r.get(3),
        ref_schema: r.get(4),
        ref_table: r.get(5),
        ref_column: r.get(6),
    })
    .collect())
}

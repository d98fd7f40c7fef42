//! The inventory as data: what `--format json` prints, with stable field names (schema_version 1).

use serde::{Deserialize, Serialize};

/// Version of the JSON layout; bumped only when a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything `inventory` found on one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Inventory {
    /// Layout version of this document.
    pub schema_version: u32,
    /// The server the inventory was taken from.
    pub server: ServerInfo,
    /// The schemas (databases) inventoried.
    pub schemas: Vec<String>,
    /// Base tables with at least one text or binary column, or with findings.
    pub tables: Vec<Table>,
}

/// Facts about the server that decide the limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    /// `VERSION()` as the server reports it.
    pub version: String,
    /// `MariaDB` or `MySQL`.
    pub flavor: String,
    /// `@@innodb_page_size`, which sets InnoDB's key limits.
    pub innodb_page_size: u32,
    /// `@@innodb_default_row_format`.
    pub default_row_format: String,
}

/// One base table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Table {
    /// Schema (database) name.
    pub schema: String,
    /// Table name.
    pub name: String,
    /// Storage engine.
    pub engine: String,
    /// Row format (`Dynamic`, `Compact`, `Redundant`, `Compressed`, ...).
    pub row_format: String,
    /// The server's row estimate (`information_schema.TABLES.TABLE_ROWS`).
    pub estimated_rows: u64,
    /// Table default collation.
    pub collation: Option<String>,
    /// Largest key prefix for one column, in bytes (767 on COMPACT/REDUNDANT, 3072 on DYNAMIC at 16 KiB pages).
    pub key_part_limit: u64,
    /// Largest whole index key, in bytes.
    pub key_limit: u64,
    /// Columns of the primary key, if there is one.
    pub primary_key: Option<Vec<String>>,
    /// The key batches would page over: the primary key, else the shortest all-NOT-NULL unique key.
    pub recode_key: Option<RecodeKey>,
    /// Text and binary columns (CHAR, VARCHAR, TEXT family, ENUM, SET, BINARY, VARBINARY, BLOB family).
    pub columns: Vec<Column>,
    /// All indexes, with their byte length today and under utf8mb4.
    pub indexes: Vec<Index>,
    /// Triggers defined on the table.
    pub triggers: Vec<Trigger>,
    /// Foreign keys from this table and to it.
    pub foreign_keys: Vec<ForeignKey>,
    /// Declared row size today and under utf8mb4, against the 65,535-byte limit.
    pub row_size: RowSize,
    /// Findings a DBA must act on, one sentence each.
    pub risks: Vec<String>,
}

/// The key a table is paged by.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecodeKey {
    /// Index name (`PRIMARY` for the primary key).
    pub index: String,
    /// Its columns, in order.
    pub columns: Vec<String>,
}

/// What kind of data a column declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnKind {
    /// CHAR, VARCHAR, TEXT family: has a character set.
    Text,
    /// ENUM: members stored as numbers, names in a character set.
    Enum,
    /// SET: like ENUM, a bit set.
    Set,
    /// BINARY, VARBINARY, BLOB family: bytes without a character set.
    Binary,
}

/// One text or binary column.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Column {
    /// Column name.
    pub name: String,
    /// 1-based position in the table.
    pub position: u32,
    /// Text, enum, set or binary.
    pub kind: ColumnKind,
    /// `DATA_TYPE`, e.g. `varchar`.
    pub data_type: String,
    /// `COLUMN_TYPE`, e.g. `varchar(255)`.
    pub column_type: String,
    /// Character set (`None` for binary columns).
    pub charset: Option<String>,
    /// Collation (`None` for binary columns).
    pub collation: Option<String>,
    /// Maximum length in characters (bytes for binary columns).
    pub max_chars: Option<u64>,
    /// Maximum length in bytes today.
    pub max_bytes: Option<u64>,
    /// Maximum length in bytes if the column were utf8mb4.
    pub max_bytes_utf8mb4: Option<u64>,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// Whether the column is part of the primary key.
    pub in_primary_key: bool,
    /// Names of the indexes the column is part of.
    pub indexes: Vec<String>,
    /// What the definition says beyond type and charset (DEFAULT, COMMENT, ...); reports
    /// from before this was recorded say nothing.
    #[serde(default, skip_serializing_if = "Definition::is_plain")]
    pub definition: Definition,
}

/// What a column's definition says beyond its type, charset and NULL, as the catalog shows
/// it (text in the server's reading: a latin1 column's cp1251 literal reads `'Ìîñêâà'`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// The DEFAULT clause as SQL: a quoted literal, `NULL`, or an expression; `None`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The `ON UPDATE` expression (`current_timestamp()`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_update: Option<String>,
    /// The column's COMMENT, unquoted; empty when it has none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
    /// Hidden from `SELECT *` (MariaDB `INVISIBLE`, MySQL 8.0.23+ `INVISIBLE`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invisible: bool,
    /// A generated column: its expression and whether it is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<Generated>,
}

impl Definition {
    /// Whether nothing beyond type, charset and NULL is defined (a plain column).
    pub fn is_plain(&self) -> bool {
        self == &Definition::default()
    }
}

/// A generated column's expression, as the catalog shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generated {
    /// The expression (without the surrounding parentheses).
    pub expression: String,
    /// `STORED` (MariaDB's `PERSISTENT`) rather than `VIRTUAL`.
    pub stored: bool,
}

/// One index and its key-length math.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Index {
    /// Index name (`PRIMARY` for the primary key).
    pub name: String,
    /// Whether it enforces uniqueness.
    pub unique: bool,
    /// `BTREE`, `FULLTEXT`, `HASH`, `SPATIAL`.
    pub index_type: String,
    /// Its parts, in order.
    pub parts: Vec<IndexPart>,
    /// Key length in bytes today.
    pub bytes: u64,
    /// Key length in bytes if its text columns were utf8mb4.
    pub bytes_utf8mb4: u64,
    /// Whether the key is over a limit today (possible only with server settings changed since).
    pub overflows_now: bool,
    /// Whether the key would be over the per-part or whole-key limit under utf8mb4.
    pub overflows_utf8mb4: bool,
}

/// One column of an index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexPart {
    /// Column name.
    pub column: String,
    /// Prefix length (characters for text, bytes for binary), if the index uses a prefix.
    pub prefix: Option<u64>,
    /// Bytes this part takes in the key today.
    pub bytes: u64,
    /// Bytes this part would take under utf8mb4.
    pub bytes_utf8mb4: u64,
}

/// One trigger.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trigger {
    /// Trigger name.
    pub name: String,
    /// `BEFORE` or `AFTER`.
    pub timing: String,
    /// `INSERT`, `UPDATE` or `DELETE`.
    pub event: String,
    /// Whether its body can be created again byte for byte (see [`Trigger::body_portable`]);
    /// reports from before this was recorded say nothing, read as yes.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub portable: bool,
    /// Other tables of the schema its body names (reads or writes), as far as its text shows
    /// ([`super::mentions`]); reports from before this was recorded list none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<String>,
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

impl Trigger {
    /// Whether a trigger body can be sent again exactly: ASCII reads the same in every client
    /// character set; other text only when the client set it was written under was UTF-8 (as
    /// myrecode's connection is).
    pub fn body_portable(body: &str, charset_client: &str) -> bool {
        body.is_ascii() || charset_client.to_ascii_lowercase().starts_with("utf8")
    }
}

/// One foreign key touching the table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForeignKey {
    /// Constraint name.
    pub name: String,
    /// `outgoing` (this table references another) or `incoming` (another references this one).
    pub direction: String,
    /// Schema of the referencing table.
    pub from_schema: String,
    /// The referencing table.
    pub from_table: String,
    /// Referencing columns.
    pub from_columns: Vec<String>,
    /// Schema of the referenced table.
    pub to_schema: String,
    /// The referenced table.
    pub to_table: String,
    /// Referenced columns.
    pub to_columns: Vec<String>,
}

/// Declared row size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RowSize {
    /// Bytes today.
    pub bytes: u64,
    /// Bytes if text columns were utf8mb4.
    pub bytes_utf8mb4: u64,
    /// The server's limit (65,535).
    pub limit: u64,
}

//! The scan report as data: what `scan --json` writes and `plan --report` reads (schema_version 1).

use crate::inventory::model::{Definition, ForeignKey, RecodeKey, ServerInfo, Trigger};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the JSON layout; bumped only when a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything one scan found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScanReport {
    /// Layout version of this document.
    pub schema_version: u32,
    /// myrecode version that wrote it.
    pub tool_version: String,
    /// Server scanned.
    pub server: ServerInfo,
    /// `full` or `sample`.
    pub mode: String,
    /// Rows per table read in sample mode.
    pub sample_rows: Option<u64>,
    /// One entry per table in scope.
    pub tables: Vec<TableScan>,
    /// Views, routines and events holding legacy text, as a copy's cut-over would recreate them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectScan>,
    /// Per schema, the application's clients seen on it while scanning (the switch's
    /// `clients:` section of the plan): empty where none could be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<crate::clients::model::ClientsSeen>,
}

/// A view, routine or event the cut-over recreates in UTF-8.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectScan {
    /// Its schema.
    pub schema: String,
    /// `VIEW`, `FUNCTION`, `PROCEDURE` or `EVENT`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// What recreating it changes (`'Ìîñêâà' → 'Москва'`, declarations in utf8mb4).
    pub changes: Vec<String>,
    /// Why it cannot be recreated as it is (a text no reading decides), with the fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// How a column (or table) would be converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// The column type already holds the result (utf8mb4/utf8mb3 with mojibake, binary with legacy text): rewrite values.
    InPlace,
    /// The column must change type (latin1/cp1251/... to utf8mb4): online copy into a shadow table.
    Copy,
    /// Nothing to do.
    None,
}

/// One table's scan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableScan {
    /// Schema name.
    pub schema: String,
    /// Table name.
    pub name: String,
    /// Row format (decides key limits).
    pub row_format: String,
    /// Storage engine (`InnoDB`, `MyISAM`, ...); absent from reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Key the scan paged over; `None` when the table has none (then it was not scanned).
    pub key: Option<RecodeKey>,
    /// Server's row estimate.
    pub estimated_rows: u64,
    /// Rows actually read.
    pub rows_scanned: u64,
    /// Strategy the table needs: `copy` if any column does, else `in-place` if any does, else `none`.
    pub strategy: Strategy,
    /// Text and binary columns scanned.
    pub columns: Vec<ColumnScan>,
    /// Table-level findings (no key, index overflow, row size), one sentence each with the fix.
    pub risks: Vec<String>,
    /// Triggers on the table (the copy strategy carries them across its cut-over).
    #[serde(default)]
    pub triggers: Vec<Trigger>,
    /// Foreign keys from the table and to it (the copy strategy refuses them).
    #[serde(default)]
    pub foreign_keys: Vec<ForeignKey>,
}

/// One column's scan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnScan {
    /// Column name.
    pub name: String,
    /// Declared type, e.g. `varchar(255)`.
    pub column_type: String,
    /// Declared charset (`None` for binary columns).
    pub charset: Option<String>,
    /// Declared collation.
    pub collation: Option<String>,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// DEFAULT, COMMENT, generation and the rest of the definition, as the catalog shows
    /// them; reports from before this was recorded say nothing.
    #[serde(default, skip_serializing_if = "Definition::is_plain")]
    pub definition: Definition,
    /// Declared maximum length in characters (bytes for binary).
    pub declared_max_chars: Option<u64>,
    /// Rows read.
    pub rows: u64,
    /// NULL values.
    pub nulls: u64,
    /// Empty strings.
    pub empty: u64,
    /// Count of values per detected label (`ascii`, `cp1251`, `utf-8>latin1`, `unknown`, ...).
    pub labels: BTreeMap<String, u64>,
    /// Counts of decided non-ASCII verdicts (not `unknown`) by confidence: `<0.5`, `0.5-0.8`,
    /// `0.8-0.95`, `0.95-0.99`, `>=0.99`. Values decided at confidence c are right at least c
    /// of the time on the held-out set (`src/detect/README.md`, calibration).
    pub confidence: BTreeMap<String, u64>,
    /// One example per label: key, raw bytes (hex, truncated) and decoded text (truncated).
    pub examples: BTreeMap<String, Example>,
    /// Keys of values that could not be decided (first 1000).
    pub undecided: Vec<Example>,
    /// How many values could not be decided in all.
    pub undecided_total: u64,
    /// PHP-serialized values (recoded string by string, their byte counts rewritten).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub serialized: u64,
    /// Values that look PHP-serialized but do not parse (left as they are, quarantined).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub serialized_unparsed: u64,
    /// Longest value in bytes as stored.
    pub max_bytes_now: u64,
    /// Longest value in bytes after recoding to UTF-8.
    pub max_bytes_after: u64,
    /// Longest value in characters after recoding.
    pub max_chars_after: u64,
    /// The dominant source label among values that need recoding, if any.
    pub source: Option<String>,
    /// What the column should become.
    pub target: Target,
    /// How it gets there.
    pub strategy: Strategy,
    /// Whether the recoded values fit the target column.
    pub fits: bool,
    /// Column-level findings, one sentence each with the fix.
    pub risks: Vec<String>,
    /// Why the column cannot get its target as the table stands (an index that would overflow), with the fix; the plan leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A value shown as evidence.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Example {
    /// Key column values (text when printable UTF-8, else `0x…` hex).
    pub key: Vec<String>,
    /// Stored bytes, hex, truncated to 64 bytes.
    pub raw_hex: String,
    /// Decoded text (truncated to 80 characters), if decided.
    pub decoded: Option<String>,
    /// Label given.
    pub label: String,
    /// Confidence of the label.
    pub confidence: f32,
    /// Second-best label, for undecided values.
    pub runner_up: Option<String>,
}

/// The column definition to convert to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Target {
    /// Full type, e.g. `varchar(255)`.
    pub column_type: String,
    /// Charset, e.g. `utf8mb4` (`None` keeps binary).
    pub charset: Option<String>,
    /// Collation, e.g. `utf8mb4_unicode_ci`.
    pub collation: Option<String>,
    /// Why this target (e.g. "pure ASCII hex tokens: kept latin1 so the index does not grow").
    pub why: String,
}

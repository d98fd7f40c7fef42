//! The job file as data. Every struct denies unknown fields, so a typo'd key is an error.
//!
//! ```yaml
//! version: 1
//! schema: shop
//! defaults: { batch_size: 1000, target_batch_time: 500ms, ... }
//! tables:
//!   - name: customers
//!     strategy: copy
//!     columns:
//!       - name: name
//!         source: auto
//!         target: VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL
//! cutover_groups:            # optional: copied tables swapped at several instants, in order
//!   - name: accounts
//!     tables: [customers]
//! ```

use super::duration::Dur;
use crate::detect::Label;
use crate::recode::value::Source;
use serde::{Deserialize, Serialize};

/// The only job layout version so far.
pub const JOB_VERSION: u32 = 1;

/// Keys allowed at the top level (kept in step with [`Job`] by a test).
pub const JOB_KEYS: &[&str] = &[
    "version",
    "schema",
    "defaults",
    "tables",
    "cutover_groups",
    "clients",
];
/// Keys allowed under `defaults:` (kept in step with [`Defaults`] by a test).
pub const DEFAULTS_KEYS: &[&str] = &[
    "batch_size",
    "target_batch_time",
    "pause_between_batches",
    "max_threads_running",
    "max_replica_lag",
    "max_replica_down",
    "replicas",
    "undecidable",
    "cutover",
    "keyless_max_rows",
];
/// Keys allowed in a table entry (kept in step with [`TableJob`] by a test).
pub const TABLE_KEYS: &[&str] = &[
    "name",
    "strategy",
    "key",
    "batch_size",
    "target_batch_time",
    "engine",
    "columns",
];
/// Keys allowed in a column entry (kept in step with [`ColumnJob`] by a test).
pub const COLUMN_KEYS: &[&str] = &["name", "source", "target", "undecidable", "redefine"];
/// Keys allowed in a cut-over group entry (kept in step with [`CutoverGroup`] by a test).
pub const GROUP_KEYS: &[&str] = &["name", "tables"];
/// Keys allowed under `clients:` (kept in step with [`Clients`] by a test).
pub const CLIENTS_KEYS: &[&str] = &["bridge", "legacy", "users"];

/// A whole job: which columns of which tables of one schema to recode, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Layout version; must be 1.
    pub version: u32,
    /// The schema (database) the tables live in.
    pub schema: String,
    /// Settings for every table unless a table overrides them.
    #[serde(default)]
    pub defaults: Defaults,
    /// Tables to recode.
    pub tables: Vec<TableJob>,
    /// Copy strategy: the copied tables split into groups, each swapped at its own instant,
    /// in this order; empty (the default): the whole job is one group, one instant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cutover_groups: Vec<CutoverGroup>,
    /// The application's clients through the switch: the bridge that keeps its
    /// latin1-handshake sessions working (docs/switching-clients.md); absent: no bridge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<Clients>,
}

/// The `clients:` section: the bridge the job installs before its copy and turns on at its
/// cut-over ([`crate::clients::bridge_sql`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clients {
    /// Whether the job installs the bridge.
    #[serde(default)]
    pub bridge: bool,
    /// The legacy charset the bridged sessions talk (cp1251, koi8r, koi8u, cp866).
    pub legacy: String,
    /// The application's user names whose sessions are bridged (empty: every user without
    /// SUPER whose session's default database is the job's schema).
    #[serde(default)]
    pub users: Vec<String>,
}

impl Job {
    /// The bridge's settings, when the job turns it on.
    pub fn bridge(&self) -> Option<&Clients> {
        self.clients.as_ref().filter(|c| c.bridge)
    }
}

/// Copied tables swapped together, at one instant of their own (see [`super::groups`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CutoverGroup {
    /// The group's name, as `myrecode cutover --group NAME` and `status` say it.
    pub name: String,
    /// The job's copied tables in the group (each in exactly one group).
    pub tables: Vec<String>,
}

/// Batch, throttle and cut-over settings (built-in values are those of `config/defaults.yaml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Defaults {
    /// Rows per batch to start with; tuned toward `target_batch_time` as the job runs.
    pub batch_size: u64,
    /// How long one batch should take.
    pub target_batch_time: Dur,
    /// Sleep between batches.
    pub pause_between_batches: Dur,
    /// Throttle while the server's `Threads_running` is above this.
    pub max_threads_running: u64,
    /// Throttle while any replica lags more than this (by the job's heartbeat, to the ms).
    pub max_replica_lag: Dur,
    /// Stop the job (resumably) once a replica has been stopped or unreachable this long.
    pub max_replica_down: Dur,
    /// Replicas to watch besides those found below the primary (the same address: these
    /// settings win): URLs without a password, or `host:port`.
    pub replicas: Vec<String>,
    /// What to do with values that cannot be decided.
    pub undecidable: Undecidable,
    /// Copy strategy: swap tables as soon as the copy is done, or wait for `myrecode cutover`.
    pub cutover: Cutover,
    /// A table without a usable key is rebuilt under the cut-over's lock up to this many
    /// rows (the pause grows with them); above it, it is refused until it has a key.
    pub keyless_max_rows: u64,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            batch_size: 1000,
            target_batch_time: Dur::from_millis(500),
            pause_between_batches: Dur::from_millis(100),
            max_threads_running: 25,
            max_replica_lag: Dur::from_millis(2000),
            max_replica_down: Dur::from_millis(60_000),
            replicas: Vec::new(),
            undecidable: Undecidable::Quarantine,
            cutover: Cutover::Manual,
            keyless_max_rows: 10_000,
        }
    }
}

/// What happens to a value the detector cannot decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecidable {
    /// Leave it untouched and list its key in the quarantine table and the report (a copy
    /// holds its cut-over until it is decided).
    Quarantine,
    /// `use <label>`: read it as this label, still only through its lossless round trip (a
    /// value that does not round-trip is listed as under `quarantine`).
    Use(Label),
}

impl Undecidable {
    /// The label a value no reading decided is read as (`None`: listed).
    pub fn fallback(self) -> Option<Label> {
        match self {
            Undecidable::Quarantine => None,
            Undecidable::Use(l) => Some(l),
        }
    }

    /// Parses `quarantine` or `use <label>` (a label a column's `source:` may name, not `auto`).
    pub fn parse(text: &str) -> Result<Undecidable, String> {
        let text = text.trim();
        if text == "quarantine" {
            return Ok(Undecidable::Quarantine);
        }
        let fix = "write `quarantine` or `use <label>` with a label a column's `source:` may name (cp1251, koi8-r, utf-8>latin1, ...)";
        match text.strip_prefix("use ").map(str::trim) {
            Some(l) if l != super::labels::AUTO && super::labels::is_known(l) => l
                .parse::<Label>()
                .map(Undecidable::Use)
                .map_err(|_| format!("undecidable: '{text}' names no label. Fix: {fix}")),
            _ => Err(format!("undecidable: '{text}' is not a choice. Fix: {fix}")),
        }
    }
}

impl std::fmt::Display for Undecidable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undecidable::Quarantine => f.write_str("quarantine"),
            Undecidable::Use(l) => write!(f, "use {l}"),
        }
    }
}

impl Serialize for Undecidable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Undecidable {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Undecidable, D::Error> {
        Undecidable::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// When the copy strategy swaps the new table in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cutover {
    /// As soon as the copy has caught up.
    Auto,
    /// Only when the user runs `myrecode cutover`.
    Manual,
}

/// How a table's columns get their new values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Rewrite values in the same column (its type can already hold UTF-8).
    InPlace,
    /// Online copy into a shadow table with the target column definitions, then cut over.
    Copy,
}

impl Strategy {
    /// The name as written in the job.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::InPlace => "in-place",
            Strategy::Copy => "copy",
        }
    }
}

/// One table to recode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableJob {
    /// Table name.
    pub name: String,
    /// `in-place` or `copy`.
    pub strategy: Strategy,
    /// Key to page over: the primary key or a unique key over NOT NULL columns; default: the
    /// table's recode key (its primary key, else its shortest such unique key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Vec<String>>,
    /// Overrides `defaults.batch_size` for this table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u64>,
    /// Overrides `defaults.target_batch_time` for this table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_batch_time: Option<Dur>,
    /// Copy strategy: the storage engine the new table gets (`InnoDB`), converted while it is
    /// copied; default: the table's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Columns to recode.
    pub columns: Vec<ColumnJob>,
}

/// One column to recode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnJob {
    /// Column name.
    pub name: String,
    /// `auto` (detect row by row) or a fixed label from [`super::labels::known`].
    pub source: ColumnSource,
    /// Full column definition to end with, e.g. `VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL`.
    pub target: String,
    /// Overrides `defaults.undecidable` for this column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undecidable: Option<Undecidable>,
    /// The target changes the column beyond charset, collation and widening on purpose
    /// (drops a DEFAULT, renames a member, ...); without it such a target is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redefine: bool,
}

/// A column's `source:`, parsed once when the job is read. The text stays as written: the
/// job's fingerprint and every message show it, and `plan --check` names a label that is not
/// one a job may name (with the fix) instead of the loader refusing the whole file.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSource {
    /// As the job file writes it.
    text: String,
    /// What it reads as: `auto`, or the label it parses to (`None`: no label).
    parsed: Option<Source>,
}

impl ColumnSource {
    /// Parses `text` (`auto` or a label).
    pub fn new(text: &str) -> ColumnSource {
        let parsed = if text == super::labels::AUTO {
            Some(Source::Auto)
        } else {
            text.parse::<Label>().ok().map(Source::Fixed)
        };
        ColumnSource {
            text: text.to_string(),
            parsed,
        }
    }

    /// The text as the job writes it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a job may name it ([`super::labels::known`]).
    pub fn is_known(&self) -> bool {
        super::labels::is_known(&self.text)
    }

    /// How the engine reads the column's values (`None`: the text names no label).
    pub fn source(&self) -> Option<&Source> {
        self.parsed.as_ref()
    }

    /// The fixed label, if the job names one (not `auto`).
    pub fn fixed(&self) -> Option<Label> {
        match self.parsed {
            Some(Source::Fixed(l)) => Some(l),
            _ => None,
        }
    }
}

impl From<&str> for ColumnSource {
    fn from(text: &str) -> ColumnSource {
        ColumnSource::new(text)
    }
}

impl PartialEq<&str> for ColumnSource {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl std::fmt::Display for ColumnSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for ColumnSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for ColumnSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ColumnSource, D::Error> {
        Ok(ColumnSource::new(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `expected one of ...` list serde gives for an unknown key under `prefix`.
    fn expected_keys(yaml: &str) -> Vec<String> {
        let err = serde_yaml::from_str::<Job>(yaml).unwrap_err().to_string();
        let list = err
            .split("expected one of ")
            .nth(1)
            .or_else(|| err.split("expected ").nth(1))
            .unwrap_or_else(|| panic!("{err}"));
        list.split(" at line")
            .next()
            .unwrap()
            .split(", ")
            .flat_map(|s| s.split(" or "))
            .map(|s| s.trim_matches(|c| c == '`' || c == ' ').to_string())
            .collect()
    }

    #[test]
    fn key_lists_match_the_structs() {
        let k = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            expected_keys("version: 1\nschema: s\ntables: []\nzzz: 1\n"),
            k(JOB_KEYS)
        );
        assert_eq!(
            expected_keys("version: 1\nschema: s\ndefaults: {zzz: 1}\ntables: []\n"),
            k(DEFAULTS_KEYS)
        );
        assert_eq!(
            expected_keys(
                "version: 1\nschema: s\ntables: [{name: t, strategy: copy, columns: [], zzz: 1}]\n"
            ),
            k(TABLE_KEYS)
        );
        assert_eq!(
            expected_keys(
                "version: 1\nschema: s\ntables: [{name: t, strategy: copy, columns: [{name: c, source: auto, target: TEXT, zzz: 1}]}]\n"
            ),
            k(COLUMN_KEYS)
        );
        assert_eq!(
            expected_keys(
                "version: 1\nschema: s\ntables: []\ncutover_groups: [{name: g, tables: [], zzz: 1}]\n"
            ),
            k(GROUP_KEYS)
        );
        assert_eq!(
            expected_keys("version: 1\nschema: s\ntables: []\nclients: {legacy: cp1251, zzz: 1}\n"),
            k(CLIENTS_KEYS)
        );
    }

    #[test]
    fn config_defaults_file_matches_the_built_in_defaults() {
        let text = include_str!("../../config/defaults.yaml");
        let d: Defaults = serde_yaml::from_str(text).expect("config/defaults.yaml parses");
        assert_eq!(d, Defaults::default());
    }

    #[test]
    fn undecidable_is_quarantine_or_use_a_label_a_source_may_name() {
        let parse = |v: &str| {
            serde_yaml::from_str::<Job>(&format!(
                "version: 1\nschema: s\ndefaults: {{undecidable: {v}}}\ntables: []\n"
            ))
            .map(|j| j.defaults.undecidable)
            .map_err(|e| e.to_string())
        };
        assert_eq!(parse("quarantine"), Ok(Undecidable::Quarantine));
        let cp1251: Label = "cp1251".parse().unwrap();
        assert_eq!(parse("use cp1251"), Ok(Undecidable::Use(cp1251)));
        assert_eq!(
            parse("'use utf-8>latin1'").unwrap().to_string(),
            "use utf-8>latin1"
        );
        for bad in ["use auto", "use cp1252", "guess", "use"] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.contains("Fix: write `quarantine` or `use <label>`"),
                "{bad}: {e}"
            );
        }
        // Written back as read.
        let d = Defaults {
            undecidable: Undecidable::Use(cp1251),
            ..Defaults::default()
        };
        assert!(serde_yaml::to_string(&d)
            .unwrap()
            .contains("undecidable: use cp1251"));
    }

    #[test]
    fn missing_defaults_take_built_in_values() {
        let j: Job = serde_yaml::from_str(
            "version: 1\nschema: s\ndefaults:\n  batch_size: 50\ntables: []\n",
        )
        .unwrap();
        assert_eq!(j.defaults.batch_size, 50);
        assert_eq!(j.defaults.cutover, Cutover::Manual);
        assert_eq!(j.defaults.target_batch_time, Dur::from_millis(500));
    }
}

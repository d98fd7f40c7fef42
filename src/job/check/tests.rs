//! Unit tests of `job::check`, kept apart so the rules read on their own.

use super::*;
use crate::inventory::keylen::key_limits;
use crate::inventory::model::*;
use crate::job::load::load_str;
use std::collections::BTreeMap;

fn col(name: &str, ty: &str, charset: Option<&str>, chars: u64, nullable: bool) -> Column {
    let data_type = ty.split('(').next().unwrap().to_string();
    let mb = charset
        .map(|c| target::charset_maxlen(c).unwrap())
        .unwrap_or(1);
    Column {
        name: name.into(),
        position: 1,
        kind: if charset.is_some() {
            ColumnKind::Text
        } else {
            ColumnKind::Binary
        },
        data_type,
        column_type: ty.into(),
        charset: charset.map(str::to_string),
        collation: charset.map(|c| format!("{c}_general_ci")),
        max_chars: Some(chars),
        max_bytes: Some(chars * mb),
        max_bytes_utf8mb4: Some(chars * 4),
        nullable,
        definition: Default::default(),
        in_primary_key: false,
        indexes: Vec::new(),
    }
}

fn index(name: &str, unique: bool, column: &str, bytes: u64) -> Index {
    Index {
        name: name.into(),
        unique,
        index_type: "BTREE".into(),
        parts: vec![IndexPart {
            column: column.into(),
            prefix: None,
            bytes,
            bytes_utf8mb4: bytes * 4,
        }],
        bytes,
        bytes_utf8mb4: bytes * 4,
        overflows_now: false,
        overflows_utf8mb4: false,
    }
}

/// Schema `s`: table `t` (Dynamic) with PK `id`, `a` VARCHAR(10) latin1 NOT NULL indexed,
/// `b` TEXT latin1; table `nums` with only an INT column.
fn live() -> Live {
    let (part, whole) = key_limits("InnoDB", "Dynamic", 16384);
    let t = Table {
        schema: "s".into(),
        name: "t".into(),
        engine: "InnoDB".into(),
        row_format: "Dynamic".into(),
        estimated_rows: 0,
        collation: Some("latin1_swedish_ci".into()),
        key_part_limit: part,
        key_limit: whole,
        primary_key: Some(vec!["id".into()]),
        recode_key: Some(RecodeKey {
            index: "PRIMARY".into(),
            columns: vec!["id".into()],
        }),
        columns: vec![
            col("a", "varchar(10)", Some("latin1"), 10, false),
            col("b", "text", Some("latin1"), 65535, true),
        ],
        indexes: vec![
            index("PRIMARY", true, "id", 4),
            index("idx_a", false, "a", 10),
        ],
        triggers: Vec::new(),
        foreign_keys: Vec::new(),
        row_size: RowSize {
            bytes: 0,
            bytes_utf8mb4: 0,
            limit: 65535,
        },
        risks: Vec::new(),
    };
    let lc = |n: &str, ty: &str, nullable: bool| LiveColumn {
        name: n.into(),
        data_type: ty.into(),
        nullable,
    };
    let mut tables = BTreeMap::new();
    tables.insert(
        "t".to_string(),
        vec![
            lc("id", "int", false),
            lc("a", "varchar", false),
            lc("b", "text", true),
        ],
    );
    tables.insert("nums".to_string(), vec![lc("n", "int", false)]);
    Live {
        schemas: vec!["s".into()],
        tables,
        inventory: Inventory {
            schema_version: 1,
            server: ServerInfo {
                version: String::new(),
                flavor: String::new(),
                innodb_page_size: 16384,
                default_row_format: "dynamic".into(),
            },
            schemas: vec!["s".into()],
            tables: vec![t],
        },
    }
}

fn findings(body: &str) -> Vec<String> {
    let text = format!("version: 1\nschema: s\n{body}");
    let loaded = load_str(&text).unwrap_or_else(|e| panic!("{e:#?}"));
    check_loaded(&loaded, &live(), None)
        .iter()
        .map(|f| f.render("j"))
        .collect()
}

const A_OK: &str = "      - name: a\n        source: cp1251\n        target: VARCHAR(10) CHARACTER SET utf8mb4 NOT NULL\n";

#[test]
fn a_valid_job_has_no_findings() {
    let f = findings(&format!(
        "tables:\n  - name: t\n    strategy: copy\n    columns:\n{A_OK}"
    ));
    assert!(f.is_empty(), "{f:#?}");
}

/// Settings wrong without a server are refused when the job is loaded, so every command that
/// reads a job (`plan --check`, the rehearsal, `run --execute`) refuses them alike.
#[test]
fn settings() {
    let rendered = |text: &str| -> String {
        load_str(text)
            .map(|_| Vec::new())
            .unwrap_or_else(|e| e.iter().map(|f| f.render("j")).collect())
            .join("\n")
    };
    let f = rendered(
        "version: 1\nschema: s\ndefaults:\n  batch_size: 0\n  replicas: ['mysql://u:secret@r1:3306']\ntables: []\n",
    );
    assert!(f.contains("j:4: defaults.batch_size: batch_size 0"), "{f}");
    assert!(
        f.contains("j:5: defaults.replicas[0]: this replica URL holds a password"),
        "{f}"
    );
    let f = findings("tables: []\n").join("\n");
    assert!(f.is_empty());
    assert_eq!(
        rendered("version: 2\nschema: s\ntables: []\n"),
        "j:1: version: job layout version 2 is not supported. Fix: write `version: 1` (the only layout so far)"
    );
}

#[test]
fn duplicates_and_tables_without_text() {
    let f = findings(&format!(
        "tables:\n  - name: t\n    strategy: copy\n    columns:\n{A_OK}{A_OK}  - name: t\n    strategy: copy\n    columns: []\n  - name: nums\n    strategy: copy\n    columns: []\n"
    ));
    assert_eq!(f.len(), 3, "{f:#?}");
    assert!(
        f[0].starts_with("j:10: tables[0].columns[1].name: column 'a' is listed twice"),
        "{f:?}"
    );
    assert!(
        f[1].starts_with("j:13: tables[1].name: table 't' is listed twice"),
        "{f:?}"
    );
    assert!(
        f[2].starts_with("j:16: tables[2].name: table 'nums' has no text or binary columns"),
        "{f:?}"
    );
}

#[test]
fn charset_that_cannot_hold_the_text_or_none_at_all() {
    let f = findings("tables:\n  - name: t\n    strategy: copy\n    columns:\n      - name: a\n        source: cp1251\n        target: VARCHAR(10) CHARACTER SET latin1 NOT NULL\n      - name: b\n        source: auto\n        target: LONGTEXT\n");
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(f[0].starts_with("j:9: tables[0].columns[0].target: character set latin1 cannot hold the recoded text (Cyrillic, Vietnamese). Fix: use VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;"), "{f:?}");
    assert!(
        f[1].starts_with("j:12: tables[0].columns[1].target: the target names no character set"),
        "{f:?}"
    );
}

#[test]
fn ascii_only_columns_may_stay_single_byte_when_the_scan_says_so() {
    let scan: ColumnScan = serde_json::from_value(serde_json::json!({
        "name": "a", "column_type": "varchar(10)", "charset": "latin1", "collation": null,
        "nullable": false, "declared_max_chars": 10, "rows": 5, "nulls": 0, "empty": 0,
        "labels": {"ascii": 5}, "confidence": {}, "examples": {}, "undecided": [],
        "undecided_total": 0, "max_bytes_now": 8, "max_bytes_after": 8, "max_chars_after": 8,
        "source": null, "strategy": "none", "fits": true, "risks": [],
        "target": {"column_type": "varchar(10)", "charset": "latin1", "collation": null, "why": ""}
    }))
    .unwrap();
    let text = "version: 1\nschema: s\ntables:\n  - name: t\n    strategy: copy\n    columns:\n      - name: a\n        source: auto\n        target: VARCHAR(10) CHARACTER SET latin1 NOT NULL\n";
    let l = load_str(text).unwrap();
    let t = &l.job.tables[0];
    let lv = live();
    let inv = &lv.inventory.tables[0];
    let mut out = Vec::new();
    let def = target::parse(&t.columns[0].target).unwrap();
    check_target(
        "p",
        "auto",
        &inv.columns[0],
        &def,
        Some(&scan),
        true,
        &mut out,
    );
    assert!(out.is_empty(), "{out:#?}");
}

#[test]
fn not_null_dropped_and_text_over_a_whole_column_index() {
    let f = findings("tables:\n  - name: t\n    strategy: copy\n    columns:\n      - name: a\n        source: cp1251\n        target: TEXT CHARACTER SET utf8mb4\n");
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(
        f[0].contains("column 'a' is NOT NULL today but the target drops NOT NULL"),
        "{f:?}"
    );
    assert!(
        f[1].contains(
            "index `idx_a` covers the whole column, which a TEXT or BLOB target does not allow"
        ),
        "{f:?}"
    );
}

#[test]
fn refusals_are_findings_at_their_field() {
    let mut lv = live();
    lv.inventory.tables[0].foreign_keys = vec![ForeignKey {
        name: "fk_a".into(),
        direction: "incoming".into(),
        from_schema: "other".into(),
        from_table: "child".into(),
        from_columns: vec!["a_ref".into()],
        to_schema: "s".into(),
        to_table: "t".into(),
        to_columns: vec!["a".into()],
    }];
    let text = format!(
        "version: 1\nschema: s\ntables:\n  - name: t\n    strategy: copy\n    key: [a]\n    columns:\n{A_OK}"
    );
    let l = load_str(&text).unwrap();
    let f: Vec<String> = check_loaded(&l, &lv, None)
        .iter()
        .map(|f| f.render("j"))
        .collect();
    assert_eq!(f, vec![
        "j:4: tables[0].name: table 't' is in foreign key `fk_a` (other.child -> s.t) across schemas: the one cut-over moves the constraints of one schema. Fix: drop the foreign key for the job and add it back after the cut-over, or recode with an offline ALTER TABLE in a maintenance window",
        "j:6: tables[0].key: key (a) in the job is not the key batches page over: PRIMARY (id). Fix: write `key: [id]`, or remove `key:`",
    ]);
    // In place, the table keeps its constraints: no refusal, and `b` (latin1) is one.
    let text = text
        .replace("strategy: copy", "strategy: in-place")
        .replace("    key: [a]\n", "");
    let l = load_str(&text).unwrap();
    let f: Vec<String> = check_loaded(&l, &lv, None)
        .iter()
        .map(|f| f.render("j"))
        .collect();
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].starts_with(
            "j:5: tables[0].strategy: in-place cannot work for column 'a' of table 't'"
        ),
        "{f:?}"
    );
}

#[test]
fn row_size_limit_with_the_targets() {
    let mut lv = live();
    lv.inventory.tables[0].row_size.bytes = 65_520;
    let text = format!(
        "version: 1\nschema: s\ntables:\n  - name: t\n    strategy: copy\n    columns:\n{A_OK}"
    );
    let l = load_str(&text).unwrap();
    let f: Vec<String> = check_loaded(&l, &lv, None)
        .iter()
        .map(|f| f.render("j"))
        .collect();
    assert_eq!(f, vec!["j:4: tables[0].name: with these targets the declared row size of 't' would be 65550 bytes, over the 65535-byte limit (the copy would fail to create the table). Fix: make the longest VARCHAR targets TEXT, or keep columns that hold only ASCII single-byte"]);
    lv.inventory.tables[0].row_size.bytes = 65_000;
    assert!(check_loaded(&l, &lv, None).is_empty());
}

#[test]
fn bad_target_definitions_offer_an_example() {
    let f = findings("tables:\n  - name: t\n    strategy: copy\n    columns:\n      - name: a\n        source: cp1251\n        target: VARCHAR CHARACTER SET utf8mb4\n");
    assert_eq!(f, vec!["j:9: tables[0].columns[0].target: target 'VARCHAR CHARACTER SET utf8mb4' cannot be used: VARCHAR needs a length, e.g. VARCHAR(255). Fix: write a full column definition, e.g. VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL"]);
}

//! `inventory` against a real server: every number on a schema the test creates.

use crate::common;
use common::{exec_script, myrecode, texts};
use myrecode::db::quote;
use myrecode::db::throwaway::{test_database, ThrowawayServer};
use myrecode::inventory::model::{ColumnKind, Inventory, Table};

const SCHEMA: &[&str] = &[
    "CREATE TABLE customers (
        id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        name_latin1 VARCHAR(100) CHARACTER SET latin1,
        name_cp1251 VARCHAR(100) CHARACTER SET cp1251 NOT NULL,
        note_koi8 TEXT CHARACTER SET koi8r,
        legacy_utf8 VARCHAR(50) CHARACTER SET utf8mb3,
        modern VARCHAR(50) CHARACTER SET utf8mb4,
        avatar BLOB,
        token BINARY(16),
        status ENUM('new','old') CHARACTER SET latin1 NOT NULL DEFAULT 'new',
        KEY idx_latin1 (name_latin1)
    ) ENGINE=InnoDB ROW_FORMAT=DYNAMIC",
    "CREATE TABLE order_lines (
        order_id INT NOT NULL, line_no SMALLINT NOT NULL,
        sku VARCHAR(32) CHARACTER SET latin1 NOT NULL,
        PRIMARY KEY (order_id, line_no),
        CONSTRAINT fk_customer FOREIGN KEY (order_id) REFERENCES customers (id)
    ) ENGINE=InnoDB",
    "CREATE TABLE no_key_log (
        msg VARCHAR(200) CHARACTER SET latin1, at DATETIME, UNIQUE KEY u_msg (msg)
    ) ENGINE=InnoDB",
    "CREATE TABLE compact_t (
        id INT NOT NULL PRIMARY KEY, title VARCHAR(255) CHARACTER SET latin1, KEY idx_title (title)
    ) ENGINE=InnoDB ROW_FORMAT=COMPACT",
    "CREATE TABLE wide_t (
        id INT NOT NULL PRIMARY KEY, path VARCHAR(1000) CHARACTER SET latin1, KEY idx_path (path)
    ) ENGINE=InnoDB ROW_FORMAT=DYNAMIC",
    "CREATE TABLE uniq_only (
        code CHAR(8) CHARACTER SET latin1 NOT NULL, label VARCHAR(20) CHARACTER SET latin1, UNIQUE KEY u_code (code)
    ) ENGINE=InnoDB",
    "CREATE TRIGGER trg_customers_bi BEFORE INSERT ON customers FOR EACH ROW SET NEW.modern = NEW.modern",
];

fn table<'a>(inv: &'a Inventory, name: &str) -> &'a Table {
    inv.tables
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("table {name} missing"))
}

fn json_inventory(url: &str, extra: &[&str]) -> (Inventory, u8) {
    let mut args = vec!["inventory", "--format", "json"];
    args.extend_from_slice(extra);
    let out = myrecode(Some(url), &args);
    let (stdout, stderr) = texts(&out);
    let code = out.status.code().unwrap_or(-1) as u8;
    assert!(code <= 1, "inventory failed ({code}): {stderr}");
    let inv: Inventory =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad JSON {e}: {stdout}"));
    (inv, code)
}

#[tokio::test]
async fn reports_columns_keys_and_key_length_math() {
    let db = test_database("inventory");
    exec_script(&db.config, SCHEMA).await;
    let url = db.config.url_with_secret();
    let (inv, code) = json_inventory(&url, &[]);
    assert_eq!(code, 1, "risks present, so exit 1");
    assert_eq!(inv.schema_version, 1);
    assert_eq!(inv.schemas, vec![db.name.clone()]);
    assert_eq!(inv.tables.len(), 6);

    the_customers_columns_indexes_triggers_and_foreign_key_are_reported(&inv);
    keys_key_limits_and_row_sizes_are_reported_for_the_other_tables(&inv);

    // The same server through the table renderer: the numbers a DBA reads.
    let out = myrecode(Some(&url), &["inventory", "--tables", "compact_t"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("1020") && stdout.contains("767/3072"),
        "{stdout}"
    );
    assert!(!stdout.contains("wide_t"), "--tables filters: {stdout}");
    let pw = db.config.password().unwrap();
    assert!(!stdout.contains(pw) && !stderr.contains(pw));
}

/// `customers`: each text and binary column's charset, collation, widths and kind, its
/// index's bytes before and after, its recode key, trigger and incoming foreign key.
fn the_customers_columns_indexes_triggers_and_foreign_key_are_reported(inv: &Inventory) {
    let c = table(inv, "customers");
    let col = |n: &str| {
        c.columns
            .iter()
            .find(|x| x.name == n)
            .unwrap_or_else(|| panic!("column {n}"))
    };
    assert_eq!(
        c.columns.len(),
        8,
        "id is not a text column; 8 text/binary columns"
    );
    assert_eq!(col("name_latin1").charset.as_deref(), Some("latin1"));
    assert_eq!(col("name_cp1251").charset.as_deref(), Some("cp1251"));
    assert_eq!(
        col("name_cp1251").collation.as_deref(),
        Some("cp1251_general_ci")
    );
    assert!(!col("name_cp1251").nullable);
    assert_eq!(col("note_koi8").charset.as_deref(), Some("koi8r"));
    assert_eq!(
        col("note_koi8").max_bytes_utf8mb4,
        Some(65535),
        "TEXT keeps its byte capacity"
    );
    assert_eq!(col("legacy_utf8").charset.as_deref(), Some("utf8mb3"));
    assert_eq!(col("legacy_utf8").max_bytes, Some(150));
    assert_eq!(col("legacy_utf8").max_bytes_utf8mb4, Some(200));
    assert_eq!(col("modern").max_bytes, Some(200));
    assert_eq!(col("avatar").kind, ColumnKind::Binary);
    assert_eq!(col("avatar").charset, None);
    assert_eq!(col("token").max_bytes, Some(16));
    assert_eq!(col("status").kind, ColumnKind::Enum);
    assert_eq!(col("name_latin1").indexes, vec!["idx_latin1".to_string()]);
    let idx = c.indexes.iter().find(|i| i.name == "idx_latin1").unwrap();
    assert_eq!(
        (idx.bytes, idx.bytes_utf8mb4, idx.overflows_utf8mb4),
        (100, 400, false)
    );
    assert_eq!(
        c.recode_key.as_ref().unwrap().columns,
        vec!["id".to_string()]
    );
    assert_eq!(c.triggers.len(), 1);
    assert_eq!(
        (c.triggers[0].timing.as_str(), c.triggers[0].event.as_str()),
        ("BEFORE", "INSERT")
    );
    assert_eq!(c.foreign_keys.len(), 1);
    assert_eq!(c.foreign_keys[0].direction, "incoming");
    assert!(c.risks.is_empty(), "{:?}", c.risks);
}

/// The other tables: a composite primary key and its outgoing foreign key, a table with no
/// usable key, COMPACT and DYNAMIC key limits (an index that overflows under utf8mb4), row
/// sizes, and a recode key from a unique index.
fn keys_key_limits_and_row_sizes_are_reported_for_the_other_tables(inv: &Inventory) {
    let o = table(inv, "order_lines");
    assert_eq!(
        o.primary_key.as_deref(),
        Some(&["order_id".to_string(), "line_no".to_string()][..])
    );
    let pk = o.indexes.iter().find(|i| i.name == "PRIMARY").unwrap();
    assert_eq!(pk.bytes, 6, "INT + SMALLINT");
    assert_eq!(o.foreign_keys[0].direction, "outgoing");
    assert_eq!(o.foreign_keys[0].to_table, "customers");
    assert_eq!(o.foreign_keys[0].to_columns, vec!["id".to_string()]);

    let n = table(inv, "no_key_log");
    assert!(
        n.recode_key.is_none(),
        "a unique key over a NULLable column is not usable"
    );
    assert!(
        n.risks.iter().any(|r| r.contains("no primary key")),
        "{:?}",
        n.risks
    );

    let compact = table(inv, "compact_t");
    assert_eq!(compact.row_format, "Compact");
    assert_eq!(compact.key_part_limit, 767);
    let i = compact
        .indexes
        .iter()
        .find(|i| i.name == "idx_title")
        .unwrap();
    assert_eq!((i.bytes, i.bytes_utf8mb4), (255, 1020));
    assert!(!i.overflows_now && i.overflows_utf8mb4);
    assert!(
        compact.risks.iter().any(|r| r.contains("idx_title")),
        "{:?}",
        compact.risks
    );

    let wide = table(inv, "wide_t");
    assert_eq!((wide.key_part_limit, wide.key_limit), (3072, 3072));
    let i = wide.indexes.iter().find(|i| i.name == "idx_path").unwrap();
    assert_eq!((i.bytes, i.bytes_utf8mb4), (1000, 4000));
    assert!(i.overflows_utf8mb4);
    assert_eq!(wide.row_size.bytes, 4 + 1002 + 1);
    assert_eq!(wide.row_size.bytes_utf8mb4, 4 + 4002 + 1);

    let u = table(inv, "uniq_only");
    assert_eq!(
        u.recode_key.as_ref().map(|k| k.index.as_str()),
        Some("u_code")
    );
    assert!(u.risks.is_empty());
}

#[tokio::test]
async fn quotes_names_with_backticks_spaces_and_quotes() {
    let server = ThrowawayServer::shared().unwrap_or_else(|e| panic!("{e}"));
    let name = format!("my db`x'y {}", std::process::id());
    let db = server
        .create_database_named(&name)
        .expect("create oddly named schema");
    let create = format!(
        "CREATE TABLE {} ({} INT NOT NULL PRIMARY KEY, {} VARCHAR(10) CHARACTER SET latin1)",
        quote::ident("we`ird tab'le"),
        quote::ident("i d"),
        quote::ident("na\"me`")
    );
    exec_script(&db.config, &[&create]).await;
    let (inv, code) = json_inventory(&server.admin().url_with_secret(), &["--schema", &name]);
    assert_eq!(code, 0);
    assert_eq!(inv.tables.len(), 1);
    let t = &inv.tables[0];
    assert_eq!(t.schema, name);
    assert_eq!(t.name, "we`ird tab'le");
    assert_eq!(t.columns[0].name, "na\"me`");
    assert_eq!(
        t.recode_key.as_ref().unwrap().columns,
        vec!["i d".to_string()]
    );
}

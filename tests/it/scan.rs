//! `scan` on a seeded legacy schema covering every case of DESIGN.md: counts per label match the seeded truth.

use crate::common;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::throwaway::test_database;
use myrecode::scan::model::{ScanReport, Strategy, TableScan};

const TABLES: &[&str] = &[
    "forum_posts",
    "mixed_comments",
    "iso_notes",
    "declared_cp1251",
    "vn_products",
    "shop_items",
    "tokens",
    "blobs_in_text",
    "overflow_t",
    "blob_legacy",
];

async fn seed(cfg: &myrecode::db::connect::ConnectionConfig) {
    exec_script(
        cfg,
        &[
            "CREATE TABLE forum_posts (id INT NOT NULL PRIMARY KEY, body TEXT CHARACTER SET latin1) ENGINE=InnoDB",
            "CREATE TABLE mixed_comments (topic_id INT NOT NULL, id INT NOT NULL, body TEXT CHARACTER SET latin1, PRIMARY KEY (topic_id, id)) ENGINE=InnoDB",
            "CREATE TABLE iso_notes (id INT NOT NULL PRIMARY KEY, note VARCHAR(255) CHARACTER SET latin1) ENGINE=InnoDB",
            "CREATE TABLE declared_cp1251 (id INT NOT NULL PRIMARY KEY, name VARCHAR(100) CHARACTER SET cp1251) ENGINE=InnoDB",
            "CREATE TABLE vn_products (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET latin1) ENGINE=InnoDB",
            "CREATE TABLE shop_items (id INT NOT NULL PRIMARY KEY, title VARCHAR(400) CHARACTER SET utf8mb4) ENGINE=InnoDB",
            "CREATE TABLE tokens (id INT NOT NULL PRIMARY KEY, token CHAR(32) CHARACTER SET latin1 NOT NULL, UNIQUE KEY u_token (token)) ENGINE=InnoDB",
            "CREATE TABLE blobs_in_text (id INT NOT NULL PRIMARY KEY, data MEDIUMTEXT CHARACTER SET latin1) ENGINE=InnoDB",
            "CREATE TABLE overflow_t (id INT NOT NULL PRIMARY KEY, title VARCHAR(255) CHARACTER SET latin1, KEY idx_title (title)) ENGINE=InnoDB ROW_FORMAT=COMPACT",
            "CREATE TABLE blob_legacy (id INT NOT NULL PRIMARY KEY, payload BLOB) ENGINE=InnoDB",
        ],
    )
    .await;
    let rows = |enc, texts: &[&str], base: i64| -> Vec<(i64, Vec<u8>)> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| (base + i as i64, bytes(enc, t)))
            .collect()
    };
    insert_raw(cfg, "forum_posts", "body", &rows(Windows1251, RUSSIAN, 1)).await;

    // Three clients, one column, row by row: Windows (cp1251), the mail gateway (KOI8-R), DOS imports (CP866).
    let mut c = cfg.connect_one().await.unwrap();
    for (i, t) in RUSSIAN.iter().enumerate() {
        let enc = [Windows1251, Koi8R, Ibm866][i % 3];
        sqlx::query("INSERT INTO mixed_comments (topic_id, id, body) VALUES (?, ?, ?)")
            .bind((i % 4) as i64)
            .bind(i as i64)
            .bind(bytes(enc, t))
            .execute(&mut c)
            .await
            .unwrap();
    }
    insert_raw(
        cfg,
        "iso_notes",
        "note",
        &rows(Iso8859_5, &RUSSIAN[..10], 1),
    )
    .await;
    insert_raw(
        cfg,
        "declared_cp1251",
        "name",
        &rows(Windows1251, &RUSSIAN[..10], 1),
    )
    .await;
    insert_raw(cfg, "vn_products", "title", &rows(Tcvn3, VIETNAMESE, 1)).await;

    let mut shop: Vec<(i64, String)> = Vec::new();
    for (i, t) in RUSSIAN[..8].iter().enumerate() {
        shop.push((100 + i as i64, mojibake(Windows1251, Latin1, t)));
        shop.push((200 + i as i64, double_utf8(Latin1, t)));
        shop.push((400 + i as i64, t.to_string()));
    }
    // UTF-8 read as cp1251: capital И (D0 98) has no cp1251 character, so texts without it.
    for (i, t) in RUSSIAN[3..11].iter().enumerate() {
        shop.push((300 + i as i64, double_utf8(Windows1251, t)));
    }
    for i in 0..5 {
        shop.push((500 + i, format!("SKU-{i:04} Blue T-shirt XL")));
    }
    insert_text(cfg, "shop_items", "title", &shop).await;

    let tokens: Vec<(i64, Vec<u8>)> = (0..20)
        .map(|i| {
            (
                i,
                format!("{:032x}", 0xfeed_beef_u64.wrapping_mul(i as u64 + 7)).into_bytes(),
            )
        })
        .collect();
    insert_raw(cfg, "tokens", "token", &tokens).await;

    let mut blobs: Vec<(i64, Vec<u8>)> = (0..6).map(|i| (i, png_blob(i as u8))).collect();
    blobs.extend((0..3).map(|i| (10 + i, bytes(Windows1251, RUSSIAN[i as usize]))));
    insert_raw(cfg, "blobs_in_text", "data", &blobs).await;

    insert_raw(
        cfg,
        "overflow_t",
        "title",
        &rows(Windows1251, &RUSSIAN[10..], 1),
    )
    .await;
    insert_raw(
        cfg,
        "blob_legacy",
        "payload",
        &rows(Windows1251, &RUSSIAN[..6], 1),
    )
    .await;
}

fn t<'a>(r: &'a ScanReport, name: &str) -> &'a TableScan {
    r.tables
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("table {name}"))
}

fn labels(r: &ScanReport, table: &str) -> Vec<(String, u64)> {
    let c = &t(r, table).columns[0];
    c.labels.iter().map(|(l, n)| (l.clone(), *n)).collect()
}

fn l(pairs: &[(&str, u64)]) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = pairs.iter().map(|(a, b)| (a.to_string(), *b)).collect();
    v.sort();
    v
}

#[tokio::test]
async fn counts_per_label_match_the_seeded_truth_and_nothing_changes() {
    let db = test_database("scan");
    seed(&db.config).await;
    let before = checksums(&db.config, TABLES).await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("scan.json");
    let md = dir.path().join("scan.md");
    let url = db.config.url_with_secret();
    let out = myrecode(
        Some(&url),
        &[
            "scan",
            "--full",
            "--batch-size",
            "7",
            "--json",
            json.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "legacy data needs action; stderr: {stderr}"
    );
    assert_eq!(
        checksums(&db.config, TABLES).await,
        before,
        "scan is read-only"
    );
    let r: ScanReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.schema_version, 1);
    assert_eq!(r.mode, "full");

    every_columns_label_counts_equal_the_seeded_truth(&r);
    what_converting_implies_is_reported_per_column(&r);
    assert!(
        stdout.contains("forum_posts") && stdout.contains("cp1251"),
        "{stdout}"
    );
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.contains("| `body` |"), "{markdown}");
}

/// Each table's label counts equal what was seeded, the composite key paged without loss.
fn every_columns_label_counts_equal_the_seeded_truth(r: &ScanReport) {
    let expected: Vec<(&str, Vec<(String, u64)>)> = vec![
        ("forum_posts", l(&[("cp1251", 20)])),
        (
            "mixed_comments",
            l(&[("cp1251", 7), ("koi8-r", 7), ("cp866", 6)]),
        ),
        ("iso_notes", l(&[("iso-8859-5", 10)])),
        ("declared_cp1251", l(&[("cp1251", 10)])),
        ("vn_products", l(&[("tcvn3", 10)])),
        (
            "shop_items",
            l(&[
                ("cp1251>latin1", 8),
                ("utf-8>latin1", 8),
                ("utf-8>cp1251", 8),
                ("utf-8", 8),
                ("ascii", 5),
            ]),
        ),
        ("tokens", l(&[("ascii", 20)])),
        ("blobs_in_text", l(&[("binary", 6), ("cp1251", 3)])),
        ("blob_legacy", l(&[("cp1251", 6)])),
    ];
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(table, want)| &labels(r, table) != want)
        .map(|(table, want)| {
            let c = &t(r, table).columns[0];
            format!(
                "{table}: got {:?}, want {want:?}; undecided {:?}",
                labels(r, table),
                c.undecided
            )
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "label counts differ from the seeded truth:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        t(r, "mixed_comments").rows_scanned,
        20,
        "composite key paged without loss"
    );
}

/// What converting implies: each column's strategy and target, the binary data left
/// alone, the widths after, the index risks and a decoded example.
fn what_converting_implies_is_reported_per_column(r: &ScanReport) {
    let col = |table: &str| &t(r, table).columns[0];
    assert_eq!(col("forum_posts").strategy, Strategy::Copy);
    assert_eq!(
        col("forum_posts").target.charset.as_deref(),
        Some("utf8mb4")
    );
    assert_eq!(col("shop_items").strategy, Strategy::InPlace);
    assert_eq!(col("blob_legacy").strategy, Strategy::InPlace);
    assert_eq!(
        col("tokens").strategy,
        Strategy::None,
        "hex tokens stay latin1"
    );
    assert_eq!(col("tokens").target.charset.as_deref(), Some("latin1"));
    assert_eq!(
        col("blobs_in_text").strategy,
        Strategy::None,
        "binary in a TEXT column is never recoded"
    );
    assert!(col("blobs_in_text")
        .risks
        .iter()
        .any(|r| r.contains("binary data")));
    let longest = RUSSIAN
        .iter()
        .map(|s| s.chars().count() as u64)
        .max()
        .unwrap();
    assert_eq!(col("forum_posts").max_chars_after, longest);
    let longest_bytes = RUSSIAN.iter().map(|s| s.len() as u64).max().unwrap();
    assert_eq!(col("forum_posts").max_bytes_after, longest_bytes);
    assert!(
        t(r, "overflow_t")
            .risks
            .iter()
            .any(|r| r.contains("idx_title")),
        "{:?}",
        t(r, "overflow_t").risks
    );
    assert!(
        t(r, "tokens").risks.is_empty(),
        "ASCII index does not grow: {:?}",
        t(r, "tokens").risks
    );
    let ex = &col("forum_posts").examples["cp1251"];
    assert!(RUSSIAN.iter().any(|s| ex.decoded.as_deref() == Some(*s)
        || s.starts_with(ex.decoded.as_deref().unwrap().trim_end_matches('…'))));
}

#[tokio::test]
async fn sample_mode_reads_at_most_n_rows_spread_over_the_table() {
    let db = test_database("scan_sample");
    exec_script(&db.config, &["CREATE TABLE big (id INT NOT NULL PRIMARY KEY, body VARCHAR(200) CHARACTER SET latin1)"]).await;
    let rows: Vec<(i64, Vec<u8>)> = (0..600)
        .map(|i| {
            (
                i,
                bytes(
                    myrecode::codec::Encoding::Windows1251,
                    RUSSIAN[i as usize % RUSSIAN.len()],
                ),
            )
        })
        .collect();
    insert_raw(&db.config, "big", "body", &rows).await;
    exec_script(&db.config, &["ANALYZE TABLE big"]).await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let out = myrecode(
        Some(&db.config.url_with_secret()),
        &[
            "scan",
            "--sample",
            "100",
            "--batch-size",
            "20",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", texts(&out).1);
    let r: ScanReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let table = t(&r, "big");
    assert_eq!(table.rows_scanned, 100);
    assert_eq!(
        table.columns[0].labels.get("cp1251"),
        Some(&100),
        "{:?}",
        table.columns[0]
    );
    let last_key: i64 = table.columns[0].examples["cp1251"].key[0].parse().unwrap();
    assert_eq!(last_key, 0, "first example is the first row");
}

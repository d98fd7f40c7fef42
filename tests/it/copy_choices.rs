//! The copy names the rows the server writes by another conversion than its column's default
//! in its own statement (integer keys), and stages them otherwise (other keys): either way
//! every value ends as decided, the check pass finds nothing to send back, and `verify` agrees.
//! Batches after the first name a few hundred rows each: on `big` (one integer key part, the
//! largest `BIGINT UNSIGNED`s) by a map of codes counted from the batch's lower bound, on
//! `pair` (two key parts) by lists.

use crate::common;
use common::legacy::*;
use common::{exec_script, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::quote;
use myrecode::db::throwaway::test_database;
use sqlx::Row;

/// How row `i` of every table is stored, and what it must read as after the copy (`None`:
/// undecidable: the cut-over waits until the DBA decides it, here kept as its declared
/// charset's reading).
fn value(i: usize) -> (Vec<u8>, Option<String>) {
    let text = format!("{} #{i}", RUSSIAN[i % RUSSIAN.len()]);
    match i % 20 {
        // Another legacy table than the column's, which the server converts as we do.
        3 | 9 | 15 => (bytes(Koi8R, &text), Some(text)),
        // UTF-8 already (an application that began writing UTF-8 through a latin1 connection).
        5 | 12 => (text.clone().into_bytes(), Some(text)),
        // Western European text: not ours to recode; quarantined and kept as latin1 reads it.
        17 if i % 40 == 17 => (
            encoding_rs::WINDOWS_1252
                .encode("Ça coûte très cher")
                .0
                .into_owned(),
            None,
        ),
        _ => (bytes(Windows1251, &text), Some(text)),
    }
}

/// Three tables of the same values: a `BIGINT UNSIGNED` key near 2⁶⁴ (neighbours differ only
/// past a double's precision), a composite integer key, a text key.
async fn seed(cfg: &ConnectionConfig, rows: usize) {
    exec_script(
        cfg,
        &[
            "CREATE TABLE big (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, body TEXT CHARACTER SET latin1) ENGINE=InnoDB",
            "CREATE TABLE pair (a INT NOT NULL, b SMALLINT NOT NULL, body TEXT CHARACTER SET latin1, PRIMARY KEY (a, b)) ENGINE=InnoDB",
            "CREATE TABLE coded (code VARCHAR(20) CHARACTER SET latin1 NOT NULL PRIMARY KEY, body TEXT CHARACTER SET latin1) ENGINE=InnoDB",
        ],
    )
    .await;
    let mut c = cfg.connect_one().await.unwrap();
    for i in 0..rows {
        let (stored, _) = value(i);
        sqlx::query("INSERT INTO big (id, body) VALUES (18446744073709551615 - ?, ?)")
            .bind(i as u64)
            .bind(&stored)
            .execute(&mut c)
            .await
            .unwrap();
        sqlx::query("INSERT INTO pair (a, b, body) VALUES (?, ?, ?)")
            .bind(-(i as i64 / 7))
            .bind((i % 7) as i16)
            .bind(&stored)
            .execute(&mut c)
            .await
            .unwrap();
        sqlx::query("INSERT INTO coded (code, body) VALUES (?, ?)")
            .bind(format!("K{i:05}"))
            .bind(&stored)
            .execute(&mut c)
            .await
            .unwrap();
    }
}

fn job(dir: &std::path::Path, schema: &str) -> std::path::PathBuf {
    let path = dir.join("choices.yaml");
    let table = |t: &str| {
        format!(
            "  - name: {t}\n    strategy: copy\n    columns:\n      - name: body\n        source: auto\n        \
             target: TEXT CHARACTER SET utf8mb4\n"
        )
    };
    let text = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 400\n  target_batch_time: 100ms\n  \
         cutover: auto\ntables:\n{}{}{}",
        table("big"),
        table("pair"),
        table("coded")
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Each row's body after the copy, in the order the rows were seeded.
async fn bodies(c: &mut sqlx::MySqlConnection, table: &str, order: &str) -> Vec<String> {
    let sql = format!("SELECT body FROM {} ORDER BY {order}", quote::ident(table));
    sqlx::query(&sql)
        .fetch_all(c)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_of_other_tables_utf8_and_quarantined_come_out_as_decided_whatever_the_key() {
    let db = test_database("copy_choices");
    let n = 1600;
    seed(&db.config, n).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name);
    let out = common::myrecode(
        Some(&db.config.url_with_secret()),
        &["run", job.to_str().unwrap(), "--execute"],
    );
    let (stdout, stderr) = texts(&out);
    // Exit 1: undecidable values were quarantined and listed, and the cut-over waits for them.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let quarantined = (0..n).filter(|&i| value(i).1.is_none()).count();
    assert!(
        stdout.contains("held: ")
            && stdout.contains(&format!(
                "big holds {quarantined} value(s) no reading decided"
            )),
        "{stdout}\n{stderr}"
    );
    for t in ["big", "pair", "coded"] {
        // Nobody wrote meanwhile: a row the server wrote by the wrong conversion would be a
        // difference the check sends back to the replay.
        assert!(
            stdout.contains(&format!(
                "check: {t}: every row compared with its copy; 0 differed"
            )),
            "{t}: {stdout}"
        );
        assert!(
            stdout.contains(&format!("{t}: {n} rows read")),
            "{t}: {stdout}"
        );
    }
    assert!(
        stdout.contains(&format!("{quarantined} quarantined")),
        "{stdout}"
    );
    let mut c = db.config.connect_one().await.unwrap();
    // Nothing swapped: each live table is the original, its bytes as they were.
    for t in ["big", "pair", "coded"] {
        let sql = format!("SHOW CREATE TABLE {}", quote::ident(t));
        let create: String = sqlx::query(&sql).fetch_one(&mut c).await.unwrap().get(1);
        assert!(create.contains("latin1"), "{t}: {create}");
    }
    // The DBA decides: Western European text, kept as latin1 reads it (the copy's reading).
    let decisions = dir.path().join("decisions.yaml");
    std::fs::write(
        &decisions,
        "columns:\n  - { table: big, column: body, use: keep }\n  - { table: pair, column: body, use: keep }\n  \
         - { table: coded, column: body, use: keep }\n",
    )
    .unwrap();
    let out = common::myrecode(
        Some(&db.config.url_with_secret()),
        &[
            "run",
            job.to_str().unwrap(),
            "--execute",
            "--decisions",
            decisions.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for t in ["big", "pair", "coded"] {
        assert!(
            stdout.contains(&format!(
                "{t}: decisions applied: 0 value(s) rewritten, {quarantined} kept as stored, 0 still undecided"
            )),
            "{t}: {stdout}"
        );
    }
    assert!(stdout.contains("cut-over: "), "{stdout}\n{stderr}");
    for (table, order) in [("big", "id DESC"), ("pair", "a DESC, b"), ("coded", "code")] {
        let got = bodies(&mut c, table, order).await;
        assert_eq!(got.len(), n, "{table}");
        for (i, body) in got.iter().enumerate() {
            let (stored, want) = value(i);
            // Undecidable, decided `keep`: the declared charset's reading.
            let want = want.unwrap_or_else(|| encoding_rs::WINDOWS_1252.decode(&stored).0.into());
            assert_eq!(body, &want, "{table} row {i}");
        }
    }
    let out = common::myrecode(
        Some(&db.config.url_with_secret()),
        &["verify", job.to_str().unwrap()],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for t in ["big", "pair", "coded"] {
        assert!(
            stdout.contains(&format!("{t}: {n} row(s) equal their original")),
            "{t}: {stdout}"
        );
    }
}

//! `run`, `verify`, `rollback` in place against a real server: results, backups, resumability, bad input.

use crate::common;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::test_database;
use sqlx::Row;
use std::path::{Path, PathBuf};

fn write_job(dir: &Path, schema: &str, body: &str) -> PathBuf {
    let path = dir.join("job.yaml");
    std::fs::write(&path, format!("version: 1\nschema: {schema}\ndefaults:\n  batch_size: 50\n  pause_between_batches: 0ms\ntables:\n{body}")).unwrap();
    path
}

const SHOP_JOB: &str = "  - name: items
    strategy: in-place
    columns:
      - name: title
        source: auto
        target: VARCHAR(400) CHARACTER SET utf8mb4
      - name: note
        source: cp1251
        target: BLOB
";

/// Seeds `items` and returns (id, stored title, expected title after the run).
async fn seed_items(cfg: &ConnectionConfig) -> Vec<(i64, String, String)> {
    exec_script(
        cfg,
        &["CREATE TABLE items (id INT NOT NULL PRIMARY KEY, title VARCHAR(400) CHARACTER SET utf8mb4, note BLOB) ENGINE=InnoDB"],
    )
    .await;
    let mut rows = Vec::new();
    for (i, t) in RUSSIAN.iter().enumerate() {
        let i = i as i64;
        rows.push((i * 4, mojibake(Windows1251, Latin1, t), t.to_string()));
        rows.push((i * 4 + 1, double_utf8(Latin1, t), t.to_string()));
        rows.push((i * 4 + 2, t.to_string(), t.to_string()));
        rows.push((i * 4 + 3, format!("SKU-{i:04}"), format!("SKU-{i:04}")));
    }
    let mut c = cfg.connect_one().await.unwrap();
    for (id, stored, _) in &rows {
        let note = if id % 4 == 0 {
            Some(bytes(Windows1251, RUSSIAN[(*id / 4) as usize]))
        } else {
            None
        };
        sqlx::query("INSERT INTO items (id, title, note) VALUES (?, ?, ?)")
            .bind(id)
            .bind(stored)
            .bind(note)
            .execute(&mut c)
            .await
            .unwrap();
    }
    rows
}

async fn titles(cfg: &ConnectionConfig) -> Vec<(i64, String, Option<Vec<u8>>)> {
    let mut c = cfg.connect_one().await.unwrap();
    sqlx::query("SELECT id, title, note FROM items ORDER BY id")
        .fetch_all(&mut c)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

async fn count(cfg: &ConnectionConfig, sql: &str) -> i64 {
    let mut c = cfg.connect_one().await.unwrap();
    sqlx::query(sql)
        .fetch_one(&mut c)
        .await
        .unwrap()
        .get::<i64, _>(0)
}

#[tokio::test]
async fn run_verify_rollback_in_place() {
    let db = test_database("run_basic");
    let rows = seed_items(&db.config).await;
    let before = checksums(&db.config, &["items"]).await;
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(dir.path(), &db.name, SHOP_JOB);
    let url = db.config.url_with_secret();
    let jobp = job.to_str().unwrap();

    // Without --execute: a rehearsal that writes nothing.
    let out = myrecode(Some(&url), &["run", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Rehearsal"), "{stdout}");
    assert_eq!(checksums(&db.config, &["items"]).await, before);

    let out = myrecode(Some(&url), &["run", jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let after = titles(&db.config).await;
    for ((id, _, want), (id2, got, note)) in rows.iter().zip(&after) {
        assert_eq!(id, id2);
        assert_eq!(got, want, "row {id}");
        if id % 4 == 0 {
            assert_eq!(
                note.as_deref(),
                Some(RUSSIAN[(*id / 4) as usize].as_bytes()),
                "blob {id} now UTF-8"
            );
        }
    }
    let changed = rows.iter().filter(|(_, s, w)| s != w).count() as i64 + RUSSIAN.len() as i64;
    assert_eq!(
        count(&db.config, "SELECT COUNT(*) FROM _myrecode_backup").await,
        changed,
        "one backup per changed value"
    );

    // A finished job says so and does nothing.
    let out = myrecode(Some(&url), &["run", jobp, "--execute"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        count(&db.config, "SELECT COUNT(*) FROM _myrecode_backup").await,
        changed
    );

    let out = myrecode(Some(&url), &["verify", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("verified: {changed} value(s)")),
        "{stdout}"
    );

    let out = myrecode(Some(&url), &["rollback", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(
        checksums(&db.config, &["items"]).await,
        before,
        "rollback restores the original bytes exactly"
    );

    // Again, then the application changes a row: verify lists it apart; rollback leaves it alone.
    let out = myrecode(Some(&url), &["run", jobp, "--execute"]);
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    exec_script(
        &db.config,
        &["UPDATE items SET title = 'changed by the app' WHERE id = 0"],
    )
    .await;
    let out = myrecode(Some(&url), &["verify", jobp]);
    let (stdout, _) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout
            .contains("changed by the application since the run (left alone): items.title key [0]"),
        "{stdout}"
    );
    let out = myrecode(Some(&url), &["rollback", jobp]);
    let (stdout, _) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let now = titles(&db.config).await;
    assert_eq!(
        now[0].1, "changed by the app",
        "the application's write is never clobbered"
    );
    assert_eq!(now[1].1, rows[1].1, "other rows restored");
}

fn assert_fails_with(out: &std::process::Output, needles: &[&str], secret: &str) {
    let (stdout, stderr) = texts(out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "expected {n:?} in: {stderr}");
    }
    assert!(stderr.contains("Fix:"), "{stderr}");
    assert!(
        !stderr.contains(secret) && !stdout.contains(secret),
        "password leaked"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn refuses_a_table_without_a_usable_key() {
    let db = test_database("run_nokey");
    exec_script(
        &db.config,
        &["CREATE TABLE log (msg VARCHAR(100) CHARACTER SET utf8mb4, UNIQUE KEY u (msg))"],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(
        dir.path(),
        &db.name,
        "  - name: log\n    strategy: in-place\n    columns:\n      - name: msg\n        source: auto\n        target: VARCHAR(100) CHARACTER SET utf8mb4\n",
    );
    let out = myrecode(
        Some(&db.config.url_with_secret()),
        &["run", job.to_str().unwrap(), "--execute"],
    );
    assert_fails_with(&out, &["no primary key"], db.config.password().unwrap());
}

#[tokio::test]
async fn refuses_a_job_for_a_table_that_no_longer_exists() {
    let db = test_database("run_gone");
    seed_items(&db.config).await;
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(dir.path(), &db.name, SHOP_JOB);
    exec_script(&db.config, &["DROP TABLE items"]).await;
    let out = myrecode(
        Some(&db.config.url_with_secret()),
        &["run", job.to_str().unwrap(), "--execute"],
    );
    assert_fails_with(
        &out,
        &["'items'", "no longer exists"],
        db.config.password().unwrap(),
    );
}

#[tokio::test]
async fn refuses_a_job_edited_while_checkpointed() {
    let db = test_database("run_edited");
    seed_items(&db.config).await;
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(dir.path(), &db.name, SHOP_JOB);
    let url = db.config.url_with_secret();
    let out = myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    assert!(out.status.code().unwrap() <= 1, "{}", texts(&out).1);
    let edited = SHOP_JOB.replace("source: cp1251", "source: koi8-r");
    let job = write_job(dir.path(), &db.name, &edited);
    let out = myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    assert_fails_with(
        &out,
        &["the job changed for table 'items'", "rollback"],
        db.config.password().unwrap(),
    );
}

#[tokio::test]
async fn names_a_missing_privilege() {
    let server = myrecode::db::throwaway::ThrowawayServer::shared().unwrap();
    let db = test_database("run_priv");
    seed_items(&db.config).await;
    let user = format!("ro_{}", std::process::id());
    exec_script(
        server.admin(),
        &[
            &format!("CREATE USER '{user}'@'%' IDENTIFIED BY 'R3adOnlyPw'"),
            &format!("CREATE USER '{user}'@'localhost' IDENTIFIED BY 'R3adOnlyPw'"),
            &format!("GRANT SELECT ON `{}`.* TO '{user}'@'%'", db.name),
            &format!("GRANT SELECT ON `{}`.* TO '{user}'@'localhost'", db.name),
        ],
    )
    .await;
    let a = server.admin();
    let url = format!(
        "mysql://{user}:R3adOnlyPw@{}:{}/{}",
        a.host, a.port, db.name
    );
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(dir.path(), &db.name, SHOP_JOB);
    let out = myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    assert_fails_with(&out, &["missing privilege", "GRANT"], "R3adOnlyPw");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_lag_is_read_with_this_servers_spelling() {
    let db = myrecode::db::throwaway::test_database("replica_lag");
    // Not a replica: the status statement is understood and answers no row.
    let mut c = db.config.connect_one().await.unwrap();
    let lag = myrecode::engine::replicas::discover::status(&mut c)
        .await
        .expect("the replication status statement runs on this server");
    assert_eq!(lag, None);
}

//! Names the tool uses for its own objects, held by the user's: a table named like a copy's
//! shadow or change log, like a bookkeeping table, a column named like the in-place staging
//! table's; and a user without a privilege the job needs. Each is refused before anything is
//! written, with its reason and fix, the user's data intact (or, for the column, simply works).

use crate::common::{self, exec_script, texts};
use myrecode::db::throwaway::{test_database, ThrowawayServer};
use sqlx::MySqlConnection;
use std::path::PathBuf;

const UTF8: &str = "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci";

/// A cp1251 table `table` with two Russian names, and a copy job for it in `dir`.
async fn seed_copy(
    db: &myrecode::db::throwaway::TestDatabase,
    table: &str,
    dir: &std::path::Path,
) -> PathBuf {
    exec_script(
        &db.config,
        &[
            &format!("CREATE TABLE `{table}` (id INT PRIMARY KEY, name VARCHAR(100) CHARACTER SET cp1251) ENGINE=InnoDB"),
            &format!("INSERT INTO `{table}` VALUES (1, CONVERT(_utf8mb4 'Привет' USING cp1251)), (2, CONVERT(_utf8mb4 'Мир' USING cp1251))"),
        ],
    )
    .await;
    let path = dir.join("job.yaml");
    std::fs::write(
        &path,
        common::copy_job(&db.name, table, "name", "cp1251", UTF8),
    )
    .unwrap();
    path
}

async fn scalar(c: &mut MySqlConnection, sql: &str, schema: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .bind(schema)
        .fetch_one(c)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// How many tables and triggers of the tool's (their names hold `myrecode`) `schema` has,
/// besides `except`.
async fn ours(c: &mut MySqlConnection, schema: &str, except: &str) -> i64 {
    let tables = sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '%myrecode%' AND TABLE_NAME <> ?",
    )
    .bind(schema)
    .bind(except)
    .fetch_one(&mut *c)
    .await
    .unwrap();
    tables
        + scalar(
            c,
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?",
            schema,
        )
        .await
}

fn assert_refused(out: &std::process::Output, needles: &[&str]) {
    let (stdout, stderr) = texts(out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "expected {n:?} in: {stderr}");
    }
    assert!(stderr.contains("Fix:"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_table_named_like_a_shadow_or_log_is_refused_and_kept() {
    for (table, taken) in [
        ("coll", "coll_myrecode_new"),
        ("coll2", "coll2_myrecode_log"),
    ] {
        let db = test_database(&format!("own_{table}"));
        let dir = tempfile::tempdir().unwrap();
        let url = db.config.url_with_secret();
        let mut c = db.config.connect_one().await.unwrap();
        let job = seed_copy(&db, table, dir.path()).await;
        exec_script(
            &db.config,
            &[
                &format!(
                    "CREATE TABLE `{taken}` (id INT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB"
                ),
                &format!("INSERT INTO `{taken}` VALUES (1, 'keep me'), (2, 'me too')"),
            ],
        )
        .await;
        for execute in [false, true] {
            let mut argv = vec!["run", job.to_str().unwrap()];
            if execute {
                argv.push("--execute");
            }
            let out = common::myrecode(Some(&url), &argv);
            assert_refused(
                &out,
                &[
                    &format!("`{taken}` exists and was not created by myrecode"),
                    "rename it",
                ],
            );
        }
        let kept = scalar(
            &mut c,
            &format!(
                "SELECT COUNT(*) FROM `{taken}` WHERE note IN ('keep me', 'me too') AND ? <> ''"
            ),
            &db.name,
        )
        .await;
        assert_eq!(kept, 2, "the user's {taken} keeps its rows");
        assert_eq!(
            ours(&mut c, &db.name, taken).await,
            0,
            "nothing created beside {taken}"
        );
        // `abort` of the job that never started leaves the user's table alone too.
        let out = common::myrecode(Some(&url), &["abort", job.to_str().unwrap()]);
        assert!(out.status.code().unwrap() <= 2, "{}", texts(&out).1);
        let kept: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM `{taken}`"))
            .fetch_one(&mut c)
            .await
            .unwrap();
        assert_eq!(kept, 2, "abort kept the user's {taken}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_a_killed_run_left_beside_its_marked_log_is_taken_up() {
    let db = test_database("own_left");
    let dir = tempfile::tempdir().unwrap();
    let job = seed_copy(&db, "coll", dir.path()).await;
    // What a run killed after creating its log and shadow leaves (no checkpoint yet).
    exec_script(
        &db.config,
        &[
            "CREATE TABLE coll_myrecode_log (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, key_bytes BLOB NOT NULL) ENGINE=InnoDB COMMENT='myrecode change log'",
            "CREATE TABLE coll_myrecode_new LIKE coll",
        ],
    )
    .await;
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let mut c = db.config.connect_one().await.unwrap();
    let name: String = sqlx::query_scalar("SELECT name FROM coll WHERE id = 1")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(name, "Привет");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_table_named_like_a_bookkeeping_table_is_refused_and_kept() {
    let db = test_database("own_control");
    let dir = tempfile::tempdir().unwrap();
    let job = seed_copy(&db, "coll", dir.path()).await;
    exec_script(
        &db.config,
        &[
            "CREATE TABLE `_myrecode_control` (id INT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB",
            "INSERT INTO `_myrecode_control` VALUES (1, 'mine')",
        ],
    )
    .await;
    let url = db.config.url_with_secret();
    for execute in [false, true] {
        let mut argv = vec!["run", job.to_str().unwrap()];
        if execute {
            argv.push("--execute");
        }
        let out = common::myrecode(Some(&url), &argv);
        assert_refused(
            &out,
            &[
                "`_myrecode_control` exists and was not created by myrecode",
                "RENAME TABLE",
            ],
        );
    }
    let mut c = db.config.connect_one().await.unwrap();
    let columns = scalar(
        &mut c,
        "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = '_myrecode_control'",
        &db.name,
    )
    .await;
    assert_eq!(columns, 2, "no column added to the user's table");
    assert_eq!(ours(&mut c, &db.name, "_myrecode_control").await, 0);
    let note: String = sqlx::query_scalar("SELECT note FROM `_myrecode_control` WHERE id = 1")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(note, "mine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_and_run_keep_a_users_empty_table_named_like_an_old_bookkeeping_table() {
    let db = test_database("own_checksums");
    let dir = tempfile::tempdir().unwrap();
    let job = seed_copy(&db, "coll", dir.path()).await;
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    // After the run, the user makes an (empty) table under the name an older `verify` used.
    exec_script(
        &db.config,
        &["CREATE TABLE `_myrecode_checksums` (id INT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB"],
    )
    .await;
    // cleanup refuses it by name, before dropping anything.
    let out = common::myrecode(Some(&url), &["cleanup", job.to_str().unwrap()]);
    assert_refused(
        &out,
        &[
            "`_myrecode_checksums` exists and was not created by myrecode",
            "RENAME TABLE",
        ],
    );
    let mut c = db.config.connect_one().await.unwrap();
    let kept = scalar(
        &mut c,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = '_myrecode_checksums'",
        &db.name,
    )
    .await;
    assert_eq!(kept, 1, "cleanup dropped the user's table");
    let originals = scalar(
        &mut c,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'coll_myrecode_old'",
        &db.name,
    )
    .await;
    assert_eq!(originals, 1, "the kept original is still there");
    // And a new run refuses to take it for its own.
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap()]);
    assert_refused(
        &out,
        &[
            "`_myrecode_checksums` exists and was not created by myrecode",
            "RENAME TABLE",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_column_named_like_the_stages_own_is_recoded_in_place() {
    let db = test_database("own_column");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (_myrecode_n INT PRIMARY KEY, _myrecode_col INT, body TEXT CHARACTER SET utf8mb4) ENGINE=InnoDB",
            // `Привет` as cp1251 bytes read through latin1: mojibake in a utf8mb4 column.
            "INSERT INTO posts VALUES (1, 7, CONVERT(_latin1 0xCFF0E8E2E5F2 USING utf8mb4)), (2, 8, 'plain')",
        ],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  batch_size: 50\ntables:\n  - name: posts\n    strategy: in-place\n    \
             columns:\n      - name: body\n        source: cp1251>latin1\n        target: TEXT CHARACTER SET utf8mb4\n",
            db.name
        ),
    )
    .unwrap();
    let out = common::myrecode(
        Some(&db.config.url_with_secret()),
        &["run", job.to_str().unwrap(), "--execute"],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let mut c = db.config.connect_one().await.unwrap();
    let body: String = sqlx::query_scalar("SELECT body FROM posts WHERE _myrecode_n = 1")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(body, "Привет");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_trigger_is_refused_before_anything_is_created() {
    let server = ThrowawayServer::shared().unwrap();
    let db = test_database("own_trigger");
    let dir = tempfile::tempdir().unwrap();
    let job = seed_copy(&db, "coll", dir.path()).await;
    let user = format!("notrg_{}", std::process::id());
    let privs = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, LOCK TABLES, CREATE TEMPORARY TABLES";
    let mut script = Vec::new();
    for host in ["%", "localhost"] {
        script.push(format!(
            "CREATE USER '{user}'@'{host}' IDENTIFIED BY 'N0TriggerPw'"
        ));
        script.push(format!(
            "GRANT {privs} ON `{}`.* TO '{user}'@'{host}'",
            db.name
        ));
    }
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    exec_script(server.admin(), &script).await;
    let a = server.admin();
    let url = format!(
        "mysql://{user}:N0TriggerPw@{}:{}/{}",
        a.host, a.port, db.name
    );
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    assert_refused(&out, &["missing privilege", "TRIGGER", "GRANT TRIGGER ON"]);
    let (stdout, stderr) = texts(&out);
    assert!(!stderr.contains("N0TriggerPw") && !stdout.contains("N0TriggerPw"));
    let mut c = db.config.connect_one().await.unwrap();
    assert_eq!(
        ours(&mut c, &db.name, "").await,
        0,
        "nothing of myrecode's was created"
    );
    let gate = scalar(
        &mut c,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '!%'",
        &db.name,
    )
    .await;
    assert_eq!(gate, 0, "no gate");
    // Granted, the same user runs the job.
    let grant: Vec<String> = ["%", "localhost"]
        .iter()
        .map(|h| format!("GRANT TRIGGER ON `{}`.* TO '{user}'@'{h}'", db.name))
        .collect();
    let grant: Vec<&str> = grant.iter().map(String::as_str).collect();
    exec_script(server.admin(), &grant).await;
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_table_named_like_the_trial_table_is_refused_by_the_rehearsal_and_kept() {
    let db = test_database("own_try");
    let dir = tempfile::tempdir().unwrap();
    let job = seed_copy(&db, "coll", dir.path()).await;
    exec_script(
        &db.config,
        &[
            "CREATE TABLE coll_myrecode_try (id INT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB",
            "INSERT INTO coll_myrecode_try VALUES (1, 'keep me')",
        ],
    )
    .await;
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    let said = format!("{stdout}\n{stderr}");
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("`coll_myrecode_try` exists and was not created by myrecode"),
        "{said}"
    );
    let mut c = db.config.connect_one().await.unwrap();
    let note: String = sqlx::query_scalar("SELECT note FROM coll_myrecode_try WHERE id = 1")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(note, "keep me");
}

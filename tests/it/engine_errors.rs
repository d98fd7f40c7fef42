//! Failure classes, asserted by type: the engine driven as a library against the throwaway
//! server, each definitive failure coming back as its `EngineError` variant (which `retry`
//! never retries), with the data left as it was.

use crate::common;
use common::exec_script;
use myrecode::db::throwaway::test_database;
use myrecode::engine::error::{self, EngineError};
use myrecode::engine::events::{Event, Events};
use myrecode::engine::retry;
use myrecode::engine::runner::{self, RunOptions};
use myrecode::job::load::load_str;
use myrecode::job::model::Job;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

/// Keeps every line the engine had to say.
#[derive(Default)]
struct Said(Mutex<Vec<String>>);

impl Events for Said {
    fn event(&self, e: &Event<'_>) {
        if let Some(l) = myrecode::engine::events::line(e) {
            self.0.lock().unwrap().push(l);
        }
    }
}

fn job(schema: &str, strategy: &str, source: &str, target: &str) -> Job {
    let text = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 50\n  cutover: auto\ntables:\n  - name: posts\n    \
         strategy: {strategy}\n    columns:\n      - name: body\n        source: {source}\n        target: {target}\n"
    );
    load_str(&text).expect("the test job loads").job
}

fn opts() -> RunOptions {
    RunOptions {
        execute: true,
        job_id: "errors".into(),
        retry_for: Duration::from_secs(5),
    }
}

async fn checksum(cfg: &myrecode::db::connect::ConnectionConfig) -> i64 {
    let mut c = cfg.connect_one().await.unwrap();
    let row: (String, i64) = sqlx::query_as("CHECKSUM TABLE posts")
        .fetch_one(&mut c)
        .await
        .unwrap();
    row.1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_edited_since_its_checkpoint_is_job_edited() {
    let db = test_database("err_edited");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY, body TEXT CHARACTER SET utf8mb4) ENGINE=InnoDB",
            // `Привет` as cp1251 bytes read through latin1: mojibake in a utf8mb4 column.
            "INSERT INTO posts VALUES (1, CONVERT(_latin1 0xCFF0E8E2E5F2 USING utf8mb4)), (2, 'plain')",
        ],
    )
    .await;
    let target = "TEXT CHARACTER SET utf8mb4";
    let first = job(&db.name, "in-place", "auto", target);
    let said = Said::default();
    let runner::Outcome::Ran(done) =
        runner::run(&db.config, &first, &opts(), &AtomicBool::new(false), &said)
            .await
            .expect("the first run succeeds")
    else {
        panic!("the run rehearsed instead of executing");
    };
    assert!(done.iter().all(|s| s.done));
    let before = checksum(&db.config).await;
    let edited = job(&db.name, "in-place", "cp1251>latin1", target);
    let err = runner::run(&db.config, &edited, &opts(), &AtomicBool::new(false), &said)
        .await
        .expect_err("an edited job is refused");
    assert!(
        matches!(error::find(&err), Some(EngineError::JobEdited { table, .. }) if table == "posts"),
        "{err:#}"
    );
    assert!(!retry::is_transient(&err));
    assert!(format!("{err:#}").contains("Fix: restore the job file"));
    assert_eq!(checksum(&db.config).await, before, "nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_that_collide_once_recoded_are_a_unique_collision() {
    let db = test_database("err_unique");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY, body VARCHAR(100) CHARACTER SET latin1, \
             UNIQUE KEY u_body (body)) ENGINE=InnoDB",
            // `Новости` once as cp1251 bytes and once as UTF-8 bytes: one text once recoded.
            "INSERT INTO posts VALUES (1, 0xCDEEE2EEF1F2E8), \
             (2, 0xD09DD0BED0B2D0BED181D182D0B8), (3, 'plain')",
        ],
    )
    .await;
    let before = checksum(&db.config).await;
    let j = job(
        &db.name,
        "copy",
        "auto",
        "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
    );
    let err = runner::run(
        &db.config,
        &j,
        &opts(),
        &AtomicBool::new(false),
        &Said::default(),
    )
    .await
    .expect_err("the collision stops the copy");
    assert!(
        matches!(error::find(&err), Some(EngineError::UniqueCollision { table, .. }) if table == "posts"),
        "{err:#}"
    );
    assert!(!retry::is_transient(&err));
    assert_eq!(checksum(&db.config).await, before, "the table is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_that_overflow_an_index_are_too_large_and_leave_no_shadow() {
    let db = test_database("err_large");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY, body VARCHAR(255) CHARACTER SET latin1, \
             KEY k_body (body)) ENGINE=InnoDB ROW_FORMAT=COMPACT",
            "INSERT INTO posts VALUES (1, 0xCFF0E8E2E5F2)",
        ],
    )
    .await;
    let j = job(
        &db.name,
        "copy",
        "auto",
        "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
    );
    let err = runner::run(
        &db.config,
        &j,
        &opts(),
        &AtomicBool::new(false),
        &Said::default(),
    )
    .await
    .expect_err("the overflowing index stops the copy before it starts");
    assert!(
        matches!(error::find(&err), Some(EngineError::TooLarge { table, .. }) if table == "posts"),
        "{err:#}"
    );
    let mut c = db.config.connect_one().await.unwrap();
    let shadows: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts_myrecode_new'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(shadows, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_of_a_copy_still_running_is_still_copying() {
    let db = test_database("err_cleanup");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY, body TEXT CHARACTER SET latin1) ENGINE=InnoDB",
            "INSERT INTO posts VALUES (1, 0xCFF0E8E2E5F2)",
        ],
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    myrecode::bookkeeping::checkpoint::ensure(&mut c, &db.name)
        .await
        .unwrap();
    let copying = myrecode::bookkeeping::checkpoint::State {
        phase: "copying".into(),
        ..Default::default()
    };
    myrecode::bookkeeping::checkpoint::save(&mut c, &db.name, "errors", "posts", &copying)
        .await
        .unwrap();
    let err = myrecode::engine::copy::cleanup_table(&mut c, &db.name, "posts", "errors")
        .await
        .expect_err("a running copy has nothing to clean up");
    assert!(
        matches!(error::find(&err), Some(EngineError::StillCopying { table }) if table == "posts"),
        "{err:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_table_is_refused_by_type_before_any_write() {
    let db = test_database("err_refused");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY, body TEXT CHARACTER SET utf8mb4) ENGINE=MyISAM",
            "INSERT INTO posts VALUES (1, CONVERT(_latin1 0xCFF0E8E2E5F2 USING utf8mb4))",
        ],
    )
    .await;
    let before = checksum(&db.config).await;
    let j = job(&db.name, "in-place", "auto", "TEXT CHARACTER SET utf8mb4");
    let err = runner::run(
        &db.config,
        &j,
        &opts(),
        &AtomicBool::new(false),
        &Said::default(),
    )
    .await
    .expect_err("in place on MyISAM is refused");
    let Some(EngineError::Refused(r)) = error::find(&err) else {
        panic!("not a refusal: {err:#}");
    };
    assert_eq!(r.tables.len(), 1);
    assert_eq!(r.tables[0].0, "posts");
    assert!(!retry::is_transient(&err));
    assert_eq!(checksum(&db.config).await, before);
    let mut c = db.config.connect_one().await.unwrap();
    let ours: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '%myrecode%'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(ours, 0, "not even the checkpoint tables");
}

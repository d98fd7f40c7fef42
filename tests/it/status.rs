//! `myrecode status` against a real server: a job followed from its first batch to its last
//! manual cut-over, paused, throttled; a job not started; bookkeeping tables of an older
//! myrecode read as they are and upgraded by the next command that writes.

use crate::common;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::{test_database, ThrowawayServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// `notes` (in place: utf8mb4 holding cp1251 mojibake), `posts` and `users` (copies: latin1
/// holding cp1251 bytes), with `notes`, `posts` and `users` rows.
async fn seed(cfg: &ConnectionConfig, notes: i64, posts: i64, users: i64) {
    exec_script(
        cfg,
        &[
            "CREATE TABLE notes (id INT NOT NULL PRIMARY KEY, title VARCHAR(400) CHARACTER SET utf8mb4) ENGINE=InnoDB",
            "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, body TEXT CHARACTER SET latin1) ENGINE=InnoDB",
            "CREATE TABLE users (id INT NOT NULL PRIMARY KEY, name VARCHAR(100) CHARACTER SET latin1) ENGINE=InnoDB",
        ],
    )
    .await;
    let mut c = cfg.connect_one().await.unwrap();
    let text = |i: i64| format!("{} #{i}", RUSSIAN[i as usize % RUSSIAN.len()]);
    for (table, n) in [("notes", notes), ("posts", posts), ("users", users)] {
        for start in (0..n).step_by(500) {
            let ids: Vec<i64> = (start..(start + 500).min(n)).collect();
            let sql = format!(
                "INSERT INTO {table} VALUES {}",
                vec!["(?, ?)"; ids.len()].join(", ")
            );
            let mut q = sqlx::query(&sql);
            for id in &ids {
                q = q.bind(id);
                q = if table == "notes" {
                    q.bind(mojibake(Windows1251, Latin1, &text(*id)))
                } else {
                    q.bind(bytes(Windows1251, &text(*id)))
                };
            }
            q.execute(&mut c).await.unwrap();
        }
    }
}

/// The job: `notes` in place, then `posts` and `users` copied, cut over by hand; small,
/// paced batches so the copy of `posts` lasts long enough to be watched.
fn write_job(dir: &Path, schema: &str) -> PathBuf {
    let path = dir.join("status.yaml");
    let col = |name: &str, target: &str| {
        format!(
            "    columns:\n      - name: {name}\n        source: auto\n        target: {target}\n"
        )
    };
    let text =
        format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 50\n  target_batch_time: 1ms\n  \
         pause_between_batches: 30ms\n  max_threads_running: 6\n  cutover: manual\ntables:\n\
         \x20 - name: notes\n    strategy: in-place\n{}\
         \x20 - name: posts\n    strategy: copy\n{}\
         \x20 - name: users\n    strategy: copy\n{}",
        col("title", "VARCHAR(400) CHARACTER SET utf8mb4"),
        col("body", "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"),
        col("name", "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `myrecode status` as text; it must succeed and never show the password.
fn status_text(url: &str, job: &Path, password: Option<&str>) -> String {
    let out = myrecode(Some(url), &["status", job.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    if let Some(p) = password.filter(|p| !p.is_empty()) {
        assert!(
            !stdout.contains(p) && !stderr.contains(p),
            "a secret printed"
        );
    }
    stdout
}

/// `myrecode status --json`, parsed.
fn status_json(url: &str, job: &Path) -> Value {
    let out = myrecode(Some(url), &["status", job.to_str().unwrap(), "--json"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The JSON of table `name`.
fn table<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == name)
        .unwrap_or_else(|| panic!("no {name} in {s}"))
}

/// Polls `status --json` until `cond` holds (at most `limit`); returns that status.
fn wait_status(
    url: &str,
    job: &Path,
    what: &str,
    limit: Duration,
    cond: impl Fn(&Value) -> bool,
) -> Value {
    let since = Instant::now();
    loop {
        let s = status_json(url, job);
        if cond(&s) {
            return s;
        }
        assert!(
            since.elapsed() < limit,
            "timed out waiting for {what}: {s:#}"
        );
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// The `_myrecode_*` tables of `schema`.
async fn bookkeeping(c: &mut sqlx::MySqlConnection, schema: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '\\_myrecode\\_%' ORDER BY 1",
    )
    .bind(schema)
    .fetch_all(c)
    .await
    .unwrap()
}

/// What the flow's steps share: the job, the URL its commands are given (and the password
/// no output may show), the schema's settings, and the rows seeded per table.
struct Flow {
    cfg: ConnectionConfig,
    url: String,
    job: PathBuf,
    password: Option<String>,
    n_notes: i64,
    n_posts: i64,
    n_users: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_follows_a_job_to_its_manual_cutover() {
    // The job is throttled by the server's Threads_running, which this test raises with
    // sleeping sessions: on the shared server every other test's statements would count
    // too, and the sleepers would throttle their jobs, so this one runs on a server of its own.
    let server = ThrowawayServer::start().unwrap_or_else(|e| panic!("{e:#}"));
    let db = server.fresh_database("status_flow").unwrap();
    let (n_notes, n_posts, n_users) = (200, 3000, 100);
    seed(&db.config, n_notes, n_posts, n_users).await;
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(dir.path(), &db.name);
    let f = Flow {
        cfg: db.config.clone(),
        url: db.config.url_with_secret(),
        job,
        password: db.config.password().map(str::to_string),
        n_notes,
        n_posts,
        n_users,
    };
    let child = common::spawn_myrecode(&f.url, &["run", f.job.to_str().unwrap(), "--execute"], &[]);
    while_posts_is_copied_status_shows_its_pace_and_an_eta(&f);
    once_every_copy_caught_up_the_job_waits_for_its_one_cutover(&f);
    paused_the_backlog_piles_up_and_is_counted_then_drains(&f).await;
    a_busy_server_throttles_the_job_until_the_load_passes(&f).await;
    the_one_cut_over_swaps_both_and_the_job_says_it_is_finished(&f, child);
}

/// Copying `posts`: rows of about how many, a pace and an ETA; `notes` done before it.
fn while_posts_is_copied_status_shows_its_pace_and_an_eta(f: &Flow) {
    // Copying `posts`: rows of about how many, a pace and an ETA; `notes` done before it.
    let s = wait_status(
        &f.url,
        &f.job,
        "posts copying with a pace",
        Duration::from_secs(90),
        |s| {
            table(s, "posts")["phase"] == "copying" && table(s, "posts")["rows_per_sec"].is_number()
        },
    );
    let (notes, posts, users) = (table(&s, "notes"), table(&s, "posts"), table(&s, "users"));
    assert_eq!(s["started"], true);
    assert_eq!(
        (notes["phase"].as_str(), notes["rows_done"].as_i64()),
        (Some("done"), Some(f.n_notes))
    );
    assert_eq!(notes["strategy"], "in-place");
    assert!(notes["rows_changed"].as_i64().unwrap() > 0, "{notes}");
    assert!(posts["rows_done"].as_i64().unwrap() > 0, "{posts}");
    assert!(posts["rows_estimated"].as_i64().is_some(), "{posts}");
    assert!(posts["rows_per_sec"].as_f64().unwrap() > 0.0, "{posts}");
    assert!(posts["eta_seconds"].is_number(), "{posts}");
    assert!(posts["backlog"].is_number(), "{posts}");
    assert_eq!(users["phase"], "not-started");
    assert_eq!(s["waits_for_cutover"], false);
}

/// `posts` caught up, `users` copied after it: the job waits for its one `myrecode cutover`.
fn once_every_copy_caught_up_the_job_waits_for_its_one_cutover(f: &Flow) {
    // `posts` caught up, `users` copied after it: the job waits for its one `myrecode cutover`.
    let s = wait_status(
        &f.url,
        &f.job,
        "every copy ready",
        Duration::from_secs(120),
        |s| s["waits_for_cutover"] == true,
    );
    let posts = table(&s, "posts");
    assert_eq!(posts["phase"], "replaying");
    assert_eq!(posts["ready"], true);
    assert_eq!(
        posts["rows_done"].as_i64(),
        Some(f.n_posts),
        "every row copied once"
    );
    assert!(posts["backlog"].as_i64().unwrap() < 50, "{posts}");
    assert_eq!(posts["rows_per_sec"], Value::Null, "no pace once copied");
    assert_eq!(table(&s, "users")["ready"], true);
    assert_eq!(table(&s, "users")["rows_done"].as_i64(), Some(f.n_users));
    let text = status_text(&f.url, &f.job, f.password.as_deref());
    assert!(text.contains("cut-over manual: in progress"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("posts  copy")
            && l.contains("replaying (ready)")
            && l.contains(&format!("{} of ~", f.n_posts))),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("users  copy") && l.contains("replaying (ready)")),
        "{text}"
    );
    assert!(
        text.contains("waits for `myrecode cutover`: posts, users copied and caught up"),
        "{text}"
    );
}

/// Paused: the application's writes pile up in the change log, and status counts them;
/// resumed, the backlog drains.
async fn paused_the_backlog_piles_up_and_is_counted_then_drains(f: &Flow) {
    // Paused: the application's writes pile up in the change log, and status counts them.
    let out = myrecode(Some(&f.url), &["pause", f.job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    wait_status(
        &f.url,
        &f.job,
        "the run to note its pause",
        Duration::from_secs(30),
        |s| s["waiting"]["kind"] == "paused" && s["waiting"]["seconds"].is_number(),
    );
    let mut c = f.cfg.connect_one().await.unwrap();
    sqlx::query("UPDATE posts SET body = CONCAT(body, '!') WHERE id < 120")
        .execute(&mut c)
        .await
        .unwrap();
    let s = status_json(&f.url, &f.job);
    // The update trigger logs each row's key before and after (a key may change): 2 per row.
    assert_eq!(table(&s, "posts")["backlog"].as_i64(), Some(240), "{s:#}");
    assert_eq!(table(&s, "posts")["ready"], false, "240 log rows behind");
    assert_eq!(s["waits_for_cutover"], false);
    let text = status_text(&f.url, &f.job, f.password.as_deref());
    assert!(text.contains("now: paused by `myrecode pause`"), "{text}");
    let out = myrecode(Some(&f.url), &["resume", f.job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let s = wait_status(
        &f.url,
        &f.job,
        "the backlog to drain",
        Duration::from_secs(60),
        |s| s["waits_for_cutover"] == true && s["waiting"].is_null(),
    );
    assert!(
        table(&s, "posts")["rows_conflicted"].as_i64().unwrap() >= 120,
        "replayed"
    );
}

/// Throttled: the server runs more threads than the job allows, and status says so until
/// the load passes.
async fn a_busy_server_throttles_the_job_until_the_load_passes(f: &Flow) {
    // Throttled: the server runs more threads than the job allows.
    let sleepers: Vec<_> = (0..8)
        .map(|_| {
            let cfg = f.cfg.clone();
            tokio::spawn(async move {
                let mut c = cfg.connect_one().await.unwrap();
                sqlx::query("SELECT SLEEP(6)").execute(&mut c).await.ok();
            })
        })
        .collect();
    let s = wait_status(
        &f.url,
        &f.job,
        "the run to say it is throttled",
        Duration::from_secs(30),
        |s| s["waiting"]["kind"] == "threads_running",
    );
    assert!(
        s["waiting"]["reason"]
            .as_str()
            .unwrap()
            .contains("over max_threads_running 6"),
        "{s:#}"
    );
    let text = status_text(&f.url, &f.job, f.password.as_deref());
    assert!(
        text.contains("now: throttled: Threads_running is "),
        "{text}"
    );
    for s in sleepers {
        s.await.unwrap();
    }
    wait_status(
        &f.url,
        &f.job,
        "the throttle to lift",
        Duration::from_secs(60),
        |s| s["waiting"].is_null(),
    );
}

/// The one cut-over swaps both: the run ends, the job is finished, and says so.
fn the_one_cut_over_swaps_both_and_the_job_says_it_is_finished(f: &Flow, mut child: Child) {
    // The one cut-over swaps both: the job is finished, and says so.
    let out = myrecode(Some(&f.url), &["cutover", f.job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let since = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if since.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            panic!(
                "the run did not end: {:?}",
                texts(&child.wait_with_output().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    let s = status_json(&f.url, &f.job);
    assert_eq!(
        (s["finished"].as_bool(), s["waits_for_cutover"].as_bool()),
        (Some(true), Some(false))
    );
    assert!(s["tables"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["phase"] == "done"));
    let text = status_text(&f.url, &f.job, f.password.as_deref());
    assert!(text.contains("cut-over manual: finished"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_of_a_job_not_started_says_so_and_writes_nothing() {
    let db = test_database("status_fresh");
    seed(&db.config, 10, 10, 10).await;
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(dir.path(), &db.name);
    let url = db.config.url_with_secret();
    let text = status_text(&url, &job, db.config.password());
    assert!(
        text.contains("cut-over manual: not started (no checkpoint yet)"),
        "{text}"
    );
    assert_eq!(text.matches("not started").count(), 4, "{text}");
    let s = status_json(&url, &job);
    assert_eq!(
        (s["schema_version"].as_i64(), s["started"].as_bool()),
        (Some(1), Some(false))
    );
    assert_eq!(
        table(&s, "posts")["rows_estimated"]
            .as_i64()
            .map(|n| n <= 10),
        Some(true)
    );
    let mut c = db.config.connect_one().await.unwrap();
    assert_eq!(
        bookkeeping(&mut c, &db.name).await,
        Vec::<String>::new(),
        "status created nothing"
    );
    assert_eq!(
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?"
        )
        .bind(&db.name)
        .fetch_one(&mut c)
        .await
        .unwrap(),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_jobs_bookkeeping_is_read_as_is_and_upgraded_by_the_next_write() {
    let db = test_database("status_older");
    seed(&db.config, 10, 10, 10).await;
    // The checkpoint and control tables as the first release made them, with a row of this job.
    exec_script(
        &db.config,
        &[
            "CREATE TABLE _myrecode_checkpoint (job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, \
             fingerprint VARCHAR(32) NOT NULL, priors LONGTEXT NOT NULL, last_key BLOB NULL, done TINYINT NOT NULL DEFAULT 0, \
             rows_read BIGINT NOT NULL DEFAULT 0, rows_changed BIGINT NOT NULL DEFAULT 0, \
             rows_quarantined BIGINT NOT NULL DEFAULT 0, rows_conflicted BIGINT NOT NULL DEFAULT 0, \
             updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), \
             PRIMARY KEY (job, tbl)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            "CREATE TABLE _myrecode_control (job VARCHAR(64) NOT NULL PRIMARY KEY, command VARCHAR(16) NOT NULL, \
             at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            "INSERT INTO _myrecode_checkpoint (job, tbl, fingerprint, priors, done, rows_read, rows_changed) \
             VALUES ('status', 'notes', 'x', '{}', 0, 7, 3)",
        ],
    )
    .await;
    let columns = |t: &'static str| {
        let cfg = db.config.clone();
        let schema = db.name.clone();
        async move {
            let mut c = cfg.connect_one().await.unwrap();
            sqlx::query_scalar::<_, String>(
                "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
            )
            .bind(schema)
            .bind(t)
            .fetch_all(&mut c)
            .await
            .unwrap()
        }
    };
    let before = (
        columns("_myrecode_checkpoint").await,
        columns("_myrecode_control").await,
    );
    let dir = tempfile::tempdir().unwrap();
    let job = write_job(dir.path(), &db.name);
    let url = db.config.url_with_secret();
    let s = status_json(&url, &job);
    let notes = table(&s, "notes");
    assert_eq!(
        (notes["phase"].as_str(), notes["rows_done"].as_i64()),
        (Some("running"), Some(7))
    );
    assert_eq!(notes["rows_per_sec"], Value::Null);
    assert_eq!(
        (
            columns("_myrecode_checkpoint").await,
            columns("_myrecode_control").await
        ),
        before,
        "status altered nothing"
    );
    // The next command that writes (here `pause`) adds the new columns, keeping the row.
    let out = myrecode(Some(&url), &["pause", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let after = columns("_myrecode_checkpoint").await;
    for c in ["phase", "rows_per_sec", "rate_rows", "rate_at"] {
        assert!(after.iter().any(|a| a == c), "{c} added: {after:?}");
    }
    let control = columns("_myrecode_control").await;
    assert!(
        control.iter().any(|a| a == "waiting") && control.iter().any(|a| a == "waiting_since"),
        "{control:?}"
    );
    let s = status_json(&url, &job);
    assert_eq!(table(&s, "notes")["rows_done"].as_i64(), Some(7));
    assert_eq!(s["waiting"]["kind"], "paused");
}

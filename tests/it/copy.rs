//! The copy strategy against a real server: a latin1 table holding cp1251/KOI8-R bytes becomes utf8mb4 online.

use crate::common;
use common::legacy::*;
use common::{exec_script, texts};
use myrecode::codec::Encoding::{self, *};
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::{test_database, ThrowawayServer};
use sqlx::{MySqlConnection, Row};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Russian text of row `id` and the legacy bytes a latin1 connection stored for it.
fn seeded(id: i64) -> (String, Vec<u8>) {
    let texts: Vec<&str> = RUSSIAN
        .iter()
        .chain(UKRAINIAN)
        .copied()
        .filter(|t| !t.contains(['ё', 'Ё']))
        .collect();
    let text = format!("{} #{id}", texts[(id as usize) % texts.len()]);
    let ukrainian = text.contains(['і', 'ї', 'є', 'ґ', 'І', 'Ї', 'Є']);
    let enc: Encoding = if ukrainian || id % 2 == 0 {
        Windows1251
    } else {
        Koi8R
    };
    let stored = bytes(enc, &text);
    (text, stored)
}

/// `posts(id PK, code VARCHAR ascii with an index, body TEXT latin1)` with rows `0..rows`.
async fn seed(cfg: &ConnectionConfig, rows: i64) {
    exec_script(
        cfg,
        &["CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, code VARCHAR(20) CHARACTER SET latin1 NOT NULL, \
           body TEXT CHARACTER SET latin1 COLLATE latin1_swedish_ci, KEY k_code (code)) ENGINE=InnoDB DEFAULT CHARSET=latin1"],
    )
    .await;
    let mut c = cfg.connect_one().await.unwrap();
    for start in (0..rows).step_by(500) {
        let ids: Vec<i64> = (start..(start + 500).min(rows)).collect();
        let sql = format!(
            "INSERT INTO posts (id, code, body) VALUES {}",
            vec!["(?, ?, ?)"; ids.len()].join(", ")
        );
        let mut q = sqlx::query(&sql);
        for id in &ids {
            q = q.bind(id).bind(format!("C-{id:06}")).bind(seeded(*id).1);
        }
        q.execute(&mut c).await.unwrap();
    }
}

fn job(dir: &std::path::Path, schema: &str, batch: u32, pause_ms: u32) -> std::path::PathBuf {
    let path = dir.join("copy.yaml");
    let text = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: {batch}\n  target_batch_time: 100ms\n  \
         pause_between_batches: {pause_ms}ms\n  cutover: auto\ntables:\n  - name: posts\n    strategy: copy\n    columns:\n      \
         - name: body\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Changes one setting of a job file written by [`job`].
fn edit(job: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(job).unwrap();
    assert!(text.contains(from), "{from} not in the job");
    std::fs::write(job, text.replace(from, to)).unwrap();
}

fn run_child(url: &str, job: &str) -> std::process::Child {
    common::spawn_myrecode(url, &["run", job, "--execute"], &[])
}

async fn scalar(c: &mut sqlx::MySqlConnection, sql: &str, schema: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .bind(schema)
        .fetch_one(c)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The post-cut-over checks every test shares: utf8mb4 column, old table kept, nothing left behind.
async fn assert_swapped(c: &mut sqlx::MySqlConnection, schema: &str) {
    let charset: String = sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'body'",
    )
    .bind(schema)
    .fetch_one(&mut *c)
    .await
    .unwrap();
    assert_eq!(charset, "utf8mb4");
    assert_eq!(
        scalar(
            c,
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME NOT LIKE '%\\_myrecode\\_rv_'",
            schema
        )
        .await,
        0,
        "no trigger left but the back log's"
    );
    assert_eq!(
        scalar(
            c,
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = 'posts' AND TRIGGER_NAME LIKE 'posts\\_myrecode\\_rv_'",
            schema
        )
        .await,
        3,
        "the back log's triggers on the live table, for `revert` until `cleanup`"
    );
    assert_eq!(
        scalar(c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts_myrecode_old'", schema).await,
        1,
        "the original is kept for rollback"
    );
    assert_eq!(
        scalar(c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts_myrecode_new'", schema).await,
        0,
        "shadow gone (renamed)"
    );
}

fn pause_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("cut-over:"))
        .unwrap_or_else(|| panic!("no cut-over line in: {stdout}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_recodes_a_latin1_table_into_utf8mb4() {
    let db = test_database("copy_basic");
    let n = 3000;
    seed(&db.config, n).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 500, 0);
    let (url, jobp) = (db.config.url_with_secret(), job.to_str().unwrap());
    the_run_copies_every_row_exactly_with_nothing_to_replay(&url, jobp);
    let mut c = db.config.connect_one().await.unwrap();
    every_row_is_recoded_the_original_kept_and_verify_agrees(&mut c, &db.name, &url, jobp, n).await;
    a_latin1_write_after_the_swap_is_repaired_by_an_in_place_job(
        &mut c,
        &db.name,
        &url,
        dir.path(),
        jobp,
    )
    .await;
    the_kept_original_and_the_log_are_left_out_of_a_new_inventory(&url);
    rollback_keeps_a_copy_saying_the_way_back_and_a_second_copy_is_refused(
        &mut c, &db.name, &url, jobp,
    )
    .await;
    cleanup_drops_the_kept_original_and_the_log_once(&mut c, &db.name, &url, jobp).await;
}

/// Nobody wrote meanwhile: the copy itself is exact, with nothing left for the check to
/// send to replay, and every batch the check trailed proven by the copy's own decisions.
fn the_run_copies_every_row_exactly_with_nothing_to_replay(url: &str, job: &str) {
    let out = run_child(url, job).wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    println!("{}", pause_line(&stdout));
    // Nobody wrote meanwhile: the copy itself must be exact, with nothing left for the
    // check to send to replay (cp1251 rows go the server's way, KOI8-R rows are staged).
    assert!(
        stdout.contains("check: posts: every row compared with its copy; 0 differed"),
        "{stdout}"
    );
    // Every batch the check trailed was proven by the copy's own decisions: cp1251 rows the
    // server converted and KOI8-R rows staged alike; the server compares only what came after.
    let (own, all) = proven(&stdout);
    assert!(own >= 1 && own + 2 >= all, "{own} of {all}: {stdout}");
}

/// The column is utf8mb4, every row holds its text, the original is kept whole, `verify`
/// finds every row equal to it, and the secondary index came along.
async fn every_row_is_recoded_the_original_kept_and_verify_agrees(
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    job: &str,
    n: i64,
) {
    assert_swapped(c, schema).await;
    let rows = sqlx::query("SELECT id, code, body FROM posts ORDER BY id")
        .fetch_all(&mut *c)
        .await
        .unwrap();
    assert_eq!(rows.len() as i64, n);
    for r in &rows {
        let id: i64 = r.get(0);
        assert_eq!(r.get::<String, _>(1), format!("C-{id:06}"));
        assert_eq!(r.get::<String, _>(2), seeded(id).0, "row {id}");
    }
    let old: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM posts_myrecode_old")
        .fetch_one(&mut *c)
        .await
        .unwrap();
    assert_eq!(old, n);
    let out = common::myrecode(Some(url), &["verify", job]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("posts: 3000 row(s) equal their original (kept as posts_myrecode_old), recoded; 0 differ"),
        "{stdout}"
    );
    let idx: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts' AND INDEX_NAME = 'k_code'")
        .bind(schema)
        .fetch_one(&mut *c)
        .await
        .unwrap();
    assert_eq!(idx, 1, "the secondary index came along");
}

/// An old client still writing cp1251 through a latin1 connection after the swap stores
/// `cp1251>latin1` mojibake; a follow-up in-place job over the new column finds and repairs
/// it, and `verify` names the row as written since the cut-over.
async fn a_latin1_write_after_the_swap_is_repaired_by_an_in_place_job(
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    dir: &Path,
    job: &str,
) {
    // An old client still writing cp1251 through a latin1 connection after the swap stores
    // `cp1251>latin1` mojibake; a follow-up in-place job over the new column finds and repairs it.
    let text = "Оплата при получении, доставка курьером";
    sqlx::query("UPDATE posts SET body = CONVERT(? USING latin1) WHERE id = 17")
        .bind(bytes(Windows1251, text))
        .execute(&mut *c)
        .await
        .unwrap();
    let broken: String = sqlx::query_scalar("SELECT body FROM posts WHERE id = 17")
        .fetch_one(&mut *c)
        .await
        .unwrap();
    assert_ne!(broken, text);
    let repair = dir.join("repair.yaml");
    std::fs::write(
        &repair,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  pause_between_batches: 0ms\ntables:\n  - name: posts\n    strategy: in-place\n    columns:\n      \
             - name: body\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
            schema
        ),
    )
    .unwrap();
    let out = common::myrecode(Some(url), &["run", repair.to_str().unwrap(), "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("1 values recoded"), "{stdout}");
    let fixed: String = sqlx::query_scalar("SELECT body FROM posts WHERE id = 17")
        .fetch_one(&mut *c)
        .await
        .unwrap();
    assert_eq!(fixed, text);
    let clean: String = sqlx::query_scalar("SELECT body FROM posts WHERE id = 18")
        .fetch_one(&mut *c)
        .await
        .unwrap();
    assert_eq!(clean, seeded(18).0, "correct rows are left alone");
    let out = common::myrecode(Some(url), &["verify", job]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("2999 row(s) equal")
            && stdout.contains("written since the cut-over (or only on one side): key 17"),
        "{stdout}"
    );
}

/// The kept original and the log are ours: a new inventory (and so scan and plan) leaves
/// them out.
fn the_kept_original_and_the_log_are_left_out_of_a_new_inventory(url: &str) {
    // The kept original and the log are ours: a new inventory (and so scan and plan) leaves them out.
    let out = common::myrecode(Some(url), &["inventory", "--format", "json"]);
    let (stdout, stderr) = texts(&out);
    assert!(
        stdout.contains("\"posts\"") && !stdout.contains("posts_myrecode_"),
        "{stdout}\n{stderr}"
    );
}

/// rollback does not reverse a copy: it says so with the way back, exits 1, and keeps the
/// checkpoint cleanup needs; another job copying the table again is refused, by the
/// rehearsal and by the run before it writes anything.
async fn rollback_keeps_a_copy_saying_the_way_back_and_a_second_copy_is_refused(
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    job: &str,
) {
    // rollback does not reverse a copy: it says so with the way back, exits 1, and keeps the
    // checkpoint cleanup needs (it used to forget it, leaving the kept original to a hand DROP).
    // Another job copying it again is refused while the kept original is there, by the
    // rehearsal and by the run before it writes anything (it used to stop only when that
    // table's turn came, after the tables before it were recoded).
    for execute in [false, true] {
        let mut argv = vec!["run", job, "--job-id", "again"];
        if execute {
            argv.push("--execute");
        }
        let out = common::myrecode(Some(url), &argv);
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(
            stderr.contains("table 'posts' was already copied once"),
            "{stderr}"
        );
    }
    let again = scalar(
        c,
        "SELECT COUNT(*) FROM `_myrecode_checkpoint` WHERE job = 'again' AND ? <> ''",
        schema,
    )
    .await;
    assert_eq!(again, 0, "nothing written for the refused job");
    let ckpt = "SELECT COUNT(*) FROM `_myrecode_checkpoint` WHERE tbl = 'posts' AND ? <> ''";
    let before = scalar(c, ckpt, schema).await;
    let out = common::myrecode(Some(url), &["rollback", job]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("not undone: 'posts' was copied (strategy: copy)")
            && stdout.contains(
                "RENAME TABLE `posts` TO `posts_recoded`, `posts_myrecode_old` TO `posts`"
            ),
        "{stdout}"
    );
    let kept = scalar(c, ckpt, schema).await;
    assert!(
        before > 0 && kept == before,
        "the copy's checkpoint stays for cleanup: {before} -> {kept}"
    );
}

/// cleanup drops the kept original and the log; a second cleanup finds nothing.
async fn cleanup_drops_the_kept_original_and_the_log_once(
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    job: &str,
) {
    // cleanup drops the kept original and the log; a second cleanup finds nothing.
    let out = common::myrecode(Some(url), &["cleanup", job]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("dropped posts_myrecode_old"), "{stdout}");
    let left = scalar(
        c,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'posts\\_myrecode%'",
        schema,
    )
    .await;
    assert_eq!(left, 0);
    let out = common::myrecode(Some(url), &["cleanup", job]);
    assert!(
        texts(&out).0.contains("nothing to clean up"),
        "{:?}",
        texts(&out)
    );
}

/// (batches proven by the copy's own decisions, batches checked) from the run's `check:` line.
fn proven(stdout: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("check: posts:"))
        .unwrap_or_else(|| panic!("no check line: {stdout}"));
    let tail = line
        .split("; ")
        .find(|p| p.contains("batches proven"))
        .unwrap_or_else(|| panic!("no batch count: {line}"));
    let words: Vec<&str> = tail.split(' ').collect();
    (words[0].parse().unwrap(), words[2].parse().unwrap())
}

/// A row of the shadow changed behind the copy's back (no trigger sees it) after its batch
/// was copied: the sums of the copy's own decisions disagree, the server's comparison finds
/// the row, and it is copied again; the table ends exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_row_changed_behind_the_copys_back_is_found_by_the_check_and_copied_again() {
    let (mut c, victim) = tamper_a_copied_row("copy_tamper", "body = 'tampered'").await;
    let body: String = sqlx::query_scalar("SELECT body FROM posts WHERE id = ?")
        .bind(victim)
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(body, seeded(victim).0);
}

/// A column outside the job changed in the shadow behind the copy's back: the table's side
/// of the check's sums, which the batch's own read took (each row's hash of its key and other
/// columns), disagrees with the shadow's, the server's comparison finds the row, and it is
/// copied again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_column_outside_the_job_changed_behind_the_copys_back_is_found_by_the_check() {
    let (mut c, victim) = tamper_a_copied_row("copy_tamper_other", "code = 'tampered'").await;
    let code: String = sqlx::query_scalar("SELECT code FROM posts WHERE id = ?")
        .bind(victim)
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(code, format!("C-{victim:06}"));
}

/// Copies a seeded table in batches of 200 with long pauses, sets `set` on the shadow's last
/// copied row once two batches are copied (while that batch waits for its check, which
/// trails the copy by one batch), and asserts the check found exactly that row and that some
/// but not all batches were proven by the copy's own decisions. Returns a connection and the
/// row's id.
async fn tamper_a_copied_row(name: &str, set: &str) -> (sqlx::MySqlConnection, i64) {
    let db = test_database(name);
    let n = 3000;
    seed(&db.config, n).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 200, 1500);
    edit(&job, "target_batch_time: 100ms", "target_batch_time: 10s");
    let child = run_child(&db.config.url_with_secret(), job.to_str().unwrap());
    let mut c = db.config.connect_one().await.unwrap();
    wait_for(&mut c, "two batches copied", |(phase, read)| {
        phase == "copying" && *read >= 400
    })
    .await;
    let (_, read) = progress_of(&mut c).await.unwrap();
    let victim = read - 1; // ids from 0: the last row of the batch just copied
    let changed = sqlx::query(&format!("UPDATE posts_myrecode_new SET {set} WHERE id = ?"))
        .bind(victim)
        .execute(&mut c)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(changed, 1, "row {victim} is in the shadow");
    let out = wait_child(child, Duration::from_secs(120));
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("check: posts: every row compared with its copy; 1 differed"),
        "{stdout}"
    );
    let (own, all) = proven(&stdout);
    assert!(own >= 1 && own < all, "{own} of {all}: {stdout}");
    (c, victim)
}

/// The checkpoint's phase and rows read for `posts`, if it has one.
async fn progress_of(c: &mut sqlx::MySqlConnection) -> Option<(String, i64)> {
    sqlx::query(
        "SELECT CAST(phase AS CHAR), rows_read FROM _myrecode_checkpoint WHERE tbl = 'posts'",
    )
    .fetch_optional(c)
    .await
    .ok()
    .flatten()
    .map(|r| (r.get(0), r.get(1)))
}

/// Waits (at most 60 s) until `cond` holds for the checkpoint.
async fn wait_for(
    c: &mut sqlx::MySqlConnection,
    what: &str,
    cond: impl Fn(&(String, i64)) -> bool,
) {
    let since = Instant::now();
    loop {
        if progress_of(c).await.as_ref().is_some_and(&cond) {
            return;
        }
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}: {:?}",
            progress_of(c).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn wait_child(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let since = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if since.elapsed() > limit {
            child.kill().ok();
            panic!(
                "the run did not end within {limit:?}: {:?}",
                texts(&child.wait_with_output().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

async fn body_charset(c: &mut sqlx::MySqlConnection, schema: &str) -> String {
    sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'body'",
    )
    .bind(schema)
    .fetch_one(c)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_cutover_waits_for_the_command_and_carries_auto_increment_over() {
    let db = test_database("copy_manual");
    seed(&db.config, 500).await;
    exec_script(
        &db.config,
        &[
            // Row 0 would be renumbered by the ALTER (0 means "next value").
            "DELETE FROM posts WHERE id = 0",
            "ALTER TABLE posts MODIFY id INT NOT NULL AUTO_INCREMENT, AUTO_INCREMENT = 9000",
        ],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 100, 0);
    edit(&job, "cutover: auto", "cutover: manual");
    let url = db.config.url_with_secret();
    let mut c = db.config.connect_one().await.unwrap();
    let child = run_child(&url, job.to_str().unwrap());
    wait_for(&mut c, "the copy to catch up", |(phase, _)| {
        phase == "replaying"
    })
    .await;
    // Caught up, but waiting: the application goes on writing the old table, and it is replayed.
    let text = "Заказ отменён по просьбе покупателя";
    for _ in 0..10 {
        sqlx::query("UPDATE posts SET body = ? WHERE id = 7")
            .bind(bytes(Windows1251, text))
            .execute(&mut c)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        body_charset(&mut c, &db.name).await,
        "latin1",
        "no swap before `myrecode cutover`"
    );
    let out = common::myrecode(Some(&url), &["cutover", job.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let out = wait_child(child, Duration::from_secs(60));
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("ready: posts is copied and caught up"),
        "{stdout}"
    );
    assert_swapped(&mut c, &db.name).await;
    let got: String = sqlx::query_scalar("SELECT body FROM posts WHERE id = 7")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(got, text);
    let id = sqlx::query("INSERT INTO posts (code, body) VALUES ('new', 'новая запись')")
        .execute(&mut c)
        .await
        .unwrap()
        .last_insert_id();
    assert_eq!(id, 9000, "AUTO_INCREMENT carried over to the new table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_and_abort_from_another_terminal() {
    let db = test_database("copy_steer");
    seed(&db.config, 3000).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 50, 30);
    edit(&job, "target_batch_time: 100ms", "target_batch_time: 10ms");
    let jobp = job.to_str().unwrap();
    let url = db.config.url_with_secret();
    let mut c = db.config.connect_one().await.unwrap();
    let before: i64 = sqlx::query("CHECKSUM TABLE posts")
        .fetch_one(&mut c)
        .await
        .unwrap()
        .get(1);
    let child = run_child(&url, jobp);
    wait_for(&mut c, "the first batches", |(_, rows)| *rows > 0).await;
    let out = common::myrecode(Some(&url), &["pause", jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let paused = progress_of(&mut c).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        progress_of(&mut c).await.unwrap(),
        paused,
        "no batch while paused"
    );
    let out = common::myrecode(Some(&url), &["resume", jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    wait_for(&mut c, "progress after resume", |p| p != &paused).await;
    let out = common::myrecode(Some(&url), &["abort", jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let out = wait_child(child, Duration::from_secs(30));
    let (stdout, stderr) = texts(&out);
    assert!(
        stdout.contains("aborted: posts: copy objects removed"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(body_charset(&mut c, &db.name).await, "latin1");
    let after: i64 = sqlx::query("CHECKSUM TABLE posts")
        .fetch_one(&mut c)
        .await
        .unwrap()
        .get(1);
    assert_eq!(after, before, "an aborted copy never changed the table");
    for (sql, what) in [
        ("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", "triggers"),
        ("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'posts\\_myrecode%'", "side tables"),
    ] {
        assert_eq!(scalar(&mut c, sql, &db.name).await, 0, "{what} left after abort");
    }
    assert!(
        progress_of(&mut c).await.is_none(),
        "the aborted table's checkpoint is gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_server_throttles_the_copy() {
    // Threads_running is the whole server's: on the shared server every other test's
    // statements would count too, so this one runs on a server of its own.
    let server = ThrowawayServer::start().unwrap_or_else(|e| panic!("{e:#}"));
    let db = server.fresh_database("copy_throttle").unwrap();
    seed(&db.config, 200).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 100, 0);
    edit(
        &job,
        "cutover: auto",
        "cutover: auto\n  max_threads_running: 1",
    );
    // Another session busy for 3 s: Threads_running is 2 with our own status query.
    let busy_cfg = db.config.clone();
    let busy = tokio::spawn(async move {
        let mut b = busy_cfg.connect_one().await.unwrap();
        sqlx::query("SELECT SLEEP(3)")
            .execute(&mut b)
            .await
            .unwrap();
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let out = wait_child(
        run_child(&db.config.url_with_secret(), job.to_str().unwrap()),
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    busy.await.unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("throttled: Threads_running is 2, over max_threads_running 1"),
        "{stderr}"
    );
    assert!(
        took >= Duration::from_secs(2),
        "the run waited for the load to pass ({took:?})"
    );
    let mut c = db.config.connect_one().await.unwrap();
    assert_swapped(&mut c, &db.name).await;
}

/// The application's writes: cp1251 bytes through a latin1 connection until the cut-over, UTF-8 text after it.
struct Writer {
    last: BTreeMap<i64, Option<String>>,
    latencies: Vec<Duration>,
    switched_at: Option<usize>,
    trigger_races: u32,
    x: u64,
    n: i64,
}

impl Writer {
    fn new(n: i64) -> Self {
        Writer {
            last: BTreeMap::new(),
            latencies: Vec::new(),
            switched_at: None,
            trigger_races: 0,
            x: 0x9E37_79B9_7F4A_7C15,
            n,
        }
    }

    async fn step(&mut self, c: &mut sqlx::MySqlConnection, w: usize) {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        let id = (self.x % (self.n as u64 + 300)) as i64;
        let t0 = Instant::now();
        if self.x.is_multiple_of(5) {
            loop {
                let r = sqlx::query("DELETE FROM posts WHERE id = ?")
                    .bind(id)
                    .execute(&mut *c)
                    .await;
                match r {
                    Ok(_) => break,
                    // Known MariaDB 10.11 quirk (see the copy module docs): a statement prepared before the
                    // triggers were created can fail, naming the log table, until prepared afresh.
                    Err(e)
                        if common::errno(&e) == Some(1146)
                            && e.to_string().contains("_myrecode_log") =>
                    {
                        self.trigger_races += 1;
                        assert!(self.trigger_races < 10, "{e}");
                        // The server keeps failing that prepared statement: prepare it afresh.
                        sqlx::Connection::clear_cached_statements(&mut *c)
                            .await
                            .unwrap();
                    }
                    Err(e) => panic!("writer: {e}"),
                }
            }
            self.latencies.push(t0.elapsed());
            self.last.insert(id, None);
            return;
        }
        let text = format!(
            "{} (правка {w})",
            RUSSIAN[(self.x >> 8) as usize % RUSSIAN.len()].replace(['ё', 'Ё'], "е")
        );
        let sql = "INSERT INTO posts (id, code, body) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE body = VALUES(body)";
        let code = format!("W-{id}");
        if self.switched_at.is_none() {
            let r = sqlx::query(sql)
                .bind(id)
                .bind(&code)
                .bind(bytes(Windows1251, &text))
                .execute(&mut *c)
                .await;
            match r {
                Ok(_) => {
                    self.latencies.push(t0.elapsed());
                    self.last.insert(id, Some(text));
                    return;
                }
                // The column is utf8mb4 now: legacy bytes are refused, the application switches to UTF-8.
                Err(e) if e.to_string().contains("Incorrect string value") => {
                    self.switched_at = Some(w)
                }
                Err(e) => panic!("writer: {e}"),
            }
        }
        sqlx::query(sql)
            .bind(id)
            .bind(&code)
            .bind(&text)
            .execute(&mut *c)
            .await
            .unwrap();
        self.latencies.push(t0.elapsed());
        self.last.insert(id, Some(text));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_writer_keeps_every_write_across_the_cut_over() {
    let db = test_database("copy_writer");
    let n = 4000;
    seed(&db.config, n).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 200, 10);
    let mut c = db.config.connect_one().await.unwrap();
    let mut child = run_child(&db.config.url_with_secret(), job.to_str().unwrap());
    let mut w = Writer::new(n);
    let mut writes = 0;
    while child.try_wait().unwrap().is_none() {
        w.step(&mut c, writes).await;
        writes += 1;
    }
    // A few more after the job: the application goes on, on the new table.
    for _ in 0..50 {
        w.step(&mut c, writes).await;
        writes += 1;
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    assert!(
        writes > 300,
        "the writer ran alongside the job ({writes} writes)"
    );
    assert_swapped(&mut c, &db.name).await;
    assert_rows(&mut c, &expected(n, &w)).await;
    let mut lat = w.latencies.clone();
    lat.sort();
    let p99 = lat[(lat.len() * 99 / 100).min(lat.len() - 1)];
    println!(
        "{}\nwriter: switched to UTF-8 at write {:?}, {} retried at trigger creation; {}",
        pause_line(&stdout),
        w.switched_at,
        w.trigger_races,
        latency_line(&w)
    );
    assert!(
        p99 <= Duration::from_millis(500),
        "the writer's p99 latency {p99:?} is over the 0.5 s target"
    );
}

/// A row the application rewrites in UTF-8 after the copy read it ahead as cp1251 holds a
/// byte cp1251 lacks (`И` is `D0 98`, and cp1251 has no 0x98), and a KOI8-R row it rewrites
/// in cp1251 holds box drawing when read as KOI8-R (`«` is `AB`), which the copy's `CASE` in
/// cp1251 lacks: the server's conversion of either in the copy's statement is refused under
/// strict mode. The range is read again and decided
/// afresh; the copy goes on, and every row ends as the application wrote it. `engine`: the
/// table's. Under `STRICT_TRANS_TABLES` (the servers' default) a MyISAM shadow takes such a
/// value as `?` with a warning unless it is the statement's first row, so `refused` says
/// whether the test must see a refusal; either way the row's replay puts it right.
async fn a_row_rewritten_after_its_read_ahead(engine: &str, refused: bool) {
    let db = test_database(&format!("copy_stale_{}", engine.to_lowercase()));
    let n = 2000;
    seed(&db.config, n).await;
    exec_script(&db.config, &[&format!("ALTER TABLE posts ENGINE={engine}")]).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 200, 0);
    // A few steps, each holding its write back for the writer's rewrites to land on rows read ahead.
    edit(&job, "target_batch_time: 100ms", "target_batch_time: 5s");
    let mut child = Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["run", job.to_str().unwrap(), "--execute", "--verbose"])
        .env("MYSQL_URL", db.config.url_with_secret())
        .env("MYRECODE_TEST_WRITE_HOLD_MS", "150")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn myrecode");
    let mut c = db.config.connect_one().await.unwrap();
    let mut want: BTreeMap<i64, String> = (0..n).map(|id| (id, seeded(id).0)).collect();
    let (mut x, mut writes) = (0x9E37_79B9_7F4A_7C15u64, 0);
    let mut odd_switched = false;
    while child.try_wait().unwrap().is_none() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let id = (x % n as u64) as i64;
        let (text, sent) = if id % 2 == 0 || odd_switched {
            // Even ids hold cp1251, the column's main reading; the application now sends UTF-8.
            let text = format!("ИЗМЕНЕНО И ПРОВЕРЕНО, правка {writes}");
            let sent = text.as_bytes().to_vec();
            (text, sent)
        } else {
            // Odd ids hold KOI8-R, written by key in the column's cp1251: cp1251 bytes of
            // « » № read as KOI8-R are box drawing, which cp1251 lacks.
            let text = format!("«Изменено» № {writes}, проверено");
            (text.clone(), bytes(Windows1251, &text))
        };
        let r = sqlx::query("UPDATE posts SET body = ? WHERE id = ?")
            .bind(sent)
            .bind(id)
            .execute(&mut c)
            .await;
        match r {
            Ok(_) => {
                want.insert(id, text);
            }
            // The column is utf8mb4 now: legacy bytes are refused, the application switches to UTF-8.
            Err(e) if id % 2 == 1 && e.to_string().contains("Incorrect string value") => {
                odd_switched = true
            }
            Err(e) => panic!("writer: {e}"),
        }
        writes += 1;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        !refused || stderr.contains("refused to convert a value read ahead"),
        "no write was refused ({writes} rewrites): the test missed its window\n{stdout}\n{stderr}"
    );
    assert_swapped(&mut c, &db.name).await;
    assert_rows(&mut c, &want).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_rewritten_in_utf8_after_its_read_ahead_is_read_again_innodb() {
    a_row_rewritten_after_its_read_ahead("InnoDB", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_rewritten_in_utf8_after_its_read_ahead_ends_right_myisam() {
    a_row_rewritten_after_its_read_ahead("MyISAM", false).await;
}

/// Rows the table should hold: the seeded ones with the writer's last writes applied.
fn expected(n: i64, w: &Writer) -> BTreeMap<i64, String> {
    let mut want: BTreeMap<i64, String> = (0..n).map(|id| (id, seeded(id).0)).collect();
    for (id, v) in &w.last {
        match v {
            Some(t) => want.insert(*id, t.clone()),
            None => want.remove(id),
        };
    }
    want
}

/// Fails with the first differing rows unless the table holds exactly `want`.
async fn assert_rows(c: &mut sqlx::MySqlConnection, want: &BTreeMap<i64, String>) {
    let got: BTreeMap<i64, String> = sqlx::query("SELECT id, body FROM posts ORDER BY id")
        .fetch_all(&mut *c)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let differ: Vec<&i64> = want
        .keys()
        .chain(got.keys().filter(|k| !want.contains_key(k)))
        .filter(|k| want.get(k) != got.get(k))
        .collect();
    assert!(
        differ.is_empty(),
        "{} rows differ (missing, extra or wrong), e.g. {:?}",
        differ.len(),
        differ
            .iter()
            .take(6)
            .map(|k| (k, want.get(k), got.get(k)))
            .collect::<Vec<_>>()
    );
}

/// p50, p99 and max of the writer's statement latencies, in ms, for printing.
fn latency_line(w: &Writer) -> String {
    let mut lat = w.latencies.clone();
    lat.sort();
    let at = |q: usize| lat[(lat.len() * q / 100).min(lat.len() - 1)].as_secs_f64() * 1000.0;
    format!(
        "statement latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms over {} writes",
        at(50),
        at(99),
        lat.last().unwrap().as_secs_f64() * 1000.0,
        lat.len()
    )
}

fn run_child_env(url: &str, job: &str, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["run", job, "--execute"])
        .env("MYSQL_URL", url)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn myrecode")
}

/// A write every this often at most: an application writing faster than any replay can
/// follow never lets the log drain below the cut-over's threshold, and whether the kills
/// then reach the cut-over came down to the machine's load (2 kills of 88 with the copy's
/// other tests running beside it, 13 of 22 alone).
const WRITE_EVERY: Duration = Duration::from_millis(5);

/// Runs the writer on its own connection until `stop`, so a blocked write never delays the
/// test's clock; at most one write every [`WRITE_EVERY`] (200 a second on 1,500 rows).
fn spawn_writer(
    cfg: &ConnectionConfig,
    n: i64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<Writer> {
    let cfg = cfg.clone();
    tokio::spawn(async move {
        let mut c = cfg.connect_one().await.unwrap();
        let mut w = Writer::new(n);
        let mut writes = 0;
        let mut tick = tokio::time::interval(WRITE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            tick.tick().await;
            w.step(&mut c, writes).await;
            writes += 1;
        }
        w
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_instants_then_rerun_loses_nothing() {
    let db = test_database("copy_kill");
    let n = 1500;
    seed(&db.config, n).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 20, 5);
    // Batches of a few rows with pauses: the copy and the check last seconds, however fast the engine.
    edit(&job, "target_batch_time: 100ms", "target_batch_time: 1ms");
    let url = db.config.url_with_secret();
    let jobp = job.to_str().unwrap();
    let mut c = db.config.connect_one().await.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = spawn_writer(&db.config, n, stop.clone());
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut phases = Vec::new();
    let mut in_cutover = 0;
    const KILLS: usize = 22;
    // Every killed run holds its cut-over lock 1.5 s (a test hook), longer than it lives:
    // the job cannot finish before the last kill, and kills after the copy land in the cut-over.
    // At least KILLS, and on until three landed inside the cut-over: a loaded machine copies
    // slower, and the kills must reach the cut-over whatever the pace.
    let mut kill = 0;
    while kill < KILLS || (in_cutover < 3 && kill < 4 * KILLS) {
        kill += 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut child = run_child_env(&url, jobp, &[("MYRECODE_TEST_CUTOVER_HOLD_MS", "1500")]);
        let life = if kill % 3 == 2 {
            30 + x % 300
        } else {
            100 + x % 900
        };
        tokio::time::sleep(Duration::from_millis(life)).await;
        assert!(
            child.try_wait().unwrap().is_none(),
            "run {kill} ended before its kill (phases so far {phases:?}): {:?}",
            texts(&child.wait_with_output().unwrap())
        );
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // A run killed before it wrote anything has no checkpoint table yet.
        let phase: Option<String> =
            match sqlx::query_scalar("SELECT CAST(phase AS CHAR) FROM _myrecode_checkpoint")
                .fetch_optional(&mut c)
                .await
            {
                Ok(p) => p,
                Err(e) if common::errno(&e) == Some(1146) => None,
                Err(e) => panic!("{e}"),
            };
        // The sentry outlives a run killed inside its cut-over.
        let sentry: i64 = scalar(
            &mut c,
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts_myrecode_old' AND TABLE_COMMENT LIKE '%sentry%'",
            &db.name,
        )
        .await;
        in_cutover += sentry;
        phases.push(format!(
            "{}{}",
            phase.unwrap_or_default(),
            if sentry > 0 { "+cut-over" } else { "" }
        ));
    }
    assert!(
        phases.iter().any(|p| p == "copying") && in_cutover >= 3,
        "kills should land in the copy and in the cut-over: {phases:?}"
    );
    let out = run_child(&url, jobp).wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let w = writer.await.unwrap();
    assert_swapped(&mut c, &db.name).await;
    assert_rows(&mut c, &expected(n, &w)).await;
    println!(
        "{kill} SIGKILLs ({in_cutover} inside the cut-over; checkpoint phase at each: {phases:?}); writer: {}; {}",
        latency_line(&w),
        pause_line(&stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rehearsal_describes_the_copy_and_a_trigger_with_legacy_text_is_no_refusal() {
    let db = test_database("copy_refuse");
    seed(&db.config, 50).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 100, 0);
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("online copy into posts_myrecode_new"),
        "{stdout}"
    );
    // Non-ASCII text in a body written under a latin1 client: the cut-over recreates it with
    // its text read as the table's values are, so the rehearsal accepts it and creates nothing.
    exec_script(
        &db.config,
        &[
            "SET NAMES latin1",
            "CREATE TRIGGER audit AFTER UPDATE ON posts FOR EACH ROW SET @x = 'é'",
        ],
    )
    .await;
    let out = common::myrecode(Some(&url), &["run", job.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stdout.contains("refused"), "{stdout}");
    let mut c = db.config.connect_one().await.unwrap();
    let ours = scalar(
        &mut c,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'posts\\_myrecode%'",
        &db.name,
    )
    .await;
    assert_eq!(ours, 0, "nothing created for a refused table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_that_collide_on_a_unique_index_once_recoded_stop_the_copy_and_lose_nothing() {
    let db = test_database("copy_unique");
    seed(&db.config, 100).await;
    let name = "Новости сайта и объявления";
    exec_script(
        &db.config,
        &["ALTER TABLE posts ADD UNIQUE KEY u_body (body(100))"],
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    // The same text twice: once as cp1251 bytes, once as UTF-8 bytes (both through latin1).
    for (id, stored) in [
        (1000, bytes(Windows1251, name)),
        (1001, name.as_bytes().to_vec()),
    ] {
        sqlx::query("INSERT INTO posts (id, code, body) VALUES (?, 'dup', ?)")
            .bind(id)
            .bind(stored)
            .execute(&mut c)
            .await
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 500, 0);
    let out = run_child(&db.config.url_with_secret(), job.to_str().unwrap())
        .wait_with_output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("two rows become equal on a unique index once recoded")
            && stderr.contains("u_body"),
        "{stderr}"
    );
    assert_eq!(body_charset(&mut c, &db.name).await, "latin1", "no swap");
    let both: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM posts WHERE id IN (1000, 1001)")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(both, 2, "both rows still there");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_table_from_an_older_build_gains_the_phase_column() {
    let db = test_database("copy_oldckpt");
    seed(&db.config, 40).await;
    exec_script(
        &db.config,
        &["CREATE TABLE _myrecode_checkpoint (job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, \
           fingerprint VARCHAR(32) NOT NULL, priors LONGTEXT NOT NULL, last_key BLOB NULL, done TINYINT NOT NULL DEFAULT 0, \
           rows_read BIGINT NOT NULL DEFAULT 0, rows_changed BIGINT NOT NULL DEFAULT 0, \
           rows_quarantined BIGINT NOT NULL DEFAULT 0, rows_conflicted BIGINT NOT NULL DEFAULT 0, \
           updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), \
           PRIMARY KEY (job, tbl)) ENGINE=InnoDB"],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(dir.path(), &db.name, 100, 0);
    let out = run_child(&db.config.url_with_secret(), job.to_str().unwrap())
        .wait_with_output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let mut c = db.config.connect_one().await.unwrap();
    let phase: String = sqlx::query_scalar(
        "SELECT CAST(phase AS CHAR) FROM _myrecode_checkpoint WHERE tbl = 'posts'",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(phase, "done");
}

//! Kill -9 at random instants, rerun until done: nothing lost, nothing recoded twice.

use crate::common;
use common::legacy::*;
use common::{exec_script, texts};
use myrecode::codec::Encoding::{self, *};
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::test_database;
use sqlx::Row;
use std::collections::BTreeSet;

use std::time::Duration;

/// Rows of the kill test's table: enough that 20 kills land before the end even when the
/// batch size tunes itself up on a fast machine.
const ROWS: i64 = 200_000;

/// What row `id` holds before the run, and what it must hold after (`None`: left alone).
fn seeded(id: i64) -> (Vec<u8>, Option<String>) {
    let texts: Vec<&str> = RUSSIAN
        .iter()
        .chain(UKRAINIAN)
        .copied()
        .filter(|t| !t.contains(['ё', 'Ё']))
        .collect();
    match id % 100 {
        0 => (png_blob(id as u8), None),
        1 => (format!("ORDER-{id}-OK").into_bytes(), None),
        2 if id % 1000 == 2 => {
            let mut v = format!("Order {id} ").into_bytes();
            v.extend_from_slice(&[0x9A, 0x9B]);
            (v, None)
        }
        n => {
            let enc: Encoding = [Windows1251, Koi8R, Ibm866][(n % 3) as usize];
            // Ukrainian letters exist in cp1251 but not in KOI8-R or CP866.
            let ukrainian =
                texts[(id as usize) % texts.len()].contains(['і', 'ї', 'є', 'ґ', 'І', 'Ї', 'Є']);
            let enc = if ukrainian { Windows1251 } else { enc };
            let text = format!("{} #{id}", texts[(id as usize) % texts.len()]);
            (bytes(enc, &text), Some(text))
        }
    }
}

fn undecidable(id: i64) -> bool {
    id % 100 == 2 && id % 1000 == 2
}

/// Creates `posts` with rows `0..rows` as [`seeded`] describes them.
async fn seed(cfg: &ConnectionConfig, rows: i64) {
    exec_script(
        cfg,
        &["CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, body BLOB) ENGINE=InnoDB"],
    )
    .await;
    let mut c = cfg.connect_one().await.unwrap();
    for start in (0..rows).step_by(1000) {
        let ids: Vec<i64> = (start..(start + 1000).min(rows)).collect();
        let sql = format!(
            "INSERT INTO posts (id, body) VALUES {}",
            vec!["(?, ?)"; ids.len()].join(", ")
        );
        let mut q = sqlx::query(&sql);
        for id in &ids {
            q = q.bind(id).bind(seeded(*id).0);
        }
        q.execute(&mut c).await.unwrap();
    }
}

/// Writes a job that recodes `posts.body` in place, with the given pacing.
fn posts_job(
    dir: &std::path::Path,
    schema: &str,
    batch: u32,
    target_ms: u32,
    pause_ms: u32,
) -> std::path::PathBuf {
    let path = dir.join("posts.yaml");
    let text = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: {batch}\n  target_batch_time: {target_ms}ms\n  \
         pause_between_batches: {pause_ms}ms\ntables:\n  - name: posts\n    strategy: in-place\n    columns:\n      \
         - name: body\n        source: auto\n        target: BLOB\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// What each row must hold after a run, when the application did not touch it.
fn expected(id: i64) -> Vec<u8> {
    match seeded(id) {
        (_, Some(text)) => text.into_bytes(),
        (stored, None) => stored,
    }
}

/// Rows the job's checkpoint says were read (0 before it has one).
async fn rows_read(c: &mut sqlx::MySqlConnection) -> i64 {
    sqlx::query("SELECT rows_read FROM _myrecode_checkpoint")
        .fetch_optional(c)
        .await
        .ok()
        .flatten()
        .map_or(0, |r| r.get(0))
}

/// The first column of a one-row query, e.g. a count.
async fn scalar(c: &mut sqlx::MySqlConnection, sql: &str) -> i64 {
    sqlx::query(sql).fetch_one(c).await.unwrap().get(0)
}

/// Ids of `posts` rows whose body is not `want(id)`.
async fn differing(c: &mut sqlx::MySqlConnection, want: impl Fn(i64) -> Vec<u8>) -> Vec<i64> {
    sqlx::query("SELECT id, body FROM posts ORDER BY id")
        .fetch_all(c)
        .await
        .unwrap()
        .iter()
        .filter(|r| r.get::<Vec<u8>, _>(1) != want(r.get(0)))
        .map(|r| r.get(0))
        .collect()
}

fn run_child(url: &str, job: &str) -> std::process::Child {
    common::spawn_myrecode(url, &["run", job, "--execute"], &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_instants_loses_nothing_and_recodes_nothing_twice() {
    let db = test_database("kill");
    seed(&db.config, ROWS).await;
    let dir = tempfile::tempdir().unwrap();
    // Paced (as production throttling would) so that 20 kills land before the end on any machine.
    let job = posts_job(dir.path(), &db.name, 200, 50, 30);
    let url = db.config.url_with_secret();
    let jobp = job.to_str().unwrap();

    // A small deterministic generator: the instants differ run to run of the loop, not between test runs.
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut kills = 0;
    let mut progress = Vec::new();
    while kills < 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut child = run_child(&url, jobp);
        tokio::time::sleep(Duration::from_millis(100 + x % 400)).await;
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            let (stdout, stderr) = texts(&out);
            assert_eq!(
                out.status.code(),
                Some(1),
                "a run ended early and not done: {stdout}\n{stderr}"
            );
            break; // finished before we could kill it
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        let mut c = db.config.connect_one().await.unwrap();
        progress.push(rows_read(&mut c).await);
    }
    assert!(
        kills >= 20,
        "only {kills} kills before the job finished: make the table bigger"
    );
    assert!(
        progress.windows(2).all(|w| w[0] <= w[1]),
        "checkpoints only move forward: {progress:?}"
    );
    let out = run_child(&url, jobp).wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "done with quarantined values: {stdout}\n{stderr}"
    );

    let mut c = db.config.connect_one().await.unwrap();
    let count = scalar(&mut c, "SELECT COUNT(*) FROM posts").await;
    assert_eq!(count, ROWS);
    let changed = (0..ROWS).filter(|id| seeded(*id).1.is_some()).count() as i64;
    let wrong = differing(&mut c, expected).await;
    assert!(
        wrong.is_empty(),
        "{} rows differ from the seeded truth, e.g. {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    let backups = scalar(&mut c, "SELECT COUNT(*) FROM _myrecode_backup").await;
    assert_eq!(
        backups, changed,
        "exactly one backup per changed row: nothing recoded twice"
    );
    let q: Vec<i64> = sqlx::query("SELECT key_bytes FROM _myrecode_quarantine ORDER BY id")
        .fetch_all(&mut c)
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let k = myrecode::bookkeeping::keycodec::unpack(&r.get::<Vec<u8>, _>(0)).unwrap();
            String::from_utf8(k[0].clone()).unwrap().parse().unwrap()
        })
        .collect();
    let got: BTreeSet<i64> = q.iter().copied().collect();
    let want: BTreeSet<i64> = (0..ROWS).filter(|id| undecidable(*id)).collect();
    assert_eq!(q.len(), got.len(), "each undecidable row listed once");
    assert_eq!(
        got, want,
        "quarantine lists exactly the seeded undecidable rows"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_writer_never_loses_a_write() {
    let db = test_database("writer");
    let n: i64 = 6000;
    seed(&db.config, n).await;
    let mut c = db.config.connect_one().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let job = posts_job(dir.path(), &db.name, 50, 20, 10);
    let mut child = run_child(&db.config.url_with_secret(), job.to_str().unwrap());
    // The application: rewrites random rows with new UTF-8 text and inserts new ones while the job runs.
    let mut last: std::collections::BTreeMap<i64, Vec<u8>> = Default::default();
    let mut x: u64 = 88172645463325252;
    let mut writes = 0;
    while child.try_wait().unwrap().is_none() && writes < 20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let id = (x % (n as u64 + 200)) as i64;
        let value = format!("Обновлено приложением, запись {writes}").into_bytes();
        sqlx::query("INSERT INTO posts (id, body) VALUES (?, ?) ON DUPLICATE KEY UPDATE body = VALUES(body)")
            .bind(id)
            .bind(value.clone())
            .execute(&mut c)
            .await
            .unwrap();
        last.insert(id, value);
        writes += 1;
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.code().unwrap() <= 1, "{}", texts(&out).1);
    assert!(
        writes > 200,
        "the writer ran alongside the job ({writes} writes)"
    );
    let lost = differing(&mut c, |id| {
        last.get(&id).cloned().unwrap_or_else(|| expected(id))
    })
    .await;
    assert!(
        lost.is_empty(),
        "{} rows differ from the writer's last write or the truth: {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    let conflicts = scalar(&mut c, "SELECT rows_conflicted FROM _myrecode_checkpoint").await;
    println!(
        "writer: {writes} writes during the run; {conflicts} compare-and-set conflicts re-read"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_survives_a_server_restart() {
    let server =
        myrecode::db::throwaway::ThrowawayServer::start().unwrap_or_else(|e| panic!("{e}"));
    let db = server.fresh_database("restart").unwrap();
    let n: i64 = 8000;
    seed(&db.config, n).await;
    let dir = tempfile::tempdir().unwrap();
    let job = posts_job(dir.path(), &db.name, 100, 20, 20);
    let child = run_child(&db.config.url_with_secret(), job.to_str().unwrap());
    tokio::time::sleep(Duration::from_millis(800)).await;
    server
        .stop()
        .expect("stop the server (needs a local mariadbd, not MYSQL_TEST_URL)");
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.start_again().expect("restart the server");
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "finished (with quarantined rows) across the restart: {stdout}\n{stderr}"
    );
    let mut c = db.config.connect_one().await.unwrap();
    assert_eq!(differing(&mut c, expected).await, Vec::<i64>::new());
    let backups = scalar(&mut c, "SELECT COUNT(*) FROM _myrecode_backup").await;
    assert_eq!(
        backups,
        (0..n).filter(|id| seeded(*id).1.is_some()).count() as i64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_batch_and_says_how_to_resume() {
    let db = test_database("sigterm");
    // Big enough that the job is still running when its first checkpoint shows, however fast
    // the machine (5,000 rows once finished inside the 700 ms a fixed sleep gave it).
    seed(&db.config, 50_000).await;
    let dir = tempfile::tempdir().unwrap();
    let job = posts_job(dir.path(), &db.name, 100, 20, 50);
    let url = db.config.url_with_secret();
    let mut child = run_child(&url, job.to_str().unwrap());
    let mut c = db.config.connect_one().await.unwrap();
    let started = std::time::Instant::now();
    loop {
        if rows_read(&mut c).await > 0 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the job ended before its first checkpoint"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no checkpoint after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("Resume with: myrecode run"), "{stdout}");
    assert!(stdout.contains("(not finished)"), "{stdout}");
    let out = run_child(&url, job.to_str().unwrap())
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", texts(&out).1);
    let mut c = db.config.connect_one().await.unwrap();
    assert_eq!(differing(&mut c, expected).await, Vec::<i64>::new());
}

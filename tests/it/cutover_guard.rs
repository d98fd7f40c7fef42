//! The cut-over's guard, against a real server: a run is SIGKILLed at each step of its
//! cut-over in turn (a test hook holding each: the sentries placed and the moves recorded;
//! the lock held with the logs drained; the tables closed with the moves made; the rename
//! done), while an application renumbers, deletes and inserts authors throughout (each
//! renumbering cascading into `books`, outside the job, and firing the table's own trigger).
//! After each kill, with no rerun, the application writes again within a moment: the killed
//! run's guard settles the cut-over by itself. Every write that failed did so within that
//! moment after a kill. The next run goes on; the last finishes. At the end every author,
//! book and audit row is what the application's successful writes made: no write skipped
//! its cascade or its trigger.

use crate::common::{errno, texts};
use crate::torn_cutover::{
    authors_with_their_books_and_bios_and_a_job_copying_two_tables, books_parent, count, open,
};
use sqlx::{Executor, MySqlConnection};
use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long after a kill the application may still see its writes fail.
const SETTLED_WITHIN: Duration = Duration::from_secs(3);

/// One write of the application's: when it started and ended, and the error number if it
/// failed.
#[derive(Debug, Clone)]
struct Write {
    start: Instant,
    end: Instant,
    failed: Option<u16>,
}

/// What the application's successful writes made.
#[derive(Debug, Default)]
struct Model {
    /// Author ids, and how many books each has.
    authors: std::collections::BTreeMap<i64, i64>,
    /// The audit trigger's rows, in order.
    audit: Vec<String>,
    writes: Vec<Write>,
}

/// The application: every 15 ms renumbers, deletes or inserts an author, recording each
/// write and its outcome.
fn application(
    url: String,
    stop: Arc<AtomicBool>,
    model: Arc<Mutex<Model>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let cfg = myrecode::db::connect::ConnectionConfig::from_url(&url).unwrap();
        let mut c = cfg.connect_one().await.unwrap();
        c.execute("SET SESSION lock_wait_timeout = 60")
            .await
            .unwrap();
        let mut i: i64 = 0;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let (sql, change) = {
                let m = model.lock().unwrap();
                let pick = m
                    .authors
                    .keys()
                    .nth((i as usize * 7) % m.authors.len())
                    .copied();
                match (i % 3, pick) {
                    (0, Some(a)) => (
                        format!("UPDATE authors SET id = {} WHERE id = {a}", a + 100_000),
                        (a, a + 100_000),
                    ),
                    (1, Some(a)) if m.authors.len() > 100 => {
                        (format!("DELETE FROM authors WHERE id = {a}"), (a, 0))
                    }
                    _ => (
                        format!("INSERT INTO authors (id) VALUES ({})", 50_000 + i),
                        (0, 50_000 + i),
                    ),
                }
            };
            let start = Instant::now();
            let r = c.execute(sql.as_str()).await;
            let end = Instant::now();
            let failed = r.err().map(|e| errno(&e).unwrap_or(0));
            record(&model, change, Write { start, end, failed });
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    })
}

/// Notes one write in the model, and what it changed if it went through.
fn record(model: &Mutex<Model>, change: (i64, i64), w: Write) {
    let mut m = model.lock().unwrap();
    if w.failed.is_none() {
        match change {
            (0, new) => {
                m.authors.insert(new, 0);
            }
            (old, 0) => {
                m.authors.remove(&old);
            }
            (old, new) => {
                let books = m.authors.remove(&old).unwrap();
                m.authors.insert(new, books);
                m.audit.push(format!("author {old} now {new}"));
            }
        }
    }
    m.writes.push(w);
}

/// How long after `killed` the first write begun after it went through, if one has.
fn first_write_after(model: &Mutex<Model>, killed: Instant) -> Option<Duration> {
    let m = model.lock().unwrap();
    (m.writes.iter())
        .find(|w| w.start > killed && w.failed.is_none())
        .map(|w| w.end - killed)
}

/// Starts `run --execute` with one step's hold.
fn run_holding(s: &crate::torn_cutover::Scene, hook: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["run", &s.jobp, "--execute"])
        .env("MYSQL_URL", &s.url)
        .env(hook, "15000")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Whether a table of that name exists in the schema.
async fn exists(c: &mut MySqlConnection, schema: &str, table: &str) -> bool {
    count(
        c,
        &format!(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{schema}' AND TABLE_NAME = '{table}'"
        ),
    )
    .await
        > 0
}

/// Whether the run stands at `step` (each step's hold begins right after what this sees).
async fn at(c: &mut MySqlConnection, schema: &str, step: &str) -> bool {
    match step {
        // The sentry placed and the spare log made (the last thing before that hold).
        "before the lock" => exists(c, schema, "authors_myrecode_log2").await,
        // An application write waits on the cut-over's lock.
        "under the lock" => {
            count(
                c,
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%' \
                 AND INFO LIKE '%authors%' AND INFO NOT LIKE '%myrecode%'",
            )
            .await
                > 0
        }
        // The table's own trigger on the shadow, its log dropped.
        "closed and moved" => {
            count(
                c,
                &format!(
                    "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{schema}' \
                     AND TRIGGER_NAME = 'authors_audit' AND EVENT_OBJECT_TABLE = 'authors_myrecode_new'"
                ),
            )
            .await
                > 0
                && !open(c, schema).await
        }
        // Swapped: the shadow is gone.
        _ => !exists(c, schema, "authors_myrecode_new").await,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_at_any_step_of_its_cut_over_leaves_the_application_writing() {
    let mut s =
        authors_with_their_books_and_bios_and_a_job_copying_two_tables("cutover_guard").await;
    let name = s.db.name.clone();
    let model = Arc::new(Mutex::new(Model::default()));
    {
        let mut m = model.lock().unwrap();
        m.authors = (1..=200).map(|a| (a, 2)).collect();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let app = application(s.url.clone(), stop.clone(), model.clone());
    let steps = [
        ("before the lock", "MYRECODE_TEST_BEFORE_LOCK_HOLD_MS"),
        ("under the lock", "MYRECODE_TEST_CUTOVER_HOLD_MS"),
        ("closed and moved", "MYRECODE_TEST_CLOSED_HOLD_MS"),
        ("after the rename", "MYRECODE_TEST_AFTER_RENAME_HOLD_MS"),
    ];
    let mut kills = Vec::new();
    for (step, hook) in steps {
        let mut run = run_holding(&s, hook);
        let since = Instant::now();
        let mut reached = false;
        while since.elapsed() < Duration::from_secs(120) && run.try_wait().unwrap().is_none() {
            if at(&mut s.c, &name, step).await {
                reached = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Inside the hold (the step's last statement is done).
        tokio::time::sleep(Duration::from_millis(300)).await;
        run.kill().unwrap(); // SIGKILL, the run alone: its guard lives on
        let killed = Instant::now();
        let out = run.wait_with_output().unwrap();
        let (stdout, stderr) = texts(&out);
        assert!(reached, "the run never stood {step}\n{stdout}\n{stderr}");
        // No rerun: the application writes again, by the guard alone.
        let mut since_kill = None;
        while killed.elapsed() < Duration::from_secs(20) {
            since_kill = first_write_after(&model, killed);
            if since_kill.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let took = since_kill
            .unwrap_or_else(|| panic!("killed {step}: no write went through since\n{stderr}"));
        assert!(
            took <= SETTLED_WITHIN,
            "killed {step}: the first write went through after {took:?}\n{stderr}"
        );
        if step != "after the rename" {
            assert!(
                open(&mut s.c, &name).await,
                "killed {step}: authors stays closed\n{stderr}"
            );
            assert_eq!(
                books_parent(&mut s.c, &name).await,
                ["authors"],
                "killed {step}"
            );
        }
        kills.push((step, killed, took, stderr));
    }
    let out = crate::common::myrecode(Some(&s.url), &["run", &s.jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    app.await.unwrap();

    let m = std::mem::take(&mut *model.lock().unwrap());
    // Every failed write failed within a moment of a kill.
    for w in m.writes.iter().filter(|w| w.failed.is_some()) {
        let near = kills
            .iter()
            .any(|(_, k, _, _)| w.end >= *k && w.end <= *k + SETTLED_WITHIN);
        assert!(near, "a write failed ({:?}) away from any kill", w.failed);
    }
    let ok = m.writes.iter().filter(|w| w.failed.is_none()).count();
    assert!(ok > 100, "the application wrote {ok} times");
    // Every author, book and audit row is what the successful writes made.
    let c = &mut s.c;
    let ids: BTreeSet<i64> = sqlx::query_scalar("SELECT id FROM authors")
        .fetch_all(&mut *c)
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(ids, m.authors.keys().copied().collect::<BTreeSet<_>>());
    for (author, books) in &m.authors {
        let n = count(
            c,
            &format!("SELECT COUNT(*) FROM books WHERE author_id = {author}"),
        )
        .await;
        assert_eq!(n, *books, "books of author {author}");
    }
    assert_eq!(
        count(c, "SELECT COUNT(*) FROM books").await,
        m.authors.values().sum::<i64>()
    );
    let audit: Vec<String> = sqlx::query_scalar("SELECT what FROM audit ORDER BY id")
        .fetch_all(&mut *c)
        .await
        .unwrap();
    assert_eq!(audit, m.audit);
    let charset: String = sqlx::query_scalar(
        "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'authors' AND COLUMN_NAME = 'name'",
    )
    .bind(&name)
    .fetch_one(&mut *c)
    .await
    .unwrap();
    assert_eq!(charset, "utf8mb4");
    for (step, _, took, stderr) in &kills {
        eprintln!(
            "killed {step}: the application wrote again {} ms after the kill",
            took.as_millis()
        );
        if *step == "closed and moved" {
            assert!(stderr.contains("its guard settled it"), "{stderr}");
        }
    }
}

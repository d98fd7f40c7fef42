//! A run killed inside its cut-over after the first move the application could see (a child
//! outside the job constrained by the shadow, the table's own trigger taken off it) and
//! before the rename, against a real server, its guard gone with it (as when the run's host
//! is lost: `MYRECODE_TEST_NO_GUARD`; `cutover_guard.rs` shows the guard settling such a
//! kill by itself). Such a cut-over closes the table first (its
//! drained change log dropped under the lock): until the next run settles the moves, every
//! write to the copied table fails, its trigger finding no log (1146), where it had gone
//! through without its cascade or its trigger, and `status` names the closed tables; reads
//! and the outside child's own writes go on. A MyISAM table closed with it changes its row all the same (its trigger fails after
//! the change): the rerun compares it with its copy again and keeps the change. The rerun
//! (having first stopped a rename the killed run would have left queued) opens the tables,
//! swaps, and afterwards a renumbered or deleted author cascades into its books and fires
//! its trigger.

use crate::common;
use common::legacy::bytes;
use common::{errno, texts};
use myrecode::codec::Encoding::Windows1251;
use myrecode::db::throwaway::{test_database, TestDatabase};
use sqlx::{Executor, MySqlConnection};

use std::time::{Duration, Instant};

const NAMES: [&str; 4] = ["Пушкин", "Гоголь", "Чехов", "Толстой"];

pub(crate) async fn count(c: &mut MySqlConnection, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(c).await.unwrap()
}

/// Whether `authors` has its change log (a cut-over that closed it has not been settled).
pub(crate) async fn open(c: &mut MySqlConnection, schema: &str) -> bool {
    sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'authors_myrecode_log'",
    )
    .bind(schema)
    .fetch_one(c)
    .await
    .unwrap()
        > 0
}

/// The table `books`' constraint on its author references.
pub(crate) async fn books_parent(c: &mut MySqlConnection, schema: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT CAST(REFERENCED_TABLE_NAME AS CHAR) FROM information_schema.REFERENTIAL_CONSTRAINTS \
         WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = 'books'",
    )
    .bind(schema)
    .fetch_all(c)
    .await
    .unwrap()
}

/// What the scenario's steps share: the schema (and a connection to it), the job's file
/// and the URL the commands are given.
pub(crate) struct Scene {
    pub(crate) db: TestDatabase,
    pub(crate) c: MySqlConnection,
    /// Holds the job's file for the scenario's life.
    _dir: tempfile::TempDir,
    pub(crate) jobp: String,
    pub(crate) url: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_fail_while_a_killed_cut_over_is_half_moved_and_cascade_once_it_is_settled() {
    let mut s =
        authors_with_their_books_and_bios_and_a_job_copying_two_tables("torn_cutover").await;
    a_run_killed_inside_its_cut_over_leaves_the_tables_half_moved(&mut s).await;
    status_names_the_closed_tables_and_what_ends_it(&s);
    while_half_moved_writes_to_the_copied_tables_fail_and_reads_go_on(&mut s).await;
    the_rerun_stops_a_queued_rename_settles_and_swaps(&mut s).await;
    once_swapped_a_renumbered_or_deleted_author_cascades_into_its_books(&mut s).await;
}

/// `authors` (latin1 names in cp1251, a trigger auditing renumberings), `books` outside the
/// job constrained by it (cascading), and the MyISAM `bios`; the job copies `authors` and
/// `bios` in one cut-over.
pub(crate) async fn authors_with_their_books_and_bios_and_a_job_copying_two_tables(
    hint: &str,
) -> Scene {
    let db = test_database(hint);
    let mut c = db.config.connect_one().await.unwrap();
    for s in [
        "CREATE TABLE authors (id INT NOT NULL PRIMARY KEY, name VARCHAR(100) CHARACTER SET latin1) ENGINE=InnoDB",
        "CREATE TABLE audit (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, what VARCHAR(100)) ENGINE=InnoDB",
        "CREATE TRIGGER authors_audit AFTER UPDATE ON authors FOR EACH ROW \
         INSERT INTO audit (what) VALUES (CONCAT('author ', OLD.id, ' now ', NEW.id))",
        "CREATE TABLE books (id INT NOT NULL PRIMARY KEY, author_id INT NOT NULL, KEY k_author (author_id), \
         CONSTRAINT fk_book_author FOREIGN KEY (author_id) REFERENCES authors (id) \
         ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB",
        "CREATE TABLE bios (id INT NOT NULL PRIMARY KEY, bio VARCHAR(100) CHARACTER SET latin1) ENGINE=MyISAM",
    ] {
        c.execute(s).await.unwrap();
    }
    for id in 1..=200i64 {
        let name = format!("{} {id}", NAMES[id as usize % NAMES.len()]);
        sqlx::query("INSERT INTO authors (id, name) VALUES (?, ?)")
            .bind(id)
            .bind(bytes(Windows1251, &name))
            .execute(&mut c)
            .await
            .unwrap();
    }
    c.execute("INSERT INTO books (id, author_id) SELECT id, 1 + id % 200 FROM authors")
        .await
        .unwrap();
    c.execute("INSERT INTO books (id, author_id) SELECT id + 1000, 1 + id % 200 FROM authors")
        .await
        .unwrap();
    c.execute("INSERT INTO bios (id, bio) SELECT id, name FROM authors")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("job.yaml");
    let utf8 = "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci";
    let job = common::copy_job(&db.name, "authors", "name", "cp1251", utf8);
    // A MyISAM table in the same cut-over, closed with it.
    let bios = common::copy_job(&db.name, "bios", "bio", "cp1251", utf8);
    let job = job + &bios[bios.find("  - name: bios").unwrap()..];
    std::fs::write(&jobf, job).unwrap();
    let jobp = jobf.to_str().unwrap().to_string();
    let url = db.config.url_with_secret();
    Scene {
        db,
        c,
        _dir: dir,
        jobp,
        url,
    }
}

/// The run holds its cut-over with the table closed and the moves made; killed there, the
/// rename it left queued fails on the sentry: `authors` stays closed and `books` references
/// the shadow.
async fn a_run_killed_inside_its_cut_over_leaves_the_tables_half_moved(s: &mut Scene) {
    let (c, name) = (&mut s.c, s.db.name.as_str());
    let mut run = common::spawn_myrecode(
        &s.url,
        &["run", &s.jobp, "--execute"],
        &[
            ("MYRECODE_TEST_CLOSED_HOLD_MS", "20000"),
            ("MYRECODE_TEST_NO_GUARD", "1"),
        ],
    );
    let since = Instant::now();
    let mut moved = false;
    while since.elapsed() < Duration::from_secs(120) {
        if run.try_wait().unwrap().is_some() {
            break;
        }
        // The last move the hook waits after: the table's own trigger on the shadow.
        let on_shadow = count(
            c,
            &format!(
                "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{}' \
                 AND TRIGGER_NAME = 'authors_audit' AND EVENT_OBJECT_TABLE = 'authors_myrecode_new'",
                name
            ),
        )
        .await;
        if on_shadow > 0 && !open(c, name).await {
            moved = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run.kill().unwrap(); // SIGKILL
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(
        moved,
        "the run never held its cut-over half-moved\n{stdout}\n{stderr}"
    );
    // The rename the killed run left queued has failed on the sentry by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!open(c, name).await);
    assert_eq!(books_parent(c, name).await, ["authors_myrecode_new"]);
}

/// `status` says the tables are closed, and what ends it.
fn status_names_the_closed_tables_and_what_ends_it(s: &Scene) {
    let out = common::myrecode(Some(&s.url), &["status", &s.jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("closed: authors, bios: a cut-over was stopped before its rename"),
        "{stdout}"
    );
}

/// Half-moved: every write to the copied table fails, saying which table is missing; reads
/// go on, and so do the outside child's writes; the MyISAM table's refused write has
/// changed its row all the same.
async fn while_half_moved_writes_to_the_copied_tables_fail_and_reads_go_on(s: &mut Scene) {
    let c = &mut s.c;
    for sql in [
        "UPDATE authors SET id = 5000 WHERE id = 7",
        "DELETE FROM authors WHERE id = 8",
        "INSERT INTO authors (id, name) VALUES (9000, 'x')",
        "UPDATE authors SET name = 'y' WHERE id = 9",
    ] {
        let e = c.execute(sql).await.expect_err(sql);
        assert_eq!(errno(&e), Some(1146), "{sql}: {e}");
        assert!(e.to_string().contains("authors_myrecode_log"), "{sql}: {e}");
    }
    // Reads go on, and so do the outside child's writes (checked against rows nobody can
    // change meanwhile).
    assert_eq!(count(c, "SELECT COUNT(*) FROM authors").await, 200);
    c.execute("UPDATE books SET author_id = 3 WHERE id = 1")
        .await
        .unwrap();
    c.execute("INSERT INTO books (id, author_id) VALUES (5000, 4)")
        .await
        .unwrap();
    assert_eq!(
        count(c, "SELECT COUNT(*) FROM books WHERE author_id = 7").await,
        2
    );
    assert_eq!(count(c, "SELECT COUNT(*) FROM audit").await, 0);
    // Without transactions, a refused write has changed its row all the same (the trigger
    // failing after it): the rerun compares that table with its copy again.
    let e = c
        .execute(
            sqlx::query("UPDATE bios SET bio = ? WHERE id = 5")
                .bind(bytes(Windows1251, "Гоголь, писатель")),
        )
        .await
        .expect_err("bios is closed");
    assert_eq!(errno(&e), Some(1146), "{e}");
}

/// The rerun settles, opens the table and swaps. It first waits for, then stops, a
/// statement marked as a cut-over's rename (so looks one a killed run left queued); it
/// compares the MyISAM table with its copy again and keeps its changed row.
async fn the_rerun_stops_a_queued_rename_settles_and_swaps(s: &mut Scene) {
    let marked = {
        let cfg = s.db.config.clone();
        tokio::spawn(async move {
            let mut q = cfg.connect_one().await.unwrap();
            q.execute("SELECT /* myrecode cut-over */ SLEEP(60)")
                .await
                .map(|_| ())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let out = common::myrecode(Some(&s.url), &["run", &s.jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let stopped = marked
        .await
        .unwrap()
        .expect_err("the marked statement was stopped");
    assert_eq!(errno(&stopped), Some(1317), "{stopped}");
    assert!(stdout.contains("cut-over:"), "{stdout}");
    let (c, name) = (&mut s.c, s.db.name.as_str());
    assert!(open(c, name).await);
    assert_eq!(books_parent(c, name).await, ["authors"]);
    let author: String = sqlx::query_scalar("SELECT name FROM authors WHERE id = 2")
        .fetch_one(&mut *c)
        .await
        .unwrap();
    assert_eq!(author, "Чехов 2");
    let bio: String = sqlx::query_scalar("SELECT bio FROM bios WHERE id = 5")
        .fetch_one(&mut *c)
        .await
        .unwrap();
    assert_eq!(bio, "Гоголь, писатель");
    assert!(
        stdout.contains("check: bios: every row compared with its copy; 1 differed"),
        "{stdout}"
    );
}

/// Swapped: a renumbered author takes its books along and fires its trigger; a deleted one
/// takes them away.
async fn once_swapped_a_renumbered_or_deleted_author_cascades_into_its_books(s: &mut Scene) {
    let c = &mut s.c;
    c.execute("UPDATE authors SET id = 5000 WHERE id = 7")
        .await
        .unwrap();
    assert_eq!(
        count(c, "SELECT COUNT(*) FROM books WHERE author_id = 5000").await,
        2
    );
    assert_eq!(
        count(c, "SELECT COUNT(*) FROM books WHERE author_id = 7").await,
        0
    );
    assert_eq!(
        sqlx::query_scalar::<_, String>("SELECT what FROM audit")
            .fetch_all(&mut *c)
            .await
            .unwrap(),
        ["author 7 now 5000"]
    );
    c.execute("DELETE FROM authors WHERE id = 8").await.unwrap();
    assert_eq!(
        count(c, "SELECT COUNT(*) FROM books WHERE author_id = 8").await,
        0
    );
    // 400 seeded, one added while half-moved, author 8's two gone.
    assert_eq!(count(c, "SELECT COUNT(*) FROM books").await, 400 + 1 - 2);
}

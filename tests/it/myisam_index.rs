//! A MyISAM table whose index is out of step with its rows, not marked crashed (as a server
//! crash can leave one, and MariaDB's own QUICK recovery passes): the run finds it, repairs
//! it, says so, and copies every row the data file holds, not only those the index names.
//!
//! The fault is made exactly: the table's index file is put back to what it was before the
//! last rows were written, with the server down. Without the repair the copy reads by key
//! ranges and the new table lacks those rows.

use crate::common;
use common::legacy::{bytes, RUSSIAN};
use common::texts;
use myrecode::codec::Encoding;
use myrecode::db::throwaway::ThrowawayServer;
use sqlx::{Executor, MySqlConnection};
use std::process::Command;

const BEFORE: i64 = 100;
const AFTER: i64 = 120;

fn text(n: i64) -> String {
    let t = RUSSIAN[(n as usize) % RUSSIAN.len()].replace(['ё', 'Ё'], "е");
    format!("{t} #{n}")
}

async fn insert(c: &mut MySqlConnection, ids: std::ops::RangeInclusive<i64>) {
    for id in ids {
        sqlx::query("INSERT INTO notes (id, body) VALUES (?, ?)")
            .bind(id)
            .bind(bytes(Encoding::Windows1251, &text(id)))
            .execute(&mut *c)
            .await
            .unwrap();
    }
    // Closed properly: nothing for the server's recovery to look at when it opens it again.
    c.execute("FLUSH TABLES").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_myisam_index_out_of_step_is_repaired_said_and_every_row_copied() {
    let server = ThrowawayServer::start_local_with(&[]).unwrap_or_else(|e| {
        panic!("this test restarts its own server: it needs mariadbd or mysqld on the PATH ({e:#})")
    });
    let db = server.fresh_database("myisam_index").unwrap();
    let mut c = db.config.connect_one().await.unwrap();
    c.execute(
        "CREATE TABLE notes (id INT NOT NULL PRIMARY KEY, body VARCHAR(200)) \
         ENGINE=MyISAM DEFAULT CHARSET=latin1",
    )
    .await
    .unwrap();
    insert(&mut c, 1..=BEFORE).await;
    let datadir: String = sqlx::query_scalar("SELECT @@datadir")
        .fetch_one(&mut c)
        .await
        .unwrap();
    let index = std::path::Path::new(&datadir)
        .join(&db.name)
        .join("notes.MYI");
    let stale = std::fs::read(&index).unwrap();
    insert(&mut c, BEFORE + 1..=AFTER).await;
    drop(c);
    tokio::task::block_in_place(|| {
        server.stop().unwrap();
        std::fs::write(&index, &stale).unwrap();
        server.start_again().unwrap();
    });

    // The fault as made: the rows past the old index are not found by key, and the server
    // did not mark the table crashed (a read succeeds).
    let mut c = db.config.connect_one().await.unwrap();
    let by_key: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM notes WHERE id > ?")
        .bind(BEFORE)
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(by_key, 0, "the stale index should not name the last rows");

    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("notes.yaml");
    std::fs::write(
        &job,
        common::copy_job(
            &db.name,
            "notes",
            "body",
            "cp1251",
            "VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["run", job.to_str().unwrap(), "--execute"])
        .env("MYSQL_URL", db.config.url_with_secret())
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let repair: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("repair: notes (MyISAM"))
        .collect();
    assert_eq!(repair.len(), 1, "one repair line:\n{stdout}");
    assert!(
        repair[0].contains("not compared with a copy on this server yet; CHECK TABLE … MEDIUM: ")
            && repair[0].contains("; REPAIR TABLE: "),
        "{}",
        repair[0]
    );

    let rows: Vec<(i64, String)> = sqlx::query_as("SELECT id, body FROM notes ORDER BY id")
        .fetch_all(&mut c)
        .await
        .unwrap();
    let want: Vec<(i64, String)> = (1..=AFTER).map(|id| (id, text(id))).collect();
    assert_eq!(rows.len(), want.len(), "every row copied:\n{stdout}");
    assert_eq!(rows, want);
    println!("{}", repair[0]);
}

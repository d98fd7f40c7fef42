//! `myrecode revert` against a real server: a table copied and swapped, then written by the
//! application in UTF-8 (new titles, an insert holding an emoji cp1251 lacks, deletes), then
//! swapped back while the application goes on counting views, with two SIGKILLs inside the
//! revert (one bringing rows back, one under the swap back's lock) and a third run that ends
//! it. Afterwards the table is latin1 again; every row the application never touched holds
//! its original bytes, every row it wrote holds what it wrote in cp1251, every view counted
//! is there; the emoji is listed by key and column with its text and the recoded table is
//! kept until `cleanup`, which leaves no object of the job behind.

use crate::common::{self, texts};
use common::legacy::bytes;
use myrecode::codec::Encoding::Windows1251;
use myrecode::db::throwaway::test_database;
use sqlx::{Executor, MySqlConnection};
use std::collections::BTreeMap;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The seeded title of post `id`.
fn seeded(id: i64) -> String {
    format!("Заметка номер {id}: о погоде")
}

/// The application: adds a view to a post every 10 ms, counting what went through.
fn counting_views(
    url: String,
    stop: Arc<AtomicBool>,
    views: Arc<Mutex<BTreeMap<i64, i64>>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let cfg = myrecode::db::connect::ConnectionConfig::from_url(&url).unwrap();
        let mut c = cfg.connect_one().await.unwrap();
        c.execute("SET SESSION lock_wait_timeout = 60")
            .await
            .unwrap();
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let id = 100 + (i * 13) % 150;
            let r = sqlx::query("UPDATE posts SET views = views + 1 WHERE id = ?")
                .bind(id)
                .execute(&mut c)
                .await;
            if let Ok(done) = r {
                if done.rows_affected() == 1 {
                    *views.lock().unwrap().entry(id).or_insert(0) += 1;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
}

/// The charset of `posts.title`.
async fn title_charset(c: &mut MySqlConnection, schema: &str) -> String {
    sqlx::query_scalar(
        "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'title'",
    )
    .bind(schema)
    .fetch_one(c)
    .await
    .unwrap()
}

async fn scalar(c: &mut MySqlConnection, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(c).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_brings_every_write_back_in_legacy_bytes_through_kills() {
    let db = test_database("revert");
    let mut c = db.config.connect_one().await.unwrap();
    c.execute(
        "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, title VARCHAR(100) CHARACTER SET latin1, views INT NOT NULL DEFAULT 0) ENGINE=InnoDB",
    )
    .await
    .unwrap();
    for id in 1..=300i64 {
        sqlx::query("INSERT INTO posts (id, title) VALUES (?, ?)")
            .bind(id)
            .bind(bytes(Windows1251, &seeded(id)))
            .execute(&mut c)
            .await
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("job.yaml");
    let utf8 = "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci";
    std::fs::write(
        &jobf,
        common::copy_job(&db.name, "posts", "title", "cp1251", utf8),
    )
    .unwrap();
    let jobp = jobf.to_str().unwrap().to_string();
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["run", &jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    // The application writes UTF-8 after the swap.
    let mut titles: BTreeMap<i64, String> = (1..=300).map(|id| (id, seeded(id))).collect();
    for id in 1..=10i64 {
        let t = format!("Новый заголовок {id}");
        sqlx::query("UPDATE posts SET title = ? WHERE id = ?")
            .bind(&t)
            .bind(id)
            .execute(&mut c)
            .await
            .unwrap();
        titles.insert(id, t);
    }
    for (id, t) in [
        (1001i64, "Свежий пост"),
        (1002, "Смайлик 😀 тут"),
        (30, "Ёлка № 5"),
    ] {
        sqlx::query("REPLACE INTO posts (id, title) VALUES (?, ?)")
            .bind(id)
            .bind(t)
            .execute(&mut c)
            .await
            .unwrap();
        titles.insert(id, t.to_string());
    }
    c.execute("DELETE FROM posts WHERE id BETWEEN 20 AND 25")
        .await
        .unwrap();
    for id in 20..=25 {
        titles.remove(&id);
    }

    let out = common::myrecode(Some(&url), &["revert", &jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("posts: would be swapped back"), "{stdout}");

    let views = Arc::new(Mutex::new(BTreeMap::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let app = counting_views(url.clone(), stop.clone(), views.clone());
    let name = db.name.clone();
    // Killed with rows brought back, before the lock: the list's table exists by then.
    common::revert_killed_when(
        &mut c,
        (&url, &jobp),
        15_000,
        &format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{name}' AND TABLE_NAME = '_myrecode_unreverted'"),
        Duration::from_millis(300),
    )
    .await;
    // Killed under the swap back's lock: a view waits on it.
    common::revert_killed_when(
        &mut c,
        (&url, &jobp),
        15_000,
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%' AND INFO LIKE 'UPDATE posts SET views%'",
        Duration::from_millis(300),
    )
    .await;
    // Still recoded, and written to all along.
    let cs = title_charset(&mut c, &name).await;
    assert_eq!(cs, "utf8mb4");
    let out = common::myrecode(Some(&url), &["revert", &jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "one value listed\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("posts: swapped back"), "{stdout}");
    assert!(
        stdout.contains("1 value(s) their legacy charset cannot hold"),
        "{stdout}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    app.await.unwrap();

    // Latin1 again, every row in cp1251 as the application last wrote it.
    let rows: Vec<(i64, Vec<u8>, i64)> =
        sqlx::query_as("SELECT id, CAST(title AS BINARY), views FROM posts ORDER BY id")
            .fetch_all(&mut c)
            .await
            .unwrap();
    let views = views.lock().unwrap().clone();
    assert_eq!(rows.len(), titles.len());
    for (id, title, seen) in rows {
        let want = titles[&id].replace('😀', "?");
        assert_eq!(title, bytes(Windows1251, &want), "post {id}");
        assert_eq!(
            seen,
            views.get(&id).copied().unwrap_or(0),
            "views of post {id}"
        );
    }
    assert!(
        views.values().sum::<i64>() > 50,
        "the application counted {views:?}"
    );
    let cs = title_charset(&mut c, &name).await;
    assert_eq!(cs, "latin1");
    let listed: Vec<(String, String, String)> =
        sqlx::query_as("SELECT tbl, col, CAST(value_text AS CHAR) FROM _myrecode_unreverted")
            .fetch_all(&mut c)
            .await
            .unwrap();
    assert_eq!(
        listed,
        [(
            "posts".to_string(),
            "title".to_string(),
            "Смайлик 😀 тут".to_string()
        )]
    );
    let kept: String = sqlx::query_scalar("SELECT title FROM posts_myrecode_new WHERE id = 1002")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(kept, "Смайлик 😀 тут");

    // Again: nothing more to do. Then cleanup leaves nothing of the job.
    let out = common::myrecode(Some(&url), &["revert", &jobp, "--execute"]);
    let (stdout, _) = texts(&out);
    assert!(stdout.contains("posts: reverted already"), "{stdout}");
    let out = common::myrecode(Some(&url), &["cleanup", &jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let left = scalar(
        &mut c,
        &format!(
            "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{name}' AND TABLE_NAME LIKE 'posts\\_myrecode%') \
             + (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{name}' AND TRIGGER_NAME LIKE '%myrecode%')"
        ),
    )
    .await;
    assert_eq!(left, 0, "cleanup left something of the job");
}

//! A key that holds legacy text (SMF's search index `log_search_subjects`, keyed by its
//! cp1251 words): `plan` puts the key column in the job with its fixed label, the run copies
//! the table online (more rows than `keyless_max_rows`, so no rebuild under the lock), each
//! row found in the shadow by its old key read as cp1251, with every write made meanwhile
//! replayed by old and new key, and the forum's search
//! by a Cyrillic literal through a utf8mb4 connection finds the words after the swap. Rows
//! the new collation would make equal (`ёлка`/`елка`, case) are named before anything is written.

use crate::common;
// The groups tests' way of starting `run --execute` in the background.
use crate::groups::run::spawn_run;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::test_database;
use myrecode::job::load::load_str;
use myrecode::job::model::Strategy;
use sqlx::MySqlConnection;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The distinct lower-case words of the seed texts (no `ё`: under utf8mb4_unicode_ci it
/// equals `е`, which the collision test shows on its own).
fn words() -> Vec<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    for text in RUSSIAN {
        for w in text.split(|c: char| !c.is_alphabetic()) {
            let w = w.to_lowercase();
            if w.chars().count() >= 3 && w.chars().count() <= 20 && !w.contains('ё') {
                out.insert(w);
            }
        }
    }
    out.into_iter().collect()
}

/// SMF's search index with `topics` topics, each indexed by some of the words, as cp1251
/// bytes in a latin1 column; returns its rows.
async fn seed(cfg: &ConnectionConfig, topics: i64) -> BTreeSet<(String, i64)> {
    exec_script(
        cfg,
        &["CREATE TABLE log_search_subjects (word VARCHAR(20) CHARACTER SET latin1 NOT NULL DEFAULT '', \
           id_topic MEDIUMINT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (word, id_topic)) ENGINE=MyISAM DEFAULT CHARSET=latin1"],
    )
    .await;
    let words = words();
    let mut rows = BTreeSet::new();
    for topic in 0..topics {
        for k in 0..10 {
            let w = &words[((topic * 7 + k * 13) as usize) % words.len()];
            rows.insert((w.clone(), topic));
        }
    }
    let mut c = cfg.connect_one().await.unwrap();
    let all: Vec<&(String, i64)> = rows.iter().collect();
    for chunk in all.chunks(500) {
        let sql = format!(
            "INSERT INTO log_search_subjects (word, id_topic) VALUES {}",
            vec!["(?, ?)"; chunk.len()].join(", ")
        );
        let mut q = sqlx::query(&sql);
        for (w, t) in chunk {
            q = q.bind(bytes(Windows1251, w)).bind(t);
        }
        q.execute(&mut c).await.unwrap();
    }
    rows
}

/// The forum indexing new subjects and dropping old ones while the job runs: cp1251 bytes
/// until the column is utf8mb4, UTF-8 text after.
struct Indexer {
    rows: BTreeSet<(String, i64)>,
    words: Vec<String>,
    x: u64,
    utf8: bool,
    writes: u64,
}

impl Indexer {
    async fn step(&mut self, c: &mut MySqlConnection, topics: i64) {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        let word = self.words[(self.x >> 8) as usize % self.words.len()].clone();
        let topic = ((self.x >> 24) % (topics as u64 + 100)) as i64;
        let since = Instant::now();
        if self.x.is_multiple_of(4) {
            let sql = "DELETE FROM log_search_subjects WHERE id_topic = ?";
            while let Err(e) = sqlx::query(sql).bind(topic).execute(&mut *c).await {
                retry(e, since, c).await;
            }
            self.rows.retain(|(_, t)| *t != topic);
        } else {
            // Not `INSERT IGNORE`: it would store legacy bytes refused by utf8mb4 as `?`.
            let sql = "INSERT INTO log_search_subjects (word, id_topic) VALUES (?, ?) \
                       ON DUPLICATE KEY UPDATE id_topic = id_topic";
            loop {
                let value = if self.utf8 {
                    word.as_bytes().to_vec()
                } else {
                    bytes(Windows1251, &word)
                };
                match sqlx::query(sql)
                    .bind(value)
                    .bind(topic)
                    .execute(&mut *c)
                    .await
                {
                    Ok(_) => break,
                    // The column is utf8mb4 now: the forum switches to UTF-8.
                    Err(e) if !self.utf8 && e.to_string().contains("Incorrect string value") => {
                        self.utf8 = true
                    }
                    Err(e) => retry(e, since, c).await,
                }
            }
            self.rows.insert((word, topic));
        }
        self.writes += 1;
    }
}

/// A statement the application retries (a lock wait, or one prepared before the copy's
/// triggers existed: prepared afresh).
async fn retry(e: sqlx::Error, since: Instant, c: &mut MySqlConnection) {
    assert!(common::retried(&e, &[], since), "indexer: {e}");
    sqlx::Connection::clear_cached_statements(c).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_keyed_search_index_is_recoded_and_searchable_after_the_swap() {
    let db = test_database("key_recoded");
    let topics = 400;
    let rows = seed(&db.config, topics).await;
    let url = db.config.url_with_secret();
    let run = |args: &[&str]| common::cli(&url, args);
    let dir = tempfile::tempdir().unwrap();
    let (report, _, text) = common::scan_and_plan(&url, dir.path());

    // plan: the key column in the job with its one label; the table rebuilt under the lock.
    let job = load_str(&text).unwrap().job;
    assert_eq!(job.tables.len(), 1, "{text}");
    let t = &job.tables[0];
    assert_eq!(t.strategy, Strategy::Copy, "{text}");
    assert_eq!(t.columns.len(), 1, "{text}");
    assert_eq!(t.columns[0].name, "word", "{text}");
    assert_eq!(t.columns[0].source.to_string(), "cp1251", "{text}");
    assert!(
        text.contains("its key holds recoded column(s) word:"),
        "{text}"
    );
    let jobp = dir.path().join("job.yaml");
    // A limit below the table's rows: the lock's rebuild is no option, the copy goes online.
    assert!(text.contains("keyless_max_rows: 10000"), "{text}");
    let text = text
        .replace("cutover: manual", "cutover: auto")
        .replace("keyless_max_rows: 10000", "keyless_max_rows: 100");
    std::fs::write(&jobp, text).unwrap();
    let jobp = jobp.to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "plan",
        "--check",
        jobp,
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (code, stdout, stderr) = run(&["run", jobp]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("log_search_subjects: its key holds recoded column(s) word: online copy into log_search_subjects_myrecode_new")
            && stdout.contains("by key (word, id_topic)"),
        "{stdout}"
    );

    // run, with the forum indexing meanwhile.
    let mut c = db.config.connect_one().await.unwrap();
    let mut w = Indexer {
        rows,
        words: words(),
        x: 0x2545_F491_4F6C_DD1D,
        utf8: false,
        writes: 0,
    };
    run_beside(&url, jobp, (&mut w, &mut c, topics), None).await;
    assert!(
        w.writes > 20,
        "the forum wrote alongside ({} writes)",
        w.writes
    );
    println!(
        "{} writes beside the run; utf8 after the swap: {}",
        w.writes, w.utf8
    );

    // Every row, its word in utf8mb4, keyed by it.
    let (charset, collation): (String, String) = sqlx::query_as(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR), CAST(COLLATION_NAME AS CHAR) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'log_search_subjects' AND COLUMN_NAME = 'word'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(charset, "utf8mb4", "{collation}");
    assert_index_is(&mut c, &w.rows).await;

    // The forum's search: a Cyrillic literal through a utf8mb4 connection (1267 before).
    let word = "москва";
    let want: BTreeSet<i64> = w
        .rows
        .iter()
        .filter(|(x, _)| x == word)
        .map(|(_, t)| *t)
        .collect();
    assert!(!want.is_empty(), "the seed indexes '{word}'");
    let found: BTreeSet<i64> = sqlx::query_scalar::<_, i64>(
        "SELECT CAST(id_topic AS SIGNED) FROM log_search_subjects WHERE word = 'москва'",
    )
    .fetch_all(&mut c)
    .await
    .unwrap()
    .into_iter()
    .collect();
    assert_eq!(found, want);
    // A new word is stored as itself, not `????`.
    sqlx::query("INSERT INTO log_search_subjects (word, id_topic) VALUES ('ёжик', 99999)")
        .execute(&mut c)
        .await
        .unwrap();
    let back: String =
        sqlx::query_scalar("SELECT word FROM log_search_subjects WHERE id_topic = 99999")
            .fetch_one(&mut c)
            .await
            .unwrap();
    assert_eq!(back, "ёжик");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_the_new_collation_makes_equal_are_named_before_anything_is_written() {
    let db = test_database("key_collide");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE tags (word VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL, n INT NOT NULL, \
           PRIMARY KEY (word)) ENGINE=InnoDB DEFAULT CHARSET=latin1",
        ],
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    for (n, w) in ["ёлка", "елка", "Мир", "мир", "дом", "сад"]
        .iter()
        .enumerate()
    {
        sqlx::query("INSERT INTO tags (word, n) VALUES (?, ?)")
            .bind(bytes(Windows1251, w))
            .bind(n as i64)
            .execute(&mut c)
            .await
            .unwrap();
    }
    let url = db.config.url_with_secret();
    let dir = tempfile::tempdir().unwrap();
    let jobp = dir.path().join("job.yaml");
    let target = "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL";
    std::fs::write(
        &jobp,
        common::copy_job(&db.name, "tags", "word", "cp1251", target),
    )
    .unwrap();
    let jobs = jobp.to_str().unwrap();

    let out = myrecode(Some(&url), &["plan", "--check", jobs]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("rows of table 'tags' become equal on unique key PRIMARY (word) once recoded and compared under utf8mb4_unicode_ci")
            && ["ёлка", "елка", "Мир", "мир"].iter().all(|w| stdout.contains(w))
            && !stdout.contains("дом")
            && stdout.contains("COLLATE utf8mb4_bin"),
        "{stdout}"
    );
    let out = myrecode(Some(&url), &["run", jobs, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("become equal on unique key PRIMARY"),
        "{stderr}"
    );
    let ours: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '%myrecode%'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(ours, 0, "nothing written");

    // The fix it names: a collation that tells them apart.
    std::fs::write(
        &jobp,
        common::copy_job(
            &db.name,
            "tags",
            "word",
            "cp1251",
            &target.replace("utf8mb4_unicode_ci", "utf8mb4_bin"),
        ),
    )
    .unwrap();
    let out = myrecode(Some(&url), &["run", jobs, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let got: Vec<(String, i64)> = sqlx::query_as(
        "SELECT CONVERT(word USING utf8mb4), CAST(n AS SIGNED) FROM tags ORDER BY n",
    )
    .fetch_all(&mut c)
    .await
    .unwrap();
    let want: Vec<(String, i64)> = ["ёлка", "елка", "Мир", "мир", "дом", "сад"]
        .iter()
        .enumerate()
        .map(|(n, w)| (w.to_string(), n as i64))
        .collect();
    assert_eq!(got, want);
    // verify compares the rebuilt table with its kept original, row for row.
    let out = myrecode(Some(&url), &["verify", jobs]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_value_that_cannot_be_decided_stops_the_run_before_the_swap() {
    let db = test_database("key_undecided");
    exec_script(
        &db.config,
        &["CREATE TABLE tags (word VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL, \
           PRIMARY KEY (word)) ENGINE=InnoDB DEFAULT CHARSET=latin1"],
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    // 0x98 is no character in cp1251: no reading of this key under the label.
    let undecidable = [bytes(Windows1251, "дом"), vec![0x98]].concat();
    for w in [bytes(Windows1251, "сад"), undecidable] {
        sqlx::query("INSERT INTO tags (word) VALUES (?)")
            .bind(w)
            .execute(&mut c)
            .await
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let jobp = dir.path().join("job.yaml");
    let target = "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL";
    std::fs::write(
        &jobp,
        common::copy_job(&db.name, "tags", "word", "cp1251", target),
    )
    .unwrap();
    let url = db.config.url_with_secret();
    let out = myrecode(Some(&url), &["run", jobp.to_str().unwrap(), "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("key column 'word' of `")
            && stderr.contains("holds a value that cannot be decided")
            && stderr.contains("X'E4EE EC98'".replace(' ', "").as_str()),
        "{stdout}\n{stderr}"
    );
    let charset: String = sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'tags' AND COLUMN_NAME = 'word'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(charset, "latin1", "nothing swapped");
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tags")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(rows, 2);
}

/// The search index holds exactly `want`, its words read as utf8mb4 text.
async fn assert_index_is(c: &mut MySqlConnection, want: &BTreeSet<(String, i64)>) {
    let got: BTreeSet<(String, i64)> = sqlx::query_as::<_, (String, i64)>(
        "SELECT word, CAST(id_topic AS SIGNED) FROM log_search_subjects",
    )
    .fetch_all(c)
    .await
    .unwrap()
    .into_iter()
    .collect();
    let missing: Vec<_> = want.difference(&got).take(5).collect();
    let extra: Vec<_> = got.difference(want).take(5).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?} of {}",
        got.len()
    );
}

/// Runs `run --execute` of `job` with the forum indexing beside it; SIGKILLs it after `kill`
/// when given (it must still run then). Returns the run's stdout and stderr, or `None` once killed.
async fn run_beside(
    url: &str,
    job: &str,
    (w, c, topics): (&mut Indexer, &mut MySqlConnection, i64),
    kill: Option<Duration>,
) -> Option<(String, String)> {
    let mut child = spawn_run(url, job, None);
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the run hangs"
        );
        if kill.is_some_and(|k| started.elapsed() >= k) {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            return None;
        }
        w.step(c, topics).await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        kill.is_none(),
        "the run ended before its kill: {:?}",
        texts(&out)
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    Some((stdout, stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_word_keyed_index_killed_mid_copy_resumes_online_and_loses_nothing() {
    let db = test_database("key_recoded_kill");
    let topics = 1200;
    let rows = seed(&db.config, topics).await;
    assert!(rows.len() > 10_000);
    let dir = tempfile::tempdir().unwrap();
    let jobp = dir.path().join("job.yaml");
    // Small batches with a pause: the copy takes seconds, so the kills land inside it. The
    // rows are far above `keyless_max_rows`: only the online copy can take this table.
    let job = common::copy_job(
        &db.name,
        "log_search_subjects",
        "word",
        "cp1251",
        "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL DEFAULT ''",
    )
    .replace(
        "  cutover: auto\n",
        "  cutover: auto\n  keyless_max_rows: 100\n  batch_size: 300\n  target_batch_time: 5ms\n  pause_between_batches: 30ms\n",
    );
    std::fs::write(&jobp, job).unwrap();
    let (url, jobp) = (db.config.url_with_secret(), jobp.to_str().unwrap());
    let mut c = db.config.connect_one().await.unwrap();
    let mut w = Indexer {
        rows,
        words: words(),
        x: 0x9E37_79B9_7F4A_7C15,
        utf8: false,
        writes: 0,
    };
    let began = Instant::now();
    for life in [900, 1600] {
        let killed = run_beside(
            &url,
            jobp,
            (&mut w, &mut c, topics),
            Some(Duration::from_millis(life)),
        )
        .await;
        assert!(killed.is_none());
    }
    let copied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM log_search_subjects_myrecode_new")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert!(copied > 0, "the kills landed inside the copy");
    let (stdout, _) = run_beside(&url, jobp, (&mut w, &mut c, topics), None)
        .await
        .unwrap();
    assert!(
        stdout.contains("cut-over: log_search_subjects now has the recoded columns"),
        "{stdout}"
    );
    println!(
        "{} writes beside the runs; {copied} rows copied before the last run; {:?} in all",
        w.writes,
        began.elapsed()
    );
    assert_index_is(&mut c, &w.rows).await;
}

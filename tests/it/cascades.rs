//! Cascading foreign-key actions followed to any depth, against a real server: a forum whose
//! deletes and key renames cascade through several tables (and through a comment thread)
//! while its copied tables wait for the cut-over.
//!
//! `sections` (outside the job) -> `topics` (its key renamed by `ON UPDATE CASCADE`) ->
//! `posts` -> `comments` (a self-referencing thread) -> `reactions` (outside the job) ->
//! `reaction_notes`; `users` -> `posts` and `users` -> `comments`. Cascades fire no triggers,
//! so only the triggers the job puts on the tables at the head of each chain log what they
//! change. Every statement of the application also runs on a control schema born utf8mb4:
//! after the cut-over the migrated schema must hold exactly what the control holds.

use crate::common;
use common::legacy::*;
use common::{exec_script, texts};
use myrecode::codec::Encoding::Windows1251;
use myrecode::db::throwaway::test_database;
use sqlx::{MySqlConnection, Row};

use std::time::{Duration, Instant};
use Value::{Ascii, Int, Text};

/// The schema, its text columns in `cs` (latin1 for the legacy one, utf8mb4 for the control).
fn ddl(cs: &str) -> Vec<String> {
    vec![
        "CREATE TABLE sections (code VARCHAR(20) CHARACTER SET ascii NOT NULL PRIMARY KEY, \
         position INT NOT NULL) ENGINE=InnoDB"
            .to_string(),
        format!(
            "CREATE TABLE topics (section VARCHAR(20) CHARACTER SET ascii NOT NULL, \
             slug VARCHAR(40) CHARACTER SET ascii NOT NULL, title VARCHAR(200) CHARACTER SET {cs}, \
             PRIMARY KEY (section, slug), CONSTRAINT fk_topic_section FOREIGN KEY (section) \
             REFERENCES sections (code) ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB"
        ),
        format!(
            "CREATE TABLE users (id INT NOT NULL PRIMARY KEY, name VARCHAR(100) CHARACTER SET {cs}) ENGINE=InnoDB"
        ),
        format!(
            "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, user_id INT NOT NULL, \
             section VARCHAR(20) CHARACTER SET ascii NOT NULL, topic VARCHAR(40) CHARACTER SET ascii NOT NULL, \
             title VARCHAR(200) CHARACTER SET {cs}, KEY k_user (user_id), KEY k_topic (section, topic), \
             CONSTRAINT fk_post_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE, \
             CONSTRAINT fk_post_topic FOREIGN KEY (section, topic) REFERENCES topics (section, slug) \
             ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB"
        ),
        format!(
            "CREATE TABLE comments (id INT NOT NULL PRIMARY KEY, post_id INT NOT NULL, user_id INT NOT NULL, \
             parent_id INT NULL, body VARCHAR(250) CHARACTER SET {cs}, KEY k_post (post_id), KEY k_user (user_id), \
             KEY k_parent (parent_id), \
             CONSTRAINT fk_comment_post FOREIGN KEY (post_id) REFERENCES posts (id) ON DELETE CASCADE, \
             CONSTRAINT fk_comment_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE, \
             CONSTRAINT fk_comment_parent FOREIGN KEY (parent_id) REFERENCES comments (id) ON DELETE CASCADE) ENGINE=InnoDB"
        ),
        "CREATE TABLE reactions (id INT NOT NULL PRIMARY KEY, comment_id INT NOT NULL, kind INT NOT NULL, \
         KEY k_comment (comment_id), CONSTRAINT fk_reaction_comment FOREIGN KEY (comment_id) \
         REFERENCES comments (id) ON DELETE CASCADE) ENGINE=InnoDB"
            .to_string(),
        format!(
            "CREATE TABLE reaction_notes (id INT NOT NULL PRIMARY KEY, reaction_id INT NOT NULL, \
             note VARCHAR(200) CHARACTER SET {cs}, KEY k_reaction (reaction_id), \
             CONSTRAINT fk_note_reaction FOREIGN KEY (reaction_id) REFERENCES reactions (id) ON DELETE CASCADE) ENGINE=InnoDB"
        ),
    ]
}

/// Every table and its columns, as compared at the end.
const COLUMNS: [(&str, &str); 7] = [
    ("sections", "code, position"),
    ("topics", "section, slug, title"),
    ("users", "id, name"),
    ("posts", "id, user_id, section, topic, title"),
    ("comments", "id, post_id, user_id, parent_id, body"),
    ("reactions", "id, comment_id, kind"),
    ("reaction_notes", "id, reaction_id, note"),
];

/// The copied tables and their text columns.
const JOB: [(&str, &str, &str); 5] = [
    ("topics", "title", "VARCHAR(200)"),
    ("users", "name", "VARCHAR(100)"),
    ("posts", "title", "VARCHAR(200)"),
    ("comments", "body", "VARCHAR(250)"),
    ("reaction_notes", "note", "VARCHAR(200)"),
];

const SECTIONS: [&str; 3] = ["news", "talk", "misc"];

/// Text number `n`: real Russian sentences, numbered.
fn text(n: usize) -> String {
    format!("{} #{n}", RUSSIAN[n % RUSSIAN.len()])
}

/// One statement of the application: SQL with `?` for the values, a text value as legacy
/// bytes (latin1 schema) or UTF-8 (the control).
struct Op {
    sql: String,
    values: Vec<Value>,
}

/// A value bound to a statement.
enum Value {
    Int(i64),
    Null,
    Ascii(String),
    Text(String),
}

impl Op {
    fn new(sql: &str, values: Vec<Value>) -> Op {
        Op {
            sql: sql.to_string(),
            values,
        }
    }

    /// Runs it; a deadlock or lock wait with the job's replay (which holds shared locks on the
    /// rows it re-reads and deletes ranges of the logs the triggers insert into) is retried,
    /// as an application does.
    async fn run(&self, c: &mut MySqlConnection, legacy: bool) -> u64 {
        for attempt in 0.. {
            let mut q = sqlx::query(&self.sql);
            for v in &self.values {
                q = match v {
                    Value::Int(i) => q.bind(*i),
                    Value::Null => q.bind(None::<i64>),
                    Value::Ascii(s) => q.bind(s.clone()),
                    Value::Text(t) if legacy => q.bind(bytes(Windows1251, t)),
                    Value::Text(t) => q.bind(t.clone()),
                };
            }
            match q.execute(&mut *c).await {
                Ok(r) => return r.rows_affected(),
                Err(e)
                    if attempt < 50
                        && ["1213", "1205"].iter().any(|n| e.to_string().contains(n)) =>
                {
                    eprintln!("retrying {}: {e}", self.sql);
                }
                Err(e) => panic!("{}: {e}", self.sql),
            }
        }
        unreachable!()
    }
}

/// The forum: 3 sections of 4 topics, 8 users, 48 posts, each with two comment threads (one
/// four deep) whose authors vary, each comment with a reaction and a note on it.
fn seed() -> Vec<Op> {
    let mut ops = Vec::new();
    for (i, s) in SECTIONS.iter().enumerate() {
        ops.push(Op::new(
            "INSERT INTO sections (code, position) VALUES (?, ?)",
            vec![Ascii(s.to_string()), Int(i as i64)],
        ));
        for t in 1..=4 {
            ops.push(Op::new(
                "INSERT INTO topics (section, slug, title) VALUES (?, ?, ?)",
                vec![
                    Ascii(s.to_string()),
                    Ascii(format!("t{t}")),
                    Text(text(10 * i + t)),
                ],
            ));
        }
    }
    for u in 1..=8 {
        ops.push(Op::new(
            "INSERT INTO users (id, name) VALUES (?, ?)",
            vec![Int(u), Text(text(100 + u as usize))],
        ));
    }
    for p in 1..=48i64 {
        ops.push(Op::new(
            "INSERT INTO posts (id, user_id, section, topic, title) VALUES (?, ?, ?, ?, ?)",
            vec![
                Int(p),
                Int(1 + p % 8),
                Ascii(SECTIONS[(p % 3) as usize].to_string()),
                Ascii(format!("t{}", 1 + (p / 3) % 4)),
                Text(text(200 + p as usize)),
            ],
        ));
        // Two threads: 0 <- 1 <- 2 <- 3, and 4 <- 5; the authors vary along each.
        for k in 0..6i64 {
            let id = p * 10 + k;
            let parent = match k {
                0 | 4 => None,
                _ => Some(id - 1),
            };
            ops.push(Op::new(
                "INSERT INTO comments (id, post_id, user_id, parent_id, body) VALUES (?, ?, ?, ?, ?)",
                vec![
                    Int(id),
                    Int(p),
                    Int(1 + (p + 3 * k) % 8),
                    parent.map_or(Value::Null, Int),
                    Text(text(1000 + id as usize)),
                ],
            ));
            ops.push(Op::new(
                "INSERT INTO reactions (id, comment_id, kind) VALUES (?, ?, ?)",
                vec![Int(id), Int(id), Int(k % 3)],
            ));
            ops.push(Op::new(
                "INSERT INTO reaction_notes (id, reaction_id, note) VALUES (?, ?, ?)",
                vec![Int(id), Int(id), Text(text(3000 + id as usize))],
            ));
        }
    }
    ops
}

/// Statements while the tables copy: a user deleted (posts, their comments and threads,
/// the user's comments on other posts and every reply under them, reactions and their notes).
fn while_copying() -> Vec<Op> {
    vec![Op::new("DELETE FROM users WHERE id = ?", vec![Int(5)])]
}

/// Statements once every table is copied and waits for the cut-over: deletes cascading two
/// to six levels (through threads and a table outside the job), key renames cascading two
/// levels, a comment and its thread removed, text edited, a reply added.
fn while_waiting() -> Vec<Op> {
    vec![
        // users -> posts -> comments (-> replies) -> reactions -> reaction_notes, and
        // users -> comments -> replies by other users on other users' posts.
        Op::new("DELETE FROM users WHERE id = ?", vec![Int(3)]),
        // A thread's top removed: its replies go with it (comments -> comments, three deep).
        Op::new("DELETE FROM comments WHERE id = ?", vec![Int(160)]),
        // sections -> topics (their key) -> posts (their columns): two levels of ON UPDATE CASCADE.
        Op::new(
            "UPDATE sections SET code = ? WHERE code = ?",
            vec![Ascii("forum".into()), Ascii("talk".into())],
        ),
        // topics -> posts, one level, on a renamed key.
        Op::new(
            "UPDATE topics SET slug = ? WHERE section = ? AND slug = ?",
            vec![
                Ascii("renamed".into()),
                Ascii("news".into()),
                Ascii("t2".into()),
            ],
        ),
        // sections -> topics -> posts -> comments -> replies -> reactions -> notes.
        Op::new(
            "DELETE FROM sections WHERE code = ?",
            vec![Ascii("misc".into())],
        ),
        Op::new(
            "UPDATE users SET name = ? WHERE id = ?",
            vec![Text("Новое имя пользователя".into()), Int(1)],
        ),
        Op::new(
            "INSERT INTO comments (id, post_id, user_id, parent_id, body) VALUES (?, ?, ?, ?, ?)",
            vec![
                Int(9001),
                Int(24),
                Int(2),
                Int(243),
                Text("Ответ на ответ, добавленный перед переключением".into()),
            ],
        ),
    ]
}

/// Runs `ops` on the legacy schema and on the control; both must change as many rows.
async fn apply(ops: &[Op], c: &mut MySqlConnection, k: &mut MySqlConnection) {
    for op in ops {
        let a = op.run(c, true).await;
        let b = op.run(k, false).await;
        assert_eq!(a, b, "{}: rows affected differ", op.sql);
    }
}

/// A table's rows, every column as text, ordered by every column.
async fn rows(c: &mut MySqlConnection, table: &str, cols: &str) -> Vec<Vec<Option<String>>> {
    let cast: Vec<String> = cols
        .split(", ")
        .map(|c| format!("CAST({c} AS CHAR)"))
        .collect();
    sqlx::query(&format!(
        "SELECT {} FROM {table} ORDER BY {cols}",
        cast.join(", ")
    ))
    .fetch_all(c)
    .await
    .unwrap()
    .iter()
    .map(|r| {
        (0..r.len())
            .map(|i| r.get::<Option<String>, _>(i))
            .collect()
    })
    .collect()
}

async fn count(c: &mut MySqlConnection, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(c)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Each copied table's phase, from the job's checkpoints.
async fn phases(c: &mut MySqlConnection) -> Vec<String> {
    sqlx::query_scalar("SELECT CAST(phase AS CHAR) FROM _myrecode_checkpoint ORDER BY tbl")
        .fetch_all(c)
        .await
        .unwrap_or_default()
}

async fn wait_until(c: &mut MySqlConnection, what: &str, cond: impl Fn(&[String]) -> bool) {
    let since = Instant::now();
    loop {
        let p = phases(c).await;
        if cond(&p) {
            return;
        }
        assert!(
            since.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}: {p:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn job_text(schema: &str) -> String {
    let mut t = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 20\n  target_batch_time: 1ms\n  \
         pause_between_batches: 20ms\n  cutover: manual\ntables:\n"
    );
    for (table, col, ty) in JOB {
        t.push_str(&format!(
            "  - name: {table}\n    strategy: copy\n    columns:\n      - name: {col}\n        source: auto\n        \
             target: {ty} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n"
        ));
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascades_of_any_depth_reach_the_copied_tables_before_the_cut_over() {
    let db = test_database("cascades");
    let control = test_database("cascades_ctl");
    let ddl_latin1 = ddl("latin1");
    let ddl_utf8 = ddl("utf8mb4");
    exec_script(
        &db.config,
        &ddl_latin1.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    exec_script(
        &control.config,
        &ddl_utf8.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    apply(&seed(), &mut c, &mut k).await;

    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("forum.yaml");
    std::fs::write(&job, job_text(&db.name)).unwrap();
    let jobp = job.to_str().unwrap();
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["plan", "--check", jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));

    statements_cascade_while_the_tables_copy_and_while_the_job_waits(&mut c, &mut k, &url, jobp)
        .await;
    what_the_cascades_deleted_is_gone_and_what_they_renamed_is_renamed(&mut c).await;
    every_table_equals_the_control_and_no_row_breaks_a_constraint(&mut c, &mut k, &url, jobp).await;
}

/// The job runs; while its first tables copy, and once every table is ready and it waits
/// for `myrecode cutover`, statements cascade through the schema (and the control); then
/// the cut-over, and the run ends.
async fn statements_cascade_while_the_tables_copy_and_while_the_job_waits(
    c: &mut MySqlConnection,
    k: &mut MySqlConnection,
    url: &str,
    jobp: &str,
) {
    let mut child = common::spawn_myrecode(url, &["run", jobp, "--execute"], &[]);
    // While the first tables copy (the later ones not started yet).
    wait_until(c, "the copy to start", |p| p.iter().any(|x| x == "copying")).await;
    apply(&while_copying(), c, k).await;
    // Every table copied and caught up: the job waits for `myrecode cutover`.
    wait_until(c, "every table to be ready", |p| {
        p.len() == JOB.len() && p.iter().all(|x| x == "replaying")
    })
    .await;
    apply(&while_waiting(), c, k).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the job waits for the cut-over: {:?}",
        texts(&child.wait_with_output().unwrap())
    );
    let out = common::myrecode(Some(url), &["cutover", jobp]);
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
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("cut-over:"), "{stdout}\n{stderr}");
}

/// What the cascades deleted is gone, what they renamed is renamed: nothing stale came back.
async fn what_the_cascades_deleted_is_gone_and_what_they_renamed_is_renamed(
    c: &mut MySqlConnection,
) {
    for (sql, want) in [
        ("SELECT COUNT(*) FROM posts WHERE user_id IN (3, 5)", 0),
        ("SELECT COUNT(*) FROM comments WHERE user_id IN (3, 5)", 0),
        // A reply by user 8 on user 2's post, under a comment of user 5.
        ("SELECT COUNT(*) FROM comments WHERE id = 12", 0),
        ("SELECT COUNT(*) FROM reaction_notes WHERE id = 12", 0),
        // The thread removed by its top (user 1's post, no author deleted).
        (
            "SELECT COUNT(*) FROM comments WHERE id IN (160, 161, 162, 163)",
            0,
        ),
        (
            "SELECT COUNT(*) FROM reaction_notes WHERE id IN (160, 161, 162, 163)",
            0,
        ),
        (
            "SELECT COUNT(*) FROM topics WHERE section IN ('talk', 'misc')",
            0,
        ),
        (
            "SELECT COUNT(*) FROM posts WHERE section IN ('talk', 'misc')",
            0,
        ),
        ("SELECT COUNT(*) FROM topics WHERE section = 'forum'", 4),
        (
            "SELECT COUNT(*) FROM topics WHERE section = 'news' AND slug = 'renamed'",
            1,
        ),
        (
            "SELECT COUNT(*) FROM posts WHERE section = 'news' AND topic = 'renamed'",
            4,
        ),
        ("SELECT COUNT(*) FROM comments WHERE id = 9001", 1),
    ] {
        assert_eq!(count(c, sql).await, want, "{sql}");
    }
    assert!(count(c, "SELECT COUNT(*) FROM posts WHERE section = 'forum'").await > 0);
}

/// Every table equals the control, text and all; no row breaks a constraint; no trigger of
/// the job is left; `verify` passes.
async fn every_table_equals_the_control_and_no_row_breaks_a_constraint(
    c: &mut MySqlConnection,
    k: &mut MySqlConnection,
    url: &str,
    jobp: &str,
) {
    for (table, cols) in COLUMNS {
        let got = rows(c, table, cols).await;
        let want = rows(k, table, cols).await;
        let extra: Vec<_> = got.iter().filter(|r| !want.contains(r)).take(3).collect();
        let missing: Vec<_> = want.iter().filter(|r| !got.contains(r)).take(3).collect();
        assert!(
            got == want,
            "{table}: {} rows migrated, {} in the control; e.g. extra {extra:?}, missing {missing:?}",
            got.len(),
            want.len()
        );
    }
    // No row breaks a constraint.
    for (child, cols, parent, refs) in [
        ("topics", "section", "sections", "code"),
        ("posts", "user_id", "users", "id"),
        ("posts", "section, topic", "topics", "section, slug"),
        ("comments", "post_id", "posts", "id"),
        ("comments", "user_id", "users", "id"),
        ("comments", "parent_id", "comments", "id"),
        ("reactions", "comment_id", "comments", "id"),
        ("reaction_notes", "reaction_id", "reactions", "id"),
    ] {
        let on: Vec<String> = cols
            .split(", ")
            .zip(refs.split(", "))
            .map(|(a, b)| format!("p.{b} = x.{a}"))
            .collect();
        let first = cols.split(", ").next().unwrap();
        let sql = format!(
            "SELECT COUNT(*) FROM {child} x WHERE x.{first} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {})",
            on.join(" AND ")
        );
        assert_eq!(count(c, &sql).await, 0, "{child}({cols}) -> {parent}");
    }
    let left = count(
        c,
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() \
         AND TRIGGER_NAME NOT LIKE '%\\_myrecode\\_rv_'",
    )
    .await;
    assert_eq!(
        left, 0,
        "no trigger of the job is left (but the back log's, kept for `revert` until `cleanup`)"
    );
    let out = common::myrecode(Some(url), &["verify", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
}

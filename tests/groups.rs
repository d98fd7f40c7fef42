//! Cut-over groups against a real server: four latin1 tables holding cp1251 text, in two
//! groups swapped at two instants by hand (`cutover: manual`, `myrecode cutover --group`),
//! with an application writing all along.
//!
//! `accounts` (users, profiles) and `forum` (posts, comments): a foreign key on text inside
//! `accounts` (profiles.user_login -> users.login, ON UPDATE CASCADE), one on integers inside
//! `forum`, and two on integers between them, one each way, both cascading (posts.user_id ->
//! users.id, profiles.pinned_post_id -> posts.id). Every statement of the application also
//! runs on a control schema born utf8mb4; the application writes each table in cp1251 until
//! that table refuses it, then in UTF-8. Afterwards the migrated schema holds exactly what
//! the control holds, with the same constraints on the live tables; between the two instants
//! one group was utf8mb4 and the other latin1, and writes landed in both.

mod common;

use common::legacy::*;
use common::texts;
use myrecode::codec::Encoding::Windows1251;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::test_database;
use sqlx::{Executor, MySqlConnection, Row};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The schema, its text columns in `cs` (latin1 for the legacy one, utf8mb4 for the control).
fn ddl(cs: &str) -> Vec<String> {
    vec![
        format!("CREATE TABLE users (id INT NOT NULL PRIMARY KEY, login VARCHAR(40) CHARACTER SET {cs} NOT NULL, \
                 name VARCHAR(120) CHARACTER SET {cs}, UNIQUE KEY u_login (login)) ENGINE=InnoDB"),
        format!("CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, user_id INT NOT NULL, title VARCHAR(200) CHARACTER SET {cs}, \
                 KEY k_user (user_id), CONSTRAINT fk_post_user FOREIGN KEY (user_id) REFERENCES users (id) \
                 ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB"),
        format!("CREATE TABLE profiles (id INT NOT NULL PRIMARY KEY, user_login VARCHAR(40) CHARACTER SET {cs} NOT NULL, \
                 pinned_post_id INT NULL, bio VARCHAR(200) CHARACTER SET {cs}, KEY k_login (user_login), KEY k_pinned (pinned_post_id), \
                 CONSTRAINT fk_profile_user FOREIGN KEY (user_login) REFERENCES users (login) ON UPDATE CASCADE ON DELETE CASCADE, \
                 CONSTRAINT fk_profile_post FOREIGN KEY (pinned_post_id) REFERENCES posts (id) ON DELETE SET NULL) ENGINE=InnoDB"),
        format!("CREATE TABLE comments (id INT NOT NULL PRIMARY KEY, post_id INT NOT NULL, body VARCHAR(250) CHARACTER SET {cs}, \
                 KEY k_post (post_id), CONSTRAINT fk_comment_post FOREIGN KEY (post_id) REFERENCES posts (id) \
                 ON DELETE CASCADE) ENGINE=InnoDB"),
    ]
}

/// Every table and its columns, as compared at the end.
const COLUMNS: [(&str, &str); 4] = [
    ("users", "id, login, name"),
    ("profiles", "id, user_login, pinned_post_id, bio"),
    ("posts", "id, user_id, title"),
    ("comments", "id, post_id, body"),
];

/// Each group's tables.
const ACCOUNTS: [&str; 2] = ["users", "profiles"];
const FORUM: [&str; 2] = ["posts", "comments"];

fn job_text(schema: &str) -> String {
    let col = |name: &str, ty: &str| {
        format!(
            "      - name: {name}\n        source: auto\n        target: {ty} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n"
        )
    };
    let table = |name: &str, cols: &[String]| {
        format!(
            "  - name: {name}\n    strategy: copy\n    columns:\n{}",
            cols.concat()
        )
    };
    format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 50\n  target_batch_time: 20ms\n  pause_between_batches: 5ms\n  cutover: manual\ntables:\n{}{}{}{}\
         cutover_groups:\n  - name: accounts\n    tables: [users, profiles]\n  - name: forum\n    tables: [posts, comments]\n",
        table(
            "users",
            &[col("login", "VARCHAR(40)").replace("utf8mb4_unicode_ci\n", "utf8mb4_unicode_ci NOT NULL\n"), col("name", "VARCHAR(120)")]
        ),
        table(
            "profiles",
            &[col("user_login", "VARCHAR(40)").replace("utf8mb4_unicode_ci\n", "utf8mb4_unicode_ci NOT NULL\n"), col("bio", "VARCHAR(200)")]
        ),
        table("posts", &[col("title", "VARCHAR(200)")]),
        table("comments", &[col("body", "VARCHAR(250)")]),
    )
}

/// Text number `n`: a Russian sentence, numbered.
fn text(n: u64) -> String {
    let t = RUSSIAN[(n as usize) % RUSSIAN.len()].replace(['ё', 'Ё'], "е");
    format!("{t} #{n}")
}

/// A login: Cyrillic, unique by its number.
fn login(n: u64) -> String {
    format!("логин_{n}")
}

/// One statement of the application: SQL with the text values first, then the ids; the table
/// whose charset the text must match.
struct Op {
    sql: String,
    table: &'static str,
    texts: Vec<String>,
    ids: Vec<i64>,
}

impl Op {
    fn new(table: &'static str, sql: &str, texts: &[String], ids: &[i64]) -> Op {
        Op {
            sql: sql.into(),
            table,
            texts: texts.to_vec(),
            ids: ids.to_vec(),
        }
    }

    /// Runs it, the text as cp1251 bytes (`legacy`) or as UTF-8.
    async fn run(&self, c: &mut MySqlConnection, legacy: bool) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(&self.sql);
        for t in &self.texts {
            q = if legacy {
                q.bind(bytes(Windows1251, t))
            } else {
                q.bind(t.clone())
            };
        }
        for id in &self.ids {
            q = q.bind(id);
        }
        q.execute(c).await.map(|r| r.rows_affected())
    }
}

async fn seed(c: &mut MySqlConnection, legacy: bool) {
    let mut ops = Vec::new();
    for id in 1..=60u64 {
        ops.push(Op::new(
            "users",
            "INSERT INTO users (login, name, id) VALUES (?, ?, ?)",
            &[login(id), text(id)],
            &[id as i64],
        ));
    }
    for id in 1..=300u64 {
        ops.push(Op::new(
            "posts",
            "INSERT INTO posts (title, id, user_id) VALUES (?, ?, ?)",
            &[text(1000 + id)],
            &[id as i64, 1 + (id % 60) as i64],
        ));
    }
    for id in 1..=60u64 {
        ops.push(Op::new(
            "profiles",
            "INSERT INTO profiles (user_login, bio, id, pinned_post_id) VALUES (?, ?, ?, ?)",
            &[login(id), text(2000 + id)],
            &[id as i64, (id * 5) as i64],
        ));
    }
    for id in 1..=600u64 {
        ops.push(Op::new(
            "comments",
            "INSERT INTO comments (body, id, post_id) VALUES (?, ?, ?)",
            &[text(3000 + id)],
            &[id as i64, 1 + (id % 300) as i64],
        ));
    }
    for op in ops {
        op.run(c, legacy)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", op.sql));
    }
}

/// The application, writing both schemas statement by statement.
#[derive(Default)]
struct App {
    x: u64,
    n: u64,
    /// Tables that refused the legacy bytes (swapped), with the write number it happened at.
    switched: BTreeMap<&'static str, u64>,
    /// At each table's first refusal: the charset of every table's text columns then.
    seen_at_switch: Vec<(&'static str, BTreeMap<String, String>)>,
    /// Keys written (or changed by a cascade) after their table was swapped, per table.
    touched: BTreeMap<&'static str, BTreeSet<i64>>,
    /// Successful writes per table after its own swap, and per table while the other group
    /// was swapped and it was not.
    after_own: BTreeMap<&'static str, u64>,
    between: BTreeMap<&'static str, u64>,
    failed_alike: u64,
    retries: u64,
}

/// Each table's text columns' charsets, one per table (`name` of users, say).
async fn charsets(c: &mut MySqlConnection, schema: &str) -> BTreeMap<String, String> {
    sqlx::query(
        "SELECT CAST(TABLE_NAME AS CHAR), CAST(GROUP_CONCAT(DISTINCT CHARACTER_SET_NAME) AS CHAR) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ('users','profiles','posts','comments') AND CHARACTER_SET_NAME IS NOT NULL \
         GROUP BY TABLE_NAME",
    )
    .bind(schema)
    .fetch_all(c)
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

impl App {
    fn next(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.x
    }

    /// The next statement, and the keys (per table) it may write, asked of the control first.
    async fn op(&mut self, control: &mut MySqlConnection) -> (Op, Vec<(&'static str, i64)>) {
        let r = self.next();
        let pick = |m: u64| 1 + (r >> 16) as i64 % m as i64;
        self.n += 1;
        let n = self.n;
        let keys = |rows: Vec<i64>, table: &'static str| -> Vec<(&'static str, i64)> {
            rows.into_iter().map(|k| (table, k)).collect()
        };
        async fn q(c: &mut MySqlConnection, sql: &str, id: i64) -> Vec<i64> {
            sqlx::query_scalar(sql).bind(id).fetch_all(c).await.unwrap()
        }
        match r % 12 {
            0 => {
                let id = pick(70);
                (
                    Op::new(
                        "users",
                        "UPDATE users SET name = ? WHERE id = ?",
                        &[text(10_000 + n)],
                        &[id],
                    ),
                    vec![("users", id)],
                )
            }
            1 => {
                let id = pick(70);
                (
                    Op::new(
                        "profiles",
                        "UPDATE profiles SET bio = ? WHERE id = ?",
                        &[text(10_000 + n)],
                        &[id],
                    ),
                    vec![("profiles", id)],
                )
            }
            2 => {
                let id = 100_000 + n as i64;
                (
                    Op::new(
                        "posts",
                        "INSERT INTO posts (title, id, user_id) VALUES (?, ?, ?)",
                        &[text(10_000 + n)],
                        &[id, pick(70)],
                    ),
                    vec![("posts", id)],
                )
            }
            3 => {
                let id = pick(320);
                (
                    Op::new(
                        "posts",
                        "UPDATE posts SET title = ? WHERE id = ?",
                        &[text(10_000 + n)],
                        &[id],
                    ),
                    vec![("posts", id)],
                )
            }
            4 => {
                let id = 200_000 + n as i64;
                (
                    Op::new(
                        "comments",
                        "INSERT INTO comments (body, id, post_id) VALUES (?, ?, ?)",
                        &[text(10_000 + n)],
                        &[id, pick(320)],
                    ),
                    vec![("comments", id)],
                )
            }
            5 => {
                let id = pick(620);
                (
                    Op::new(
                        "comments",
                        "UPDATE comments SET body = ? WHERE id = ?",
                        &[text(10_000 + n)],
                        &[id],
                    ),
                    vec![("comments", id)],
                )
            }
            // A post deleted: its comments go (inside `forum`), profiles pinning it are set
            // NULL (a cascade from `forum` into `accounts`).
            6 => {
                let id = pick(320);
                let mut k = vec![("posts", id)];
                k.extend(keys(
                    q(control, "SELECT id FROM comments WHERE post_id = ?", id).await,
                    "comments",
                ));
                k.extend(keys(
                    q(
                        control,
                        "SELECT id FROM profiles WHERE pinned_post_id = ?",
                        id,
                    )
                    .await,
                    "profiles",
                ));
                (
                    Op::new("posts", "DELETE FROM posts WHERE id = ?", &[], &[id]),
                    k,
                )
            }
            // A login changed: the profile follows (a cascade on text inside `accounts`).
            7 => {
                let id = pick(70);
                let mut k = vec![("users", id)];
                k.extend(keys(
                    q(control, "SELECT p.id FROM profiles p JOIN users u ON u.login = p.user_login WHERE u.id = ?", id).await,
                    "profiles",
                ));
                (
                    Op::new(
                        "users",
                        "UPDATE users SET login = ? WHERE id = ?",
                        &[login(50_000 + n)],
                        &[id],
                    ),
                    k,
                )
            }
            // A user renumbered: the posts follow (a cascade from `accounts` into `forum`).
            8 => {
                let id = pick(70);
                let new = 300_000 + n as i64;
                let mut k = vec![("users", id), ("users", new)];
                k.extend(keys(
                    q(control, "SELECT id FROM posts WHERE user_id = ?", id).await,
                    "posts",
                ));
                (
                    Op::new(
                        "users",
                        "UPDATE users SET id = ? WHERE id = ?",
                        &[],
                        &[new, id],
                    ),
                    k,
                )
            }
            9 => {
                let id = pick(70);
                (
                    Op::new(
                        "profiles",
                        "UPDATE profiles SET pinned_post_id = ? WHERE id = ?",
                        &[],
                        &[pick(320), id],
                    ),
                    vec![("profiles", id)],
                )
            }
            10 => {
                let id = 400_000 + n as i64;
                (
                    Op::new(
                        "users",
                        "INSERT INTO users (login, name, id) VALUES (?, ?, ?)",
                        &[login(60_000 + n), text(10_000 + n)],
                        &[id],
                    ),
                    vec![("users", id)],
                )
            }
            _ => {
                let id = pick(70);
                (
                    Op::new(
                        "users",
                        "UPDATE users SET name = ? WHERE id = ?",
                        &[text(20_000 + n)],
                        &[id],
                    ),
                    vec![("users", id)],
                )
            }
        }
    }

    /// Runs one statement on both schemas; their outcomes must agree.
    async fn step(
        &mut self,
        app: &mut MySqlConnection,
        control: &mut MySqlConnection,
        schema: &str,
    ) {
        let (op, keys) = self.op(control).await;
        let migrated = loop {
            let legacy = !self.switched.contains_key(op.table);
            match op.run(app, legacy).await {
                // Legacy bytes refused: the table was swapped (a cascade may report the
                // refusal as the child's constraint failing, 1452, rather than as 1366).
                Err(_) if legacy && charsets(app, schema).await[op.table] == "utf8mb4" => {
                    // The table was swapped: from now on the application writes it in UTF-8.
                    self.switched.insert(op.table, self.n);
                    let seen = charsets(app, schema).await;
                    self.seen_at_switch.push((op.table, seen));
                }
                Err(e)
                    if ["1213", "1205", "1146"]
                        .iter()
                        .any(|n| e.to_string().contains(n)) =>
                {
                    self.retries += 1;
                    assert!(self.retries < 200, "{e}");
                    sqlx::Connection::clear_cached_statements(&mut *app)
                        .await
                        .unwrap();
                }
                other => break other,
            }
        };
        let controlled = op.run(control, false).await;
        match (&migrated, &controlled) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{} {:?}: rows affected differ", op.sql, op.ids),
            (Err(_), Err(_)) => self.failed_alike += 1,
            _ => panic!(
                "{} {:?}: migrated {migrated:?}, control {controlled:?}",
                op.sql, op.ids
            ),
        }
        if migrated.is_err() {
            return;
        }
        // Asked after the statement: a table swapped by then may have taken it after its swap.
        let now = charsets(app, schema).await;
        for (table, key) in keys {
            if now[table] == "utf8mb4" {
                self.touched.entry(table).or_default().insert(key);
            }
        }
        let group = |t: &str| {
            if ACCOUNTS.contains(&t) {
                ACCOUNTS
            } else {
                FORUM
            }
        };
        if self.switched.contains_key(op.table) {
            *self.after_own.entry(op.table).or_default() += 1;
        } else if ACCOUNTS
            .iter()
            .chain(&FORUM)
            .any(|t| !group(op.table).contains(t) && self.switched.contains_key(t))
        {
            *self.between.entry(op.table).or_default() += 1;
        }
    }
}

async fn write_until(
    cfg: ConnectionConfig,
    ctl: ConnectionConfig,
    stop: Arc<AtomicBool>,
    schema: String,
) -> App {
    let mut app = cfg.connect_one().await.unwrap();
    let mut control = ctl.connect_one().await.unwrap();
    let mut a = App {
        x: 0x9E37_79B9_7F4A_7C15,
        ..App::default()
    };
    while !stop.load(Ordering::SeqCst) {
        a.step(&mut app, &mut control, &schema).await;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    a
}

/// Every foreign key of the schema: name, child, columns, parent, columns, actions.
async fn constraints(c: &mut MySqlConnection, schema: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT CAST(CONCAT_WS(' ', r.CONSTRAINT_NAME, r.TABLE_NAME, \
         GROUP_CONCAT(k.COLUMN_NAME ORDER BY k.ORDINAL_POSITION), r.REFERENCED_TABLE_NAME, \
         GROUP_CONCAT(k.REFERENCED_COLUMN_NAME ORDER BY k.ORDINAL_POSITION), r.UPDATE_RULE, r.DELETE_RULE) AS CHAR) \
         FROM information_schema.REFERENTIAL_CONSTRAINTS r JOIN information_schema.KEY_COLUMN_USAGE k \
         ON k.CONSTRAINT_SCHEMA = r.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = r.CONSTRAINT_NAME AND k.TABLE_NAME = r.TABLE_NAME \
         WHERE r.CONSTRAINT_SCHEMA = ? AND r.TABLE_NAME NOT LIKE '%myrecode_old' \
         GROUP BY r.CONSTRAINT_NAME, r.TABLE_NAME, r.REFERENCED_TABLE_NAME, r.UPDATE_RULE, r.DELETE_RULE ORDER BY 1",
    )
    .bind(schema)
    .fetch_all(c)
    .await
    .unwrap()
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

/// `myrecode status --json` of the job.
fn status(url: &str, job: &str) -> serde_json::Value {
    let out = common::myrecode(Some(url), &["status", job, "--json"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Waits (at most 3 minutes) until `cond` holds for the job's status; the run must not end
/// meanwhile.
async fn wait_status(
    url: &str,
    job: &str,
    run: &mut std::process::Child,
    what: &str,
    cond: impl Fn(&serde_json::Value) -> bool,
) {
    let since = Instant::now();
    loop {
        let s = status(url, job);
        if cond(&s) {
            return;
        }
        if run.try_wait().unwrap().is_some() || since.elapsed() > Duration::from_secs(180) {
            run.kill().ok();
            let mut out = String::new();
            for pipe in [
                run.stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read>),
                run.stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read>),
            ]
            .into_iter()
            .flatten()
            {
                let mut p = pipe;
                p.read_to_string(&mut out).ok();
            }
            panic!("waiting for {what}, the run ended or timed out: {s:#}\n{out}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_groups_are_swapped_at_two_instants_with_their_foreign_keys_and_a_writer() {
    let db = test_database("groups_app");
    let control = test_database("groups_ctl");
    let mut c = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    for s in ddl("latin1") {
        c.execute(s.as_str())
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    for s in ddl("utf8mb4") {
        k.execute(s.as_str())
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    seed(&mut c, true).await;
    seed(&mut k, false).await;
    let before = constraints(&mut c, &db.name).await;
    assert_eq!(before.len(), 4, "{before:?}");

    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("app.yaml");
    std::fs::write(&job, job_text(&db.name)).unwrap();
    let jobp = job.to_str().unwrap();
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["plan", "--check", jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    // The rehearsal says the groups and their order.
    let out = common::myrecode(Some(&url), &["run", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "Cut-over groups, swapped one after another in this order, each at its own instant (one lock, drain and rename each), once every table is copied:\n\
             \x20 1. accounts: users, profiles (when `myrecode cutover --group accounts` is given)\n\
             \x20 2. forum: posts, comments (when `myrecode cutover --group forum` is given)\n"
        ),
        "{stdout}"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (cfg, ctl, stop, schema) = (
            db.config.clone(),
            control.config.clone(),
            stop.clone(),
            db.name.clone(),
        );
        tokio::spawn(async move { write_until(cfg, ctl, stop, schema).await })
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["run", jobp, "--execute"])
        .env("MYSQL_URL", &url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    wait_status(
        &url,
        jobp,
        &mut child,
        "group accounts to wait for its cut-over",
        |s| s["groups"][0]["waits_for_cutover"] == true,
    )
    .await;
    let s = status(&url, jobp);
    assert_eq!(s["waits_for_cutover"], true);
    assert_eq!(
        s["groups"][1]["waits_for_cutover"], false,
        "forum waits its turn"
    );
    let out = common::myrecode(Some(&url), &["status", jobp]);
    let shown = texts(&out).0;
    assert!(
        shown.contains(
            "group accounts (users, profiles): waits for `myrecode cutover --group accounts`"
        ),
        "{shown}"
    );
    // Which group: the DBA must say, and in the job's order.
    let out = common::myrecode(Some(&url), &["cutover", jobp]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the job has 2 cut-over groups still to swap (accounts, then forum)"),
        "{stderr}"
    );
    let out = common::myrecode(Some(&url), &["cutover", jobp, "--group", "forum"]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("group 'forum' is swapped after group 'accounts', which is not swapped yet"),
        "{stderr}"
    );
    assert_eq!(
        charsets(&mut c, &db.name)
            .await
            .values()
            .collect::<Vec<_>>(),
        ["latin1"; 4],
        "nothing swapped before `myrecode cutover`"
    );

    let out = common::myrecode(Some(&url), &["cutover", jobp, "--group", "accounts"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    wait_status(
        &url,
        jobp,
        &mut child,
        "group accounts to be swapped",
        |s| s["groups"][0]["swapped"] == true,
    )
    .await;
    // Between the instants: `accounts` is utf8mb4, `forum` still latin1, and the foreign keys
    // between them reference live tables.
    let cs = charsets(&mut c, &db.name).await;
    for t in ACCOUNTS {
        assert_eq!(cs[t], "utf8mb4", "{t}: {cs:?}");
    }
    for t in FORUM {
        assert_eq!(cs[t], "latin1", "{t}: {cs:?}");
    }
    // The stand-ins get their names back right after the rename: at most a moment later.
    let since = Instant::now();
    while constraints(&mut c, &db.name).await != before {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "constraints between the instants: {:?}",
            constraints(&mut c, &db.name).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = common::myrecode(Some(&url), &["status", jobp]);
    let shown = texts(&out).0;
    assert!(
        shown.contains("group accounts (users, profiles): swapped"),
        "{shown}"
    );
    // The application goes on writing both groups, each in its own charset.
    wait_status(
        &url,
        jobp,
        &mut child,
        "group forum to wait for its cut-over",
        |s| s["groups"][1]["waits_for_cutover"] == true,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let out = common::myrecode(Some(&url), &["cutover", jobp]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the only group left needs no name: {:?}",
        texts(&out)
    );
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    let cut: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("cut-over:"))
        .collect();
    assert_eq!(cut.len(), 2, "{stdout}");
    assert!(
        cut[0].starts_with(
            "cut-over: group 'accounts': users, profiles now have the recoded columns"
        ),
        "{stdout}"
    );
    assert!(
        cut[1].starts_with("cut-over: group 'forum': posts, comments now have the recoded columns"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ready: group 'accounts': users, profiles are copied and caught up"),
        "{stdout}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    let app = writer.await.unwrap();

    // Each group switched at its own instant: when the application first found a table of
    // `accounts` recoded, all of `accounts` was and none of `forum`; then all of `forum` was.
    for (table, seen) in &app.seen_at_switch {
        let (mine, other) = if ACCOUNTS.contains(table) {
            (ACCOUNTS, FORUM)
        } else {
            (FORUM, ACCOUNTS)
        };
        for t in mine {
            assert_eq!(seen[t], "utf8mb4", "{table} swapped but not {t}: {seen:?}");
        }
        if ACCOUNTS.contains(table) {
            for t in other {
                assert_eq!(seen[t], "latin1", "{t} swapped with accounts: {seen:?}");
            }
        }
    }
    assert_eq!(
        app.switched.len(),
        4,
        "the application wrote every table after its swap: {:?}",
        app.switched
    );
    for t in FORUM {
        assert!(
            app.between.get(t).copied().unwrap_or(0) > 0,
            "{t} written in latin1 between the instants: {:?}",
            app.between
        );
    }
    for t in ACCOUNTS {
        assert!(
            app.after_own.get(t).copied().unwrap_or(0) > 0,
            "{t} written in UTF-8: {:?}",
            app.after_own
        );
    }
    // Every value recoded right, every write present, every cascade applied.
    for (table, cols) in COLUMNS {
        let got = rows(&mut c, table, cols).await;
        let want = rows(&mut k, table, cols).await;
        let differ: Vec<_> = got
            .iter()
            .zip(&want)
            .filter(|(a, b)| a != b)
            .take(3)
            .collect();
        assert!(
            got.len() == want.len() && differ.is_empty(),
            "{table}: {} rows migrated, {} in the control; e.g. {differ:?}",
            got.len(),
            want.len()
        );
    }
    // The same constraints (names, columns, actions), on the live tables, none on a kept
    // original, and no row violates them.
    assert_eq!(constraints(&mut c, &db.name).await, before);
    let on_old: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? \
         AND (REFERENCED_TABLE_NAME LIKE '%myrecode%' OR (TABLE_NAME NOT LIKE '%myrecode_old' AND CONSTRAINT_NAME LIKE '%myrecode%'))",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(
        on_old, 0,
        "no constraint references a kept original or keeps a stand-in name"
    );
    for (child, col, parent, pcol) in [
        ("posts", "user_id", "users", "id"),
        ("profiles", "user_login", "users", "login"),
        ("profiles", "pinned_post_id", "posts", "id"),
        ("comments", "post_id", "posts", "id"),
    ] {
        let orphans: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {child} x LEFT JOIN {parent} p ON p.{pcol} = x.{col} WHERE x.{col} IS NOT NULL AND p.{pcol} IS NULL"
        ))
        .fetch_one(&mut c)
        .await
        .unwrap();
        assert_eq!(orphans, 0, "{child}.{col} -> {parent}");
    }
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE '%myrecode%'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(left, 0, "no trigger of the job is left");
    let s = status(&url, jobp);
    assert_eq!(s["finished"], true);
    assert!(
        s["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["swapped"] == true),
        "{s:#}"
    );

    // verify: every row of each kept original, recoded, equals the new table's, but those the
    // application wrote after its table was swapped.
    let out = common::myrecode(Some(&url), &["verify", jobp]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    let mut table = "";
    for line in stdout.lines() {
        if let Some((t, rest)) = line.split_once(": ") {
            if rest.contains("row(s) equal their original") {
                table = COLUMNS
                    .iter()
                    .find(|(n, _)| *n == t)
                    .map(|(n, _)| *n)
                    .unwrap_or("");
                assert!(!table.is_empty(), "{line}");
                let differ: usize = rest
                    .rsplit("; ")
                    .next()
                    .and_then(|d| d.trim_end_matches(" differ").parse().ok())
                    .unwrap_or_else(|| panic!("{line}"));
                let touched = app.touched.get(table).map_or(0, BTreeSet::len);
                assert!(
                    differ <= touched,
                    "{line}: only {touched} key(s) were written after the swap"
                );
            }
        }
        if let Some(key) = line
            .trim()
            .strip_prefix("written since the cut-over (or only on one side): key ")
        {
            let key: i64 = key.parse().unwrap_or_else(|_| panic!("{line}"));
            assert!(
                app.touched.get(table).is_some_and(|t| t.contains(&key)),
                "{table}: key {key} differs from its original, yet no write after the swap touched it\n{stdout}"
            );
        }
    }
    for (t, _) in COLUMNS {
        assert!(
            stdout.contains(&format!("{t}: ")),
            "verify compared {t}: {stdout}"
        );
    }
    println!(
        "application: {} writes, {} failed alike, {} retried, switched at {:?}; {}",
        app.n,
        app.failed_alike,
        app.retries,
        app.switched,
        cut.join(" | ")
    );
}

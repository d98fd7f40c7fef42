//! The application of `tests/it/groups/swap.rs`: its schema (four latin1 tables in two cut-over
//! groups, linked by foreign keys), its job, and a writer that runs every statement on the
//! migrated schema and on a control schema born utf8mb4.

use crate::common::legacy::*;
use crate::common::retried;
use myrecode::codec::Encoding::Windows1251;
use myrecode::db::connect::ConnectionConfig;
use sqlx::{MySqlConnection, Row};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The schema, its text columns in `cs` (latin1 for the legacy one, utf8mb4 for the control).
pub fn ddl(cs: &str) -> Vec<String> {
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
pub const COLUMNS: [(&str, &str); 4] = [
    ("users", "id, login, name"),
    ("profiles", "id, user_login, pinned_post_id, bio"),
    ("posts", "id, user_id, title"),
    ("comments", "id, post_id, body"),
];

/// The `accounts` group's tables.
pub const ACCOUNTS: [&str; 2] = ["users", "profiles"];
/// The `forum` group's tables.
pub const FORUM: [&str; 2] = ["posts", "comments"];

/// The job: the four tables copied (a manual cut-over), in the groups `accounts` and `forum`.
pub fn job_text(schema: &str) -> String {
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
pub fn text(n: u64) -> String {
    let t = RUSSIAN[(n as usize) % RUSSIAN.len()].replace(['ё', 'Ё'], "е");
    format!("{t} #{n}")
}

/// A login: Cyrillic, unique by its number.
pub fn login(n: u64) -> String {
    format!("логин_{n}")
}

/// One statement of the application: SQL with the text values first, then the ids; the table
/// whose charset the text must match.
pub struct Op {
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

/// Seeds the schema: users, profiles, posts and comments, as legacy bytes when `legacy`.
pub async fn seed(c: &mut MySqlConnection, legacy: bool) {
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
pub struct App {
    pub x: u64,
    pub n: u64,
    /// Tables that refused the legacy bytes (swapped), with the write number it happened at.
    pub switched: BTreeMap<&'static str, u64>,
    /// At each table's first refusal: the charset of every table's text columns then.
    pub seen_at_switch: Vec<(&'static str, BTreeMap<String, String>)>,
    /// Keys written (or changed by a cascade) after their table was swapped, per table.
    pub touched: BTreeMap<&'static str, BTreeSet<i64>>,
    /// Successful writes per table after its own swap, and per table while the other group
    /// was swapped and it was not.
    pub after_own: BTreeMap<&'static str, u64>,
    pub between: BTreeMap<&'static str, u64>,
    pub failed_alike: u64,
    pub retries: u64,
}

/// Each table's text columns' charsets, one per table (`name` of users, say).
pub async fn charsets(c: &mut MySqlConnection, schema: &str) -> BTreeMap<String, String> {
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
        self.n += 1;
        match r % 12 {
            6..=8 => cascading_op(r, self.n, control).await,
            _ => plain_op(r, self.n),
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
        let since = std::time::Instant::now();
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
                Err(e) if retried(&e, &[], since) => {
                    self.retries += 1;
                    sqlx::Connection::clear_cached_statements(&mut *app)
                        .await
                        .unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
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

/// Steers the writer from the test: stop it, or hold it between statements (`idle` says
/// it is held).
#[derive(Default)]
pub struct Steer {
    pub stop: AtomicBool,
    pub hold: AtomicBool,
    pub idle: AtomicBool,
}

impl Steer {
    /// Holds the writer between two statements, and returns once it is held.
    pub async fn hold(&self) {
        self.hold.store(true, Ordering::SeqCst);
        while !self.idle.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Lets the writer go on.
    pub fn release(&self) {
        self.hold.store(false, Ordering::SeqCst);
    }
}

/// The application's writer: a statement every few milliseconds until told to stop.
pub async fn write_until(
    cfg: ConnectionConfig,
    ctl: ConnectionConfig,
    steer: Arc<Steer>,
    schema: String,
) -> App {
    write_after(&[], cfg, ctl, steer, schema).await
}

/// [`write_until`], its connection to the migrated schema set up by `setup` first.
pub async fn write_after(
    setup: &[&str],
    cfg: ConnectionConfig,
    ctl: ConnectionConfig,
    steer: Arc<Steer>,
    schema: String,
) -> App {
    let mut app = cfg.connect_one().await.unwrap();
    for s in setup {
        sqlx::query(s).execute(&mut app).await.unwrap();
    }
    let mut control = ctl.connect_one().await.unwrap();
    let mut a = App {
        x: 0x9E37_79B9_7F4A_7C15,
        ..App::default()
    };
    while !steer.stop.load(Ordering::SeqCst) {
        if steer.hold.load(Ordering::SeqCst) {
            steer.idle.store(true, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        steer.idle.store(false, Ordering::SeqCst);
        a.step(&mut app, &mut control, &schema).await;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    a
}

/// Every foreign key of the schema: name, child, columns, parent, columns, actions.
pub async fn constraints(c: &mut MySqlConnection, schema: &str) -> Vec<String> {
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
pub async fn rows(c: &mut MySqlConnection, table: &str, cols: &str) -> Vec<Vec<Option<String>>> {
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

/// A statement of the application's `r`-th pick (its `n`-th) that writes only the row it
/// names: a text edit, an insert, or a pinned post changed.
fn plain_op(r: u64, n: u64) -> (Op, Vec<(&'static str, i64)>) {
    let pick = |m: u64| 1 + (r >> 16) as i64 % m as i64;
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

/// A statement of the application's `r`-th pick (its `n`-th) whose foreign keys cascade
/// (a post deleted, a login changed, a user renumbered), with every key it reaches, asked
/// of the control first.
async fn cascading_op(
    r: u64,
    n: u64,
    control: &mut MySqlConnection,
) -> (Op, Vec<(&'static str, i64)>) {
    let pick = |m: u64| 1 + (r >> 16) as i64 % m as i64;
    let keys = |rows: Vec<i64>, table: &'static str| -> Vec<(&'static str, i64)> {
        rows.into_iter().map(|k| (table, k)).collect()
    };
    async fn q(c: &mut MySqlConnection, sql: &str, id: i64) -> Vec<i64> {
        sqlx::query_scalar(sql).bind(id).fetch_all(c).await.unwrap()
    }
    match r % 12 {
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
        // A user renumbered: the posts follow (a cascade from `accounts` into `forum`). The
        // login changes too: a row moved to a later key while its old key is still in the
        // shadow would collide there on the unique login (see the copy's limits).
        8 => {
            let id = pick(70);
            let new = 300_000 + n as i64;
            let mut k = vec![("users", id), ("users", new)];
            k.extend(keys(
                q(control, "SELECT id FROM posts WHERE user_id = ?", id).await,
                "posts",
            ));
            k.extend(keys(
                q(
                    control,
                    "SELECT p.id FROM profiles p JOIN users u ON u.login = p.user_login WHERE u.id = ?",
                    id,
                )
                .await,
                "profiles",
            ));
            (
                Op::new(
                    "users",
                    "UPDATE users SET login = ?, id = ? WHERE id = ?",
                    &[login(70_000 + n)],
                    &[new, id],
                ),
                k,
            )
        }
        _ => unreachable!("{r} is not a cascading pick"),
    }
}

//! A whole application schema migrated in one cut-over, against a real server: nine
//! latin1 tables holding cp1251 and KOI8-R text, linked by foreign keys (a circular pair,
//! `ON UPDATE CASCADE`, `ON DELETE CASCADE` and `SET NULL`), triggers keeping a denormalised
//! copy in a MyISAM table and counting statements, another MyISAM table, a small table
//! without any key (rebuilt under the cut-over's lock) and a view,
//! with an application writing all along and the run SIGKILLed at random instants, some
//! inside the cut-over.
//!
//! The application's every statement also runs on a control schema, the same one born
//! utf8mb4: the migrated schema must end up holding exactly what the control holds (every
//! value recoded right, every write present, every cascade applied), with the same
//! constraints and no orphan row; and when the application first finds a table swapped,
//! every table is.

use crate::common;
use common::legacy::*;
use common::retried;
use common::texts;
use myrecode::codec::Encoding::{self, *};
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::{test_database, TestDatabase};
use sqlx::{Executor, MySqlConnection, Row};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The schema, its text columns in `cs` (latin1 for the legacy one, utf8mb4 for the control).
fn ddl(cs: &str) -> Vec<String> {
    vec![
        format!("CREATE TABLE country (id INT NOT NULL PRIMARY KEY, name VARCHAR(120) CHARACTER SET {cs}) ENGINE=InnoDB"),
        format!("CREATE TABLE city (id INT NOT NULL PRIMARY KEY, country_id INT NOT NULL, name VARCHAR(120) CHARACTER SET {cs}, \
                 KEY k_country (country_id), CONSTRAINT fk_city_country FOREIGN KEY (country_id) REFERENCES country (id) \
                 ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB"),
        format!("CREATE TABLE store (id INT NOT NULL PRIMARY KEY, manager_id INT NULL, name VARCHAR(120) CHARACTER SET {cs}, \
                 KEY k_manager (manager_id)) ENGINE=InnoDB"),
        format!("CREATE TABLE staff (id INT NOT NULL PRIMARY KEY, store_id INT NULL, name VARCHAR(120) CHARACTER SET {cs}, \
                 KEY k_store (store_id), CONSTRAINT fk_staff_store FOREIGN KEY (store_id) REFERENCES store (id) \
                 ON UPDATE CASCADE ON DELETE SET NULL) ENGINE=InnoDB"),
        "ALTER TABLE store ADD CONSTRAINT fk_store_manager FOREIGN KEY (manager_id) REFERENCES staff (id) \
         ON UPDATE CASCADE ON DELETE SET NULL".to_string(),
        format!("CREATE TABLE customer (id INT NOT NULL PRIMARY KEY, city_id INT NULL, name VARCHAR(200) CHARACTER SET {cs}, \
                 KEY k_city (city_id), CONSTRAINT fk_customer_city FOREIGN KEY (city_id) REFERENCES city (id) \
                 ON UPDATE CASCADE ON DELETE SET NULL) ENGINE=InnoDB"),
        format!("CREATE TABLE rental (id INT NOT NULL PRIMARY KEY, customer_id INT NOT NULL, note VARCHAR(250) CHARACTER SET {cs}, \
                 KEY k_customer (customer_id), CONSTRAINT fk_rental_customer FOREIGN KEY (customer_id) REFERENCES customer (id) \
                 ON UPDATE CASCADE ON DELETE CASCADE) ENGINE=InnoDB"),
        format!("CREATE TABLE memo (id INT NOT NULL PRIMARY KEY, body VARCHAR(250) CHARACTER SET {cs}) ENGINE=MyISAM"),
        // Tags, as old applications kept them: no key at all, rows repeated.
        format!("CREATE TABLE tag (n INT NOT NULL, label VARCHAR(120) CHARACTER SET {cs}) ENGINE=InnoDB"),
        // A denormalised copy of the rentals' notes, kept by the application's triggers.
        format!("CREATE TABLE rental_ft (id INT NOT NULL PRIMARY KEY, note VARCHAR(250) CHARACTER SET {cs}) ENGINE=MyISAM"),
        "CREATE TRIGGER rental_ins AFTER INSERT ON rental FOR EACH ROW \
         INSERT INTO rental_ft (id, note) VALUES (NEW.id, NEW.note)".to_string(),
        "CREATE TRIGGER rental_upd AFTER UPDATE ON rental FOR EACH ROW \
         BEGIN UPDATE rental_ft SET id = NEW.id, note = NEW.note WHERE id = OLD.id; END".to_string(),
        "CREATE TRIGGER rental_del AFTER DELETE ON rental FOR EACH ROW DELETE FROM rental_ft WHERE id = OLD.id".to_string(),
        // One count per application statement that updates customers.
        "CREATE TABLE audit (id INT NOT NULL PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB".to_string(),
        "INSERT INTO audit VALUES (1, 0)".to_string(),
        "CREATE TRIGGER customer_audit AFTER UPDATE ON customer FOR EACH ROW UPDATE audit SET n = n + 1 WHERE id = 1".to_string(),
        "CREATE VIEW customer_list AS SELECT c.id, c.name, ci.name AS city, co.name AS country FROM customer c \
         LEFT JOIN city ci ON ci.id = c.city_id LEFT JOIN country co ON co.id = ci.country_id".to_string(),
    ]
}

/// Each table, its text column and the legacy encoding the application wrote it in.
const TEXT: [(&str, &str, Encoding); 9] = [
    ("country", "name", Windows1251),
    ("city", "name", Windows1251),
    ("store", "name", Windows1251),
    ("staff", "name", Windows1251),
    ("customer", "name", Koi8R),
    ("rental", "note", Windows1251),
    ("memo", "body", Windows1251),
    ("rental_ft", "note", Windows1251),
    ("tag", "label", Windows1251),
];

/// Every table and its columns, as compared at the end.
const COLUMNS: [(&str, &str); 10] = [
    ("country", "id, name"),
    ("city", "id, country_id, name"),
    ("store", "id, manager_id, name"),
    ("staff", "id, store_id, name"),
    ("customer", "id, city_id, name"),
    ("rental", "id, customer_id, note"),
    ("memo", "id, body"),
    ("rental_ft", "id, note"),
    ("audit", "id, n"),
    ("tag", "n, label"),
];

fn encoding_of(table: &str) -> Encoding {
    TEXT.iter().find(|t| t.0 == table).unwrap().2
}

/// Text for row `n` of a table: real Russian sentences, numbered.
fn text(n: u64) -> String {
    let t = RUSSIAN[(n as usize) % RUSSIAN.len()].replace(['ё', 'Ё'], "е");
    format!("{t} #{n}")
}

/// One statement of the application: SQL with `?` for ids and at most one text value.
struct Op {
    sql: String,
    ids: Vec<i64>,
    text: Option<(String, Encoding)>,
}

impl Op {
    fn new(sql: &str, ids: &[i64], text: Option<(String, Encoding)>) -> Op {
        Op {
            sql: sql.to_string(),
            ids: ids.to_vec(),
            text,
        }
    }

    /// Runs it, the text as legacy bytes (`legacy`) or as UTF-8.
    async fn run(&self, c: &mut MySqlConnection, legacy: bool) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(&self.sql);
        if let Some((t, enc)) = &self.text {
            q = if legacy {
                q.bind(bytes(*enc, t))
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

/// Seeds one schema: `legacy` writes the text as its legacy bytes, the control as UTF-8.
async fn seed(c: &mut MySqlConnection, legacy: bool) {
    let mut ops = Vec::new();
    let t = |table: &str, n: u64| Some((text(n), encoding_of(table)));
    for id in 1..=10 {
        ops.push(Op::new(
            "INSERT INTO country (name, id) VALUES (?, ?)",
            &[id],
            t("country", id as u64),
        ));
    }
    for id in 1..=60 {
        ops.push(Op::new(
            "INSERT INTO city (name, id, country_id) VALUES (?, ?, ?)",
            &[id, 1 + id % 10],
            t("city", 100 + id as u64),
        ));
    }
    for id in 1..=4 {
        ops.push(Op::new(
            "INSERT INTO store (name, id) VALUES (?, ?)",
            &[id],
            t("store", 200 + id as u64),
        ));
    }
    for id in 1..=12 {
        ops.push(Op::new(
            "INSERT INTO staff (name, id, store_id) VALUES (?, ?, ?)",
            &[id, 1 + id % 4],
            t("staff", 300 + id as u64),
        ));
    }
    for id in 1..=4 {
        ops.push(Op::new(
            "UPDATE store SET manager_id = ? WHERE id = ?",
            &[id * 3, id],
            None,
        ));
    }
    for id in 1..=500 {
        ops.push(Op::new(
            "INSERT INTO customer (name, id, city_id) VALUES (?, ?, ?)",
            &[id, 1 + id % 60],
            t("customer", 1000 + id as u64),
        ));
    }
    for id in 1..=1200 {
        ops.push(Op::new(
            "INSERT INTO rental (note, id, customer_id) VALUES (?, ?, ?)",
            &[id, 1 + id % 500],
            t("rental", 5000 + id as u64),
        ));
    }
    for id in 1..=150 {
        ops.push(Op::new(
            "INSERT INTO memo (body, id) VALUES (?, ?)",
            &[id],
            t("memo", 9000 + id as u64),
        ));
    }
    for n in 1..=40 {
        for _ in 0..(1 + u64::from(n % 5 == 0)) {
            ops.push(Op::new(
                "INSERT INTO tag (label, n) VALUES (?, ?)",
                &[n as i64],
                t("tag", 12_000 + n),
            ));
        }
    }
    for op in ops {
        op.run(c, legacy)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", op.sql));
    }
}

/// The application: random statements of every kind, each run on the migrated schema (legacy
/// bytes until a table refuses them, UTF-8 after) and then on the control.
struct App {
    x: u64,
    n: u64,
    /// Write number at which a text column first refused the legacy bytes.
    switched_at: Option<u64>,
    /// Whether, at that instant, every table's text column was utf8mb4.
    all_at_once: Option<bool>,
    /// Statements that failed alike on both schemas (a key gone, say).
    failed_alike: u64,
    /// Retries after a transient error on the migrated schema.
    retries: u64,
}

impl App {
    fn next(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.x
    }

    fn op(&mut self) -> Op {
        let r = self.next();
        let pick = |m: u64| 1 + (r >> 16) as i64 % m as i64;
        self.n += 1;
        let n = self.n;
        let t = |table: &str| Some((text(20_000 + n), encoding_of(table)));
        match r % 15 {
            // Child inserts and text edits.
            0 | 1 => Op::new(
                "INSERT INTO rental (note, id, customer_id) VALUES (?, ?, ?)",
                &[100_000 + n as i64, pick(520)],
                t("rental"),
            ),
            2 => Op::new(
                "UPDATE customer SET name = ? WHERE id = ?",
                &[pick(520)],
                t("customer"),
            ),
            3 => Op::new(
                "UPDATE rental SET note = ? WHERE id = ?",
                &[pick(1300)],
                t("rental"),
            ),
            4 => Op::new(
                "UPDATE memo SET body = ? WHERE id = ?",
                &[pick(160)],
                t("memo"),
            ),
            5 => Op::new(
                "INSERT INTO customer (name, id, city_id) VALUES (?, ?, ?)",
                &[200_000 + n as i64, pick(70)],
                t("customer"),
            ),
            // Parent key updates that cascade (the new key is unused: numbered by the write).
            6 => Op::new(
                "UPDATE city SET id = ? WHERE id = ?",
                &[300_000 + n as i64, pick(70)],
                None,
            ),
            7 => Op::new(
                "UPDATE country SET id = ? WHERE id = ?",
                &[400_000 + n as i64, pick(12)],
                None,
            ),
            8 => Op::new(
                "UPDATE store SET id = ? WHERE id = ?",
                &[500_000 + n as i64, pick(6)],
                None,
            ),
            // Deletes that set NULL and that cascade.
            9 => Op::new("DELETE FROM city WHERE id = ?", &[pick(70)], None),
            10 => Op::new("DELETE FROM customer WHERE id = ?", &[pick(520)], None),
            // The keyless table: rows added, edited and removed by a column that is no key.
            12 => Op::new(
                "INSERT INTO tag (label, n) VALUES (?, ?)",
                &[pick(45)],
                t("tag"),
            ),
            13 => Op::new(
                "UPDATE tag SET label = ? WHERE n = ?",
                &[pick(45)],
                t("tag"),
            ),
            14 => Op::new("DELETE FROM tag WHERE n = ?", &[pick(45)], None),
            _ => Op::new(
                "UPDATE staff SET name = ? WHERE id = ?",
                &[pick(14)],
                t("staff"),
            ),
        }
    }

    /// Runs one statement on both schemas; their outcomes must agree.
    async fn step(
        &mut self,
        app: &mut MySqlConnection,
        control: &mut MySqlConnection,
        schema: &str,
    ) {
        let op = self.op();
        let since = std::time::Instant::now();
        let migrated = loop {
            match op.run(app, self.switched_at.is_none()).await {
                Err(e)
                    if e.to_string().contains("Incorrect string value")
                        && self.switched_at.is_none() =>
                {
                    // The tables were swapped: the application switches to UTF-8, and every
                    // table must be utf8mb4 at this very instant.
                    self.switched_at = Some(self.n);
                    let latin1: i64 = sqlx::query_scalar(
                        "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? \
                         AND TABLE_NAME IN ('country','city','store','staff','customer','rental','memo','rental_ft','tag') \
                         AND CHARACTER_SET_NAME = 'latin1'",
                    )
                    .bind(schema)
                    .fetch_one(&mut *app)
                    .await
                    .unwrap();
                    self.all_at_once = Some(latin1 == 0);
                }
                // Transient: a deadlock or lock wait (the application retries), or a
                // statement prepared before the copy's triggers existed (prepared afresh).
                Err(e) if retried(&e, &[], since) => {
                    self.retries += 1;
                    eprintln!("retrying {} {:?}: {e}", op.sql, op.ids);
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
    }
}

fn job_text(schema: &str) -> String {
    let mut t = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 40\n  target_batch_time: 1ms\n  \
         pause_between_batches: 5ms\n  cutover: auto\ntables:\n"
    );
    for (table, col, _) in TEXT {
        t.push_str(&format!(
            "  - name: {table}\n    strategy: copy\n    columns:\n      - name: {col}\n        source: auto\n        \
             target: VARCHAR(250) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n"
        ));
    }
    t
}

fn run_job(url: &str, job: &str, hold_ms: Option<u64>) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args(["run", job, "--execute"])
        .env("MYSQL_URL", url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(ms) = hold_ms {
        cmd.env("MYRECODE_TEST_CUTOVER_HOLD_MS", ms.to_string());
    }
    cmd.spawn().expect("spawn myrecode")
}

/// Every foreign key of the schema: name, child, columns, parent, columns, actions.
async fn constraints(c: &mut MySqlConnection, schema: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT CAST(CONCAT_WS(' ', r.CONSTRAINT_NAME, r.TABLE_NAME, \
         GROUP_CONCAT(k.COLUMN_NAME ORDER BY k.ORDINAL_POSITION), r.REFERENCED_TABLE_NAME, \
         GROUP_CONCAT(k.REFERENCED_COLUMN_NAME ORDER BY k.ORDINAL_POSITION), r.UPDATE_RULE, r.DELETE_RULE) AS CHAR) \
         FROM information_schema.REFERENTIAL_CONSTRAINTS r JOIN information_schema.KEY_COLUMN_USAGE k \
         ON k.CONSTRAINT_SCHEMA = r.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = r.CONSTRAINT_NAME AND k.TABLE_NAME = r.TABLE_NAME \
         WHERE r.CONSTRAINT_SCHEMA = ? GROUP BY r.CONSTRAINT_NAME, r.TABLE_NAME, r.REFERENCED_TABLE_NAME, r.UPDATE_RULE, r.DELETE_RULE \
         ORDER BY 1",
    )
    .bind(schema)
    .fetch_all(c)
    .await
    .unwrap()
}

/// Every trigger of the schema with everything that defines it, and the statement
/// `SHOW CREATE TRIGGER` (so mysqldump) gives back for it.
async fn triggers(c: &mut MySqlConnection, schema: &str) -> Vec<String> {
    let all: Vec<(String, String)> = sqlx::query_as(
        "SELECT CAST(TRIGGER_NAME AS CHAR), CAST(CONCAT_WS(' | ', TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER, \
         ACTION_STATEMENT, SQL_MODE, DEFINER, CHARACTER_SET_CLIENT, COLLATION_CONNECTION) AS CHAR) \
         FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME NOT LIKE '%\\_myrecode\\_rv_' ORDER BY TRIGGER_NAME",
    )
    .bind(schema)
    .fetch_all(&mut *c)
    .await
    .unwrap();
    let mut out = Vec::new();
    for (name, defined) in all {
        let shown: String = sqlx::query(&format!("SHOW CREATE TRIGGER `{schema}`.`{name}`"))
            .fetch_one(&mut *c)
            .await
            .unwrap()
            .get(2);
        // Quoting aside (the cut-over quotes names), the statement as the application wrote
        // it: no schema in it, or a dump loaded under another name would go back to this one.
        out.push(format!("{defined} | {}", shown.replace('`', "")));
    }
    out
}

/// A table's rows, every column as text, ordered by every column (the key first, where
/// there is one).
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

/// What the scenario's steps share: the migrated schema and its control (and a connection
/// to each), the job's file and the URL the runs are given.
struct Scene {
    db: TestDatabase,
    control: TestDatabase,
    c: MySqlConnection,
    k: MySqlConnection,
    /// Holds the job's file for the scenario's life.
    _dir: tempfile::TempDir,
    jobp: String,
    url: String,
    /// The schema's foreign keys and triggers before the job, as they must be at the end.
    before: Vec<String>,
    triggers_before: Vec<String>,
}

/// Where the kills landed: how many, how many inside the cut-over, the checkpoints' phases
/// at each, and the `cut-over:` lines the killed runs printed.
struct Kills {
    kill: usize,
    in_cutover: i64,
    phases: Vec<String>,
    cut_over_lines: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_schema_moves_in_one_cut_over_through_sigkills_and_a_writer() {
    let mut s = the_schema_and_its_control_seeded_and_the_job_checked().await;
    // The application writes for the whole job.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (cfg, ctl, stop, schema) = (
            s.db.config.clone(),
            s.control.config.clone(),
            stop.clone(),
            s.db.name.clone(),
        );
        tokio::spawn(async move { write_until(cfg, ctl, stop, schema).await })
    };
    let mut kills = runs_are_killed_until_three_kills_landed_inside_the_cut_over(&mut s).await;
    let out = run_job(&s.url, &s.jobp, None).wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    kills.cut_over_lines += stdout
        .lines()
        .filter(|l| l.starts_with("cut-over:"))
        .count();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let app = writer.await.unwrap();

    // One cut-over: the application found every table swapped at once, and it happened once.
    assert!(
        app.switched_at.is_some(),
        "the application wrote after the cut-over"
    );
    assert_eq!(
        app.all_at_once,
        Some(true),
        "some tables were still latin1 when others were swapped"
    );
    assert_eq!(kills.cut_over_lines, 1, "{stdout}");
    every_table_and_the_view_equal_the_control_with_the_same_triggers_and_constraints(&mut s).await;
    let Kills {
        kill,
        in_cutover,
        phases,
        ..
    } = kills;
    println!(
        "{kill} SIGKILLs ({in_cutover} inside the cut-over; checkpoints at each: {phases:?}); application: {} writes, switched at {:?}, {} failed alike, {} retried; {}",
        app.n,
        app.switched_at,
        app.failed_alike,
        app.retries,
        stdout.lines().find(|l| l.starts_with("cut-over:")).unwrap_or("")
    );
}

/// The legacy schema and its control, created and seeded (five foreign keys, four
/// triggers), and the job, which `plan --check` accepts.
async fn the_schema_and_its_control_seeded_and_the_job_checked() -> Scene {
    let db = test_database("schema_app");
    let control = test_database("schema_ctl");
    let mut c = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    // The legacy application's bytes go as binary values: a latin1 column stores them as
    // they come, a utf8mb4 one refuses them.
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
    assert_eq!(before.len(), 5, "{before:?}");
    let triggers_before = triggers(&mut c, &db.name).await;
    assert_eq!(triggers_before.len(), 4, "{triggers_before:?}");

    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("app.yaml");
    std::fs::write(&job, job_text(&db.name)).unwrap();
    let jobp = job.to_str().unwrap().to_string();
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["plan", "--check", &jobp]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "plan --check accepts the job: {:?}",
        texts(&out)
    );
    Scene {
        db,
        control,
        c,
        k,
        _dir: dir,
        jobp,
        url,
        before,
        triggers_before,
    }
}

/// At least `KILLS` runs SIGKILLed, and on until three landed inside the cut-over: a loaded
/// machine copies slower, and the kills must reach the cut-over whatever the pace.
async fn runs_are_killed_until_three_kills_landed_inside_the_cut_over(s: &mut Scene) -> Kills {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut phases = Vec::new();
    let mut in_cutover = 0;
    let mut cut_over_lines = 0;
    const KILLS: usize = 22;
    let mut kill = 0;
    while kill < KILLS || (in_cutover < 3 && kill < 4 * KILLS) {
        kill += 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Every killed run holds its cut-over lock 1.5 s, longer than it lives: kills after
        // the copies land inside the one cut-over.
        let mut child = run_job(&s.url, &s.jobp, Some(1500));
        let life = if kill % 3 == 2 {
            40 + x % 300
        } else {
            150 + x % 850
        };
        tokio::time::sleep(Duration::from_millis(life)).await;
        assert!(
            child.try_wait().unwrap().is_none(),
            "run {kill} ended before its kill ({phases:?}): {:?}",
            texts(&child.wait_with_output().unwrap())
        );
        child.kill().unwrap(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        cut_over_lines += texts(&out)
            .0
            .lines()
            .filter(|l| l.starts_with("cut-over:"))
            .count();
        let sentries: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_COMMENT LIKE '%sentry%'",
        )
        .bind(&s.db.name)
        .fetch_one(&mut s.k)
        .await
        .unwrap();
        let phase: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(CONCAT(tbl, ':', phase) AS CHAR) FROM _myrecode_checkpoint ORDER BY tbl",
        )
        .fetch_all(&mut s.c)
        .await
        .unwrap_or_default();
        in_cutover += i64::from(sentries > 0);
        phases.push(format!(
            "{}{}",
            phase.len(),
            if sentries > 0 { "+cut-over" } else { "" }
        ));
    }
    assert!(
        in_cutover >= 3,
        "kills should land inside the cut-over: {phases:?}"
    );
    Kills {
        kill,
        in_cutover,
        phases,
        cut_over_lines,
    }
}

/// Every value recoded right, every write present, every cascade applied; the view reads
/// the new tables; the same triggers, defined exactly as before; the same constraints, on
/// the live tables, no row violating them; no trigger of the job left.
async fn every_table_and_the_view_equal_the_control_with_the_same_triggers_and_constraints(
    s: &mut Scene,
) {
    let (c, k) = (&mut s.c, &mut s.k);
    for (table, cols) in COLUMNS {
        let got = rows(c, table, cols).await;
        let want = rows(k, table, cols).await;
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
    let view = "id, name, city, country";
    let (got, want) = (
        rows(c, "customer_list", view).await,
        rows(k, "customer_list", view).await,
    );
    assert!(
        !got.is_empty() && got == want,
        "the view reads the new tables"
    );
    // The same triggers, defined exactly as before (the tables compared above, `rental_ft`
    // and `audit` among them, show they fired once per statement and never for the copy).
    assert_eq!(triggers(c, &s.db.name).await, s.triggers_before);
    // The same constraints, on the live tables, and no row violates them.
    assert_eq!(constraints(c, &s.db.name).await, s.before);
    for (child, col, parent) in [
        ("city", "country_id", "country"),
        ("staff", "store_id", "store"),
        ("store", "manager_id", "staff"),
        ("customer", "city_id", "city"),
        ("rental", "customer_id", "customer"),
    ] {
        let orphans: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {child} x LEFT JOIN {parent} p ON p.id = x.{col} WHERE x.{col} IS NOT NULL AND p.id IS NULL"
        ))
        .fetch_one(&mut *c)
        .await
        .unwrap();
        assert_eq!(orphans, 0, "{child}.{col} -> {parent}");
    }
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE '%myrecode%' \
         AND TRIGGER_NAME NOT LIKE '%\\_myrecode\\_rv_'",
    )
    .bind(&s.db.name)
    .fetch_one(&mut *c)
    .await
    .unwrap();
    assert_eq!(
        left, 0,
        "no trigger of the job is left (but the back log's, kept for `revert` until `cleanup`)"
    );
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
        n: 0,
        switched_at: None,
        all_at_once: None,
        failed_alike: 0,
        retries: 0,
    };
    while !stop.load(Ordering::SeqCst) {
        a.step(&mut app, &mut control, &schema).await;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    a
}

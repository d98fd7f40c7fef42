//! The refusal rules against a real server, one test per class: `plan` leaves the table out
//! (commented, with the reason), `plan --check` reports it at its line, the rehearsal prints
//! it, and `run --execute` refuses before writing anything (CHECKSUM TABLE unchanged, no
//! `_myrecode_` table or trigger created), all with the same words: the ones
//! `myrecode::job::refusal` gives for the live table.

use crate::common;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::throwaway::{test_database, TestDatabase};
use myrecode::inventory::{self, Scope};
use myrecode::job::finding::Finding;
use myrecode::job::load::load_str;
use myrecode::job::model::Strategy;
use myrecode::job::refusal::{self, Class, Refusal};
use std::path::PathBuf;

/// One database with its tables, a temp dir for the report and jobs, and the binary's URL.
struct Case {
    db: TestDatabase,
    url: String,
    dir: tempfile::TempDir,
}

/// A job table the rules refuse, as the test expects it: its index in the job, name, refusals.
struct Expected {
    index: usize,
    table: String,
    refusals: Vec<Refusal>,
}

impl Case {
    async fn new(hint: &str, schema: &[&str]) -> Case {
        let db = test_database(hint);
        exec_script(&db.config, schema).await;
        let url = db.config.url_with_secret();
        Case {
            db,
            url,
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// Runs the binary: exit code, stdout, stderr.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = myrecode(Some(&self.url), args);
        let (stdout, stderr) = texts(&out);
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.code().unwrap_or(-1), stdout, stderr)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `scan --full --json`, then `plan`: the job text `plan` writes.
    fn plan(&self) -> String {
        let report = self.path("scan.json");
        let (code, stdout, stderr) =
            self.run(&["scan", "--full", "--json", report.to_str().unwrap()]);
        assert!(code <= 1, "scan: {stdout}\n{stderr}");
        let job = self.path("planned.yaml");
        let (code, _, stderr) = self.run(&[
            "plan",
            "--report",
            report.to_str().unwrap(),
            "-o",
            job.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "plan: {stderr}");
        std::fs::read_to_string(job).unwrap()
    }

    /// A job for this database with these table entries, written to `job.yaml`.
    fn job(&self, tables: &str) -> (PathBuf, String) {
        self.job_with("", tables)
    }

    /// [`Case::job`] with more `defaults:` lines (`extra`, each indented, newline-ended).
    fn job_with(&self, extra: &str, tables: &str) -> (PathBuf, String) {
        let text = format!(
            "version: 1\nschema: {}\ndefaults:\n  batch_size: 50\n  pause_between_batches: 0ms\n  cutover: auto\n{extra}tables:\n{tables}",
            self.db.name
        );
        let path = self.path("job.yaml");
        std::fs::write(&path, &text).unwrap();
        (path, text)
    }

    /// What the rules say of each table of `job_text` against the live schema.
    async fn live_refusals(&self, job_text: &str) -> Vec<Expected> {
        let job = load_str(job_text).expect("the test's job loads").job;
        let limit = job.defaults.keyless_max_rows;
        let mut c = self.db.config.connect_one().await.unwrap();
        let mut inv = inventory::take(
            &mut c,
            &Scope {
                schemas: vec![self.db.name.clone()],
                tables: vec![],
            },
        )
        .await
        .unwrap();
        inventory::count_keyless(&mut c, &mut inv.tables, limit)
            .await
            .unwrap();
        job.tables
            .iter()
            .enumerate()
            .map(|(index, tj)| {
                let t = inv
                    .tables
                    .iter()
                    .find(|t| t.name == tj.name)
                    .unwrap_or_else(|| panic!("{} is inventoried", tj.name));
                let mut refusals = refusal::refusals(t, tj, limit);
                refusals.extend(refusal::foreign_key_splits(
                    &refusal::Facts::of_table(t),
                    tj,
                    &job.tables,
                ));
                Expected {
                    index,
                    table: tj.name.clone(),
                    refusals,
                }
            })
            .collect()
    }

    /// Names of myrecode's tables and triggers in the schema (a refused run creates none).
    async fn own_objects(&self) -> Vec<String> {
        let mut c = self.db.config.connect_one().await.unwrap();
        sqlx::query_scalar::<_, String>(
            "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '%myrecode%' \
             UNION ALL SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE '%myrecode%'",
        )
        .bind(&self.db.name)
        .bind(&self.db.name)
        .fetch_all(&mut c)
        .await
        .unwrap()
    }

    /// The four callers on one job: `plan` (its text given, when it could write these
    /// entries) leaves each refused table out with the reason, `plan --check` reports each
    /// refusal at its line, the rehearsal prints each, `run --execute` stops on each before
    /// any write. Returns the refusals, for the test's own assertions on the words.
    async fn refused_everywhere(
        &self,
        planned: Option<&str>,
        tables: &str,
        touched: &[&str],
    ) -> Vec<Expected> {
        self.refused_everywhere_with(planned, "", tables, touched)
            .await
    }

    /// [`Case::refused_everywhere`] for a job with more `defaults:` lines (`extra`).
    async fn refused_everywhere_with(
        &self,
        planned: Option<&str>,
        extra: &str,
        tables: &str,
        touched: &[&str],
    ) -> Vec<Expected> {
        let (job, text) = self.job_with(extra, tables);
        let jobp = job.to_str().unwrap();
        let expected = self.live_refusals(&text).await;
        assert!(
            expected.iter().all(|e| !e.refusals.is_empty()),
            "every table of the job is refused"
        );

        // plan: out of the job, each reason in its comments.
        for e in expected.iter().filter(|_| planned.is_some()) {
            let planned = planned.unwrap_or_default();
            let planned_job = load_str(planned).expect("plan's job loads").job;
            for r in &e.refusals {
                assert!(
                    planned.contains(&r.reason),
                    "plan does not give {:?}:\n{planned}",
                    r.reason
                );
            }
            if e.refusals
                .iter()
                .any(|r| r.class != Class::NonTransactionalInPlace)
            {
                assert!(
                    planned_job.tables.iter().all(|t| t.name != e.table),
                    "{} is in the planned job:\n{planned}",
                    e.table
                );
                for r in &e.refusals {
                    assert!(
                        planned.contains(&r.to_string()),
                        "plan does not give {r}:\n{planned}"
                    );
                }
            }
        }

        // plan --check: one finding per refusal, at its line.
        let (code, stdout, stderr) = self.run(&["plan", "--check", jobp]);
        assert_eq!(code, 1, "plan --check: {stdout}\n{stderr}");
        let locator = load_str(&text).unwrap().locator;
        for e in &expected {
            for r in &e.refusals {
                let mut f: Finding = r.finding(&format!("tables[{}]", e.index));
                f.line = locator.line(&f.path);
                assert!(f.line.is_some(), "{} has a line", f.path);
                let line = f.render(jobp);
                assert!(
                    stdout.lines().any(|l| l == line),
                    "expected {line:?} in:\n{stdout}"
                );
            }
        }

        // The rehearsal: refused, with the same sentence, and exit 1.
        let (code, stdout, stderr) = self.run(&["run", jobp]);
        assert_eq!(code, 1, "rehearsal: {stdout}\n{stderr}");
        assert!(stderr.contains("refused"), "{stderr}");
        for e in &expected {
            assert!(
                !stdout.contains(&format!("  {}: online copy", e.table)),
                "{stdout}"
            );
            assert!(
                !stdout.contains(&format!("  {}: in place", e.table)),
                "{stdout}"
            );
            for r in &e.refusals {
                let line = format!("  {}: refused: {r}", e.table);
                assert!(
                    stdout.lines().any(|l| l == line),
                    "expected {line:?} in:\n{stdout}"
                );
            }
        }

        // --execute: refused before the first write.
        let before = checksums(&self.db.config, touched).await;
        let (code, stdout, stderr) = self.run(&["run", jobp, "--execute"]);
        assert_eq!(code, 2, "run --execute: {stdout}\n{stderr}");
        assert!(stderr.contains("nothing was written"), "{stderr}");
        assert!(
            !stderr.contains("resume with"),
            "nothing to resume: {stderr}"
        );
        for e in &expected {
            for r in &e.refusals {
                let line = format!("  {}: {r}", e.table);
                assert!(
                    stderr.lines().any(|l| l == line),
                    "expected {line:?} in:\n{stderr}"
                );
            }
        }
        assert_eq!(
            checksums(&self.db.config, touched).await,
            before,
            "tables unchanged"
        );
        assert_eq!(
            self.own_objects().await,
            Vec::<String>::new(),
            "nothing of myrecode's created"
        );
        expected
    }
}

/// Inserts `(id, cp1251 bytes of a Russian text)` into `table(id, col)`.
async fn seed_cp1251(case: &Case, table: &str, col: &str) {
    let rows: Vec<(i64, Vec<u8>)> = RUSSIAN
        .iter()
        .take(12)
        .enumerate()
        .map(|(i, t)| (i as i64 + 1, bytes(Windows1251, t)))
        .collect();
    insert_raw(&case.db.config, table, col, &rows).await;
}

const POSTS_COPY: &str = "  - name: posts\n    strategy: copy\n    columns:\n      - name: title\n        source: auto\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n";

/// Every trigger of the schema with everything that defines it.
async fn trigger_definitions(c: &mut sqlx::MySqlConnection, schema: &str) -> Vec<String> {
    sqlx::query_scalar::<_, String>(
        "SELECT CAST(CONCAT_WS(' | ', TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER, \
         ACTION_STATEMENT, SQL_MODE, DEFINER, CHARACTER_SET_CLIENT, COLLATION_CONNECTION, DATABASE_COLLATION) AS CHAR) \
         FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME NOT LIKE '%\\_myrecode\\_rv_' ORDER BY TRIGGER_NAME",
    )
    .bind(schema)
    .fetch_all(c)
    .await
    .unwrap()
}

#[tokio::test]
async fn own_triggers_are_carried_across_the_cut_over_as_defined() {
    let case = Case::new(
        "ref_trig",
        &[
            "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET latin1, hits INT NOT NULL DEFAULT 0) ENGINE=InnoDB",
            "CREATE TABLE posts_ft (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET utf8mb4) ENGINE=MyISAM",
            "SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'",
            "CREATE TRIGGER audit BEFORE UPDATE ON posts FOR EACH ROW SET NEW.hits = NEW.hits + 1",
            "CREATE TRIGGER audit_2 BEFORE UPDATE ON posts FOR EACH ROW SET NEW.hits = NEW.hits * 10",
            "CREATE TRIGGER keep_ft AFTER UPDATE ON posts FOR EACH ROW \
             BEGIN REPLACE INTO posts_ft (id, title) VALUES (NEW.id, NEW.title); END",
        ],
    )
    .await;
    seed_cp1251(&case, "posts", "title").await;
    let mut c = case.db.config.connect_one().await.unwrap();
    let before = trigger_definitions(&mut c, &case.db.name).await;
    assert_eq!(before.len(), 3);
    // Planned, checked and run like any table: nothing refuses it.
    let planned = case.plan();
    assert!(planned.contains("- name: posts"), "{planned}");
    let (job, _) = case.job(POSTS_COPY);
    let jobp = job.to_str().unwrap();
    let (code, stdout, stderr) = case.run(&["plan", "--check", jobp]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (code, stdout, stderr) = case.run(&["run", jobp, "--execute"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // The same triggers, on the recoded table, defined exactly as before; none on the old one.
    assert_eq!(trigger_definitions(&mut c, &case.db.name).await, before);
    let charset: String = sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'title'",
    )
    .bind(&case.db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(charset, "utf8mb4");
    // They fire once per statement, in their order: (0 + 1) * 10; the copy above fired none.
    sqlx::query("UPDATE posts SET title = 'Привет' WHERE id = 1")
        .execute(&mut c)
        .await
        .unwrap();
    let (hits, ft): (i64, String) = sqlx::query_as(
        "SELECT p.hits, CAST(f.title AS CHAR) FROM posts p JOIN posts_ft f ON f.id = p.id WHERE p.id = 1",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(hits, 10);
    assert_eq!(ft, "Привет", "the denormalised copy in step");
    let untouched: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM posts WHERE hits <> 0")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(untouched, 1, "the copy's own writes fired no trigger");
}

#[tokio::test]
async fn a_trigger_with_legacy_text_in_its_body_is_carried_not_refused() {
    let case = Case::new(
        "ref_trig_cs",
        &[
            "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET latin1, hits INT NOT NULL DEFAULT 0) ENGINE=InnoDB",
            // Written by a cp1251 client: the body's Cyrillic cannot be sent again as it was.
            "SET NAMES cp1251",
            "CREATE TRIGGER greet BEFORE INSERT ON posts FOR EACH ROW SET NEW.hits = CHAR_LENGTH('Привет')",
        ],
    )
    .await;
    seed_cp1251(&case, "posts", "title").await;
    // The cut-over recreates it with its text read as the table's values are
    // (tests/it/legacy_app/mod.rs runs one through a migration): no rule refuses it.
    let planned = case.plan();
    assert!(planned.contains("- name: posts"), "{planned}");
}

#[tokio::test]
async fn a_foreign_key_the_job_would_split_between_charsets() {
    let case = Case::new(
        "ref_fk",
        &[
            "CREATE TABLE authors (id INT NOT NULL PRIMARY KEY, code VARCHAR(20) CHARACTER SET latin1 NULL, \
             name VARCHAR(200) CHARACTER SET latin1, UNIQUE KEY u_code (code)) ENGINE=InnoDB",
            "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, author_code VARCHAR(20) CHARACTER SET latin1 NULL, \
             title VARCHAR(200) CHARACTER SET latin1, \
             CONSTRAINT fk_post_author FOREIGN KEY (author_code) REFERENCES authors (code) ON UPDATE CASCADE) ENGINE=InnoDB",
        ],
    )
    .await;
    seed_cp1251(&case, "authors", "name").await;
    exec_script(
        &case.db.config,
        &[
            "UPDATE authors SET code = CONCAT('a', id)",
            "INSERT INTO posts (id, author_code) SELECT id, code FROM authors",
        ],
    )
    .await;
    let mut c = case.db.config.connect_one().await.unwrap();
    for (i, t) in RUSSIAN.iter().take(12).enumerate() {
        sqlx::query("UPDATE posts SET title = ? WHERE id = ?")
            .bind(bytes(Windows1251, t))
            .bind(i as i64 + 1)
            .execute(&mut c)
            .await
            .unwrap();
    }
    // authors.code becomes utf8mb4 while posts.author_code, not in the job, stays latin1.
    let tables = format!(
        "  - name: authors\n    strategy: copy\n    columns:\n      - name: code\n        source: auto\n        target: VARCHAR(20) CHARACTER SET utf8mb4 NULL\n      - name: name\n        source: cp1251\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n{POSTS_COPY}"
    );
    let e = case
        .refused_everywhere(None, &tables, &["authors", "posts"])
        .await;
    for (x, table) in e.iter().zip(["authors", "posts"]) {
        assert_eq!(x.refusals.len(), 1, "{table}");
        assert_eq!(x.refusals[0].class, Class::ForeignKeyCharsetSplit);
    }
    assert_eq!(
        e[0].refusals[0].to_string(),
        "foreign key `fk_post_author` would join authors.code (utf8mb4) to posts.author_code (latin1) after the cut-over: \
         the server keeps no constraint between text columns of different character sets. \
         Fix: recode both columns in this job with targets of the same character set (add posts.author_code with `strategy: copy`), or leave both out"
    );
}

#[tokio::test]
async fn a_keyless_table_over_the_limit() {
    let case = Case::new(
        "ref_nokey",
        &["CREATE TABLE posts (id INT NULL, title VARCHAR(200) CHARACTER SET latin1, UNIQUE KEY u_id (id)) ENGINE=InnoDB"],
    )
    .await;
    seed_cp1251(&case, "posts", "title").await;
    // Twelve rows: the built-in limit rebuilds them under the cut-over's lock; five refuses.
    let e = case
        .refused_everywhere_with(None, "  keyless_max_rows: 5\n", POSTS_COPY, &["posts"])
        .await;
    assert_eq!(e[0].refusals.len(), 1);
    assert_eq!(e[0].refusals[0].class, Class::NoUsableKey);
    assert_eq!(
        e[0].refusals[0].to_string(),
        "table 'posts' has no primary key and no unique key over NOT NULL columns, so batches cannot page over it, \
         and about 12 rows are more than `keyless_max_rows` (5) to rebuild under the cut-over's lock (about 1 ms of pause). \
         Fix: add a primary key (ALTER TABLE `{}`.`posts` ADD PRIMARY KEY (...)) or a unique key over NOT NULL columns, so it is copied online in batches; \
         or raise `keyless_max_rows` above 12 if that pause is acceptable; or leave the table out of the job"
            .replace("{}", &case.db.name)
    );
}

#[tokio::test]
async fn key_column_in_the_job() {
    let case = Case::new(
        "ref_keycol",
        &["CREATE TABLE tags (name VARCHAR(50) CHARACTER SET latin1 NOT NULL PRIMARY KEY, uses INT NOT NULL) ENGINE=InnoDB"],
    )
    .await;
    let mut c = case.db.config.connect_one().await.unwrap();
    for (i, t) in RUSSIAN.iter().take(12).enumerate() {
        let name: String = t.chars().take(40).collect();
        sqlx::query("INSERT INTO tags (name, uses) VALUES (?, ?)")
            .bind(bytes(Windows1251, &format!("{name} {i}")))
            .bind(i as i64)
            .execute(&mut c)
            .await
            .unwrap();
    }
    // A key the job recodes in a label the server lacks is rebuilt under the cut-over's
    // lock: refused above the limit (one the server reads is copied online, any size).
    let tables = "  - name: tags\n    strategy: copy\n    columns:\n      - name: name\n        source: iso-8859-5\n        target: VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL\n";
    let e = case
        .refused_everywhere_with(None, "  keyless_max_rows: 5\n", tables, &["tags"])
        .await;
    assert_eq!(e[0].refusals.len(), 1);
    assert_eq!(
        (
            e[0].refusals[0].class,
            e[0].refusals[0].path("tables[0]").as_str()
        ),
        (Class::KeyColumnInJob, "tables[0].columns[0].name")
    );
    assert!(
        e[0].refusals[0].reason.starts_with(
            "column 'name' of table 'tags' is part of its key (PRIMARY) and its `source: iso-8859-5` has no charset on the server: such a table is rebuilt under the cut-over's lock, and about 12 rows are more than `keyless_max_rows` (5)"
        ),
        "{}",
        e[0].refusals[0]
    );
}

#[tokio::test]
async fn name_too_long() {
    // 52 characters: the side tables' names are cut and hashed, and the letter past ASCII
    // at the cut sorts after their `~`, so they would sort before the table.
    let name = format!("{}ы{}", "a".repeat(42), "b".repeat(9));
    let case = Case::new(
        "ref_long",
        &[&format!(
            "CREATE TABLE `{name}` (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET latin1) ENGINE=InnoDB"
        )],
    )
    .await;
    seed_cp1251(&case, &name, "title").await;
    let planned = case.plan();
    let tables = POSTS_COPY.replace("name: posts", &format!("name: \"{name}\""));
    let e = case
        .refused_everywhere(Some(&planned), &tables, &[&name])
        .await;
    assert_eq!(e[0].refusals.len(), 1);
    assert_eq!(e[0].refusals[0].class, Class::NameTooLong);
    assert_eq!(
        e[0].refusals[0].fix,
        "rename the table to at most 51 characters for the job"
    );
}

#[tokio::test]
async fn in_place_on_a_type_without_utf8_and_a_key_that_is_not_the_paging_key() {
    let case = Case::new(
        "ref_strategy",
        &["CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, code INT NOT NULL DEFAULT 0, title VARCHAR(200) CHARACTER SET latin1) ENGINE=InnoDB"],
    )
    .await;
    seed_cp1251(&case, "posts", "title").await;
    // A second key batches could page over, which the job then names.
    exec_script(
        &case.db.config,
        &[
            "UPDATE posts SET code = id",
            "ALTER TABLE posts ADD UNIQUE KEY u_code (code)",
        ],
    )
    .await;
    // The plan picks what the rules allow: a copy, paged by the primary key.
    let planned = case.plan();
    let job = load_str(&planned).unwrap().job;
    assert_eq!(job.tables[0].strategy, Strategy::Copy, "{planned}");
    assert_eq!(job.tables[0].key.as_deref(), Some(&["id".to_string()][..]));
    let tables = POSTS_COPY
        .replace("strategy: copy", "strategy: in-place\n    key: [code]")
        .replace(
            "VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
            "VARCHAR(200) CHARACTER SET latin1",
        );
    let (_, text) = case.job(&tables);
    let e = case.live_refusals(&text).await;
    let classes: Vec<Class> = e[0].refusals.iter().map(|r| r.class).collect();
    assert_eq!(classes, [Class::KeyMismatch, Class::InPlaceCannotHoldUtf8]);
    // The plan chose neither: check, rehearsal and execute.
    case.refused_everywhere(None, &tables, &["posts"]).await;
}

/// `notes(id, body)` on `engine`, `body` utf8mb4 holding cp1251>latin1 mojibake: (id, stored, right).
async fn seed_mojibake(case: &Case, engine: &str) -> Vec<(i64, String, String)> {
    exec_script(
        &case.db.config,
        &[&format!("CREATE TABLE notes (id INT NOT NULL PRIMARY KEY, body VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci) ENGINE={engine}")],
    )
    .await;
    let rows: Vec<(i64, String, String)> = RUSSIAN
        .iter()
        .take(12)
        .enumerate()
        .map(|(i, t)| {
            (
                i as i64 + 1,
                mojibake(Windows1251, Latin1, t),
                t.to_string(),
            )
        })
        .collect();
    let text: Vec<(i64, String)> = rows.iter().map(|(i, s, _)| (*i, s.clone())).collect();
    insert_text(&case.db.config, "notes", "body", &text).await;
    rows
}

async fn bodies(case: &Case, table: &str) -> Vec<(i64, String)> {
    let mut c = case.db.config.connect_one().await.unwrap();
    sqlx::query_as(&format!(
        "SELECT id, CAST(body AS CHAR) FROM {} ORDER BY id",
        myrecode::db::quote::ident(table)
    ))
    .fetch_all(&mut c)
    .await
    .unwrap()
}

#[tokio::test]
async fn myisam_refuses_in_place_and_the_plan_copies_it() {
    let case = Case::new("ref_myisam", &[]).await;
    let rows = seed_mojibake(&case, "MyISAM").await;
    let planned = case.plan();
    let tables = "  - name: notes\n    strategy: in-place\n    columns:\n      - name: body\n        source: auto\n        target: VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n";
    let e = case
        .refused_everywhere(Some(&planned), tables, &["notes"])
        .await;
    assert_eq!(e[0].refusals.len(), 1);
    let r = &e[0].refusals[0];
    assert_eq!(
        (r.class, r.path("tables[0]").as_str()),
        (Class::NonTransactionalInPlace, "tables[0].strategy")
    );
    assert!(
        r.reason
            .starts_with("table 'notes' uses the MyISAM engine, which has no transactions"),
        "{r}"
    );

    // The plan chose the copy, with the reason beside it; run as planned, it repairs every row.
    let job = load_str(&planned).unwrap().job;
    assert_eq!(job.tables[0].strategy, Strategy::Copy, "{planned}");
    assert!(
        planned.contains(&format!(
            "strategy: copy   # the column types already hold UTF-8, but {}",
            r.reason
        )),
        "{planned}"
    );
    let path = case.path("planned.yaml");
    std::fs::write(&path, planned.replace("cutover: manual", "cutover: auto")).unwrap();
    let (code, stdout, stderr) = case.run(&["run", path.to_str().unwrap(), "--execute"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let want: Vec<(i64, String)> = rows.iter().map(|(i, _, r)| (*i, r.clone())).collect();
    assert_eq!(bodies(&case, "notes").await, want);
    let kept = bodies(&case, "notes_myrecode_old").await;
    assert_eq!(
        kept.len(),
        rows.len(),
        "cut over: the original kept beside it"
    );
}

#[tokio::test]
async fn myisam_under_copy_is_recoded_and_cut_over() {
    let case = Case::new(
        "ref_myisam_copy",
        &["CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET latin1) ENGINE=MyISAM"],
    )
    .await;
    seed_cp1251(&case, "posts", "title").await;
    let planned = case.plan();
    let job = load_str(&planned).unwrap().job;
    assert_eq!(job.tables[0].strategy, Strategy::Copy, "{planned}");
    let path = case.path("planned.yaml");
    std::fs::write(&path, planned.replace("cutover: manual", "cutover: auto")).unwrap();
    let (code, stdout, stderr) = case.run(&["run", path.to_str().unwrap()]);
    assert_eq!(code, 0, "rehearsal: {stdout}\n{stderr}");
    assert!(
        stdout.contains("posts: online copy into posts_myrecode_new"),
        "{stdout}"
    );
    let (code, stdout, stderr) = case.run(&["run", path.to_str().unwrap(), "--execute"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let mut c = case.db.config.connect_one().await.unwrap();
    let (charset, engine): (String, String) = sqlx::query_as(
        "SELECT CAST(c.CHARACTER_SET_NAME AS CHAR), CAST(t.ENGINE AS CHAR) FROM information_schema.COLUMNS c \
         JOIN information_schema.TABLES t USING (TABLE_SCHEMA, TABLE_NAME) \
         WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = 'posts' AND c.COLUMN_NAME = 'title'",
    )
    .bind(&case.db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!((charset.as_str(), engine.as_str()), ("utf8mb4", "MyISAM"));
    let titles: Vec<(i64, String)> = sqlx::query_as("SELECT id, title FROM posts ORDER BY id")
        .fetch_all(&mut c)
        .await
        .unwrap();
    let want: Vec<(i64, String)> = RUSSIAN
        .iter()
        .take(12)
        .enumerate()
        .map(|(i, t)| (i as i64 + 1, t.to_string()))
        .collect();
    assert_eq!(titles, want);
    let (code, stdout, stderr) = case.run(&["verify", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

#[tokio::test]
async fn a_finished_copy_is_not_refused_for_triggers_put_back_after_its_cut_over() {
    let case = Case::new(
        "ref_after",
        &["CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET latin1, hits INT NOT NULL DEFAULT 0) ENGINE=InnoDB"],
    )
    .await;
    seed_cp1251(&case, "posts", "title").await;
    let (job, _) = case.job(POSTS_COPY);
    let jobp = job.to_str().unwrap();
    let (code, stdout, stderr) = case.run(&["run", jobp, "--execute"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // As the refusal's fix says: the trigger comes back once the table is swapped.
    exec_script(
        &case.db.config,
        &["CREATE TRIGGER audit BEFORE UPDATE ON posts FOR EACH ROW SET NEW.hits = NEW.hits + 1"],
    )
    .await;
    let before = checksums(&case.db.config, &["posts"]).await;
    for args in [
        vec!["run", jobp],
        vec!["run", jobp, "--execute"],
        vec!["verify", jobp],
    ] {
        let (code, stdout, stderr) = case.run(&args);
        assert_eq!(code, 0, "{args:?}: {stdout}\n{stderr}");
        assert!(!stdout.contains("refused"), "{args:?}: {stdout}");
    }
    assert_eq!(checksums(&case.db.config, &["posts"]).await, before);
}

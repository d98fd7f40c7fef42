//! `myrecode rehearse` end to end: dumps made with `mariadb-dump` from the throwaway server
//! (a sample legacy database, and tables seeded with undecidable values and one without a key), each
//! rehearsed on a throwaway server of its own; the exit code and the JUnit XML (parsed back
//! here) agree with the summary the command prints.

use crate::common;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::throwaway::{find_client, test_database, TestDatabase};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Dumps `db` with mariadb-dump (or mysqldump) into `path`; `--databases` adds `CREATE
/// DATABASE` and `USE`, as a whole-server dump has them.
fn dump(db: &TestDatabase, path: &Path, with_use: bool, gzip: bool) {
    let program = ["mariadb-dump", "mysqldump"]
        .iter()
        .flat_map(|n| ["/usr/bin", "/usr/local/bin", "/usr/local/mysql/bin"].map(|d| Path::new(d).join(n)))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("mariadb-dump is needed to make the test's dump. Fix: apt-get install -y mariadb-client")
        });
    assert!(
        find_client().is_some(),
        "the mariadb client is needed. Fix: apt-get install -y mariadb-client"
    );
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("dump.cnf");
    let admin = db.config.with_database(None);
    std::fs::write(&cnf, myrecode::rehearse::dump::client_options(&admin)).unwrap();
    let mut cmd = Command::new(program);
    cmd.arg(format!("--defaults-file={}", cnf.display())).args([
        "--single-transaction",
        "--triggers",
        "--routines",
    ]);
    if with_use {
        cmd.arg("--databases");
    }
    let out = cmd.arg(&db.name).output().unwrap();
    assert!(
        out.status.success(),
        "mariadb-dump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = if gzip {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&out.stdout).unwrap();
        enc.finish().unwrap()
    } else {
        out.stdout
    };
    std::fs::write(path, bytes).unwrap();
}

/// What `rehearse` said: exit code, stdout, stderr, and the JUnit XML it wrote.
struct Rehearsed {
    code: i32,
    stdout: String,
    stderr: String,
    xml: String,
}

fn rehearse(dump: &Path, extra: &[&str], dir: &Path) -> Rehearsed {
    let junit = dir.join("report.xml");
    let mut args = vec![
        "rehearse",
        "--dump",
        dump.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = myrecode(None, &args);
    let (stdout, stderr) = texts(&out);
    let xml = std::fs::read_to_string(&junit)
        .unwrap_or_else(|e| panic!("no JUnit report ({e}): {stdout}\n{stderr}"));
    Rehearsed {
        code: out.status.code().unwrap_or(-1),
        stdout,
        stderr,
        xml,
    }
}

/// The number the printed summary line puts before `phrase` (`"refused"`, `"table(s)"`, ...).
fn count(stdout: &str, phrase: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("rehearse: "))
        .unwrap_or_else(|| panic!("no summary line: {stdout}"));
    let at = line
        .find(&format!(" {phrase}"))
        .unwrap_or_else(|| panic!("no {phrase:?} in {line}"));
    let digits: String = line[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.chars().rev().collect::<String>().parse().unwrap()
}

/// A parsed test case: (suite, name, failure type, failure message).
type Case = (String, String, Option<String>, Option<String>);

/// Parses the JUnit XML and checks its totals against its test cases.
fn cases(xml: &str) -> Vec<Case> {
    let doc =
        roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("invalid XML ({e}): {xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let mut out = Vec::new();
    for suite in root.children().filter(|n| n.has_tag_name("testsuite")) {
        let mut failed = 0;
        let mut n = 0;
        for tc in suite.children().filter(|n| n.has_tag_name("testcase")) {
            n += 1;
            let failure = tc.children().find(|n| n.has_tag_name("failure"));
            failed += failure.is_some() as u64;
            out.push((
                suite.attribute("name").unwrap().to_string(),
                tc.attribute("name").unwrap().to_string(),
                failure
                    .and_then(|f| f.attribute("type"))
                    .map(str::to_string),
                failure
                    .and_then(|f| f.attribute("message"))
                    .map(str::to_string),
            ));
        }
        assert_eq!(suite.attribute("tests"), Some(n.to_string().as_str()));
        assert_eq!(
            suite.attribute("failures"),
            Some(failed.to_string().as_str())
        );
    }
    let failed = out.iter().filter(|c| c.2.is_some()).count();
    assert_eq!(
        root.attribute("tests"),
        Some(out.len().to_string().as_str())
    );
    assert_eq!(
        root.attribute("failures"),
        Some(failed.to_string().as_str())
    );
    out
}

/// Checks that the XML's counts are the printed summary's.
fn agree(r: &Rehearsed) -> Vec<Case> {
    let c = cases(&r.xml);
    let n = |phrase: &str| count(&r.stdout, phrase);
    let kind = |k: &str| c.iter().filter(|x| x.2.as_deref() == Some(k)).count() as u64;
    assert_eq!(n("table(s)"), c.len() as u64, "{}", r.stdout);
    assert_eq!(
        n("failed"),
        c.iter().filter(|x| x.2.is_some()).count() as u64
    );
    assert_eq!(n("refused"), kind("refused"));
    assert_eq!(n("with undecided values"), kind("undecided"));
    assert_eq!(n("unproven"), kind("unproven"));
    assert_eq!(
        n("recoded") + n("with nothing to recode"),
        c.iter().filter(|x| x.2.is_none()).count() as u64
    );
    assert!(
        r.stdout.contains("Throwaway server removed."),
        "{}",
        r.stdout
    );
    c
}

#[tokio::test]
async fn a_clean_sample_dump_gzip_recodes_and_exits_0() {
    let db = test_database("reh_clean");
    let (_, ddl, data) = myrecode::demo::SAMPLES[2];
    let stmts: Vec<String> = myrecode::demo::statements(ddl)
        .into_iter()
        .chain(myrecode::demo::statements(data))
        .collect();
    let refs: Vec<&str> = stmts.iter().map(String::as_str).collect();
    exec_script(&db.config, &refs).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalogue.sql.gz");
    dump(&db, &path, true, true);
    let r = rehearse(&path, &[], dir.path());
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let c = agree(&r);
    assert!(c.iter().all(|x| x.0 == db.name && x.2.is_none()), "{c:?}");
    for t in ["san_pham", "danh_muc", "cua_hang"] {
        assert!(c.iter().any(|x| x.1 == t), "{t} missing: {c:?}");
        assert!(
            r.stdout.contains(&format!("{}.{t}: recoded ", db.name)),
            "{}",
            r.stdout
        );
    }
}

/// Legacy cp1251 text in `notes`, with `undecidable` rows the detector cannot decide.
async fn seed_notes(db: &TestDatabase, undecidable: &[i64]) {
    exec_script(
        &db.config,
        &["CREATE TABLE notes (id INT NOT NULL PRIMARY KEY, body TEXT CHARACTER SET latin1) ENGINE=InnoDB"],
    )
    .await;
    let mut rows: Vec<(i64, Vec<u8>)> = RUSSIAN
        .iter()
        .enumerate()
        .map(|(i, t)| (i as i64 + 1, bytes(Windows1251, t)))
        .collect();
    for id in undecidable {
        let mut v = format!("Order {id} ").into_bytes();
        v.extend_from_slice(&[0x9A, 0x9B]);
        rows.push((*id, v));
    }
    insert_raw(&db.config, "notes", "body", &rows).await;
}

#[tokio::test]
async fn undecided_values_fail_their_table_and_exit_1() {
    let db = test_database("reh_undecided");
    seed_notes(&db, &[1002, 2002]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.sql");
    dump(&db, &path, false, false);
    // The plan would read them as cp1251, the column's one label (`undecidable: use cp1251`):
    // the job keeps them for review. The copy holds its cut-over on them.
    let job: PathBuf = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  undecidable: quarantine\ntables:\n\
             \x20 - name: notes\n    strategy: copy\n    columns:\n      - name: body\n        source: auto\n        \
             target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
            db.name
        ),
    )
    .unwrap();
    let r = rehearse(&path, &["--job", job.to_str().unwrap()], dir.path());
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("held: notes holds 2 value(s)"),
        "{}",
        r.stdout
    );
    let c = agree(&r);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].1, "notes");
    assert_eq!(c[0].2.as_deref(), Some("undecided"));
    let msg = c[0].3.as_deref().unwrap();
    assert!(msg.contains("2 undecided value(s)"), "{msg}");
    // The server is gone: the values are in the report, not behind a table name.
    for key in ["key [1002]", "key [2002]"] {
        assert!(
            r.xml.contains(key) && r.stdout.contains(key),
            "{key}: {}\n{}",
            r.stdout,
            r.xml
        );
    }
    assert!(r.xml.contains("bytes 0x4f72646572"), "{}", r.xml);
    assert!(
        !r.stdout.contains("_myrecode_quarantine") && !r.xml.contains("_myrecode_quarantine"),
        "{}",
        r.stdout
    );
    assert_eq!(count(&r.stdout, "value(s))"), 2, "{}", r.stdout);
}

#[tokio::test]
async fn a_table_without_a_key_over_the_limit_is_refused_and_exits_3_with_a_job() {
    let db = test_database("reh_refused");
    seed_notes(&db, &[]).await;
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT NULL, title VARCHAR(200) CHARACTER SET latin1, hits INT NOT NULL DEFAULT 0) ENGINE=InnoDB",
        ],
    )
    .await;
    let rows: Vec<(i64, Vec<u8>)> = RUSSIAN
        .iter()
        .enumerate()
        .map(|(i, t)| (i as i64 + 1, bytes(Windows1251, t)))
        .collect();
    insert_raw(&db.config, "posts", "title", &rows).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.sql");
    dump(&db, &path, false, false);
    let job: PathBuf = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  keyless_max_rows: 5\ntables:\n\
             \x20 - name: posts\n    strategy: copy\n    columns:\n      - name: title\n        source: auto\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n\
             \x20 - name: notes\n    strategy: copy\n    columns:\n      - name: body\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
            db.name
        ),
    )
    .unwrap();
    let r = rehearse(&path, &["--job", job.to_str().unwrap()], dir.path());
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    let c = agree(&r);
    let posts = c.iter().find(|x| x.1 == "posts").expect("posts reported");
    assert_eq!(posts.2.as_deref(), Some("refused"));
    assert!(
        posts
            .3
            .as_deref()
            .unwrap()
            .contains("has no primary key and no unique key over NOT NULL columns"),
        "{posts:?}"
    );
    let notes = c.iter().find(|x| x.1 == "notes").expect("notes reported");
    assert_eq!(
        notes.2, None,
        "the other table still runs and passes: {c:?}"
    );
    assert!(
        r.stdout.contains(&format!(
            "{}.notes: recoded 20 value(s) (copy, 20 rows read); verified",
            db.name
        )),
        "{}",
        r.stdout
    );
}

#[test]
fn bad_input_is_refused_before_a_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = myrecode(None, &["rehearse", "--dump", "/no/such/dump.sql"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot read the dump /no/such/dump.sql") && stderr.contains("Fix:"),
        "{stderr}"
    );
    assert!(!stdout.contains("Starting a throwaway server"), "{stdout}");
    let dump = dir.path().join("d.sql");
    std::fs::write(&dump, "SELECT 1;\n").unwrap();
    let job = dir.path().join("job.yaml");
    std::fs::write(&job, "version: 1\nschema: s\ntables: nope\n").unwrap();
    let out = myrecode(
        None,
        &[
            "rehearse",
            "--dump",
            dump.to_str().unwrap(),
            "--job",
            job.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not valid") && stderr.contains("Fix:"),
        "{stderr}"
    );
    assert!(!stdout.contains("Starting a throwaway server"), "{stdout}");
}

#[test]
fn a_dump_that_does_not_load_is_an_error_in_the_report_and_the_server_goes() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("broken.sql");
    std::fs::write(
        &dump,
        // The guard lets it through (an INSERT); the server refuses it (column count).
        "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2, 3);\n",
    )
    .unwrap();
    let junit = dir.path().join("report.xml");
    let out = myrecode(
        None,
        &[
            "rehearse",
            "--dump",
            dump.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--partial-dump-ok",
        ],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("loading the dump")
            && stderr.contains("at line 3")
            && stderr.contains("Fix:"),
        "{stderr}"
    );
    assert!(stdout.contains("Throwaway server removed."), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let error = doc
        .descendants()
        .find(|n| n.has_tag_name("error"))
        .expect("an <error>");
    assert!(
        error.attribute("message").unwrap().contains("at line 3"),
        "{xml}"
    );
}

/// Runs `rehearse` with `env` set, in `dir`; the JUnit report is `dir/report.xml` (may be absent).
fn rehearse_with(
    env: &[(&str, &str)],
    args: &[&str],
    dir: &Path,
) -> (i32, String, String, Option<String>) {
    let junit = dir.join("report.xml");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.arg("rehearse")
        .args(args)
        .arg("--junit")
        .arg(&junit)
        .env_remove("MYSQL_TEST_URL")
        .env_remove("MYSQL_URL")
        .env_remove("MYSQL_PWD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let (stdout, stderr) = texts(&out);
    (
        out.status.code().unwrap_or(-1),
        stdout,
        stderr,
        std::fs::read_to_string(&junit).ok(),
    )
}

/// The `<error>` message of a JUnit report, which must hold exactly one test case.
fn junit_error(xml: Option<&str>) -> String {
    let xml = xml.expect("a JUnit report is written on exit 2");
    let doc = roxmltree::Document::parse(xml).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .count(),
        1,
        "{xml}"
    );
    doc.descendants()
        .find(|n| n.has_tag_name("error"))
        .unwrap_or_else(|| panic!("no <error>: {xml}"))
        .attribute("message")
        .unwrap()
        .to_string()
}

/// CHECKSUM TABLE and CREATE_TIME of each table of `db`: what a reload would change.
async fn fingerprint(db: &TestDatabase) -> Vec<(String, Option<i64>, Option<String>)> {
    let mut c = db.config.connect_one().await.unwrap();
    let tables: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT CAST(TABLE_NAME AS CHAR), CAST(CREATE_TIME AS CHAR) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME",
    )
    .bind(&db.name)
    .fetch_all(&mut c)
    .await
    .unwrap();
    let mut out = Vec::new();
    for (t, created) in tables {
        let row: (String, Option<i64>) = sqlx::query_as(&format!(
            "CHECKSUM TABLE {}",
            myrecode::db::quote::table(&db.name, &t)
        ))
        .fetch_one(&mut c)
        .await
        .unwrap();
        out.push((t, row.1, created));
    }
    out
}

#[tokio::test]
async fn a_given_server_that_holds_the_dumps_schema_is_refused_and_left_byte_identical() {
    let db = test_database("reh_given");
    seed_notes(&db, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.sql");
    dump(&db, &path, true, false);
    let before = fingerprint(&db).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert!(before[0].1.is_some() && before[0].2.is_some(), "{before:?}");
    // CREATE_TIME has whole seconds: a table recreated now would show a later one.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let url = db.config.with_database(None).url_with_secret();
    let (code, stdout, stderr, xml) = rehearse_with(
        &[("MYSQL_TEST_URL", &url)],
        &["--dump", path.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("already has schema(s) {}", db.name))
            && stderr.contains("nothing of the dump was sent")
            && stderr.contains("Fix: point MYSQL_TEST_URL at a server without them"),
        "{stderr}"
    );
    assert!(!stdout.contains("Starting a throwaway server"), "{stdout}");
    assert!(!stdout.contains("Throwaway server removed"), "{stdout}");
    assert!(stdout.contains("given by MYSQL_TEST_URL"), "{stdout}");
    let password = db.config.password().unwrap_or("no password set");
    assert!(
        !stdout.contains(password) && !stderr.contains(password),
        "the password leaked"
    );
    assert!(junit_error(xml.as_deref()).contains("already has schema(s)"));
    assert_eq!(
        fingerprint(&db).await,
        before,
        "the given server's schema changed"
    );
}

#[tokio::test]
async fn a_given_server_without_the_dumps_schemas_is_used_and_what_was_created_dropped() {
    let db = test_database("reh_given_ok");
    seed_notes(&db, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.sql");
    dump(&db, &path, false, false);
    let target = format!("{}_rehearsed", db.name);
    let url = db.config.with_database(None).url_with_secret();
    let (code, stdout, stderr, xml) = rehearse_with(
        &[("MYSQL_TEST_URL", &url)],
        &["--dump", path.to_str().unwrap(), "--database", &target],
        dir.path(),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("{target}.notes: recoded 20 value(s)")),
        "{stdout}"
    );
    assert!(!stdout.contains("Starting a throwaway server"), "{stdout}");
    assert!(
        stdout.contains("Dropped the schema(s) the rehearsal created on mysql://")
            && stdout.contains(&format!("({target}); the server stays.")),
        "{stdout}"
    );
    assert!(xml.unwrap().contains("tests=\"1\""));
    let mut c = db.config.connect_one().await.unwrap();
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
    )
    .bind(&target)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(
        left, 0,
        "the rehearsal's schema was left on the given server"
    );
}

#[tokio::test]
async fn a_dump_cut_between_statements_is_refused_naming_the_tables_it_lacks() {
    let db = test_database("reh_cut");
    seed_notes(&db, &[]).await;
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY)",
            "INSERT INTO posts VALUES (1)",
        ],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.sql");
    dump(&db, &whole, true, false);
    let text = std::fs::read_to_string(&whole).unwrap();
    let cut_at = text
        .find("DROP TABLE IF EXISTS `posts`;\n")
        .expect("posts dumped")
        + "DROP TABLE IF EXISTS `posts`;\n".len();
    let path = dir.path().join("cut.sql");
    std::fs::write(&path, &text[..cut_at]).unwrap();
    for extra in [&[][..], &["--partial-dump-ok"][..]] {
        let mut args = vec!["--dump", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (code, stdout, stderr, xml) = rehearse_with(&[], &args, dir.path());
        assert_eq!(code, 2, "{extra:?}: {stdout}\n{stderr}");
        let named = format!("never creates: {}.posts", db.name);
        assert!(
            stderr.contains(&named) && stderr.contains("Fix:"),
            "{extra:?}: {stderr}"
        );
        if extra.is_empty() {
            assert!(
                stderr.contains("-- Dump completed") && stderr.contains("--partial-dump-ok"),
                "{stderr}"
            );
        }
        assert!(
            !stdout.contains("Starting a throwaway server"),
            "refused before a server: {stdout}"
        );
        assert!(junit_error(xml.as_deref()).contains(&named));
    }
}

#[test]
fn a_table_the_dump_creates_but_the_load_loses_fails_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drops.sql");
    std::fs::write(
        &path,
        "CREATE TABLE kept (id INT PRIMARY KEY);\nCREATE TABLE lost (id INT PRIMARY KEY);\nDROP TABLE lost;\n-- Dump completed on 2024-01-01\n",
    )
    .unwrap();
    let (code, stdout, stderr, xml) =
        rehearse_with(&[], &["--dump", path.to_str().unwrap()], dir.path());
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("1 of the 2 table(s) it creates are missing: rehearsal.lost"),
        "{stderr}"
    );
    assert!(stdout.contains("Throwaway server removed."), "{stdout}");
    assert!(junit_error(xml.as_deref()).contains("rehearsal.lost"));
}

#[test]
fn a_dump_without_tables_fails_rather_than_passing_with_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.sql");
    std::fs::write(&path, "SELECT 1;\n-- Dump completed on 2024-01-01\n").unwrap();
    let (code, stdout, stderr, xml) =
        rehearse_with(&[], &["--dump", path.to_str().unwrap()], dir.path());
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("creates no table") && stderr.contains("Fix:"),
        "{stderr}"
    );
    assert!(!stdout.contains("0 table(s)"), "{stdout}");
    assert!(junit_error(xml.as_deref()).contains("creates no table"));
}

#[test]
fn junit_is_written_on_exit_2_for_a_missing_dump_and_an_invalid_job() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr, xml) = rehearse_with(&[], &["--dump", "/no/such/dump.sql"], dir.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(junit_error(xml.as_deref()).contains("cannot read the dump /no/such/dump.sql"));
    let dump = dir.path().join("d.sql");
    std::fs::write(&dump, "CREATE TABLE t (a INT);\n-- Dump completed\n").unwrap();
    let job = dir.path().join("job.yaml");
    std::fs::write(&job, "version: 1\nschema: s\ntables: nope\n").unwrap();
    std::fs::remove_file(dir.path().join("report.xml")).unwrap();
    let (code, _, stderr, xml) = rehearse_with(
        &[],
        &[
            "--dump",
            dump.to_str().unwrap(),
            "--job",
            job.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(junit_error(xml.as_deref()).contains("is not valid"));
}

//! `plan --check` against a real server: one malformed job per error class, each message with
//! its line, field, problem and fix; a valid job passes; `plan` writes a job that checks clean.

use crate::common;
use common::{exec_script, myrecode, texts};
use myrecode::db::throwaway::{test_database, TestDatabase};
use std::path::PathBuf;

const SCHEMA: &[&str] = &[
    "CREATE TABLE legacy (
        id INT NOT NULL PRIMARY KEY,
        name VARCHAR(100) CHARACTER SET latin1 NOT NULL,
        title VARCHAR(255) CHARACTER SET latin1,
        body TEXT CHARACTER SET latin1,
        token CHAR(32) CHARACTER SET latin1,
        KEY idx_title (title)
    ) ENGINE=InnoDB ROW_FORMAT=COMPACT",
    "CREATE TABLE nokey (
        msg VARCHAR(200) CHARACTER SET latin1, at DATETIME, UNIQUE KEY u_msg (msg)
    ) ENGINE=InnoDB",
    "CREATE TABLE modern (
        id INT NOT NULL PRIMARY KEY,
        code INT NOT NULL,
        note VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci,
        UNIQUE KEY u_code (code),
        UNIQUE KEY u_note (note)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
];

/// The valid job; each case edits one line of it.
const VALID: &str = "\
# a hand-written job
version: 1
schema: SCHEMA
defaults:
  batch_size: 500
  target_batch_time: 250ms
tables:
  - name: legacy
    strategy: copy
    columns:
      - name: name
        source: auto
        target: VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL
      - name: title
        source: cp1251
        target: VARCHAR(255) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci
      - name: body
        source: koi8-r
        target: MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci
  - name: modern
    strategy: in-place
    key: [id]
    columns:
      - name: note
        source: utf-8>latin1
        target: VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci
";

struct Fixture {
    db: TestDatabase,
    url: String,
    dir: tempfile::TempDir,
}

async fn fixture(hint: &str) -> Fixture {
    let db = test_database(hint);
    exec_script(&db.config, SCHEMA).await;
    let url = db.config.url_with_secret();
    Fixture {
        db,
        url,
        dir: tempfile::tempdir().expect("temp dir"),
    }
}

impl Fixture {
    /// The valid job for this database with `from` replaced by `to` (which must occur once).
    fn job_text(&self, from: &str, to: &str) -> String {
        let valid = VALID.replace("SCHEMA", &self.db.name);
        assert_eq!(
            valid.matches(from).count(),
            1,
            "edit target {from:?} must be unique"
        );
        valid.replace(from, to)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Runs `plan --check` on `text`; returns exit code and stdout lines.
    fn check(&self, text: &str, extra: &[&str]) -> (i32, Vec<String>, String) {
        let p = self.write("job.yaml", text);
        let path = p.to_str().unwrap();
        let mut args = vec!["plan", "--check", path];
        args.extend_from_slice(extra);
        let out = myrecode(Some(&self.url), &args);
        let (stdout, stderr) = texts(&out);
        let prefix = format!("{path}:");
        let lines = stdout
            .lines()
            .map(|l| {
                l.strip_prefix(&prefix)
                    .map(|r| format!("job.yaml:{r}"))
                    .unwrap_or(l.to_string())
            })
            .collect();
        (out.status.code().unwrap_or(-1), lines, stderr)
    }

    /// Edits the valid job, checks it, and asserts exactly one finding equal to `expected`
    /// (with `LINE` replaced by the 1-based line of `at` in the edited text).
    fn assert_one(&self, from: &str, to: &str, at: &str, expected: &str) {
        let text = self.job_text(from, to);
        let (code, lines, stderr) = self.check(&text, &[]);
        let expected = expected
            .replace("LINE", &line_of(&text, at).to_string())
            .replace("SCHEMA", &self.db.name);
        assert_eq!(lines, vec![expected], "stderr: {stderr}\n{text}");
        assert_eq!(code, 1, "findings exit 1; stderr: {stderr}");
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    let hits: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "{needle:?} must be on exactly one line");
    hits[0]
}

#[tokio::test]
async fn valid_job_passes() {
    let f = fixture("job_valid").await;
    let (code, lines, stderr) = f.check(&f.job_text("batch_size: 500", "batch_size: 500"), &[]);
    assert_eq!(code, 0, "{lines:?} {stderr}");
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains(": ok: 2 table(s), 4 column(s)"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn unknown_table_suggests_the_closest() {
    let f = fixture("job_table").await;
    f.assert_one(
        "- name: legacy",
        "- name: legasy",
        "legasy",
        "job.yaml:LINE: tables[0].name: unknown table 'legasy' in schema 'SCHEMA'. Fix: did you mean 'legacy'? (names are case-sensitive)",
    );
}

#[tokio::test]
async fn unknown_column_suggests_the_closest_and_names_non_text_columns() {
    let f = fixture("job_column").await;
    f.assert_one(
        "- name: title",
        "- name: titel",
        "titel",
        "job.yaml:LINE: tables[0].columns[1].name: unknown column 'titel' in table 'legacy'. Fix: did you mean 'title'? (names are case-sensitive)",
    );
    f.assert_one(
        "- name: note",
        "- name: id",
        "- name: id",
        "job.yaml:LINE: tables[1].columns[0].name: column 'id' is int, not a text or binary column: nothing to recode. Fix: remove this entry",
    );
}

#[tokio::test]
async fn unknown_label_lists_the_valid_ones() {
    let f = fixture("job_label").await;
    f.assert_one(
        "source: cp1251",
        "source: cp1252x",
        "cp1252x",
        "job.yaml:LINE: tables[0].columns[1].source: unknown label 'cp1252x'. Fix: use one of auto, cp1251, koi8-r, koi8-u, cp866, iso-8859-5, tcvn3, utf-8>latin1, utf-8>cp1251, cp1251>latin1, koi8-r>latin1, cp866>latin1, iso-8859-5>latin1, tcvn3>latin1 (did you mean 'cp1251'?)",
    );
}

#[tokio::test]
async fn target_too_short() {
    let f = fixture("job_short").await;
    f.assert_one(
        "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL",
        "VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL",
        "VARCHAR(50)",
        "job.yaml:LINE: tables[0].columns[0].target: target VARCHAR(50) is too short: the column is varchar(100) latin1 and holds up to 100 characters. Fix: use VARCHAR(100) or longer",
    );
    f.assert_one(
        "MEDIUMTEXT CHARACTER SET utf8mb4",
        "TEXT CHARACTER SET utf8mb4",
        "target: TEXT",
        "job.yaml:LINE: tables[0].columns[2].target: target TEXT holds 65535 bytes, but the column (text latin1) can hold 65535 bytes that may become 131070 bytes of UTF-8 (×2). Fix: use MEDIUMTEXT or larger, or pass --report scan.json so the check can use the longest value actually stored",
    );
}

/// A scan report for `legacy` saying what the scan found longest.
fn report_for(schema: &str, max_chars_after: u64, max_bytes_after: u64) -> String {
    use myrecode::inventory::model::{RecodeKey, ServerInfo};
    use myrecode::scan::model::*;
    let col =
        |name: &str, ty: &str, nullable: bool, target: &str, labels: &[(&str, u64)]| ColumnScan {
            name: name.into(),
            column_type: ty.into(),
            charset: Some("latin1".into()),
            collation: Some("latin1_swedish_ci".into()),
            nullable,
            definition: Default::default(),
            declared_max_chars: None,
            rows: 10,
            nulls: 0,
            empty: 0,
            labels: labels.iter().map(|(l, n)| (l.to_string(), *n)).collect(),
            confidence: Default::default(),
            examples: Default::default(),
            undecided: Vec::new(),
            undecided_total: 0,
            serialized: 0,
            serialized_unparsed: 0,
            max_bytes_now: max_chars_after,
            max_bytes_after: if ty == "text" {
                max_bytes_after
            } else {
                max_chars_after * 2
            },
            max_chars_after,
            source: None,
            target: Target {
                column_type: target.into(),
                charset: Some(
                    if target.starts_with("char") {
                        "latin1"
                    } else {
                        "utf8mb4"
                    }
                    .into(),
                ),
                collation: Some(
                    if target.starts_with("char") {
                        "latin1_swedish_ci"
                    } else {
                        "utf8mb4_unicode_ci"
                    }
                    .into(),
                ),
                why: if target.starts_with("char") {
                    "pure ASCII (hex tokens): stays latin1, index does not grow".into()
                } else {
                    String::new()
                },
            },
            strategy: if target.starts_with("char") {
                Strategy::None
            } else {
                Strategy::Copy
            },
            fits: true,
            risks: Vec::new(),
            blocked: None,
        };
    let report = ScanReport {
        schema_version: SCHEMA_VERSION,
        tool_version: "test".into(),
        server: ServerInfo {
            version: "test".into(),
            flavor: "MariaDB".into(),
            innodb_page_size: 16384,
            default_row_format: "dynamic".into(),
        },
        mode: "full".into(),
        sample_rows: None,
        objects: Vec::new(),
        clients: Vec::new(),
        tables: vec![TableScan {
            schema: schema.into(),
            name: "legacy".into(),
            row_format: "Compact".into(),
            engine: Some("InnoDB".into()),
            key: Some(RecodeKey {
                index: "PRIMARY".into(),
                columns: vec!["id".into()],
            }),
            estimated_rows: 10,
            rows_scanned: 10,
            strategy: Strategy::Copy,
            columns: vec![
                col(
                    "name",
                    "varchar(100)",
                    false,
                    "varchar(100)",
                    &[("cp1251", 4), ("koi8-r", 3), ("ascii", 3)],
                ),
                col("body", "text", true, "text", &[("cp1251", 10)]),
                col("token", "char(32)", true, "char(32)", &[("ascii", 10)]),
            ],
            risks: Vec::new(),
            triggers: Vec::new(),
            foreign_keys: Vec::new(),
        }],
    };
    serde_json::to_string_pretty(&report).unwrap()
}

#[tokio::test]
async fn target_too_short_for_what_the_scan_found() {
    let f = fixture("job_short_report").await;
    let report = f.write("scan.json", &report_for(&f.db.name, 120, 40_000));
    let report = report.to_str().unwrap();
    // With the report, TEXT is judged by the longest value stored: 40,000 bytes fit.
    let text = f.job_text(
        "MEDIUMTEXT CHARACTER SET utf8mb4",
        "TEXT CHARACTER SET utf8mb4",
    );
    let (code, lines, stderr) = f.check(&text, &["--report", report]);
    assert_eq!(
        lines,
        vec![format!(
            "job.yaml:{}: tables[0].columns[0].target: target VARCHAR(100) is too short: the scan found a value of 120 characters after recoding. Fix: use VARCHAR(120) or longer",
            line_of(&text, "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL")
        )],
        "{stderr}"
    );
    assert_eq!(code, 1);
    let report = f.write("scan2.json", &report_for(&f.db.name, 90, 70_000));
    let (code, lines, _) = f.check(&text, &["--report", report.to_str().unwrap()]);
    assert_eq!(
        lines,
        vec![format!(
            "job.yaml:{}: tables[0].columns[2].target: target TEXT holds 65535 bytes, but the scan found a value of 70000 bytes after recoding. Fix: use MEDIUMTEXT or larger",
            line_of(&text, "target: TEXT")
        )]
    );
    assert_eq!(code, 1);
}

#[tokio::test]
async fn table_without_a_usable_key() {
    let f = fixture("job_key").await;
    common::exec_script(
        &f.db.config,
        &["INSERT INTO nokey (msg) VALUES ('a'), ('b'), (NULL)"],
    )
    .await;
    let entry = "  - name: nokey\n    strategy: copy\n    columns:\n      - name: msg\n        source: cp866\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n";
    // Three rows: rebuilt under the cut-over's lock by the built-in limit.
    let text = f.job_text("batch_size: 500", "batch_size: 500") + entry;
    let (code, lines, _) = f.check(&text, &[]);
    assert_eq!(code, 0, "{lines:?}");
    // Over the job's limit: refused, with the rows counted.
    let text = f.job_text("batch_size: 500", "batch_size: 500\n  keyless_max_rows: 2") + entry;
    let (code, lines, _) = f.check(&text, &[]);
    assert_eq!(
        lines,
        vec![format!(
            "job.yaml:{}: tables[2].name: table 'nokey' has no primary key and no unique key over NOT NULL columns, so batches cannot page over it, \
             and about 3 rows are more than `keyless_max_rows` (2) to rebuild under the cut-over's lock (about 1 ms of pause). \
             Fix: add a primary key (ALTER TABLE `{}`.`nokey` ADD PRIMARY KEY (...)) or a unique key over NOT NULL columns, so it is copied online in batches; \
             or raise `keyless_max_rows` above 3 if that pause is acceptable; or leave the table out of the job",
            line_of(&text, "- name: nokey"),
            f.db.name
        )]
    );
    assert_eq!(code, 1);
    // Batches page over one key (what `run` uses): another unique key is refused too.
    for other in ["note", "code", "cod"] {
        f.assert_one(
            "key: [id]",
            &format!("key: [{other}]"),
            &format!("key: [{other}]"),
            &format!("job.yaml:LINE: tables[1].key: key ({other}) in the job is not the key batches page over: PRIMARY (id). Fix: write `key: [id]`, or remove `key:`"),
        );
    }
}

#[tokio::test]
async fn index_that_would_overflow() {
    let f = fixture("job_index").await;
    f.assert_one(
        "VARCHAR(255) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci",
        "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
        "VARCHAR(255)",
        "job.yaml:LINE: tables[0].columns[1].target: index `idx_title` would need 1020 bytes with this target (title: 1020), over the limit of 767 bytes per column and 3072 per key on row format Compact. Fix: keep the column single-byte if it is pure ASCII, index a prefix (title(191) fits), or rebuild the table with ROW_FORMAT=DYNAMIC first",
    );
}

#[tokio::test]
async fn strategy_that_cannot_work() {
    let f = fixture("job_strategy").await;
    let text = f.job_text("strategy: copy", "strategy: in-place");
    let (code, lines, _) = f.check(&text, &[]);
    let at = text
        .lines()
        .position(|l| l.contains("strategy: in-place"))
        .unwrap()
        + 1;
    let want: Vec<String> = [
        ("name", "varchar(100)"),
        ("title", "varchar(255)"),
        ("body", "text"),
    ]
    .iter()
    .map(|(c, t)| format!(
        "job.yaml:{at}: tables[0].strategy: in-place cannot work for column '{c}' of table 'legacy': it is {t} latin1, which cannot hold UTF-8. Fix: set `strategy: copy` (it changes the column to its target type online)"
    ))
    .collect();
    assert_eq!(lines, want);
    assert_eq!(code, 1);
    f.assert_one(
        "utf-8>latin1\n        target: VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
        "utf-8>latin1\n        target: VARCHAR(150) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
        "VARCHAR(150)",
        "job.yaml:LINE: tables[1].columns[0].target: in-place keeps the column as it is (varchar(100) utf8mb4), but the target asks for a different type. Fix: set `strategy: copy` to change the type, or make the target the current definition (VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci)",
    );
}

#[tokio::test]
async fn unknown_keys_are_errors_all_at_once() {
    let f = fixture("job_keys").await;
    let text = f
        .job_text("source: koi8-r", "sorce: koi8-r")
        .replace("target_batch_time: 250ms", "target_batch_tme: 250ms")
        .replace(
            "    strategy: in-place",
            "    strategy: in-place\n    chunk: 10",
        );
    let (code, lines, _) = f.check(&text, &[]);
    assert_eq!(
        lines,
        vec![
            format!("job.yaml:{}: defaults.target_batch_tme: unknown key 'target_batch_tme'. Fix: did you mean 'target_batch_time'? (valid keys here: batch_size, target_batch_time, pause_between_batches, max_threads_running, max_replica_lag, max_replica_down, replicas, undecidable, cutover, keyless_max_rows)", line_of(&text, "target_batch_tme")),
            format!("job.yaml:{}: tables[0].columns[2].sorce: unknown key 'sorce'. Fix: did you mean 'source'? (valid keys here: name, source, target, undecidable, redefine)", line_of(&text, "sorce")),
            format!("job.yaml:{}: tables[1].chunk: unknown key 'chunk'. Fix: remove it (valid keys here: name, strategy, key, batch_size, target_batch_time, engine, columns)", line_of(&text, "chunk")),
        ]
    );
    assert_eq!(code, 1);
    // A value serde rejects keeps serde's line and gains a fix.
    f.assert_one(
        "target_batch_time: 250ms",
        "target_batch_time: 250",
        "target_batch_time",
        "job.yaml:LINE: defaults.target_batch_time: invalid duration '250' (no unit). Fix: write a whole number with a unit: 500ms, 2s, 1m or 1h",
    );
}

#[tokio::test]
async fn every_problem_in_one_run_in_file_order() {
    let f = fixture("job_many").await;
    let text = f
        .job_text("- name: title", "- name: titel")
        .replace("source: auto", "source: cp1252")
        .replace("key: [id]", "key: [note]");
    let (code, lines, stderr) = f.check(&text, &[]);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[0].starts_with(&format!(
            "job.yaml:{}: tables[0].columns[0].source: unknown label 'cp1252'",
            line_of(&text, "cp1252")
        )),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "job.yaml:{}: tables[0].columns[1].name: unknown column 'titel'",
            line_of(&text, "titel")
        )),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with(&format!(
            "job.yaml:{}: tables[1].key: key (note)",
            line_of(&text, "key: [note]")
        )),
        "{lines:?}"
    );
    assert!(stderr.contains("3 problem(s)"), "{stderr}");
}

#[tokio::test]
async fn schema_that_does_not_exist() {
    let f = fixture("job_schema").await;
    let text = VALID.replace("SCHEMA", &format!("{}x", f.db.name));
    let (code, lines, _) = f.check(&text, &[]);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with(&format!(
            "job.yaml:3: schema: schema '{}x' does not exist on this server. Fix: name an existing schema (did you mean '{}'?)",
            f.db.name, f.db.name
        )),
        "{lines:?}"
    );
}

#[tokio::test]
async fn unreadable_file_or_server_is_exit_2() {
    let f = fixture("job_exit2").await;
    let missing = f.dir.path().join("nope.yaml");
    let out = myrecode(
        Some(&f.url),
        &["plan", "--check", missing.to_str().unwrap()],
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot read job file") && stderr.contains("Fix:"),
        "{stderr}"
    );

    let job = f.write(
        "job.yaml",
        &f.job_text("batch_size: 500", "batch_size: 500"),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("mysql://root:HiddenPw1@127.0.0.1:{port}/x");
    let out = myrecode(Some(&url), &["plan", "--check", job.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("HiddenPw1") && !stdout.contains("HiddenPw1"));
}

#[tokio::test]
async fn plan_writes_a_job_that_checks_clean() {
    let f = fixture("job_plan").await;
    let report = f.write("scan.json", &report_for(&f.db.name, 90, 300));
    let job = f.dir.path().join("job.yaml");
    let (r, j) = (report.to_str().unwrap(), job.to_str().unwrap());
    let out = myrecode(None, &["plan", "--report", r, "-o", j]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&job).unwrap();
    assert!(
        text.contains(
            "      # - name: token   # pure ASCII (hex tokens): stays latin1, index does not grow"
        ),
        "{text}"
    );
    assert!(
        text.contains("source: auto   # several encodings row by row (cp1251, koi8-r)"),
        "{text}"
    );
    assert!(
        text.contains(
            "target: VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL"
        ),
        "{text}"
    );

    let out = myrecode(Some(&f.url), &["plan", "--check", j, "--report", r]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}\n{text}");

    // An existing job may hold edits: refused without --force.
    std::fs::write(&job, "edited").unwrap();
    let out = myrecode(None, &["plan", "--report", r, "-o", j]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("already exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&job).unwrap(), "edited");
    let out = myrecode(None, &["plan", "--report", r, "-o", j, "--force"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&job).unwrap(), text);
}

#[test]
fn plan_arguments_say_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = myrecode(None, &["plan"]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("nothing to do") && stderr.contains("Fix:"),
        "{stderr}"
    );

    let report = dir.path().join("scan.json");
    std::fs::write(&report, report_for("shop", 10, 20)).unwrap();
    let r = report.to_str().unwrap();
    let out = myrecode(None, &["plan", "--report", r]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("-o job.yaml"), "{stderr}");

    let out = myrecode(None, &["plan", "--report", r, "-o", "-"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.starts_with("# myrecode job:") && stdout.contains("schema: shop"));

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a report\"}").unwrap();
    let out = myrecode(
        None,
        &["plan", "--report", bad.to_str().unwrap(), "-o", "-"],
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("is not a scan report") && stderr.contains("Fix:"),
        "{stderr}"
    );

    let job = dir.path().join("job.yaml");
    std::fs::write(&job, VALID).unwrap();
    let out = myrecode(None, &["plan", "--check", job.to_str().unwrap()]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("no server given"), "{stderr}");

    // A job that does not parse needs no server: its findings come first.
    std::fs::write(&job, "version: 1\nschema: s\ntables: []\nextra: 1\n").unwrap();
    let out = myrecode(None, &["plan", "--check", job.to_str().unwrap()]);
    let (stdout, _) = texts(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains(":4: extra: unknown key 'extra'"),
        "{stdout}"
    );
}

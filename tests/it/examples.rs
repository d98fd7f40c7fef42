//! The sample legacy databases of `migrations-examples/`: each is loaded into a fresh
//! database, scanned in full and planned, and the report and job must equal the committed
//! `expected-report.json` and `job.yaml` of its folder; the committed job must also pass
//! `myrecode plan --check` against the loaded schema.
//!
//! After an intended change (detection, report fields, plan wording), rewrite the expected
//! files and review the change in git:
//!
//! ```text
//! MYRECODE_UPDATE_EXPECTED=1 cargo test --test it examples::
//! git diff migrations-examples/
//! ```
//!
//! What varies between runs and servers is normalised before comparing, so the files stay
//! readable as documentation: the test schema's name becomes the example's name (load an
//! example into a schema of that name and its `job.yaml` applies unchanged), the server
//! becomes "MariaDB or MySQL (version normalised)", the tool version "(any version)", and
//! each table's row estimate (InnoDB statistics) its scanned row count.

use crate::common;
use common::diff::line_diff;
use common::{myrecode, texts};
use myrecode::db::throwaway::test_database;
use myrecode::inventory::{self, Scope};
use myrecode::scan::model::ScanReport;
use myrecode::scan::read::{self as scan, Options, Silent};
use sqlx::Executor;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable that makes the test rewrite the expected files instead of failing.
const UPDATE: &str = "MYRECODE_UPDATE_EXPECTED";
/// Report file name the job's header refers to (the job is planned from it).
const REPORT_FILE: &str = "expected-report.json";

fn example_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations-examples")
        .join(name)
}

/// Loads `name`'s schema.sql and data.sql into a fresh database and scans every row of it.
async fn load_and_scan(name: &str) -> (myrecode::db::throwaway::TestDatabase, ScanReport) {
    let db = test_database(&format!("ex_{name}"));
    let dir = example_dir(name);
    let mut conn = db.config.connect_one().await.expect("connect");
    for file in ["schema.sql", "data.sql"] {
        let sql = std::fs::read_to_string(dir.join(file)).expect("example SQL readable");
        for stmt in myrecode::demo::statements(&sql) {
            conn.execute(stmt.as_str())
                .await
                .unwrap_or_else(|e| panic!("{name}/{file}: {stmt}: {e}"));
        }
    }
    let scope = Scope {
        schemas: vec![db.name.clone()],
        tables: vec![],
    };
    let inv = inventory::take(&mut conn, &scope).await.expect("inventory");
    let opts = Options {
        sample: None,
        batch_size: 5,
        pause: Duration::ZERO,
    };
    let report = scan::scan(&mut conn, &inv, &opts, &Silent)
        .await
        .expect("scan");
    (db, report)
}

/// The report with everything that varies between runs and servers replaced (see the module docs).
fn normalise(report: &ScanReport, schema: &str, example: &str) -> ScanReport {
    let mut r = report.clone();
    r.tool_version = "(any version)".into();
    r.clients.clear();
    r.server.flavor = "MariaDB or MySQL".into();
    r.server.version = "MariaDB or MySQL (version normalised)".into();
    for t in &mut r.tables {
        assert_eq!(t.schema, schema, "the scan stays in the test's schema");
        t.schema = example.into();
        t.estimated_rows = t.rows_scanned;
    }
    // The schema name could also sit inside a sentence (a risk, a reason): replace it there too.
    let text = serde_json::to_string(&r).unwrap().replace(schema, example);
    serde_json::from_str(&text).expect("normalised report still parses")
}

/// Compares `actual` with the committed file; rewrites it under MYRECODE_UPDATE_EXPECTED=1.
fn compare(path: &Path, actual: &str) -> Result<(), String> {
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    let Some(diff) = line_diff(&expected, actual) else {
        return Ok(());
    };
    if std::env::var_os(UPDATE).is_some_and(|v| v == "1") {
        std::fs::write(path, actual).expect("expected file writable");
        eprintln!("rewrote {}", path.display());
        return Ok(());
    }
    Err(format!(
        "{} differs from this run (- committed, + now):\n{diff}\n\
         If the change is intended: {UPDATE}=1 cargo test --test it examples::, then review `git diff`.",
        path.display()
    ))
}

/// The whole check for one example: expected report, expected job, and `plan --check` of the job.
async fn check_example(name: &str) {
    let (db, report) = load_and_scan(name).await;
    assert!(
        !report.tables.is_empty(),
        "{name}: the scan found no tables"
    );
    let normal = normalise(&report, &db.name, name);
    let report_json = myrecode::report::scan::to_json(&normal) + "\n";
    let job = myrecode::job::plan::generate(&normal, Some(name), REPORT_FILE).expect("plan");
    assert!(
        !job.contains(&db.name) && !report_json.contains(&db.name),
        "the test schema's name leaked into the expected files"
    );
    let dir = example_dir(name);
    let problems: Vec<String> = [
        compare(&dir.join(REPORT_FILE), &report_json),
        compare(&dir.join("job.yaml"), &job),
    ]
    .into_iter()
    .filter_map(Result::err)
    .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));

    // The committed job (now equal to `job`), pointed at the test's schema, against the live server.
    let committed = std::fs::read_to_string(dir.join("job.yaml")).unwrap();
    let schema_line = format!("schema: {name}");
    assert!(
        committed.lines().any(|l| l == schema_line),
        "{name}/job.yaml has no `{schema_line}` line"
    );
    let live_job = committed
        .lines()
        .map(|l| {
            if l == schema_line {
                format!("schema: {}", db.name)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let tmp = tempfile::tempdir().unwrap();
    let job_path = tmp.path().join("job.yaml");
    let report_path = tmp.path().join("scan.json");
    std::fs::write(&job_path, live_job).unwrap();
    std::fs::write(&report_path, myrecode::report::scan::to_json(&report)).unwrap();
    let out = myrecode(
        Some(&db.config.url_with_secret()),
        &[
            "plan",
            "--check",
            job_path.to_str().unwrap(),
            "--report",
            report_path.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}/job.yaml fails plan --check:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(": ok: "), "{stdout}");
}

#[tokio::test]
async fn russian_forum_matches_its_expected_report_and_job() {
    check_example("russian_forum").await;
}

#[tokio::test]
async fn half_migrated_shop_matches_its_expected_report_and_job() {
    check_example("half_migrated_shop").await;
}

#[tokio::test]
async fn vietnamese_catalogue_matches_its_expected_report_and_job() {
    check_example("vietnamese_catalogue").await;
}

#[test]
fn every_example_folder_is_tested_here() {
    let mut found: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations-examples"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "half_migrated_shop",
            "russian_forum",
            "vietnamese_catalogue"
        ],
        "a new example needs its own test above"
    );
}

#[test]
fn the_diff_shows_changed_lines_with_their_context() {
    assert_eq!(line_diff("a\nb\n", "a\nb\n"), None);
    let d = line_diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nX\ne\nf\ng\n").unwrap();
    assert_eq!(d, "@@ line 2 @@\n  b\n  c\n- d\n+ X\n  e\n  f");
}

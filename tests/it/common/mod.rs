//! Helpers shared by the integration tests: running the built binary and creating schemas.

pub mod diff;
pub mod legacy;

use myrecode::db::connect::ConnectionConfig;
use sqlx::Executor;
use std::process::{Command, Output, Stdio};

/// Runs the built `myrecode` with `args`, the given URL in MYSQL_URL, and no stdin.
pub fn myrecode(url: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args(args)
        .stdin(Stdio::null())
        .env_remove("MYSQL_PWD")
        .env_remove("MYSQL_URL");
    if let Some(u) = url {
        cmd.env("MYSQL_URL", u);
    }
    cmd.output().expect("the myrecode binary runs")
}

/// Starts the built `myrecode` on `url` with `args` and the test hooks `env`, its output piped
/// and no stdin, for a test that kills it or reads it as it goes.
pub fn spawn_myrecode(url: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args(args)
        .env_remove("MYSQL_PWD")
        .env("MYSQL_URL", url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("the myrecode binary runs")
}

/// Starts `revert --execute` on `jobp` with its test hold of `hold_ms` at the swap back, and
/// SIGKILLs it `after` once `ready` (a `SELECT COUNT(*)` over `c`) counts a row; fails the test
/// when the revert ended or 60 s passed first. Returns its stdout and stderr.
pub async fn revert_killed_when(
    c: &mut sqlx::MySqlConnection,
    (url, jobp): (&str, &str),
    hold_ms: u64,
    ready: &str,
    after: std::time::Duration,
) -> (String, String) {
    let hold = hold_ms.to_string();
    let mut run = spawn_myrecode(
        url,
        &["revert", jobp, "--execute"],
        &[("MYRECODE_TEST_REVERT_HOLD_MS", hold.as_str())],
    );
    let since = std::time::Instant::now();
    let mut reached = false;
    while since.elapsed() < std::time::Duration::from_secs(60) && run.try_wait().unwrap().is_none()
    {
        let n: i64 = sqlx::query_scalar(ready).fetch_one(&mut *c).await.unwrap();
        if n > 0 {
            reached = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    tokio::time::sleep(after).await;
    run.kill().unwrap();
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(
        reached,
        "the revert never got there: {ready}\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// Runs `myrecode` on `url` with `args`: its exit code (-1 when killed by a signal), stdout
/// and stderr; a panic of the tool fails the test.
pub fn cli(url: &str, args: &[&str]) -> (i32, String, String) {
    let out = myrecode(Some(url), args);
    let (stdout, stderr) = texts(&out);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// `scan --full` and `plan` of the schema at `url`, as the README's walkthrough runs them,
/// into `dir`: the report's path, the job's path and the job's text.
pub fn scan_and_plan(
    url: &str,
    dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let report = dir.join("scan.json");
    let planned = dir.join("planned.yaml");
    let (code, stdout, stderr) = cli(url, &["scan", "--full", "--json", report.to_str().unwrap()]);
    assert!(code <= 1, "{stdout}\n{stderr}");
    let (code, _, stderr) = cli(
        url,
        &[
            "plan",
            "--report",
            report.to_str().unwrap(),
            "-o",
            planned.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&planned).unwrap();
    (report, planned, text)
}

/// How long each killed run lives, repeatably: `life(lo, span)` is `lo` plus up to `span`
/// milliseconds, from an xorshift sequence started at `seed`.
pub fn lives(seed: u64) -> impl FnMut(u64, u64) -> u64 {
    let mut x = seed;
    move |lo, span| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        lo + x % span
    }
}

/// The server's error number of a failed statement; `None` for any other failure. (Matched
/// on the message instead, a number can turn up in a schema's name.)
pub fn errno(e: &sqlx::Error) -> Option<u16> {
    e.as_database_error()
        .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .map(|d| d.number())
}

/// Whether an application statement that failed with `e` is retried, as an application
/// does: a deadlock or lock wait (1213, 1205), or a table missing (1146: a statement prepared
/// before the copy's triggers existed, or a copied table closed by a cut-over a kill left
/// half-moved until the next run settles it), plus `also`. Retried for at most a minute from
/// `since`, the statement's first try, so a failure that never ends fails the test.
pub fn retried(e: &sqlx::Error, also: &[u16], since: std::time::Instant) -> bool {
    let again = errno(e).is_some_and(|n| [1213, 1205, 1146].contains(&n) || also.contains(&n));
    assert!(
        !again || since.elapsed() < std::time::Duration::from_secs(60),
        "retried for a minute: {e}"
    );
    again
}

/// A job copying one column of one table (cut over as soon as caught up): its YAML.
pub fn copy_job(schema: &str, table: &str, column: &str, source: &str, target: &str) -> String {
    format!(
        "version: 1\nschema: {schema}\ndefaults:\n  cutover: auto\ntables:\n  - name: {table}\n    strategy: copy\n    \
         columns:\n      - name: {column}\n        source: {source}\n        target: {target}\n"
    )
}

/// Stdout and stderr as text.
pub fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs each `;`-terminated statement of `sql` (one per line group) on `cfg`.
pub async fn exec_script(cfg: &ConnectionConfig, statements: &[&str]) {
    let mut c = cfg.connect_one().await.expect("connect");
    for s in statements {
        c.execute(*s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

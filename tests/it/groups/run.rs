//! Driving `myrecode` from the groups tests: its status, runs in the background, SIGKILLs
//! at chosen moments, and what the schema holds of the job.

use crate::common::{self, texts};
use sqlx::MySqlConnection;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `myrecode status --json` of the job.
pub fn status(url: &str, job: &str) -> serde_json::Value {
    let out = common::myrecode(Some(url), &["status", job, "--json"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Waits (at most 3 minutes) until `cond` holds for the job's status; the run must not end
/// meanwhile.
pub async fn wait_status(
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

/// Names of myrecode's tables and triggers in the schema (a refused run creates none).
pub async fn own_objects(c: &mut MySqlConnection, schema: &str) -> Vec<String> {
    sqlx::query_scalar::<_, String>(
        "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '%myrecode%' \
         UNION ALL SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE '%myrecode%'",
    )
    .bind(schema)
    .bind(schema)
    .fetch_all(c)
    .await
    .unwrap()
}

/// `run --execute` of `job` in the background; `hold_ms`: the test hook that stretches each
/// cut-over's locked window, so kills land inside it.
pub fn spawn_run(url: &str, job: &str, hold_ms: Option<u64>) -> std::process::Child {
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

/// How many sentries (a cut-over under way) the schema holds.
pub async fn sentries(c: &mut MySqlConnection, schema: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_COMMENT LIKE '%sentry%'",
    )
    .bind(schema)
    .fetch_one(c)
    .await
    .unwrap()
}

/// Runs the job until it prints a line holding `needle`, then SIGKILLs it; returns what it
/// printed.
pub async fn run_until(url: &str, job: &str, needle: &str) -> String {
    use std::io::BufRead;
    let mut child = spawn_run(url, job, None);
    let stdout = child.stdout.take().unwrap();
    let needle = needle.to_string();
    let reader = tokio::task::spawn_blocking(move || {
        let mut seen = String::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.unwrap_or_default();
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(&needle) {
                return (true, seen);
            }
        }
        (false, seen)
    });
    let waited = tokio::time::timeout(Duration::from_secs(180), reader).await;
    child.kill().ok();
    let stderr = texts(&child.wait_with_output().unwrap()).1;
    match waited {
        Ok(Ok((true, seen))) => seen,
        other => panic!("the run never printed what was awaited: {other:?}\n{stderr}"),
    }
}

/// The table trigger `name` is on, if it exists.
pub async fn trigger_on(c: &mut MySqlConnection, schema: &str, name: &str) -> Option<String> {
    sqlx::query_scalar(
        "SELECT CAST(EVENT_OBJECT_TABLE AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME = ?",
    )
    .bind(schema)
    .bind(name)
    .fetch_optional(c)
    .await
    .unwrap()
}

/// SIGKILLs a run after `life` ms (it must still be running then); returns its stdout.
pub async fn kill_after(mut child: std::process::Child, life: u64, what: &str) -> String {
    tokio::time::sleep(Duration::from_millis(life)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "{what}: the run ended before its kill: {:?}",
        texts(&child.wait_with_output().unwrap())
    );
    child.kill().unwrap(); // SIGKILL
    texts(&child.wait_with_output().unwrap()).0
}

/// The cascade-logging triggers on `table`: name and body.
pub async fn cascade_bodies(
    c: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT CAST(TRIGGER_NAME AS CHAR), CAST(ACTION_STATEMENT AS CHAR) FROM information_schema.TRIGGERS \
         WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? AND ACTION_TIMING = 'BEFORE' AND TRIGGER_NAME LIKE '%\\_myrecode\\_b%'",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(c)
    .await
    .unwrap()
}

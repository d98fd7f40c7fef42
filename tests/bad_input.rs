//! Bad connection input: each gets one line naming the problem and the fix, no panic, no password.

mod common;

use common::{myrecode, texts};
use myrecode::db::throwaway::{test_database, ThrowawayServer};

fn assert_one_line_error(url: Option<&str>, args: &[&str], needle: &str, secret: &str) {
    let out = myrecode(url, args);
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit 2 for errors; stderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].contains(needle), "expected {needle:?} in {stderr}");
    assert!(
        lines[0].contains("Fix:"),
        "the line says how to fix it: {stderr}"
    );
    assert!(
        !stderr.contains(secret) && !stdout.contains(secret),
        "password leaked: {stderr}"
    );
}

#[test]
fn wrong_password() {
    let server = ThrowawayServer::shared().unwrap_or_else(|e| panic!("{e}"));
    let a = server.admin();
    let url = format!("mysql://{}:Wr0ngSecretPw@{}:{}/", a.user, a.host, a.port);
    assert_one_line_error(Some(&url), &["inventory"], "access denied", "Wr0ngSecretPw");
}

#[test]
fn unreachable_host() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("mysql://root:HiddenPw1@127.0.0.1:{port}/x");
    assert_one_line_error(Some(&url), &["inventory"], "cannot reach", "HiddenPw1");
}

#[test]
fn unknown_database() {
    let server = ThrowawayServer::shared().unwrap_or_else(|e| panic!("{e}"));
    let cfg = server.admin().with_database(Some("no_such_db_here"));
    let url = cfg.url_with_secret();
    let pw = cfg.password().unwrap().to_string();
    assert_one_line_error(
        Some(&url),
        &["inventory"],
        "unknown database 'no_such_db_here'",
        &pw,
    );
}

#[test]
fn unknown_schema_and_table() {
    let db = test_database("badinput");
    let url = db.config.url_with_secret();
    let pw = db.config.password().unwrap().to_string();
    assert_one_line_error(
        Some(&url),
        &["inventory", "--schema", "nope`s"],
        "schema 'nope`s' does not exist",
        &pw,
    );
    assert_one_line_error(
        Some(&url),
        &["inventory", "--tables", "missing"],
        "table 'missing' not found",
        &pw,
    );
}

#[test]
fn no_url_at_all() {
    assert_one_line_error(None, &["inventory"], "no server given", "\u{0}");
}

#[test]
fn malformed_url() {
    assert_one_line_error(
        Some("postgres://u:SecretX9@h/d"),
        &["inventory"],
        "mysql://",
        "SecretX9",
    );
}

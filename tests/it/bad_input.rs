//! Bad connection input: each gets one line naming the problem and the fix, no panic, no password.

use crate::common;
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

/// A port on which nothing listens (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_missing_tls_file_is_named_with_its_option_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-ca.pem");
    let url = format!(
        "mysql://root:HiddenPw2@127.0.0.1:{}/x?ssl-ca={}",
        closed_port(),
        missing.display()
    );
    let needle = format!(
        "ssl-ca file {} does not exist (ssl-ca from the URL)",
        missing.display()
    );
    assert_one_line_error(Some(&url), &["inventory"], &needle, "HiddenPw2");
    let out = myrecode(Some(&url), &["inventory"]);
    assert!(
        !texts(&out).1.contains("cannot reach"),
        "{:?}",
        texts(&out).1
    );

    // From an option file: a directory where the key file should be.
    let cert = dir.path().join("client.pem");
    std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\n").unwrap();
    let cnf = dir.path().join("tls.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[client]\nuser=root\npassword=HiddenPw3\nhost=127.0.0.1\nport={}\nssl-cert={}\nssl_key={}\n",
            closed_port(),
            cert.display(),
            dir.path().display()
        ),
    )
    .unwrap();
    let needle = format!(
        "ssl-key file {} is not a regular file (ssl-key from {} [client])",
        dir.path().display(),
        cnf.display()
    );
    assert_one_line_error(
        None,
        &["inventory", "--defaults-file", cnf.to_str().unwrap()],
        &needle,
        "HiddenPw3",
    );
}

#[test]
fn an_unencoded_at_in_the_url_password_asks_for_percent_encoding() {
    let url = format!("mysql://root:Hid@enPw4@127.0.0.1:{}/x", closed_port());
    assert_one_line_error(Some(&url), &["inventory"], "%40", "Hid@enPw4");
    let out = myrecode(Some(&url), &["inventory"]);
    let stderr = texts(&out).1;
    assert!(
        !stderr.contains("cannot reach") && !stderr.contains("enPw4") && !stderr.contains("Hid"),
        "{stderr}"
    );
}

/// Issue 44 item 10: each of these is one line with the problem and the fix, before any work.
#[test]
fn bad_arguments_are_refused_before_any_work() {
    let db = test_database("bad_args");
    let url = db.config.url_with_secret();
    let secret = db
        .config
        .password()
        .unwrap_or("no password set")
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // Report paths: checked before the scan (and before connecting: a closed port is not reached).
    let closed = format!("mysql://root@127.0.0.1:{}/x", closed_port());
    for flag in ["--json", "--html", "--markdown"] {
        assert_one_line_error(
            Some(&closed),
            &["scan", flag, d],
            "is a directory, not a file",
            &secret,
        );
        let missing = format!("{d}/no/such/report");
        assert_one_line_error(
            Some(&closed),
            &["scan", flag, &missing],
            "does not exist",
            &secret,
        );
    }
    let dump = dir.path().join("d.sql");
    std::fs::write(&dump, "CREATE TABLE t (a INT);\n-- Dump completed\n").unwrap();
    assert_one_line_error(
        None,
        &["rehearse", "--dump", dump.to_str().unwrap(), "--junit", d],
        "--junit",
        &secret,
    );
    // System schemas are named as such.
    for s in ["mysql", "information_schema", "performance_schema", "sys"] {
        assert_one_line_error(
            Some(&url),
            &["scan", "--schema", s],
            "is a system schema",
            &secret,
        );
        let job = dir.path().join(format!("{s}.yaml"));
        std::fs::write(
            &job,
            format!("version: 1\nschema: {s}\ntables:\n  - name: t\n    strategy: in-place\n    columns:\n      - name: a\n        source: cp1251>latin1\n        target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci\n"),
        )
        .unwrap();
        for args in [
            vec!["plan", "--check"],
            vec!["run"],
            vec!["run", "--execute"],
        ] {
            let mut args = args.clone();
            args.insert(1, job.to_str().unwrap());
            if args[0] == "plan" {
                args.swap(1, 2);
            }
            let out = myrecode(Some(&url), &args);
            let (stdout, stderr) = texts(&out);
            // plan --check lists problems with exit 1; run stops with 2.
            let want = if args[0] == "plan" { 1 } else { 2 };
            assert_eq!(out.status.code(), Some(want), "{args:?}: {stdout}{stderr}");
            assert!(
                stderr.contains("is a system schema") || stdout.contains("is a system schema"),
                "{args:?}: {stdout}{stderr}"
            );
            assert!(!stderr.contains("resume with"), "{args:?}: {stderr}");
        }
    }
    // A --job-id longer than the bookkeeping holds.
    let job = dir.path().join("ok.yaml");
    std::fs::write(
        &job,
        format!("version: 1\nschema: {}\ntables:\n  - name: t\n    strategy: in-place\n    columns:\n      - name: a\n        source: cp1251>latin1\n        target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci\n", db.name),
    )
    .unwrap();
    // A job naming a table the schema lacks: nothing to resume, so no "resume with".
    let out = myrecode(Some(&url), &["run", job.to_str().unwrap(), "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("table 't' in the job no longer exists")
            && !stderr.to_lowercase().contains("resume with"),
        "{stderr}"
    );
    let long = "j".repeat(65);
    for cmd in ["run", "status", "verify"] {
        assert_one_line_error(
            Some(&url),
            &[cmd, job.to_str().unwrap(), "--job-id", &long],
            "--job-id has 65 characters",
            &secret,
        );
    }
}

#[test]
fn detect_hex_names_the_bad_line_and_the_fix() {
    use std::io::Write;
    for input in ["cff0\nzz\n", "cff\n"] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_myrecode"))
            .args(["detect", "--hex"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let (_, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("of stdin is not hex")
                && stderr.contains("Fix: give each value as an even number of hex digits"),
            "{stderr}"
        );
    }
}

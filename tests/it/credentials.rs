//! Credentials from where DBAs keep them, against the throwaway server: a `--defaults-file`,
//! `~/.my.cnf` (a HOME of the test's own), their precedence against the URL and `MYSQL_PWD`;
//! no prompt on a terminal unless `--ask-pass`; the secret never printed.

use crate::common;
use common::texts;
use myrecode::db::throwaway::{test_database, ThrowawayServer};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs the binary with `home` as HOME, `env` set, and no other connection settings.
fn run_in(home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args(args)
        .stdin(Stdio::null())
        .env_remove("MYSQL_PWD")
        .env_remove("MYSQL_URL")
        .env("HOME", home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the myrecode binary runs")
}

fn assert_connected(out: &Output, secret: &str) -> String {
    let (stdout, stderr) = texts(out);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "connects and inventories: {stdout}\n{stderr}"
    );
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "the password was printed: {stdout}\n{stderr}"
    );
    stderr
}

#[test]
fn credentials_from_a_defaults_file_alone() {
    let db = test_database("creds_defaults_file");
    let a = &db.config;
    let pw = a.password().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("dba.cnf");
    std::fs::write(
        &cnf,
        format!(
            "# the DBA's file\n[client]\nuser = {}\npassword = \"{pw}\"   # quoted\nhost=127.0.0.1\nport={}\n\n[myrecode]\ndatabase={}\n",
            a.user, a.port, db.name
        ),
    )
    .unwrap();
    // A ~/.my.cnf with a wrong password is not read when --defaults-file is given.
    std::fs::write(
        dir.path().join(".my.cnf"),
        format!("[client]\nuser={}\npassword=WrongOne1\n", a.user),
    )
    .unwrap();
    let out = run_in(
        dir.path(),
        &[],
        &[
            "inventory",
            "--verbose",
            "--defaults-file",
            cnf.to_str().unwrap(),
        ],
    );
    let stderr = assert_connected(&out, pw);
    let shown = cnf.display();
    assert!(
        stderr.contains(&format!("user from {shown} [client], password from {shown} [client], host from {shown} [client], port from {shown} [client], database from {shown} [myrecode]")),
        "--verbose says where each setting came from: {stderr}"
    );
}

#[test]
fn credentials_from_home_my_cnf_with_myrecode_over_client() {
    let db = test_database("creds_home");
    let a = &db.config;
    let pw = a.password().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".my.cnf"),
        format!(
            "[client]\nuser={}\npassword={pw}\nhost=192.0.2.1\nport=1\n[mysqldump]\nquick\n[myrecode]\nhost=127.0.0.1\nport={}\n",
            a.user, a.port
        ),
    )
    .unwrap();
    let url = format!("mysql://127.0.0.1:{}/{}", a.port, db.name);
    let out = run_in(home.path(), &[], &["inventory", "-v", "--url", &url]);
    let stderr = assert_connected(&out, pw);
    assert!(
        stderr.contains("user from ~/.my.cnf [client], password from ~/.my.cnf [client], host from the URL, port from the URL, database from the URL"),
        "{stderr}"
    );
    // Without a URL, [myrecode] overrides [client]'s unreachable host and port.
    let out = run_in(home.path(), &[], &["inventory", "-v", "--schema", &db.name]);
    let stderr = assert_connected(&out, pw);
    assert!(
        stderr.contains("host from ~/.my.cnf [myrecode], port from ~/.my.cnf [myrecode]"),
        "{stderr}"
    );
}

#[test]
fn precedence_url_over_option_file_over_mysql_pwd() {
    let db = test_database("creds_precedence");
    let a = &db.config;
    let pw = a.password().unwrap();
    let home = tempfile::tempdir().unwrap();
    // The option file's password wins over MYSQL_PWD (the MySQL manual's order).
    std::fs::write(
        home.path().join(".my.cnf"),
        format!("[client]\nuser={}\npassword={pw}\n", a.user),
    )
    .unwrap();
    let url = format!("mysql://127.0.0.1:{}/{}", a.port, db.name);
    let out = run_in(
        home.path(),
        &[("MYSQL_PWD", "EnvWrong1")],
        &["inventory", "-v", "--url", &url],
    );
    let stderr = assert_connected(&out, pw);
    assert!(
        stderr.contains("password from ~/.my.cnf [client]"),
        "{stderr}"
    );
    assert!(!stderr.contains("EnvWrong1"), "{stderr}");
    // The URL's password wins over the option file's.
    std::fs::write(
        home.path().join(".my.cnf"),
        format!("[client]\nuser={}\npassword=FileWrong1\n", a.user),
    )
    .unwrap();
    let url = format!("mysql://{}:{pw}@127.0.0.1:{}/{}", a.user, a.port, db.name);
    let out = run_in(home.path(), &[], &["inventory", "-v", "--url", &url]);
    let stderr = assert_connected(&out, pw);
    assert!(stderr.contains("password from the URL"), "{stderr}");
    // MYSQL_PWD fills in when nothing else gives a password.
    std::fs::remove_file(home.path().join(".my.cnf")).unwrap();
    let url = format!("mysql://{}@127.0.0.1:{}/{}", a.user, a.port, db.name);
    let out = run_in(
        home.path(),
        &[("MYSQL_PWD", pw)],
        &["inventory", "-v", "--url", &url],
    );
    let stderr = assert_connected(&out, pw);
    assert!(stderr.contains("password from MYSQL_PWD"), "{stderr}");
}

#[test]
fn a_world_writable_option_file_is_ignored_as_the_mysql_client_does() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let cnf = home.path().join(".my.cnf");
    std::fs::write(&cnf, "[client]\nhost=192.0.2.1\npassword=Planted1\n").unwrap();
    std::fs::set_permissions(&cnf, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = run_in(home.path(), &[], &["inventory", "-v"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("writable by everyone and is ignored"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no server given"),
        "the file's host was not used: {stderr}"
    );
    assert!(!stderr.contains("Planted1") && !stdout.contains("Planted1"));
}

#[test]
fn bad_option_file_is_one_line_with_the_fix() {
    let home = tempfile::tempdir().unwrap();
    let cnf = home.path().join("bad.cnf");
    std::fs::write(&cnf, "user=dba\npassword=Secret99\n").unwrap();
    let out = run_in(
        home.path(),
        &[],
        &["inventory", "--defaults-file", cnf.to_str().unwrap()],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.cnf:1: an option before any [group]. Fix:"),
        "{stderr}"
    );
    assert!(!stderr.contains("Secret99") && !stdout.contains("Secret99"));
    let out = run_in(
        home.path(),
        &[],
        &["inventory", "--defaults-file", "/no/such/file.cnf"],
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("does not exist") && stderr.contains("Fix:"),
        "{stderr}"
    );
}

/// The binary under a pseudo-terminal (`script`), with a stdin pipe the test holds open:
/// a prompt would wait on it forever, so the test sees the difference.
struct OnTerminal {
    child: std::process::Child,
    output: Arc<Mutex<Vec<u8>>>,
    stdin: std::process::ChildStdin,
}

fn on_terminal(home: &Path, args: &[&str]) -> OnTerminal {
    let script = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or_else(|| {
            panic!("`script` (util-linux) is needed to run myrecode on a terminal. Fix: apt-get install -y bsdutils")
        });
    let mut line = String::from(env!("CARGO_BIN_EXE_myrecode"));
    for a in args {
        line.push_str(&format!(" '{}'", a.replace('\'', "'\\''")));
    }
    let mut child = Command::new(script)
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env("HOME", home)
        .env_remove("MYSQL_PWD")
        .env_remove("MYSQL_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script runs");
    let output = Arc::new(Mutex::new(Vec::new()));
    let mut out = child.stdout.take().unwrap();
    let sink = output.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let stdin = child.stdin.take().unwrap();
    OnTerminal {
        child,
        output,
        stdin,
    }
}

impl OnTerminal {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits up to `limit` for `what` to appear on the terminal.
    fn wait_for(&self, what: &str, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.text().contains(what) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Waits up to `limit` for the exit code; kills it and panics if it is still waiting.
    fn finish(mut self, limit: Duration) -> (i32, String) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(200));
                return (status.code().unwrap_or(-1), self.text());
            }
            if start.elapsed() > limit {
                self.child.kill().ok();
                panic!(
                    "myrecode still waits after {limit:?} on a terminal: {}",
                    self.text()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn no_prompt_on_a_terminal_without_ask_pass() {
    let server = ThrowawayServer::shared().unwrap_or_else(|e| panic!("{e}"));
    let home = tempfile::tempdir().unwrap();
    let a = server.admin();
    // A user with a password but none given: a clear refusal at once, not a prompt.
    let url = format!("mysql://{}@{}:{}/", a.user, a.host, a.port);
    let t = on_terminal(home.path(), &["inventory", "--url", &url]);
    let (code, text) = t.finish(Duration::from_secs(30));
    assert_eq!(code, 2, "{text}");
    assert!(!text.contains("Password for"), "prompted: {text}");
    assert!(
        text.contains("access denied") && text.contains("--ask-pass"),
        "{text}"
    );
    // root without a password (as a fresh server has it) connects without a word.
    if let Some(root) = server.passwordless_root() {
        let url = root.url_with_secret();
        let t = on_terminal(home.path(), &["inventory", "--url", &url]);
        let (code, text) = t.finish(Duration::from_secs(30));
        assert!(code == 0 || code == 1, "root connects: {text}");
        assert!(!text.contains("Password for"), "prompted: {text}");
    }
}

#[test]
fn ask_pass_prompts_on_the_terminal_and_never_echoes() {
    let db = test_database("creds_ask_pass");
    let a = &db.config;
    let pw = a.password().unwrap();
    let home = tempfile::tempdir().unwrap();
    let url = format!("mysql://{}@127.0.0.1:{}/{}", a.user, a.port, db.name);
    let mut t = on_terminal(
        home.path(),
        &["inventory", "--ask-pass", "-v", "--url", &url],
    );
    assert!(
        t.wait_for(
            &format!("Password for {}@127.0.0.1:", a.user),
            Duration::from_secs(20)
        ),
        "no prompt: {}",
        t.text()
    );
    t.stdin.write_all(format!("{pw}\n").as_bytes()).unwrap();
    t.stdin.flush().unwrap();
    let (code, text) = t.finish(Duration::from_secs(30));
    assert!(
        code == 0 || code == 1,
        "connects with the typed password: {text}"
    );
    assert!(
        text.contains("password from the --ask-pass prompt"),
        "{text}"
    );
    assert!(
        !text.contains(pw),
        "the password was echoed or printed: {text}"
    );
}

#[test]
fn ask_pass_without_a_terminal_says_so() {
    use std::os::unix::process::CommandExt;
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args([
        "inventory",
        "--ask-pass",
        "--url",
        "mysql://dba@127.0.0.1:1/x",
    ])
    .stdin(Stdio::null())
    .env_remove("MYSQL_PWD")
    .env_remove("MYSQL_URL")
    .env("HOME", home.path());
    // SAFETY: setsid(2) only detaches the child from our controlling terminal, if any, so
    // that it has no /dev/tty to prompt on, as under CI.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let out = cmd.output().expect("the myrecode binary runs");
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--ask-pass needs a terminal") && stderr.contains("Fix:"),
        "{stderr}"
    );
}

#[test]
fn option_file_last_occurrence_wins_and_a_missing_include_is_skipped() {
    // No server: the settings are logged (-v) before connecting to a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-there.cnf");
    let cnf = dir.path().join("order.cnf");
    std::fs::write(
        &cnf,
        format!(
            "!include {}\n[myrecode]\nhost=192.0.2.1\nport=1\n[client]\nhost=127.0.0.1\nport={port}\nuser=dba\n",
            missing.display()
        ),
    )
    .unwrap();
    let out = run_in(
        dir.path(),
        &[],
        &["inventory", "-v", "--defaults-file", cnf.to_str().unwrap()],
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let shown = cnf.display();
    assert!(
        stderr.contains(&format!(
            "warning: {shown}: !include {}: no such file; skipped",
            missing.display()
        )),
        "a missing !include is warned about, naming the file: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "user from {shown} [client], host from {shown} [client], port from {shown} [client]"
        )),
        "[client] comes after [myrecode] in the file, so its host and port win: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "cannot reach the MySQL server at 127.0.0.1:{port}"
        )),
        "{stderr}"
    );
}

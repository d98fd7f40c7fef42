//! A `--url` password leaves the process's command line (`/proc/PID/cmdline`, what `ps`
//! shows) once myrecode has read its arguments, as the mysql client hides `-p`; `verify`
//! alone takes `--pause-replicas`.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_url_password_is_hidden_from_the_command_line_while_connecting() {
    // A socket that accepts TCP (the kernel's backlog) but never greets: the client waits
    // in its connect for up to 15 s, time to look at its command line.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    for form in ["separate", "equals"] {
        let url = format!("mysql://someone:secretpw42@127.0.0.1:{port}/x");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
        cmd.arg("inventory");
        if form == "separate" {
            cmd.args(["--url", &url]);
        } else {
            cmd.arg(format!("--url={url}"));
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_remove("MYSQL_PWD")
            .env_remove("MYSQL_URL")
            .env("HOME", home.path())
            .spawn()
            .expect("the myrecode binary runs");
        let path = format!("/proc/{}/cmdline", child.id());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = String::new();
        while Instant::now() < deadline {
            seen = String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default())
                .replace('\0', " ");
            // Before exec the child is still a copy of this test; wait for myrecode itself.
            if seen.contains("someone:") && !seen.contains("secretpw42") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let still_running = child.try_wait().unwrap().is_none();
        child.kill().ok();
        child.wait().ok();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .ok();
        assert!(still_running, "{form}: myrecode ended early: {stderr}");
        assert!(
            seen.contains(&format!("someone:xxxxxxxxxx@127.0.0.1:{port}/x")),
            "{form}: the password is overwritten in place, the rest stays: {seen:?}"
        );
        assert!(!seen.contains("secretpw42"), "{form}: {seen:?}");
    }
    drop(silent);
}

/// `verify` pauses replicas only when asked: `--pause-replicas` is its own, listed in its
/// help, and no other command takes it.
#[test]
fn verify_pauses_replicas_only_with_pause_replicas() {
    let help = Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["verify", "--help"])
        .output()
        .expect("the myrecode binary runs");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    assert!(text.contains("--pause-replicas"), "{text}");
    assert!(
        text.contains("paused only for the time of two snapshots"),
        "{text}"
    );
    let other = Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["rollback", "job.yaml", "--pause-replicas"])
        .env("HOME", tempfile::tempdir().unwrap().path())
        .output()
        .expect("the myrecode binary runs");
    assert_eq!(other.status.code(), Some(2), "{other:?}");
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("unexpected argument '--pause-replicas'"),
        "{other:?}"
    );
}

//! A local `mariadbd`/`mysqld` of our own: found on the PATH, started from a template data
//! directory on a free loopback port, watched by a shell watchdog that stops it and removes
//! its directory when our process exits, however it exits.

use super::connect::ConnectionConfig;
use super::testuser::{block_on_thread, create_test_user};
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn search_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    // Debian installs the server in sbin, which is not on a normal user's PATH.
    for extra in [
        "/usr/sbin",
        "/usr/local/sbin",
        "/usr/local/mysql/bin",
        "/usr/bin",
    ] {
        let p = PathBuf::from(extra);
        if !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    dirs
}

pub(super) fn find_program(names: &[&str]) -> Option<PathBuf> {
    for dir in search_path() {
        for name in names {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

pub(super) fn find_server_binary() -> Option<PathBuf> {
    find_program(&["mariadbd", "mysqld"])
}

fn is_root() -> bool {
    // SAFETY-free: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A server process of ours in a temp directory.
pub(super) struct LocalServer {
    pub(super) root: PathBuf,
    pub(super) binary: PathBuf,
    pub(super) args: Vec<String>,
    pub(super) port: u16,
    pub(super) version: String,
    pub(super) admin: ConnectionConfig,
    pub(super) watchdog: Mutex<Option<Child>>,
}

const WATCHDOG: &str = r#"
parent=$1; dir=$2; shift 2
"$@" >>"$dir/server.out" 2>&1 &
child=$!
while kill -0 "$parent" 2>/dev/null && [ ! -e "$dir/stop-now" ]; do sleep 0.3; done
pid=$(cat "$dir/data/server.pid" 2>/dev/null)
[ -n "$pid" ] || pid=$child
kill "$pid" 2>/dev/null
if [ "$pid" = "$child" ]; then wait "$child"; else
  i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.2; i=$((i+1)); done
  kill -9 "$pid" 2>/dev/null
fi
kill -9 "$child" 2>/dev/null; wait 2>/dev/null
rm -rf "$dir"
"#;

impl LocalServer {
    /// Starts a server of ours; `extra` server options (TLS certificates, say) follow ours.
    pub(super) fn start(binary: &Path, extra: &[String]) -> Result<Self> {
        let version_out = Command::new(binary)
            .arg("--version")
            .output()
            .with_context(|| format!("cannot run {}", binary.display()))?;
        let version_line = String::from_utf8_lossy(&version_out.stdout)
            .trim()
            .to_string();
        let mariadb = version_line.contains("MariaDB");
        let version = short_version(&version_line, mariadb);
        let template = ensure_template(binary, mariadb)?;

        let root = tempfile::Builder::new()
            .prefix("myrecode-throwaway-")
            .tempdir()
            .context("cannot create a temp directory for the throwaway server")?
            .keep();
        let data = root.join("data");
        copy_dir(&template, &data).context("cannot copy the server template")?;
        std::fs::create_dir_all(root.join("tmp"))?;

        let mut last_err = None;
        for _ in 0..3 {
            let port = free_port()?;
            let mut args = server_args(&root, port, mariadb);
            args.extend(extra.iter().cloned());
            let mut server = LocalServer {
                root: root.clone(),
                binary: binary.to_path_buf(),
                args,
                port,
                version: version.clone(),
                admin: ConnectionConfig::from_url("mysql://root@127.0.0.1/")?,
                watchdog: Mutex::new(None),
            };
            let child = Command::new("sh")
                .arg("-c")
                .arg(WATCHDOG)
                .arg("myrecode-watchdog")
                .arg(std::process::id().to_string())
                .arg(&root)
                .arg(binary)
                .args(&server.args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot start sh for the server watchdog")?;
            *server.watchdog.lock().unwrap() = Some(child);
            match server.wait_ready(Duration::from_secs(90)) {
                Ok(()) => {
                    let root_cfg = server.socket_root();
                    server.admin = create_test_user(&root_cfg)?;
                    return Ok(server);
                }
                Err(e) => {
                    // Port taken between our probe and the server's bind: try another one.
                    let log = server.log_tail();
                    server.shutdown();
                    let port_clash = log.contains("Address already in use");
                    last_err = Some(e.context(log));
                    if !port_clash {
                        break;
                    }
                    copy_dir(&template, &root.join("data")).ok();
                }
            }
        }
        Err(last_err.unwrap_or_else(|| anyhow!("the throwaway server did not start")))
    }

    /// `root` without a password over the server's socket, as the data directory was made.
    pub(super) fn socket_root(&self) -> ConnectionConfig {
        let sock = self.root.join("server.sock");
        let url = format!(
            "mysql://root@127.0.0.1:{}/?socket={}",
            self.port,
            percent_encoding::utf8_percent_encode(
                &sock.to_string_lossy(),
                percent_encoding::NON_ALPHANUMERIC
            )
        );
        ConnectionConfig::from_url(&url).expect("socket URL parses")
    }

    fn wait_ready(&self, limit: Duration) -> Result<()> {
        let started = Instant::now();
        let cfg = self.socket_root();
        loop {
            if self.root.join("server.sock").exists() {
                let c = cfg.clone();
                if block_on_thread(async move { c.connect_one().await.map(|_| ()) }).is_ok() {
                    return Ok(());
                }
            }
            if let Some(child) = self.watchdog.lock().unwrap().as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    bail!("the throwaway server exited during start-up");
                }
            }
            if self.log_tail().contains("[ERROR] Aborting") {
                bail!("the throwaway server aborted during start-up");
            }
            if started.elapsed() > limit {
                bail!("the throwaway server did not answer within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.root.join("error.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    fn server_pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.root.join("data/server.pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    pub(super) fn stop(&self) -> Result<()> {
        let pid = self
            .server_pid()
            .ok_or_else(|| anyhow!("the throwaway server has no pid file"))?;
        // SAFETY: kill(2) with a pid we read from the server's own pid file.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let deadline = Instant::now() + Duration::from_secs(30);
        // SAFETY: signal 0 only probes whether the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < deadline {
            if is_zombie(pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::remove_file(self.root.join("data/server.pid")).ok();
        std::fs::remove_file(self.root.join("server.sock")).ok();
        Ok(())
    }

    pub(super) fn start_again(&self) -> Result<()> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("server.out"))?;
        Command::new(&self.binary)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .context("cannot restart the throwaway server")?;
        self.wait_ready(Duration::from_secs(90))
    }

    fn shutdown(&self) {
        std::fs::write(self.root.join("stop-now"), b"").ok();
        if let Some(mut child) = self.watchdog.lock().unwrap().take() {
            let deadline = Instant::now() + Duration::from_secs(40);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            child.kill().ok();
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

fn short_version(line: &str, mariadb: bool) -> String {
    let version = line
        .split_whitespace()
        .skip_while(|w| *w != "Ver")
        .nth(1)
        .unwrap_or("?")
        .trim_end_matches(',');
    let number = version.split('-').next().unwrap_or(version);
    format!("{} {number}", if mariadb { "MariaDB" } else { "MySQL" })
}

fn server_args(root: &Path, port: u16, mariadb: bool) -> Vec<String> {
    let p = |name: &str| root.join(name).to_string_lossy().into_owned();
    let mut args = vec![
        "--no-defaults".to_string(),
        format!("--datadir={}", p("data")),
        format!("--socket={}", p("server.sock")),
        format!("--pid-file={}", p("data/server.pid")),
        format!("--log-error={}", p("error.log")),
        format!("--tmpdir={}", p("tmp")),
        format!("--port={port}"),
        "--bind-address=127.0.0.1".to_string(),
        "--skip-name-resolve".to_string(),
        "--skip-log-bin".to_string(),
        "--innodb-flush-log-at-trx-commit=2".to_string(),
        "--innodb-buffer-pool-size=256M".to_string(),
        "--innodb-use-native-aio=0".to_string(),
        "--max-connections=500".to_string(),
    ];
    if mariadb {
        args.push("--innodb-doublewrite=0".to_string());
    } else {
        args.push("--mysqlx=OFF".to_string());
        args.push("--performance-schema=OFF".to_string());
    }
    if is_root() {
        args.push("--user=root".to_string());
    }
    args
}

fn free_port() -> Result<u16> {
    let l =
        std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free loopback port")?;
    Ok(l.local_addr()?.port())
}

/// Initialises a pristine data directory once per server binary and reuses it: install-db takes seconds.
fn ensure_template(binary: &Path, mariadb: bool) -> Result<PathBuf> {
    let meta = std::fs::metadata(binary)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let uid = unsafe { libc::geteuid() };
    let template = std::env::temp_dir().join(format!(
        "myrecode-template-u{uid}-{:x}-{mtime:x}",
        meta.len()
    ));
    if template.join("ready").exists() {
        return Ok(template.join("data"));
    }
    let staging = tempfile::Builder::new()
        .prefix("myrecode-template-staging-")
        .tempdir()?;
    let data = staging.path().join("data");
    std::fs::create_dir_all(&data)?;
    let output = if mariadb {
        let install = find_program(&["mariadb-install-db", "mysql_install_db"]).ok_or_else(|| {
            anyhow!("found {} but not mariadb-install-db to initialise it. Fix: apt-get install -y mariadb-server", binary.display())
        })?;
        let mut cmd = Command::new(install);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .arg("--skip-name-resolve");
        if let Some(dir) = binary.parent() {
            // install-db looks for the server beside itself or in --basedir; point it at ours.
            if dir.ends_with("sbin") || dir.ends_with("bin") {
                if let Some(base) = dir.parent() {
                    cmd.arg(format!("--basedir={}", base.display()));
                }
            }
        }
        if is_root() {
            cmd.arg("--user=root");
        }
        cmd.output()
    } else {
        let mut cmd = Command::new(binary);
        cmd.arg("--no-defaults")
            .arg("--initialize-insecure")
            .arg(format!("--datadir={}", data.display()));
        if is_root() {
            cmd.arg("--user=root");
        }
        cmd.output()
    }
    .context("cannot run the server's data directory initialisation")?;
    if !output.status.success() {
        bail!(
            "initialising a data directory for {} failed: {}{}",
            binary.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::write(staging.path().join("ready"), b"")?;
    let staged = staging.keep();
    if std::fs::rename(&staged, &template).is_err() {
        // Another process won the race; use theirs.
        std::fs::remove_dir_all(&staged).ok();
        if !template.join("ready").exists() {
            bail!(
                "cannot set up the server template at {}",
                template.display()
            );
        }
    }
    Ok(template.join("data"))
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

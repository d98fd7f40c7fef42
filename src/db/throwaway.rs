//! Throwaway MySQL/MariaDB servers for tests and `demo`.
//!
//! Where a server comes from, in order:
//! 1. `MYSQL_TEST_URL`, a server the user already runs (each test gets its own database on it);
//! 2. testcontainers with the MySQL 8.4 image, when a Docker engine answers;
//! 3. a `mariadbd`/`mysqld` found on the PATH, started in a temp directory on a free loopback port.
//!
//! A local server is watched by a small shell watchdog that stops it and removes its directory
//! when our process exits, however it exits (a test binary never runs destructors of statics,
//! and a killed one runs nothing).

use super::connect::{ConnectionConfig, PasswordSource};
use anyhow::{anyhow, bail, Context, Result};
use sqlx::{Connection, Executor};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The MySQL image testcontainers starts where Docker runs.
pub const MYSQL_IMAGE_TAG: &str = "8.4";

/// What to tell someone who has no server for us.
pub const HOW_TO_GET_A_SERVER: &str = "no MySQL/MariaDB server could be had: MYSQL_TEST_URL is not set, \
no Docker engine answered (for MySQL 8.4 via testcontainers), and neither mariadbd nor mysqld is on the PATH. \
Fix: `apt-get install -y mariadb-server` (`bash .ci/run` does it for you), or start Docker, \
or export MYSQL_TEST_URL=mysql://user:password@127.0.0.1:3306/";

/// A server that exists only for the life of this process (or, for `MYSQL_TEST_URL`, one lent to us).
pub struct ThrowawayServer {
    admin: ConnectionConfig,
    backing: Backing,
    description: String,
}

enum Backing {
    External,
    /// Held only so the container lives (its Drop removes it).
    Container {
        _keep_alive: Box<dyn std::any::Any + Send + Sync>,
    },
    Local(Box<LocalServer>),
}

impl std::fmt::Debug for ThrowawayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ThrowawayServer({})", self.description)
    }
}

impl ThrowawayServer {
    /// Starts (or borrows) a server by the order in the module docs.
    pub fn start() -> Result<Self> {
        // Startup runs its own tokio runtime; a fresh thread keeps it clear of the caller's.
        std::thread::spawn(Self::start_blocking)
            .join()
            .map_err(|_| anyhow!("the server start-up thread panicked"))?
    }

    fn start_blocking() -> Result<Self> {
        if let Ok(url) = std::env::var("MYSQL_TEST_URL") {
            let admin = ConnectionConfig::from_url(&url)
                .context("MYSQL_TEST_URL is not a valid mysql:// URL")?
                .resolve_password(PasswordSource::NoPrompt)?
                .with_database(None);
            block_on(async { admin.connect_one().await.map(|_| ()) })
                .context("MYSQL_TEST_URL is set but its server cannot be used")?;
            let description = format!("server from MYSQL_TEST_URL ({admin})");
            return Ok(Self {
                admin,
                backing: Backing::External,
                description,
            });
        }
        let mut notes = Vec::new();
        if docker_may_answer() {
            match start_container() {
                Ok(s) => return Ok(s),
                Err(e) => notes.push(format!("Docker: {e:#}")),
            }
        }
        match find_server_binary() {
            Some(bin) => LocalServer::start(&bin).map(|local| {
                let description =
                    format!("{} (throwaway, {})", local.version, local.root.display());
                Self {
                    admin: local.admin.clone(),
                    backing: Backing::Local(Box::new(local)),
                    description,
                }
            }),
            None => {
                let extra = if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join("; "))
                };
                Err(anyhow!("{HOW_TO_GET_A_SERVER}{extra}"))
            }
        }
    }

    /// One server shared by every test of this process, started on first use.
    pub fn shared() -> Result<&'static ThrowawayServer> {
        static SHARED: OnceLock<std::result::Result<ThrowawayServer, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| ThrowawayServer::start().map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow!("{e}"))
    }

    /// Administrative connection settings (no default database); the password is inside, never printed.
    pub fn admin(&self) -> &ConnectionConfig {
        &self.admin
    }

    /// What the server is, for messages (version and where it runs; no password).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Creates a new, uniquely named database and returns settings that use it.
    pub fn fresh_database(&self, hint: &str) -> Result<TestDatabase> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let clean: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(24)
            .collect();
        let name = format!(
            "t_{clean}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        self.create_database_named(&name)
    }

    /// Creates a database with exactly this name (which may need quoting) and returns settings that use it.
    pub fn create_database_named(&self, name: &str) -> Result<TestDatabase> {
        let admin = self.admin.clone();
        let sql = format!(
            "CREATE DATABASE {} CHARACTER SET latin1",
            super::quote::ident(name)
        );
        block_on_thread(async move {
            let mut c = admin.connect_one().await?;
            c.execute(sql.as_str()).await?;
            Ok(())
        })?;
        Ok(TestDatabase {
            config: self.admin.with_database(Some(name)),
            name: name.to_string(),
            drop_on_exit: matches!(self.backing, Backing::External),
        })
    }

    /// Stops the server as a crash would leave it unanswering (local servers only); `start_again` brings it back.
    pub fn stop(&self) -> Result<()> {
        match &self.backing {
            Backing::Local(l) => l.stop(),
            _ => bail!("only a local throwaway server can be stopped by the tests"),
        }
    }

    /// Starts a stopped local server again on the same data and port.
    pub fn start_again(&self) -> Result<()> {
        match &self.backing {
            Backing::Local(l) => l.start_again(),
            _ => bail!("only a local throwaway server can be restarted by the tests"),
        }
    }
}

/// A database of its own for one test or one demo; dropped on a borrowed server when done.
#[derive(Debug)]
pub struct TestDatabase {
    /// Settings that connect straight into this database.
    pub config: ConnectionConfig,
    /// The database (schema) name, unquoted.
    pub name: String,
    drop_on_exit: bool,
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if !self.drop_on_exit {
            return;
        }
        let admin = self.config.with_database(None);
        let sql = format!(
            "DROP DATABASE IF EXISTS {}",
            super::quote::ident(&self.name)
        );
        let _ = block_on_thread(async move {
            let mut c = admin.connect_one().await?;
            c.execute(sql.as_str()).await?;
            Ok(())
        });
    }
}

/// For tests: a fresh database on the shared throwaway server, or a panic that says how to get a server.
pub fn test_database(hint: &str) -> TestDatabase {
    let server = ThrowawayServer::shared().unwrap_or_else(|e| panic!("{e}"));
    server.fresh_database(hint).unwrap_or_else(|e| {
        panic!(
            "cannot create a test database on {}: {e:#}",
            server.description()
        )
    })
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime can be built")
        .block_on(f)
}

/// Runs a future to completion on a thread of its own, so callers inside a runtime may use it too.
fn block_on_thread<T: Send + 'static>(
    f: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    std::thread::spawn(move || block_on(f))
        .join()
        .map_err(|_| anyhow!("a database helper thread panicked"))?
}

fn docker_may_answer() -> bool {
    if std::env::var_os("DOCKER_HOST").is_some() {
        return true;
    }
    let home_sock =
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker/run/docker.sock"));
    let candidates = [Some(PathBuf::from("/var/run/docker.sock")), home_sock];
    candidates
        .iter()
        .flatten()
        .any(|p| std::os::unix::net::UnixStream::connect(p).is_ok())
}

fn start_container() -> Result<ThrowawayServer> {
    use testcontainers::runners::SyncRunner;
    use testcontainers::ImageExt;
    let container = testcontainers_modules::mysql::Mysql::default()
        .with_tag(MYSQL_IMAGE_TAG)
        .with_startup_timeout(Duration::from_secs(180))
        .start()
        .context("testcontainers could not start mysql:8.4")?;
    let port = container
        .get_host_port_ipv4(3306)
        .context("the MySQL container exposes no port 3306")?;
    let root = ConnectionConfig::from_url(&format!("mysql://root@127.0.0.1:{port}/"))?;
    let admin = create_test_user(&root)?;
    Ok(ThrowawayServer {
        admin,
        backing: Backing::Container {
            _keep_alive: Box::new(container),
        },
        description: format!("MySQL {MYSQL_IMAGE_TAG} (testcontainers, port {port})"),
    })
}

/// Creates a password-protected administrative user, so tests exercise real authentication.
fn create_test_user(root: &ConnectionConfig) -> Result<ConnectionConfig> {
    let password = random_token();
    let root_cfg = root.clone();
    let pw = password.clone();
    block_on(async move {
        let mut c = root_cfg.connect_one().await?;
        // Anonymous users would shadow ours for local connections.
        let anon: Vec<(String,)> =
            sqlx::query_as("SELECT CAST(Host AS CHAR) FROM mysql.user WHERE User = ''")
                .fetch_all(&mut c)
                .await
                .unwrap_or_default();
        for (host,) in anon {
            c.execute(format!("DROP USER ''@{}", super::quote::literal(&host)).as_str())
                .await?;
        }
        for host in ["%", "localhost"] {
            let h = super::quote::literal(host);
            let p = super::quote::literal(&pw);
            c.execute(
                format!("CREATE USER IF NOT EXISTS 'myrecode'@{h} IDENTIFIED BY {p}").as_str(),
            )
            .await?;
            c.execute(
                format!("GRANT ALL PRIVILEGES ON *.* TO 'myrecode'@{h} WITH GRANT OPTION").as_str(),
            )
            .await?;
        }
        c.close().await.ok();
        anyhow::Ok(())
    })?;
    let host = if root.socket.is_some() {
        "127.0.0.1".to_string()
    } else {
        root.host.clone()
    };
    let url = format!("mysql://myrecode:{password}@{host}:{}/", root.port);
    ConnectionConfig::from_url(&url)
}

fn random_token() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("Tw{:016x}", h.finish())
}

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

fn find_program(names: &[&str]) -> Option<PathBuf> {
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

fn find_server_binary() -> Option<PathBuf> {
    find_program(&["mariadbd", "mysqld"])
}

fn is_root() -> bool {
    // SAFETY-free: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A server process of ours in a temp directory.
struct LocalServer {
    root: PathBuf,
    binary: PathBuf,
    args: Vec<String>,
    port: u16,
    version: String,
    admin: ConnectionConfig,
    watchdog: Mutex<Option<Child>>,
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
    fn start(binary: &Path) -> Result<Self> {
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
            let args = server_args(&root, port, mariadb);
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

    fn socket_root(&self) -> ConnectionConfig {
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

    fn stop(&self) -> Result<()> {
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

    fn start_again(&self) -> Result<()> {
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

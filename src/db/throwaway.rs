//! Throwaway MySQL/MariaDB servers for tests and `demo`.
//!
//! Where a server comes from, in order:
//! 1. `MYSQL_TEST_URL`, a server the user already runs (each test gets its own database on it);
//! 2. testcontainers with the MySQL 8.4 image (or `MYRECODE_TEST_IMAGE`'s), when a Docker engine answers;
//! 3. a `mariadbd`/`mysqld` found on the PATH, started in a temp directory on a free loopback port.
//!
//! A local server is watched by a small shell watchdog that stops it and removes its directory
//! when our process exits, however it exits (a test binary never runs destructors of statics,
//! and a killed one runs nothing).

use super::connect::ConnectionConfig;
use super::localserver::{find_program, find_server_binary, LocalServer};
use super::testuser::{block_on, block_on_thread, create_test_user};
use anyhow::{anyhow, bail, Context, Result};
use sqlx::Executor;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

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
                .or_env_password()
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
            Some(bin) => Self::local(&bin, &[]),
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

    /// Starts a local server of our own with extra server options (`--ssl-cert=...`, say):
    /// `MYSQL_TEST_URL` and containers are passed over, since only our own `mariadbd`/`mysqld`
    /// takes options.
    pub fn start_local_with(extra: &[String]) -> Result<Self> {
        let extra = extra.to_vec();
        std::thread::spawn(move || match find_server_binary() {
            Some(bin) => Self::local(&bin, &extra),
            None => Err(anyhow!(
                "no mariadbd or mysqld on the PATH to start with server options. \
                 Fix: `apt-get install -y mariadb-server` (`bash .ci/run` does it for you)"
            )),
        })
        .join()
        .map_err(|_| anyhow!("the server start-up thread panicked"))?
    }

    fn local(bin: &std::path::Path, extra: &[String]) -> Result<Self> {
        LocalServer::start(bin, extra).map(|local| {
            let description = format!("{} (throwaway, {})", local.version, local.root.display());
            Self {
                admin: local.admin.clone(),
                backing: Backing::Local(Box::new(local)),
                description,
            }
        })
    }

    /// `root` with no password over the socket, as a fresh local server has it; `None` for a
    /// server we did not start ourselves.
    pub fn passwordless_root(&self) -> Option<ConnectionConfig> {
        match &self.backing {
            Backing::Local(l) => Some(l.socket_root()),
            _ => None,
        }
    }

    /// Whether the server is lent to us (`MYSQL_TEST_URL`): what we create there, we drop.
    pub fn is_lent(&self) -> bool {
        matches!(self.backing, Backing::External)
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

/// The `mariadb`/`mysql` command-line client, where the server's packages put it.
pub fn find_client() -> Option<PathBuf> {
    find_program(&["mariadb", "mysql"])
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

/// A server image testcontainers can start: which module, and its tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Image {
    /// `mysql:<tag>`.
    Mysql(String),
    /// `mariadb:<tag>`.
    Mariadb(String),
}

/// The image `MYRECODE_TEST_IMAGE` names (`mysql:8.0`, `mariadb:10.6`, …; the forge's CI
/// matrix sets it), else MySQL [`MYSQL_IMAGE_TAG`]. Pure.
pub fn container_image(var: Option<&str>) -> Result<Image> {
    let Some(v) = var.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Image::Mysql(MYSQL_IMAGE_TAG.into()));
    };
    let (name, tag) = v.split_once(':').unwrap_or((v, "latest"));
    let tag_ok = !tag.is_empty()
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_');
    match name {
        "mysql" if tag_ok => Ok(Image::Mysql(tag.into())),
        "mariadb" if tag_ok => Ok(Image::Mariadb(tag.into())),
        _ => bail!(
            "MYRECODE_TEST_IMAGE={v} is not a server image the harness knows. \
             Fix: mysql:<tag> or mariadb:<tag> (mysql:8.0, mariadb:10.11), or unset it for mysql:{MYSQL_IMAGE_TAG}"
        ),
    }
}

fn start_container() -> Result<ThrowawayServer> {
    use testcontainers::runners::SyncRunner;
    use testcontainers::ImageExt;
    let image = container_image(std::env::var("MYRECODE_TEST_IMAGE").ok().as_deref())?;
    let wait = Duration::from_secs(180);
    let (container, port, shown): (Box<dyn std::any::Any + Send + Sync>, u16, String) = match &image
    {
        Image::Mysql(tag) => {
            let c = testcontainers_modules::mysql::Mysql::default()
                .with_tag(tag.as_str())
                .with_startup_timeout(wait)
                .start()
                .with_context(|| format!("testcontainers could not start mysql:{tag}"))?;
            let port = c
                .get_host_port_ipv4(3306)
                .context("the container exposes no port 3306")?;
            (Box::new(c), port, format!("MySQL {tag}"))
        }
        Image::Mariadb(tag) => {
            let c = testcontainers_modules::mariadb::Mariadb::default()
                .with_tag(tag.as_str())
                .with_startup_timeout(wait)
                .start()
                .with_context(|| format!("testcontainers could not start mariadb:{tag}"))?;
            let port = c
                .get_host_port_ipv4(3306)
                .context("the container exposes no port 3306")?;
            (Box::new(c), port, format!("MariaDB {tag}"))
        }
    };
    let root = ConnectionConfig::from_url(&format!("mysql://root@127.0.0.1:{port}/"))?;
    let admin = create_test_user(&root)?;
    Ok(ThrowawayServer {
        admin,
        backing: Backing::Container {
            _keep_alive: container,
        },
        description: format!("{shown} (testcontainers, port {port})"),
    })
}

#[cfg(test)]
mod image_tests {
    use super::*;

    #[test]
    fn the_test_image_is_mysql_or_mariadb_with_a_plain_tag() {
        assert_eq!(
            container_image(None).unwrap(),
            Image::Mysql(MYSQL_IMAGE_TAG.into())
        );
        assert_eq!(
            container_image(Some("mysql:8.0")).unwrap(),
            Image::Mysql("8.0".into())
        );
        assert_eq!(
            container_image(Some("mariadb:10.6")).unwrap(),
            Image::Mariadb("10.6".into())
        );
        assert_eq!(
            container_image(Some("mariadb")).unwrap(),
            Image::Mariadb("latest".into())
        );
        for bad in ["postgres:16", "mysql:8.0; rm -rf /", "mysql:"] {
            let e = container_image(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("Fix: mysql:<tag> or mariadb:<tag>"), "{e}");
        }
    }
}

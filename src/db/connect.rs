//! Resolves where and how to connect, and turns connection failures into one-line errors with a fix.
//!
//! Where the settings come from, and in which order, is [`super::settings`]' business; the
//! password is then held only in [`ConnectionConfig`], whose `Debug` and `Display` never show it.

use super::errno;
use super::settings::{Key, Settings};
use super::tls::{self, TlsSettings};
use anyhow::{anyhow, Result};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::{ConnectOptions, Connection, Executor, MySqlConnection, MySqlPool};
use std::fmt;
use std::time::Duration;

/// Everything needed to open a connection; the password never leaves this struct in text.
#[derive(Clone)]
pub struct ConnectionConfig {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// User name.
    pub user: String,
    password: Option<String>,
    /// Default database (schema), if the URL names one.
    pub database: Option<String>,
    /// Unix socket path, when given as `?socket=/path`.
    pub socket: Option<String>,
    /// TLS: `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key` (replicas of a job share them).
    pub tls: TlsSettings,
}

impl fmt::Debug for ConnectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConnectionConfig({self})")
    }
}

impl fmt::Display for ConnectionConfig {
    /// Renders as a URL without the password, safe for logs and reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mysql://{}@{}:{}/", self.user, self.host, self.port)?;
        if let Some(db) = &self.database {
            write!(f, "{db}")?;
        }
        Ok(())
    }
}

impl ConnectionConfig {
    /// Parses a `mysql://user[:password]@host[:port][/database][?ssl-mode=..]` URL; what it
    /// leaves out takes the defaults (user root, host localhost, port 3306).
    pub fn from_url(raw: &str) -> Result<Self> {
        Self::from_settings(&Settings::from_url(raw)?)
    }

    /// Builds the settings in force, with the defaults for what none of the sources set.
    pub fn from_settings(s: &Settings) -> Result<Self> {
        let path = |k: Key| s.get(k).map(std::path::PathBuf::from);
        let tls = TlsSettings {
            mode: s.get(Key::SslMode).map(tls::SslMode::parse).transpose()?,
            ca: path(Key::SslCa),
            cert: path(Key::SslCert),
            key: path(Key::SslKey),
        };
        tls.validate()?;
        Ok(Self {
            host: s.get(Key::Host).unwrap_or("localhost").to_string(),
            port: s
                .get(Key::Port)
                .map(|p| p.parse::<u16>())
                .transpose()
                .map_err(|_| {
                    anyhow!("the port is not a number. Fix: write a number from 1 to 65535")
                })?
                .unwrap_or(3306),
            user: s.get(Key::User).unwrap_or("root").to_string(),
            password: s.get(Key::Password).map(str::to_string),
            database: s.get(Key::Database).map(str::to_string),
            socket: s.get(Key::Socket).map(str::to_string),
            tls,
        })
    }

    /// Fills a missing password from `MYSQL_PWD` (for servers lent to the tests).
    pub fn or_env_password(mut self) -> Self {
        if self.password.is_none() {
            self.password = std::env::var("MYSQL_PWD").ok();
        }
        self
    }

    /// Returns a copy pointing at another default database.
    pub fn with_database(&self, database: Option<&str>) -> Self {
        let mut c = self.clone();
        c.database = database.map(str::to_string);
        c
    }

    /// Returns the full URL including the password (percent-encoded): for child processes only, never for printing.
    pub fn url_with_secret(&self) -> String {
        let mut u = url::Url::parse("mysql://placeholder/").expect("static URL parses");
        u.set_host(Some(&self.host)).ok();
        u.set_port(Some(self.port)).ok();
        u.set_username(&self.user).ok();
        if let Some(p) = &self.password {
            u.set_password(Some(p)).ok();
        }
        if let Some(db) = &self.database {
            u.set_path(&format!("/{}", utf8_percent_encode_path(db)));
        }
        if let Some(s) = &self.socket {
            u.query_pairs_mut().append_pair("socket", s);
        }
        for (k, v) in self.tls.query_pairs() {
            u.query_pairs_mut().append_pair(k, &v);
        }
        u.to_string()
    }

    /// The password, when known, so the caller can mask it from child output.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    fn options(&self) -> MySqlConnectOptions {
        let mut o = MySqlConnectOptions::new()
            .host(&self.host)
            .port(self.port)
            .username(&self.user)
            .charset("utf8mb4")
            .log_statements(tracing::log::LevelFilter::Debug)
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(10));
        if let Some(p) = &self.password {
            o = o.password(p);
        }
        if let Some(db) = &self.database {
            o = o.database(db);
        }
        if let Some(s) = &self.socket {
            o = o.socket(s);
        }
        self.tls.apply(o)
    }

    /// Opens one connection, with failures explained (wrong password, unknown database, unreachable host).
    pub async fn connect_one(&self) -> Result<MySqlConnection> {
        // Settings gathered from the command line were checked already (naming their source);
        // this catches configs built otherwise, before the driver reports "cannot reach".
        self.tls.check_files(|_| None)?;
        let attempt = tokio::time::timeout(
            Duration::from_secs(15),
            MySqlConnection::connect_with(&self.options()),
        )
        .await;
        match attempt {
            Ok(Ok(mut conn)) => {
                // The driver's own error, so a run judges a connection lost here as it
                // judges one lost on any statement (and retries it).
                conn.execute(super::sqlmode::tool_session_sql().as_str())
                    .await?;
                Ok(conn)
            }
            Ok(Err(e)) => Err(explain_connect_error(self, &e)),
            Err(_) => Err(Unreachable(format!(
                "cannot reach the MySQL server at {}:{}: no answer within 15 s. Fix: check host and port in --url, and that a firewall lets you through",
                self.host,
                self.port
            ))
            .into()),
        }
    }

    /// Opens a pool of up to `size` connections after one probe connection proves the settings work.
    pub async fn connect_pool(&self, size: u32) -> Result<MySqlPool> {
        let probe = self.connect_one().await?;
        probe.close().await.ok();
        MySqlPoolOptions::new()
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute(super::sqlmode::tool_session_sql().as_str())
                        .await
                        .map(|_| ())
                })
            })
            .max_connections(size)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(self.options())
            .await
            .map_err(|e| explain_connect_error(self, &e))
    }
}

fn utf8_percent_encode_path(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The server could not be reached at all (down, restarting, wrong host or port): a run
/// retries this, where a refused login is definitive.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// Turns a driver error into one line that names the problem and the fix, without the password.
pub fn explain_connect_error(cfg: &ConnectionConfig, err: &sqlx::Error) -> anyhow::Error {
    let at = format!("{}:{}", cfg.host, cfg.port);
    if let Some(db) = err.as_database_error() {
        let code = db
            .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .map(|e| e.number())
            .unwrap_or(0);
        return match code {
            errno::ACCESS_DENIED if cfg.password.is_none() => anyhow!(
                "access denied for user '{}' at {at}: no password was given (myrecode prompts only when asked). \
                 Fix: put it in ~/.my.cnf under [client] (password=...) or a --defaults-file, set MYSQL_PWD, or pass --ask-pass to type it",
                cfg.user
            ),
            errno::ACCESS_DENIED => anyhow!(
                "access denied for user '{}' at {at}: wrong user name or password. Fix: check the user and the password where they come from (the URL, --defaults-file or ~/.my.cnf, MYSQL_PWD, or --ask-pass; --verbose says which)",
                cfg.user
            ),
            errno::DB_ACCESS_DENIED => anyhow!(
                "user '{}' may not use database '{}' at {at}. Fix: GRANT the user access to it, or connect to another database",
                cfg.user,
                cfg.database.as_deref().unwrap_or("")
            ),
            errno::BAD_DB => anyhow!(
                "unknown database '{}' at {at}. Fix: check the database name in --url (SHOW DATABASES lists them)",
                cfg.database.as_deref().unwrap_or("")
            ),
            errno::HOST_NOT_PRIVILEGED => anyhow!(
                "host not allowed to connect to {at} as '{}'. Fix: create the user for your client host, or connect from an allowed host",
                cfg.user
            ),
            _ => anyhow!("the server at {at} refused the connection: {}", db.message()),
        };
    }
    match err {
        sqlx::Error::Tls(e) => tls::explain(&at, &cfg.host, &cfg.tls, &e.to_string()),
        // rustls reports a refused certificate as an I/O error of the handshake.
        sqlx::Error::Io(io)
            if cfg.tls.mode() != tls::SslMode::Disabled && looks_like_tls(&io.to_string()) =>
        {
            tls::explain(&at, &cfg.host, &cfg.tls, &io.to_string())
        }
        sqlx::Error::Io(io) => Unreachable(format!(
            "cannot reach the MySQL server at {at}: {io}. Fix: check host and port in --url and that the server is running"
        ))
        .into(),
        other => anyhow!("cannot connect to {at}: {other}"),
    }
}

fn looks_like_tls(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    ["certificate", "tls", "handshake", "alert"]
        .iter()
        .any(|w| t.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_url_and_hides_password() {
        let c = ConnectionConfig::from_url("mysql://bob:p%40ss@db.example:3307/shop").unwrap();
        assert_eq!(c.user, "bob");
        assert_eq!(c.password(), Some("p@ss"));
        assert_eq!(c.port, 3307);
        assert_eq!(c.database.as_deref(), Some("shop"));
        let shown = format!("{c} {c:?}");
        assert!(
            !shown.contains("p@ss") && !shown.contains("p%40ss"),
            "{shown}"
        );
    }

    #[test]
    fn round_trips_url_with_secret() {
        let c = ConnectionConfig::from_url("mysql://bob:p%40ss@127.0.0.1:3307/we%20ird").unwrap();
        let again = ConnectionConfig::from_url(&c.url_with_secret()).unwrap();
        assert_eq!(again.password(), Some("p@ss"));
        assert_eq!(again.database.as_deref(), Some("we ird"));
    }

    #[test]
    fn url_with_secret_keeps_the_tls_settings_for_child_processes() {
        let c = ConnectionConfig::from_url(
            "mysql://bob@db.example/shop?ssl-mode=verify_ca&ssl-ca=%2Fetc%2Fca.pem",
        )
        .unwrap();
        assert_eq!(c.tls.mode(), tls::SslMode::VerifyCa);
        let again = ConnectionConfig::from_url(&c.url_with_secret()).unwrap();
        assert_eq!(again.tls, c.tls);
        assert_eq!((again.user.as_str(), again.port), ("bob", 3306));
    }

    #[test]
    fn contradicting_tls_settings_are_refused_before_connecting() {
        let e = ConnectionConfig::from_url("mysql://h/?ssl-cert=/c.pem")
            .unwrap_err()
            .to_string();
        assert!(e.contains("ssl-key") && e.contains("Fix:"), "{e}");
    }

    #[test]
    fn rejects_other_schemes() {
        let e = ConnectionConfig::from_url("postgres://x@y/z")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mysql://"), "{e}");
    }
}

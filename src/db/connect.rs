//! Resolves where and how to connect, and turns connection failures into one-line errors with a fix.
//!
//! The password comes from the URL, `MYSQL_PWD`, or an interactive prompt, and is
//! held only in [`ConnectionConfig`], whose `Debug` and `Display` never show it.

use super::errno;
use anyhow::{anyhow, Context, Result};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions, MySqlSslMode};
use sqlx::{ConnectOptions, Connection, MySqlConnection, MySqlPool};
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

/// Where a missing password may be looked for, in order, after the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordSource {
    /// Only the URL and `MYSQL_PWD`; never prompt (tests, CI, pipes).
    NoPrompt,
    /// Prompt on the terminal when stdin is a TTY and no other source has one.
    PromptIfTty,
}

impl ConnectionConfig {
    /// Parses a `mysql://user[:password]@host[:port][/database]` URL.
    pub fn from_url(raw: &str) -> Result<Self> {
        let parsed = url::Url::parse(raw).map_err(|e| {
            anyhow!(
                "invalid connection URL ({e}). Fix: write it as mysql://user@host:3306/database"
            )
        })?;
        if parsed.scheme() != "mysql" && parsed.scheme() != "mariadb" {
            return Err(anyhow!(
                "connection URL must start with mysql:// (got {}://). Fix: write it as mysql://user@host:3306/database",
                parsed.scheme()
            ));
        }
        let host = parsed
            .host_str()
            .unwrap_or("localhost")
            .trim_matches(['[', ']'])
            .to_string();
        let user = percent_decode(parsed.username())?;
        let user = if user.is_empty() {
            "root".to_string()
        } else {
            user
        };
        let password = match parsed.password() {
            Some(p) => Some(percent_decode(p)?),
            None => None,
        };
        let db = percent_decode(parsed.path().trim_start_matches('/'))?;
        let socket = parsed
            .query_pairs()
            .find(|(k, _)| k == "socket")
            .map(|(_, v)| v.into_owned());
        Ok(Self {
            host,
            port: parsed.port().unwrap_or(3306),
            user,
            password,
            database: (!db.is_empty()).then_some(db),
            socket,
        })
    }

    /// Fills a missing password from `MYSQL_PWD` or, if allowed, an interactive prompt.
    pub fn resolve_password(mut self, source: PasswordSource) -> Result<Self> {
        if self.password.is_none() {
            if let Ok(pw) = std::env::var("MYSQL_PWD") {
                self.password = Some(pw);
            } else if source == PasswordSource::PromptIfTty
                && std::io::IsTerminal::is_terminal(&std::io::stdin())
            {
                let prompt = format!("Password for {}@{}: ", self.user, self.host);
                let pw = rpassword::prompt_password(prompt).context("cannot read the password")?;
                self.password = Some(pw);
            }
        }
        Ok(self)
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
            .ssl_mode(MySqlSslMode::Preferred)
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
        o
    }

    /// Opens one connection, with failures explained (wrong password, unknown database, unreachable host).
    pub async fn connect_one(&self) -> Result<MySqlConnection> {
        let attempt = tokio::time::timeout(
            Duration::from_secs(15),
            MySqlConnection::connect_with(&self.options()),
        )
        .await;
        match attempt {
            Ok(Ok(conn)) => Ok(conn),
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
            .max_connections(size)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(self.options())
            .await
            .map_err(|e| explain_connect_error(self, &e))
    }
}

fn percent_decode(s: &str) -> Result<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| anyhow!("the connection URL has a percent-encoded part that is not UTF-8"))
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
            errno::ACCESS_DENIED => anyhow!(
                "access denied for user '{}' at {at}: wrong user name or password. Fix: check the user in --url and the password (in the URL, MYSQL_PWD, or typed at the prompt)",
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
        sqlx::Error::Io(io) => Unreachable(format!(
            "cannot reach the MySQL server at {at}: {io}. Fix: check host and port in --url and that the server is running"
        ))
        .into(),
        sqlx::Error::Tls(e) => anyhow!("TLS handshake with {at} failed: {e}"),
        other => anyhow!("cannot connect to {at}: {other}"),
    }
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
    fn rejects_other_schemes() {
        let e = ConnectionConfig::from_url("postgres://x@y/z")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mysql://"), "{e}");
    }
}

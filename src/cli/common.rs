//! Arguments shared by every command that talks to a server.

use crate::db::connect::{ConnectionConfig, PasswordSource};
use anyhow::{anyhow, Result};

/// Where to connect.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// Server to connect to: mysql://user[:password]@host[:port][/database]. The password may
    /// instead come from MYSQL_PWD or a prompt; it is never printed.
    #[arg(long, env = "MYSQL_URL", hide_env_values = true, value_name = "URL")]
    pub url: Option<String>,
}

impl ConnectArgs {
    /// Resolves the URL and password into connection settings.
    pub fn resolve(&self) -> Result<ConnectionConfig> {
        let url = self.url.as_deref().ok_or_else(|| {
            anyhow!(
                "no server given. Fix: pass --url mysql://user@host:3306/database or set MYSQL_URL"
            )
        })?;
        ConnectionConfig::from_url(url)?.resolve_password(PasswordSource::PromptIfTty)
    }
}

/// Runs an async command body on a fresh runtime.
pub fn block_on<T>(f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(f)
}

/// Splits comma-separated lists given once or several times (`--tables a,b --tables c`).
pub fn split_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

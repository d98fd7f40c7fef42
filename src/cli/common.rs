//! Arguments shared by every command that talks to a server.

use crate::db::connect::ConnectionConfig;
use crate::db::credentials::{self, Request};
use anyhow::Result;
use std::path::PathBuf;

/// Where to connect, and with which credentials and TLS settings.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// Server to connect to: mysql://user[:password]@host[:port][/database][?ssl-mode=MODE&ssl-ca=FILE&ssl-cert=FILE&ssl-key=FILE&socket=PATH].
    /// What it spells out wins over the option file; what it leaves out comes from the option
    /// file, then MYSQL_PWD (password), then the defaults (root@localhost:3306).
    #[arg(long, env = "MYSQL_URL", hide_env_values = true, value_name = "URL")]
    pub url: Option<String>,
    /// Read connection settings from this option file only, instead of ~/.my.cnf
    /// (groups [client] and [myrecode], the last occurrence of an option winning: user,
    /// password, host, port, socket, database, ssl-mode, ssl-ca, ssl-cert, ssl-key).
    #[arg(long, value_name = "FILE")]
    pub defaults_file: Option<PathBuf>,
    /// Type the password at a prompt (it then wins over every other source). Without it
    /// myrecode never prompts: a user without a password connects without one.
    #[arg(long)]
    pub ask_pass: bool,
}

impl ConnectArgs {
    /// Gathers the settings from every source; `--verbose` says which source supplied each.
    pub fn resolve(&self) -> Result<ConnectionConfig> {
        resolve(Request {
            url: self.url.as_deref(),
            defaults_file: self.defaults_file.as_deref(),
            ask_pass: self.ask_pass,
        })
    }
}

/// Gathers connection settings for `req` and logs (at info level, never a secret) where each came from.
pub fn resolve(req: Request<'_>) -> Result<ConnectionConfig> {
    let g = credentials::gather(&req)?;
    for note in &g.notes {
        tracing::info!("{note}");
    }
    tracing::info!(
        "connecting to {} (ssl-mode={}): {}",
        g.config,
        g.config.tls.mode(),
        g.resolved.describe()
    );
    Ok(g.config)
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

/// Refuses, before any work, an output file `flag` could not be written to: its directory
/// missing, or the path itself a directory.
pub fn check_output(flag: &str, path: &std::path::Path) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if path.is_dir() {
        anyhow::bail!(
            "{flag} {} is a directory, not a file. Fix: give a file name, e.g. {}",
            path.display(),
            path.join("report").display()
        );
    }
    if !dir.is_dir() {
        anyhow::bail!(
            "the directory of {flag} {} does not exist. Fix: create it, or write the report elsewhere",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod output_tests {
    use super::*;

    #[test]
    fn an_output_path_is_a_file_in_an_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_output("--json", &dir.path().join("scan.json")).is_ok());
        let e = check_output("--junit", dir.path()).unwrap_err().to_string();
        assert!(
            e.starts_with("--junit ")
                && e.contains("is a directory, not a file. Fix: give a file name"),
            "{e}"
        );
        let e = check_output("--html", &dir.path().join("no/such/x.html"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the directory of --html") && e.contains("does not exist. Fix: create it"),
            "{e}"
        );
    }
}

/// How much of each table a scan reads, and how gently: `scan`'s and `fleet scan`'s options.
#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// Read this many rows per table, spread over the key range.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000,
        conflicts_with = "full"
    )]
    pub sample: u64,
    /// Read every row (the counts are then exact).
    #[arg(long)]
    pub full: bool,
    /// Rows per batch.
    #[arg(long, default_value_t = 1000, value_name = "ROWS")]
    pub batch_size: usize,
    /// Pause between batches in milliseconds, so production does not feel the scan.
    #[arg(long, default_value_t = 5, value_name = "MS")]
    pub pause_ms: u64,
}

impl ReadArgs {
    /// The scan's read options: every row with `--full`, at least one row per batch.
    pub fn options(&self) -> crate::scan::read::Options {
        crate::scan::read::Options {
            sample: (!self.full).then_some(self.sample),
            batch_size: self.batch_size.max(1),
            pause: std::time::Duration::from_millis(self.pause_ms),
        }
    }
}

//! What every throwaway server gets, wherever it comes from: a password-protected admin user
//! for the tests, and a blocking bridge for harness code that may run inside a runtime.

use super::connect::ConnectionConfig;
use anyhow::{anyhow, Result};
use sqlx::{Connection, Executor};

/// Runs a future to completion on a fresh current-thread runtime.
pub(super) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime can be built")
        .block_on(f)
}

/// Runs a future to completion on a thread of its own, so callers inside a runtime may use it too.
pub(crate) fn block_on_thread<T: Send + 'static>(
    f: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    std::thread::spawn(move || block_on(f))
        .join()
        .map_err(|_| anyhow!("a database helper thread panicked"))?
}

/// Creates a password-protected administrative user, so tests exercise real authentication.
pub(super) fn create_test_user(root: &ConnectionConfig) -> Result<ConnectionConfig> {
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

/// A password nobody can guess, for the test user.
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

//! How a replica is reached: an address found on the servers or named in the job, with the
//! job's own user, password and TLS settings.

use crate::db::connect::ConnectionConfig;
use anyhow::{Context, Result};

/// A replica named in the job (`host[:port]` or a URL without a password), reached with the
/// job's own user, password and TLS settings.
pub fn replica_config(main: &ConnectionConfig, spec: &str) -> Result<ConnectionConfig> {
    let mut c = main.with_database(None);
    c.socket = None;
    if spec.contains("://") {
        let parsed = ConnectionConfig::from_url(spec)
            .with_context(|| format!("replica '{spec}' in the job"))?;
        c.host = parsed.host;
        c.port = parsed.port;
        c.user = parsed.user;
    } else {
        let (host, port) = match spec.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>().map_err(|_| {
                    anyhow::anyhow!(
                        "replica '{spec}' in the job: '{p}' is not a port. Fix: write host:3306 or mysql://user@host:3306/"
                    )
                })?,
            ),
            None => (spec, 3306),
        };
        c.host = host.to_string();
        c.port = port;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_take_the_jobs_credentials_and_their_own_address() {
        let main = ConnectionConfig::from_url(
            "mysql://app:secret@db1:3307/shop?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ca.pem",
        )
        .unwrap();
        let r = replica_config(&main, "db2:3308").unwrap();
        assert_eq!(r.tls, main.tls, "replicas use the job's TLS settings");
        assert_eq!(
            (r.host.as_str(), r.port, r.user.as_str()),
            ("db2", 3308, "app")
        );
        assert_eq!(r.password(), Some("secret"));
        let r = replica_config(&main, "mysql://repl@db3/").unwrap();
        assert_eq!(r.tls.mode(), crate::db::tls::SslMode::VerifyIdentity);
        assert_eq!(
            (r.host.as_str(), r.port, r.user.as_str()),
            ("db3", 3306, "repl")
        );
        assert!(replica_config(&main, "db4:x")
            .unwrap_err()
            .to_string()
            .contains("not a port"));
    }
}

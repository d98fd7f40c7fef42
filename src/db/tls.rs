//! TLS settings with the MySQL client's names and meanings (`ssl-mode`, `ssl-ca`, `ssl-cert`,
//! `ssl-key`), mapped onto the driver, and TLS failures explained in one line with the fix.
//!
//! Pure: parsing, defaults and the wording of errors; the handshake itself is the driver's.
//! The one exception is [`TlsSettings::check_files`], which opens the files named, so that a
//! wrong path is named as such instead of surfacing from the driver as "cannot reach".

use anyhow::{anyhow, bail, Result};
use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};
use std::fmt;
use std::path::PathBuf;

/// How hard to insist on TLS, as the MySQL client's `--ssl-mode` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disabled,
    /// TLS when the server offers it, unverified; plain otherwise (the client's default).
    Preferred,
    /// TLS or no connection; the certificate is not checked.
    Required,
    /// TLS with a certificate signed by the trusted CA.
    VerifyCa,
    /// As `VerifyCa`, and the certificate must name the host connected to.
    VerifyIdentity,
}

impl SslMode {
    /// The MySQL client's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disabled => "DISABLED",
            SslMode::Preferred => "PREFERRED",
            SslMode::Required => "REQUIRED",
            SslMode::VerifyCa => "VERIFY_CA",
            SslMode::VerifyIdentity => "VERIFY_IDENTITY",
        }
    }

    /// Parses a mode in any letter case; dashes count as underscores (`verify-ca`).
    pub fn parse(raw: &str) -> Result<Self> {
        Ok(
            match raw.trim().to_ascii_uppercase().replace('-', "_").as_str() {
                "DISABLED" => SslMode::Disabled,
                "PREFERRED" => SslMode::Preferred,
                "REQUIRED" => SslMode::Required,
                "VERIFY_CA" => SslMode::VerifyCa,
                "VERIFY_IDENTITY" => SslMode::VerifyIdentity,
                _ => bail!(
                    "unknown ssl-mode '{raw}'. Fix: use one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
                ),
            },
        )
    }

    fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyIdentity)
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The TLS settings of one connection, as given (nothing read from disk yet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// `ssl-mode`; `None` means the client's default (see [`TlsSettings::mode`]).
    pub mode: Option<SslMode>,
    /// `ssl-ca`: PEM file of the certificate authorities to trust.
    pub ca: Option<PathBuf>,
    /// `ssl-cert`: PEM client certificate, for servers that ask for one.
    pub cert: Option<PathBuf>,
    /// `ssl-key`: PEM key of the client certificate.
    pub key: Option<PathBuf>,
}

impl TlsSettings {
    /// The mode in force: the given one, else `VERIFY_CA` when a CA is given (as the MySQL
    /// client does: naming a CA means wanting it checked), else `PREFERRED`.
    pub fn mode(&self) -> SslMode {
        match (self.mode, &self.ca) {
            (Some(m), _) => m,
            (None, Some(_)) => SslMode::VerifyCa,
            (None, None) => SslMode::Preferred,
        }
    }

    /// Rejects settings that contradict each other, before any connection is tried.
    pub fn validate(&self) -> Result<()> {
        match (&self.cert, &self.key) {
            (Some(_), None) => bail!(
                "ssl-cert is given without ssl-key. Fix: give both (the client certificate and its key), or neither"
            ),
            (None, Some(_)) => bail!(
                "ssl-key is given without ssl-cert. Fix: give both (the client certificate and its key), or neither"
            ),
            _ => {}
        }
        if self.mode() == SslMode::Disabled && (self.ca.is_some() || self.cert.is_some()) {
            bail!(
                "ssl-mode=DISABLED contradicts the ssl-ca/ssl-cert given. Fix: drop ssl-mode=DISABLED to use TLS, or drop the certificate options"
            );
        }
        Ok(())
    }

    /// Checks that every TLS file given is a readable file, before any connection is tried;
    /// `source_of` names where an option came from (`the URL`, `~/.my.cnf [client]`).
    pub fn check_files(&self, source_of: impl Fn(&str) -> Option<String>) -> Result<()> {
        for (name, path, what) in [
            (
                "ssl-ca",
                &self.ca,
                "the CA that signed the server's certificate",
            ),
            ("ssl-cert", &self.cert, "the client certificate"),
            ("ssl-key", &self.key, "the client certificate's key"),
        ] {
            let Some(p) = path else { continue };
            if let Err(why) = readable(p) {
                let from = source_of(name)
                    .map(|s| format!(" ({name} from {s})"))
                    .unwrap_or_default();
                bail!(
                    "{name} file {} {why}{from}; nothing was sent to the server. Fix: point {name} at the readable PEM file of {what} (an absolute path)",
                    p.display()
                );
            }
        }
        Ok(())
    }

    /// Applies the settings to the driver's options.
    pub fn apply(&self, mut o: MySqlConnectOptions) -> MySqlConnectOptions {
        o = o.ssl_mode(match self.mode() {
            SslMode::Disabled => MySqlSslMode::Disabled,
            SslMode::Preferred => MySqlSslMode::Preferred,
            SslMode::Required => MySqlSslMode::Required,
            SslMode::VerifyCa => MySqlSslMode::VerifyCa,
            SslMode::VerifyIdentity => MySqlSslMode::VerifyIdentity,
        });
        if let Some(ca) = &self.ca {
            o = o.ssl_ca(ca);
        }
        if let Some(cert) = &self.cert {
            o = o.ssl_client_cert(cert);
        }
        if let Some(key) = &self.key {
            o = o.ssl_client_key(key);
        }
        o
    }

    /// The settings as URL query pairs (`ssl-mode`, `ssl-ca`, ...), for a child process's URL.
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(m) = self.mode {
            out.push(("ssl-mode", m.as_str().to_string()));
        }
        for (k, v) in [
            ("ssl-ca", &self.ca),
            ("ssl-cert", &self.cert),
            ("ssl-key", &self.key),
        ] {
            if let Some(p) = v {
                out.push((k, p.to_string_lossy().into_owned()));
            }
        }
        out
    }
}

/// Why `p` cannot serve as a TLS file, in words that follow "file P".
fn readable(p: &std::path::Path) -> std::result::Result<(), String> {
    use std::io::Read;
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("does not exist".into()),
        Err(e) => Err(format!("cannot be read ({e})")),
        Ok(m) if !m.is_file() => Err("is not a regular file".into()),
        // Opening and reading a byte is what tells an unreadable file (permissions) apart.
        Ok(_) => std::fs::File::open(p)
            .and_then(|mut f| f.read(&mut [0u8; 1]))
            .map(|_| ())
            .map_err(|e| format!("cannot be read ({e})")),
    }
}

/// Explains a failed TLS negotiation with `at` (`host:port`) in one line with the fix.
pub fn explain(at: &str, host: &str, tls: &TlsSettings, driver_text: &str) -> anyhow::Error {
    let mode = tls.mode();
    let lower = driver_text.to_ascii_lowercase();
    if lower.contains("server does not support tls") {
        return anyhow!(
            "ssl-mode={mode} but the server at {at} does not offer TLS; nothing was sent. \
             Fix: enable TLS on the server (ssl_cert, ssl_key, ssl_ca in its configuration), \
             or connect with ssl-mode=PREFERRED if an unencrypted connection is acceptable"
        );
    }
    if (lower.contains("notvalidforname") || lower.contains("not valid for name"))
        && mode == SslMode::VerifyCa
    {
        // sqlx 0.8 misses rustls' newer name-mismatch error when told to ignore host names
        // (launchbadge/sqlx#3793), so VERIFY_CA checks the name too in this build.
        return anyhow!(
            "ssl-mode=VERIFY_CA: the certificate of the server at {at} is not issued for host '{host}', \
             and this build checks the host name under VERIFY_CA as well (a driver limitation, see docs/connecting.md). \
             Fix: connect with the host name the certificate names (in --url or the option file)"
        );
    }
    if lower.contains("notvalidforname") || lower.contains("not valid for name") {
        return anyhow!(
            "ssl-mode={mode}: the certificate of the server at {at} is not issued for host '{host}'. \
             Fix: connect with the host name the certificate names (in --url or the option file), \
             or use ssl-mode=VERIFY_CA to check the CA only"
        );
    }
    if lower.contains("unknownissuer")
        || lower.contains("unknown issuer")
        || lower.contains("badsignature")
        || lower.contains("invalid peer certificate")
    {
        let ca = match &tls.ca {
            Some(p) => format!("the CA in ssl-ca ({})", p.display()),
            None => "the system's trusted CAs (no ssl-ca given)".to_string(),
        };
        return anyhow!(
            "ssl-mode={mode}: the certificate of the server at {at} is not signed by {ca} ({driver_text}). \
             Fix: set ssl-ca to the PEM file of the CA that signed the server's certificate"
        );
    }
    let files = tls.ca.is_some() || tls.cert.is_some();
    if files
        && (lower.contains("no such file") || lower.contains("pem") || lower.contains("io error"))
    {
        return anyhow!(
            "ssl-mode={mode}: cannot use the TLS files given for {at}: {driver_text}. \
             Fix: point ssl-ca (and ssl-cert/ssl-key) at readable PEM files"
        );
    }
    let hint = if mode.verifies() {
        "Fix: check ssl-ca and the host name, or the server's TLS configuration"
    } else {
        "Fix: check the server's TLS configuration, or connect with ssl-mode=DISABLED where encryption is not needed"
    };
    anyhow!("TLS negotiation with {at} failed (ssl-mode={mode}): {driver_text}. {hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_mysql_names_in_any_case() {
        assert_eq!(
            SslMode::parse("verify_identity").unwrap(),
            SslMode::VerifyIdentity
        );
        assert_eq!(SslMode::parse("VERIFY-CA").unwrap(), SslMode::VerifyCa);
        assert_eq!(SslMode::parse(" Required ").unwrap(), SslMode::Required);
        let e = SslMode::parse("strict").unwrap_err().to_string();
        assert!(
            e.contains("'strict'") && e.contains("VERIFY_IDENTITY"),
            "{e}"
        );
    }

    #[test]
    fn a_ca_alone_means_verify_ca_as_in_the_mysql_client() {
        let mut t = TlsSettings::default();
        assert_eq!(t.mode(), SslMode::Preferred);
        t.ca = Some("/ca.pem".into());
        assert_eq!(t.mode(), SslMode::VerifyCa);
        t.mode = Some(SslMode::Required);
        assert_eq!(t.mode(), SslMode::Required);
    }

    #[test]
    fn contradictions_are_refused() {
        let t = TlsSettings {
            cert: Some("/c.pem".into()),
            ..Default::default()
        };
        assert!(t.validate().unwrap_err().to_string().contains("ssl-key"));
        let t = TlsSettings {
            mode: Some(SslMode::Disabled),
            ca: Some("/ca.pem".into()),
            ..Default::default()
        };
        assert!(t.validate().unwrap_err().to_string().contains("DISABLED"));
    }

    #[test]
    fn errors_name_the_problem_and_the_fix() {
        let t = TlsSettings {
            mode: Some(SslMode::Required),
            ..Default::default()
        };
        let e = explain("db:3306", "db", &t, "server does not support TLS").to_string();
        assert!(
            e.contains("does not offer TLS") && e.contains("Fix:"),
            "{e}"
        );
        let e = explain(
            "db:3306",
            "db",
            &t,
            "invalid peer certificate: NotValidForName",
        )
        .to_string();
        assert!(e.contains("not issued for host 'db'"), "{e}");
        let e = explain(
            "db:3306",
            "db",
            &t,
            "invalid peer certificate: UnknownIssuer",
        )
        .to_string();
        assert!(e.contains("set ssl-ca"), "{e}");
    }

    #[test]
    fn missing_or_unreadable_tls_files_name_the_option_the_file_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let ok = TlsSettings {
            ca: Some(ca.clone()),
            ..Default::default()
        };
        ok.check_files(|_| None).unwrap();
        let missing = dir.path().join("nope.pem");
        let t = TlsSettings {
            ca: Some(ca.clone()),
            cert: Some(missing.clone()),
            key: Some(ca.clone()),
            ..Default::default()
        };
        let e = t
            .check_files(|k| Some(format!("the URL ({k})")))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "ssl-cert file {} does not exist",
                missing.display()
            )) && e.contains("ssl-cert from the URL (ssl-cert)")
                && e.contains("Fix: point ssl-cert at"),
            "{e}"
        );
        let t = TlsSettings {
            key: Some(dir.path().to_path_buf()),
            cert: Some(ca),
            ..Default::default()
        };
        let e = t.check_files(|_| None).unwrap_err().to_string();
        assert!(
            e.contains("ssl-key file") && e.contains("is not a regular file"),
            "{e}"
        );
    }

    #[test]
    fn query_pairs_round_trip_the_given_settings() {
        let t = TlsSettings {
            mode: Some(SslMode::VerifyIdentity),
            ca: Some("/etc/ca.pem".into()),
            ..Default::default()
        };
        assert_eq!(
            t.query_pairs(),
            vec![
                ("ssl-mode", "VERIFY_IDENTITY".to_string()),
                ("ssl-ca", "/etc/ca.pem".to_string())
            ]
        );
    }
}

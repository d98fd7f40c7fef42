//! Connection settings gathered from several sources, and the precedence that picks one
//! value per setting, remembering which source supplied it.
//!
//! Pure: no file, environment or terminal is read here ([`super::credentials`] does that).
//! Precedence, as the MySQL manual gives it (command line over option files over the
//! environment), lowest first:
//!
//! 1. built-in defaults (user `root`, host `localhost`, port 3306, `ssl-mode=PREFERRED`);
//! 2. `MYSQL_PWD` (the password only);
//! 3. the option file: `--defaults-file FILE` alone, else `~/.my.cnf` — its `[client]` and
//!    `[myrecode]` groups, the last occurrence of an option in file order winning;
//! 4. the URL (`--url`/`MYSQL_URL`): only the parts it spells out;
//! 5. the password typed at the `--ask-pass` prompt.

use super::tls::SslMode;
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::fmt;

/// One connection setting, by its MySQL option name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// `user`.
    User,
    /// `password` (never shown).
    Password,
    /// `host`.
    Host,
    /// `port`.
    Port,
    /// `socket`: a Unix socket path.
    Socket,
    /// `database`: the default schema.
    Database,
    /// `ssl-mode`.
    SslMode,
    /// `ssl-ca`.
    SslCa,
    /// `ssl-cert`.
    SslCert,
    /// `ssl-key`.
    SslKey,
}

impl Key {
    /// Every key, in the order messages list them.
    pub const ALL: [Key; 10] = [
        Key::User,
        Key::Password,
        Key::Host,
        Key::Port,
        Key::Socket,
        Key::Database,
        Key::SslMode,
        Key::SslCa,
        Key::SslCert,
        Key::SslKey,
    ];

    /// The MySQL option name.
    pub fn name(self) -> &'static str {
        match self {
            Key::User => "user",
            Key::Password => "password",
            Key::Host => "host",
            Key::Port => "port",
            Key::Socket => "socket",
            Key::Database => "database",
            Key::SslMode => "ssl-mode",
            Key::SslCa => "ssl-ca",
            Key::SslCert => "ssl-cert",
            Key::SslKey => "ssl-key",
        }
    }

    /// The key for an option name already normalised (lower case, dashes).
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Some connection settings, validated as they are set; the password is never shown.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings {
    values: BTreeMap<Key, String>,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| match k {
                Key::Password => "password=***".to_string(),
                _ => format!("{}={v}", k.name()),
            })
            .collect();
        write!(f, "Settings({})", shown.join(", "))
    }
}

impl Settings {
    /// Sets `key` after checking the value (`at` names where it came from, for the error).
    pub fn set(&mut self, key: Key, value: &str, at: &str) -> Result<()> {
        let value = match key {
            Key::Port => match value.trim().parse::<u16>() {
                Ok(p) if p > 0 => p.to_string(),
                _ => bail!(
                    "{at}: port '{value}' is not a TCP port. Fix: write a number from 1 to 65535"
                ),
            },
            Key::SslMode => SslMode::parse(value)
                .map_err(|e| anyhow!("{at}: {e}"))?
                .as_str()
                .to_string(),
            Key::Password => value.to_string(),
            _ => value.trim().to_string(),
        };
        self.values.insert(key, value);
        Ok(())
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: Key) -> Option<&str> {
        self.values.get(&key).map(String::as_str)
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The parts a `mysql://user[:password]@host[:port][/database][?socket=..&ssl-mode=..]`
    /// URL spells out; what it leaves out stays unset, for other sources to fill.
    pub fn from_url(raw: &str) -> Result<Self> {
        const FIX: &str = "Fix: write it as mysql://user@host:3306/database";
        if let Some((_, rest)) = raw.split_once("://") {
            // The URL parser takes the last '@' as the end of the password, a reader the first;
            // rather than guess, ask for the '@' to be encoded (the text is never echoed: it
            // holds the password).
            let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
            if authority.matches('@').count() > 1 {
                bail!(
                    "the connection URL has more than one '@' before the host: an '@' in the user name or password must be percent-encoded. \
                     Fix: write each '@' of the password as %40 (mysql://user:p%40ss@host/db), or keep the password in an option file or MYSQL_PWD instead of the URL"
                );
            }
        }
        let parsed =
            url::Url::parse(raw).map_err(|e| anyhow!("invalid connection URL ({e}). {FIX}"))?;
        if parsed.scheme() != "mysql" && parsed.scheme() != "mariadb" {
            bail!(
                "connection URL must start with mysql:// (got {}://). {FIX}",
                parsed.scheme()
            );
        }
        let mut s = Settings::default();
        let at = "the connection URL";
        if let Some(h) = parsed.host_str().map(|h| h.trim_matches(['[', ']'])) {
            if !h.is_empty() {
                s.set(Key::Host, h, at)?;
            }
        }
        let user = percent_decode(parsed.username())?;
        if !user.is_empty() {
            s.set(Key::User, &user, at)?;
        }
        if let Some(p) = parsed.password() {
            s.set(Key::Password, &percent_decode(p)?, at)?;
        }
        if let Some(p) = parsed.port() {
            s.set(Key::Port, &p.to_string(), at)?;
        }
        let db = percent_decode(parsed.path().trim_start_matches('/'))?;
        if !db.is_empty() {
            s.set(Key::Database, &db, at)?;
        }
        for (k, v) in parsed.query_pairs() {
            let name = normalize_key(&k);
            match Key::from_name(&name) {
                Some(key @ (Key::Socket | Key::SslMode | Key::SslCa | Key::SslCert | Key::SslKey)) => {
                    s.set(key, &v, at)?
                }
                _ => bail!(
                    "unknown option '{k}' in the connection URL. Fix: use only socket, ssl-mode, ssl-ca, ssl-cert and ssl-key after '?'"
                ),
            }
        }
        Ok(s)
    }
}

/// Lower case, dashes for underscores, without the `loose-` prefix: `SSL_CA` is `ssl-ca`.
pub fn normalize_key(k: &str) -> String {
    let k = k.trim().to_ascii_lowercase().replace('_', "-");
    k.strip_prefix("loose-").map(str::to_string).unwrap_or(k)
}

fn percent_decode(s: &str) -> Result<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| anyhow!("the connection URL has a percent-encoded part that is not UTF-8"))
}

/// Settings from one source, named for messages (`~/.my.cnf [client]`, `MYSQL_PWD`, ...).
#[derive(Debug, Clone)]
pub struct Layer {
    /// Where these settings come from; never a secret.
    pub source: String,
    /// What it supplies.
    pub settings: Settings,
}

/// The settings in force, and which source supplied each.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// One value per setting that any source set.
    pub settings: Settings,
    /// The source of each setting in `settings`.
    pub sources: BTreeMap<Key, String>,
}

impl Resolved {
    /// One line saying where each setting came from, without any value of a secret.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = Key::ALL
            .iter()
            .filter_map(|k| {
                self.sources
                    .get(k)
                    .map(|src| format!("{} from {src}", k.name()))
            })
            .collect();
        if parts.is_empty() {
            "every setting from the defaults (no password)".into()
        } else {
            format!(
                "{}; the rest from the defaults{}",
                parts.join(", "),
                if self.sources.contains_key(&Key::Password) {
                    ""
                } else {
                    " (no password)"
                }
            )
        }
    }
}

/// Picks each setting from the highest layer that sets it; `layers` go from lowest to highest.
pub fn resolve(layers: &[Layer]) -> Resolved {
    let mut settings = Settings::default();
    let mut sources = BTreeMap::new();
    for layer in layers {
        for (k, v) in &layer.settings.values {
            settings.values.insert(*k, v.clone());
            sources.insert(*k, layer.source.clone());
        }
    }
    Resolved { settings, sources }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(source: &str, pairs: &[(Key, &str)]) -> Layer {
        let mut s = Settings::default();
        for (k, v) in pairs {
            s.set(*k, v, source).unwrap();
        }
        Layer {
            source: source.into(),
            settings: s,
        }
    }

    #[test]
    fn the_url_spells_out_only_what_it_has() {
        let s = Settings::from_url("mysql://db1.example/shop").unwrap();
        assert_eq!(s.get(Key::Host), Some("db1.example"));
        assert_eq!(s.get(Key::Database), Some("shop"));
        assert_eq!(s.get(Key::User), None);
        assert_eq!(s.get(Key::Password), None);
        assert_eq!(s.get(Key::Port), None);
        let s = Settings::from_url(
            "mysql://bob:p%40ss@h:3307/?ssl-mode=verify_identity&ssl_ca=/etc/ca.pem&socket=/s",
        )
        .unwrap();
        assert_eq!(s.get(Key::Password), Some("p@ss"));
        assert_eq!(s.get(Key::SslMode), Some("VERIFY_IDENTITY"));
        assert_eq!(s.get(Key::SslCa), Some("/etc/ca.pem"));
        assert_eq!(s.get(Key::Socket), Some("/s"));
        assert!(!format!("{s:?}").contains("p@ss"));
    }

    #[test]
    fn an_unencoded_at_in_the_password_asks_for_percent_encoding_without_echoing_it() {
        for url in [
            "mysql://u:p@ss@db.example/shop",
            "mysql://u:p@ss@db.example",
            "mysql://u:p@ss@db.example?ssl-mode=REQUIRED",
            "mysql://u@x:p@ss@db.example:3307/shop",
        ] {
            let e = Settings::from_url(url).unwrap_err().to_string();
            assert!(
                e.contains("more than one '@'") && e.contains("%40") && e.contains("Fix:"),
                "{url}: {e}"
            );
            assert!(!e.contains("p@ss") && !e.contains("db.example"), "{e}");
        }
        // An encoded '@' and an '@' after the host are fine.
        let s = Settings::from_url("mysql://u:p%40ss@db.example/shop?ssl-ca=/a@b.pem").unwrap();
        assert_eq!(s.get(Key::Password), Some("p@ss"));
        assert_eq!(s.get(Key::SslCa), Some("/a@b.pem"));
    }

    #[test]
    fn bad_url_options_are_refused_with_the_fix() {
        let e = Settings::from_url("mysql://h/?sslmode=REQUIRED")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'sslmode'") && e.contains("ssl-mode"), "{e}");
        let e = Settings::from_url("mysql://h/?ssl-mode=on")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the connection URL") && e.contains("VERIFY_CA"),
            "{e}"
        );
    }

    #[test]
    fn url_over_option_file_over_mysql_pwd() {
        let r = resolve(&[
            layer("MYSQL_PWD", &[(Key::Password, "from-env")]),
            layer(
                "~/.my.cnf [client]",
                &[
                    (Key::User, "dba"),
                    (Key::Password, "from-file"),
                    (Key::Host, "h1"),
                ],
            ),
            layer("~/.my.cnf [myrecode]", &[(Key::Host, "h2")]),
            layer("the URL", &[(Key::Host, "h3"), (Key::Database, "shop")]),
        ]);
        assert_eq!(r.settings.get(Key::Password), Some("from-file"));
        assert_eq!(r.settings.get(Key::User), Some("dba"));
        assert_eq!(r.settings.get(Key::Host), Some("h3"));
        let d = r.describe();
        assert_eq!(
            d,
            "user from ~/.my.cnf [client], password from ~/.my.cnf [client], host from the URL, \
             database from the URL; the rest from the defaults"
        );
        assert!(!d.contains("from-file") && !d.contains("from-env"));
    }

    #[test]
    fn mysql_pwd_fills_in_when_nothing_else_does() {
        let r = resolve(&[
            layer("MYSQL_PWD", &[(Key::Password, "e")]),
            layer("the URL", &[(Key::User, "u")]),
        ]);
        assert_eq!(r.sources.get(&Key::Password).unwrap(), "MYSQL_PWD");
        let r = resolve(&[layer("the URL", &[(Key::User, "root")])]);
        assert!(r.describe().ends_with("(no password)"), "{}", r.describe());
    }
}

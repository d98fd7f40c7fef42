//! The MySQL option-file format (`my.cnf`), read the way the `mysql` client reads it.
//!
//! Pure: [`parse`] turns text into items and [`layers`] picks the connection settings of the
//! groups myrecode reads (`[client]`, `[myrecode]`) out of them, the last occurrence of an
//! option in file order winning whatever its group, as the mysql client does; reading files
//! and following `!include`/`!includedir` is [`super::credentials`]' job.
//!
//! Syntax: `[group]` lines; `key`, `key=value` or `key = "quoted value"` (single or double
//! quotes, where `#` is kept); whole-line comments with `#` or `;`, and `#` after an unquoted
//! value; escapes `\n \t \r \b \s \\`; dashes and underscores alike in keys (`ssl_ca` is
//! `ssl-ca`), and a `loose-` prefix ignored, as the client does.

use super::settings::{normalize_key, Key, Layer, Settings};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The groups myrecode reads; among them, the option that comes last in the file wins.
pub const GROUPS: [&str; 2] = ["client", "myrecode"];

/// One meaningful line of an option file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// `key[=value]` under `[group]`; `value` is `None` for a bare `key`.
    Option {
        /// The group it sits in, lower-cased.
        group: String,
        /// The key, lower-cased, dashes for underscores, without `loose-`.
        key: String,
        /// The value, unquoted and unescaped.
        value: Option<String>,
        /// 1-based line number, for messages.
        line: usize,
        /// The file it was read from (as shown in messages: an included file by its path).
        origin: String,
    },
    /// `!include FILE`.
    Include(PathBuf),
    /// `!includedir DIR`.
    IncludeDir(PathBuf),
}

/// Parses option-file text; `origin` names the file in errors.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut group: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if let Some(rest) = t.strip_prefix('!') {
            let (word, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let arg = arg.trim();
            if arg.is_empty() {
                bail!("{origin}:{line}: '!{word}' names no file. Fix: write !include /path/file.cnf or !includedir /path/dir");
            }
            match word {
                "include" => items.push(Item::Include(PathBuf::from(arg))),
                "includedir" => items.push(Item::IncludeDir(PathBuf::from(arg))),
                _ => bail!("{origin}:{line}: unknown directive '!{word}'. Fix: use !include FILE or !includedir DIR"),
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix('[') {
            let Some(name) = rest.split_once(']').map(|(n, _)| n.trim()) else {
                bail!(
                    "{origin}:{line}: a group header without its closing ']'. Fix: write [client]"
                );
            };
            group = Some(name.to_ascii_lowercase());
            continue;
        }
        let Some(g) = &group else {
            bail!("{origin}:{line}: an option before any [group]. Fix: put it under [client] (or [myrecode])");
        };
        let (k, v) = match t.split_once('=') {
            Some((k, v)) => (k, Some(value(v.trim(), origin, line)?)),
            None => (strip_comment(t), None),
        };
        items.push(Item::Option {
            group: g.clone(),
            key: normalize_key(k),
            value: v,
            line,
            origin: origin.to_string(),
        });
    }
    Ok(items)
}

fn strip_comment(s: &str) -> &str {
    s.split_once('#').map_or(s, |(a, _)| a).trim()
}

fn value(v: &str, origin: &str, line: usize) -> Result<String> {
    let Some(q) = v.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return Ok(unescape(strip_comment(v)));
    };
    let body = &v[1..];
    let mut end = None;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q {
            end = Some(i);
            break;
        }
    }
    let Some(end) = end else {
        bail!("{origin}:{line}: a quoted value without its closing {q}. Fix: close the quote");
    };
    let after = body[end + 1..].trim();
    if !(after.is_empty() || after.starts_with('#') || after.starts_with(';')) {
        bail!("{origin}:{line}: text after the closing quote. Fix: put the whole value inside the quotes");
    }
    Ok(unescape(&body[..end]))
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('s') => out.push(' '),
            Some('\\') => out.push('\\'),
            Some(q @ ('"' | '\'')) => out.push(q),
            // Anything else keeps its backslash, so Windows-style paths survive.
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The connection settings that the groups in [`GROUPS`] give in `items`, as layers named
/// `FILE [group]`: for each setting, the last occurrence in file order wins whatever its group
/// (as the mysql client reads them); plus notes on what was seen there but not used.
pub fn layers(items: &[Item]) -> Result<(Vec<Layer>, Vec<String>)> {
    // Each setting's winning value and the source that gave it, in the order sources appear.
    let mut winners: BTreeMap<Key, (String, String)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    for item in items {
        let Item::Option {
            group,
            key,
            value,
            line,
            origin,
        } = item
        else {
            continue;
        };
        if !GROUPS.contains(&group.as_str()) {
            continue;
        }
        let at = format!("{origin}:{line}");
        let verify_flag = key == "ssl-verify-server-cert";
        let setting = match (value, Key::from_name(key)) {
            (None, Some(Key::Password)) => {
                notes.push(format!(
                    "{at}: `password` without a value (the mysql client would prompt); myrecode prompts only with --ask-pass"
                ));
                None
            }
            (None, _) if verify_flag => Some((Key::SslMode, "VERIFY_IDENTITY")),
            (Some(v), _) if verify_flag => {
                matches!(v.to_ascii_lowercase().as_str(), "1" | "on" | "true")
                    .then_some((Key::SslMode, "VERIFY_IDENTITY"))
            }
            (Some(v), Some(k)) => Some((k, v.as_str())),
            (Some(_), None) => {
                notes.push(format!(
                    "{at}: `{key}` is not a connection setting myrecode uses; ignored"
                ));
                None
            }
            // Bare flags of other clients (`quick`, `compress`) are none of our business.
            (None, _) => None,
        };
        let Some((k, v)) = setting else { continue };
        // Validated (and normalised) where it stands, so a bad line is named even if a later
        // one overrides it, as the mysql client would refuse it too.
        let mut one = Settings::default();
        one.set(k, v, &at)?;
        let source = format!("{origin} [{group}]");
        if !order.contains(&source) {
            order.push(source.clone());
        }
        let value = one.get(k).unwrap_or_default().to_string();
        winners.insert(k, (value, source));
    }
    let mut layers = Vec::new();
    for source in order {
        let mut settings = Settings::default();
        for (k, (v, _)) in winners.iter().filter(|(_, (_, s))| *s == source) {
            settings.set(*k, v, &source)?;
        }
        if !settings.is_empty() {
            layers.push(Layer { source, settings });
        }
    }
    Ok((layers, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(items: &[Item], key: &str) -> Option<Option<String>> {
        items.iter().find_map(|i| match i {
            Item::Option { key: k, value, .. } if k == key => Some(value.clone()),
            _ => None,
        })
    }

    #[test]
    fn groups_keys_values_quotes_and_comments() {
        let text = "# a comment\n; another\n[client]\nuser = dba\npassword=\"p#ss w;rd\"  # trailing\n\
                    host=db1.example # the primary\nport = 3307\n[mysqldump]\nquick\n[MyRecode]\nssl_mode=VERIFY_IDENTITY\n";
        let items = parse(text, "f.cnf").unwrap();
        assert_eq!(opt(&items, "user"), Some(Some("dba".into())));
        assert_eq!(opt(&items, "password"), Some(Some("p#ss w;rd".into())));
        assert_eq!(opt(&items, "host"), Some(Some("db1.example".into())));
        assert_eq!(opt(&items, "quick"), Some(None));
        assert!(items
            .iter()
            .any(|i| matches!(i, Item::Option { group, key, .. }
            if group == "myrecode" && key == "ssl-mode")));
    }

    #[test]
    fn single_quotes_and_escapes() {
        let items = parse(
            "[client]\npassword='it''s'\nsocket=/run/my\\sdir/s.sock\n",
            "f",
        );
        assert!(items
            .unwrap_err()
            .to_string()
            .contains("after the closing quote"));
        let items = parse(
            "[client]\npassword='a\\'b'\nsocket=/run/my\\sdir/s.sock\nhost=c:\\db\n",
            "f",
        )
        .unwrap();
        assert_eq!(opt(&items, "password"), Some(Some("a'b".into())));
        assert_eq!(
            opt(&items, "socket"),
            Some(Some("/run/my dir/s.sock".into()))
        );
        assert_eq!(opt(&items, "host"), Some(Some("c:\\db".into())));
    }

    #[test]
    fn dashes_underscores_case_and_loose_prefix_are_one_key() {
        for k in ["ssl-ca", "ssl_ca", "SSL_CA", "loose-ssl-ca", "loose_ssl_ca"] {
            assert_eq!(normalize_key(k), "ssl-ca", "{k}");
        }
    }

    #[test]
    fn includes_are_items_in_place() {
        let items = parse(
            "!include /etc/mysql/extra.cnf\n[client]\nuser=a\n!includedir /etc/mysql/conf.d/\n",
            "f",
        )
        .unwrap();
        assert_eq!(items[0], Item::Include("/etc/mysql/extra.cnf".into()));
        assert_eq!(items[2], Item::IncludeDir("/etc/mysql/conf.d/".into()));
        let e = parse("!includefile x\n", "f").unwrap_err().to_string();
        assert!(e.contains("f:1") && e.contains("Fix:"), "{e}");
    }

    #[test]
    fn bad_lines_name_file_line_and_fix() {
        let e = parse("user=a\n", "my.cnf").unwrap_err().to_string();
        assert!(e.starts_with("my.cnf:1:") && e.contains("[client]"), "{e}");
        let e = parse("[client\n", "my.cnf").unwrap_err().to_string();
        assert!(e.contains("']'"), "{e}");
        let e = parse("[client]\npassword=\"open\n", "my.cnf")
            .unwrap_err()
            .to_string();
        assert!(e.contains("my.cnf:2") && e.contains("closing"), "{e}");
    }

    fn resolved(text: &str) -> crate::db::settings::Resolved {
        crate::db::settings::resolve(&layers(&parse(text, "f").unwrap()).unwrap().0)
    }

    #[test]
    fn the_last_occurrence_in_file_order_wins_whatever_its_group() {
        // [myrecode] first, [client] after it: [client]'s later user wins, as in the mysql client.
        let r = resolved(
            "[myrecode]\nuser=tool\nhost=h1\n[client]\nuser=dba\npassword=one\npassword=two\n[mysqldump]\nhost=h9\n",
        );
        assert_eq!(r.settings.get(Key::User), Some("dba"));
        assert_eq!(r.sources[&Key::User], "f [client]");
        assert_eq!(r.settings.get(Key::Password), Some("two"));
        // Only [myrecode] sets the host; other programs' groups are not read.
        assert_eq!(r.settings.get(Key::Host), Some("h1"));
        assert_eq!(r.sources[&Key::Host], "f [myrecode]");
        // [myrecode] after [client] wins; a group that appears twice counts where each line stands.
        let r = resolved(
            "[client]\nport=1\nssl-mode=REQUIRED\n[myrecode]\nport=2\n[client]\nssl-verify-server-cert\n",
        );
        assert_eq!(r.settings.get(Key::Port), Some("2"));
        assert_eq!(r.sources[&Key::Port], "f [myrecode]");
        assert_eq!(r.settings.get(Key::SslMode), Some("VERIFY_IDENTITY"));
    }

    #[test]
    fn included_lines_are_named_by_their_own_file() {
        let mut items = parse("[client]\nuser=a\n", "main.cnf").unwrap();
        items.extend(parse("[myrecode]\nuser=b\nport=x\n", "/etc/extra.cnf").unwrap());
        let e = layers(&items).unwrap_err().to_string();
        assert!(e.starts_with("/etc/extra.cnf:3:"), "{e}");
        items.pop();
        let r = crate::db::settings::resolve(&layers(&items).unwrap().0);
        assert_eq!(r.sources[&Key::User], "/etc/extra.cnf [myrecode]");
    }

    #[test]
    fn password_without_value_is_noted_not_prompted() {
        let (l, notes) = layers(&parse("[client]\npassword\n", "f").unwrap()).unwrap();
        assert!(l.is_empty(), "{l:?}");
        assert!(notes[0].contains("--ask-pass"), "{notes:?}");
    }

    #[test]
    fn tls_keys_and_mariadb_verify_flag() {
        let text = "[client]\nssl-ca=/ca.pem\nssl_cert=/c.pem\nssl-key=/k.pem\nssl-verify-server-cert\ncompress\n";
        let (l, notes) = layers(&parse(text, "f").unwrap()).unwrap();
        let s = &l[0].settings;
        assert_eq!(s.get(Key::SslCa), Some("/ca.pem"));
        assert_eq!(s.get(Key::SslCert), Some("/c.pem"));
        assert_eq!(s.get(Key::SslKey), Some("/k.pem"));
        assert_eq!(s.get(Key::SslMode), Some("VERIFY_IDENTITY"));
        assert!(
            notes.is_empty(),
            "bare unknown flags are not worth a note: {notes:?}"
        );
        let e = layers(&parse("[client]\nport=x\n", "f").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("f:2") && e.contains("port"), "{e}");
    }
}

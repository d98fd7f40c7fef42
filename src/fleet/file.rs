//! The fleet file (YAML): servers, how to reach each one, which schemas, how many heavy
//! readers at once, and the groups (waves) a later `fleet run` goes through.
//!
//! Pure: text in, a validated [`Fleet`] or a one-line error naming the problem and its fix
//! out, before anything connects. A password never goes in this file (it is read by
//! anyone who reads the fleet's reports' directory, and committed to repositories): a URL
//! carrying one is refused with the fix.

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One server as the file spells it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawServer {
    name: String,
    url: Option<String>,
    defaults_file: Option<PathBuf>,
    #[serde(default)]
    ask_pass: bool,
    schemas: Vec<String>,
    concurrency: Option<usize>,
}

/// The whole file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFleet {
    servers: Vec<RawServer>,
    /// A mapping, read in file order: the order of the waves.
    #[serde(default)]
    groups: serde_yaml::Mapping,
}

/// One server of the fleet, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its name in the file: the directory of its reports, the first column of the roll-up.
    pub name: String,
    /// `mysql://user@host:port[?ssl-mode=..]`, never with a password.
    pub url: Option<String>,
    /// An option file to read instead of `~/.my.cnf` (relative paths from the fleet file's folder).
    pub defaults_file: Option<PathBuf>,
    /// Ask for this server's password once, at the start.
    pub ask_pass: bool,
    /// Schema names and globs (`shop_*`, `?`): which of the server's user schemas to take.
    pub schemas: Vec<String>,
    /// Heavy readers (schema scans) at once on this server.
    pub concurrency: usize,
}

/// A validated fleet file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// The servers, in file order.
    pub servers: Vec<Server>,
    /// Named groups (waves) of server names, in file order: `fleet run`'s stages.
    pub groups: Vec<(String, Vec<String>)>,
}

/// One heavy reader per server unless the file asks for more: a scan reads every row, and
/// two at once on one server double what production feels.
pub const DEFAULT_CONCURRENCY: usize = 1;

/// Parses and validates the fleet file's text; `base` is its folder (relative option files).
pub fn parse(text: &str, base: &Path) -> Result<Fleet> {
    let raw: RawFleet = serde_yaml::from_str(text).map_err(|e| {
        anyhow!(
            "the fleet file is not valid: {e}. Fix: write `servers:` as a list of \
             {{name, url or defaults-file, schemas, concurrency}} (docs/fleet.md lists every key)"
        )
    })?;
    if raw.servers.is_empty() {
        bail!("the fleet file names no server. Fix: add one under `servers:` with name, url and schemas");
    }
    let mut seen = BTreeSet::new();
    let mut servers = Vec::new();
    for s in raw.servers {
        let server = validate_server(s, base)?;
        if !seen.insert(server.name.clone()) {
            bail!(
                "server name '{}' is used twice in the fleet file. Fix: give each server its own name",
                server.name
            );
        }
        servers.push(server);
    }
    let groups = groups(&raw.groups, &seen)?;
    Ok(Fleet { servers, groups })
}

/// The groups in file order, each naming servers of the file, no server in two.
fn groups(
    raw: &serde_yaml::Mapping,
    servers: &BTreeSet<String>,
) -> Result<Vec<(String, Vec<String>)>> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut placed: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in raw {
        let group = k.as_str().ok_or_else(|| {
            anyhow!("a group's name is not text. Fix: write groups as `name: [server, ...]`")
        })?;
        check_name("group", group)?;
        let members: Vec<String> = serde_yaml::from_value(v.clone()).map_err(|_| {
            anyhow!("group '{group}' is not a list of server names. Fix: write {group}: [db1, db2]")
        })?;
        if members.is_empty() {
            bail!("group '{group}' names no server. Fix: list server names under it, or remove it");
        }
        for m in &members {
            if !servers.contains(m) {
                bail!(
                    "group '{group}' names server '{m}', which is not in `servers:`. Fix: use one of: {}",
                    servers.iter().cloned().collect::<Vec<_>>().join(", ")
                );
            }
            if let Some(first) = placed.insert(m.clone(), group.to_string()) {
                bail!(
                    "server '{m}' is in group '{first}' and in group '{group}'; a server runs in one wave. Fix: remove it from one of them"
                );
            }
        }
        out.push((group.to_string(), members));
    }
    Ok(out)
}

/// Reads and validates the fleet file at `path`.
pub fn load(path: &Path) -> Result<Fleet> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        anyhow!(
            "cannot read the fleet file {}: {e}. Fix: give the path of a fleet YAML file (docs/fleet.md)",
            path.display()
        )
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, base).map_err(|e| anyhow!("{}: {e}", path.display()))
}

fn validate_server(s: RawServer, base: &Path) -> Result<Server> {
    check_name("server", &s.name)?;
    let name = &s.name;
    if s.url.is_none() && s.defaults_file.is_none() {
        bail!(
            "server '{name}' has neither url nor defaults-file. Fix: add url: mysql://user@host:3306 \
             or defaults-file: FILE (an option file with host, user and password)"
        );
    }
    if let Some(u) = &s.url {
        let parsed = url::Url::parse(u).map_err(|_| {
            anyhow!("server '{name}': url is not a URL. Fix: write mysql://user@host:3306")
        })?;
        if parsed.password().is_some() {
            bail!(
                "server '{name}': the url holds a password, and a fleet file is read by many. \
                 Fix: remove it from the url and put it in an option file (defaults-file, \
                 [client] password=...) or set ask-pass: true"
            );
        }
        if parsed.scheme() != "mysql" {
            bail!(
                "server '{name}': url must start with mysql://. Fix: write mysql://user@host:3306"
            );
        }
        if !parsed.path().trim_start_matches('/').is_empty() {
            bail!(
                "server '{name}': the url names a database; the fleet file picks schemas with \
                 `schemas:`. Fix: drop the /database part of the url"
            );
        }
    }
    if s.schemas.is_empty() {
        bail!("server '{name}' lists no schemas. Fix: add schemas: [shop_*] (names or globs; `*` takes every user schema)");
    }
    for p in &s.schemas {
        if p.trim().is_empty() {
            bail!("server '{name}': an empty schema name. Fix: remove it, or write a name or glob such as shop_*");
        }
        if super::pattern::is_system(p) {
            bail!(
                "server '{name}': schema '{p}' is a system schema, never scanned. Fix: remove it from schemas"
            );
        }
    }
    let concurrency = s.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
    if concurrency == 0 {
        bail!(
            "server '{name}': concurrency 0 would scan nothing. Fix: write 1 (the default) or more"
        );
    }
    Ok(Server {
        name: s.name,
        url: s.url,
        defaults_file: s
            .defaults_file
            .map(|f| if f.is_relative() { base.join(f) } else { f }),
        ask_pass: s.ask_pass,
        schemas: s.schemas,
        concurrency,
    })
}

/// Server and group names become directory and file names: letters, digits, `_`, `-`, `.`
/// (not leading), so no name can climb out of `--out` or collide with a usage file.
fn check_name(what: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok {
        bail!(
            "{what} name '{name}' cannot name a folder. Fix: use letters, digits, _, - and . (not first), at most 64"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Fleet {
        parse(text, Path::new("/etc/fleet")).unwrap()
    }

    fn parse_err(text: &str) -> String {
        format!("{:#}", parse(text, Path::new("/etc/fleet")).unwrap_err())
    }

    const GOOD: &str = "
servers:
  - name: db1
    url: mysql://dba@db1.example:3306
    schemas: [shop_*, forum]
  - name: db2
    defaults-file: db2.cnf
    ask-pass: true
    schemas: ['*']
    concurrency: 2
groups:
  canary: [db1]
  rest: [db2]
";

    #[test]
    fn a_good_file_parses_with_defaults_and_relative_option_files() {
        let f = parse_ok(GOOD);
        assert_eq!(f.servers.len(), 2);
        assert_eq!(f.servers[0].concurrency, DEFAULT_CONCURRENCY);
        assert_eq!(f.servers[0].schemas, vec!["shop_*", "forum"]);
        assert_eq!(f.servers[1].concurrency, 2);
        assert!(f.servers[1].ask_pass);
        assert_eq!(
            f.servers[1].defaults_file.as_deref(),
            Some(Path::new("/etc/fleet/db2.cnf"))
        );
        assert_eq!(
            f.groups,
            vec![
                ("canary".to_string(), vec!["db1".to_string()]),
                ("rest".to_string(), vec!["db2".to_string()])
            ]
        );
        let f = parse_ok(&GOOD.replace(
            "  canary: [db1]\n  rest: [db2]\n",
            "  zeta: [db2]\n  alpha: [db1]\n",
        ));
        assert_eq!(f.groups[0].0, "zeta", "the waves keep the file's order");
    }

    #[test]
    fn a_password_in_a_url_is_refused_without_echoing_it() {
        let e = parse_err(
            "servers:\n  - name: a\n    url: mysql://dba:s3cret@h:3306\n    schemas: [x]\n",
        );
        assert!(e.contains("holds a password"), "{e}");
        assert!(e.contains("Fix:"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn bad_inputs_name_the_problem_and_the_fix() {
        let cases = [
            ("servers: []\n", "names no server"),
            ("servers:\n  - name: a\n    schemas: [x]\n", "neither url nor defaults-file"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: []\n", "lists no schemas"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: [mysql]\n", "system schema"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: [x]\n    concurrency: 0\n", "concurrency 0"),
            ("servers:\n  - name: ../a\n    url: mysql://u@h\n    schemas: [x]\n", "cannot name a folder"),
            ("servers:\n  - name: a\n    url: mysql://u@h/db\n    schemas: [x]\n", "names a database"),
            ("servers:\n  - name: a\n    url: postgres://u@h\n    schemas: [x]\n", "mysql://"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: [x]\n  - name: a\n    url: mysql://u@h\n    schemas: [y]\n", "used twice"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: [x]\ngroups:\n  w1: [b]\n", "not in `servers:`"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: [x]\n    concurrenc: 2\n", "unknown field"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: [x]\ngroups:\n  w1: [a]\n  w2: [a]\n", "in one wave"),
            ("servers:\n  - name: a\n    url: mysql://u@h\n    schemas: [x]\ngroups:\n  w1: a\n", "not a list"),
        ];
        for (text, want) in cases {
            let e = parse_err(text);
            assert!(e.contains(want), "{text}: {e}");
            assert!(e.contains("Fix:"), "{text}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}

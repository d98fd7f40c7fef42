//! Gathers the connection settings from where DBAs keep them — the option file, `MYSQL_PWD`,
//! the URL, and the `--ask-pass` prompt — in the precedence [`super::settings`] documents,
//! and says (never the secret) which source supplied each.
//!
//! This is the I/O half: reading files (following `!include` and `!includedir`), the
//! environment and the terminal. Nobody is prompted unless `--ask-pass` asks for it.

use super::connect::ConnectionConfig;
use super::optionfile::{self, Item};
use super::settings::{resolve, Key, Layer, Resolved, Settings};
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// What the command line says about connecting.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    /// `--url` or `MYSQL_URL`.
    pub url: Option<&'a str>,
    /// `--defaults-file`: read only this option file.
    pub defaults_file: Option<&'a Path>,
    /// `--ask-pass`: type the password at a prompt.
    pub ask_pass: bool,
}

/// The settings in force, where each came from, and remarks on the option files read.
#[derive(Debug, Clone)]
pub struct Gathered {
    /// Ready to connect.
    pub config: ConnectionConfig,
    /// Which source supplied each setting.
    pub resolved: Resolved,
    /// Option-file lines seen but not used, and the files read; never a value.
    pub notes: Vec<String>,
}

/// Gathers settings from every source of `req`, prompting only when `req.ask_pass`.
pub fn gather(req: &Request<'_>) -> Result<Gathered> {
    let mut layers = Vec::new();
    let mut notes = Vec::new();
    if let Ok(pw) = std::env::var("MYSQL_PWD") {
        let mut s = Settings::default();
        s.set(Key::Password, &pw, "MYSQL_PWD")?;
        layers.push(Layer {
            source: "MYSQL_PWD".into(),
            settings: s,
        });
    }
    let file = match req.defaults_file {
        Some(p) => {
            if !p.is_file() {
                bail!(
                    "--defaults-file {} does not exist or is not a file. Fix: give the path of an option file ([client] user=..., password=...)",
                    p.display()
                );
            }
            Some((p.to_path_buf(), p.display().to_string()))
        }
        None => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".my.cnf"))
            .filter(|p| p.is_file())
            .map(|p| (p, "~/.my.cnf".to_string())),
    };
    let mut from_file = false;
    if let Some((path, shown)) = file.as_ref().filter(|(p, shown)| !world_writable(p, shown)) {
        let items = load(path, shown, 0)?;
        notes.push(format!("read option file {shown}"));
        let (file_layers, n) = optionfile::layers(&items)?;
        notes.extend(n);
        from_file |= !file_layers.is_empty();
        layers.extend(file_layers);
    }
    match req.url {
        Some(u) => layers.push(Layer {
            source: "the URL".into(),
            settings: Settings::from_url(u)?,
        }),
        None if !from_file => bail!(
            "no server given. Fix: pass --url mysql://user@host:3306/database or set MYSQL_URL, \
             or put host and user under [client] in ~/.my.cnf (or a --defaults-file)"
        ),
        None => {}
    }
    // The TLS files are checked before anyone is prompted or anything is sent, so a wrong
    // path is named as such, with the source that gave it.
    let so_far = resolve(&layers);
    let so_far_config = ConnectionConfig::from_settings(&so_far.settings)?;
    so_far_config
        .tls
        .check_files(|name| Key::from_name(name).and_then(|k| so_far.sources.get(&k).cloned()))?;
    if req.ask_pass {
        let so_far = so_far_config;
        let prompt = format!("Password for {}@{}: ", so_far.user, so_far.host);
        let typed = rpassword::prompt_password(prompt).map_err(|e| {
            anyhow!(
                "--ask-pass needs a terminal to type the password on ({e}). \
                 Fix: run it from a terminal, or give the password in an option file or MYSQL_PWD instead"
            )
        })?;
        let mut s = Settings::default();
        s.set(Key::Password, &typed, "--ask-pass")?;
        layers.push(Layer {
            source: "the --ask-pass prompt".into(),
            settings: s,
        });
    }
    let resolved = resolve(&layers);
    let config = ConnectionConfig::from_settings(&resolved.settings)?;
    Ok(Gathered {
        config,
        resolved,
        notes,
    })
}

/// Reads an option file and the files it includes, in place, at most 10 deep.
fn load(path: &Path, shown: &str, depth: usize) -> Result<Vec<Item>> {
    if depth > 10 {
        bail!("{shown}: !include nests more than 10 deep (a loop?). Fix: remove the circular !include");
    }
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("cannot read option file {shown}. Fix: check that it exists and is readable by you")
    })?;
    let mut out = Vec::new();
    for item in optionfile::parse(&text, shown)? {
        match item {
            Item::Include(p) => {
                let p = relative_to(path, &p);
                // The mysql client warns about a missing !include target and reads on; so do we
                // (a file another reads fine must not stop myrecode).
                if !p.exists() {
                    eprintln!(
                        "myrecode: warning: {shown}: !include {}: no such file; skipped, as the mysql client does. Fix: correct the path or remove the line",
                        p.display()
                    );
                    continue;
                }
                out.extend(load(&p, &p.display().to_string(), depth + 1)?);
            }
            Item::IncludeDir(d) => {
                let d = relative_to(path, &d);
                let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
                    .with_context(|| {
                        format!(
                            "{shown}: cannot read the !includedir directory {}. Fix: correct the path or remove the line",
                            d.display()
                        )
                    })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "cnf") && p.is_file())
                    .collect();
                // The order in which a directory lists its files is arbitrary; sorting makes
                // "the later file wins" something a DBA can predict.
                files.sort();
                for f in files {
                    out.extend(load(&f, &f.display().to_string(), depth + 1)?);
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Whether anyone may write the file: then, as the mysql client does, it is ignored (anyone
/// could point us at their server with it), and we say so on stderr.
fn world_writable(path: &Path, shown: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let open = std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o002 != 0);
    if open {
        eprintln!(
            "myrecode: warning: option file {shown} is writable by everyone and is ignored, as the mysql client does. Fix: chmod o-w {shown}"
        );
    }
    open
}

fn relative_to(file: &Path, target: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if target.is_relative() => dir.join(target),
        _ => target.to_path_buf(),
    }
}

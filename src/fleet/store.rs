//! Where a fleet scan keeps its files under `--out`, and what counts as done: the resume
//! rule. A schema's report is written to a `.part` file and renamed into place only when
//! whole, so a report that exists and parses is complete, and anything else (a `.part` left
//! by a kill) is scanned again.

use super::usage::ServerUsage;
use crate::scan::model::{ScanReport, SCHEMA_VERSION};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// A schema name as a file name: letters, digits, `_` and `-` as they are, every other
/// character `@xxxx` (its code point in hex, as MySQL names its own files), so no name
/// escapes the server's folder.
pub fn file_stem(schema: &str) -> String {
    schema
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("@{:04x}", c as u32)
            }
        })
        .collect()
}

/// `DIR/<server>/<schema>.json`: the schema's report, as `scan --json` writes it.
pub fn report_path(out: &Path, server: &str, schema: &str) -> PathBuf {
    out.join(server).join(format!("{}.json", file_stem(schema)))
}

/// `DIR/<server>.usage.json`: the counters as read before the first scan of the server.
pub fn usage_path(out: &Path, server: &str) -> PathBuf {
    out.join(format!("{server}.usage.json"))
}

/// The schema's report if it is complete (whole and of our layout), else `None`.
pub fn complete_report(path: &Path) -> Option<ScanReport> {
    let text = std::fs::read_to_string(path).ok()?;
    let r: ScanReport = serde_json::from_str(&text).ok()?;
    (r.schema_version == SCHEMA_VERSION).then_some(r)
}

/// Writes `text` to `path` whole or not at all (a `.part` file renamed into place).
pub fn write_whole(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let ext = path
        .extension()
        .map_or(String::new(), |e| e.to_string_lossy().into_owned());
    let part = path.with_extension(format!("{ext}.part"));
    std::fs::write(&part, text).with_context(|| format!("cannot write {}", part.display()))?;
    std::fs::rename(&part, path).with_context(|| format!("cannot write {}", path.display()))
}

/// The usage snapshot saved by an earlier (interrupted) run, if any: a resumed run must not
/// take a new one, since the first run's scans moved the counters.
pub fn saved_usage(path: &Path) -> Option<ServerUsage> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_stay_inside_the_server_folder() {
        assert_eq!(file_stem("shop_eu-1"), "shop_eu-1");
        assert_eq!(file_stem("../x"), "@002e@002e@002fx");
        assert_eq!(file_stem("магазин"), "@043c@0430@0433@0430@0437@0438@043d");
        assert_eq!(
            report_path(Path::new("/o"), "db1", "a.b"),
            PathBuf::from("/o/db1/a@002eb.json")
        );
        assert_eq!(
            usage_path(Path::new("/o"), "db1"),
            PathBuf::from("/o/db1.usage.json")
        );
    }

    #[test]
    fn a_torn_or_foreign_file_is_not_complete() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        assert!(complete_report(&p).is_none());
        std::fs::write(&p, "{\"schema_version\": 1, \"tool_ver").unwrap();
        assert!(complete_report(&p).is_none());
        write_whole(&p, "{}").unwrap();
        assert!(complete_report(&p).is_none());
        assert!(!dir.path().join("s.json.part").exists());
    }
}

//! Reads a job file: YAML syntax, then every unknown key at once, then types and values.
//!
//! Every problem becomes a [`Finding`] with the line, the field path and the fix; serde_yaml
//! supplies locations for its own errors, [`Locator`] for the rest.

use super::finding::Finding;
use super::locate::Locator;
use super::model::{
    Job, CLIENTS_KEYS, COLUMN_KEYS, DEFAULTS_KEYS, GROUP_KEYS, JOB_KEYS, TABLE_KEYS,
};
use super::suggest;
use serde_yaml::Value;
use std::path::Path;

/// A job as read, with its text for locating lines.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The parsed job.
    pub job: Job,
    /// Line numbers of its fields.
    pub locator: Locator,
}

/// Why a job could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The file cannot be read at all (exit 2).
    Unreadable(anyhow::Error),
    /// The file was read but is not a valid job (exit 1): every problem found.
    Invalid(Vec<Finding>),
}

/// Reads and parses the job in `path`.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        LoadError::Unreadable(anyhow::anyhow!(
            "cannot read job file {}: {e}. Fix: check the path (write one with `myrecode plan --report scan.json -o job.yaml`)",
            path.display()
        ))
    })?;
    load_str(&text).map_err(LoadError::Invalid)
}

/// Parses a job from its text; on failure, every problem with its line.
pub fn load_str(text: &str) -> Result<Loaded, Vec<Finding>> {
    let locator = Locator::new(text);
    let value: Value = match serde_yaml::from_str(text) {
        Ok(v) => v,
        Err(e) => return Err(vec![from_serde(&e, &locator)]),
    };
    let mut findings = Vec::new();
    unknown_keys(&value, &mut findings);
    if findings.is_empty() {
        match serde_yaml::from_str::<Job>(text) {
            // The groups are checked as written: `run` must not start on groups it cannot follow.
            Ok(job) => {
                let mut wrong = super::groups::validate(&job);
                wrong.extend(super::settings::check_settings(&job));
                wrong.extend(targets_outside_the_grammar(&job));
                if wrong.is_empty() {
                    return Ok(Loaded { job, locator });
                }
                for f in &mut wrong {
                    f.line = super::groups::line_of(&locator, &f.path);
                }
                wrong.sort_by_key(|f| f.line.unwrap_or(0));
                return Err(wrong);
            }
            Err(e) => findings.push(from_serde(&e, &locator)),
        }
    }
    for f in &mut findings {
        if f.line.is_none() {
            f.line = locator.line(&f.path);
        }
    }
    Err(findings)
}

/// Every column whose `target:` is not made of the closed grammar's words
/// ([`super::target::outside_grammar`]): found when the job is loaded, so neither `plan
/// --check`, the rehearsal nor `run` sends anything of it to the server.
fn targets_outside_the_grammar(job: &Job) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, t) in job.tables.iter().enumerate() {
        for (j, c) in t.columns.iter().enumerate() {
            if let Some(e) = super::target::outside_grammar(&c.target) {
                out.push(Finding::new(
                    format!("tables[{i}].columns[{j}].target"),
                    format!("target {:?} cannot be used: {e}", c.target),
                    "write one column definition, e.g. VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL DEFAULT 'текст' COMMENT 'Описание' (`myrecode plan` writes it for you)",
                ));
            }
        }
    }
    out
}

/// Finds every key that is not part of the layout, with a suggestion for each.
fn unknown_keys(root: &Value, out: &mut Vec<Finding>) {
    let Value::Mapping(_) = root else {
        out.push(Finding::new(
            "",
            "this is not a job file: it has no top-level keys",
            format!(
                "start from `myrecode plan --report scan.json -o job.yaml` or config/example-job.yaml (top-level keys: {})",
                JOB_KEYS.join(", ")
            ),
        ));
        return;
    };
    check_keys(root, "", JOB_KEYS, out);
    if let Some(d) = root.get("defaults") {
        check_keys(d, "defaults", DEFAULTS_KEYS, out);
    }
    if let Some(Value::Sequence(tables)) = root.get("tables") {
        for (i, t) in tables.iter().enumerate() {
            let tp = format!("tables[{i}]");
            check_keys(t, &tp, TABLE_KEYS, out);
            if let Some(Value::Sequence(cols)) = t.get("columns") {
                for (j, c) in cols.iter().enumerate() {
                    check_keys(c, &format!("{tp}.columns[{j}]"), COLUMN_KEYS, out);
                }
            }
        }
    }
    if let Some(c) = root.get("clients") {
        check_keys(c, "clients", CLIENTS_KEYS, out);
    }
    if let Some(Value::Sequence(groups)) = root.get("cutover_groups") {
        for (i, g) in groups.iter().enumerate() {
            check_keys(g, &format!("cutover_groups[{i}]"), GROUP_KEYS, out);
        }
    }
}

fn check_keys(v: &Value, path: &str, allowed: &[&str], out: &mut Vec<Finding>) {
    let Value::Mapping(m) = v else { return };
    for k in m.keys() {
        let key = match k {
            Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        if allowed.contains(&key.as_str()) {
            continue;
        }
        let at = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        out.push(unknown_key_finding(at, &key, allowed));
    }
}

fn unknown_key_finding(path: String, key: &str, allowed: &[&str]) -> Finding {
    let fix = match suggest::closest(key, allowed) {
        Some(c) => format!(
            "did you mean '{c}'? (valid keys here: {})",
            allowed.join(", ")
        ),
        None => format!("remove it (valid keys here: {})", allowed.join(", ")),
    };
    Finding::new(path, format!("unknown key '{key}'"), fix)
}

/// Turns a serde_yaml error (`path: message at line L column C`) into a finding with a fix.
fn from_serde(e: &serde_yaml::Error, locator: &Locator) -> Finding {
    let full = e.to_string();
    let msg = match full.rfind(" at line ") {
        Some(i) if e.location().is_some() => &full[..i],
        _ => full.as_str(),
    };
    let (mut path, mut message) = match msg.split_once(": ") {
        Some((p, m)) if !p.is_empty() && !p.contains(' ') => (p.to_string(), m.to_string()),
        _ => (String::new(), msg.to_string()),
    };
    let fix;
    if let Some(field) = between(&message, "unknown field `", "`") {
        // Reached only if the key walk missed it; keep the same wording.
        let expected = backticked(message.split("expected").nth(1).unwrap_or(""));
        let allowed: Vec<&str> = expected.iter().map(|s| s.as_str()).collect();
        path = join(&path, &field);
        let f = unknown_key_finding(path, &field, &allowed);
        return Finding {
            line: e.location().map(|l| l.line()),
            ..f
        };
    } else if let Some(key) = between(&message, "duplicate entry with key \"", "\"") {
        path = join(&path, &key);
        let lines = locator.all_lines(&path);
        let first = lines.first().copied();
        return Finding {
            line: lines
                .get(1)
                .copied()
                .or(first)
                .or(e.location().map(|l| l.line())),
            message: match first {
                Some(f) => format!("key '{key}' appears twice (first on line {f})"),
                None => format!("key '{key}' appears twice"),
            },
            fix: "keep one of them".into(),
            path,
        };
    } else if let Some(field) = between(&message, "missing field `", "`") {
        let example = match field.as_str() {
            "version" => "version: 1",
            "schema" => "schema: <database name>",
            "tables" => "tables: [] (or a list of tables)",
            "name" => "name: <name>",
            "strategy" => "strategy: copy (or in-place)",
            "columns" => "columns: (a list of columns)",
            "source" => "source: auto (or a fixed label)",
            "target" => "target: VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
            _ => "",
        };
        message = format!("required key '{field}' is missing");
        fix = if example.is_empty() {
            format!("add '{field}:'")
        } else {
            format!("add `{example}`")
        };
    } else if let Some(variant) = between(&message, "unknown variant `", "`") {
        let valid = backticked(message.split("expected").nth(1).unwrap_or(""));
        message = format!("unknown value '{variant}'");
        fix = format!(
            "use one of {}{}",
            valid.join(", "),
            suggest::did_you_mean(&variant, &valid)
        );
    } else if message.starts_with("invalid duration") {
        fix = super::duration::DURATION_HELP.to_string();
        message = message
            .split(": write")
            .next()
            .unwrap_or(&message)
            .to_string();
    } else if message.starts_with("invalid type") || message.starts_with("invalid value") {
        fix = "write the value as the layout expects (see config/example-job.yaml)".into();
    } else if path.is_empty() && e.location().is_some() {
        fix = "check the indentation (spaces, not tabs) and quote values that contain ': ' or ' #'"
            .into();
        message = format!("YAML syntax: {message}");
    } else {
        fix = "see config/example-job.yaml for the layout".into();
    }
    let line = e
        .location()
        .map(|l| l.line())
        .or_else(|| locator.line(&path));
    Finding {
        line,
        path,
        message,
        fix,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn between(s: &str, start: &str, end: &str) -> Option<String> {
    let a = s.find(start)? + start.len();
    let b = s[a..].find(end)? + a;
    Some(s[a..b].to_string())
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, v)| v.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "version: 1\nschema: shop\ntables:\n  - name: t\n    strategy: copy\n    columns:\n      - name: c\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4\n";

    fn errs(text: &str) -> Vec<String> {
        load_str(text)
            .unwrap_err()
            .iter()
            .map(|f| f.render("job.yaml"))
            .collect()
    }

    #[test]
    fn loads_a_valid_job() {
        let l = load_str(GOOD).unwrap();
        assert_eq!(l.job.tables[0].columns[0].name, "c");
        assert_eq!(l.locator.line("tables[0].columns[0].target"), Some(9));
    }

    #[test]
    fn every_unknown_key_at_once_with_suggestions() {
        let text = GOOD
            .replace("strategy: copy", "strategy: copy\n    batchsize: 10")
            .replace("source: auto", "sorce: auto")
            .replace("version: 1", "version: 1\ncutover: auto");
        let e = errs(&text);
        assert_eq!(e.len(), 3, "{e:#?}");
        assert_eq!(
            e[0],
            "job.yaml:2: cutover: unknown key 'cutover'. Fix: remove it (valid keys here: version, schema, defaults, tables, cutover_groups, clients)"
        );
        assert!(e[1].starts_with("job.yaml:7: tables[0].batchsize: unknown key 'batchsize'. Fix: did you mean 'batch_size'?"), "{}", e[1]);
        assert!(e[2].starts_with("job.yaml:10: tables[0].columns[0].sorce: unknown key 'sorce'. Fix: did you mean 'source'?"), "{}", e[2]);
    }

    #[test]
    fn serde_errors_keep_line_and_path_and_gain_a_fix() {
        let e = errs(&GOOD.replace("strategy: copy", "strategy: inplace"));
        assert_eq!(
            e,
            vec!["job.yaml:5: tables[0].strategy: unknown value 'inplace'. Fix: use one of in-place, copy (did you mean 'in-place'?)"]
        );
        let e = errs(&GOOD.replace("        target: TEXT CHARACTER SET utf8mb4\n", ""));
        assert_eq!(
            e,
            vec!["job.yaml:7: tables[0].columns[0]: required key 'target' is missing. Fix: add `target: VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`"]
        );
        let e = errs(&GOOD.replace("tables:", "defaults:\n  max_replica_lag: 5 sec\ntables:"));
        assert_eq!(
            e,
            vec!["job.yaml:4: defaults.max_replica_lag: invalid duration '5 sec'. Fix: write a whole number with a unit: 500ms, 2s, 1m or 1h"]
        );
    }

    #[test]
    fn duplicate_keys_and_tabs() {
        let e = errs(&GOOD.replace("source: auto", "source: auto\n        source: cp1251"));
        assert_eq!(
            e,
            vec!["job.yaml:9: tables[0].columns[0].source: key 'source' appears twice (first on line 8). Fix: keep one of them"]
        );
        let e = errs(&GOOD.replace("    strategy: copy", "\tstrategy: copy"));
        assert!(
            e[0].starts_with("job.yaml:5: YAML syntax: found a tab character"),
            "{e:?}"
        );
        let e = errs("- just\n- a list\n");
        assert!(
            e[0].starts_with("job.yaml: this is not a job file"),
            "{e:?}"
        );
    }

    #[test]
    fn example_job_loads() {
        let l = load_str(include_str!("../../config/example-job.yaml"))
            .unwrap_or_else(|e| panic!("{e:#?}"));
        assert_eq!(l.job.tables.len(), 2);
        assert_eq!(l.job.defaults.replicas.len(), 2);
        assert_eq!(l.job.tables[0].batch_size, Some(500));
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = errs("version: 1\nschema: shop\ntables:\n  - name: t\n   strategy: copy\n");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("job.yaml:5: YAML syntax:"), "{e:?}");
        assert!(e[0].contains("Fix: check the indentation"), "{e:?}");
    }
}

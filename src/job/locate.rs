//! Finds the line of a field path (`tables[1].columns[0].source`) in the raw YAML text.
//!
//! serde_yaml gives a location only for the errors it raises itself; the semantic checks
//! know a path, not a line. Job files are block-style YAML (what `plan` writes and what
//! people edit), so a walk over indentation, `- ` items and `key:` lines recovers every
//! path's line. Flow collections (`key: [a, b]`) resolve to the line of their key.

use std::collections::HashMap;

/// Line numbers (1-based) of every block-style path in one YAML text.
#[derive(Debug, Clone, Default)]
pub struct Locator {
    lines: HashMap<String, Vec<usize>>,
}

#[derive(Debug)]
struct Node {
    col: usize,
    path: String,
    is_item: bool,
}

impl Locator {
    /// Walks `text` once and records the line of every key and sequence item.
    pub fn new(text: &str) -> Self {
        let mut lines: HashMap<String, Vec<usize>> = HashMap::new();
        let mut stack: Vec<Node> = Vec::new();
        let mut counters: HashMap<String, usize> = HashMap::new();
        let mut block_scalar: Option<usize> = None;
        for (n, raw) in text.lines().enumerate() {
            let line_no = n + 1;
            let indent = raw.len() - raw.trim_start_matches(' ').len();
            let mut rest = &raw[indent..];
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            if let Some(c) = block_scalar {
                if indent > c {
                    continue;
                }
                block_scalar = None;
            }
            if rest.starts_with("---") || rest.starts_with("...") {
                stack.clear();
                continue;
            }
            let mut col = indent;
            // Zero or more `- ` sequence item markers, then maybe a key.
            while rest == "-" || rest.starts_with("- ") {
                while stack
                    .last()
                    .is_some_and(|t| t.col > col || (t.col == col && t.is_item))
                {
                    stack.pop();
                }
                let parent = stack.last().map(|t| t.path.clone()).unwrap_or_default();
                let counter = counters.entry(parent.clone()).or_insert(0);
                let path = format!("{parent}[{counter}]");
                *counter += 1;
                lines.entry(path.clone()).or_default().push(line_no);
                stack.push(Node {
                    col,
                    path,
                    is_item: true,
                });
                let after = &rest[1..];
                let skip = after.len() - after.trim_start_matches(' ').len();
                col += 1 + skip;
                rest = &after[skip..];
            }
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            let Some((key, value)) = split_key(rest) else {
                continue;
            };
            while stack.last().is_some_and(|t| t.col >= col) {
                stack.pop();
            }
            let parent = stack.last().map(|t| t.path.as_str()).unwrap_or("");
            let path = if parent.is_empty() {
                key.to_string()
            } else {
                format!("{parent}.{key}")
            };
            counters.remove(&path);
            lines.entry(path.clone()).or_default().push(line_no);
            let v = value.trim();
            if v.starts_with('|') || v.starts_with('>') {
                block_scalar = Some(col);
            }
            stack.push(Node {
                col,
                path,
                is_item: false,
            });
        }
        Locator { lines }
    }

    /// The line of `path`, else of its nearest ancestor present in the text.
    pub fn line(&self, path: &str) -> Option<usize> {
        let mut p = path;
        loop {
            if let Some(l) = self.lines.get(p).and_then(|v| v.first()) {
                return Some(*l);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
            if p.is_empty() {
                return None;
            }
        }
    }
}

impl Locator {
    /// Every line `path` itself appears on (more than one when a key is repeated).
    pub fn all_lines(&self, path: &str) -> &[usize] {
        self.lines.get(path).map(|v| v.as_slice()).unwrap_or(&[])
    }
}

/// Splits `key: value` (or `key:`), unquoting a quoted key; `None` when the line holds no key.
fn split_key(s: &str) -> Option<(String, &str)> {
    let (key, after) = if let Some(q) = s.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = s[1..].find(q)? + 1;
        (s[1..end].to_string(), &s[end + 1..])
    } else {
        let mut idx = None;
        for (i, c) in s.char_indices() {
            if c == ':'
                && s[i + 1..]
                    .chars()
                    .next()
                    .is_none_or(|n| n == ' ' || n == '\t')
            {
                idx = Some(i);
                break;
            }
            if c == '#' && s[..i].ends_with(' ') {
                return None;
            }
        }
        let i = idx?;
        (s[..i].trim_end().to_string(), &s[i..])
    };
    let value = after.strip_prefix(':')?;
    if !value.is_empty() && !value.starts_with([' ', '\t']) {
        return None;
    }
    if key.starts_with(['[', '{']) {
        return None;
    }
    Some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "\
# header
version: 1
schema: shop
defaults:
  batch_size: 100
  replicas:
    - r1:3306
    - r2:3306
tables:
  - name: customers   # comment: with colon
    strategy: copy
    key: [id]
    columns:
      - name: name
        source: auto
        target: VARCHAR(10) CHARACTER SET utf8mb4
      # - name: token   # pure ASCII
      - name: note
        source: cp1251
        target: TEXT
  -
    name: orders
    columns:
    - name: memo
      \"source\": koi8-r
";

    #[test]
    fn finds_every_path() {
        let l = Locator::new(JOB);
        assert_eq!(l.line("version"), Some(2));
        assert_eq!(l.line("defaults.batch_size"), Some(5));
        assert_eq!(l.line("defaults.replicas[1]"), Some(8));
        assert_eq!(l.line("tables[0]"), Some(10));
        assert_eq!(l.line("tables[0].name"), Some(10));
        assert_eq!(l.line("tables[0].strategy"), Some(11));
        assert_eq!(
            l.line("tables[0].key[0]"),
            Some(12),
            "flow items: their key's line"
        );
        assert_eq!(l.line("tables[0].columns[0].source"), Some(15));
        assert_eq!(
            l.line("tables[0].columns[1].name"),
            Some(18),
            "comments are skipped"
        );
        assert_eq!(l.line("tables[0].columns[1].target"), Some(20));
        assert_eq!(l.line("tables[1].name"), Some(22), "dash alone on its line");
        assert_eq!(
            l.line("tables[1].columns[0].source"),
            Some(25),
            "items at their key's indent; quoted keys"
        );
        assert_eq!(
            l.line("tables[1].strategy"),
            Some(21),
            "absent: the item's line"
        );
        assert_eq!(l.line("nothing"), None);
        assert_eq!(l.all_lines("tables[0].columns[0].source"), &[15]);
    }

    #[test]
    fn compact_and_nested_items() {
        let text =
            "tables:\n- name: a\n  columns:\n  - name: x\n  - name: y\n    target: T\n- name: b\n";
        let l = Locator::new(text);
        assert_eq!(l.line("tables[0].columns[1].target"), Some(6));
        assert_eq!(l.line("tables[1].name"), Some(7));
    }

    #[test]
    fn block_scalars_are_skipped() {
        let text = "schema: |\n  - not: an item\nversion: 1\n";
        let l = Locator::new(text);
        assert_eq!(l.line("version"), Some(3));
        assert_eq!(l.line("schema[0]"), Some(1));
    }
}

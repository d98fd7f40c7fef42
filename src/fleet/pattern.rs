//! Which of a server's schemas a fleet file's names and globs select. Pure.

/// Schemas no fleet scan reads, whatever the patterns say (the server's own).
pub const SYSTEM: [&str; 4] = ["mysql", "information_schema", "performance_schema", "sys"];

/// Whether `name` is one of the server's own schemas.
pub fn is_system(name: &str) -> bool {
    SYSTEM.contains(&name.to_ascii_lowercase().as_str())
}

/// Whether `name` matches the glob `pattern` (`*` any run of characters, `?` one; the rest
/// literal and case-sensitive, as schema names are on most servers).
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point: linear enough for schema names.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// The schemas of `existing` that any of `patterns` selects, system schemas never, sorted.
pub fn select(patterns: &[String], existing: &[String]) -> Vec<String> {
    let mut out: Vec<String> = existing
        .iter()
        .filter(|s| !is_system(s))
        .filter(|s| patterns.iter().any(|p| matches(p, s)))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The patterns that select nothing on a server, to name in a warning (a typo, or a schema
/// dropped since the file was written).
pub fn unmatched<'a>(patterns: &'a [String], existing: &[String]) -> Vec<&'a str> {
    patterns
        .iter()
        .filter(|p| !existing.iter().any(|s| !is_system(s) && matches(p, s)))
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn globs_match_as_a_shell_would() {
        assert!(matches("shop_*", "shop_eu"));
        assert!(matches("shop_*", "shop_"));
        assert!(!matches("shop_*", "shopx"));
        assert!(matches("*", "anything"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("*_old*", "forum_old_2019"));
        assert!(!matches("Shop", "shop"));
        assert!(matches("exact", "exact"));
    }

    #[test]
    fn selection_never_takes_system_schemas_and_names_the_unmatched() {
        let existing = v(&[
            "mysql",
            "sys",
            "shop_eu",
            "shop_us",
            "forum",
            "performance_schema",
        ]);
        assert_eq!(
            select(&v(&["*"]), &existing),
            v(&["forum", "shop_eu", "shop_us"])
        );
        assert_eq!(
            select(&v(&["shop_*", "shop_eu"]), &existing),
            v(&["shop_eu", "shop_us"])
        );
        assert_eq!(
            unmatched(&v(&["shop_*", "blog", "mysql"]), &existing),
            vec!["blog", "mysql"]
        );
    }
}

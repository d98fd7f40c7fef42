//! YAML scalars as the job file `plan` writes them: plain where YAML reads them back as the
//! same string, quoted otherwise; and the text of its comments.

/// Text for a `#` comment of the job file: one line, no newlines.
pub(crate) fn comment_safe(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// A block-context scalar: plain when YAML reads it back as the same string, else double-quoted.
pub fn scalar(s: &str) -> String {
    let plain_chars = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " _-.()',>".contains(c));
    let first_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let reads_back = matches!(
        serde_yaml::from_str::<serde_yaml::Value>(s),
        Ok(serde_yaml::Value::String(ref v)) if v == s
    );
    if plain_chars && first_ok && !s.ends_with(' ') && reads_back {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("strings serialize")
    }
}

/// A scalar inside a flow sequence (`[a, b]`): commas and brackets need quotes too.
pub(crate) fn flow(s: &str) -> String {
    let q = scalar(s);
    if q.contains([',', '[', ']', '{', '}']) && !q.starts_with('"') {
        serde_json::to_string(s).expect("strings serialize")
    } else {
        q
    }
}

//! Server charset names as the catalog and the user spell them.

/// Lower case, `utf8` as `utf8mb3`.
pub fn normalize_charset(charset: &str) -> String {
    let c = charset.to_ascii_lowercase();
    if c == "utf8" {
        "utf8mb3".into()
    } else {
        c
    }
}

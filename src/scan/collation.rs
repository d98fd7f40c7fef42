//! Which charsets already hold UTF-8, and the utf8mb4 collation a column takes: the rules
//! the scan's targets and the columns without legacy text both follow. Pure.

/// Whether `cs` already holds UTF-8 (`utf8mb4`, `utf8mb3`, `utf8`).
pub(crate) fn is_utf8_charset(cs: Option<&str>) -> bool {
    matches!(cs, Some("utf8mb4" | "utf8mb3" | "utf8"))
}

/// The utf8mb4 collation closest in meaning to the column's `old` one, so comparisons,
/// uniqueness and ORDER BY answer as before: binary stays binary; a `unicode` (UCA) one keeps
/// its UCA version; every other (`latin1_swedish_ci`, `cp1251_general_ci`, `koi8r_general_ci`,
/// …) becomes `utf8mb4_general_ci`, which, like them, compares one character at a time and
/// pads trailing spaces. MySQL 8's default `utf8mb4_0900_ai_ci` is not taken for a legacy
/// column, since it ignores no trailing space (NO PAD): `'a' = 'a '` and a UNIQUE key would
/// answer differently; with no old collation to follow, it is the server's default there.
pub fn utf8mb4_collation(old: Option<&str>, mysql: bool) -> &'static str {
    match old {
        Some(c) if c.ends_with("_bin") || c.ends_with("_cs") => "utf8mb4_bin",
        Some(c) if c.contains("_nopad_") && c.contains("unicode") => "utf8mb4_unicode_nopad_ci",
        Some(c) if c.contains("_nopad_") => "utf8mb4_general_nopad_ci",
        Some(c) if c.contains("unicode_520") => "utf8mb4_unicode_520_ci",
        Some(c) if c.contains("unicode") => "utf8mb4_unicode_ci",
        Some(c) if c.contains("0900") => "utf8mb4_0900_ai_ci",
        Some(_) => "utf8mb4_general_ci",
        None if mysql => "utf8mb4_0900_ai_ci",
        None => "utf8mb4_general_ci",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collation_follows_the_old_ones_meaning() {
        for (old, mariadb, mysql) in [
            (
                "latin1_swedish_ci",
                "utf8mb4_general_ci",
                "utf8mb4_general_ci",
            ),
            (
                "cp1251_general_ci",
                "utf8mb4_general_ci",
                "utf8mb4_general_ci",
            ),
            (
                "koi8r_general_ci",
                "utf8mb4_general_ci",
                "utf8mb4_general_ci",
            ),
            ("cp1251_bin", "utf8mb4_bin", "utf8mb4_bin"),
            ("latin1_general_cs", "utf8mb4_bin", "utf8mb4_bin"),
            (
                "utf8mb3_unicode_ci",
                "utf8mb4_unicode_ci",
                "utf8mb4_unicode_ci",
            ),
            (
                "utf8mb3_unicode_520_ci",
                "utf8mb4_unicode_520_ci",
                "utf8mb4_unicode_520_ci",
            ),
            (
                "latin1_general_nopad_ci",
                "utf8mb4_general_nopad_ci",
                "utf8mb4_general_nopad_ci",
            ),
        ] {
            assert_eq!(utf8mb4_collation(Some(old), false), mariadb, "{old}");
            assert_eq!(utf8mb4_collation(Some(old), true), mysql, "{old}");
        }
        assert_eq!(utf8mb4_collation(None, false), "utf8mb4_general_ci");
        assert_eq!(utf8mb4_collation(None, true), "utf8mb4_0900_ai_ci");
    }
}

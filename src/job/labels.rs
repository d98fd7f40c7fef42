//! The source labels a job may name: `auto`, a legacy encoding, or a mojibake chain.
//!
//! One list, in [`known`], so it can later come from the detector's own label parser.

/// Lets the detector decide row by row.
pub const AUTO: &str = "auto";

/// Every label valid for a column's `source`, in the order help texts show them.
pub fn known() -> &'static [&'static str] {
    &[
        AUTO,
        "cp1251",
        "koi8-r",
        "koi8-u",
        "cp866",
        "iso-8859-5",
        "tcvn3",
        "utf-8>latin1",
        "utf-8>cp1251",
        "cp1251>latin1",
        "koi8-r>latin1",
        "cp866>latin1",
        "iso-8859-5>latin1",
        "tcvn3>latin1",
    ]
}

/// Whether `label` may be a column's `source`.
pub fn is_known(label: &str) -> bool {
    known().contains(&label)
}

/// Largest number of UTF-8 bytes one source byte can become: 3 for TCVN3 (Vietnamese letters
/// with two marks), 2 for the Cyrillic code pages, and 3 for `auto` (it may meet TCVN3).
pub fn utf8_growth(label: &str) -> u64 {
    if label == AUTO || label.starts_with("tcvn3") {
        3
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_and_chains_are_known() {
        assert!(is_known("auto"));
        assert!(is_known("utf-8>latin1"));
        assert!(!is_known("cp1252"));
        assert!(!is_known("latin1"));
        assert_eq!(known().len(), 14);
    }
}

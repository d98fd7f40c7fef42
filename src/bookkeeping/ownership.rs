//! Whether a `_myrecode_*` bookkeeping table already in the schema is the tool's own: a table
//! of the user's under one of these names must not be filled, altered or read as ours.
//!
//! The mark is the table's layout: every column the tool's first release of it had (those
//! added since are added when the run makes sure of its tables, so a table an older myrecode made
//! still counts as ours). A user's table of that name lacks them and is refused before
//! anything is written.

use crate::db::quote;

/// Each bookkeeping table the run creates, with columns it has had from its first release
/// (the few that tell it from a table of the user's).
pub const LAYOUTS: &[(&str, &[&str])] = &[
    (
        super::tables::CHECKPOINT,
        &["job", "tbl", "fingerprint", "done"],
    ),
    (super::tables::BACKUP, &["job", "tbl", "col", "old_value"]),
    (super::tables::QUARANTINE, &["job", "tbl", "col", "value"]),
    (super::control_table::CONTROL, &["job", "command"]),
    (super::decided::DECIDED, &["job", "tbl", "col", "label"]),
    (
        super::tables::BRIDGE,
        &["job", "segment", "legacy", "users"],
    ),
];

/// The engine's bookkeeping tables (the cut-over's records of what it moved, the replica
/// watch's), named here so one check covers them all; `engine`'s tests hold the names to its
/// constants.
pub const ENGINE_LAYOUTS: &[(&str, &[&str])] = &[
    ("_myrecode_moves", &["job", "child"]),
    ("_myrecode_triggers", &["job", "body"]),
    ("_myrecode_objects", &["job", "statements"]),
    ("_myrecode_heartbeat", &["job", "beat_us"]),
    ("_myrecode_replicas", &["job", "replica"]),
    // Where an older myrecode's `verify` kept replica checksums; `cleanup` still drops it.
    ("_myrecode_checksums", &["job", "tbl", "cnt", "crc"]),
    // `revert`'s list of the values their legacy charset cannot hold.
    (
        "_myrecode_unreverted",
        &["job", "tbl", "key_bytes", "col", "value_text"],
    ),
];

/// The columns that tell bookkeeping table `table` from a table of the user's, if it is one
/// of the tool's names.
pub fn layout_of(table: &str) -> Option<&'static [&'static str]> {
    (LAYOUTS.iter().chain(ENGINE_LAYOUTS))
        .find(|(t, _)| *t == table)
        .map(|(_, cols)| *cols)
}

/// The columns of `wanted` that `have` (a table's columns now) lacks: none, it is ours.
pub fn missing<'a>(wanted: &[&'a str], have: &[String]) -> Vec<&'a str> {
    wanted
        .iter()
        .filter(|w| !have.iter().any(|h| h.eq_ignore_ascii_case(w)))
        .copied()
        .collect()
}

/// The refusal of bookkeeping table `table`, which exists and lacks `missing` of its columns.
pub fn refusal(schema: &str, table: &str, missing: &[&str]) -> String {
    let t = quote::table(schema, table);
    format!(
        "table {t} exists and was not created by myrecode (it lacks the column(s) {} myrecode's own has; myrecode keeps its bookkeeping under that name). \
         Nothing was changed. Fix: rename it (RENAME TABLE {t} TO {}), then run again",
        missing.join(", "),
        quote::table(schema, &format!("{table}_mine"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_lacking_a_first_release_column_is_not_ours() {
        let have: Vec<String> = ["JOB", "note"].map(String::from).to_vec();
        assert_eq!(
            missing(&["job", "command", "at"], &have),
            vec!["command", "at"]
        );
        let ours: Vec<String> = ["job", "command", "at", "waiting"]
            .map(String::from)
            .to_vec();
        assert!(missing(&["job", "command", "at"], &ours).is_empty());
        assert_eq!(
            refusal("s`", "_myrecode_control", &["at"]),
            "table `s```.`_myrecode_control` exists and was not created by myrecode (it lacks the column(s) at myrecode's own has; myrecode keeps its bookkeeping under that name). \
             Nothing was changed. Fix: rename it (RENAME TABLE `s```.`_myrecode_control` TO `s```.`_myrecode_control_mine`), then run again"
        );
        assert!(LAYOUTS.iter().all(|(t, _)| t.starts_with("_myrecode_")));
    }
}

//! Names of the objects a copy creates beside a table, and the order the cut-over needs them in. Pure.

use crate::bookkeeping::checkpoint;

/// Names of the objects a copy creates beside table `t`, each at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The shadow table, `<t>_myrecode_new`.
    pub shadow: String,
    /// The original after cut-over (and the sentry during it), `<t>_myrecode_old`.
    pub old: String,
    /// The change log, `<t>_myrecode_log`.
    pub log: String,
    /// The change log's spare, `<t>_myrecode_log2`: a cut-over that closes the table drops
    /// its drained log under the lock, and its rename brings the spare back as the log.
    pub spare_log: String,
    /// Triggers: after insert, after update, after delete.
    pub triggers: [String; 3],
    /// Triggers on a table at the head of cascades logging the rows they change in the job's
    /// tables: before update, before delete; each event has two names, so a stale trigger is
    /// replaced by one under the other name before it is dropped (never a moment without one).
    pub cascade: [[String; 2]; 2],
    /// The bridge's triggers (before insert, before update), created on the shadow under
    /// the cut-over's lock and carried to the live name by the rename.
    pub bridge: [String; 2],
    /// The back log, `<t>_myrecode_back`: the keys the application writes after the swap,
    /// for `myrecode revert` to bring the kept original up to date from.
    pub back_log: String,
    /// The back log's triggers (after insert, update, delete), put on the shadow under the
    /// cut-over's lock and carried to the live name by the rename.
    pub back_triggers: [String; 3],
}

/// `<base>_myrecode_<suffix>`, at most 64 characters: a long base is cut and a hash of it
/// added, so names stay distinct.
fn fit(base: &str, suffix: &str) -> String {
    let full = format!("{base}_myrecode_{suffix}");
    if full.chars().count() <= 64 {
        return full;
    }
    let hash = &checkpoint::fingerprint(base)[..8];
    let tail = format!("~{hash}_myrecode_{suffix}");
    let head: String = base.chars().take(64 - tail.chars().count()).collect();
    format!("{head}{tail}")
}

/// The names for table `table`; long names are shortened with a hash so they stay unique.
pub fn names(table: &str) -> Names {
    Names {
        shadow: fit(table, "new"),
        old: fit(table, "old"),
        log: fit(table, "log"),
        spare_log: fit(table, "log2"),
        triggers: [fit(table, "ins"), fit(table, "upd"), fit(table, "del")],
        cascade: [
            [fit(table, "bup"), fit(table, "bup2")],
            [fit(table, "bde"), fit(table, "bde2")],
        ],
        bridge: [fit(table, "bri"), fit(table, "bru")],
        back_log: fit(table, "back"),
        back_triggers: [fit(table, "rvi"), fit(table, "rvu"), fit(table, "rvd")],
    }
}

/// Suffixes of the triggers a copy creates: the bridge's two, the change log's three, the
/// four names of the two that log cascaded rows, and the back log's three.
const TRIGGER_SUFFIXES: [&str; 12] = [
    "_myrecode_rvi",
    "_myrecode_rvu",
    "_myrecode_rvd",
    "_myrecode_bri",
    "_myrecode_bru",
    "_myrecode_ins",
    "_myrecode_upd",
    "_myrecode_del",
    "_myrecode_bup",
    "_myrecode_bde",
    "_myrecode_bup2",
    "_myrecode_bde2",
];

/// Whether trigger `name` is one a copy creates (not the application's own).
pub fn is_copy_trigger(name: &str) -> bool {
    TRIGGER_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Whether `name` sorts after `table` the way the server orders metadata locks (bytes, a
/// prefix first; lower-cased too, for servers with `lower_case_table_names`).
pub fn sorts_after(table: &str, name: &str) -> bool {
    name.as_bytes() > table.as_bytes()
        && name.to_lowercase().as_bytes() > table.to_lowercase().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_in_64_characters_stay_distinct_and_sort_after_the_table() {
        let n = names("posts");
        assert_eq!(n.shadow, "posts_myrecode_new");
        assert_eq!(n.old, "posts_myrecode_old");
        assert_eq!(n.log, "posts_myrecode_log");
        assert_eq!(
            n.cascade,
            [
                ["posts_myrecode_bup", "posts_myrecode_bup2"],
                ["posts_myrecode_bde", "posts_myrecode_bde2"]
            ]
        );
        assert!(sorts_after("posts", &n.shadow) && sorts_after("posts", &n.old));
        // A name that sorts before the table is what let writes slip past the rename.
        assert!(!sorts_after("posts", "_posts_myrecode_new"));
        let long = "ы".repeat(64);
        let n = names(&long);
        for s in [&n.shadow, &n.old, &n.log, &n.triggers[0], &n.cascade[1][1]] {
            assert!(s.chars().count() <= 64, "{s}");
        }
        assert_ne!(n.shadow, names(&"ы".repeat(63)).shadow);
        assert!(n.cascade.iter().flatten().all(|c| is_copy_trigger(c)));
        assert!(is_copy_trigger("posts_myrecode_bde2") && !is_copy_trigger("audit_bup"));
        assert!(n.back_triggers.iter().all(|c| is_copy_trigger(c)));
        assert_eq!(names("posts").back_log, "posts_myrecode_back");
        let ascii_long = "a".repeat(60);
        assert!(sorts_after(&ascii_long, &names(&ascii_long).shadow));
    }
}

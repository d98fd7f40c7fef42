//! The bridge's statements (pure, golden tests). The bridge keeps an unchanged legacy
//! application working through the switch: its tables latin1 holding legacy bytes (cp1251,
//! say), its sessions talking latin1 because it declares no charset.
//!
//! * `init_connect` gets one more statement ([`segment`]), which sets the session to the
//!   legacy charset when, at login, the session talks latin1, its default database is the
//!   job's schema, its user is one of the application's, and a job column (the probe) is
//!   utf8mb4: the probe flips with the cut-over's `RENAME`, so the bridge turns on at the
//!   instant of the swap and not before. It never fails a login (a failing `init_connect`
//!   disconnects the client): it only reads `information_schema` (NULL where the user sees
//!   nothing) and assigns session variables from `IF`s. It runs for no session of a user
//!   with SUPER or CONNECTION ADMIN (the server's rule), which is why the job's own
//!   sessions, and such users of the application, are never bridged.
//! * Each copied table gets two `BEFORE` triggers ([`trigger_sql`]), created on its shadow
//!   under the cut-over's lock and carried to the live name by the rename: for a statement
//!   of one of the application's users whose `@@character_set_results` is latin1 (a session
//!   opened before the swap: inside a trigger `@@character_set_client` is the trigger's own,
//!   `@@character_set_results` the caller's), each job column's new text is read back into
//!   the bytes the client sent and those read as the legacy charset. A utf8mb4 client, a
//!   bridged one (its results are the legacy charset) and the job's own sessions (utf8mb4)
//!   pass through untouched.

use crate::db::quote;

/// What one job's bridge is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    /// The job's schema.
    pub schema: String,
    /// The legacy charset bridged sessions talk (server name: cp1251, koi8r, ...).
    pub legacy: String,
    /// The application's user names (empty: every user without SUPER on the schema).
    pub users: Vec<String>,
    /// The probe: a copied table and one of its job columns, utf8mb4 once swapped.
    pub probe: (String, String),
}

/// `SUBSTRING_INDEX(USER(), '@', 1) IN (...)` for the application's users, or `None`.
fn users_condition(users: &[String]) -> Option<String> {
    (!users.is_empty()).then(|| {
        let list: Vec<String> = users.iter().map(|u| quote::literal(u)).collect();
        format!("SUBSTRING_INDEX(USER(), '@', 1) IN ({})", list.join(", "))
    })
}

/// The named lock the cut-over's renaming connection holds from before its lock until its
/// rename is done (released with the connection if the run dies): a bridged login waits
/// for it, so a session opening during the cut-over's pause is bridged by what the rename
/// leaves, not by what was before it.
pub fn lock_name(schema: &str) -> String {
    format!(
        "myrecode_bridge_{}",
        &crate::bookkeeping::checkpoint::fingerprint(schema)[..16]
    )
}

/// The statement the bridge adds to `init_connect`: a wait for the cut-over's pause (only
/// for the sessions it may bridge; `GET_LOCK` gives up after 5 s and never fails), then the
/// switch. Every assignment's value is computed
/// before any is made (the server checks all of a `SET` first), and all read only
/// `@@character_set_results`, set last, so the order does not matter anyway.
pub fn segment(b: &Bridge) -> String {
    let mut cond = vec![
        "@@session.character_set_results = 'latin1'".to_string(),
        "@@session.character_set_client = 'latin1'".to_string(),
        format!("DATABASE() = {}", quote::literal(&b.schema)),
    ];
    cond.extend(users_condition(&b.users));
    let lock = quote::literal(&lock_name(&b.schema));
    let wait = format!(
        "DO IF({}, GET_LOCK({lock}, 5) + RELEASE_LOCK({lock}), 0)",
        cond.join(" AND ")
    );
    cond.push(format!(
        "(SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND COLUMN_NAME = {}) = 'utf8mb4'",
        quote::literal(&b.schema),
        quote::literal(&b.probe.0),
        quote::literal(&b.probe.1)
    ));
    let cond = cond.join(" AND ");
    let legacy = quote::literal(&b.legacy);
    let set: Vec<String> = ["client", "connection", "results"]
        .iter()
        .map(|v| {
            format!(
                "@@session.character_set_{v} = IF({cond}, {legacy}, @@session.character_set_{v})"
            )
        })
        .collect();
    format!("{wait};SET {}", set.join(", "))
}

/// `init_connect` with `ours` added after what it holds (kept as it is); unchanged when it
/// holds `ours` already.
pub fn compose(existing: &str, ours: &str) -> String {
    if existing.contains(ours) {
        return existing.to_string();
    }
    let kept = existing.trim_end().trim_end_matches(';').trim_end();
    if kept.is_empty() {
        ours.to_string()
    } else {
        format!("{kept};{ours}")
    }
}

/// `init_connect` without `ours` (whatever else it holds kept as it is).
pub fn without(existing: &str, ours: &str) -> String {
    for cut in [format!(";{ours}"), format!("{ours};"), ours.to_string()] {
        if let Some(i) = existing.find(&cut) {
            return format!("{}{}", &existing[..i], &existing[i + cut.len()..]);
        }
    }
    existing.to_string()
}

/// The bridge's `BEFORE INSERT` (`update`: `BEFORE UPDATE`) trigger `name` on `table`,
/// reading `columns` as the legacy charset for a latin1 statement of the application. An
/// update converts only the columns it changed: a latin1 statement that leaves a column
/// alone must not read its UTF-8 as latin1 bytes.
pub fn trigger_sql(
    b: &Bridge,
    table: &str,
    name: &str,
    update: bool,
    columns: &[String],
) -> String {
    let mut cond = vec!["@@session.character_set_results = 'latin1'".to_string()];
    cond.extend(users_condition(&b.users));
    let legacy = &b.legacy;
    let sets: Vec<String> = columns
        .iter()
        .map(|c| {
            let c = quote::ident(c);
            let set = format!(
                "SET NEW.{c} = CONVERT(CAST(CONVERT(NEW.{c} USING latin1) AS BINARY) USING {legacy});"
            );
            if update {
                format!("IF NOT (CAST(NEW.{c} AS BINARY) <=> CAST(OLD.{c} AS BINARY)) THEN {set} END IF;")
            } else {
                set
            }
        })
        .collect();
    format!(
        "CREATE TRIGGER {} BEFORE {} ON {} FOR EACH ROW BEGIN IF {} THEN {} END IF; END",
        quote::table(&b.schema, name),
        if update { "UPDATE" } else { "INSERT" },
        quote::table(&b.schema, table),
        cond.join(" AND "),
        sets.join(" ")
    )
}

/// The bridge's record, one row per job: what it added to `init_connect` (so `cleanup`
/// takes out exactly that), and the last session id at the swap.
pub fn record_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL PRIMARY KEY, segment TEXT NOT NULL, \
         legacy VARCHAR(32) NOT NULL, users TEXT NOT NULL, swap_mark BIGINT UNSIGNED NULL, \
         removed TINYINT NOT NULL DEFAULT 0, installed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) \
         ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='myrecode bridge'",
        quote::table(schema, crate::bookkeeping::tables::BRIDGE)
    )
}

/// Live sessions of the application on the schema opened at or before session id `mark`
/// (all when NULL) and after it, for `status` (bound: schema, mark, mark).
pub fn sessions_sql(users: &[String]) -> String {
    let mut cond = vec![
        "DB = ?".to_string(),
        "ID <> CONNECTION_ID()".to_string(),
        "COMMAND NOT IN ('Daemon', 'Binlog Dump', 'Killed')".to_string(),
    ];
    match users_condition(users) {
        Some(u) => cond.push(u.replace("SUBSTRING_INDEX(USER(), '@', 1)", "USER")),
        None => cond.push("USER <> SUBSTRING_INDEX(CURRENT_USER(), '@', 1)".to_string()),
    }
    format!(
        "SELECT CAST(COALESCE(SUM(? IS NULL OR ID <= ?), 0) AS SIGNED), CAST(COALESCE(SUM(? IS NOT NULL AND ID > ?), 0) AS SIGNED) \
         FROM information_schema.PROCESSLIST WHERE {}",
        cond.join(" AND ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shop() -> Bridge {
        Bridge {
            schema: "shop".into(),
            legacy: "cp1251".into(),
            users: vec!["app".into(), "o'brien".into()],
            probe: ("posts".into(), "title".into()),
        }
    }

    #[test]
    fn the_init_connect_segment_is_golden() {
        let cond = "@@session.character_set_results = 'latin1' AND @@session.character_set_client = 'latin1' AND DATABASE() = 'shop' \
             AND SUBSTRING_INDEX(USER(), '@', 1) IN ('app', 'o''brien') AND (SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'title') = 'utf8mb4'";
        let lock = lock_name("shop");
        assert!(lock.starts_with("myrecode_bridge_") && lock.len() == 32);
        let wait = "@@session.character_set_results = 'latin1' AND @@session.character_set_client = 'latin1' AND DATABASE() = 'shop' \
             AND SUBSTRING_INDEX(USER(), '@', 1) IN ('app', 'o''brien')";
        assert_eq!(
            segment(&shop()),
            format!(
                "DO IF({wait}, GET_LOCK('{lock}', 5) + RELEASE_LOCK('{lock}'), 0);SET @@session.character_set_client = IF({cond}, 'cp1251', @@session.character_set_client), \
                 @@session.character_set_connection = IF({cond}, 'cp1251', @@session.character_set_connection), \
                 @@session.character_set_results = IF({cond}, 'cp1251', @@session.character_set_results)"
            )
        );
        let mut b = shop();
        b.users.clear();
        assert!(!segment(&b).contains("USER()"));
    }

    #[test]
    fn init_connect_keeps_what_it_held_and_loses_only_ours() {
        let ours = segment(&shop());
        assert_eq!(compose("", &ours), ours);
        let theirs = "SET @audit = 1;";
        let both = compose(theirs, &ours);
        assert_eq!(both, format!("SET @audit = 1;{ours}"));
        assert_eq!(compose(&both, &ours), both, "installed once");
        assert_eq!(without(&both, &ours), "SET @audit = 1");
        assert_eq!(without(&ours, &ours), "");
        assert_eq!(without(&format!("{ours};SET @x = 2"), &ours), "SET @x = 2");
        assert_eq!(without(theirs, &ours), theirs);
    }

    #[test]
    fn the_triggers_are_golden() {
        let cols = vec!["title".to_string(), "bo`dy".to_string()];
        assert_eq!(
            trigger_sql(&shop(), "posts_myrecode_new", "posts_myrecode_bri", false, &cols),
            "CREATE TRIGGER `shop`.`posts_myrecode_bri` BEFORE INSERT ON `shop`.`posts_myrecode_new` FOR EACH ROW BEGIN \
             IF @@session.character_set_results = 'latin1' AND SUBSTRING_INDEX(USER(), '@', 1) IN ('app', 'o''brien') THEN \
             SET NEW.`title` = CONVERT(CAST(CONVERT(NEW.`title` USING latin1) AS BINARY) USING cp1251); \
             SET NEW.`bo``dy` = CONVERT(CAST(CONVERT(NEW.`bo``dy` USING latin1) AS BINARY) USING cp1251); END IF; END"
        );
        let upd = trigger_sql(
            &shop(),
            "posts_myrecode_new",
            "posts_myrecode_bru",
            true,
            &cols[..1],
        );
        assert!(upd.contains("BEFORE UPDATE"));
        assert!(upd.contains(
            "IF NOT (CAST(NEW.`title` AS BINARY) <=> CAST(OLD.`title` AS BINARY)) THEN SET NEW.`title` = CONVERT(CAST(CONVERT(NEW.`title` USING latin1) AS BINARY) USING cp1251); END IF;"
        ), "{upd}");
    }

    #[test]
    fn sessions_are_counted_for_the_applications_users() {
        let s = sessions_sql(&["app".into()]);
        assert!(s.contains("USER IN ('app')"), "{s}");
        assert_eq!(s.matches('?').count(), 5);
        assert!(sessions_sql(&[]).contains("USER <> SUBSTRING_INDEX(CURRENT_USER(), '@', 1)"));
    }
}

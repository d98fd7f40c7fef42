//! The cut-over's statements, built by pure functions (golden tests below): the sentry, the
//! lock of every table the drain writes, the marked rename, and the process-list look-ups that
//! tell a queued rename.

use crate::bookkeeping::checkpoint::{CHECKPOINT, QUARANTINE};
use crate::bookkeeping::names::Names;
use crate::db::quote;
use crate::engine::copy::catalog::SENTRY_COMMENT;
use crate::engine::copy::setup::sql::log_ddl;
use crate::engine::copy::setup::sql::{GATE, GATE_SWAP};

/// Marks our statements in the process list, so a rerun can find a rename left queued.
pub const MARK: &str = "/* myrecode cut-over */";
/// This connection's id, for the other connections to watch it.
pub const CONNECTION_ID_SQL: &str = "SELECT CONNECTION_ID()";
/// With autocommit off, `COMMIT` ends each drain chunk without releasing the table locks.
pub const AUTOCOMMIT_OFF: &str = "SET autocommit = 0";
/// Ends a drain chunk's transaction (the table locks stay).
pub const COMMIT: &str = "COMMIT";

/// Other connections' statements carrying [`MARK`] (`?` schema, `?` [`mark_pattern`]): a
/// rename an earlier run left queued. The catalog's `ID` is a signed `BIGINT` on MariaDB,
/// unsigned on MySQL: cast, it reads alike on both.
pub const MARKED_SQL: &str = "SELECT CAST(ID AS UNSIGNED) FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE ? AND ID <> CONNECTION_ID()";

/// Whether connection `?` waits for a metadata lock: the rename queued behind our lock.
pub const RENAME_QUEUED_SQL: &str = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE LIKE '%metadata lock%'";

/// The `LIKE` pattern [`MARKED_SQL`] binds: the text of [`MARK`] anywhere in a statement.
pub fn mark_pattern() -> String {
    format!(
        "%{}%",
        MARK.trim_start_matches("/* ").trim_end_matches(" */")
    )
}

/// The sentry holding the old table's name, so a rename that runs before the drain is done fails.
pub fn sentry_ddl(schema: &str, old: &str) -> String {
    format!(
        "CREATE TABLE {} (sentry TINYINT) ENGINE=InnoDB COMMENT='{SENTRY_COMMENT}'",
        quote::table(schema, old)
    )
}

/// Locks every table the drain under the cut-over lock touches, for every table of the
/// cut-over at once: each table, its shadow, its sentry and its log, and the bookkeeping tables.
/// `also`: tables outside the cut-over whose foreign keys move (schema, table).
pub fn cutover_lock_sql(schema: &str, tables: &[(&str, &Names)], also: &[(&str, &str)]) -> String {
    let mut locks = Vec::new();
    for (table, n) in tables {
        for name in [*table, &n.shadow, &n.old, &n.log] {
            locks.push(format!("{} WRITE", quote::table(schema, name)));
        }
    }
    for (s, t) in also {
        locks.push(format!("{} WRITE", quote::table(s, t)));
    }
    for name in [CHECKPOINT, QUARANTINE] {
        locks.push(format!("{} WRITE", quote::table(schema, name)));
    }
    format!("LOCK TABLES {}", locks.join(", "))
}

/// Drops the sentries of the cut-over's tables, in one statement.
pub fn drop_sentries_sql(schema: &str, tables: &[(&str, &Names)]) -> String {
    let olds: Vec<String> = tables
        .iter()
        .map(|(_, n)| quote::table(schema, &n.old))
        .collect();
    format!("DROP TABLE {}", olds.join(", "))
}

/// Carries the table's next `AUTO_INCREMENT` value `next` over to the shadow.
pub fn auto_increment_sql(schema: &str, shadow: &str, next: u64) -> String {
    format!(
        "ALTER TABLE {} AUTO_INCREMENT = {next}",
        quote::table(schema, shadow)
    )
}

/// The swap of every table of the cut-over, in one statement (all or none), marked so a rerun
/// finds it queued: each table becomes its old one, each shadow the table. It first renames
/// the gate away and back: the gate sorts first, so the rename holds it before it waits for
/// any table, and every application write (whose triggers name the gate) waits behind it.
/// `closed`: the lock connection dropped the logs once this rename queued, and the rename
/// brings each spare back as the log, with the swap or not at all.
pub fn rename_sql(schema: &str, tables: &[(&str, &Names)], closed: bool) -> String {
    let gate = quote::table(schema, GATE);
    let swap = quote::table(schema, GATE_SWAP);
    let mut pairs = vec![format!("{gate} TO {swap}"), format!("{swap} TO {gate}")];
    for (table, n) in tables {
        if closed {
            pairs.push(format!(
                "{} TO {}",
                quote::table(schema, &n.spare_log),
                quote::table(schema, &n.log)
            ));
        }
        let t = quote::table(schema, table);
        pairs.push(format!("{t} TO {}", quote::table(schema, &n.old)));
        pairs.push(format!("{} TO {t}", quote::table(schema, &n.shadow)));
    }
    format!("RENAME {MARK} TABLE {}", pairs.join(", "))
}

/// Creates the change log's spare (see [`Names::spare_log`]) if it is missing.
pub fn spare_log_ddl(schema: &str, n: &Names) -> String {
    log_ddl(schema, n).replacen(
        &quote::table(schema, &n.log),
        &quote::table(schema, &n.spare_log),
        1,
    )
}

/// Closes the tables of a cut-over under its lock: their drained logs go, so until the
/// rename (or until a run settles a rename that failed) every write to them fails, its
/// trigger finding no log (1146), instead of going through a half-moved schema.
pub fn close_logs_sql(schema: &str, tables: &[&Names]) -> String {
    let logs: Vec<String> = tables
        .iter()
        .map(|n| quote::table(schema, &n.log))
        .collect();
    format!("DROP TABLE {}", logs.join(", "))
}

/// Opens a table a cut-over closed and did not rename: the spare takes the log's name.
pub fn reopen_log_sql(schema: &str, n: &Names) -> String {
    format!(
        "RENAME TABLE {} TO {}",
        quote::table(schema, &n.spare_log),
        quote::table(schema, &n.log)
    )
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeping::names::names;

    #[test]
    fn cut_over_statements_quote_every_name() {
        let n = names("a`b c");
        let m = names("ё");
        let both = [("a`b c", &n), ("ё", &m)];
        assert_eq!(
            cutover_lock_sql("база", &both, &[("b", "c")]),
            "LOCK TABLES `база`.`a``b c` WRITE, \
             `база`.`a``b c_myrecode_new` WRITE, `база`.`a``b c_myrecode_old` WRITE, \
             `база`.`a``b c_myrecode_log` WRITE, `база`.`ё` WRITE, `база`.`ё_myrecode_new` WRITE, \
             `база`.`ё_myrecode_old` WRITE, `база`.`ё_myrecode_log` WRITE, `b`.`c` WRITE, \
             `база`.`_myrecode_checkpoint` WRITE, `база`.`_myrecode_quarantine` WRITE"
        );
        assert_eq!(
            rename_sql("база", &both, false),
            "RENAME /* myrecode cut-over */ TABLE `база`.`!myrecode_gate` TO `база`.`!myrecode_gate~`, \
             `база`.`!myrecode_gate~` TO `база`.`!myrecode_gate`, \
             `база`.`a``b c` TO `база`.`a``b c_myrecode_old`, `база`.`a``b c_myrecode_new` TO `база`.`a``b c`, \
             `база`.`ё` TO `база`.`ё_myrecode_old`, `база`.`ё_myrecode_new` TO `база`.`ё`"
        );
        assert_eq!(
            rename_sql("s", &both[..1], true),
            "RENAME /* myrecode cut-over */ TABLE `s`.`!myrecode_gate` TO `s`.`!myrecode_gate~`, \
             `s`.`!myrecode_gate~` TO `s`.`!myrecode_gate`, \
             `s`.`a``b c_myrecode_log2` TO `s`.`a``b c_myrecode_log`, \
             `s`.`a``b c` TO `s`.`a``b c_myrecode_old`, `s`.`a``b c_myrecode_new` TO `s`.`a``b c`"
        );
        assert_eq!(
            drop_sentries_sql("s", &both[..1]),
            "DROP TABLE `s`.`a``b c_myrecode_old`"
        );
        assert_eq!(
            sentry_ddl("s", "order_myrecode_old"),
            "CREATE TABLE `s`.`order_myrecode_old` (sentry TINYINT) ENGINE=InnoDB COMMENT='myrecode cut-over sentry'"
        );
        assert_eq!(
            auto_increment_sql("s", "таблица_myrecode_new", 4711),
            "ALTER TABLE `s`.`таблица_myrecode_new` AUTO_INCREMENT = 4711"
        );
    }

    #[test]
    fn a_queued_rename_is_found_by_its_mark() {
        assert_eq!(mark_pattern(), "%myrecode cut-over%");
        assert!(rename_sql("s", &[("t", &names("t"))], false)
            .contains(&mark_pattern().replace('%', "")));
    }

    #[test]
    fn a_closed_tables_log_goes_and_its_spare_comes_back() {
        let n = crate::bookkeeping::names::names("t");
        assert_eq!(
            spare_log_ddl("s", &n),
            "CREATE TABLE IF NOT EXISTS `s`.`t_myrecode_log2` (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
             key_bytes BLOB NOT NULL) ENGINE=InnoDB COMMENT='myrecode change log'"
        );
        let m = crate::bookkeeping::names::names("ё`");
        assert_eq!(
            close_logs_sql("s", &[&n, &m]),
            "DROP TABLE `s`.`t_myrecode_log`, `s`.`ё``_myrecode_log`"
        );
        assert_eq!(
            reopen_log_sql("s", &m),
            "RENAME TABLE `s`.`ё``_myrecode_log2` TO `s`.`ё``_myrecode_log`"
        );
    }
}

//! The cut-over's statements, built by pure functions (golden tests below): the sentry, the
//! lock of every table the drain writes, the marked rename, and the process-list look-ups that
//! tell a queued rename.

use super::names::Names;
use super::sql::SRC;
use crate::db::quote;
use crate::engine::checkpoint::{CHECKPOINT, QUARANTINE};

/// Marks our statements in the process list, so a rerun can find a rename left queued.
pub const MARK: &str = "/* myrecode cut-over */";
/// Comment of the sentry table, told apart from a real kept original by it.
pub const SENTRY_COMMENT: &str = "myrecode cut-over sentry";
/// This connection's id, for the other connections to watch it.
pub const CONNECTION_ID_SQL: &str = "SELECT CONNECTION_ID()";
/// With autocommit off, `COMMIT` ends each drain chunk without releasing the table locks.
pub const AUTOCOMMIT_OFF: &str = "SET autocommit = 0";
/// Ends a drain chunk's transaction (the table locks stay).
pub const COMMIT: &str = "COMMIT";

/// Other connections' statements carrying [`MARK`] (`?` schema, `?` [`mark_pattern`]): a
/// rename an earlier run left queued.
pub const MARKED_SQL: &str = "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE ? AND ID <> CONNECTION_ID()";

/// Whether connection `?` waits for a metadata lock: the rename queued behind our lock.
pub const RENAME_QUEUED_SQL: &str = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE LIKE '%metadata lock%'";

/// The `LIKE` pattern [`MARKED_SQL`] binds: the text of [`MARK`] anywhere in a statement.
pub fn mark_pattern() -> String {
    format!(
        "%{}%",
        MARK.trim_start_matches("/* ").trim_end_matches(" */")
    )
}

/// Stops the statement connection `id` runs (the connection itself lives on).
pub fn kill_query_sql(id: u64) -> String {
    format!("KILL QUERY {id}")
}

/// The sentry holding the old table's name, so a rename that runs before the drain is done fails.
pub fn sentry_ddl(schema: &str, old: &str) -> String {
    format!(
        "CREATE TABLE {} (sentry TINYINT) ENGINE=InnoDB COMMENT='{SENTRY_COMMENT}'",
        quote::table(schema, old)
    )
}

/// Locks every table the drain under the cut-over lock touches: the table (and under the
/// copy's alias, read), the shadow, the sentry, the log and the bookkeeping tables.
pub fn cutover_lock_sql(schema: &str, table: &str, n: &Names) -> String {
    let t = quote::table(schema, table);
    format!(
        "LOCK TABLES {t} WRITE, {t} AS {SRC} READ, {} WRITE, {} WRITE, {} WRITE, {} WRITE, {} WRITE",
        quote::table(schema, &n.shadow),
        quote::table(schema, &n.old),
        quote::table(schema, &n.log),
        quote::table(schema, CHECKPOINT),
        quote::table(schema, QUARANTINE)
    )
}

/// `SHOW CREATE TABLE`, for the table's next `AUTO_INCREMENT`.
pub fn show_create_sql(schema: &str, table: &str) -> String {
    format!("SHOW CREATE TABLE {}", quote::table(schema, table))
}

/// Carries the table's next `AUTO_INCREMENT` value `next` over to the shadow.
pub fn auto_increment_sql(schema: &str, shadow: &str, next: u64) -> String {
    format!(
        "ALTER TABLE {} AUTO_INCREMENT = {next}",
        quote::table(schema, shadow)
    )
}

/// The swap, marked so a rerun finds it queued: the table becomes the old one, the shadow the table.
pub fn rename_sql(schema: &str, table: &str, n: &Names) -> String {
    let t = quote::table(schema, table);
    format!(
        "RENAME {MARK} TABLE {t} TO {}, {} TO {t}",
        quote::table(schema, &n.old),
        quote::table(schema, &n.shadow)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::copy::names;

    #[test]
    fn cut_over_statements_quote_every_name() {
        let n = names("a`b c");
        assert_eq!(
            cutover_lock_sql("база", "a`b c", &n),
            "LOCK TABLES `база`.`a``b c` WRITE, `база`.`a``b c` AS _myrecode_src READ, \
             `база`.`a``b c_myrecode_new` WRITE, `база`.`a``b c_myrecode_old` WRITE, \
             `база`.`a``b c_myrecode_log` WRITE, `база`.`_myrecode_checkpoint` WRITE, \
             `база`.`_myrecode_quarantine` WRITE"
        );
        assert_eq!(
            rename_sql("база", "a`b c", &n),
            "RENAME /* myrecode cut-over */ TABLE `база`.`a``b c` TO `база`.`a``b c_myrecode_old`, \
             `база`.`a``b c_myrecode_new` TO `база`.`a``b c`"
        );
        assert_eq!(
            sentry_ddl("s", "order_myrecode_old"),
            "CREATE TABLE `s`.`order_myrecode_old` (sentry TINYINT) ENGINE=InnoDB COMMENT='myrecode cut-over sentry'"
        );
        assert_eq!(
            show_create_sql("s", "order"),
            "SHOW CREATE TABLE `s`.`order`"
        );
        assert_eq!(
            auto_increment_sql("s", "таблица_myrecode_new", 4711),
            "ALTER TABLE `s`.`таблица_myrecode_new` AUTO_INCREMENT = 4711"
        );
        assert_eq!(kill_query_sql(42), "KILL QUERY 42");
    }

    #[test]
    fn a_queued_rename_is_found_by_its_mark() {
        assert_eq!(mark_pattern(), "%myrecode cut-over%");
        assert!(rename_sql("s", "t", &names("t")).contains(&mark_pattern().replace('%', "")));
    }
}

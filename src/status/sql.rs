//! The statements `status` reads with: only `SELECT`s, names quoted, values bound. Columns
//! a job begun by an older myrecode has not got yet are read as `NULL` (or `''`), never
//! added: `status` writes nothing.

use crate::bookkeeping::checkpoint::{CHECKPOINT, QUARANTINE};
use crate::bookkeeping::control_table::CONTROL;
use crate::db::quote;

/// The tables among `n` names (`?` schema, then the `?` names) that exist, with the server's
/// row estimate: name and `TABLE_ROWS`.
pub fn tables_sql(n: usize) -> String {
    format!(
        "SELECT CAST(TABLE_NAME AS CHAR), TABLE_ROWS FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ({})",
        vec!["?"; n.max(1)].join(", ")
    )
}

/// How many values of a job's table (`?` job, `?` table) are listed undecided.
pub fn listed_sql(schema: &str) -> String {
    format!(
        "SELECT COUNT(*) FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, QUARANTINE)
    )
}

/// `column` if the table `has` it, else `absent`.
fn or<'a>(has: &[String], column: &str, present: &'a str, absent: &'a str) -> &'a str {
    if has.iter().any(|h| h.eq_ignore_ascii_case(column)) {
        present
    } else {
        absent
    }
}

/// A job's checkpoint rows, `?` job: table, done, rows read, changed, quarantined,
/// conflicted, phase, rows per second, when saved, microseconds since (by the server's clock,
/// so a status host's clock does not matter). `has`: the checkpoint table's columns.
pub fn checkpoints_sql(schema: &str, has: &[String]) -> String {
    format!(
        "SELECT CAST(tbl AS CHAR), done, rows_read, rows_changed, rows_quarantined, rows_conflicted, {}, {}, {}, {} \
         FROM {} WHERE job = ?",
        or(has, "phase", "CAST(phase AS CHAR)", "''"),
        or(has, "rows_per_sec", "rows_per_sec", "NULL"),
        or(has, "updated_at", "CAST(updated_at AS CHAR)", "NULL"),
        or(
            has,
            "updated_at",
            "TIMESTAMPDIFF(MICROSECOND, updated_at, NOW(6))",
            "NULL"
        ),
        quote::table(schema, CHECKPOINT)
    )
}

/// A job's control row, `?` job: command, why the job waits, microseconds since, what the
/// command names. `has`: the control table's columns.
pub fn control_sql(schema: &str, has: &[String]) -> String {
    format!(
        "SELECT CAST(command AS CHAR), {}, {}, {} FROM {} WHERE job = ?",
        or(has, "waiting", "CAST(waiting AS CHAR)", "NULL"),
        or(
            has,
            "waiting_since",
            "TIMESTAMPDIFF(MICROSECOND, waiting_since, NOW(6))",
            "NULL"
        ),
        or(has, "argument", "CAST(argument AS CHAR)", "NULL"),
        quote::table(schema, CONTROL)
    )
}

/// Makes the session refuse writes: a guard under `status`'s promise to write nothing.
pub const READ_ONLY_SQL: &str = "SET SESSION TRANSACTION READ ONLY";

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn statements_read_what_exists_and_quote_names() {
        assert_eq!(
            tables_sql(3),
            "SELECT CAST(TABLE_NAME AS CHAR), TABLE_ROWS FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?, ?, ?)"
        );
        assert_eq!(
            listed_sql("a`b"),
            "SELECT COUNT(*) FROM `a``b`.`_myrecode_quarantine` WHERE job = ? AND tbl = ?"
        );
        let now = cols(&[
            "job",
            "tbl",
            "phase",
            "updated_at",
            "rows_per_sec",
            "rate_rows",
            "rate_at",
        ]);
        assert_eq!(
            checkpoints_sql("a`b", &now),
            "SELECT CAST(tbl AS CHAR), done, rows_read, rows_changed, rows_quarantined, rows_conflicted, \
             CAST(phase AS CHAR), rows_per_sec, CAST(updated_at AS CHAR), TIMESTAMPDIFF(MICROSECOND, updated_at, NOW(6)) \
             FROM `a``b`.`_myrecode_checkpoint` WHERE job = ?"
        );
        // A checkpoint table from before phases and pace: read as NULLs, never altered.
        assert_eq!(
            checkpoints_sql("s", &cols(&["job", "tbl"])),
            "SELECT CAST(tbl AS CHAR), done, rows_read, rows_changed, rows_quarantined, rows_conflicted, \
             '', NULL, NULL, NULL FROM `s`.`_myrecode_checkpoint` WHERE job = ?"
        );
        assert_eq!(
            control_sql("база", &cols(&["job", "command", "at", "WAITING", "waiting_since", "argument"])),
            "SELECT CAST(command AS CHAR), CAST(waiting AS CHAR), TIMESTAMPDIFF(MICROSECOND, waiting_since, NOW(6)), \
             CAST(argument AS CHAR) FROM `база`.`_myrecode_control` WHERE job = ?"
        );
        assert_eq!(
            control_sql("s", &cols(&["job", "command", "at"])),
            "SELECT CAST(command AS CHAR), NULL, NULL, NULL FROM `s`.`_myrecode_control` WHERE job = ?"
        );
    }
}

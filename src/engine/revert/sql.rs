//! The statements of `revert`, built by pure functions: the back log read and forgotten, a
//! written key brought back into the kept original (its text encoded back by the server into
//! the column's legacy charset), a value the legacy charset cannot hold found and listed, and
//! the swap back.

use crate::bookkeeping::names::Names;
use crate::db::keyset::{equals, KeyColumn};
use crate::db::quote;

/// Where `revert` lists the values the legacy charset cannot hold, by job, table, key and column.
pub const UNREVERTED: &str = "_myrecode_unreverted";

/// A column of the table as `revert` writes it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackColumn {
    /// Its name.
    pub name: String,
    /// The server's name of its legacy charset (`cp1251`) when the job recoded it; `None`:
    /// copied as it is.
    pub legacy: Option<String>,
}

/// The next `limit` keys of the back log, in the order they were written.
pub fn read_back_sql(schema: &str, n: &Names, limit: usize) -> String {
    format!(
        "SELECT id, key_bytes FROM {} ORDER BY id LIMIT {limit}",
        quote::table(schema, &n.back_log)
    )
}

/// The back log's entries up to `?` id, done with.
pub fn forget_back_sql(schema: &str, n: &Names) -> String {
    format!(
        "DELETE FROM {} WHERE id <= ?",
        quote::table(schema, &n.back_log)
    )
}

/// How many keys wait in the back log.
pub fn back_len_sql(schema: &str, n: &Names) -> String {
    format!("SELECT COUNT(*) FROM {}", quote::table(schema, &n.back_log))
}

/// The kept original's row of one key, removed (written back afresh by [`copy_back_sql`] if
/// the live table still has it).
pub fn delete_old_sql(schema: &str, n: &Names, key: &[KeyColumn]) -> String {
    format!(
        "DELETE FROM {} WHERE {}",
        quote::table(schema, &n.old),
        equals(key)
    )
}

/// The live table's row of one key, into the kept original, each recoded column encoded back
/// into its legacy charset by the server. `lossy`: a value of the row was found by
/// [`unreverted_sql`] (and listed): `INSERT IGNORE` lets the server put `?` for what the
/// charset lacks, which strict mode refuses otherwise (1977); only for such a row.
pub fn copy_back_sql(
    schema: &str,
    table: &str,
    n: &Names,
    (columns, lossy): (&[BackColumn], bool),
    key: &[KeyColumn],
) -> String {
    let names: Vec<String> = columns.iter().map(|c| quote::ident(&c.name)).collect();
    let values: Vec<String> = columns.iter().map(back_value).collect();
    format!(
        "INSERT {}INTO {} ({}) SELECT {} FROM {} WHERE {}",
        if lossy { "IGNORE " } else { "" },
        quote::table(schema, &n.old),
        names.join(", "),
        values.join(", "),
        quote::table(schema, table),
        equals(key)
    )
}

/// One column's value as the kept original takes it.
fn back_value(c: &BackColumn) -> String {
    let col = quote::ident(&c.name);
    match &c.legacy {
        Some(cs) => format!("CAST(CONVERT({col} USING {}) AS BINARY)", charset_ident(cs)),
        None => col,
    }
}

/// A charset name as the server's grammar takes it (it is one of ours: letters and digits).
fn charset_ident(cs: &str) -> String {
    cs.chars().filter(|c| c.is_ascii_alphanumeric()).collect()
}

/// One key's live row read once (the table named once: under the swap back's `LOCK TABLES`
/// a second reference would need a lock of its own): for each recoded column, in order,
/// whether its legacy charset cannot hold its text (encoded there and back, it is not what it
/// was; 1 or 0) and the text. With the names of those columns, in that order.
pub fn unreverted_sql(
    schema: &str,
    table: &str,
    columns: &[BackColumn],
    key: &[KeyColumn],
) -> Option<(String, Vec<String>)> {
    let mut names = Vec::new();
    let mut fields = Vec::new();
    for c in columns {
        let Some(legacy) = c.legacy.as_deref() else {
            continue;
        };
        let cs = charset_ident(legacy);
        let col = quote::ident(&c.name);
        fields.push(format!(
            "COALESCE(CONVERT(CONVERT({col} USING {cs}) USING utf8mb4) COLLATE utf8mb4_bin <> CONVERT({col} USING utf8mb4) COLLATE utf8mb4_bin, 0)"
        ));
        fields.push(format!(
            "CAST(CONVERT({col} USING utf8mb4) AS CHAR CHARACTER SET utf8mb4)"
        ));
        names.push(c.name.clone());
    }
    (!names.is_empty()).then(|| {
        (
            format!(
                "SELECT {} FROM {} WHERE {}",
                fields.join(", "),
                quote::table(schema, table),
                equals(key)
            ),
            names,
        )
    })
}

/// The table listing what could not go back.
pub fn unreverted_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, key_bytes BLOB NOT NULL, \
         col VARCHAR(64) NOT NULL, value_text LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, \
         at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB \
         COMMENT='myrecode: values revert could not put back in their legacy charset'",
        quote::table(schema, UNREVERTED)
    )
}

/// What was listed of one key (`?` job, table, key bytes), listed afresh as its row now stands.
pub fn forget_unreverted_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ? AND tbl = ? AND key_bytes = ?",
        quote::table(schema, UNREVERTED)
    )
}

/// One value listed (job, table, key bytes, column, text).
pub fn record_unreverted_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, tbl, key_bytes, col, value_text) VALUES (?, ?, ?, ?, ?)",
        quote::table(schema, UNREVERTED)
    )
}

/// How many values are listed for a job's table (`?` job, `?` table).
pub fn count_unreverted_sql(schema: &str) -> String {
    format!(
        "SELECT COUNT(*) FROM {} WHERE job = ? AND tbl = ?",
        quote::table(schema, UNREVERTED)
    )
}

/// The sentry in the name the live table takes at the swap back (`<t>_myrecode_new`), so a
/// rename left queued by a killed revert can only fail.
pub fn revert_sentry_ddl(schema: &str, n: &Names) -> String {
    crate::engine::copy::cutover::swap_sql::sentry_ddl(schema, &n.shadow)
}

/// Locks what the swap back's drain touches: each live table, its kept original, its back
/// log, and the list of unreverted values.
pub fn revert_lock_sql(schema: &str, tables: &[(&str, &Names)]) -> String {
    let mut locks = Vec::new();
    for (table, n) in tables {
        for name in [*table, &n.old, &n.shadow, &n.back_log] {
            locks.push(format!("{} WRITE", quote::table(schema, name)));
        }
    }
    locks.push(format!("{} WRITE", quote::table(schema, UNREVERTED)));
    format!("LOCK TABLES {}", locks.join(", "))
}

/// Drops the swap back's sentries, in one statement.
pub fn drop_revert_sentries_sql(schema: &str, tables: &[(&str, &Names)]) -> String {
    let sentries: Vec<String> = tables
        .iter()
        .map(|(_, n)| quote::table(schema, &n.shadow))
        .collect();
    format!("DROP TABLE {}", sentries.join(", "))
}

/// The swap back, all tables in one statement: each live (UTF-8) table becomes
/// `<t>_myrecode_new`, each kept original the table again. Marked as the cut-over's rename
/// is, so a rerun finds one a killed revert left queued.
pub fn revert_rename_sql(schema: &str, tables: &[(&str, &Names)]) -> String {
    let mut pairs = Vec::new();
    for (table, n) in tables {
        let t = quote::table(schema, table);
        pairs.push(format!("{t} TO {}", quote::table(schema, &n.shadow)));
        pairs.push(format!("{} TO {t}", quote::table(schema, &n.old)));
    }
    format!(
        "RENAME {} TABLE {}",
        crate::engine::copy::cutover::swap_sql::MARK,
        pairs.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeping::names::names;

    fn cols() -> Vec<BackColumn> {
        vec![
            BackColumn {
                name: "id".into(),
                legacy: None,
            },
            BackColumn {
                name: "ti`tle".into(),
                legacy: Some("cp1251".into()),
            },
        ]
    }

    #[test]
    fn a_written_key_is_brought_back_encoded_in_its_legacy_charset() {
        let n = names("posts");
        let key = [KeyColumn::plain("id")];
        assert_eq!(
            delete_old_sql("s", &n, &key),
            "DELETE FROM `s`.`posts_myrecode_old` WHERE `id` = ?"
        );
        assert_eq!(
            copy_back_sql("s", "posts", &n, (&cols(), false), &key),
            "INSERT INTO `s`.`posts_myrecode_old` (`id`, `ti``tle`) SELECT `id`, CAST(CONVERT(`ti``tle` USING cp1251) AS BINARY) \
             FROM `s`.`posts` WHERE `id` = ?"
        );
        assert!(copy_back_sql("s", "posts", &n, (&cols(), true), &key)
            .starts_with("INSERT IGNORE INTO "));
        assert_eq!(
            read_back_sql("s", &n, 500),
            "SELECT id, key_bytes FROM `s`.`posts_myrecode_back` ORDER BY id LIMIT 500"
        );
        assert_eq!(
            forget_back_sql("s", &n),
            "DELETE FROM `s`.`posts_myrecode_back` WHERE id <= ?"
        );
    }

    #[test]
    fn a_value_its_legacy_charset_cannot_hold_is_asked_for_by_column() {
        let key = [KeyColumn::plain("id")];
        let (sql, names) = unreverted_sql("s", "posts", &cols(), &key).unwrap();
        assert_eq!(
            sql,
            "SELECT COALESCE(CONVERT(CONVERT(`ti``tle` USING cp1251) USING utf8mb4) COLLATE utf8mb4_bin <> CONVERT(`ti``tle` USING utf8mb4) COLLATE utf8mb4_bin, 0), \
             CAST(CONVERT(`ti``tle` USING utf8mb4) AS CHAR CHARACTER SET utf8mb4) FROM `s`.`posts` WHERE `id` = ?"
        );
        assert_eq!(names, ["ti`tle"]);
        // Two recoded columns: still one reference to the table (one lock under LOCK TABLES).
        let mut two = cols();
        two.push(BackColumn {
            name: "body".into(),
            legacy: Some("koi8r".into()),
        });
        let (sql, names) = unreverted_sql("s", "posts", &two, &key).unwrap();
        assert_eq!(sql.matches("`s`.`posts`").count(), 1, "{sql}");
        assert!(sql.contains("CONVERT(`body` USING koi8r)"), "{sql}");
        assert_eq!(names, ["ti`tle", "body"]);
        assert_eq!(
            forget_unreverted_sql("s"),
            "DELETE FROM `s`.`_myrecode_unreverted` WHERE job = ? AND tbl = ? AND key_bytes = ?"
        );
        assert_eq!(unreverted_sql("s", "posts", &cols()[..1], &key), None);
        // A charset name never carries anything but its letters and digits into the statement.
        assert_eq!(charset_ident("cp1251; DROP"), "cp1251DROP");
    }

    #[test]
    fn the_swap_back_is_one_marked_rename_behind_sentries() {
        let (a, b) = (names("a"), names("b"));
        let tables = [("a", &a), ("b", &b)];
        assert_eq!(
            revert_rename_sql("s", &tables),
            "RENAME /* myrecode cut-over */ TABLE `s`.`a` TO `s`.`a_myrecode_new`, `s`.`a_myrecode_old` TO `s`.`a`, \
             `s`.`b` TO `s`.`b_myrecode_new`, `s`.`b_myrecode_old` TO `s`.`b`"
        );
        assert_eq!(
            drop_revert_sentries_sql("s", &tables),
            "DROP TABLE `s`.`a_myrecode_new`, `s`.`b_myrecode_new`"
        );
        assert_eq!(
            revert_lock_sql("s", &tables[..1]),
            "LOCK TABLES `s`.`a` WRITE, `s`.`a_myrecode_old` WRITE, `s`.`a_myrecode_new` WRITE, `s`.`a_myrecode_back` WRITE, \
             `s`.`_myrecode_unreverted` WRITE"
        );
    }
}

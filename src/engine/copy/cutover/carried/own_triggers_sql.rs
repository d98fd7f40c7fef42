//! The tables' own triggers across their cut-over, pure: read from the catalog, recorded,
//! and created again on the shadow under the cut-over lock (the last step before the
//! rename) exactly as defined: body, timing, event, order, definer, `sql_mode` and
//! character set context. The shadow has none of them while rows are copied into it, so
//! they never fire for the tool's own writes; the rename carries them to the live name.

use crate::db::quote;
use crate::db::sqltext::Mode;
use crate::detect::Label;
use crate::engine::copy::catalog::OwnTrigger;

/// The table a trigger (`?` schema, `?` name) is on; no row when there is no such trigger.
pub const TRIGGER_TABLE_SQL: &str = "SELECT CAST(EVENT_OBJECT_TABLE AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME = ?";

/// How a shadow's triggers read their legacy text: the labels of its table's values and the
/// utf8mb4 collation its literals take.
#[derive(Debug, Clone, PartialEq)]
pub struct Recode {
    /// The labels the table's values have, most trusted first.
    pub labels: Vec<Label>,
    /// The collation the recoded body's strings take (`collation_connection`).
    pub collation: String,
}

/// The trigger as it is sent again. A body written under a non-UTF-8 client holding
/// non-ASCII text cannot be sent in that client charset from this UTF-8 connection; it is
/// sent as UTF-8 under `character_set_client` utf8mb4: the same characters, so on the
/// original table it does what it did. On a shadow (`recode`), its string literals are also
/// read as the table's values are, so it writes and compares UTF-8 text there.
pub fn as_sent(t: &OwnTrigger, recode: Option<&Recode>) -> Result<OwnTrigger, String> {
    if t.portable() {
        return Ok(t.clone());
    }
    let mut sent = t.clone();
    sent.charset_client = "utf8mb4".into();
    sent.collation_connection = "utf8mb4_general_ci".into();
    if let Some(r) = recode {
        sent.body = crate::recode::sql_text::recode_sql(
            &t.body,
            Some(&t.charset_client),
            &r.labels,
            Mode::from_sql_mode(&t.sql_mode),
        )
        .map_err(|e| format!("trigger `{}`: {e}", t.name))?;
        sent.collation_connection = r.collation.clone();
    }
    Ok(sent)
}

/// `DEFINER =` clause of a `user@host` definer (the last `@` splits: user names may hold one).
pub fn definer_clause(definer: &str) -> String {
    match definer.rsplit_once('@') {
        Some((user, host)) => format!(
            "DEFINER = {}@{}",
            quote::literal(user),
            quote::literal(host)
        ),
        None => String::new(),
    }
}

/// The session settings a trigger is created under: its own `sql_mode` and character set context.
pub fn context_sql(t: &OwnTrigger) -> String {
    session_sql(&t.sql_mode, &t.charset_client, &t.collation_connection)
}

/// The session settings an object is created under: `sql_mode`, client charset, collation.
pub fn session_sql(sql_mode: &str, charset_client: &str, collation: &str) -> String {
    format!(
        "SET SESSION sql_mode = {}, character_set_client = {}, collation_connection = {}",
        quote::literal(sql_mode),
        quote::literal(charset_client),
        quote::literal(collation)
    )
}

/// Keeps this connection's settings, to go back to after creating triggers.
pub const CONTEXT_SAVE_SQL: &str = "SET @myrecode_sql_mode = @@SESSION.sql_mode, @myrecode_cs = @@SESSION.character_set_client, @myrecode_collation = @@SESSION.collation_connection";
/// Back to this connection's own settings after creating triggers.
pub const CONTEXT_RESET_SQL: &str = "SET SESSION sql_mode = @myrecode_sql_mode, character_set_client = @myrecode_cs, collation_connection = @myrecode_collation";

/// Makes `schema` the session's default database, which [`create_sql`] names nothing but.
pub fn use_sql(schema: &str) -> String {
    format!("USE {}", quote::ident(schema))
}

/// `CREATE TRIGGER` of `t` on `table` (the shadow, or the table itself when put back), in the
/// session's default database ([`use_sql`]). Names unqualified, as an application creates
/// them: the server keeps the statement as written, `SHOW CREATE TRIGGER` and mysqldump give
/// it back so, and a schema name in it would send a dump loaded under another name back to
/// the original schema (1359, the trigger exists). The rename rewrites `ON` to the live name.
pub fn create_sql(table: &str, t: &OwnTrigger) -> String {
    format!(
        "CREATE {} TRIGGER {} {} {} ON {} FOR EACH ROW {}",
        definer_clause(&t.definer),
        quote::ident(&t.name),
        t.timing,
        t.event,
        quote::ident(table),
        t.body
    )
}

/// Name of the table recording the triggers a cut-over moves, so a kill between a trigger's
/// drop and its creation on the shadow puts it back.
pub const MOVED_TRIGGERS: &str = "_myrecode_triggers";

/// DDL of [`MOVED_TRIGGERS`].
pub fn record_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL, name VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, \
         event VARCHAR(10) NOT NULL, timing VARCHAR(10) NOT NULL, ord INT NOT NULL, body LONGTEXT NOT NULL, \
         sql_mode TEXT NOT NULL, definer VARCHAR(400) NOT NULL, cs_client VARCHAR(64) NOT NULL, coll VARCHAR(64) NOT NULL, \
         PRIMARY KEY (job, name)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        quote::table(schema, MOVED_TRIGGERS)
    )
}

/// Records one trigger (`?` job, then the fields in [`record_ddl`]'s order).
pub fn record_sql(schema: &str) -> String {
    format!(
        "REPLACE INTO {} (job, name, tbl, event, timing, ord, body, sql_mode, definer, cs_client, coll) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        quote::table(schema, MOVED_TRIGGERS)
    )
}

/// A job's recorded triggers (`?` job), in firing order per table.
pub fn recorded_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(name AS CHAR), CAST(tbl AS CHAR), CAST(event AS CHAR), CAST(timing AS CHAR), CAST(ord AS SIGNED), \
         CAST(body AS CHAR), CAST(sql_mode AS CHAR), CAST(definer AS CHAR), CAST(cs_client AS CHAR), CAST(coll AS CHAR) \
         FROM {} WHERE job = ? ORDER BY tbl, event, timing, ord",
        quote::table(schema, MOVED_TRIGGERS)
    )
}

/// Forgets a job's recorded triggers (`?` job).
pub fn forget_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ?",
        quote::table(schema, MOVED_TRIGGERS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit() -> OwnTrigger {
        OwnTrigger {
            name: "ins`film".into(),
            table: "film".into(),
            event: "INSERT".into(),
            timing: "AFTER".into(),
            order: 1,
            body:
                "BEGIN INSERT INTO film_text (film_id, title) VALUES (new.film_id, new.title); END"
                    .into(),
            sql_mode: "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION".into(),
            definer: "app@o'brien@%".into(),
            charset_client: "latin1".into(),
            collation_connection: "latin1_swedish_ci".into(),
        }
    }

    #[test]
    fn a_trigger_is_created_again_as_defined_on_the_shadow() {
        let t = audit();
        assert_eq!(
            create_sql("film_myrecode_new", &t),
            "CREATE DEFINER = 'app@o''brien'@'%' TRIGGER `ins``film` AFTER INSERT ON `film_myrecode_new` \
             FOR EACH ROW BEGIN INSERT INTO film_text (film_id, title) VALUES (new.film_id, new.title); END"
        );
        assert_eq!(
            context_sql(&t),
            "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION', character_set_client = 'latin1', collation_connection = 'latin1_swedish_ci'"
        );
        assert_eq!(use_sql("my`db"), "USE `my``db`");
        assert!(t.portable());
        let mut cyrillic = t.clone();
        cyrillic.body = "SET NEW.title = 'Новый'".into();
        assert!(!cyrillic.portable(), "not ASCII under latin1");
        cyrillic.charset_client = "utf8mb4".into();
        assert!(cyrillic.portable());
        assert!(
            record_sql("s").starts_with("REPLACE INTO `s`.`_myrecode_triggers` (job, name, tbl,")
        );
    }
}

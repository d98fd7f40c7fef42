//! The schema's views, stored routines and events across the job's cut-over, pure: which
//! hold legacy text (string literals written through a latin1 connection, shown as
//! `'Ìîñêâà'`) or declare strings in a legacy charset (a routine's parameters, return type
//! and variables take the schema's default of the day they were created), and the
//! statements that make each the same object in UTF-8.
//!
//! After the cut-over a view comparing `city = 'Ìîñêâà'` would find nothing in the recoded
//! table, and a function whose parameter is latin1 refuses a UTF-8 argument (1366). Each
//! object is recreated as it is, its definer, `SQL SECURITY`, algorithm, `sql_mode` and
//! schedule kept, with its literals read as the job's values are and its string
//! declarations in utf8mb4, under a utf8mb4 `character_set_client`.
//!
//! Neither server lets a view, routine or event be replaced under `LOCK TABLES` (1192), so
//! they are recreated right after the job's last rename (see [`crate::engine::copy::cutover::carried::objects`]).

use crate::db::quote;
use crate::db::sqltext::Mode;
use crate::inventory::objects::{Kind, Object};
use crate::recode::objects::{utf8_declarations, Reading};

/// The statements that recreate `o` in UTF-8, or `None` when it holds no legacy text and
/// declares no legacy string; an error names the text no reading decides.
pub fn recreate(o: &Object, r: &Reading, mariadb: bool) -> Result<Option<Vec<String>>, String> {
    let mode = Mode::from_sql_mode(&o.sql_mode);
    let fail = |e: String| format!("{} `{}`: {e}", o.kind.word().to_lowercase(), o.name);
    let mut text = o.create.clone();
    if matches!(o.kind, Kind::Procedure | Kind::Function) {
        text = utf8_declarations(&text, mode, &o.charset, &r.collation).map_err(fail)?;
    }
    let text = crate::recode::sql_text::recode_sql(&text, Some(&o.charset), &r.labels, mode)
        .map_err(fail)?;
    let comment = crate::recode::sql_text::recode_text(&o.comment, Some(&o.charset), &r.labels)
        .map_err(fail)?;
    if text == o.create && comment == o.comment {
        return Ok(None);
    }
    let or_replace = |t: &str| {
        t.strip_prefix("CREATE ")
            .map(|rest| format!("CREATE OR REPLACE {rest}"))
            .unwrap_or_else(|| t.to_string())
    };
    let name = quote::ident(&o.name);
    Ok(Some(match o.kind {
        Kind::View => vec![or_replace(&text)],
        Kind::Procedure | Kind::Function if mariadb => vec![or_replace(&text)],
        Kind::Procedure | Kind::Function => {
            vec![format!("DROP {} IF EXISTS {name}", o.kind.word()), text]
        }
        Kind::Event => vec![format!(
            "ALTER {} EVENT {name} COMMENT {} DO {text}",
            crate::engine::copy::cutover::carried::own_triggers_sql::definer_clause(&o.definer),
            quote::literal(&comment)
        )],
    }))
}

/// The `WHERE` of a base table of `?` schema that is not myrecode's own (bookkeeping, side
/// tables, the gate), on `information_schema.TABLES t`.
const USER_TABLES: &str = "t.TABLE_SCHEMA = ? AND t.TABLE_TYPE = 'BASE TABLE' AND t.TABLE_NAME NOT LIKE '%\\_myrecode\\_%' \
     AND t.TABLE_NAME NOT LIKE '\\_myrecode\\_%' AND t.TABLE_NAME NOT LIKE '!myrecode%'";

/// A column of table `t` with a legacy (not UTF-8, not binary) charset.
const LEGACY_COLUMN: &str = "SELECT 1 FROM information_schema.COLUMNS k WHERE k.TABLE_SCHEMA = t.TABLE_SCHEMA AND k.TABLE_NAME = t.TABLE_NAME \
     AND k.CHARACTER_SET_NAME IS NOT NULL AND k.CHARACTER_SET_NAME NOT IN ('utf8mb4', 'utf8mb3', 'utf8', 'binary')";

/// The base tables of `?` schema, myrecode's own aside, that still hold a column in a legacy
/// charset: while one outside the job does, the schema's default stays as it is.
pub fn legacy_tables_sql() -> String {
    format!("SELECT CAST(t.TABLE_NAME AS CHAR) FROM information_schema.TABLES t WHERE {USER_TABLES} AND EXISTS ({LEGACY_COLUMN})")
}

/// The base tables of `?` schema, myrecode's own aside, whose default charset is legacy but
/// that hold no column in one (every text column converted, or none): name, engine, rows.
pub fn default_only_tables_sql() -> String {
    format!(
        "SELECT CAST(t.TABLE_NAME AS CHAR), CAST(t.ENGINE AS CHAR), CAST(COALESCE(t.TABLE_ROWS, 0) AS UNSIGNED) FROM information_schema.TABLES t \
         JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = t.TABLE_COLLATION \
         WHERE {USER_TABLES} AND c.CHARACTER_SET_NAME NOT IN ('utf8mb4', 'utf8mb3', 'utf8') AND NOT EXISTS ({LEGACY_COLUMN}) \
         ORDER BY t.TABLE_NAME"
    )
}

/// Only a plain collation name (one the server listed) is written into DDL; anything else
/// leaves the server's default collation of utf8mb4.
fn collate_clause(collation: &str) -> String {
    if !collation.is_empty()
        && collation
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        format!(" COLLATE {collation}")
    } else {
        String::new()
    }
}

/// Makes utf8mb4 the default of a table whose columns need nothing: metadata only on InnoDB
/// (`instant`: `ALGORITHM=INSTANT`, refused rather than rebuilding where the engine cannot);
/// otherwise the server rebuilds the table (MyISAM, Aria), reads allowed meanwhile.
pub fn table_default_sql(schema: &str, table: &str, collation: &str, instant: bool) -> String {
    format!(
        "ALTER TABLE {} DEFAULT CHARACTER SET utf8mb4{}, {}",
        quote::table(schema, table),
        collate_clause(collation),
        if instant {
            "ALGORITHM=INSTANT"
        } else {
            "LOCK=SHARED"
        }
    )
}

/// Makes utf8mb4 the schema's default, in `collation` when it is a plain name (one the
/// server listed; anything else leaves the server's default collation).
pub fn schema_default_sql(schema: &str, collation: &str) -> String {
    format!(
        "ALTER DATABASE {} DEFAULT CHARACTER SET utf8mb4{}",
        quote::ident(schema),
        collate_clause(collation)
    )
}

/// Name of the table recording each object's statements before the cut-over, so a kill at
/// any instant is settled from the record, never by reading an object half-way through.
pub const OBJECTS: &str = "_myrecode_objects";

/// DDL of [`OBJECTS`].
pub fn record_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL, kind VARCHAR(10) NOT NULL, name VARCHAR(64) NOT NULL, \
         original LONGTEXT NOT NULL, statements LONGTEXT NOT NULL, sql_mode TEXT NOT NULL, applied TINYINT NOT NULL DEFAULT 0, \
         PRIMARY KEY (job, kind, name)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        quote::table(schema, OBJECTS)
    )
}

/// Records one object (`?` job, kind, name, original, statements joined by [`SEPARATOR`],
/// sql_mode); the first record stands, so a rerun never records an object already recreated.
pub fn record_sql(schema: &str) -> String {
    format!(
        "INSERT IGNORE INTO {} (job, kind, name, original, statements, sql_mode) VALUES (?, ?, ?, ?, ?, ?)",
        quote::table(schema, OBJECTS)
    )
}

/// The job's recorded objects not yet recreated (`?` job): kind, name, statements, sql_mode.
pub fn pending_sql(schema: &str) -> String {
    format!(
        "SELECT kind, name, statements, sql_mode FROM {} WHERE job = ? AND applied = 0 ORDER BY kind DESC, name",
        quote::table(schema, OBJECTS)
    )
}

/// Marks one object recreated (`?` job, kind, name).
pub fn applied_sql(schema: &str) -> String {
    format!(
        "UPDATE {} SET applied = 1 WHERE job = ? AND kind = ? AND name = ?",
        quote::table(schema, OBJECTS)
    )
}

/// Between an object's statements in the record (a NUL never appears in SQL text we send).
pub const SEPARATOR: &str = "\u{0}";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{self, Encoding};
    use crate::detect::Label;

    fn shown(text: &str) -> String {
        let b = codec::encode(Encoding::Windows1251, text).unwrap();
        codec::decode(Encoding::Latin1, &b).unwrap()
    }

    fn reading() -> Reading {
        Reading {
            labels: vec![Label::Legacy(Encoding::Windows1251)],
            collation: "utf8mb4_unicode_ci".into(),
        }
    }

    fn object(kind: Kind, name: &str, create: String) -> Object {
        Object {
            kind,
            name: name.into(),
            create,
            sql_mode: "STRICT_TRANS_TABLES".into(),
            charset: "latin1".into(),
            definer: String::new(),
            comment: String::new(),
        }
    }

    #[test]
    fn a_view_is_replaced_with_its_literals_read_as_the_values() {
        let v = object(
            Kind::View,
            "moscow",
            format!("CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `moscow` AS select `c`.`id` AS `id` from `c` where `c`.`city` = '{}'", shown("Москва")),
        );
        assert_eq!(
            recreate(&v, &reading(), true).unwrap().unwrap(),
            vec!["CREATE OR REPLACE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `moscow` AS select `c`.`id` AS `id` from `c` where `c`.`city` = 'Москва'"]
        );
        let ascii = object(
            Kind::View,
            "all",
            "CREATE VIEW `all` AS select 1 AS `1`".into(),
        );
        assert_eq!(recreate(&ascii, &reading(), true).unwrap(), None);
    }

    #[test]
    fn a_routine_declares_its_strings_in_utf8mb4_and_reads_its_literals() {
        let f = object(
            Kind::Function,
            "count_city",
            "CREATE DEFINER=`root`@`localhost` FUNCTION `count_city`(c VARCHAR(50)) RETURNS varchar(20) CHARSET latin1 COLLATE latin1_swedish_ci\n    READS SQL DATA\nRETURN (SELECT COUNT(*) FROM customers WHERE city = c)".into(),
        );
        assert_eq!(
            recreate(&f, &reading(), true).unwrap().unwrap(),
            vec!["CREATE OR REPLACE DEFINER=`root`@`localhost` FUNCTION `count_city`(c VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci) RETURNS varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n    READS SQL DATA\nRETURN (SELECT COUNT(*) FROM customers WHERE city = c)"]
        );
        let p = object(
            Kind::Procedure,
            "add_order",
            format!("CREATE DEFINER=`root`@`localhost` PROCEDURE `add_order`(IN p INT)\nBEGIN\n  DECLARE v VARCHAR(20) DEFAULT '{}';\n  SELECT v;\nEND", shown("новый")),
        );
        let mysql = recreate(&p, &reading(), false).unwrap().unwrap();
        assert_eq!(mysql[0], "DROP PROCEDURE IF EXISTS `add_order`");
        assert!(
            mysql[1].contains("DECLARE v VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci DEFAULT 'новый';"),
            "{}",
            mysql[1]
        );
        // Created when the schema was UTF-8 already, with no legacy text: left alone.
        let mut modern = p.clone();
        modern.create = "CREATE PROCEDURE `x`(IN a VARCHAR(5))\nSELECT a".into();
        modern.charset = "utf8mb4".into();
        assert_eq!(recreate(&modern, &reading(), true).unwrap(), None);
    }

    #[test]
    fn an_event_keeps_its_schedule_and_gets_its_body_and_comment_read() {
        let mut e = object(
            Kind::Event,
            "purge",
            format!("DELETE FROM orders WHERE comment = '{}'", shown("спам")),
        );
        e.definer = "root@localhost".into();
        e.comment = shown("Чистка");
        assert_eq!(
            recreate(&e, &reading(), true).unwrap().unwrap(),
            vec!["ALTER DEFINER = 'root'@'localhost' EVENT `purge` COMMENT 'Чистка' DO DELETE FROM orders WHERE comment = 'спам'"]
        );
    }

    #[test]
    fn the_schema_default_statement_quotes_its_name_and_takes_only_a_plain_collation() {
        assert_eq!(
            schema_default_sql("sh`op", "utf8mb4_unicode_ci"),
            "ALTER DATABASE `sh``op` DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        );
        assert_eq!(
            schema_default_sql("shop", "x; DROP TABLE t"),
            "ALTER DATABASE `shop` DEFAULT CHARACTER SET utf8mb4"
        );
        assert_eq!(
            table_default_sql("shop", "lo`g", "utf8mb4_general_ci", true),
            "ALTER TABLE `shop`.`lo``g` DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, ALGORITHM=INSTANT"
        );
        assert_eq!(
            table_default_sql("shop", "log", "a b", false),
            "ALTER TABLE `shop`.`log` DEFAULT CHARACTER SET utf8mb4, LOCK=SHARED"
        );
        for sql in [legacy_tables_sql(), default_only_tables_sql()] {
            assert!(sql.contains("NOT LIKE '!myrecode%'"), "{sql}");
            assert!(
                sql.contains(
                    "k.CHARACTER_SET_NAME NOT IN ('utf8mb4', 'utf8mb3', 'utf8', 'binary')"
                ),
                "{sql}"
            );
        }
        assert!(legacy_tables_sql().contains("AND EXISTS ("));
        assert!(default_only_tables_sql().contains("AND NOT EXISTS ("));
    }

    #[test]
    fn kinds_round_trip_their_words() {
        for k in [Kind::View, Kind::Procedure, Kind::Function, Kind::Event] {
            assert_eq!(Kind::from_word(k.word()), Some(k));
        }
        assert_eq!(
            crate::inventory::objects::show_create_sql(Kind::Function, "s", "f`x"),
            "SHOW CREATE FUNCTION `s`.`f``x`"
        );
    }
}

//! The statements of a copy's set-up, built by pure functions (golden tests below): the
//! shadow created `LIKE` its table, the change log, its gate and its triggers (a keyless
//! table's name the gate only), and the few every phase drops and waits with. The copy's
//! and replay's are in [`crate::engine::copy::table::read_sql`], the check pass's in
//! [`crate::engine::copy::table::check_sql`], the cut-over's in
//! [`crate::engine::copy::cutover::swap_sql`], the catalog's in [`crate::engine::copy::catalog`].

use crate::bookkeeping::names::Names;
use crate::db::keyset::KeyColumn;
use crate::db::quote;

/// The gate every application write to a copied table passes (the change-log triggers name
/// it): the cut-over's rename takes it first, so no write reaches an original once the rename
/// is queued. Its first character sorts before any table name the refusal rules accept.
pub const GATE: &str = "!myrecode_gate";
/// The gate's name for the instant of the rename (it is renamed away and back within it).
pub const GATE_SWAP: &str = "!myrecode_gate~";
/// Ends this session's table locks.
pub const UNLOCK_TABLES: &str = "UNLOCK TABLES";

/// Bounds this session's waits for table and metadata locks, in seconds: while a lock
/// waits, the application's statements queue behind it.
pub fn lock_wait_timeout_sql(seconds: u32) -> String {
    format!("SET SESSION lock_wait_timeout = {seconds}")
}

/// How long the server keeps a session that sends nothing: the cut-over's lock connection
/// says a few seconds, so a run whose host vanishes holds its lock no longer.
pub fn wait_timeout_sql(seconds: u32) -> String {
    format!("SET SESSION wait_timeout = {seconds}")
}

/// `CREATE TABLE shadow LIKE table`: the shadow starts with the table's every definition.
pub fn create_like_sql(schema: &str, table: &str, shadow: &str) -> String {
    format!(
        "CREATE TABLE {} LIKE {}",
        quote::table(schema, shadow),
        quote::table(schema, table)
    )
}

/// Gives the (empty) shadow the storage engine the job asks for.
pub fn engine_sql(schema: &str, shadow: &str, engine: &str) -> String {
    format!(
        "ALTER TABLE {} ENGINE={}",
        quote::table(schema, shadow),
        quote::ident(engine)
    )
}

/// Locks the table and its change log while the triggers are added, so no application
/// statement runs while only some of them exist.
pub fn lock_for_triggers_sql(schema: &str, table: &str, log: &str) -> String {
    format!(
        "LOCK TABLES {} WRITE, {} WRITE",
        quote::table(schema, table),
        quote::table(schema, log)
    )
}

/// `DROP TRIGGER IF EXISTS` of one trigger of the schema.
pub fn drop_trigger_sql(schema: &str, trigger: &str) -> String {
    format!("DROP TRIGGER IF EXISTS {}", quote::table(schema, trigger))
}

/// SQL expression packing the key of trigger row `row` (`NEW`/`OLD`) as [`keycodec::pack`] does.
pub fn pack_expr(row: &str, key: &[KeyColumn]) -> String {
    let values: Vec<String> = key
        .iter()
        .map(|k| format!("{row}.{}", quote::ident(&k.name)))
        .collect();
    pack_values(&values)
}

/// SQL expression packing a key whose columns' values are the SQL expressions `values`, in
/// key order, as [`keycodec::pack`] does.
pub fn pack_values(values: &[String]) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|e| {
            let v = format!("CAST({e} AS BINARY)");
            let len = format!("OCTET_LENGTH({v})");
            format!(
                "CHAR(({len}) & 255, (({len}) >> 8) & 255, (({len}) >> 16) & 255, (({len}) >> 24) & 255), {v}"
            )
        })
        .collect();
    format!("CONCAT({})", parts.join(", "))
}

/// DDL of the change log table. Its comment is the mark ([`LOG_COMMENT`]) that tells the
/// copy's own log (and, beside it, a shadow and triggers a killed run left) from a table of
/// the user's that happens to have the name.
pub fn log_ddl(schema: &str, n: &Names) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
         key_bytes BLOB NOT NULL) ENGINE=InnoDB COMMENT='{LOG_COMMENT}'",
        quote::table(schema, &n.log)
    )
}

/// The comment of a change log (and its spare) myrecode created.
pub const LOG_COMMENT: &str = "myrecode change log";

/// Whether a copied table whose key is `key` gets a back log at its cut-over: a key, none of
/// it recoded (`revert` matches rows by key). Such a table's change-log triggers name the
/// back log too ([`trigger_ddl`]), so it is made before them.
pub fn has_back_log(key: &[KeyColumn]) -> bool {
    !key.is_empty() && !key.iter().any(|k| k.is_recoded())
}

/// DDL of the three triggers that log changed keys (insert, update, delete).
/// `precedes`: for each (insert, update, delete), the application's first `AFTER` trigger of
/// that event, if any: ours fire before it. A statement prepared before our triggers existed
/// fails on MariaDB when it first reaches ours (1146, naming the log); failing first, it
/// leaves nothing behind in a table without transactions an application trigger writes.
/// The same holds at the swap for a statement begun on the table and run on its recoded
/// copy, whose triggers write the back log: the server can keep the tables the old
/// triggers named (seen as 1146 naming the back log on a write waiting through the swap,
/// about one full test run in seven), so these name the back log too, where the table has
/// one ([`has_back_log`]).
pub fn trigger_ddl(
    schema: &str,
    table: &str,
    n: &Names,
    key: &[KeyColumn],
    precedes: &[Option<String>; 3],
) -> [String; 3] {
    let t = quote::table(schema, table);
    let log = quote::table(schema, &n.log);
    let trg = |i: usize| quote::table(schema, &n.triggers[i]);
    let back = if has_back_log(key) {
        format!(
            " DO (SELECT 1 FROM {} LIMIT 1);",
            quote::table(schema, &n.back_log)
        )
    } else {
        String::new()
    };
    // The branch never runs, but the server locks every table a trigger names before the
    // application's statement starts: this is what puts each write behind the gate.
    let gate = format!(
        "IF 0 THEN DO (SELECT 1 FROM {} LIMIT 1);{back} END IF;",
        quote::table(schema, GATE)
    );
    let first = |i: usize| match &precedes[i] {
        Some(other) => format!(" PRECEDES {}", quote::ident(other)),
        None => String::new(),
    };
    [
        format!(
            "CREATE TRIGGER {} AFTER INSERT ON {t} FOR EACH ROW{} BEGIN {gate} INSERT INTO {log} (key_bytes) VALUES ({}); END",
            trg(0),
            first(0),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER UPDATE ON {t} FOR EACH ROW{} BEGIN {gate} INSERT INTO {log} (key_bytes) VALUES ({}), ({}); END",
            trg(1),
            first(1),
            pack_expr("OLD", key),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER DELETE ON {t} FOR EACH ROW{} BEGIN {gate} INSERT INTO {log} (key_bytes) VALUES ({}); END",
            trg(2),
            first(2),
            pack_expr("OLD", key)
        ),
    ]
}

/// Creates the gate (see [`GATE`]) if it is missing.
pub fn gate_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (g TINYINT) ENGINE=InnoDB COMMENT='myrecode: the cut-over gate of copied tables'",
        quote::table(schema, GATE)
    )
}

/// `DROP TABLE IF EXISTS` of one table of the schema.
pub fn drop_table_sql(schema: &str, table: &str) -> String {
    format!("DROP TABLE IF EXISTS {}", quote::table(schema, table))
}

/// The three triggers of a keyless table: they log nothing (the rebuild reads the table
/// whole), they only name the gate, so a write the cut-over's unlock releases waits for the
/// rename as on every copied table, and read nothing of the log, so a cut-over that closes
/// the table (dropping its log) closes it to writes as it does a logged one. `precedes`: as
/// for [`crate::engine::copy::setup::sql::trigger_ddl`].
pub fn gate_trigger_ddl(
    schema: &str,
    table: &str,
    n: &Names,
    precedes: &[Option<String>; 3],
) -> [String; 3] {
    let t = quote::table(schema, table);
    let gate = quote::table(schema, GATE);
    let log = quote::table(schema, &n.log);
    let one = |i: usize, event: &str| {
        let first = match &precedes[i] {
            Some(other) => format!(" PRECEDES {}", quote::ident(other)),
            None => String::new(),
        };
        format!(
            "CREATE TRIGGER {} AFTER {event} ON {t} FOR EACH ROW{first} BEGIN IF 0 THEN DO (SELECT 1 FROM {gate} LIMIT 1); END IF; DO (SELECT 1 FROM {log} LIMIT 0); END",
            quote::table(schema, &n.triggers[i])
        )
    };
    [one(0, "INSERT"), one(1, "UPDATE"), one(2, "DELETE")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeping::names::names;

    fn k(name: &str) -> KeyColumn {
        KeyColumn::plain(name)
    }

    #[test]
    fn set_up_and_teardown_statements_quote_every_name() {
        assert_eq!(
            create_like_sql("my db", "a`b", "a`b_myrecode_new"),
            "CREATE TABLE `my db`.`a``b_myrecode_new` LIKE `my db`.`a``b`"
        );
        assert_eq!(
            engine_sql("s", "t_myrecode_new", "InnoDB"),
            "ALTER TABLE `s`.`t_myrecode_new` ENGINE=`InnoDB`"
        );
        assert_eq!(
            lock_for_triggers_sql("s", "order", "order_myrecode_log"),
            "LOCK TABLES `s`.`order` WRITE, `s`.`order_myrecode_log` WRITE"
        );
        assert_eq!(
            lock_wait_timeout_sql(2),
            "SET SESSION lock_wait_timeout = 2"
        );
        assert_eq!(
            drop_trigger_sql("s", "a`b_myrecode_ins"),
            "DROP TRIGGER IF EXISTS `s`.`a``b_myrecode_ins`"
        );
        assert_eq!(
            drop_table_sql("s", "na me"),
            "DROP TABLE IF EXISTS `s`.`na me`"
        );
        assert_eq!(
            log_ddl("s", &crate::bookkeeping::names::names("a`b")),
            "CREATE TABLE IF NOT EXISTS `s`.`a``b_myrecode_log` (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
             key_bytes BLOB NOT NULL) ENGINE=InnoDB COMMENT='myrecode change log'"
        );
    }

    #[test]
    fn trigger_packs_the_key_like_keycodec() {
        let e = pack_expr("NEW", &[k("a"), k("b`")]);
        assert!(e.starts_with("CONCAT(CHAR((OCTET_LENGTH(CAST(NEW.`a` AS BINARY))) & 255"));
        assert!(e.contains("CAST(NEW.`b``` AS BINARY)"));
        let none = [None, None, None];
        let ddl = trigger_ddl(
            "s",
            "t",
            &crate::bookkeeping::names::names("t"),
            &[k("id")],
            &none,
        );
        let first = [None, Some("keep ft".to_string()), None];
        let before = trigger_ddl(
            "s",
            "t",
            &crate::bookkeeping::names::names("t"),
            &[k("id")],
            &first,
        );
        assert!(before[1].contains("AFTER UPDATE ON `s`.`t` FOR EACH ROW PRECEDES `keep ft` BEGIN"));
        assert!(before[0].contains("FOR EACH ROW BEGIN"));
        assert!(ddl[1].starts_with("CREATE TRIGGER `s`.`t_myrecode_upd` AFTER UPDATE ON `s`.`t`"));
        assert!(
            ddl[1].contains("CAST(OLD.`id` AS BINARY)")
                && ddl[1].contains("CAST(NEW.`id` AS BINARY)")
        );
        for d in &ddl {
            assert!(
                d.contains("FOR EACH ROW BEGIN IF 0 THEN DO (SELECT 1 FROM `s`.`!myrecode_gate` LIMIT 1); DO (SELECT 1 FROM `s`.`t_myrecode_back` LIMIT 1); END IF; INSERT INTO `s`.`t_myrecode_log`"),
                "{d}"
            );
        }
        // A key the job recodes gets no back log, so its triggers name none.
        let recoded = KeyColumn {
            bind: crate::db::keyset::KeyBind::Recoded {
                from: "cp1251".into(),
                charset: "utf8mb4".into(),
                collation: "utf8mb4_general_ci".into(),
            },
            ..k("id")
        };
        assert!(!has_back_log(std::slice::from_ref(&recoded)) && !has_back_log(&[]));
        let ddl = trigger_ddl(
            "s",
            "t",
            &crate::bookkeeping::names::names("t"),
            &[recoded],
            &none,
        );
        assert!(
            ddl[0].contains("LIMIT 1); END IF; INSERT INTO"),
            "{}",
            ddl[0]
        );
        assert_eq!(
            gate_ddl("s"),
            "CREATE TABLE IF NOT EXISTS `s`.`!myrecode_gate` (g TINYINT) ENGINE=InnoDB COMMENT='myrecode: the cut-over gate of copied tables'"
        );
    }

    #[test]
    fn a_keyless_tables_triggers_name_the_gate_and_read_nothing_of_the_log() {
        let n = names("t");
        let ddl = gate_trigger_ddl("s", "t", &n, &[None, Some("audit".into()), None]);
        assert_eq!(
            ddl[0],
            format!(
                "CREATE TRIGGER `s`.`{}` AFTER INSERT ON `s`.`t` FOR EACH ROW BEGIN IF 0 THEN DO (SELECT 1 FROM `s`.`!myrecode_gate` LIMIT 1); END IF; DO (SELECT 1 FROM `s`.`t_myrecode_log` LIMIT 0); END",
                n.triggers[0]
            )
        );
        assert!(ddl[1].contains("AFTER UPDATE ON `s`.`t` FOR EACH ROW PRECEDES `audit` BEGIN"));
        assert!(!ddl.iter().any(|d| d.contains("INSERT INTO")));
    }
}

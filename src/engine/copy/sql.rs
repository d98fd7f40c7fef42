//! The statements of the copy's set-up, copy, replay and teardown, and the catalog look-ups,
//! built by pure functions (golden tests below); the async code binds, runs and maps errors.
//! The check pass's are in [`super::check_sql`], the cut-over's in [`super::cutover_sql`].

use super::names::Names;
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::engine::servercodec::ServerCodec;

/// Name of the session temporary table holding a batch's recoded values.
pub const STAGE: &str = "_myrecode_stage";
/// The gate every application write to a copied table passes (the change-log triggers name
/// it): the cut-over's rename takes it first, so no write reaches an original once the rename
/// is queued. Its first character sorts before any table name the refusal rules accept.
pub const GATE: &str = "!myrecode_gate";
/// The gate's name for the instant of the rename (it is renamed away and back within it).
pub const GATE_SWAP: &str = "!myrecode_gate~";
/// Every connection of a copy reads at this level: the check pass compares one snapshot.
pub const REPEATABLE_READ: &str = "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ";
/// The writers of several copy streams read committed (see [`super::streams`]).
pub const READ_COMMITTED: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
/// Prefix of the staging table's columns, chosen not to clash with the table's own names.
pub(super) const STAGE_COL: &str = "_myrecode_";
/// Ends this session's table locks.
pub const UNLOCK_TABLES: &str = "UNLOCK TABLES";

/// Bounds this session's waits for table and metadata locks, in seconds: while a lock
/// waits, the application's statements queue behind it.
pub fn lock_wait_timeout_sql(seconds: u32) -> String {
    format!("SET SESSION lock_wait_timeout = {seconds}")
}

/// A table's comment, `?` schema and `?` table; no row at all when there is no such table.
pub const TABLE_COMMENT_SQL: &str = "SELECT CAST(TABLE_COMMENT AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?";

/// The triggers on a table, `?` schema and `?` table.
pub const TRIGGERS_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?";

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

/// DDL of the change log table.
pub fn log_ddl(schema: &str, n: &Names) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
         key_bytes BLOB NOT NULL) ENGINE=InnoDB",
        quote::table(schema, &n.log)
    )
}

/// DDL of the three triggers that log changed keys (insert, update, delete).
/// `precedes`: for each (insert, update, delete), the application's first `AFTER` trigger of
/// that event, if any: ours fire before it. A statement prepared before our triggers existed
/// fails on MariaDB when it first reaches ours (1146, naming the log); failing first, it
/// leaves nothing behind in a table without transactions an application trigger writes.
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
    // The branch never runs, but the server locks every table a trigger names before the
    // application's statement starts: this is what puts each write behind the gate.
    let gate = format!(
        "IF 0 THEN DO (SELECT 1 FROM {} LIMIT 1); END IF;",
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

/// `WHERE` condition for "at or before the given key", and the key index to bind for each `?`.
pub fn at_most(key: &[KeyColumn]) -> (String, Vec<usize>) {
    let (cond, binds) = keyset::after(key);
    (format!("NOT ({cond})"), binds)
}

/// `WHERE` condition for the keys after `after` (exclusive) up to `upto` (inclusive), either
/// bound left open (`1 = 1` with neither), and its binds: the key parts of `after`, then of `upto`.
pub fn key_range(
    key: &[KeyColumn],
    after: Option<&[Vec<u8>]>,
    upto: Option<&[Vec<u8>]>,
) -> (String, Vec<Vec<u8>>) {
    let mut conds = Vec::new();
    let mut binds = Vec::new();
    if let Some(after) = after {
        let (cond, order) = keyset::after(key);
        conds.push(cond);
        binds.extend(order.iter().map(|&i| after[i].clone()));
    }
    if let Some(upto) = upto {
        let (cond, order) = at_most(key);
        conds.push(cond);
        binds.extend(order.iter().map(|&i| upto[i].clone()));
    }
    if conds.is_empty() {
        return ("1 = 1".to_string(), binds);
    }
    (conds.join(" AND "), binds)
}

/// `WHERE` condition matching any of `count` keys (`(k = ? AND …) OR …`), binds in key order.
pub fn any_of(key: &[KeyColumn], count: usize) -> String {
    let one = format!("({})", keyset::equals(key));
    vec![one; count].join(" OR ")
}

/// A table's storage engine, `?` schema and `?` table; no row when there is no such table.
pub const ENGINE_SQL: &str = "SELECT CAST(ENGINE AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?";

/// `DELETE` of the rows of one table matching `cond`.
pub fn delete_where_sql(schema: &str, table: &str, cond: &str) -> String {
    format!("DELETE FROM {} WHERE {cond}", quote::table(schema, table))
}

/// The rows of `table` matching `cond` as `key…, columns…` raw bytes, with shared row locks
/// until the transaction ends (a replay must not copy a row a writer is changing).
pub fn read_locked_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    columns: &[String],
    cond: &str,
) -> String {
    let mut cols: Vec<String> = key.iter().map(|k| keyset::raw(&k.name)).collect();
    cols.extend(columns.iter().map(|c| keyset::raw(c)));
    format!(
        "SELECT {} FROM {} WHERE {cond} LOCK IN SHARE MODE",
        cols.join(", "),
        quote::table(schema, table)
    )
}

/// The change log's first `limit` rows in id order: id, packed key.
pub fn log_read_sql(schema: &str, log: &str, limit: usize) -> String {
    format!(
        "SELECT id, key_bytes FROM {} ORDER BY id LIMIT {limit}",
        quote::table(schema, log)
    )
}

/// Removes exactly the change log rows `ids` (a lower id committed later is not replayed yet).
pub fn log_delete_sql(schema: &str, log: &str, ids: &[u64]) -> String {
    let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    format!(
        "DELETE FROM {} WHERE id IN ({})",
        quote::table(schema, log),
        ids.join(", ")
    )
}

/// Queues `rows` packed keys in the change log, one `?` each.
pub fn log_insert_sql(schema: &str, log: &str, rows: usize) -> String {
    format!(
        "INSERT INTO {} (key_bytes) VALUES {}",
        quote::table(schema, log),
        vec!["(?)"; rows].join(", ")
    )
}

/// `SELECT COUNT(*)` of a whole table.
pub fn count_sql(schema: &str, table: &str) -> String {
    format!("SELECT COUNT(*) FROM {}", quote::table(schema, table))
}

/// Column `i` of the staging table (`k` key, `v` value, `s` set flag).
pub(super) fn stage_col(kind: char, i: usize) -> String {
    quote::ident(&format!("{STAGE_COL}{kind}{i}"))
}

/// A job column as the copy writes it.
#[derive(Debug, Clone)]
pub struct JobColumn {
    /// Column name.
    pub name: String,
    /// Whether its target is binary (staged bytes go in as they are, else as UTF-8 text).
    pub binary: bool,
    /// The server's charset whose conversion of the stored bytes is what the copy writes
    /// for every value not staged (see [`super::servercodec`]); `None`: the server's
    /// conversion from the declared charset.
    pub server: Option<ServerCodec>,
}

impl JobColumn {
    /// What the server writes for this column of row `row` when nothing is staged for it.
    pub fn default_expr(&self, row: &str) -> String {
        let own = format!("{row}.{}", quote::ident(&self.name));
        match &self.server {
            Some(sc) => sc.expr(&own),
            None => own,
        }
    }
}

/// Staging flag: take the staged value.
pub const STAGED_VALUE: i8 = 1;
/// Staging flag: take the server's conversion from the declared charset (the latin1 reading).
pub const STAGED_DECLARED: i8 = 2;

/// Job column `jc` of source `src` as the copy writes it: by the staging flag `flag`, the
/// staged `value`, the declared charset's conversion, or [`JobColumn::default_expr`].
pub fn staged_expr(jc: &JobColumn, src: &str, flag: &str, value: &str) -> String {
    let own = format!("{src}.{}", quote::ident(&jc.name));
    let value = if jc.binary {
        value.to_string()
    } else {
        format!("CONVERT({value} USING utf8mb4)")
    };
    format!(
        "CASE {flag} WHEN {STAGED_VALUE} THEN {value} WHEN {STAGED_DECLARED} THEN {own} ELSE {} END",
        jc.default_expr(src)
    )
}

/// How a batch's rows are written otherwise than by each column's default.
pub struct Special<'a> {
    /// The table's key: joins the staging table, names chosen rows.
    pub key: &'a [KeyColumn],
    /// Whether values are staged (the staging table is then joined).
    pub staged: bool,
    /// Per job column, `WHEN`s before the rest (the expression, the keys it writes as a
    /// comma-separated list of literals; [`super::choices`]); may be empty.
    pub whens: &'a [Vec<(String, String)>],
}

impl<'a> Special<'a> {
    /// Every value its column's default.
    pub fn none(key: &'a [KeyColumn]) -> Self {
        Special {
            key,
            staged: false,
            whens: &[],
        }
    }
}

/// `INSERT INTO shadow SELECT … FROM t [LEFT JOIN staged]`: the server copies every column;
/// a job column takes its [`JobColumn::default_expr`] unless a `WHEN` names the row's key, or
/// the staging table (joined on the key) holds a recoded value or asks for the declared
/// conversion.
pub fn replace_select(
    schema: &str,
    table: &str,
    shadow: &str,
    cols: &[String],
    job: &[JobColumn],
    special: &Special<'_>,
    cond: &str,
) -> String {
    // No alias: the cut-over locks many tables at once, and one alias cannot be locked twice.
    let src = quote::table(schema, table);
    let list: Vec<String> = cols.iter().map(|c| quote::ident(c)).collect();
    let key: Vec<String> = (special.key.iter())
        .map(|k| format!("{src}.{}", quote::ident(&k.name)))
        .collect();
    let key = match key.as_slice() {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    };
    let select: Vec<String> = cols
        .iter()
        .map(|c| {
            let own = format!("{src}.{}", quote::ident(c));
            let Some(j) = job.iter().position(|jc| &jc.name == c) else {
                return own;
            };
            let otherwise = if special.staged {
                staged_expr(
                    &job[j],
                    &src,
                    &format!("x.{}", stage_col('s', j)),
                    &format!("x.{}", stage_col('v', j)),
                )
            } else {
                job[j].default_expr(&src)
            };
            let whens = special.whens.get(j).map(Vec::as_slice).unwrap_or_default();
            super::choices::case_of(&key, whens, otherwise)
        })
        .collect();
    let join = if special.staged {
        let on: Vec<String> = (special.key.iter())
            .enumerate()
            .map(|(i, k)| format!("{src}.{} = x.{}", quote::ident(&k.name), stage_col('k', i)))
            .collect();
        format!(
            " LEFT JOIN {} AS x ON {}",
            quote::ident(STAGE),
            on.join(" AND ")
        )
    } else {
        String::new()
    };
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM {src}{join} WHERE {cond}",
        quote::table(schema, shadow),
        list.join(", "),
        select.join(", "),
    )
}

/// `DROP TABLE IF EXISTS` of one table of the schema.
pub fn drop_table_sql(schema: &str, table: &str) -> String {
    format!("DROP TABLE IF EXISTS {}", quote::table(schema, table))
}

/// `DROP TABLE` of a table that must be there: gone, it is an error, not a silent success.
pub fn drop_existing_table_sql(schema: &str, table: &str) -> String {
    format!("DROP TABLE {}", quote::table(schema, table))
}

/// `CREATE TEMPORARY TABLE` of the session's staging table: the key columns as the table
/// types them (`key_types`), then a value and a flag per job column.
pub fn stage_ddl(key_types: &[String], job_columns: usize) -> String {
    let mut cols: Vec<String> = key_types
        .iter()
        .enumerate()
        .map(|(i, ty)| format!("{} {ty} NOT NULL", stage_col('k', i)))
        .collect();
    for j in 0..job_columns {
        cols.push(format!("{} LONGBLOB NULL", stage_col('v', j)));
        cols.push(format!("{} TINYINT NOT NULL DEFAULT 0", stage_col('s', j)));
    }
    let pk: Vec<String> = (0..key_types.len()).map(|i| stage_col('k', i)).collect();
    format!(
        "CREATE TEMPORARY TABLE {} ({}, PRIMARY KEY ({})) ENGINE=InnoDB",
        quote::ident(STAGE),
        cols.join(", "),
        pk.join(", ")
    )
}

/// `DROP TEMPORARY TABLE` of the staging table.
pub fn stage_drop_sql() -> String {
    format!("DROP TEMPORARY TABLE IF EXISTS {}", quote::ident(STAGE))
}

/// Empties the staging table (`TRUNCATE`: it commits, so only between transactions).
pub fn stage_truncate_sql() -> String {
    format!("TRUNCATE TABLE {}", quote::ident(STAGE))
}

/// Stages `rows` rows: per row the key (placeholders as `key` types them), then a value and a flag per job column.
pub fn stage_insert_sql(key: &[KeyColumn], job_columns: usize, rows: usize) -> String {
    let key_ph: Vec<String> = key.iter().map(|k| k.placeholder()).collect();
    let one = format!(
        "({}, {})",
        key_ph.join(", "),
        vec!["?, ?"; job_columns].join(", ")
    );
    let mut names: Vec<String> = (0..key.len()).map(|i| stage_col('k', i)).collect();
    for j in 0..job_columns {
        names.push(stage_col('v', j));
        names.push(stage_col('s', j));
    }
    format!(
        "INSERT INTO {} ({}) VALUES {}",
        quote::ident(STAGE),
        names.join(", "),
        vec![one.as_str(); rows].join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Label;
    use crate::engine::servercodec;

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
            drop_existing_table_sql("s", "таблица_myrecode_old"),
            "DROP TABLE `s`.`таблица_myrecode_old`"
        );
        assert_eq!(
            log_ddl("s", &crate::engine::copy::names("a`b")),
            "CREATE TABLE IF NOT EXISTS `s`.`a``b_myrecode_log` (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
             key_bytes BLOB NOT NULL) ENGINE=InnoDB"
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
            &crate::engine::copy::names("t"),
            &[k("id")],
            &none,
        );
        let first = [None, Some("keep ft".to_string()), None];
        let before = trigger_ddl(
            "s",
            "t",
            &crate::engine::copy::names("t"),
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
                d.contains("FOR EACH ROW BEGIN IF 0 THEN DO (SELECT 1 FROM `s`.`!myrecode_gate` LIMIT 1); END IF; INSERT INTO `s`.`t_myrecode_log`"),
                "{d}"
            );
        }
        assert_eq!(
            gate_ddl("s"),
            "CREATE TABLE IF NOT EXISTS `s`.`!myrecode_gate` (g TINYINT) ENGINE=InnoDB COMMENT='myrecode: the cut-over gate of copied tables'"
        );
    }

    #[test]
    fn key_ranges_bind_the_lower_key_then_the_upper() {
        let key = [k("a`b"), k("order")];
        let lo = vec![b"1".to_vec(), b"x".to_vec()];
        let hi = vec![b"9".to_vec(), b"y".to_vec()];
        let (cond, binds) = key_range(&key, Some(&lo), Some(&hi));
        assert_eq!(
            cond,
            "`a``b` >= ? AND (`a``b` > ? OR (`a``b` = ? AND `order` > ?)) \
             AND NOT (`a``b` >= ? AND (`a``b` > ? OR (`a``b` = ? AND `order` > ?)))"
        );
        let (l0, l1, h0, h1) = (lo[0].clone(), lo[1].clone(), hi[0].clone(), hi[1].clone());
        assert_eq!(
            binds,
            vec![
                l0.clone(),
                l0.clone(),
                l0,
                l1,
                h0.clone(),
                h0.clone(),
                h0,
                h1
            ]
        );
        let (cond, binds) = key_range(&key[..1], None, Some(&hi[..1]));
        assert_eq!(cond, "NOT (`a``b` >= ? AND (`a``b` > ?))");
        assert_eq!(binds.len(), 2);
        assert_eq!(key_range(&key, None, None), ("1 = 1".to_string(), vec![]));
    }

    #[test]
    fn copy_and_replay_statements_quote_every_name() {
        let key = [k("a`b"), k("order")];
        assert_eq!(
            delete_where_sql("s", "таблица_myrecode_new", "`a``b` = ?"),
            "DELETE FROM `s`.`таблица_myrecode_new` WHERE `a``b` = ?"
        );
        assert_eq!(
            read_locked_sql(
                "my db",
                "таблица",
                &key,
                &["na me".into()],
                &any_of(&key, 1)
            ),
            "SELECT CAST(`a``b` AS BINARY), CAST(`order` AS BINARY), CAST(`na me` AS BINARY) \
             FROM `my db`.`таблица` WHERE (`a``b` = ? AND `order` = ?) LOCK IN SHARE MODE"
        );
        let n = crate::engine::copy::names("a`b");
        assert_eq!(
            log_read_sql("s", &n.log, 500),
            "SELECT id, key_bytes FROM `s`.`a``b_myrecode_log` ORDER BY id LIMIT 500"
        );
        assert_eq!(
            log_delete_sql("s", &n.log, &[3, 5, 8]),
            "DELETE FROM `s`.`a``b_myrecode_log` WHERE id IN (3, 5, 8)"
        );
        assert_eq!(
            log_insert_sql("s", &n.log, 3),
            "INSERT INTO `s`.`a``b_myrecode_log` (key_bytes) VALUES (?), (?), (?)"
        );
        assert_eq!(
            count_sql("s", &n.log),
            "SELECT COUNT(*) FROM `s`.`a``b_myrecode_log`"
        );
    }

    #[test]
    fn staging_statements_name_their_columns_apart_from_the_tables() {
        let key = [
            k("order"),
            KeyColumn {
                name: "имя".into(),
                bind: keyset::KeyBind::Text {
                    charset: "cp1251".into(),
                    collation: "cp1251_bin".into(),
                },
            },
        ];
        assert_eq!(
            stage_ddl(
                &[
                    "int(11)".into(),
                    "varchar(9) CHARACTER SET cp1251 COLLATE cp1251_bin".into()
                ],
                1
            ),
            "CREATE TEMPORARY TABLE `_myrecode_stage` (`_myrecode_k0` int(11) NOT NULL, \
             `_myrecode_k1` varchar(9) CHARACTER SET cp1251 COLLATE cp1251_bin NOT NULL, \
             `_myrecode_v0` LONGBLOB NULL, `_myrecode_s0` TINYINT NOT NULL DEFAULT 0, \
             PRIMARY KEY (`_myrecode_k0`, `_myrecode_k1`)) ENGINE=InnoDB"
        );
        assert_eq!(
            stage_insert_sql(&key, 2, 2),
            "INSERT INTO `_myrecode_stage` (`_myrecode_k0`, `_myrecode_k1`, `_myrecode_v0`, `_myrecode_s0`, \
             `_myrecode_v1`, `_myrecode_s1`) VALUES (?, CONVERT(? USING cp1251) COLLATE cp1251_bin, ?, ?, ?, ?), \
             (?, CONVERT(? USING cp1251) COLLATE cp1251_bin, ?, ?, ?, ?)"
        );
        assert_eq!(
            stage_drop_sql(),
            "DROP TEMPORARY TABLE IF EXISTS `_myrecode_stage`"
        );
        assert_eq!(stage_truncate_sql(), "TRUNCATE TABLE `_myrecode_stage`");
    }

    #[test]
    fn at_most_negates_after_and_any_of_ors_equalities() {
        let (c, binds) = at_most(&[k("a"), k("b")]);
        assert_eq!(c, "NOT (`a` >= ? AND (`a` > ? OR (`a` = ? AND `b` > ?)))");
        assert_eq!(binds, vec![0, 0, 0, 1]);
        assert_eq!(
            any_of(&[k("a"), k("b")], 2),
            "(`a` = ? AND `b` = ?) OR (`a` = ? AND `b` = ?)"
        );
    }

    #[test]
    fn replace_select_takes_staged_values_over_the_servers_conversion() {
        let jc = |name: &str, binary, server| JobColumn {
            name: name.into(),
            binary,
            server,
        };
        assert_eq!(
            replace_select("s", "t", "n", &["id".into(), "b".into()], &[jc("b", false, None)], &Special::none(&[k("id")]), "`id` = ?"),
            "INSERT INTO `s`.`n` (`id`, `b`) SELECT `s`.`t`.`id`, `s`.`t`.`b` FROM `s`.`t` WHERE `id` = ?"
        );
        let cp1251 = crate::codec::Encoding::Windows1251;
        let sc = ServerCodec::from_server(Label::Legacy(cp1251), &servercodec::ours(cp1251));
        let key = [k("id")];
        let jobs = [jc("b", false, sc.clone()), jc("c", true, None)];
        let cols = ["id".into(), "b".into(), "c".into()];
        let staged = Special {
            key: &key,
            staged: true,
            whens: &[],
        };
        let sql = replace_select("s", "t", "n", &cols, &jobs, &staged, "1");
        assert!(
            sql.contains(
                "CASE x.`_myrecode_s0` WHEN 1 THEN CONVERT(x.`_myrecode_v0` USING utf8mb4) \
             WHEN 2 THEN `s`.`t`.`b` \
             ELSE CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING `cp1251`) END"
            ),
            "{sql}"
        );
        assert!(sql.contains(
            "CASE x.`_myrecode_s1` WHEN 1 THEN x.`_myrecode_v1` WHEN 2 THEN `s`.`t`.`c` ELSE `s`.`t`.`c` END"
        ));
        assert!(sql.contains("LEFT JOIN `_myrecode_stage` AS x ON `s`.`t`.`id` = x.`_myrecode_k0`"));
        // Nothing staged: no join, the server converts every value.
        let sql = replace_select("s", "t", "n", &cols, &jobs, &Special::none(&key), "1");
        assert!(sql.contains("SELECT `s`.`t`.`id`, CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING `cp1251`), `s`.`t`.`c` FROM"), "{sql}");
        // Rows named by key: a CASE around what the column would be otherwise.
        let whens = vec![vec![("KOI".to_string(), "3,5".to_string())], vec![]];
        let named = Special {
            key: &key,
            staged: false,
            whens: &whens,
        };
        assert_eq!(
            replace_select("s", "t", "n", &cols, &jobs, &named, "1"),
            "INSERT INTO `s`.`n` (`id`, `b`, `c`) SELECT `s`.`t`.`id`, CASE WHEN `s`.`t`.`id` IN (3,5) \
             THEN KOI ELSE CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING `cp1251`) END, `s`.`t`.`c` \
             FROM `s`.`t` WHERE 1"
        );
    }
}

//! Every statement the copy sends, built by pure functions (golden tests below); the async
//! code binds, runs and maps errors.

use super::names::Names;
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::engine::servercodec::ServerCodec;

/// Name of the session temporary table holding a batch's recoded values.
pub const STAGE: &str = "_myrecode_stage";
/// Alias of the table in the copying `INSERT … SELECT` (the cut-over locks it under this name too).
pub const SRC: &str = "_myrecode_src";
/// Marks our statements in the process list, so a rerun can find a rename left queued.
pub const MARK: &str = "/* myrecode cut-over */";
/// Comment of the sentry table, told apart from a real kept original by it.
pub const SENTRY_COMMENT: &str = "myrecode cut-over sentry";
/// Every connection of a copy reads at this level: the check pass compares one snapshot.
pub const REPEATABLE_READ: &str = "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ";
/// Prefix of the staging table's columns, chosen not to clash with the table's own names.
pub(super) const STAGE_COL: &str = "_myrecode_";

/// SQL expression packing the key of trigger row `row` (`NEW`/`OLD`) as [`keycodec::pack`] does.
pub fn pack_expr(row: &str, key: &[KeyColumn]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|k| {
            let v = format!("CAST({row}.{} AS BINARY)", quote::ident(&k.name));
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
pub fn trigger_ddl(schema: &str, table: &str, n: &Names, key: &[KeyColumn]) -> [String; 3] {
    let t = quote::table(schema, table);
    let log = quote::table(schema, &n.log);
    let trg = |i: usize| quote::table(schema, &n.triggers[i]);
    [
        format!(
            "CREATE TRIGGER {} AFTER INSERT ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({})",
            trg(0),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER UPDATE ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({}), ({})",
            trg(1),
            pack_expr("OLD", key),
            pack_expr("NEW", key)
        ),
        format!(
            "CREATE TRIGGER {} AFTER DELETE ON {t} FOR EACH ROW INSERT INTO {log} (key_bytes) VALUES ({})",
            trg(2),
            pack_expr("OLD", key)
        ),
    ]
}

/// `WHERE` condition for "at or before the given key", and the key index to bind for each `?`.
pub fn at_most(key: &[KeyColumn]) -> (String, Vec<usize>) {
    let (cond, binds) = keyset::after(key);
    (format!("NOT ({cond})"), binds)
}

/// `WHERE` condition matching any of `count` keys (`(k = ? AND …) OR …`), binds in key order.
pub fn any_of(key: &[KeyColumn], count: usize) -> String {
    let one = format!("({})", keyset::equals(key));
    vec![one; count].join(" OR ")
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

/// `INSERT INTO shadow SELECT … FROM t [LEFT JOIN staged]`: the server copies every column;
/// a job column takes its [`JobColumn::default_expr`] unless the staging table (joined on
/// `staged_key`) holds a recoded value or asks for the declared conversion.
pub fn replace_select(
    schema: &str,
    table: &str,
    shadow: &str,
    cols: &[String],
    job: &[JobColumn],
    staged_key: Option<&[KeyColumn]>,
    cond: &str,
) -> String {
    let src = SRC;
    let list: Vec<String> = cols.iter().map(|c| quote::ident(c)).collect();
    let select: Vec<String> = cols
        .iter()
        .map(|c| {
            let own = format!("{src}.{}", quote::ident(c));
            let Some(j) = job.iter().position(|jc| &jc.name == c) else {
                return own;
            };
            let default = job[j].default_expr(src);
            if staged_key.is_none() {
                return default;
            }
            let v = format!("x.{}", stage_col('v', j));
            let value = if job[j].binary {
                v
            } else {
                format!("CONVERT({v} USING utf8mb4)")
            };
            format!(
                "CASE x.{} WHEN {STAGED_VALUE} THEN {value} WHEN {STAGED_DECLARED} THEN {own} ELSE {default} END",
                stage_col('s', j)
            )
        })
        .collect();
    let join = match staged_key {
        Some(key) => {
            let on: Vec<String> = key
                .iter()
                .enumerate()
                .map(|(i, k)| format!("{src}.{} = x.{}", quote::ident(&k.name), stage_col('k', i)))
                .collect();
            format!(
                " LEFT JOIN {} AS x ON {}",
                quote::ident(STAGE),
                on.join(" AND ")
            )
        }
        None => String::new(),
    };
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM {} AS {src}{join} WHERE {cond}",
        quote::table(schema, shadow),
        list.join(", "),
        select.join(", "),
        quote::table(schema, table)
    )
}

/// `DROP TABLE IF EXISTS` of one table of the schema.
pub fn drop_table_sql(schema: &str, table: &str) -> String {
    format!("DROP TABLE IF EXISTS {}", quote::table(schema, table))
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
    fn trigger_packs_the_key_like_keycodec() {
        let e = pack_expr("NEW", &[k("a"), k("b`")]);
        assert!(e.starts_with("CONCAT(CHAR((OCTET_LENGTH(CAST(NEW.`a` AS BINARY))) & 255"));
        assert!(e.contains("CAST(NEW.`b``` AS BINARY)"));
        let ddl = trigger_ddl("s", "t", &crate::engine::copy::names("t"), &[k("id")]);
        assert!(ddl[1].starts_with("CREATE TRIGGER `s`.`t_myrecode_upd` AFTER UPDATE ON `s`.`t`"));
        assert!(
            ddl[1].contains("CAST(OLD.`id` AS BINARY)")
                && ddl[1].contains("CAST(NEW.`id` AS BINARY)")
        );
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
            replace_select("s", "t", "n", &["id".into(), "b".into()], &[jc("b", false, None)], None, "`id` = ?"),
            "INSERT INTO `s`.`n` (`id`, `b`) SELECT _myrecode_src.`id`, _myrecode_src.`b` FROM `s`.`t` AS _myrecode_src WHERE `id` = ?"
        );
        let cp1251 = crate::codec::Encoding::Windows1251;
        let sc = ServerCodec::from_server(Label::Legacy(cp1251), &servercodec::ours(cp1251));
        let key = [k("id")];
        let jobs = [jc("b", false, sc.clone()), jc("c", true, None)];
        let cols = ["id".into(), "b".into(), "c".into()];
        let sql = replace_select("s", "t", "n", &cols, &jobs, Some(&key), "1");
        assert!(
            sql.contains(
                "CASE x.`_myrecode_s0` WHEN 1 THEN CONVERT(x.`_myrecode_v0` USING utf8mb4) \
             WHEN 2 THEN _myrecode_src.`b` \
             ELSE CONVERT(CAST(_myrecode_src.`b` AS BINARY) USING `cp1251`) END"
            ),
            "{sql}"
        );
        assert!(sql.contains(
            "CASE x.`_myrecode_s1` WHEN 1 THEN x.`_myrecode_v1` WHEN 2 THEN _myrecode_src.`c` ELSE _myrecode_src.`c` END"
        ));
        assert!(sql
            .contains("LEFT JOIN `_myrecode_stage` AS x ON _myrecode_src.`id` = x.`_myrecode_k0`"));
        // Nothing staged: no join, the server converts every value.
        let sql = replace_select("s", "t", "n", &cols, &jobs, None, "1");
        assert!(sql.contains("SELECT _myrecode_src.`id`, CONVERT(CAST(_myrecode_src.`b` AS BINARY) USING `cp1251`), _myrecode_src.`c` FROM"), "{sql}");
    }
}

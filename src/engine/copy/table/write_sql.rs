//! How a batch reaches the shadow, built by pure functions (golden tests below): the copy's
//! `INSERT … SELECT` of a key range, each job column by its server conversion, a `CASE` naming
//! rows by key ([`crate::engine::copy::table::named_values`]) or the session's staging table of values only our codecs
//! write, and that staging table's own statements.

use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;
use crate::engine::copy::table::job_column::{staged_expr, JobColumn};
use crate::engine::copy::table::named_values;
use crate::engine::copy::table::read_sql::{any_of, delete_where_sql};

/// Name of the session temporary table holding a batch's recoded values.
pub const STAGE: &str = "_myrecode_stage";
/// Prefix of the staging table's columns, chosen not to clash with the table's own names.
const STAGE_COL: &str = "_myrecode_";

/// Column `i` of the staging table (`k` key, `v` value, `s` set flag).
pub(crate) fn stage_col(kind: char, i: usize) -> String {
    quote::ident(&format!("{STAGE_COL}{kind}{i}"))
}

/// How a batch's rows are written otherwise than by each column's default.
pub struct Special<'a> {
    /// The table's key: joins the staging table, names chosen rows.
    pub key: &'a [KeyColumn],
    /// Whether values are staged (the staging table is then joined).
    pub staged: bool,
    /// Per job column, how its `CASE` names rows before the rest ([`crate::engine::copy::table::named_values`]); may
    /// be empty.
    pub whens: &'a [named_values::Named],
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
            named_values::case_of(&key, special.whens.get(j), otherwise)
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

/// `DELETE` of the shadow's rows for the table's rows matching `cond` (a condition on the
/// table's key; `named`: it names that many keys one by one, [`any_of`]), before they are
/// copied again. Where the shadow's key is the table's, `cond` itself; where it holds a
/// recoded part (`shadow_key`, [`KeyColumn::is_recoded`]), named keys are found by their
/// bytes read in the legacy charset (a key the table no longer has goes too), and a key
/// range through the table's rows in it, whose keys are recoded the same way on the server.
pub fn clear_shadow_sql(
    (schema, table, shadow): (&str, &str, &str),
    shadow_key: &[KeyColumn],
    cond: &str,
    named: Option<usize>,
) -> String {
    if !shadow_key.iter().any(KeyColumn::is_recoded) {
        return delete_where_sql(schema, shadow, cond);
    }
    if let Some(n) = named {
        return delete_where_sql(schema, shadow, &any_of(shadow_key, n));
    }
    let dst = quote::table(schema, shadow);
    let keys: Vec<String> = (shadow_key.iter().enumerate())
        .map(|(i, k)| {
            let value = if k.is_recoded() {
                k.of_bytes(&keyset::raw(&k.name))
            } else {
                quote::ident(&k.name)
            };
            format!("{value} AS {}", stage_col('k', i))
        })
        .collect();
    let on: Vec<String> = (shadow_key.iter().enumerate())
        .map(|(i, k)| format!("{dst}.{} = x.{}", quote::ident(&k.name), stage_col('k', i)))
        .collect();
    format!(
        "DELETE {dst} FROM {dst} JOIN (SELECT {} FROM {} WHERE {cond}) AS x ON {}",
        keys.join(", "),
        quote::table(schema, table),
        on.join(" AND ")
    )
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
    let pk: Vec<String> = (key_types.iter().enumerate())
        .map(|(i, ty)| keyset::index_part(&stage_col('k', i), ty))
        .collect();
    // A BLOB/TEXT key column (a prefix primary key's) is indexed by a prefix, which need
    // not be unique over a batch's keys: a plain index then, the keys being distinct anyway.
    let index = if key_types.iter().any(|ty| keyset::needs_prefix(ty)) {
        "KEY _myrecode_by_key"
    } else {
        "PRIMARY KEY"
    };
    format!(
        "CREATE TEMPORARY TABLE {} ({}, {index} ({})) ENGINE=InnoDB",
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

/// Empties the staging table inside a transaction (`TRUNCATE` would commit it).
pub fn stage_delete_sql() -> String {
    format!("DELETE FROM {}", quote::ident(STAGE))
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
    use crate::db::keyset;
    use crate::detect::Label;
    use crate::engine::servercodec::{self, ServerCodec};

    fn k(name: &str) -> KeyColumn {
        KeyColumn::plain(name)
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
        // SMF's settings: PRIMARY KEY (variable(30)) over a TINYTEXT.
        assert_eq!(
            stage_ddl(&["tinytext CHARACTER SET latin1 COLLATE latin1_swedish_ci".into()], 1),
            "CREATE TEMPORARY TABLE `_myrecode_stage` (`_myrecode_k0` tinytext CHARACTER SET latin1 \
             COLLATE latin1_swedish_ci NOT NULL, `_myrecode_v0` LONGBLOB NULL, \
             `_myrecode_s0` TINYINT NOT NULL DEFAULT 0, KEY _myrecode_by_key (`_myrecode_k0`(191))) ENGINE=InnoDB"
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
        assert_eq!(stage_delete_sql(), "DELETE FROM `_myrecode_stage`");
    }

    #[test]
    fn a_recoded_key_clears_the_shadow_by_its_legacy_bytes() {
        let word = KeyColumn {
            name: "word".into(),
            bind: keyset::KeyBind::Recoded {
                from: "cp1251".into(),
                charset: "utf8mb4".into(),
                collation: "utf8mb4_general_ci".into(),
            },
        };
        let shadow_key = [word, k("id")];
        let names = ("s", "t", "t_new");
        // The shadow's key the table's: the condition itself.
        assert_eq!(
            clear_shadow_sql(names, &[k("id")], "`id` > ?", None),
            "DELETE FROM `s`.`t_new` WHERE `id` > ?"
        );
        // Keys named one by one: each found by its bytes read as cp1251.
        assert_eq!(
            clear_shadow_sql(names, &shadow_key, "((`word` = ? AND `id` = ?))", Some(1)),
            "DELETE FROM `s`.`t_new` WHERE (`word` = CONVERT(CONVERT(? USING cp1251) USING utf8mb4) \
             COLLATE utf8mb4_general_ci AND `id` = ?)"
        );
        // A key range: through the table's rows in it.
        assert_eq!(
            clear_shadow_sql(names, &shadow_key, "`word` > ?", None),
            "DELETE `s`.`t_new` FROM `s`.`t_new` JOIN (SELECT CONVERT(CONVERT(CAST(`word` AS BINARY) \
             USING cp1251) USING utf8mb4) COLLATE utf8mb4_general_ci AS `_myrecode_k0`, `id` AS \
             `_myrecode_k1` FROM `s`.`t` WHERE `word` > ?) AS x ON `s`.`t_new`.`word` = \
             x.`_myrecode_k0` AND `s`.`t_new`.`id` = x.`_myrecode_k1`"
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
        let whens = vec![
            named_values::Named::Lists(vec![("KOI".to_string(), "3,5".to_string())]),
            named_values::Named::Lists(vec![]),
        ];
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

//! The in-place strategy's statements, built by pure functions (golden tests below): the
//! session's staging table, the set-based compare-and-set `UPDATE` joined on it, the look-up
//! of the rows it did not match, backups written from it, and the one-value fallbacks.

use crate::bookkeeping::checkpoint::BACKUP;
use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;

/// Name of the session temporary table holding a batch's compare-and-set triples (key, bytes
/// read, bytes to write), apart from the copy's staging table so one session can hold both.
pub const STAGE: &str = "_myrecode_cas";

/// Alias of the recoded table in the statements joined on the staging table.
const TABLE: &str = "_myrecode_t";

/// Alias of the staging table.
const STAGED: &str = "_myrecode_x";

/// Key column `i` of the staging table, named so it cannot clash with the stage's own columns.
fn stage_key(i: usize) -> String {
    quote::ident(&format!("_myrecode_k{i}"))
}

/// The stage's other columns, prefixed so that no column of the table, named bare in the
/// key range of [`update_from_stage_sql`], can be ambiguous.
const N: &str = "_myrecode_n";
const COL: &str = "_myrecode_col";
const KB: &str = "_myrecode_kb";
const LABEL: &str = "_myrecode_label";
const OLD: &str = "_myrecode_old";
const NEW: &str = "_myrecode_new";

/// `CREATE TEMPORARY TABLE` of the staging table: a row number, the key columns as the
/// table types them (`key_types`, charset and collation spelled out, so the join compares
/// as the table does), indexed for the update's look-up from each row of the table, then
/// the column, packed key, label and both values.
pub fn stage_ddl(key_types: &[String]) -> String {
    let keys: Vec<String> = key_types
        .iter()
        .enumerate()
        .map(|(i, ty)| format!("{} {ty} NOT NULL, ", stage_key(i)))
        .collect();
    let index: Vec<String> = (key_types.iter().enumerate())
        .map(|(i, ty)| crate::db::keyset::index_part(&stage_key(i), ty))
        .collect();
    format!(
        "CREATE TEMPORARY TABLE {} ({N} INT NOT NULL PRIMARY KEY, {}{COL} VARCHAR(64) CHARACTER SET utf8mb4 NOT NULL, \
         {KB} BLOB NOT NULL, {LABEL} VARCHAR(40) NOT NULL, {OLD} LONGBLOB NOT NULL, {NEW} LONGBLOB NOT NULL, \
         KEY _myrecode_by_key ({})) ENGINE=InnoDB",
        quote::ident(STAGE),
        keys.concat(),
        index.join(", ")
    )
}

/// `DROP TEMPORARY TABLE` of the staging table.
pub fn stage_drop_sql() -> String {
    format!("DROP TEMPORARY TABLE IF EXISTS {}", quote::ident(STAGE))
}

/// Empties the staging table between batches: `TRUNCATE` commits, so never inside one,
/// and costs far less than a `DELETE` of every row.
pub fn stage_clear_sql() -> String {
    format!("TRUNCATE TABLE {}", quote::ident(STAGE))
}

/// Whether this session may read committed: the binary log is off or logs rows (InnoDB
/// refuses `READ COMMITTED` writes into a statement-based binary log).
pub const MAY_READ_COMMITTED_SQL: &str = "SELECT @@log_bin = 0 OR @@binlog_format <> 'STATEMENT'";

/// The batch's `UPDATE` reads every row of its key range: read committed, the rows it does
/// not write are unlocked as soon as they are read and no gap is locked, so the application
/// waits only on the rows being rewritten.
pub const READ_COMMITTED_SQL: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// One row of the staging table, as [`stage_values_sql`] writes it.
pub struct StageRow<'a> {
    /// Row number within the batch.
    pub n: usize,
    /// The key's raw bytes, one per key column.
    pub key: &'a [Vec<u8>],
    /// The column's name.
    pub col: &'a str,
    /// The packed key, for the backup.
    pub packed: &'a [u8],
    /// The label that justified the change.
    pub label: &'a str,
    /// The bytes read.
    pub old: &'a [u8],
    /// The bytes to write.
    pub new: &'a [u8],
}

/// Stages `rows` as one text-protocol `INSERT` with every value a hex literal: a prepared
/// statement with thousands of `?`s costs the server more to prepare than to run. Keys go
/// in through `UNHEX('…')`, a string the stage's typed column converts as it would a bound
/// value (a bare hex literal would be taken as a number by a numeric column).
pub fn stage_values_sql(key_columns: usize, rows: &[StageRow<'_>]) -> String {
    let cols: String = (0..key_columns)
        .map(|i| format!("{}, ", stage_key(i)))
        .collect();
    let mut out = format!(
        "INSERT INTO {} ({N}, {cols}{COL}, {KB}, {LABEL}, {OLD}, {NEW}) VALUES ",
        quote::ident(STAGE)
    );
    let bytes: usize = (rows.iter())
        .map(|r| {
            r.key.iter().map(Vec::len).sum::<usize>() + r.packed.len() + r.old.len() + r.new.len()
        })
        .sum();
    out.reserve(2 * bytes + 80 * rows.len());
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("({}, ", r.n));
        for k in r.key {
            out.push_str("UNHEX('");
            quote::push_hex(&mut out, k);
            out.push_str("'), ");
        }
        let values: [&[u8]; 5] = [r.col.as_bytes(), r.packed, r.label.as_bytes(), r.old, r.new];
        for (i, v) in values.iter().enumerate() {
            out.push_str(if i == 0 { "X'" } else { ", X'" });
            quote::push_hex(&mut out, v);
            out.push('\'');
        }
        out.push(')');
    }
    out
}

/// `ON` of the table joined to the staging table by key.
fn join_on(key: &[KeyColumn]) -> String {
    key.iter()
        .enumerate()
        .map(|(i, k)| {
            format!(
                "{TABLE}.{} = {STAGED}.{}",
                quote::ident(&k.name),
                stage_key(i)
            )
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// The set-based compare-and-set of one column over one batch's key range: `?` the column's
/// name in the stage, then (when `after`) the key parts the range starts after, then those
/// it ends at, in the orders returned. Every staged row whose value still holds exactly the
/// bytes read gets its new value; a row the application changed since is left alone (the
/// affected count tells how many matched). The table comes first (`STRAIGHT_JOIN`), read
/// by range on its key, so the server updates each row as it reads it rather than
/// collecting them first, as it does for a table later in a join. `binary`: the new bytes
/// go in as they are, else as the UTF-8 text they are.
pub fn update_from_stage_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    column: &str,
    binary: bool,
    after: bool,
) -> (String, Vec<usize>, Vec<usize>) {
    let c = format!("{TABLE}.{}", quote::ident(column));
    let new = if binary {
        format!("{STAGED}.{NEW}")
    } else {
        format!("CONVERT({STAGED}.{NEW} USING utf8mb4)")
    };
    let (lower, lower_binds) = if after {
        let (cond, binds) = keyset::after_in(key, TABLE);
        (format!("{cond} AND "), binds)
    } else {
        (String::new(), Vec::new())
    };
    let (upper, upper_binds) = keyset::at_most_in(key, TABLE);
    let sql = format!(
        "UPDATE {} AS {TABLE} STRAIGHT_JOIN {} AS {STAGED} ON {} AND {STAGED}.{COL} = ? SET {c} = {new} \
         WHERE {lower}{upper} AND CAST({c} AS BINARY) = {STAGED}.{OLD}",
        quote::table(schema, table),
        quote::ident(STAGE),
        join_on(key)
    );
    (sql, lower_binds, upper_binds)
}

/// What one column's staged rows hold now, locked, `?` the column's name in the stage: row
/// number and the value's bytes (`NULL` when the row or its value is gone). Asked only when
/// the set-based update matched fewer rows than were staged.
pub fn staged_now_sql(schema: &str, table: &str, key: &[KeyColumn], column: &str) -> String {
    format!(
        "SELECT {STAGED}.{N}, CAST({TABLE}.{} AS BINARY) FROM {} AS {STAGED} LEFT JOIN {} AS {TABLE} ON {} \
         WHERE {STAGED}.{COL} = ? FOR UPDATE",
        quote::ident(column),
        quote::ident(STAGE),
        quote::table(schema, table),
        join_on(key)
    )
}

/// Forgets `rows` staged rows by row number (the ones the application changed first).
pub fn stage_forget_sql(rows: usize) -> String {
    format!(
        "DELETE FROM {} WHERE {N} IN ({})",
        quote::ident(STAGE),
        vec!["?"; rows].join(", ")
    )
}

/// Saves the originals of every staged value in the backup table, `?` job and `?` table:
/// the bytes travel once, to the stage, and the server copies them on.
pub fn backup_from_stage_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, tbl, col, key_bytes, label, old_value, new_value) \
         SELECT ?, ?, {COL}, {KB}, {LABEL}, {OLD}, {NEW} FROM {}",
        quote::table(schema, BACKUP),
        quote::ident(STAGE)
    )
}

/// The compare-and-set write of one value: `?` new value, the key's `?`s, `?` the bytes read.
pub fn update_if_unchanged_sql(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    column: &str,
) -> String {
    format!(
        "UPDATE {} SET {c} = ? WHERE {} AND CAST({c} AS BINARY) = ?",
        quote::table(schema, table),
        keyset::equals(key),
        c = quote::ident(column)
    )
}

/// Saves `rows` originals in the backup table, seven `?`s per row.
pub fn backup_insert_sql(schema: &str, rows: usize) -> String {
    format!(
        "INSERT INTO {} (job, tbl, col, key_bytes, label, old_value, new_value) VALUES {}",
        quote::table(schema, BACKUP),
        vec!["(?, ?, ?, ?, ?, ?, ?)"; rows].join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> [KeyColumn; 2] {
        [KeyColumn::plain("id`x"), KeyColumn::plain("k")]
    }

    #[test]
    fn the_stage_types_its_key_as_the_table_does() {
        let ddl = stage_ddl(&[
            "int(11)".into(),
            "varchar(20) CHARACTER SET cp1251 COLLATE cp1251_general_ci".into(),
        ]);
        assert_eq!(ddl, "CREATE TEMPORARY TABLE `_myrecode_cas` (_myrecode_n INT NOT NULL PRIMARY KEY, `_myrecode_k0` int(11) NOT NULL, `_myrecode_k1` varchar(20) CHARACTER SET cp1251 COLLATE cp1251_general_ci NOT NULL, _myrecode_col VARCHAR(64) CHARACTER SET utf8mb4 NOT NULL, _myrecode_kb BLOB NOT NULL, _myrecode_label VARCHAR(40) NOT NULL, _myrecode_old LONGBLOB NOT NULL, _myrecode_new LONGBLOB NOT NULL, KEY _myrecode_by_key (`_myrecode_k0`, `_myrecode_k1`)) ENGINE=InnoDB");
        // A TEXT key column (a prefix primary key's) is indexed by a prefix (1170 otherwise).
        let ddl = stage_ddl(&["tinytext CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci".into()]);
        assert!(
            ddl.ends_with("KEY _myrecode_by_key (`_myrecode_k0`(191))) ENGINE=InnoDB"),
            "{ddl}"
        );
        assert_eq!(
            stage_drop_sql(),
            "DROP TEMPORARY TABLE IF EXISTS `_myrecode_cas`"
        );
        assert_eq!(stage_clear_sql(), "TRUNCATE TABLE `_myrecode_cas`");
        let key = [b"7".to_vec(), b"a'b".to_vec()];
        let row = |n| StageRow {
            n,
            key: &key,
            col: "имя",
            packed: b"\x01",
            label: "windows-1251",
            old: b"\xcf'",
            new: "П'".as_bytes(),
        };
        assert_eq!(stage_values_sql(2, &[row(0), row(1)]), "INSERT INTO `_myrecode_cas` (_myrecode_n, `_myrecode_k0`, `_myrecode_k1`, _myrecode_col, _myrecode_kb, _myrecode_label, _myrecode_old, _myrecode_new) VALUES (0, UNHEX('37'), UNHEX('612762'), X'd0b8d0bcd18f', X'01', X'77696e646f77732d31323531', X'cf27', X'd09f27'), (1, UNHEX('37'), UNHEX('612762'), X'd0b8d0bcd18f', X'01', X'77696e646f77732d31323531', X'cf27', X'd09f27')");
        assert_eq!(
            stage_forget_sql(3),
            "DELETE FROM `_myrecode_cas` WHERE _myrecode_n IN (?, ?, ?)"
        );
    }

    #[test]
    fn the_set_based_update_compares_and_sets_each_row_on_its_key() {
        let (sql, lower, upper) =
            update_from_stage_sql("s`1", "таблица", &key(), "na me", false, true);
        assert_eq!(sql, "UPDATE `s``1`.`таблица` AS _myrecode_t STRAIGHT_JOIN `_myrecode_cas` AS _myrecode_x ON _myrecode_t.`id``x` = _myrecode_x.`_myrecode_k0` AND _myrecode_t.`k` = _myrecode_x.`_myrecode_k1` AND _myrecode_x._myrecode_col = ? SET _myrecode_t.`na me` = CONVERT(_myrecode_x._myrecode_new USING utf8mb4) WHERE `_myrecode_t`.`id``x` >= ? AND (`_myrecode_t`.`id``x` > ? OR (`_myrecode_t`.`id``x` = ? AND `_myrecode_t`.`k` > ?)) AND `_myrecode_t`.`id``x` <= ? AND (`_myrecode_t`.`id``x` < ? OR (`_myrecode_t`.`id``x` = ? AND `_myrecode_t`.`k` <= ?)) AND CAST(_myrecode_t.`na me` AS BINARY) = _myrecode_x._myrecode_old");
        assert_eq!((lower, upper), (vec![0, 0, 0, 1], vec![0, 0, 0, 1]));
        let (sql, lower, upper) = update_from_stage_sql("s", "t", &key()[..1], "b", true, false);
        assert_eq!(sql, "UPDATE `s`.`t` AS _myrecode_t STRAIGHT_JOIN `_myrecode_cas` AS _myrecode_x ON _myrecode_t.`id``x` = _myrecode_x.`_myrecode_k0` AND _myrecode_x._myrecode_col = ? SET _myrecode_t.`b` = _myrecode_x._myrecode_new WHERE `_myrecode_t`.`id``x` <= ? AND CAST(_myrecode_t.`b` AS BINARY) = _myrecode_x._myrecode_old");
        assert_eq!((lower, upper), (vec![], vec![0]));
        assert_eq!(staged_now_sql("s", "t", &key()[..1], "c`"), "SELECT _myrecode_x._myrecode_n, CAST(_myrecode_t.`c``` AS BINARY) FROM `_myrecode_cas` AS _myrecode_x LEFT JOIN `s`.`t` AS _myrecode_t ON _myrecode_t.`id``x` = _myrecode_x.`_myrecode_k0` WHERE _myrecode_x._myrecode_col = ? FOR UPDATE");
        assert_eq!(backup_from_stage_sql("a`b"), "INSERT INTO `a``b`.`_myrecode_backup` (job, tbl, col, key_bytes, label, old_value, new_value) SELECT ?, ?, _myrecode_col, _myrecode_kb, _myrecode_label, _myrecode_old, _myrecode_new FROM `_myrecode_cas`");
    }

    #[test]
    fn compare_and_set_statements_quote_odd_identifiers() {
        assert_eq!(
            update_if_unchanged_sql("s`1", "t", &key(), "na me"),
            "UPDATE `s``1`.`t` SET `na me` = ? WHERE `id``x` = ? AND `k` = ? AND CAST(`na me` AS BINARY) = ?"
        );
        assert_eq!(
            backup_insert_sql("s", 2),
            "INSERT INTO `s`.`_myrecode_backup` (job, tbl, col, key_bytes, label, old_value, new_value) \
             VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?)"
        );
    }
}

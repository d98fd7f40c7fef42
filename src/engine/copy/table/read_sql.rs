//! The statements a table's copy, check and replay read and write by: key ranges, locked
//! reads, the shadow's rows cleared, the change log read, emptied and filled, and the
//! isolation the copy's connections read at. Pure (golden tests below).

use crate::db::keyset::{self, KeyColumn};
use crate::db::quote;

/// Every connection of a copy reads at this level: the check pass compares one snapshot.
pub const REPEATABLE_READ: &str = "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ";

/// The writers of several copy streams read committed (see [`crate::engine::copy::table::parallel`]).
pub const READ_COMMITTED: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str) -> KeyColumn {
        KeyColumn::plain(name)
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
        assert_eq!(cond, "NOT (`a``b` > ?)");
        assert_eq!(binds.len(), 1);
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
        let n = crate::bookkeeping::names::names("a`b");
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
    fn at_most_negates_after_and_any_of_ors_equalities() {
        let (c, binds) = at_most(&[k("a"), k("b")]);
        assert_eq!(c, "NOT (`a` >= ? AND (`a` > ? OR (`a` = ? AND `b` > ?)))");
        assert_eq!(binds, vec![0, 0, 0, 1]);
        assert_eq!(
            any_of(&[k("a"), k("b")], 2),
            "(`a` = ? AND `b` = ?) OR (`a` = ? AND `b` = ?)"
        );
    }
}

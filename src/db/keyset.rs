//! SQL for keyset pagination over a (possibly composite) key, built by pure functions.
//!
//! Key values travel as raw bytes (`CAST(k AS BINARY)`) and come back as bind
//! parameters converted into the key column's own charset and collation, so the
//! comparison uses the same order as `ORDER BY` and the index is used.

use super::quote;

/// How a key column's value is bound back into a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyBind {
    /// Numbers, dates, binary strings: the raw text of the value compares correctly as is.
    Plain,
    /// Text: the bytes are relabelled into this charset and collation.
    Text {
        /// Charset of the key column.
        charset: String,
        /// Collation of the key column.
        collation: String,
    },
    /// A copy's shadow column holding the recoded value of a key column: the bytes bound (the
    /// original's) are read in the legacy charset `from`, then compared in the shadow's own
    /// charset and collation, so the shadow's row is found by the original's key.
    Recoded {
        /// The server's name of the key column's legacy charset (`cp1251`).
        from: String,
        /// Charset of the shadow's column.
        charset: String,
        /// Collation of the shadow's column.
        collation: String,
    },
}

/// One column of the paging key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyColumn {
    /// Column name.
    pub name: String,
    /// How its value is bound back.
    pub bind: KeyBind,
}

impl KeyColumn {
    /// A key column compared as it is (numbers, dates, binary strings).
    pub fn plain(name: &str) -> Self {
        KeyColumn {
            name: name.into(),
            bind: KeyBind::Plain,
        }
    }

    /// The bind expression for this column's value (`?`, or `?` relabelled into its charset).
    pub fn placeholder(&self) -> String {
        self.of_bytes("?")
    }

    /// The value of this column for the key bytes `bytes` (an SQL expression of the
    /// original's stored bytes): as they are, relabelled into the column's charset, or read
    /// in the legacy charset and converted into the shadow's ([`KeyBind::Recoded`]).
    pub fn of_bytes(&self, bytes: &str) -> String {
        match &self.bind {
            KeyBind::Plain => bytes.to_string(),
            KeyBind::Text { charset, collation } => format!(
                "CONVERT({bytes} USING {}) COLLATE {}",
                safe_word(charset),
                safe_word(collation)
            ),
            KeyBind::Recoded {
                from,
                charset,
                collation,
            } => format!(
                "CONVERT(CONVERT({bytes} USING {}) USING {}) COLLATE {}",
                safe_word(from),
                safe_word(charset),
                safe_word(collation)
            ),
        }
    }

    /// The original's key bytes of this column as `value` (an SQL expression of the column
    /// in its own table) holds them: a recoded value converted back into its legacy charset.
    pub fn bytes_of(&self, value: &str) -> String {
        match &self.bind {
            KeyBind::Recoded { from, .. } => {
                format!("CAST(CONVERT({value} USING {}) AS BINARY)", safe_word(from))
            }
            _ => format!("CAST({value} AS BINARY)"),
        }
    }

    /// Whether the column holds the recoded value of the original's key ([`KeyBind::Recoded`]).
    pub fn is_recoded(&self) -> bool {
        matches!(self.bind, KeyBind::Recoded { .. })
    }
}

/// Charset and collation names are words; anything else is refused rather than spliced into SQL.
fn safe_word(w: &str) -> &str {
    if !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        w
    } else {
        "binary"
    }
}

/// `WHERE` condition for "strictly after the given key", and the key index to bind for each `?`.
///
/// For key (a, b): `a >= ? AND (a > ? OR (a = ? AND b > ?))`; the leading `a >= ?`
/// gives every optimizer a plain range on the first column. A one-column key is that range
/// alone (`a > ?`): a second test of the same bound was evaluated on every row the copy's
/// `INSERT … SELECT` read, for nothing.
pub fn after(key: &[KeyColumn]) -> (String, Vec<usize>) {
    bound(key, None, ">=", ">", ">")
}

/// [`after`] with each key column named through table alias `alias` (`alias.col`): in a
/// join, a bare name the other table also has would be ambiguous (1052).
pub fn after_in(key: &[KeyColumn], alias: &str) -> (String, Vec<usize>) {
    bound(key, Some(alias), ">=", ">", ">")
}

/// [`at_most`] with each key column named through table alias `alias` (see [`after_in`]).
pub fn at_most_in(key: &[KeyColumn], alias: &str) -> (String, Vec<usize>) {
    bound(key, Some(alias), "<=", "<", "<=")
}

/// `WHERE` condition for "at or before the given key", and the key index to bind for each
/// `?`: for key (a, b), `a <= ? AND (a < ? OR (a = ? AND b <= ?))`; with [`after`] it bounds
/// one batch's key range, so a statement over the batch reads by range on the key.
pub fn at_most(key: &[KeyColumn]) -> (String, Vec<usize>) {
    bound(key, None, "<=", "<", "<=")
}

/// A key bound in the form [`after`] and [`at_most`] take: `lead` on the first column for a
/// plain range, then per prefix of equal columns, `strict` on the next one (`last` on the last).
fn bound(
    key: &[KeyColumn],
    alias: Option<&str>,
    lead: &str,
    strict: &str,
    last: &str,
) -> (String, Vec<usize>) {
    let col = |k: &KeyColumn| match alias {
        Some(a) => format!("{}.{}", quote::ident(a), quote::ident(&k.name)),
        None => quote::ident(&k.name),
    };
    if let [one] = key {
        let cond = format!("{} {last} {}", col(one), one.placeholder());
        return (cond, vec![0]);
    }
    let mut binds = vec![0];
    let mut ors = Vec::new();
    for i in 0..key.len() {
        let mut ands = Vec::new();
        for (j, k) in key.iter().enumerate().take(i) {
            ands.push(format!("{} = {}", col(k), k.placeholder()));
            binds.push(j);
        }
        let op = if i + 1 == key.len() { last } else { strict };
        ands.push(format!("{} {op} {}", col(&key[i]), key[i].placeholder()));
        binds.push(i);
        ors.push(if ands.len() == 1 {
            ands.remove(0)
        } else {
            format!("({})", ands.join(" AND "))
        });
    }
    let cond = format!(
        "{} {lead} {} AND ({})",
        col(&key[0]),
        key[0].placeholder(),
        ors.join(" OR ")
    );
    (cond, binds)
}

/// `WHERE` for one row by its key: `k1 = P1 AND k2 = P2`, binding key parts in order.
pub fn equals(key: &[KeyColumn]) -> String {
    key.iter()
        .map(|k| format!("{} = {}", quote::ident(&k.name), k.placeholder()))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// `SELECT` of one batch: key columns as raw bytes, then `values` as raw bytes, in key order.
pub fn select_batch(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    values: &[String],
    after_key: bool,
    limit: usize,
) -> (String, Vec<usize>) {
    let exprs: Vec<String> = values.iter().map(|v| raw(v)).collect();
    select_in_key_order(schema, table, key, &exprs, after_key, &limit.to_string())
}

/// `SELECT` of one batch: key columns as raw bytes, then the SQL expressions `exprs`, in key order.
pub fn select_batch_of(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    exprs: &[String],
    after_key: bool,
    limit: usize,
) -> (String, Vec<usize>) {
    select_in_key_order(schema, table, key, exprs, after_key, &limit.to_string())
}

/// `SELECT` of the key `skip` rows further on, for spreading a sample over the table.
pub fn select_key_at_offset(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    after_key: bool,
    skip: u64,
) -> (String, Vec<usize>) {
    select_in_key_order(schema, table, key, &[], after_key, &format!("{skip}, 1"))
}

fn select_in_key_order(
    schema: &str,
    table: &str,
    key: &[KeyColumn],
    exprs: &[String],
    after_key: bool,
    limit: &str,
) -> (String, Vec<usize>) {
    let mut cols: Vec<String> = key.iter().map(|k| raw(&k.name)).collect();
    cols.extend(exprs.iter().cloned());
    let order: Vec<String> = key.iter().map(|k| quote::ident(&k.name)).collect();
    let (cond, binds) = if after_key {
        after(key)
    } else {
        (String::new(), Vec::new())
    };
    // Without a key (a keyless table, read whole or sampled), no order to keep.
    let order = if order.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", order.join(", "))
    };
    let sql = format!(
        "SELECT {} FROM {}{}{order} LIMIT {limit}",
        cols.join(", "),
        quote::table(schema, table),
        if after_key {
            format!(" WHERE {cond}")
        } else {
            String::new()
        },
    );
    (sql, binds)
}

/// Characters (or bytes) of a BLOB/TEXT key column a staging table indexes: 764 bytes in
/// utf8mb4, within every row format's limit for one column.
pub const STAGED_PREFIX: u32 = 191;

/// Whether a column of type `column_type` (`tinytext`, `blob`, …) can be indexed only by a
/// prefix: a key over it (a prefix primary key's column) names a length in a staging table.
pub fn needs_prefix(column_type: &str) -> bool {
    let base = column_type
        .trim()
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    base.ends_with("text") || base.ends_with("blob")
}

/// An index part over the (quoted) column `column` of type `column_type`: a BLOB/TEXT type
/// takes its first [`STAGED_PREFIX`] characters, which the server requires (1170).
pub fn index_part(column: &str, column_type: &str) -> String {
    if needs_prefix(column_type) {
        format!("{column}({STAGED_PREFIX})")
    } else {
        column.to_string()
    }
}

/// A column read as its stored bytes: the server must not convert them on the way.
pub fn raw(column: &str) -> String {
    format!("CAST({} AS BINARY)", quote::ident(column))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recoded_key_part_reads_the_original_bytes_in_its_legacy_charset() {
        let k = KeyColumn {
            name: "word".into(),
            bind: KeyBind::Recoded {
                from: "cp1251".into(),
                charset: "utf8mb4".into(),
                collation: "utf8mb4_general_ci".into(),
            },
        };
        assert_eq!(
            k.placeholder(),
            "CONVERT(CONVERT(? USING cp1251) USING utf8mb4) COLLATE utf8mb4_general_ci"
        );
        assert_eq!(
            equals(&[k.clone(), KeyColumn::plain("id")]),
            "`word` = CONVERT(CONVERT(? USING cp1251) USING utf8mb4) COLLATE utf8mb4_general_ci AND `id` = ?"
        );
        assert_eq!(
            k.bytes_of("s.`word`"),
            "CAST(CONVERT(s.`word` USING cp1251) AS BINARY)"
        );
        assert_eq!(
            KeyColumn::plain("id").bytes_of("s.`id`"),
            "CAST(s.`id` AS BINARY)"
        );
        assert!(k.is_recoded() && !KeyColumn::plain("id").is_recoded());
    }

    #[test]
    fn a_bound_through_an_alias_names_each_key_column_through_it() {
        let key = [KeyColumn::plain("_myrecode_n"), KeyColumn::plain("b`")];
        assert_eq!(
            after_in(&key, "t"),
            (
                "`t`.`_myrecode_n` >= ? AND (`t`.`_myrecode_n` > ? OR (`t`.`_myrecode_n` = ? AND `t`.`b``` > ?))".to_string(),
                vec![0, 0, 0, 1]
            )
        );
        assert_eq!(
            at_most_in(&key[..1], "t"),
            ("`t`.`_myrecode_n` <= ?".to_string(), vec![0])
        );
    }

    fn k(name: &str) -> KeyColumn {
        KeyColumn::plain(name)
    }

    #[test]
    fn blob_and_text_key_columns_are_indexed_by_a_prefix() {
        assert_eq!(index_part("`k0`", "int(11)"), "`k0`");
        assert_eq!(
            index_part("`k0`", "varchar(255) CHARACTER SET latin1"),
            "`k0`"
        );
        assert_eq!(
            index_part(
                "`k0`",
                "tinytext CHARACTER SET latin1 COLLATE latin1_swedish_ci"
            ),
            "`k0`(191)"
        );
        assert_eq!(index_part("`k1`", "BLOB"), "`k1`(191)");
        assert!(!needs_prefix("textual_enum"));
    }

    #[test]
    fn without_a_key_a_batch_is_any_rows() {
        let (sql, binds) = select_batch("s", "t", &[], &["note".to_string()], false, 100);
        assert_eq!(sql, "SELECT CAST(`note` AS BINARY) FROM `s`.`t` LIMIT 100");
        assert!(binds.is_empty());
    }

    #[test]
    fn at_most_bounds_a_batch_from_above() {
        let key = [KeyColumn::plain("a`"), KeyColumn::plain("b")];
        assert_eq!(
            at_most(&key),
            (
                "`a``` <= ? AND (`a``` < ? OR (`a``` = ? AND `b` <= ?))".to_string(),
                vec![0, 0, 0, 1]
            )
        );
        assert_eq!(at_most(&key[..1]), ("`a``` <= ?".to_string(), vec![0]));
    }

    #[test]
    fn single_column_after() {
        let (sql, binds) = after(&[k("id")]);
        assert_eq!(sql, "`id` > ?");
        assert_eq!(binds, vec![0]);
    }

    #[test]
    fn composite_after_binds_in_order() {
        let (sql, binds) = after(&[k("a"), k("b"), k("c")]);
        assert_eq!(
            sql,
            "`a` >= ? AND (`a` > ? OR (`a` = ? AND `b` > ?) OR (`a` = ? AND `b` = ? AND `c` > ?))"
        );
        assert_eq!(binds, vec![0, 0, 0, 1, 0, 1, 2]);
    }

    #[test]
    fn text_keys_compare_in_their_collation() {
        let key = KeyColumn {
            name: "lo`gin".into(),
            bind: KeyBind::Text {
                charset: "latin1".into(),
                collation: "latin1_swedish_ci".into(),
            },
        };
        let (sql, _) = select_batch("s", "t", &[key], &["body".into()], true, 10);
        assert_eq!(
            sql,
            "SELECT CAST(`lo``gin` AS BINARY), CAST(`body` AS BINARY) FROM `s`.`t` WHERE `lo``gin` > CONVERT(? USING latin1) COLLATE latin1_swedish_ci ORDER BY `lo``gin` LIMIT 10"
        );
    }

    #[test]
    fn equals_uses_each_columns_binding() {
        let key = vec![
            k("a"),
            KeyColumn {
                name: "b".into(),
                bind: KeyBind::Text {
                    charset: "latin1".into(),
                    collation: "latin1_bin".into(),
                },
            },
        ];
        assert_eq!(
            equals(&key),
            "`a` = ? AND `b` = CONVERT(? USING latin1) COLLATE latin1_bin"
        );
    }

    #[test]
    fn refuses_odd_charset_names() {
        assert_eq!(safe_word("latin1; DROP"), "binary");
    }
}

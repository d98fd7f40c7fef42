//! The check pass's statements, built by pure functions (golden tests below): the comparison
//! of a key range of the table with the same range of the shadow, the search for rows only
//! the shadow has, and the counts that say whether to search.

use crate::db::keyset::KeyColumn;
use crate::db::quote;
use crate::engine::copy::table::job_column::JobColumn;

/// `SELECT COUNT(*)` of the rows of one table matching `cond`.
pub fn count_where_sql(schema: &str, table: &str, cond: &str) -> String {
    format!(
        "SELECT COUNT(*) FROM {} WHERE {cond}",
        quote::table(schema, table)
    )
}

/// What the check pass compares: `src` (aliased `a`) with `dst` (aliased `s`), two tables of
/// one schema with the same key and columns, `dst` holding the job columns recoded.
#[derive(Debug, Clone, Copy)]
pub struct Compare<'a> {
    /// Schema of both tables.
    pub schema: &'a str,
    /// The table whose rows are compared (the original).
    pub src: &'a str,
    /// The table they are compared with (the copy).
    pub dst: &'a str,
    /// The paging key of `src`.
    pub key: &'a [KeyColumn],
    /// The same key as `dst` holds it: `key` itself, but for the parts the job recodes,
    /// which `dst` holds recoded ([`KeyColumn::is_recoded`]).
    pub dst_key: &'a [KeyColumn],
    /// Every stored column, the key's and the job's among them.
    pub all_columns: &'a [String],
    /// The job columns, in the plan's order.
    pub job: &'a [JobColumn],
    /// Each job column's charset in `dst` (`None`: binary), in the same order.
    pub target_charsets: &'a [Option<String>],
}

/// Where [`Compare::suspects_sql`] puts each value in a row: the key's raw bytes first (in
/// key order), then per job column its stored bytes, its bytes in `dst` and the server's
/// conversion from the declared charset, then two flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompareLayout {
    keys: usize,
    columns: usize,
}

impl CompareLayout {
    /// How many key columns lead the row.
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// Job column `ci`'s bytes as `src` stores them.
    pub fn stored(&self, ci: usize) -> usize {
        self.keys + ci
    }

    /// Job column `ci`'s bytes in `dst`.
    pub fn copied(&self, ci: usize) -> usize {
        self.keys + self.columns + ci
    }

    /// The server's conversion of job column `ci` from its declared charset to its target's.
    pub fn declared(&self, ci: usize) -> usize {
        self.keys + 2 * self.columns + ci
    }

    /// Whether `dst` lacks the row.
    pub fn missing(&self) -> usize {
        self.keys + 3 * self.columns
    }

    /// Whether every column outside the key and the job is byte for byte equal.
    pub fn others_same(&self) -> usize {
        self.keys + 3 * self.columns + 1
    }
}

/// A column of the row aliased `row`, as its stored bytes.
pub(crate) fn bin(row: &str, column: &str) -> String {
    format!("CAST({row}.{} AS BINARY)", quote::ident(column))
}

impl Compare<'_> {
    /// The rows of `src` matching `range` that `dst` lacks or holds otherwise than expected:
    /// a column outside the key and the job not byte for byte equal, or a job column that is
    /// not its default conversion ([`JobColumn::default_expr`], into the target's charset).
    /// Those are only suspects: the caller judges them with the values [`CompareLayout`] places.
    pub fn suspects_sql(&self, range: &str) -> (String, CompareLayout) {
        self.suspects_sql_with(range, &[])
    }

    /// [`Compare::suspects_sql`] with `extra` expressions appended to each row (after the
    /// values [`CompareLayout`] places).
    pub fn suspects_sql_with(&self, range: &str, extra: &[String]) -> (String, CompareLayout) {
        let mut differs: Vec<String> = self
            .others()
            .map(|c| format!("NOT ({} <=> {})", bin("a", c), bin("s", c)))
            .collect();
        let others_same = if differs.is_empty() {
            "1".to_string()
        } else {
            format!("NOT ({})", differs.join(" OR "))
        };
        let declared: Vec<String> = (0..self.job.len()).map(|j| self.declared("a", j)).collect();
        for (j, jc) in self.job.iter().enumerate() {
            differs.push(format!(
                "NOT ({} <=> {})",
                self.expected("a", j),
                bin("s", &jc.name)
            ));
        }
        let first_key = quote::ident(&self.key[0].name);
        let mut cols: Vec<String> = self.key.iter().map(|k| bin("a", &k.name)).collect();
        cols.extend(self.job.iter().map(|jc| bin("a", &jc.name)));
        cols.extend(self.job.iter().map(|jc| bin("s", &jc.name)));
        cols.extend(declared);
        cols.push(format!("s.{first_key} IS NULL"));
        cols.push(others_same);
        cols.extend(extra.iter().cloned());
        let sql = format!(
            "SELECT {} FROM (SELECT * FROM {} WHERE {range}) AS a LEFT JOIN {} AS s ON {} \
             WHERE s.{first_key} IS NULL OR {}",
            cols.join(", "),
            quote::table(self.schema, self.src),
            quote::table(self.schema, self.dst),
            self.on(),
            differs.join(" OR ")
        );
        let layout = CompareLayout {
            keys: self.key.len(),
            columns: self.job.len(),
        };
        (sql, layout)
    }

    /// The stored columns outside the key and the job, copied byte for byte.
    pub(crate) fn others(&self) -> impl Iterator<Item = &String> {
        self.all_columns.iter().filter(|c| {
            !self.key.iter().any(|k| &k.name == *c) && !self.job.iter().any(|j| &j.name == *c)
        })
    }

    /// The server's conversion of job column `j` of row `row` of `src` from its declared
    /// charset to its target's, as bytes.
    pub(crate) fn declared(&self, row: &str, j: usize) -> String {
        let jc = &self.job[j];
        match &self.target_charsets[j] {
            Some(cs) => format!(
                "CAST(CONVERT({row}.{} USING {}) AS BINARY)",
                quote::ident(&jc.name),
                quote::ident(cs)
            ),
            None => bin(row, &jc.name),
        }
    }

    /// The bytes the copy writes by default for job column `j` of row `row` of `src`: its
    /// [`JobColumn::default_expr`] in the target's charset (the declared conversion without
    /// a server codec).
    pub(crate) fn expected(&self, row: &str, j: usize) -> String {
        let jc = &self.job[j];
        match (&self.target_charsets[j], &jc.server) {
            (Some(cs), Some(_)) => format!(
                "CAST(CONVERT({} USING {}) AS BINARY)",
                jc.default_expr(row),
                quote::ident(cs)
            ),
            _ => self.declared(row, j),
        }
    }

    /// The keys (raw bytes) of the rows of `dst` matching `range` that `src` lacks.
    pub fn only_in_dst_sql(&self, range: &str) -> String {
        let keys: Vec<String> = self.key.iter().map(|k| bin("s", &k.name)).collect();
        format!(
            "SELECT {} FROM (SELECT * FROM {} WHERE {range}) AS s WHERE NOT EXISTS \
             (SELECT 1 FROM {} AS a WHERE {})",
            keys.join(", "),
            quote::table(self.schema, self.dst),
            quote::table(self.schema, self.src),
            self.on()
        )
    }

    /// The join of a row of `src` (`a`) with its row in `dst` (`s`): every key column equal,
    /// a recoded one as `src`'s bytes read in its legacy charset (so `dst`'s index finds it).
    fn on(&self) -> String {
        self.dst_key
            .iter()
            .map(|k| {
                let name = quote::ident(&k.name);
                if k.is_recoded() {
                    format!("s.{name} = {}", k.of_bytes(&bin("a", &k.name)))
                } else {
                    format!("a.{name} = s.{name}")
                }
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// Whether `dst` holds a key part recoded: its rows are then not in `src`'s key order,
    /// and a key range of `src` is no range of `dst` ([`Compare::orphans_sql`]).
    pub fn key_recoded(&self) -> bool {
        self.dst_key.iter().any(KeyColumn::is_recoded)
    }

    /// The keys (as `src` holds them, raw bytes) of every row of `dst` that `src` lacks,
    /// for a `dst` whose key holds a recoded part: looked for once over the whole of `dst`,
    /// each row's key converted back into `src`'s bytes and found by `src`'s index.
    pub fn orphans_sql(&self) -> String {
        let keys: Vec<String> = (self.dst_key.iter())
            .map(|k| k.bytes_of(&format!("s.{}", quote::ident(&k.name))))
            .collect();
        let on: Vec<String> = (self.key.iter().zip(self.dst_key).zip(&keys))
            .map(|((k, d), bytes)| {
                let name = quote::ident(&k.name);
                if d.is_recoded() {
                    format!("a.{name} = {}", k.of_bytes(bytes))
                } else {
                    format!("a.{name} = s.{name}")
                }
            })
            .collect();
        format!(
            "SELECT {} FROM {} AS s WHERE NOT EXISTS (SELECT 1 FROM {} AS a WHERE {})",
            keys.join(", "),
            quote::table(self.schema, self.dst),
            quote::table(self.schema, self.src),
            on.join(" AND ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Encoding;
    use crate::detect::Label;
    use crate::engine::servercodec::{self, ServerCodec};

    fn job(name: &str, binary: bool, server: Option<ServerCodec>) -> JobColumn {
        JobColumn {
            name: name.into(),
            binary,
            server,
        }
    }

    #[test]
    fn suspects_compare_every_column_over_a_composite_key() {
        let cp1251 = Encoding::Windows1251;
        let sc = ServerCodec::from_server(Label::Legacy(cp1251), &servercodec::ours(cp1251));
        assert!(sc.is_some());
        let key = [KeyColumn::plain("a`b"), KeyColumn::plain("order")];
        let all: Vec<String> = ["a`b", "order", "na me", "заголовок", "текст", "blob"]
            .map(String::from)
            .to_vec();
        let jobs = [
            job("заголовок", false, sc),
            job("текст", false, None),
            job("blob", true, None),
        ];
        let charsets = [Some("utf8mb4".to_string()), Some("utf8mb4".into()), None];
        let cmp = Compare {
            schema: "my db",
            src: "t",
            dst: "t_myrecode_new",
            key: &key,
            dst_key: &key,
            all_columns: &all,
            job: &jobs,
            target_charsets: &charsets,
        };
        let (sql, layout) = cmp.suspects_sql("`a``b` >= ?");
        assert_eq!(
            sql,
            "SELECT CAST(a.`a``b` AS BINARY), CAST(a.`order` AS BINARY), \
             CAST(a.`заголовок` AS BINARY), CAST(a.`текст` AS BINARY), CAST(a.`blob` AS BINARY), \
             CAST(s.`заголовок` AS BINARY), CAST(s.`текст` AS BINARY), CAST(s.`blob` AS BINARY), \
             CAST(CONVERT(a.`заголовок` USING `utf8mb4`) AS BINARY), \
             CAST(CONVERT(a.`текст` USING `utf8mb4`) AS BINARY), CAST(a.`blob` AS BINARY), \
             s.`a``b` IS NULL, NOT (NOT (CAST(a.`na me` AS BINARY) <=> CAST(s.`na me` AS BINARY))) \
             FROM (SELECT * FROM `my db`.`t` WHERE `a``b` >= ?) AS a \
             LEFT JOIN `my db`.`t_myrecode_new` AS s ON a.`a``b` = s.`a``b` AND a.`order` = s.`order` \
             WHERE s.`a``b` IS NULL \
             OR NOT (CAST(a.`na me` AS BINARY) <=> CAST(s.`na me` AS BINARY)) \
             OR NOT (CAST(CONVERT(CONVERT(CAST(a.`заголовок` AS BINARY) USING `cp1251`) USING `utf8mb4`) AS BINARY) \
             <=> CAST(s.`заголовок` AS BINARY)) \
             OR NOT (CAST(CONVERT(a.`текст` USING `utf8mb4`) AS BINARY) <=> CAST(s.`текст` AS BINARY)) \
             OR NOT (CAST(a.`blob` AS BINARY) <=> CAST(s.`blob` AS BINARY))"
        );
        assert_eq!(layout.keys(), 2);
        assert_eq!(
            (layout.stored(1), layout.copied(1), layout.declared(1)),
            (3, 6, 9)
        );
        assert_eq!((layout.missing(), layout.others_same()), (11, 12));
        assert_eq!(
            cmp.only_in_dst_sql("1 = 1"),
            "SELECT CAST(s.`a``b` AS BINARY), CAST(s.`order` AS BINARY) \
             FROM (SELECT * FROM `my db`.`t_myrecode_new` WHERE 1 = 1) AS s WHERE NOT EXISTS \
             (SELECT 1 FROM `my db`.`t` AS a WHERE a.`a``b` = s.`a``b` AND a.`order` = s.`order`)"
        );
    }

    #[test]
    fn a_recoded_key_joins_by_the_originals_bytes_and_orphans_are_found_back_through_them() {
        use crate::db::keyset::KeyBind;
        let key = [
            KeyColumn {
                name: "word".into(),
                bind: KeyBind::Text {
                    charset: "latin1".into(),
                    collation: "latin1_swedish_ci".into(),
                },
            },
            KeyColumn::plain("id"),
        ];
        let dst_key = [
            KeyColumn {
                name: "word".into(),
                bind: KeyBind::Recoded {
                    from: "cp1251".into(),
                    charset: "utf8mb4".into(),
                    collation: "utf8mb4_general_ci".into(),
                },
            },
            KeyColumn::plain("id"),
        ];
        let all: Vec<String> = vec!["word".into(), "id".into()];
        let jobs = [job("word", false, None)];
        let charsets = [Some("utf8mb4".to_string())];
        let cmp = Compare {
            schema: "s",
            src: "t",
            dst: "n",
            key: &key,
            dst_key: &dst_key,
            all_columns: &all,
            job: &jobs,
            target_charsets: &charsets,
        };
        assert!(cmp.key_recoded());
        assert!(cmp.suspects_sql("1 = 1").0.contains(
            "LEFT JOIN `s`.`n` AS s ON s.`word` = CONVERT(CONVERT(CAST(a.`word` AS BINARY) USING cp1251) \
             USING utf8mb4) COLLATE utf8mb4_general_ci AND a.`id` = s.`id` WHERE"
        ));
        assert_eq!(
            cmp.orphans_sql(),
            "SELECT CAST(CONVERT(s.`word` USING cp1251) AS BINARY), CAST(s.`id` AS BINARY) FROM `s`.`n` AS s \
             WHERE NOT EXISTS (SELECT 1 FROM `s`.`t` AS a WHERE a.`word` = \
             CONVERT(CAST(CONVERT(s.`word` USING cp1251) AS BINARY) USING latin1) COLLATE latin1_swedish_ci \
             AND a.`id` = s.`id`)"
        );
    }

    #[test]
    fn without_other_columns_the_rest_is_trivially_the_same() {
        let key = [KeyColumn::plain("id")];
        let all: Vec<String> = vec!["id".into(), "c".into()];
        let jobs = [job("c", false, None)];
        let charsets = [Some("utf8mb4".to_string())];
        let cmp = Compare {
            schema: "s",
            src: "t",
            dst: "n",
            key: &key,
            dst_key: &key,
            all_columns: &all,
            job: &jobs,
            target_charsets: &charsets,
        };
        assert_eq!(
            cmp.suspects_sql("1 = 1").0,
            "SELECT CAST(a.`id` AS BINARY), CAST(a.`c` AS BINARY), CAST(s.`c` AS BINARY), \
             CAST(CONVERT(a.`c` USING `utf8mb4`) AS BINARY), s.`id` IS NULL, 1 \
             FROM (SELECT * FROM `s`.`t` WHERE 1 = 1) AS a LEFT JOIN `s`.`n` AS s ON a.`id` = s.`id` \
             WHERE s.`id` IS NULL OR NOT (CAST(CONVERT(a.`c` USING `utf8mb4`) AS BINARY) <=> CAST(s.`c` AS BINARY))"
        );
        assert_eq!(
            count_where_sql("s", "na`me", "`id` > ?"),
            "SELECT COUNT(*) FROM `s`.`na``me` WHERE `id` > ?"
        );
    }
}

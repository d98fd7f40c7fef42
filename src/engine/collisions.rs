//! Rows that would become equal on a unique key once the job recodes a column of it, found
//! by the server before anything is written (`plan --check`, the rehearsal, `run`).
//!
//! A copy that recodes a key column ([`crate::job::refusal::recoded_key_columns`]) decides
//! each value under the column's fixed `source:` label; the server's conversion under that
//! label gives the same text ([`crate::engine::servercodec`]), and grouping by it in the
//! target's collation finds what the new unique key would refuse: `ёлка`/`елка` under
//! `utf8mb4_unicode_ci` or `utf8mb4_general_ci`, case, trailing spaces under PAD SPACE.
//! Left to the rebuild, such rows would stop the cut-over (1062) under its lock.

use crate::db::quote;
use crate::engine::servercodec;
use crate::inventory::model::{Index, Table};
use crate::job::model::TableJob;
use crate::job::refusal::{At, Class, Refusal};
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};

/// Groups of colliding rows shown per key, at most.
const SHOWN: usize = 5;

/// How a column of a unique key reads once recoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A column the job leaves as it is.
    Kept {
        /// Column name.
        column: String,
        /// Prefix length of the index part, if any.
        prefix: Option<u64>,
    },
    /// A job column: its bytes read under `source`, converted into `charset`, compared in
    /// `collation` (`None`: the charset's default).
    Recoded {
        /// Column name.
        column: String,
        /// Prefix length of the index part, if any.
        prefix: Option<u64>,
        /// The server's charset for the column's `source:` label.
        source: String,
        /// The target's charset.
        charset: String,
        /// The target's collation, if it names one.
        collation: Option<String>,
    },
}

/// A charset or collation name is a word; anything else is never spliced into SQL.
fn word(w: &str) -> Option<&str> {
    (!w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then_some(w)
}

impl Part {
    /// The part's value once recoded, as utf8mb4 text (for showing), and the expression the
    /// new key compares by; `None` when a name is not a plain word.
    fn exprs(&self) -> Option<(String, String)> {
        let cut = |e: String, prefix: Option<u64>| match prefix {
            Some(n) => format!("LEFT({e}, {n})"),
            None => e,
        };
        match self {
            Part::Kept { column, prefix } => {
                let c = cut(quote::ident(column), *prefix);
                Some((format!("CONVERT({c} USING utf8mb4)"), c))
            }
            Part::Recoded {
                column,
                prefix,
                source,
                charset,
                collation,
            } => {
                let value = cut(
                    format!(
                        "CONVERT(CONVERT(CAST({} AS BINARY) USING {}) USING {})",
                        quote::ident(column),
                        word(source)?,
                        word(charset)?
                    ),
                    *prefix,
                );
                let compared = match collation {
                    Some(c) => format!("{value} COLLATE {}", word(c)?),
                    None => value.clone(),
                };
                Some((format!("CONVERT({value} USING utf8mb4)"), compared))
            }
        }
    }
}

/// The groups of rows of `schema`.`table` equal on the key of `parts` once recoded: per
/// group its row count and its rows' key values (`a, b | a, b`), at most [`SHOWN`] groups;
/// `None` when a name is not a plain word.
pub fn collisions_sql(schema: &str, table: &str, parts: &[Part]) -> Option<String> {
    let exprs: Vec<(String, String)> = parts.iter().map(Part::exprs).collect::<Option<_>>()?;
    let shown: Vec<&str> = exprs.iter().map(|(s, _)| s.as_str()).collect();
    let grouped: Vec<&str> = exprs.iter().map(|(_, g)| g.as_str()).collect();
    Some(format!(
        "SELECT COUNT(*), CAST(GROUP_CONCAT(CONCAT_WS(', ', {}) SEPARATOR ' | ') AS BINARY) FROM {} \
         GROUP BY {} HAVING COUNT(*) > 1 LIMIT {SHOWN}",
        shown.join(", "),
        quote::table(schema, table),
        grouped.join(", ")
    ))
}

/// The parts of unique index `index` as the job leaves them; `None` when no part is a job
/// column with a text target, or a job column's label has no server charset (its collisions
/// then stop the rebuild instead).
pub fn parts_of(index: &Index, job: &TableJob) -> Option<Vec<Part>> {
    let mut recoded = false;
    let mut out = Vec::new();
    for p in &index.parts {
        let Some(cj) = job.columns.iter().find(|c| c.name == p.column) else {
            out.push(Part::Kept {
                column: p.column.clone(),
                prefix: p.prefix,
            });
            continue;
        };
        let def = crate::job::target::parse(&cj.target).ok()?;
        if def.is_binary() {
            return None;
        }
        let source = servercodec::charset_of(cj.source.fixed()?)?;
        recoded = true;
        out.push(Part::Recoded {
            column: p.column.clone(),
            prefix: p.prefix,
            source: source.to_string(),
            charset: def.charset.unwrap_or_else(|| "utf8mb4".into()),
            collation: def.collation,
        });
    }
    recoded.then_some(out)
}

/// The refusal of unique index `index` of table `table`, whose rows fall into `groups`
/// (count, rows) once recoded, or `None` when none collide.
pub fn refusal(
    table: &str,
    index: &Index,
    parts: &[Part],
    groups: &[(i64, String)],
) -> Option<Refusal> {
    if groups.is_empty() {
        return None;
    }
    let compared: Vec<String> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Recoded {
                charset, collation, ..
            } => Some(
                collation
                    .clone()
                    .unwrap_or_else(|| format!("{charset}'s default collation")),
            ),
            Part::Kept { .. } => None,
        })
        .collect();
    let cols: Vec<&str> = index.parts.iter().map(|p| p.column.as_str()).collect();
    let shown: Vec<String> = groups
        .iter()
        .map(|(n, rows)| format!("{n} rows ({rows})"))
        .collect();
    Some(Refusal {
        class: Class::KeyCollision,
        at: At::Name,
        reason: format!(
            "rows of table '{}' become equal on unique key {} ({}) once recoded and compared under {}: {}{}",
            table,
            index.name,
            cols.join(", "),
            compared.join(", "),
            shown.join("; "),
            if groups.len() >= SHOWN { "; maybe more" } else { "" }
        ),
        fix: "make the values of each group distinct before the run (they differ only in what the new collation ignores: case, ё and е, trailing spaces), or give the column a target collation that tells them apart (COLLATE utf8mb4_bin)".into(),
    })
}

/// The refusals of every unique index of `t` whose rows would collide once the job `job`
/// recodes a column of it (one query per such index over the whole table).
pub async fn find(conn: &mut MySqlConnection, t: &Table, job: &TableJob) -> Result<Vec<Refusal>> {
    let mut out = Vec::new();
    for index in t.indexes.iter().filter(|i| i.unique) {
        let Some(parts) = parts_of(index, job) else {
            continue;
        };
        let Some(sql) = collisions_sql(&t.schema, &t.name, &parts) else {
            continue;
        };
        let rows = sqlx::query(&sql)
            .fetch_all(&mut *conn)
            .await
            .with_context(|| {
                format!(
                    "looking for rows that collide on {} once recoded",
                    index.name
                )
            })?;
        let groups: Vec<(i64, String)> = rows
            .iter()
            .map(|r| {
                let shown: Option<Vec<u8>> = r.get(1);
                (
                    r.get::<i64, _>(0),
                    String::from_utf8_lossy(&shown.unwrap_or_default()).into_owned(),
                )
            })
            .collect();
        out.extend(refusal(&t.name, index, &parts, &groups));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::IndexPart;
    use crate::job::model::{ColumnJob, Strategy};

    fn subjects_key() -> Index {
        Index {
            name: "PRIMARY".into(),
            unique: true,
            index_type: "BTREE".into(),
            parts: ["word", "id_topic"]
                .map(|c| IndexPart {
                    column: c.into(),
                    prefix: None,
                    bytes: 0,
                    bytes_utf8mb4: 0,
                })
                .to_vec(),
            bytes: 0,
            bytes_utf8mb4: 0,
            overflows_now: false,
            overflows_utf8mb4: false,
        }
    }

    fn job(source: &str, target: &str) -> TableJob {
        TableJob {
            name: "log_search_subjects".into(),
            strategy: Strategy::Copy,
            key: None,
            batch_size: None,
            target_batch_time: None,
            engine: None,
            columns: vec![ColumnJob {
                name: "word".into(),
                source: source.into(),
                target: target.into(),
                undecidable: None,
                redefine: false,
            }],
        }
    }

    #[test]
    fn the_recoded_key_is_grouped_in_the_targets_collation() {
        let parts = parts_of(
            &subjects_key(),
            &job(
                "cp1251",
                "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT ''",
            ),
        )
        .unwrap();
        assert_eq!(
            collisions_sql("my db", "log`search", &parts).unwrap(),
            "SELECT COUNT(*), CAST(GROUP_CONCAT(CONCAT_WS(', ', \
             CONVERT(CONVERT(CONVERT(CAST(`word` AS BINARY) USING cp1251) USING utf8mb4) USING utf8mb4), \
             CONVERT(`id_topic` USING utf8mb4)) SEPARATOR ' | ') AS BINARY) FROM `my db`.`log``search` \
             GROUP BY CONVERT(CONVERT(CAST(`word` AS BINARY) USING cp1251) USING utf8mb4) COLLATE utf8mb4_unicode_ci, \
             `id_topic` HAVING COUNT(*) > 1 LIMIT 5"
        );
    }

    #[test]
    fn a_prefix_part_is_cut_and_a_name_that_is_no_word_is_never_spliced() {
        let mut key = subjects_key();
        key.parts[0].prefix = Some(10);
        let parts = parts_of(&key, &job("koi8-r", "VARCHAR(20) CHARACTER SET utf8mb4")).unwrap();
        let sql = collisions_sql("s", "t", &parts).unwrap();
        assert!(
            sql.contains("GROUP BY LEFT(CONVERT(CONVERT(CAST(`word` AS BINARY) USING koi8r) USING utf8mb4), 10), `id_topic`"),
            "{sql}"
        );
        let bad = [Part::Recoded {
            column: "w".into(),
            prefix: None,
            source: "cp1251".into(),
            charset: "utf8mb4".into(),
            collation: Some("x) OR (1".into()),
        }];
        assert_eq!(collisions_sql("s", "t", &bad), None);
    }

    #[test]
    fn the_refusal_names_the_key_the_collation_the_rows_and_the_fix() {
        let key = subjects_key();
        let parts = parts_of(
            &key,
            &job(
                "cp1251",
                "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
            ),
        )
        .unwrap();
        assert!(refusal("log_search_subjects", &key, &parts, &[]).is_none());
        let r = refusal(
            "log_search_subjects",
            &key,
            &parts,
            &[(2, "ёлка, 7 | елка, 7".into())],
        )
        .unwrap();
        assert_eq!((r.class, r.at), (Class::KeyCollision, At::Name));
        assert_eq!(
            r.to_string(),
            "rows of table 'log_search_subjects' become equal on unique key PRIMARY (word, id_topic) once recoded and compared under utf8mb4_unicode_ci: 2 rows (ёлка, 7 | елка, 7). \
             Fix: make the values of each group distinct before the run (they differ only in what the new collation ignores: case, ё and е, trailing spaces), or give the column a target collation that tells them apart (COLLATE utf8mb4_bin)"
        );
    }

    #[test]
    fn no_check_without_a_fixed_label_the_server_has_or_a_job_column() {
        let key = subjects_key();
        assert!(parts_of(&key, &job("auto", "VARCHAR(20) CHARACTER SET utf8mb4")).is_none());
        assert!(parts_of(&key, &job("tcvn3", "VARCHAR(20) CHARACTER SET utf8mb4")).is_none());
        let mut other = job("cp1251", "VARCHAR(20) CHARACTER SET utf8mb4");
        other.columns[0].name = "subject".into();
        assert!(parts_of(&key, &other).is_none());
    }
}

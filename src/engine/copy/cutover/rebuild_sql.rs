//! The statements of a keyless table's rebuild under the cut-over's lock (see
//! [`crate::engine::copy::cutover::rebuild`]), built by pure functions (golden tests below), and the estimate of the
//! pause it adds.
//!
//! Without a key no row can be found again, so nothing is staged per row: each job column's
//! distinct stored values are decided once and staged per value in a session temporary map
//! (`_myrecode_map<j>`: the value's MD5, the value, what it becomes), and one
//! `INSERT … SELECT` joins every row to the maps on its stored bytes.

use crate::db::quote;
use crate::engine::copy::table::job_column::{staged_expr, JobColumn};

/// The session's map of the decided values of job column `j` of the cut-over's table `i`.
pub fn map_name(i: usize, j: usize) -> String {
    format!("_myrecode_map{i}_{j}")
}

/// `CREATE TEMPORARY TABLE` of map `(i, j)`: the stored value's MD5 (the key), the stored
/// value, and, as the staging table has them, the value to write and its flag.
pub fn map_ddl(i: usize, j: usize) -> String {
    format!(
        "CREATE TEMPORARY TABLE {} (h BINARY(16) NOT NULL PRIMARY KEY, o LONGBLOB NOT NULL, \
         v LONGBLOB NULL, s TINYINT NOT NULL) ENGINE=InnoDB",
        quote::ident(&map_name(i, j))
    )
}

/// `DROP TEMPORARY TABLE` of map `(i, j)`.
pub fn map_drop_sql(i: usize, j: usize) -> String {
    format!(
        "DROP TEMPORARY TABLE IF EXISTS {}",
        quote::ident(&map_name(i, j))
    )
}

/// Fills map `(i, j)` with `rows` values: per row the stored value twice (its MD5 is the
/// key), the value to write and the staging flag.
pub fn map_insert_sql(i: usize, j: usize, rows: usize) -> String {
    format!(
        "INSERT INTO {} (h, o, v, s) VALUES {}",
        quote::ident(&map_name(i, j)),
        vec!["(UNHEX(MD5(?)), ?, ?, ?)"; rows].join(", ")
    )
}

/// Every row's job values as stored bytes.
pub fn read_values_sql(schema: &str, table: &str, job: &[JobColumn]) -> String {
    let cols: Vec<String> = job
        .iter()
        .map(|c| format!("CAST({} AS BINARY)", quote::ident(&c.name)))
        .collect();
    format!(
        "SELECT {} FROM {}",
        cols.join(", "),
        quote::table(schema, table)
    )
}

/// Empties the shadow before it is filled again (a killed attempt may have left rows in a
/// table without transactions).
pub fn empty_sql(schema: &str, shadow: &str) -> String {
    format!("DELETE FROM {}", quote::table(schema, shadow))
}

fn joins(src: &str, job: &[JobColumn], i: usize) -> String {
    job.iter()
        .enumerate()
        .map(|(j, c)| {
            let stored = format!("CAST({src}.{} AS BINARY)", quote::ident(&c.name));
            format!(
                " LEFT JOIN {} AS m{j} ON m{j}.h = UNHEX(MD5({stored})) AND m{j}.o = {stored}",
                quote::ident(&map_name(i, j))
            )
        })
        .collect()
}

/// Column `c` of `src` as the rebuild writes it: a job column through its map.
fn written(src: &str, c: &str, job: &[JobColumn]) -> String {
    match job.iter().position(|jc| jc.name == c) {
        Some(j) => staged_expr(&job[j], src, &format!("m{j}.s"), &format!("m{j}.v")),
        None => format!("{src}.{}", quote::ident(c)),
    }
}

/// `INSERT INTO shadow SELECT … FROM t LEFT JOIN map…`: every row, each job column by its map
/// (of the cut-over's table `i`; a value not in it takes the column's default conversion).
pub fn rebuild_sql(
    schema: &str,
    table: &str,
    shadow: &str,
    cols: &[String],
    job: &[JobColumn],
    i: usize,
) -> String {
    // No alias for the table: the cut-over's LOCK TABLES names it without one.
    let src = quote::table(schema, table);
    let list: Vec<String> = cols.iter().map(|c| quote::ident(c)).collect();
    let select: Vec<String> = cols.iter().map(|c| written(&src, c, job)).collect();
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM {src}{}",
        quote::table(schema, shadow),
        list.join(", "),
        select.join(", "),
        joins(&src, job, i)
    )
}

/// A row's fingerprint from its column expressions (`None`-ness kept apart from the value).
fn row_hash(exprs: &[String]) -> String {
    let parts: Vec<String> = exprs
        .iter()
        .map(|e| format!("ISNULL({e}), CAST({e} AS BINARY)"))
        .collect();
    format!("MD5(CONCAT_WS(0x1f, {}))", parts.join(", "))
}

/// `verify` of a rebuilt table: how many rows of the kept original (each job column through
/// its map, those of table 0, converted to its `targets` charset; `None`: binary) and of the new table have no
/// equal row on the other side, compared as multisets of row fingerprints.
pub fn unmatched_rows_sql(
    schema: &str,
    old: &str,
    new: &str,
    cols: &[String],
    job: &[JobColumn],
    targets: &[Option<String>],
) -> String {
    let o = quote::table(schema, old);
    let n = quote::table(schema, new);
    let expected: Vec<String> = cols
        .iter()
        .map(|c| {
            let e = written(&o, c, job);
            match job.iter().position(|jc| &jc.name == c) {
                Some(j) => match &targets[j] {
                    Some(cs) => format!("CONVERT({e} USING {cs})"),
                    None => e,
                },
                None => e,
            }
        })
        .collect();
    let stored: Vec<String> = cols
        .iter()
        .map(|c| format!("{n}.{}", quote::ident(c)))
        .collect();
    format!(
        "SELECT CAST(COALESCE(SUM(ABS(d)), 0) AS UNSIGNED) FROM (SELECT SUM(d) AS d FROM (\
         SELECT {} AS h, 1 AS d FROM {o}{} UNION ALL SELECT {} AS h, -1 AS d FROM {n}\
         ) AS u GROUP BY h HAVING SUM(d) <> 0) AS x",
        row_hash(&expected),
        joins(&o, job, 0),
        row_hash(&stored)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::pause::{pause_words, REBUILD_ROWS_PER_SEC};

    fn job() -> Vec<JobColumn> {
        vec![JobColumn {
            name: "note".into(),
            binary: false,
            server: None,
        }]
    }

    #[test]
    fn the_rebuild_joins_each_job_column_to_its_map_on_the_stored_bytes() {
        let cols = vec!["tag".to_string(), "note".to_string()];
        assert_eq!(
            rebuild_sql("s", "t", "t_myrecode_new", &cols, &job(), 0),
            "INSERT INTO `s`.`t_myrecode_new` (`tag`, `note`) SELECT `s`.`t`.`tag`, \
             CASE m0.s WHEN 1 THEN CONVERT(m0.v USING utf8mb4) WHEN 2 THEN `s`.`t`.`note` ELSE `s`.`t`.`note` END \
             FROM `s`.`t` LEFT JOIN `_myrecode_map0_0` AS m0 ON m0.h = UNHEX(MD5(CAST(`s`.`t`.`note` AS BINARY))) \
             AND m0.o = CAST(`s`.`t`.`note` AS BINARY)"
        );
        assert_eq!(
            map_ddl(0, 0),
            "CREATE TEMPORARY TABLE `_myrecode_map0_0` (h BINARY(16) NOT NULL PRIMARY KEY, o LONGBLOB NOT NULL, \
             v LONGBLOB NULL, s TINYINT NOT NULL) ENGINE=InnoDB"
        );
        assert_eq!(
            map_insert_sql(0, 1, 2),
            "INSERT INTO `_myrecode_map0_1` (h, o, v, s) VALUES (UNHEX(MD5(?)), ?, ?, ?), (UNHEX(MD5(?)), ?, ?, ?)"
        );
        assert_eq!(
            read_values_sql("s", "t", &job()),
            "SELECT CAST(`note` AS BINARY) FROM `s`.`t`"
        );
    }

    #[test]
    fn verify_compares_both_sides_as_multisets_of_row_fingerprints() {
        let cols = vec!["tag".to_string(), "note".to_string()];
        let sql = unmatched_rows_sql(
            "s",
            "t_myrecode_old",
            "t",
            &cols,
            &job(),
            &[Some("utf8mb4".into())],
        );
        assert_eq!(
            sql,
            "SELECT CAST(COALESCE(SUM(ABS(d)), 0) AS UNSIGNED) FROM (SELECT SUM(d) AS d FROM (SELECT \
             MD5(CONCAT_WS(0x1f, ISNULL(`s`.`t_myrecode_old`.`tag`), CAST(`s`.`t_myrecode_old`.`tag` AS BINARY), \
             ISNULL(CONVERT(CASE m0.s WHEN 1 THEN CONVERT(m0.v USING utf8mb4) WHEN 2 THEN `s`.`t_myrecode_old`.`note` ELSE `s`.`t_myrecode_old`.`note` END USING utf8mb4)), \
             CAST(CONVERT(CASE m0.s WHEN 1 THEN CONVERT(m0.v USING utf8mb4) WHEN 2 THEN `s`.`t_myrecode_old`.`note` ELSE `s`.`t_myrecode_old`.`note` END USING utf8mb4) AS BINARY))) \
             AS h, 1 AS d FROM `s`.`t_myrecode_old` LEFT JOIN `_myrecode_map0_0` AS m0 ON m0.h = UNHEX(MD5(CAST(`s`.`t_myrecode_old`.`note` AS BINARY))) \
             AND m0.o = CAST(`s`.`t_myrecode_old`.`note` AS BINARY) UNION ALL SELECT \
             MD5(CONCAT_WS(0x1f, ISNULL(`s`.`t`.`tag`), CAST(`s`.`t`.`tag` AS BINARY), ISNULL(`s`.`t`.`note`), CAST(`s`.`t`.`note` AS BINARY))) \
             AS h, -1 AS d FROM `s`.`t`) AS u GROUP BY h HAVING SUM(d) <> 0) AS x"
        );
    }

    #[test]
    fn the_pause_estimate_grows_with_the_rows() {
        assert_eq!(pause_words(0), "1 ms of pause");
        assert_eq!(pause_words(REBUILD_ROWS_PER_SEC / 10), "100 ms of pause");
        assert_eq!(pause_words(REBUILD_ROWS_PER_SEC * 3), "3.0 s of pause");
    }
}

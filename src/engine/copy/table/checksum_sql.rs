//! The check pass's checksums of key ranges, built by pure functions (golden tests below).
//!
//! A range of the table and the same range of the shadow are each summed on the server:
//! the row count and the `BIT_XOR` of a `CRC32` per row over its key, every copied column's
//! bytes and a NULL marker per column. The table's side sums what the shadow should hold
//! were every job value its default conversion ([`Compare::expected`], what the row-by-row
//! comparison expects); the shadow's side sums what it holds. The rows the copy wrote
//! otherwise (staged: another label's reading, UTF-8 already, a quarantined value's latin1
//! reading) are judged one by one as before ([`Compare::suspects_sql_with`]) and, where
//! judged right, their two hashes (both of which this module's expressions give) are
//! XORed into the table's side; the sums then agree exactly when every other row is its
//! default conversion. A range whose sums disagree is compared row by row.

use crate::db::quote;
use crate::engine::copy::table::check_sql::Compare;

/// `CRC32(CONCAT_WS(_binary'#', parts…, CONCAT(ISNULL(row.c)…)))`: the row's `parts` (SQL
/// expressions) and a NULL marker per column of `marked` (`CONCAT_WS` skips NULLs; no marker
/// part when none is marked). A marker tests the stored column, not a conversion of it: a
/// conversion is NULL exactly when its value is, and computing it twice per row had cost a
/// quarter of the sums.
///
/// The binary separator makes the whole `CONCAT_WS` a binary string, whose every part is
/// taken as its bytes, unconverted (a number or a date as its text), so the parts need no
/// `CAST(… AS BINARY)` each: that copy of every value had cost a quarter of a shadow's sums.
fn crc_of<'a>(row: &str, parts: Vec<String>, marked: impl Iterator<Item = &'a String>) -> String {
    let nulls: Vec<String> = marked
        .map(|c| format!("ISNULL({row}.{})", quote::ident(c)))
        .collect();
    let mut parts = parts;
    if !nulls.is_empty() {
        parts.push(format!("CONCAT({})", nulls.join(", ")));
    }
    format!("CRC32(CONCAT_WS(_binary'#', {}))", parts.join(", "))
}

/// Column `column` of row `row` as a part of a hash ([`crc_of`] takes its bytes as they are).
fn part(row: &str, column: &str) -> String {
    format!("{row}.{}", quote::ident(column))
}

/// The `CRC32` of a row's key, its other columns and `values` (SQL byte expressions of the
/// job columns, in order), with one NULL marker per column.
fn row_hash(cmp: &Compare<'_>, row: &str, values: Vec<String>) -> String {
    let mut parts: Vec<String> = cmp.key.iter().map(|k| part(row, &k.name)).collect();
    parts.extend(cmp.others().map(|c| part(row, c)));
    parts.extend(values);
    let marked = (cmp.key.iter().map(|k| &k.name))
        .chain(cmp.others())
        .chain(cmp.job.iter().map(|j| &j.name));
    crc_of(row, parts, marked)
}

impl Compare<'_> {
    /// The hash of what row `row` of `src` should be in `dst`, every job value its default.
    pub fn expected_hash(&self, row: &str) -> String {
        let values = (0..self.job.len()).map(|j| self.expected(row, j)).collect();
        row_hash(self, row, values)
    }

    /// The hash of row `row` of `dst` as it is.
    pub fn copied_hash(&self, row: &str) -> String {
        let values = self.job.iter().map(|jc| part(row, &jc.name)).collect();
        row_hash(self, row, values)
    }

    /// Two rows, `src`'s then `dst`'s: the count and the `BIT_XOR` of the hashes of the rows
    /// matching `range` (`BIT_XOR` of no rows is 0); bind the range's values twice.
    pub fn sums_sql(&self, range: &str) -> String {
        format!(
            "SELECT COUNT(*), BIT_XOR({}) FROM {} AS a WHERE {range} \
             UNION ALL SELECT COUNT(*), BIT_XOR({}) FROM {} AS s WHERE {range}",
            self.expected_hash("a"),
            quote::table(self.schema, self.src),
            self.copied_hash("s"),
            quote::table(self.schema, self.dst),
        )
    }

    /// The `CRC32` of a row's key and its columns outside the key and the job, with a NULL
    /// marker per such column: bytes the copy takes as they are, the same on both sides.
    fn others_hash(&self, row: &str) -> String {
        let mut parts: Vec<String> = self.key.iter().map(|k| part(row, &k.name)).collect();
        parts.extend(self.others().map(|c| part(row, c)));
        crc_of(row, parts, self.others())
    }

    /// The `CRC32` of a row of `dst`'s key and job values with a NULL marker per value, as
    /// [`crate::engine::copy::table::expect::row_hash`] computes it from the copy's decisions.
    fn job_hash(&self, row: &str) -> String {
        let mut parts: Vec<String> = self.key.iter().map(|k| part(row, &k.name)).collect();
        parts.extend(self.job.iter().map(|jc| part(row, &jc.name)));
        crc_of(row, parts, self.job.iter().map(|jc| &jc.name))
    }

    /// `CAST(CRC32(…) AS UNSIGNED)` of a row of `src` read without an alias (a batch's
    /// read, [`crate::engine::read::batch_sql`]): its key and columns outside the job, the
    /// very hash [`Compare::light_sums_sql`] sums over `src`. Given per row by the read that
    /// decides a batch, it spares the check reading the table's rows again.
    pub fn others_hash_sql(&self) -> String {
        let src = quote::table(self.schema, self.src);
        format!("CAST({} AS UNSIGNED)", self.others_hash(&src))
    }

    /// One row of three sums over the rows of `dst` matching `cond`: the count, the
    /// `BIT_XOR` of the hashes of the key and the columns outside the job, and that of the
    /// key and the job values: [`Compare::light_sums_sql`]'s second row, for a batch whose
    /// table side the rows' own read summed ([`Compare::others_hash_sql`]).
    pub fn shadow_sums_sql(&self, cond: &str) -> String {
        format!(
            "SELECT COUNT(*), BIT_XOR({}), BIT_XOR({}) FROM {} AS s WHERE {cond}",
            self.others_hash("s"),
            self.job_hash("s"),
            quote::table(self.schema, self.dst),
        )
    }

    /// Two rows of three sums over the rows matching `cond`, `src`'s then `dst`'s: the count,
    /// the `BIT_XOR` of the hashes of the key and the columns outside the job, and (`dst`
    /// only; `BIT_XOR(0)`, an unsigned 0, for `src`) the `BIT_XOR` of the hashes of the key and the job values, which
    /// the copy's own decisions sum on the client ([`crate::engine::copy::table::expect`]). Neither side converts
    /// a value: the table's job values are not read again. Bind `cond`'s values twice.
    pub fn light_sums_sql(&self, cond: &str) -> String {
        format!(
            "SELECT COUNT(*), BIT_XOR({}), BIT_XOR(0) FROM {} AS a WHERE {cond} \
             UNION ALL SELECT COUNT(*), BIT_XOR({}), BIT_XOR({}) FROM {} AS s WHERE {cond}",
            self.others_hash("a"),
            quote::table(self.schema, self.src),
            self.others_hash("s"),
            self.job_hash("s"),
            quote::table(self.schema, self.dst),
        )
    }

    /// [`Compare::suspects_sql`] of `range` with both hashes after the values its layout
    /// places: `src`'s expected at `others_same() + 1`, `dst`'s at `+ 2` (NULL: no such row).
    pub fn suspects_with_hashes_sql(
        &self,
        range: &str,
    ) -> (String, crate::engine::copy::table::check_sql::CompareLayout) {
        self.suspects_sql_with(range, &[self.expected_hash("a"), self.copied_hash("s")])
    }
}

#[cfg(test)]
mod tests {
    use crate::codec::Encoding;
    use crate::db::keyset::KeyColumn;
    use crate::detect::Label;
    use crate::engine::copy::table::check_sql::Compare;
    use crate::engine::copy::table::job_column::JobColumn;
    use crate::engine::servercodec::{self, ServerCodec};

    #[test]
    fn sums_hash_the_key_every_column_and_null_markers() {
        let cp1251 = Encoding::Windows1251;
        let sc = ServerCodec::from_server(Label::Legacy(cp1251), &servercodec::ours(cp1251));
        let key = [KeyColumn::plain("id")];
        let all: Vec<String> = ["id", "author", "created", "raw"]
            .map(String::from)
            .to_vec();
        let jobs = [
            JobColumn {
                name: "author".into(),
                binary: false,
                server: sc,
            },
            JobColumn {
                name: "raw".into(),
                binary: true,
                server: None,
            },
        ];
        let charsets = [Some("utf8mb4".to_string()), None];
        let cmp = Compare {
            schema: "s",
            src: "t",
            dst: "t_new",
            key: &key,
            dst_key: &key,
            all_columns: &all,
            job: &jobs,
            target_charsets: &charsets,
        };
        assert_eq!(
            cmp.sums_sql("`id` > ?"),
            "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(_binary'#', a.`id`, \
             a.`created`, \
             CAST(CONVERT(CONVERT(CAST(a.`author` AS BINARY) USING `cp1251`) USING `utf8mb4`) AS BINARY), \
             CAST(a.`raw` AS BINARY), \
             CONCAT(ISNULL(a.`id`), ISNULL(a.`created`), ISNULL(a.`author`), \
             ISNULL(a.`raw`))))) FROM `s`.`t` AS a WHERE `id` > ? \
             UNION ALL SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(_binary'#', s.`id`, \
             s.`created`, s.`author`, s.`raw`, \
             CONCAT(ISNULL(s.`id`), ISNULL(s.`created`), ISNULL(s.`author`), \
             ISNULL(s.`raw`))))) \
             FROM `s`.`t_new` AS s WHERE `id` > ?"
        );
        let (sql, at) = cmp.suspects_with_hashes_sql("`id` > ?");
        assert!(sql.contains(&format!(
            ", {}, {} FROM (SELECT",
            cmp.expected_hash("a"),
            cmp.copied_hash("s")
        )));
        assert_eq!(at.others_same(), 1 + 3 * 2 + 1);
        assert_eq!(
            cmp.light_sums_sql("`id` > ?"),
            "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(_binary'#', a.`id`, \
             a.`created`, CONCAT(ISNULL(a.`created`))))), BIT_XOR(0) \
             FROM `s`.`t` AS a WHERE `id` > ? \
             UNION ALL SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(_binary'#', s.`id`, \
             s.`created`, CONCAT(ISNULL(s.`created`))))), \
             BIT_XOR(CRC32(CONCAT_WS(_binary'#', s.`id`, s.`author`, \
             s.`raw`, CONCAT(ISNULL(s.`author`), ISNULL(s.`raw`))))) \
             FROM `s`.`t_new` AS s WHERE `id` > ?"
        );
        assert_eq!(
            cmp.others_hash_sql(),
            "CAST(CRC32(CONCAT_WS(_binary'#', `s`.`t`.`id`, `s`.`t`.`created`, \
             CONCAT(ISNULL(`s`.`t`.`created`)))) AS UNSIGNED)"
        );
        assert_eq!(
            cmp.shadow_sums_sql("`id` > ?"),
            "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(_binary'#', s.`id`, \
             s.`created`, CONCAT(ISNULL(s.`created`))))), \
             BIT_XOR(CRC32(CONCAT_WS(_binary'#', s.`id`, s.`author`, \
             s.`raw`, CONCAT(ISNULL(s.`author`), ISNULL(s.`raw`))))) \
             FROM `s`.`t_new` AS s WHERE `id` > ?"
        );
        // A table of its key and job columns only: the key alone outside the job.
        let bare = Compare {
            all_columns: &all[..2],
            job: &jobs[..1],
            target_charsets: &charsets[..1],
            ..cmp
        };
        assert!(bare.light_sums_sql("1").starts_with(
            "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(_binary'#', a.`id`))), BIT_XOR(0)"
        ));
    }
}

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

use super::check_sql::{bin, Compare};
use crate::db::quote;

/// The `CRC32` of a row's key, its other columns and `values` (SQL byte expressions), with
/// one NULL marker per value (`CONCAT_WS` skips NULLs).
fn row_hash(cmp: &Compare<'_>, row: &str, values: Vec<String>) -> String {
    let mut parts: Vec<String> = cmp.key.iter().map(|k| bin(row, &k.name)).collect();
    parts.extend(cmp.others().map(|c| bin(row, c)));
    parts.extend(values);
    let nulls: Vec<String> = parts.iter().map(|p| format!("ISNULL({p})")).collect();
    format!(
        "CRC32(CONCAT_WS('#', {}, CONCAT({})))",
        parts.join(", "),
        nulls.join(", ")
    )
}

impl Compare<'_> {
    /// The hash of what row `row` of `src` should be in `dst`, every job value its default.
    pub fn expected_hash(&self, row: &str) -> String {
        let values = (0..self.job.len()).map(|j| self.expected(row, j)).collect();
        row_hash(self, row, values)
    }

    /// The hash of row `row` of `dst` as it is.
    pub fn copied_hash(&self, row: &str) -> String {
        let values = self.job.iter().map(|jc| bin(row, &jc.name)).collect();
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

    /// [`Compare::suspects_sql`] of `range` with both hashes after the values its layout
    /// places: `src`'s expected at `others_same() + 1`, `dst`'s at `+ 2` (NULL: no such row).
    pub fn suspects_with_hashes_sql(
        &self,
        range: &str,
    ) -> (String, super::check_sql::CompareLayout) {
        self.suspects_sql_with(range, &[self.expected_hash("a"), self.copied_hash("s")])
    }
}

#[cfg(test)]
mod tests {
    use crate::codec::Encoding;
    use crate::db::keyset::KeyColumn;
    use crate::detect::Label;
    use crate::engine::copy::check_sql::Compare;
    use crate::engine::copy::sql::JobColumn;
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
            all_columns: &all,
            job: &jobs,
            target_charsets: &charsets,
        };
        assert_eq!(
            cmp.sums_sql("`id` > ?"),
            "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('#', CAST(a.`id` AS BINARY), \
             CAST(a.`created` AS BINARY), \
             CAST(CONVERT(CONVERT(CAST(a.`author` AS BINARY) USING `cp1251`) USING `utf8mb4`) AS BINARY), \
             CAST(a.`raw` AS BINARY), \
             CONCAT(ISNULL(CAST(a.`id` AS BINARY)), ISNULL(CAST(a.`created` AS BINARY)), \
             ISNULL(CAST(CONVERT(CONVERT(CAST(a.`author` AS BINARY) USING `cp1251`) USING `utf8mb4`) AS BINARY)), \
             ISNULL(CAST(a.`raw` AS BINARY)))))) FROM `s`.`t` AS a WHERE `id` > ? \
             UNION ALL SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('#', CAST(s.`id` AS BINARY), \
             CAST(s.`created` AS BINARY), CAST(s.`author` AS BINARY), CAST(s.`raw` AS BINARY), \
             CONCAT(ISNULL(CAST(s.`id` AS BINARY)), ISNULL(CAST(s.`created` AS BINARY)), \
             ISNULL(CAST(s.`author` AS BINARY)), ISNULL(CAST(s.`raw` AS BINARY)))))) \
             FROM `s`.`t_new` AS s WHERE `id` > ?"
        );
        let (sql, at) = cmp.suspects_with_hashes_sql("`id` > ?");
        assert!(sql.contains(&format!(
            ", {}, {} FROM (SELECT",
            cmp.expected_hash("a"),
            cmp.copied_hash("s")
        )));
        assert_eq!(at.others_same(), 1 + 3 * 2 + 1);
    }
}

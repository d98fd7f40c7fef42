//! Key-length and row-size arithmetic, pure: what a column costs in an index and a row, today and under utf8mb4.
//!
//! InnoDB limits (MySQL 8 / MariaDB 10.6+ manuals): one key part at most 767 bytes on
//! COMPACT/REDUNDANT rows and 3072 on DYNAMIC/COMPRESSED (16 KiB pages); a whole key at
//! most 3072 bytes (1536 at 8 KiB pages, 768 at 4 KiB). MyISAM/Aria keys: 1000 bytes.

use super::model::ColumnKind;

/// The facts about one column that the arithmetic needs (any type, not only text).
#[derive(Debug, Clone)]
pub struct ColumnFacts {
    /// Column name.
    pub name: String,
    /// `DATA_TYPE`, lower case.
    pub data_type: String,
    /// `COLUMN_TYPE`, lower case.
    pub column_type: String,
    /// Character set, if any.
    pub charset: Option<String>,
    /// Collation, if any.
    pub collation: Option<String>,
    /// `CHARACTER_MAXIMUM_LENGTH`.
    pub max_chars: Option<u64>,
    /// `CHARACTER_OCTET_LENGTH`.
    pub max_bytes: Option<u64>,
    /// Bytes per character at most in its charset (`CHARACTER_SETS.MAXLEN`), 1 if none.
    pub mbmaxlen: u64,
    /// `NUMERIC_PRECISION`.
    pub numeric_precision: Option<u64>,
    /// `NUMERIC_SCALE`.
    pub numeric_scale: Option<u64>,
    /// `DATETIME_PRECISION`.
    pub datetime_precision: Option<u64>,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// DEFAULT, COMMENT, generation and the rest of the definition.
    pub definition: super::model::Definition,
}

/// Classifies a `DATA_TYPE`: text-like and binary columns are ours; others are `None`.
pub fn column_kind(data_type: &str) -> Option<ColumnKind> {
    match data_type {
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" => {
            Some(ColumnKind::Text)
        }
        "enum" => Some(ColumnKind::Enum),
        "set" => Some(ColumnKind::Set),
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
            Some(ColumnKind::Binary)
        }
        _ => None,
    }
}

/// Largest bytes per character once a column is utf8mb4 (binary and non-text columns keep theirs).
pub fn mbmaxlen_utf8mb4(col: &ColumnFacts) -> u64 {
    match column_kind(&col.data_type) {
        Some(ColumnKind::Text | ColumnKind::Enum | ColumnKind::Set) => 4,
        _ => col.mbmaxlen,
    }
}

/// Largest value in bytes once the column is utf8mb4: CHAR/VARCHAR keep their character count,
/// the TEXT family keeps its byte capacity (so it holds fewer characters), binary is unchanged.
pub fn max_bytes_utf8mb4(col: &ColumnFacts) -> Option<u64> {
    match col.data_type.as_str() {
        "char" | "varchar" => col.max_chars.map(|c| c * 4),
        "enum" | "set" => col.max_chars.map(|c| c * 4),
        _ => col.max_bytes,
    }
}

/// Per-part and whole-key limits in bytes for a table.
pub fn key_limits(engine: &str, row_format: &str, page_size: u64) -> (u64, u64) {
    if !engine.eq_ignore_ascii_case("innodb") {
        return (1000, 1000);
    }
    let whole = match page_size {
        0 | 16384.. => 3072,
        8192 => 1536,
        _ => 768,
    };
    let part = match row_format.to_ascii_lowercase().as_str() {
        "compact" | "redundant" => 767.min(whole),
        _ => whole,
    };
    (part, whole)
}

/// Whether MariaDB adapts an over-long MyISAM or Aria index itself when its columns grow: a
/// UNIQUE key other than the primary becomes `USING HASH` (the whole values stay unique,
/// checked by a hash), a one-column plain index is shortened to the prefix that fits (note
/// 1071). A plain index of several columns and the primary key are refused (1071). Measured
/// on MariaDB 10.11, with and without strict modes.
pub fn server_adapts(index: &str, unique: bool, parts: usize) -> bool {
    index != "PRIMARY" && (unique || parts == 1)
}

/// Bytes one index part takes with a given bytes-per-character.
pub fn part_bytes(col: &ColumnFacts, prefix: Option<u64>, mbmaxlen: u64) -> u64 {
    match column_kind(&col.data_type) {
        Some(ColumnKind::Text) => prefix.or(col.max_chars).unwrap_or(0) * mbmaxlen,
        Some(ColumnKind::Binary) => prefix.or(col.max_bytes).unwrap_or(0),
        Some(ColumnKind::Enum) => enum_bytes(&col.column_type),
        Some(ColumnKind::Set) => set_bytes(&col.column_type),
        None => fixed_bytes(col),
    }
}

/// Bytes a column takes in the declared row size with a given bytes-per-character.
pub fn row_bytes(col: &ColumnFacts, mbmaxlen: u64) -> u64 {
    let t = col.data_type.as_str();
    match t {
        "varchar" | "varbinary" => {
            let bytes = if t == "varchar" {
                col.max_chars.unwrap_or(0) * mbmaxlen
            } else {
                col.max_bytes.unwrap_or(0)
            };
            bytes + if bytes > 255 { 2 } else { 1 }
        }
        "tinytext" | "tinyblob" => 9,
        "text" | "blob" => 10,
        "mediumtext" | "mediumblob" => 11,
        "longtext" | "longblob" | "json" | "geometry" => 12,
        _ => part_bytes(col, None, mbmaxlen),
    }
}

/// Number of members of an `enum(...)`/`set(...)` type, counting quoted items.
pub fn member_count(column_type: &str) -> u64 {
    let inner = match (column_type.find('('), column_type.rfind(')')) {
        (Some(a), Some(b)) if b > a => &column_type[a + 1..b],
        _ => return 0,
    };
    let mut count = 0;
    let mut in_quote = false;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if in_quote && chars.peek() == Some(&'\'') {
                chars.next();
                continue;
            }
            if !in_quote {
                count += 1;
            }
            in_quote = !in_quote;
        }
    }
    count
}

fn enum_bytes(column_type: &str) -> u64 {
    if member_count(column_type) > 255 {
        2
    } else {
        1
    }
}

fn set_bytes(column_type: &str) -> u64 {
    match member_count(column_type) {
        0..=8 => 1,
        9..=16 => 2,
        17..=24 => 3,
        25..=32 => 4,
        _ => 8,
    }
}

fn fsp_bytes(fsp: Option<u64>) -> u64 {
    fsp.unwrap_or(0).div_ceil(2)
}

fn decimal_bytes(precision: u64, scale: u64) -> u64 {
    const LEFTOVER: [u64; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];
    let int_digits = precision.saturating_sub(scale);
    let part = |d: u64| (d / 9) * 4 + LEFTOVER[(d % 9) as usize];
    part(int_digits) + part(scale)
}

/// Storage bytes of a non-text column, as the manual's "Data Type Storage Requirements" gives them.
fn fixed_bytes(col: &ColumnFacts) -> u64 {
    match col.data_type.as_str() {
        "tinyint" | "year" => 1,
        "smallint" => 2,
        "mediumint" | "date" => 3,
        "int" | "integer" | "float" => 4,
        "bigint" | "double" | "real" => 8,
        "decimal" | "numeric" => decimal_bytes(
            col.numeric_precision.unwrap_or(10),
            col.numeric_scale.unwrap_or(0),
        ),
        "time" => 3 + fsp_bytes(col.datetime_precision),
        "datetime" => 5 + fsp_bytes(col.datetime_precision),
        "timestamp" => 4 + fsp_bytes(col.datetime_precision),
        "bit" => col.numeric_precision.unwrap_or(1).div_ceil(8),
        "uuid" => 16,
        "inet4" => 4,
        "inet6" => 16,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(data_type: &str, column_type: &str, chars: u64, mb: u64) -> ColumnFacts {
        ColumnFacts {
            name: "c".into(),
            data_type: data_type.into(),
            column_type: column_type.into(),
            charset: Some("latin1".into()),
            collation: Some("latin1_swedish_ci".into()),
            max_chars: Some(chars),
            max_bytes: Some(chars * mb),
            mbmaxlen: mb,
            numeric_precision: None,
            numeric_scale: None,
            datetime_precision: None,
            nullable: true,
            definition: Default::default(),
        }
    }

    #[test]
    fn varchar255_latin1_overflows_compact_under_utf8mb4() {
        let c = col("varchar", "varchar(255)", 255, 1);
        let (part, _) = key_limits("InnoDB", "Compact", 16384);
        assert_eq!(part, 767);
        assert_eq!(part_bytes(&c, None, 1), 255);
        assert_eq!(part_bytes(&c, None, mbmaxlen_utf8mb4(&c)), 1020);
    }

    #[test]
    fn limits_follow_row_format_and_page_size() {
        assert_eq!(key_limits("InnoDB", "Dynamic", 16384), (3072, 3072));
        assert_eq!(key_limits("InnoDB", "Redundant", 16384), (767, 3072));
        assert_eq!(key_limits("InnoDB", "Dynamic", 8192), (1536, 1536));
        assert_eq!(key_limits("MyISAM", "Fixed", 16384), (1000, 1000));
    }

    #[test]
    fn counts_enum_members_with_quotes_inside() {
        assert_eq!(member_count("enum('a','it''s','c,d')"), 3);
        assert_eq!(set_bytes("set('a','b','c','d','e','f','g','h','i')"), 2);
    }

    #[test]
    fn row_bytes_counts_length_prefix() {
        let c = col("varchar", "varchar(100)", 100, 1);
        assert_eq!(row_bytes(&c, 1), 101);
        assert_eq!(row_bytes(&c, 4), 402);
    }

    #[test]
    fn text_keeps_its_byte_capacity_under_utf8mb4() {
        let t = col("text", "text", 65535, 1);
        assert_eq!(max_bytes_utf8mb4(&t), Some(65535));
        let v = col("varchar", "varchar(10)", 10, 1);
        assert_eq!(max_bytes_utf8mb4(&v), Some(40));
    }

    #[test]
    fn decimal_storage() {
        let mut c = col("decimal", "decimal(18,9)", 0, 1);
        c.numeric_precision = Some(18);
        c.numeric_scale = Some(9);
        assert_eq!(fixed_bytes(&c), 8);
    }
}

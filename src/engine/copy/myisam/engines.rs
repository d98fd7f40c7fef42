//! Which storage engines roll a failed statement's writes back: where a copy needs none of
//! the care a table without transactions (MyISAM, Aria) takes.

use crate::engine::copy::catalog::ENGINE_SQL;
use anyhow::Result;
use sqlx::MySqlConnection;

/// Storage engines whose writes roll back with the statement (the change log's row with them).
const TRANSACTIONAL: &[&str] = &["InnoDB", "TokuDB", "RocksDB", "ndbcluster"];

/// Whether a table of `engine` rolls its writes back with a failed statement.
pub fn is_transactional(engine: &str) -> bool {
    TRANSACTIONAL.iter().any(|e| e.eq_ignore_ascii_case(engine))
}

/// Whether `schema`.`table` is in an engine with transactions (a table gone counts as one:
/// nothing of it is left to compare).
pub(crate) async fn has_transactions(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<bool> {
    let engine: Option<String> = sqlx::query_scalar(ENGINE_SQL)
        .bind(schema)
        .bind(table)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(engine.is_none_or(|e| is_transactional(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tables_without_transactions_are_compared_again() {
        assert!(is_transactional("InnoDB"));
        assert!(is_transactional("innodb"));
        for e in ["MyISAM", "Aria", "MEMORY", "CSV", "ARCHIVE", "MRG_MyISAM"] {
            assert!(!is_transactional(e), "{e}");
        }
    }
}

//! A table's columns as the catalog defines them, for the side tables that must compare as
//! the table does (the staging tables' key columns of both strategies).

use super::table_plan::TablePlan;
use anyhow::{anyhow, Context, Result};
use sqlx::{MySqlConnection, Row};

/// A table's stored columns in order (generated ones are the server's to fill), `?` schema
/// and `?` table: name, full type, charset, collation.
pub const COLUMNS_SQL: &str = "SELECT CAST(COLUMN_NAME AS CHAR), CAST(COLUMN_TYPE AS CHAR), CAST(CHARACTER_SET_NAME AS CHAR), \
         CAST(COLLATION_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
         AND EXTRA NOT LIKE '%GENERATED%' ORDER BY ORDINAL_POSITION";

/// A column's type as [`COLUMNS_SQL`] gives it, with its charset and collation spelled out,
/// so a column defined elsewhere (a staging table's key) compares as the table's does.
pub fn column_type(ty: &str, charset: Option<&str>, collation: Option<&str>) -> String {
    match (charset, collation) {
        (Some(cs), Some(coll)) => format!("{ty} CHARACTER SET {cs} COLLATE {coll}"),
        _ => ty.to_string(),
    }
}

/// (name, full type with charset/collation, charset) of one stored column.
pub type ColumnDef = (String, String, Option<String>);

/// A table's stored columns, in order.
pub async fn columns_of(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<ColumnDef>> {
    let rows = sqlx::query(COLUMNS_SQL)
        .bind(schema)
        .bind(table)
        .fetch_all(conn)
        .await
        .context("reading the table's columns")?;
    Ok(rows
        .iter()
        .map(|r| {
            let cs: Option<String> = r.get(2);
            let coll: Option<String> = r.get(3);
            let ty: String = r.get(1);
            let ty = column_type(&ty, cs.as_deref(), coll.as_deref());
            (r.get(0), ty, cs)
        })
        .collect())
}

/// The full types of the plan's key columns, in key order, from the table's `cols`.
pub fn key_types(cols: &[ColumnDef], plan: &TablePlan) -> Result<Vec<String>> {
    plan.key
        .iter()
        .map(|k| {
            cols.iter()
                .find(|c| c.0 == k.name)
                .map(|c| c.1.clone())
                .ok_or_else(|| anyhow!("key column {} of '{}' is gone", k.name, plan.table))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_lookups_bind_their_names_and_types_spell_out_their_charset() {
        assert_eq!(
            COLUMNS_SQL,
            "SELECT CAST(COLUMN_NAME AS CHAR), CAST(COLUMN_TYPE AS CHAR), CAST(CHARACTER_SET_NAME AS CHAR), \
             CAST(COLLATION_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
             AND EXTRA NOT LIKE '%GENERATED%' ORDER BY ORDINAL_POSITION"
        );
        assert_eq!(
            column_type("varchar(20)", Some("cp1251"), Some("cp1251_general_ci")),
            "varchar(20) CHARACTER SET cp1251 COLLATE cp1251_general_ci"
        );
        assert_eq!(column_type("int(11)", None, None), "int(11)");
    }
}

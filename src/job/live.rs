//! The live schema a job is checked against: read-only catalog reads, nothing else.

use crate::inventory::model::Inventory;
use crate::inventory::{self, read};
use anyhow::Result;
use sqlx::MySqlConnection;
use std::collections::BTreeMap;

/// Any column of a live table (not only text), as the key checks need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveColumn {
    /// Column name.
    pub name: String,
    /// `DATA_TYPE`, lower case.
    pub data_type: String,
    /// Whether NULL is allowed.
    pub nullable: bool,
}

/// What the server has for the job's schema.
#[derive(Debug, Clone)]
pub struct Live {
    /// User schemas on the server (for "did you mean" when the job's schema is missing).
    pub schemas: Vec<String>,
    /// Every base table of the job's schema with all its columns, in order.
    pub tables: BTreeMap<String, Vec<LiveColumn>>,
    /// Inventory of the job's schema (tables with text or binary columns).
    pub inventory: Inventory,
}

impl Live {
    /// Whether the schema exists (the inventory names it).
    pub fn has_schema(&self, schema: &str) -> bool {
        self.schemas.iter().any(|s| s == schema)
    }
}

/// Reads the catalog of `schema` (if it exists) over one connection; tables without a
/// usable key are counted up to `keyless_max_rows + 1` (see [`inventory::count_keyless`]).
pub async fn read(conn: &mut MySqlConnection, schema: &str, keyless_max_rows: u64) -> Result<Live> {
    let schemas = read::list_schemas(conn).await?;
    let mut tables = BTreeMap::new();
    let inventory = if schemas.iter().any(|s| s == schema) {
        let names = vec![schema.to_string()];
        let raw = read::read_catalog(conn, &names).await?;
        for t in &raw.tables {
            tables.insert(t.name.clone(), Vec::new());
        }
        for (s, t, f) in &raw.columns {
            if s == schema {
                if let Some(cols) = tables.get_mut(t) {
                    cols.push(LiveColumn {
                        name: f.name.clone(),
                        data_type: f.data_type.clone(),
                        nullable: f.nullable,
                    });
                }
            }
        }
        let mut inv = inventory::assemble(raw, names, &[]);
        inventory::count_keyless(conn, &mut inv.tables, keyless_max_rows).await?;
        inv
    } else {
        inventory::assemble(read::RawCatalog::default(), Vec::new(), &[])
    };
    Ok(Live {
        schemas,
        tables,
        inventory,
    })
}

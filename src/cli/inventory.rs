//! `myrecode inventory`: every text/binary column and what utf8mb4 would do to it.

use super::common::{block_on, split_list, ConnectArgs};
use super::{EXIT_ATTENTION, EXIT_OK};
use crate::inventory::{self, Scope};
use crate::report;

/// Output formats.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// Tables for a terminal.
    Table,
    /// JSON with stable field names (docs/inventory.md, "inventory JSON").
    Json,
}

/// Arguments of `inventory`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    conn: ConnectArgs,
    /// Schema(s) to inventory (comma-separated or repeated); default: the database in --url, else all user schemas.
    #[arg(long = "schema", value_name = "SCHEMA")]
    schemas: Vec<String>,
    /// Only these tables (comma-separated or repeated).
    #[arg(long = "tables", value_name = "TABLE")]
    tables: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// Runs `inventory`; exit 1 when a table has a risk (no usable key, an index or row that won't fit utf8mb4).
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cfg = args.conn.resolve()?;
    let mut schemas = split_list(&args.schemas);
    if schemas.is_empty() {
        schemas.extend(cfg.database.clone());
    }
    let scope = Scope {
        schemas,
        tables: split_list(&args.tables),
    };
    let inv = block_on(async {
        let mut conn = cfg.connect_one().await?;
        inventory::take(&mut conn, &scope).await
    })?;
    match args.format {
        Format::Table => print!("{}", report::inventory::to_text(&inv)),
        Format::Json => println!("{}", report::inventory::to_json(&inv)),
    }
    let risky = inv.tables.iter().any(|t| !t.risks.is_empty());
    Ok(if risky { EXIT_ATTENTION } else { EXIT_OK })
}

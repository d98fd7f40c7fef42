//! Renders an inventory as terminal tables or JSON.

use crate::inventory::model::{ColumnKind, Inventory, Table};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Color, ContentArrangement, Table as Grid};
use std::fmt::Write;

/// Renders the inventory as JSON (the stable layout documented in docs/inventory.md).
pub fn to_json(inv: &Inventory) -> String {
    serde_json::to_string_pretty(inv).expect("inventory serialises")
}

/// Renders the inventory for a terminal: one block per table, risks last.
pub fn to_text(inv: &Inventory) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Server: {} (InnoDB page {} bytes, default row format {})",
        inv.server.version, inv.server.innodb_page_size, inv.server.default_row_format
    );
    let _ = writeln!(out, "Schemas: {}", inv.schemas.join(", "));
    for t in &inv.tables {
        out.push('\n');
        render_table(&mut out, t);
    }
    let risky: Vec<&Table> = inv.tables.iter().filter(|t| !t.risks.is_empty()).collect();
    let columns: usize = inv.tables.iter().map(|t| t.columns.len()).sum();
    let _ = writeln!(
        out,
        "\n{} table(s), {} text/binary column(s), {} table(s) with risks.",
        inv.tables.len(),
        columns,
        risky.len()
    );
    out
}

fn grid(header: &[&str]) -> Grid {
    let mut g = Grid::new();
    g.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().map(Cell::new));
    g
}

/// Writes one table's block: its line, its columns and indexes, row size, triggers,
/// foreign keys and risks.
fn render_table(out: &mut String, t: &Table) {
    let key = match &t.recode_key {
        Some(k) => format!("{} ({})", k.index, k.columns.join(", ")),
        None => "NONE: cannot be recoded online".to_string(),
    };
    let _ = writeln!(
        out,
        "Table {}.{}  engine {}  row format {}  ~{} rows  key {}",
        t.schema, t.name, t.engine, t.row_format, t.estimated_rows, key
    );
    let _ = writeln!(out, "{}", columns_grid(t));
    if !t.indexes.is_empty() {
        let _ = writeln!(out, "{}", indexes_grid(t));
    }
    let _ = writeln!(
        out,
        "  row size: {} bytes now, {} under utf8mb4 (limit {})",
        t.row_size.bytes, t.row_size.bytes_utf8mb4, t.row_size.limit
    );
    for tr in &t.triggers {
        let _ = writeln!(out, "  trigger {} {} {}", tr.name, tr.timing, tr.event);
    }
    for fk in &t.foreign_keys {
        let _ = writeln!(
            out,
            "  foreign key {} ({}): {}.{}({}) -> {}.{}({})",
            fk.name,
            fk.direction,
            fk.from_schema,
            fk.from_table,
            fk.from_columns.join(", "),
            fk.to_schema,
            fk.to_table,
            fk.to_columns.join(", ")
        );
    }
    for r in &t.risks {
        let _ = writeln!(out, "  RISK: {r}");
    }
}

/// The table's columns: type, charset, collation, bytes now and under utf8mb4, indexes.
fn columns_grid(t: &Table) -> Grid {
    let mut g = grid(&[
        "column",
        "type",
        "charset",
        "collation",
        "max bytes",
        "utf8mb4",
        "null",
        "indexes",
    ]);
    for c in &t.columns {
        let kind = match c.kind {
            ColumnKind::Binary => " (binary)",
            _ => "",
        };
        g.add_row(vec![
            Cell::new(&c.name),
            Cell::new(format!("{}{kind}", c.column_type)),
            Cell::new(c.charset.as_deref().unwrap_or("-")),
            Cell::new(c.collation.as_deref().unwrap_or("-")),
            Cell::new(c.max_bytes.map(|b| b.to_string()).unwrap_or_default()),
            Cell::new(
                c.max_bytes_utf8mb4
                    .map(|b| b.to_string())
                    .unwrap_or_default(),
            ),
            Cell::new(if c.nullable { "yes" } else { "no" }),
            Cell::new(c.indexes.join(", ")),
        ]);
    }
    g
}

/// The table's indexes: columns, bytes now and under utf8mb4, the limits, whether it fits.
fn indexes_grid(t: &Table) -> Grid {
    let mut g = grid(&[
        "index",
        "columns",
        "bytes now",
        "bytes utf8mb4",
        "limit",
        "fits utf8mb4",
    ]);
    for i in &t.indexes {
        let cols: Vec<String> = i
            .parts
            .iter()
            .map(|p| match p.prefix {
                Some(n) => format!("{}({n})", p.column),
                None => p.column.clone(),
            })
            .collect();
        let fits = if i.overflows_utf8mb4 {
            Cell::new("NO").fg(Color::Red)
        } else {
            Cell::new("yes")
        };
        g.add_row(vec![
            Cell::new(format!(
                "{}{}",
                i.name,
                if i.unique { " (unique)" } else { "" }
            )),
            Cell::new(cols.join(", ")),
            Cell::new(i.bytes),
            Cell::new(i.bytes_utf8mb4),
            Cell::new(format!("{}/{}", t.key_part_limit, t.key_limit)),
            fits,
        ]);
    }
    g
}

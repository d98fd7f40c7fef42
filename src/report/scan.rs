//! Renders a scan report: a terminal summary, Markdown, and JSON (the versioned layout in docs/scan.md).

use crate::scan::model::{ColumnScan, ScanReport, Strategy, TableScan};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, ContentArrangement, Table as Grid};
use std::fmt::Write;

/// JSON with stable field names (`schema_version` 1).
pub fn to_json(r: &ScanReport) -> String {
    serde_json::to_string_pretty(r).expect("scan report serialises")
}

/// The action word for a strategy, as every renderer prints it.
pub(crate) fn strategy(s: Strategy) -> &'static str {
    match s {
        Strategy::InPlace => "in-place",
        Strategy::Copy => "copy",
        Strategy::None => "none",
    }
}

fn labels(c: &ColumnScan) -> String {
    c.labels
        .iter()
        .map(|(l, n)| format!("{l} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The target a column is converted to (`keep` when its type stays).
pub(crate) fn target(c: &ColumnScan) -> String {
    match &c.target.charset {
        Some(cs) if c.strategy == Strategy::Copy => format!("{} {cs}", c.target.column_type),
        _ => "keep".to_string(),
    }
}

/// Whether anything in the report needs a DBA's action (drives exit code 1).
pub fn needs_action(r: &ScanReport) -> bool {
    r.tables.iter().any(|t| {
        t.strategy != Strategy::None
            || !t.risks.is_empty()
            || t.columns.iter().any(|c| !c.risks.is_empty())
    })
}

/// A terminal summary: one grid per table, risks and undecided rows below it.
pub fn to_text(r: &ScanReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Scan ({}) of {} — {}",
        r.mode,
        r.server.version,
        summary_line(r)
    );
    for t in &r.tables {
        out.push('\n');
        let _ = writeln!(
            out,
            "Table {}.{}: {} rows read, strategy {}",
            t.schema,
            t.name,
            t.rows_scanned,
            strategy(t.strategy)
        );
        let mut g = Grid::new();
        g.load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(
                [
                    "column",
                    "type",
                    "rows",
                    "null/empty",
                    "labels",
                    "undecided",
                    "max after",
                    "target",
                    "action",
                ]
                .map(Cell::new),
            );
        for c in &t.columns {
            g.add_row(vec![
                Cell::new(&c.name),
                Cell::new(format!(
                    "{} {}",
                    c.column_type,
                    c.charset.as_deref().unwrap_or("binary")
                )),
                Cell::new(c.rows),
                Cell::new(format!("{}/{}", c.nulls, c.empty)),
                Cell::new(labels(c)),
                Cell::new(c.undecided_total),
                Cell::new(format!("{}B/{}ch", c.max_bytes_after, c.max_chars_after)),
                Cell::new(target(c)),
                Cell::new(strategy(c.strategy)),
            ]);
        }
        let _ = writeln!(out, "{g}");
        write_examples(&mut out, t);
        for risk in t
            .risks
            .iter()
            .chain(t.columns.iter().flat_map(|c| c.risks.iter()))
        {
            let _ = writeln!(out, "  RISK: {risk}");
        }
    }
    out
}

fn write_examples(out: &mut String, t: &TableScan) {
    for c in &t.columns {
        if !c.confidence.is_empty() {
            let _ = writeln!(out, "  {}: {}", c.name, confidence_line(&c.confidence));
        }
        for (label, e) in &c.examples {
            if label == "ascii" {
                continue;
            }
            let _ = writeln!(
                out,
                "  {}: {label} e.g. key [{}] {} -> {}",
                c.name,
                e.key.join(", "),
                e.raw_hex,
                e.decoded.as_deref().unwrap_or("(left as is)")
            );
        }
        for u in c.undecided.iter().take(5) {
            let _ = writeln!(
                out,
                "  {}: UNDECIDED key [{}] {} (runner-up {})",
                c.name,
                u.key.join(", "),
                u.raw_hex,
                u.runner_up.as_deref().unwrap_or("none")
            );
        }
    }
}

/// How sure the decided non-ASCII values of a column were, surest first: a DBA tells a
/// sure column from a guessed one (the buckets are calibrated: `src/detect/README.md`).
fn confidence_line(buckets: &std::collections::BTreeMap<String, u64>) -> String {
    let order = [">=0.99", "0.95-0.99", "0.8-0.95", "0.5-0.8", "<0.5"];
    let total: u64 = buckets.values().sum();
    let parts: Vec<String> = order
        .iter()
        .filter_map(|b| buckets.get(*b).map(|n| format!("{n} at {b}")))
        .collect();
    format!(
        "confidence of {total} decided value(s): {}",
        parts.join(", ")
    )
}

/// One line: tables, columns, how many to recode, how many values undecided.
pub(crate) fn summary_line(r: &ScanReport) -> String {
    let cols: Vec<&ColumnScan> = r.tables.iter().flat_map(|t| t.columns.iter()).collect();
    let recode = cols.iter().filter(|c| c.strategy != Strategy::None).count();
    let undecided: u64 = cols.iter().map(|c| c.undecided_total).sum();
    format!(
        "{} table(s), {} column(s), {} to recode, {} undecided value(s)",
        r.tables.len(),
        cols.len(),
        recode,
        undecided
    )
}

/// A Markdown report for tickets and change reviews.
pub fn to_markdown(r: &ScanReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# myrecode scan ({})\n\nServer: {}. {}.\n",
        r.mode,
        r.server.version,
        summary_line(r)
    );
    for t in &r.tables {
        let _ = writeln!(
            out,
            "## `{}`.`{}`\n\n{} rows read; strategy **{}**.\n",
            t.schema,
            t.name,
            t.rows_scanned,
            strategy(t.strategy)
        );
        let _ = writeln!(
            out,
            "| column | type | rows | labels | undecided | max after | target | action |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
        for c in &t.columns {
            let _ = writeln!(
                out,
                "| `{}` | {} {} | {} | {} | {} | {} B / {} ch | {} | {} |",
                c.name.replace('|', "\\|"),
                c.column_type,
                c.charset.as_deref().unwrap_or("binary"),
                c.rows,
                labels(c),
                c.undecided_total,
                c.max_bytes_after,
                c.max_chars_after,
                target(c),
                strategy(c.strategy)
            );
        }
        let risks: Vec<&String> = t
            .risks
            .iter()
            .chain(t.columns.iter().flat_map(|c| c.risks.iter()))
            .collect();
        if !risks.is_empty() {
            out.push('\n');
            for risk in risks {
                let _ = writeln!(out, "- **Risk:** {risk}");
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_line_lists_buckets_surest_first() {
        let b: std::collections::BTreeMap<String, u64> =
            [("0.95-0.99", 3), (">=0.99", 40), ("<0.5", 1)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
        assert_eq!(
            confidence_line(&b),
            "confidence of 44 decided value(s): 40 at >=0.99, 3 at 0.95-0.99, 1 at <0.5"
        );
    }
}

//! The roll-up as the terminal shows it, as JSON (`DIR/fleet.json`) and as Markdown
//! (`DIR/fleet.md`). Pure; every line of it comes from [`super::rollup`].

use super::rollup::{Rollup, TableRollup, Totals};
use super::usage::Verdict;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::fmt::Write;

/// The roll-up as versioned JSON.
pub fn to_json(r: &Rollup) -> String {
    serde_json::to_string_pretty(r).expect("the roll-up serializes") + "\n"
}

fn encodings(t: &TableRollup) -> String {
    t.encodings
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn verdict(v: &Verdict) -> &'static str {
    match v {
        Verdict::Used => "used",
        Verdict::Unused => "UNUSED",
        Verdict::Unknown => "unknown",
    }
}

fn totals_line(t: &Totals) -> String {
    format!(
        "{} tables, {} with legacy text ({} values), {} undecided, {} blocked, {} unused; ~{} rows, ~{}, ~{} to recode",
        t.tables,
        t.legacy_tables,
        t.legacy_values,
        t.undecided,
        t.blocked_tables,
        t.unused_tables,
        t.estimated_rows,
        super::usage::human_bytes(t.bytes),
        super::usage::human_duration(t.estimated_seconds)
    )
}

/// Per schema, the clients its scan saw (none listed where they could not be read).
fn clients_lines(s: &super::rollup::ServerRollup) -> Vec<String> {
    s.schemas
        .iter()
        .filter(|sc| !sc.clients.is_empty())
        .map(|sc| format!("clients of {}: {}", sc.name, sc.clients.join("; ")))
        .collect()
}

/// A terminal summary: one grid per server, its blocks and unused tables with their evidence below.
pub fn to_text(r: &Rollup) -> String {
    let mut out = String::new();
    for s in &r.servers {
        let _ = writeln!(
            out,
            "== {} — counters: {}; {}",
            s.name, s.counters, s.counters_since
        );
        let mut grid = Table::new();
        grid.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
            "schema",
            "table",
            "legacy",
            "undecided",
            "blocked",
            "est. rows",
            "usage",
        ]);
        let mut notes = Vec::new();
        for sc in &s.schemas {
            for t in &sc.tables {
                grid.add_row(vec![
                    sc.name.clone(),
                    t.name.clone(),
                    encodings(t),
                    t.undecided.to_string(),
                    if t.blocks.is_empty() { "" } else { "yes" }.to_string(),
                    t.estimated_rows.to_string(),
                    verdict(&t.usage.verdict).to_string(),
                ]);
                for b in &t.blocks {
                    notes.push(format!("  blocked {}.{}: {b}", sc.name, t.name));
                }
                if t.usage.verdict == Verdict::Unused {
                    notes.push(format!(
                        "  unused {}.{}: {}",
                        sc.name, t.name, t.usage.evidence
                    ));
                }
            }
        }
        let _ = writeln!(out, "{grid}");
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
        for c in clients_lines(s) {
            let _ = writeln!(out, "  {c}");
        }
        for (schema, e) in &s.failed {
            let _ = writeln!(out, "  FAILED {schema}: {e}");
        }
        let _ = writeln!(out, "  {}: {}", s.name, totals_line(&s.totals));
    }
    let _ = writeln!(out, "fleet: {}", totals_line(&r.totals));
    if !r.pace.is_empty() {
        let _ = writeln!(out, "(times to recode {})", r.pace);
    }
    out
}

/// Escapes a cell for a Markdown table (pipes and line breaks).
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The roll-up as Markdown: a section per server, a table row per table, evidence in full.
pub fn to_markdown(r: &Rollup) -> String {
    let mut out = String::from("# Fleet scan\n\n");
    let _ = writeln!(out, "Fleet: {}.\n", totals_line(&r.totals));
    for s in &r.servers {
        let _ = writeln!(out, "## {}\n", cell(&s.name));
        let _ = writeln!(
            out,
            "Counters: {}; {}.\n",
            cell(&s.counters),
            cell(&s.counters_since)
        );
        let _ = writeln!(out, "{}.\n", totals_line(&s.totals));
        out.push_str("| schema | table | legacy columns | encodings | undecided | blocks | est. rows | bytes | est. time | usage | evidence |\n");
        out.push_str("|---|---|---|---|---:|---|---:|---:|---:|---|---|\n");
        for sc in &s.schemas {
            for t in &sc.tables {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    cell(&sc.name),
                    cell(&t.name),
                    cell(&t.legacy_columns.join(", ")),
                    cell(&encodings(t)),
                    t.undecided,
                    cell(&t.blocks.join(" ")),
                    t.estimated_rows,
                    t.bytes.map(|b| b.to_string()).unwrap_or_default(),
                    super::usage::human_duration(t.estimated_seconds),
                    verdict(&t.usage.verdict),
                    cell(&t.usage.evidence)
                );
            }
        }
        let clients = clients_lines(s);
        if !clients.is_empty() {
            out.push_str("\nClients seen while scanning:\n\n");
            for c in clients {
                let _ = writeln!(out, "- {}", cell(&c));
            }
        }
        for (schema, e) in &s.failed {
            let _ = writeln!(out, "\nFailed: `{}`: {}", cell(schema), cell(e));
        }
        out.push('\n');
    }
    if !r.pace.is_empty() {
        let _ = writeln!(out, "Times to recode are {}.", cell(&r.pace));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::rollup::{SchemaRollup, ServerRollup, ROLLUP_VERSION};
    use crate::fleet::usage::Usage;
    use std::collections::BTreeMap;

    fn sample() -> Rollup {
        let t = TableRollup {
            name: "old|log".into(),
            strategy: crate::scan::model::Strategy::None,
            legacy_columns: vec![],
            encodings: BTreeMap::new(),
            undecided: 0,
            blocks: vec![],
            estimated_rows: 5,
            rows_scanned: 5,
            bytes: Some(16384),
            estimated_seconds: 0,
            usage: Usage {
                verdict: Verdict::Unused,
                evidence: "TABLE_STATISTICS: 0 rows read".into(),
            },
        };
        let totals = Totals {
            tables: 1,
            unused_tables: 1,
            estimated_rows: 5,
            rows_scanned: 5,
            bytes: 16384,
            ..Totals::default()
        };
        Rollup {
            rollup_version: ROLLUP_VERSION,
            tool_version: "v".into(),
            servers: vec![ServerRollup {
                name: "db1".into(),
                counters: "TABLE_STATISTICS".into(),
                counters_since: "snapshot".into(),
                schemas: vec![SchemaRollup {
                    name: "shop".into(),
                    report: "db1/shop.json".into(),
                    mode: "full".into(),
                    tables: vec![t],
                    totals: totals.clone(),
                    clients: vec!["app@web1: 2 session(s), charset latin1".into()],
                }],
                failed: BTreeMap::new(),
                totals: totals.clone(),
            }],
            totals,
            pace: "at the measured pace".into(),
        }
    }

    #[test]
    fn unused_tables_are_named_with_their_evidence_everywhere() {
        let r = sample();
        let text = to_text(&r);
        assert!(
            text.contains("unused shop.old|log: TABLE_STATISTICS: 0 rows read"),
            "{text}"
        );
        assert!(
            text.contains(
                "fleet: 1 tables, 0 with legacy text (0 values), 0 undecided, 0 blocked, 1 unused"
            ),
            "{text}"
        );
        let md = to_markdown(&r);
        assert!(md.contains("| shop | old\\|log |  |  | 0 |  | 5 | 16384 | 0s | UNUSED | TABLE_STATISTICS: 0 rows read |"), "{md}");
        assert!(
            md.contains("- clients of shop: app@web1: 2 session(s), charset latin1"),
            "{md}"
        );
        assert!(
            text.contains("  clients of shop: app@web1: 2 session(s), charset latin1"),
            "{text}"
        );
        assert!(
            text.contains("(times to recode at the measured pace)"),
            "{text}"
        );
        let back: Rollup = serde_json::from_str(&to_json(&r)).unwrap();
        assert_eq!(back, r);
    }
}

//! The roll-up as one self-contained HTML page (`DIR/fleet.html`), in the scan report's
//! style ([`crate::report::html`]): inline CSS only, nothing fetched, every name from a
//! server escaped. Elements carry `data-` attributes so scripts and tests read the numbers
//! back: `section.server` `data-server`, `tr.table` `data-schema` `data-table`
//! `data-legacy-values` `data-undecided` `data-blocked` `data-rows` `data-usage`.

use super::rollup::{Rollup, Totals};
use super::usage::Verdict;
use crate::report::html::{escape, STYLE};
use std::fmt::Write;

fn totals(t: &Totals) -> String {
    format!(
        "{} tables, {} with legacy text ({} values), {} undecided, {} blocked, {} unused; ~{} rows, ~{} to recode",
        t.tables,
        t.legacy_tables,
        t.legacy_values,
        t.undecided,
        t.blocked_tables,
        t.unused_tables,
        t.estimated_rows,
        super::usage::human_duration(t.estimated_seconds)
    )
}

/// The whole page.
pub fn to_html(r: &Rollup) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>myrecode fleet scan</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>myrecode fleet scan</h1>\n<p id=\"summary\">Fleet: {}.</p>\n",
        escape(&totals(&r.totals))
    );
    for s in &r.servers {
        let _ = write!(
            o,
            "<section class=\"server\" data-server=\"{n}\">\n<h2>{n}</h2>\n\
             <p>Counters: {c}; {since}.<br>{t}.</p>\n<table>\n<tr><th>schema</th><th>table</th>\
             <th>legacy columns</th><th>encodings</th><th>undecided</th><th>est. rows</th>\
             <th>bytes</th><th>est. time</th><th>usage</th></tr>\n",
            n = escape(&s.name),
            c = escape(&s.counters),
            since = escape(&s.counters_since),
            t = escape(&totals(&s.totals)),
        );
        for sc in &s.schemas {
            for t in &sc.tables {
                let enc: Vec<String> = t
                    .encodings
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect();
                let usage = match t.usage.verdict {
                    Verdict::Used => "used",
                    Verdict::Unused => "unused",
                    Verdict::Unknown => "unknown",
                };
                let blocks: String = t
                    .blocks
                    .iter()
                    .map(|b| format!("<li class=\"risk\">{}</li>", escape(b)))
                    .collect();
                let _ = writeln!(
                    o,
                    "<tr class=\"table\" data-schema=\"{s}\" data-table=\"{n}\" data-legacy-values=\"{lv}\" \
                     data-undecided=\"{u}\" data-blocked=\"{b}\" data-rows=\"{r}\" data-usage=\"{usage}\">\
                     <td>{s}</td><td>{n}{bl}</td><td>{lc}</td><td>{enc}</td><td class=\"num\">{u}</td>\
                     <td class=\"num\">{r}</td><td class=\"num\">{by}</td><td class=\"num\">{time}</td>\
                     <td><b>{usage}</b><br><span class=\"muted\">{ev}</span></td></tr>",
                    s = escape(&sc.name),
                    n = escape(&t.name),
                    lv = t.encodings.values().sum::<u64>(),
                    u = t.undecided,
                    b = !t.blocks.is_empty(),
                    r = t.estimated_rows,
                    bl = if blocks.is_empty() { String::new() } else { format!("<ul class=\"risks\">{blocks}</ul>") },
                    lc = escape(&t.legacy_columns.join(", ")),
                    enc = escape(&enc.join(", ")),
                    by = t.bytes.map(|b| b.to_string()).unwrap_or_default(),
                    time = escape(&super::usage::human_duration(t.estimated_seconds)),
                    ev = escape(&t.usage.evidence),
                );
            }
        }
        o.push_str("</table>\n");
        for sc in s.schemas.iter().filter(|sc| !sc.clients.is_empty()) {
            let items: String = sc
                .clients
                .iter()
                .map(|c| format!("<li>{}</li>", escape(c)))
                .collect();
            let _ = writeln!(
                o,
                "<p>Clients of {n} seen while scanning:</p><ul class=\"clients\" data-schema=\"{n}\">{items}</ul>",
                n = escape(&sc.name)
            );
        }
        for (schema, e) in &s.failed {
            let _ = writeln!(
                o,
                "<p class=\"risk\">Failed: {}: {}</p>",
                escape(schema),
                escape(e)
            );
        }
        o.push_str("</section>\n");
    }
    let _ = writeln!(
        o,
        "<p class=\"muted\">Times to recode are {}. Written by myrecode {} (roll-up layout {}).</p>\n</body>\n</html>",
        escape(&r.pace),
        escape(&r.tool_version),
        r.rollup_version
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::rollup::{rollup, ServerInput};
    use std::collections::BTreeMap;

    #[test]
    fn names_from_a_server_are_escaped_and_failures_shown() {
        let r = rollup(
            &[ServerInput {
                name: "db1".into(),
                usage: None,
                reports: vec![],
                failed: BTreeMap::from([(
                    "<script>".to_string(),
                    "access denied & gone".to_string(),
                )]),
            }],
            "v",
        );
        let page = to_html(&r);
        assert!(
            page.contains("Failed: &lt;script&gt;: access denied &amp; gone"),
            "{page}"
        );
        assert!(!page.contains("<script>"));
        assert!(page.contains("data-server=\"db1\""));
        assert!(page.contains("default-src 'none'"));
    }
}

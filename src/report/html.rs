//! Renders a scan report as one self-contained HTML page (`scan --html FILE`).
//!
//! Inline CSS only: no script, no font, no image, nothing fetched (a Content-Security-Policy
//! meta tag forbids it), so the page can be mailed or attached to a ticket and opened
//! offline. Every string from the server (schema, table and column names, decoded text,
//! risks) is escaped. Elements carry stable ids and `data-` attributes so tests and
//! scripts can read the numbers back from the DOM:
//!
//! | element | id / attributes |
//! |---|---|
//! | summary | `#summary` `data-tables` `data-columns` `data-recode` `data-undecided` |
//! | table section | `#t{i}` `data-schema` `data-table` `data-rows` `data-strategy` |
//! | column row | `#t{i}-c{j}` `data-column` `data-rows` `data-nulls` `data-empty` `data-undecided` `data-strategy` `data-target` |
//! | bar segment / legend entry | `.seg` / `.legend li`, `data-label` `data-count` (the legend shows the count as text) |
//! | undecided key | `#t{i}-c{j}-undecided li` `data-key` |
//! | risk | `li.risk` `data-scope` (`table` or `column`, then `data-column`) |

use super::scan::{strategy, summary_line, target};
use crate::scan::model::{ColumnScan, ScanReport, Strategy, TableScan};
use std::fmt::Write;

/// Undecided keys listed per column; the report holds up to 1000, a page needs fewer.
const MAX_UNDECIDED_SHOWN: usize = 200;

/// Escapes text for HTML element content and double- or single-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A fixed colour per label family, so the same label looks the same in every report.
fn colour(label: &str) -> &'static str {
    match label {
        "ascii" => "#b8c0cc",
        "utf-8" => "#4caf50",
        "binary" => "#5d4037",
        "unknown" => "#e53935",
        "cp1251" => "#1e88e5",
        "koi8-r" => "#8e24aa",
        "koi8-u" => "#ab47bc",
        "cp866" => "#00897b",
        "iso-8859-5" => "#3949ab",
        "tcvn3" => "#f9a825",
        // Mojibake chains in oranges and browns, each its own, so neighbours stay apart.
        "utf-8>latin1" => "#fb8c00",
        "utf-8>cp1251" => "#ffb74d",
        "cp1251>latin1" => "#d84315",
        l if l.contains('>') => "#ff7043",
        _ => "#757575",
    }
}

/// The page's inline style, shared with the other HTML reports (the fleet's roll-up).
pub const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:75em;padding:0 1em;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}\
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.35em .5em;border-bottom:1px solid #eee}\
th{font-weight:600;background:#f6f7f9}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.bar{display:flex;height:1.1em;min-width:14em;background:#f0f0f0;border-radius:3px;overflow:hidden}\
.seg{display:block;height:100%}.seg+.seg{border-left:1px solid #fff}td.nw{white-space:nowrap}\
.legend{list-style:none;margin:.3em 0 0;padding:0;display:flex;flex-wrap:wrap;gap:.2em .9em}\
.sw{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.3em;vertical-align:-.05em}\
.s-copy{color:#b35c00;font-weight:600}.s-in-place{color:#1565c0;font-weight:600}.s-none{color:#777}\
.risk{color:#a00}ul.risks{padding-left:1.2em}\
details{margin:.3em 0}summary{cursor:pointer}.muted{color:#777}";

/// The whole page for `r`.
pub fn to_html(r: &ScanReport) -> String {
    let cols: Vec<&ColumnScan> = r.tables.iter().flat_map(|t| t.columns.iter()).collect();
    let recode = cols.iter().filter(|c| c.strategy != Strategy::None).count();
    let undecided: u64 = cols.iter().map(|c| c.undecided_total).sum();
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>myrecode scan ({mode})</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>myrecode scan ({mode})</h1>\n\
         <p id=\"summary\" data-tables=\"{tables}\" data-columns=\"{columns}\" data-recode=\"{recode}\" data-undecided=\"{undecided}\">\
         Server: {server}. {line}.</p>\n",
        mode = escape(&r.mode),
        tables = r.tables.len(),
        columns = cols.len(),
        server = escape(&r.server.version),
        line = escape(&summary_line(r)),
    );
    for (i, t) in r.tables.iter().enumerate() {
        table(&mut o, i, t);
    }
    let _ = writeln!(
        o,
        "<p class=\"muted\">Written by myrecode {} (report layout {}).</p>\n</body>\n</html>",
        escape(&r.tool_version),
        r.schema_version
    );
    o
}

fn table(o: &mut String, i: usize, t: &TableScan) {
    let _ = write!(
        o,
        "<section class=\"table\" id=\"t{i}\" data-schema=\"{schema}\" data-table=\"{name}\" data-rows=\"{rows}\" data-strategy=\"{strategy}\">\n\
         <h2><code>{schema}</code>.<code>{name}</code></h2>\n\
         <p>{rows} rows read (about {est} estimated); row format {row_format}; key {key}; strategy \
         <span class=\"s-{strategy}\">{strategy}</span>.</p>\n",
        schema = escape(&t.schema),
        name = escape(&t.name),
        rows = t.rows_scanned,
        est = t.estimated_rows,
        row_format = escape(&t.row_format),
        key = match &t.key {
            Some(k) => format!(
                "<code>{}</code> ({})",
                escape(&k.index),
                escape(&k.columns.join(", "))
            ),
            None => "<strong>none</strong>".to_string(),
        },
        strategy = strategy(t.strategy),
    );
    let risks: Vec<(Option<&str>, &String)> = t
        .risks
        .iter()
        .map(|r| (None, r))
        .chain(
            t.columns
                .iter()
                .flat_map(|c| c.risks.iter().map(move |r| (Some(c.name.as_str()), r))),
        )
        .collect();
    if !risks.is_empty() {
        let _ = writeln!(o, "<ul class=\"risks\">");
        for (scope, risk) in risks {
            let (attrs, shown) = match scope {
                None => ("data-scope=\"table\"".to_string(), String::new()),
                Some(c) => (
                    format!("data-scope=\"column\" data-column=\"{}\"", escape(c)),
                    format!("<code>{}</code>: ", escape(c)),
                ),
            };
            let _ = writeln!(
                o,
                "<li class=\"risk\" {attrs}><strong>Risk:</strong> {shown}{}</li>",
                escape(risk)
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(
        o,
        "<table class=\"columns\">\n<thead><tr><th>column</th><th>type</th><th>rows</th><th>null / empty</th>\
         <th>labels</th><th>undecided</th><th>max after</th><th>target</th><th>action</th></tr></thead>\n<tbody>"
    );
    for (j, c) in t.columns.iter().enumerate() {
        column(o, &format!("t{i}-c{j}"), c);
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    for (j, c) in t.columns.iter().enumerate() {
        details(o, &format!("t{i}-c{j}"), c);
    }
    let _ = writeln!(o, "</section>");
}

fn column(o: &mut String, id: &str, c: &ColumnScan) {
    let total: u64 = c.labels.values().sum();
    let mut bar = String::new();
    let mut legend = String::new();
    for (label, &n) in c.labels.iter().filter(|(_, n)| **n > 0) {
        let pct = n as f64 * 100.0 / total.max(1) as f64;
        let (l, col) = (escape(label), colour(label));
        let _ = write!(
            bar,
            "<span class=\"seg\" data-label=\"{l}\" data-count=\"{n}\" title=\"{l}: {n}\" style=\"width:{pct:.3}%;background:{col}\"></span>"
        );
        let _ = write!(
            legend,
            "<li data-label=\"{l}\" data-count=\"{n}\"><span class=\"sw\" style=\"background:{col}\"></span>{l} <b class=\"n\">{n}</b></li>"
        );
    }
    let target_text = match target(c).as_str() {
        "keep" => format!("keep {}", c.charset.as_deref().unwrap_or("binary")),
        other => other.to_string(),
    };
    let _ = writeln!(
        o,
        "<tr class=\"column\" id=\"{id}\" data-column=\"{name}\" data-rows=\"{rows}\" data-nulls=\"{nulls}\" data-empty=\"{empty}\" \
         data-undecided=\"{undecided}\" data-strategy=\"{strategy}\" data-target=\"{target}\">\
         <td><code>{name}</code></td><td class=\"mono\">{ty} {charset}</td><td class=\"num\">{rows}</td>\
         <td class=\"num\">{nulls} / {empty}</td>\
         <td><div class=\"bar\" role=\"img\" aria-label=\"labels of {name}\">{bar}</div><ul class=\"legend\">{legend}</ul></td>\
         <td class=\"num undecided\">{undecided}</td><td class=\"num\">{bytes} B / {chars} ch</td>\
         <td class=\"mono\" title=\"{why}\">{target}</td><td class=\"nw\"><span class=\"s-{strategy}\">{strategy}</span></td></tr>",
        name = escape(&c.name),
        rows = c.rows,
        nulls = c.nulls,
        empty = c.empty,
        undecided = c.undecided_total,
        strategy = strategy(c.strategy),
        target = escape(&target_text),
        why = escape(&c.target.why),
        ty = escape(&c.column_type),
        charset = escape(c.charset.as_deref().unwrap_or("binary")),
        bytes = c.max_bytes_after,
        chars = c.max_chars_after,
    );
}

/// Examples per label and the undecided keys, folded away under the grid.
fn details(o: &mut String, id: &str, c: &ColumnScan) {
    let examples: Vec<_> = c.examples.iter().filter(|(l, _)| *l != "ascii").collect();
    if examples.is_empty() && c.undecided.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<details id=\"{id}-details\"><summary><code>{}</code>: {} example(s), {} undecided value(s)</summary>",
        escape(&c.name),
        examples.len(),
        c.undecided_total
    );
    if !examples.is_empty() {
        let _ = writeln!(o, "<ul class=\"examples\">");
        for (label, e) in examples {
            let _ = writeln!(
                o,
                "<li data-label=\"{l}\">{l}, key [{key}]: <span class=\"mono\">{hex}</span> → {text}</li>",
                l = escape(label),
                key = escape(&e.key.join(", ")),
                hex = escape(&e.raw_hex),
                text = match &e.decoded {
                    Some(d) => escape(d),
                    None => "<span class=\"muted\">(left as is)</span>".to_string(),
                },
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    if !c.undecided.is_empty() {
        let _ = writeln!(
            o,
            "<p>Undecided (left as they are, keys go to the quarantine):</p>\n<ul class=\"undecided\" id=\"{id}-undecided\">"
        );
        for u in c.undecided.iter().take(MAX_UNDECIDED_SHOWN) {
            let key = u.key.join(", ");
            let _ = writeln!(
                o,
                "<li data-key=\"{k}\">key [{k}]: <span class=\"mono\">{hex}</span> (runner-up {ru})</li>",
                k = escape(&key),
                hex = escape(&u.raw_hex),
                ru = escape(u.runner_up.as_deref().unwrap_or("none")),
            );
        }
        let listed = c.undecided.len().min(MAX_UNDECIDED_SHOWN) as u64;
        if c.undecided_total > listed {
            let _ = writeln!(
                o,
                "<li class=\"muted\">and {} more (see the JSON report and the quarantine table)</li>",
                c.undecided_total - listed
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(o, "</details>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_both_quotes() {
        assert_eq!(escape(r#"<b>&"x'"#), "&lt;b&gt;&amp;&quot;x&#39;");
        assert_eq!(escape("Привет"), "Привет");
    }

    #[test]
    fn labels_that_share_a_column_get_different_colours() {
        let labels = [
            "ascii",
            "utf-8",
            "binary",
            "unknown",
            "cp1251",
            "koi8-r",
            "koi8-u",
            "cp866",
            "iso-8859-5",
            "tcvn3",
            "utf-8>latin1",
            "utf-8>cp1251",
            "cp1251>latin1",
            "koi8-r>latin1",
        ];
        let mut colours: Vec<&str> = labels.iter().map(|l| colour(l)).collect();
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), labels.len());
    }
}

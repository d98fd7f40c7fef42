//! The fleet roll-up's page (`DIR/fleet.html`) rendered by a real browser (Debian's headless
//! Chromium, as the scan report's page is in `html_report`): every table row of the DOM it
//! builds carries the roll-up's figures, the summary says the fleet's totals, each schema's
//! clients are listed, and nothing a server named arrives as markup. Chromium missing is a
//! failure with the install command, never a skip.

use crate::html_report::{chromium, render, tags, text_after};
use serde_json::Value;
use std::path::Path;

/// Checks the page `fleet scan` wrote into `out` against its `fleet.json`.
pub(crate) fn the_fleet_page_in_a_browser_shows_the_rollup(out: &Path) {
    chromium(); // fails with the install command when missing
    let rollup: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fleet.json")).unwrap()).unwrap();
    let dom = render(&out.join("fleet.html"));
    let all = tags(&dom);
    let rows: Vec<_> = all
        .iter()
        .filter(|t| t.name == "tr" && t.attr("class") == Some("table"))
        .collect();
    let mut want = Vec::new();
    for s in rollup["servers"].as_array().unwrap() {
        for sc in s["schemas"].as_array().unwrap() {
            for t in sc["tables"].as_array().unwrap() {
                let legacy: u64 = t["encodings"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|v| v.as_u64().unwrap())
                    .sum();
                want.push(vec![
                    sc["name"].as_str().unwrap().to_string(),
                    t["name"].as_str().unwrap().to_string(),
                    legacy.to_string(),
                    t["undecided"].to_string(),
                    (!t["blocks"].as_array().unwrap().is_empty()).to_string(),
                    t["estimated_rows"].to_string(),
                    t["usage"]["verdict"].as_str().unwrap().to_string(),
                ]);
            }
        }
    }
    let got: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            [
                "data-schema",
                "data-table",
                "data-legacy-values",
                "data-undecided",
                "data-blocked",
                "data-rows",
                "data-usage",
            ]
            .iter()
            .map(|a| r.attr(a).unwrap_or_default().to_string())
            .collect()
        })
        .collect();
    assert_eq!(got, want, "the browser's rows are the roll-up's tables");
    assert!(!want.is_empty());
    let summary = all
        .iter()
        .find(|t| t.attr("id") == Some("summary"))
        .expect("the summary paragraph");
    let text = text_after(&dom, summary);
    let totals = &rollup["totals"];
    assert!(
        text.starts_with(&format!(
            "Fleet: {} tables, {} with legacy text ({} values), {} undecided, {} blocked, {} unused",
            totals["tables"],
            totals["legacy_tables"],
            totals["legacy_values"],
            totals["undecided"],
            totals["blocked_tables"],
            totals["unused_tables"]
        )),
        "{text}"
    );
    assert!(text.contains(" to recode"), "{text}");
    // Each schema's clients, as the roll-up lists them.
    for s in rollup["servers"].as_array().unwrap() {
        for sc in s["schemas"].as_array().unwrap() {
            let clients = sc["clients"].as_array().unwrap();
            if clients.is_empty() {
                continue;
            }
            let list = all
                .iter()
                .position(|t| {
                    t.name == "ul"
                        && t.attr("class") == Some("clients")
                        && t.attr("data-schema") == sc["name"].as_str()
                })
                .unwrap_or_else(|| panic!("no clients list for {}", sc["name"]));
            let items: Vec<String> = all[list + 1..list + 1 + clients.len()]
                .iter()
                .map(|li| text_after(&dom, li))
                .collect();
            let want: Vec<String> = clients
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            assert_eq!(items, want);
        }
    }
    assert!(
        !all.iter().any(|t| t.name == "script"),
        "no script on the page"
    );
}

//! `scan --html`: the page is rendered by a real browser (Debian's headless Chromium) and
//! the numbers in the DOM it builds must equal the scan report's: label counts per column
//! (bar segments and the legend's text), undecided counts and keys, targets, strategies and
//! the index risk. Names holding markup (`<b>&"`) must arrive as text, not as elements.
//!
//! Chromium must be installed (`scripts/setup-server.sh` does it); without it this test
//! fails with the install command, it never skips. Each run is bounded (`BROWSER_TIMEOUT`)
//! and leaves no process behind: the browser gets its own process group and a throwaway
//! profile directory, and whatever still runs from either afterwards is killed by pid.

use crate::common;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::quote;
use myrecode::db::throwaway::test_database;
use myrecode::scan::model::ScanReport;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The column whose name must be escaped everywhere it appears.
const ODD_COLUMN: &str = "<b>&\"";
/// A table name with markup and quotes too.
const ODD_TABLE: &str = "notes <v2> & \"old\"";
/// How long one headless Chromium run may take before it is killed and the test fails.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(30);

/// The Chromium binary on the PATH, or a panic with one line saying how to install it.
pub(crate) fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "chromium not found on the PATH: install it with `sudo apt-get install -y chromium` (or run `bash scripts/setup-server.sh`)"
    );
}

/// Pids of running processes whose command line mentions `marker` (our profile directory).
fn processes_mentioning(marker: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| *pid != me)
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .map(|c| String::from_utf8_lossy(&c).contains(marker))
                        .unwrap_or(false)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Renders `page` in headless Chromium and returns the serialised DOM (`--dump-dom`).
pub(crate) fn render(page: &Path) -> String {
    let browser = chromium();
    let profile = tempfile::tempdir().unwrap();
    let out_path = profile.path().join("dom.html");
    let err_path = profile.path().join("stderr.txt");
    // HOME and the XDG directories point into the profile too: the Debian launcher and the
    // crash handler write there, and the crash handler (its own session) is found by it.
    let mut child = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-extensions",
            "--disable-breakpad",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .env("HOME", profile.path())
        .env("XDG_CONFIG_HOME", profile.path())
        .env("XDG_CACHE_HOME", profile.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let pgid = child.id() as i32;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > BROWSER_TIMEOUT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The group is ours alone (process_group(0) above); the crash handler leaves it, so it
    // is found by the profile path in its command line.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
    let marker = profile.path().to_string_lossy().into_owned();
    for pid in processes_mentioning(&marker) {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let Some(status) = status else {
        panic!("chromium did not finish within {BROWSER_TIMEOUT:?}; its stderr:\n{stderr}");
    };
    assert!(status.success(), "chromium failed ({status}):\n{stderr}");
    let dom = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        dom.contains("</html>"),
        "chromium printed no DOM:\n{dom}\n{stderr}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        processes_mentioning(&marker).is_empty(),
        "chromium processes outlived the test"
    );
    dom
}

/// One start tag of the serialised DOM: its name, attributes (entities decoded) and where it ends.
#[derive(Debug)]
pub(crate) struct Tag {
    pub(crate) name: String,
    attrs: Vec<(String, String)>,
    end: usize,
}

impl Tag {
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Decodes the entities a browser writes when it serialises text and attributes.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// Every start tag in `html` in order (serialised DOM: attribute values are always double-quoted).
pub(crate) fn tags(html: &str) -> Vec<Tag> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(at) = html[rest..].find('<') {
        let start = rest + at + 1;
        let Some(len) = html[start..].find('>') else {
            break;
        };
        let inner = &html[start..start + len];
        rest = start + len + 1;
        if inner.starts_with('/') || inner.starts_with('!') {
            continue;
        }
        let name_end = inner.find([' ', '/']).unwrap_or(inner.len());
        let mut attrs = Vec::new();
        let mut a = &inner[name_end..];
        while let Some(eq) = a.find("=\"") {
            let name = a[..eq].trim().to_string();
            let value_end = a[eq + 2..].find('"').expect("closing quote");
            attrs.push((name, unescape(&a[eq + 2..eq + 2 + value_end])));
            a = &a[eq + 2 + value_end + 1..];
        }
        out.push(Tag {
            name: inner[..name_end].to_string(),
            attrs,
            end: rest,
        });
    }
    out
}

/// The text between a tag's end and the next `<`, entities decoded.
pub(crate) fn text_after(html: &str, tag: &Tag) -> String {
    let rest = &html[tag.end..];
    unescape(&rest[..rest.find('<').unwrap_or(rest.len())])
}

async fn seed(cfg: &myrecode::db::connect::ConnectionConfig) {
    let odd_col = quote::ident(ODD_COLUMN);
    exec_script(
        cfg,
        &[
            // COMPACT rows: a 255-character index grows past 767 bytes under utf8mb4.
            &format!(
                "CREATE TABLE {} (id INT NOT NULL PRIMARY KEY, {odd_col} VARCHAR(255) CHARACTER SET latin1, \
                 token CHAR(32) CHARACTER SET latin1, KEY idx_odd ({odd_col})) ENGINE=InnoDB ROW_FORMAT=COMPACT",
                quote::ident(ODD_TABLE)
            ),
            "CREATE TABLE shop (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) CHARACTER SET utf8mb4) ENGINE=InnoDB",
        ],
    )
    .await;
    let mut odd: Vec<(i64, Vec<u8>)> = Vec::new();
    for (i, t) in RUSSIAN[..12].iter().enumerate() {
        let enc = if i % 3 == 2 { Koi8R } else { Windows1251 };
        odd.push((i as i64 + 1, bytes(enc, t)));
    }
    // Western European and Greek text: not ours to recode, so undecided (their keys listed).
    for (id, (enc, t)) in [
        (encoding_rs::WINDOWS_1252, "Café crème brûlée à volonté"),
        (encoding_rs::WINDOWS_1252, "Ça coûte très cher"),
        (encoding_rs::WINDOWS_1253, "Καλημέρα σας"),
    ]
    .into_iter()
    .enumerate()
    {
        odd.push((100 + id as i64, enc.encode(t).0.into_owned()));
    }
    insert_raw(cfg, ODD_TABLE, ODD_COLUMN, &odd).await;
    exec_script(
        cfg,
        &[&format!(
            "UPDATE {} SET token = LPAD(HEX(id * 7919), 32, '0')",
            quote::ident(ODD_TABLE)
        )],
    )
    .await;
    let mut shop: Vec<(i64, String)> = Vec::new();
    for (i, t) in RUSSIAN[..6].iter().enumerate() {
        shop.push((i as i64 * 2, mojibake(Windows1251, Latin1, t)));
        shop.push((i as i64 * 2 + 1, t.to_string()));
    }
    insert_text(cfg, "shop", "title", &shop).await;
}

#[tokio::test]
async fn the_html_report_shows_the_scan_numbers_in_a_real_browser() {
    chromium(); // fail first, and fast, when the browser is missing
    let db = test_database("html_report");
    seed(&db.config).await;
    let dir = tempfile::tempdir().unwrap();
    let (report, html) = the_scan_writes_its_report_and_a_self_contained_page(
        &db.config.url_with_secret(),
        dir.path(),
    );
    let dom = render(&html);
    let all = tags(&dom);
    let odd_table = names_holding_markup_arrive_as_text(&dom, &all, &report);
    the_summary_counts_the_reports_tables_columns_and_undecided_values(&all, &report);
    each_columns_bar_legend_and_undecided_keys_equal_the_reports(&dom, &all, &report);
    the_odd_column_is_counted_and_its_index_risk_shown_as_text(&dom, &all, &report, odd_table);
}

/// The element with `id` in `all`, by its position (a panic naming it when missing).
fn by_id(all: &[Tag], id: &str) -> usize {
    all.iter()
        .position(|t| t.attr("id") == Some(id))
        .unwrap_or_else(|| panic!("no element #{id} in the DOM"))
}

/// `scan --full` writes its JSON report and its HTML page into `dir`; the page loads
/// nothing from outside itself. Returns the report and the page's path.
fn the_scan_writes_its_report_and_a_self_contained_page(
    url: &str,
    dir: &Path,
) -> (ScanReport, PathBuf) {
    let json = dir.join("scan.json");
    let html = dir.join("scan report.html");
    let out = myrecode(
        Some(url),
        &[
            "scan",
            "--full",
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let report: ScanReport =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    for outside in [
        "<script", "http://", "https://", "url(", "@import", "<img", "<link",
    ] {
        assert!(
            !page.contains(outside),
            "the page must be self-contained, found {outside}"
        );
    }
    (report, html)
}

/// Escaping: the odd names are text and attribute values, never markup. Returns the odd
/// table's index in the report.
fn names_holding_markup_arrive_as_text(dom: &str, all: &[Tag], report: &ScanReport) -> usize {
    // Escaping: the odd names are text and attribute values, never markup.
    assert!(
        all.iter()
            .all(|t| t.name.chars().all(|c| c.is_ascii_alphanumeric())),
        "an element made of a name appeared: a name was not escaped: {:?}",
        all.iter()
            .map(|t| &t.name)
            .collect::<std::collections::BTreeSet<_>>()
    );
    assert!(
        !all.iter().any(|t| t.name == "b" && t.attrs.is_empty()),
        "a <b> element appeared: the column name was not escaped"
    );
    assert!(
        dom.contains("<code>&lt;b&gt;&amp;\"</code>"),
        "the column name is not shown as text"
    );
    let odd_table = report
        .tables
        .iter()
        .position(|t| t.name == ODD_TABLE)
        .expect("the odd table was scanned");
    assert_eq!(
        all[by_id(all, &format!("t{odd_table}"))].attr("data-table"),
        Some(ODD_TABLE)
    );
    odd_table
}

/// The summary's counts of tables, columns and undecided values equal the report's.
fn the_summary_counts_the_reports_tables_columns_and_undecided_values(
    all: &[Tag],
    report: &ScanReport,
) {
    let summary = &all[by_id(all, "summary")];
    let columns: usize = report.tables.iter().map(|t| t.columns.len()).sum();
    let undecided: u64 = report
        .tables
        .iter()
        .flat_map(|t| &t.columns)
        .map(|c| c.undecided_total)
        .sum();
    assert_eq!(
        summary.attr("data-tables"),
        Some(&*report.tables.len().to_string())
    );
    assert_eq!(summary.attr("data-columns"), Some(&*columns.to_string()));
    assert_eq!(
        summary.attr("data-undecided"),
        Some(&*undecided.to_string())
    );
    assert_eq!(undecided, 3, "the seeded cp1252/cp1253 rows are undecided");
}

/// Per column: its row's attributes, its bar's segments and its legend's numbers (the text
/// a reader sees) equal the report's label counts, and its undecided keys are listed.
fn each_columns_bar_legend_and_undecided_keys_equal_the_reports(
    dom: &str,
    all: &[Tag],
    report: &ScanReport,
) {
    let mut checked_labels = 0;
    for (i, t) in report.tables.iter().enumerate() {
        for (j, c) in t.columns.iter().enumerate() {
            let id = format!("t{i}-c{j}");
            let row = by_id(all, &id);
            let tr = &all[row];
            assert_eq!(tr.attr("data-column"), Some(c.name.as_str()), "#{id}");
            assert_eq!(tr.attr("data-rows"), Some(&*c.rows.to_string()), "#{id}");
            assert_eq!(
                tr.attr("data-undecided"),
                Some(&*c.undecided_total.to_string()),
                "#{id}"
            );
            let strategy = serde_json::to_value(c.strategy).unwrap();
            assert_eq!(tr.attr("data-strategy"), strategy.as_str(), "#{id}");
            // Everything up to the next row belongs to this column.
            let next = all[row + 1..]
                .iter()
                .position(|t| t.name == "tr" || t.name == "section")
                .map_or(all.len(), |k| row + 1 + k);
            let inside = &all[row + 1..next];
            let mut segments = Vec::new();
            let mut legend = Vec::new();
            let mut width = 0.0;
            for (k, tag) in inside.iter().enumerate() {
                let (Some(label), Some(count)) = (tag.attr("data-label"), tag.attr("data-count"))
                else {
                    continue;
                };
                let count: u64 = count.parse().unwrap();
                if tag.name == "li" {
                    // The number a reader sees: the text of the legend's <b class="n">.
                    let shown = inside[k..]
                        .iter()
                        .find(|t| t.name == "b")
                        .map(|b| text_after(dom, b))
                        .unwrap();
                    assert_eq!(shown, count.to_string(), "#{id} legend {label}");
                    legend.push((label.to_string(), count));
                } else {
                    let style = tag.attr("style").unwrap();
                    let pct = style
                        .split("width:")
                        .nth(1)
                        .and_then(|w| w.split('%').next())
                        .unwrap();
                    width += pct.parse::<f64>().unwrap();
                    segments.push((label.to_string(), count));
                }
            }
            let want: Vec<(String, u64)> = c
                .labels
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(l, n)| (l.clone(), *n))
                .collect();
            assert_eq!(segments, want, "#{id} bar segments");
            assert_eq!(legend, want, "#{id} legend");
            if !want.is_empty() {
                assert!((width - 100.0).abs() < 0.01, "#{id}: widths sum to {width}");
            }
            checked_labels += want.len();

            if !c.undecided.is_empty() {
                let list = by_id(all, &format!("{id}-undecided"));
                let keys: Vec<&str> = all[list + 1..]
                    .iter()
                    .take_while(|t| t.name == "li" || t.name == "span")
                    .filter_map(|t| t.attr("data-key"))
                    .collect();
                let want: Vec<String> = c.undecided.iter().map(|u| u.key.join(", ")).collect();
                assert_eq!(keys, want, "#{id} undecided keys");
            }
        }
    }
    assert!(
        checked_labels >= 6,
        "too few labels checked: {checked_labels}"
    );
}

/// The odd column's labels and undecided count as seeded, and the index that overflows
/// under utf8mb4 shown as a risk of its table, as text.
fn the_odd_column_is_counted_and_its_index_risk_shown_as_text(
    dom: &str,
    all: &[Tag],
    report: &ScanReport,
    odd_table: usize,
) {
    let odd = report.tables[odd_table]
        .columns
        .iter()
        .find(|c| c.name == ODD_COLUMN)
        .unwrap();
    assert_eq!(odd.labels.get("cp1251"), Some(&8));
    assert_eq!(odd.labels.get("koi8-r"), Some(&4));
    assert_eq!(odd.undecided_total, 3);

    // The index that overflows under utf8mb4 is a risk of its table, shown as text.
    let risks: Vec<String> = all
        .iter()
        .filter(|t| t.name == "li" && t.attr("class") == Some("risk"))
        .map(|t| unescape(&dom[t.end..t.end + dom[t.end..].find("</li>").unwrap()]))
        .collect();
    assert!(
        risks
            .iter()
            .any(|r| r.contains("index `idx_odd`") && r.contains("767")),
        "{risks:?}"
    );
}

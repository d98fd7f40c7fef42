//! `fleet scan` over two throwaway servers: one counting table use (`--userstat=1`), one not.
//! Each holds schemas of cp1251 text in latin1 columns; one table per schema is read and
//! written before the scan, one left untouched. A fleet scan killed midway and run again
//! scans only what was left; its roll-up's figures equal each schema's own report and an
//! uninterrupted run's; the untouched tables are named unused with their evidence, on the
//! server that counts, and "no counters" on the one that does not; the two tables of a
//! foreign key across schemas are blocked with `plan`'s refusal.

use crate::common::legacy::{bytes, RUSSIAN};
use crate::common::texts;
use myrecode::codec::Encoding;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::quote;
use myrecode::db::throwaway::ThrowawayServer;
use serde_json::Value;
use sqlx::Executor;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Rows per table: with 10-row batches and a 40 ms pause, a schema takes about a second,
/// long enough to kill the fleet scan between two schemas.
pub(crate) const ROWS: usize = 120;

pub(crate) fn start(opts: &[&str]) -> std::thread::JoinHandle<ThrowawayServer> {
    let opts: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        ThrowawayServer::start_local_with(&opts).unwrap_or_else(|e| panic!("{e:#}"))
    })
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A schema with `tables`, each `ROWS` rows of cp1251 text in a latin1 column.
pub(crate) fn seed(admin: &ConnectionConfig, schema: &str, tables: &[&str]) {
    rt().block_on(async {
        let mut c = admin.connect_one().await.unwrap();
        let db = quote::ident(schema);
        c.execute(format!("CREATE DATABASE {db} CHARACTER SET latin1").as_str())
            .await
            .unwrap();
        for &t in tables {
            c.execute(
                format!(
                    "CREATE TABLE {} (id INT PRIMARY KEY AUTO_INCREMENT, body TEXT CHARACTER SET latin1) ENGINE=InnoDB",
                    quote::table(schema, t)
                )
                .as_str(),
            )
            .await
            .unwrap();
            for i in 0..ROWS {
                sqlx::query(&format!("INSERT INTO {} (body) VALUES (?)", quote::table(schema, t)))
                    .bind(bytes(Encoding::Windows1251, RUSSIAN[i % RUSSIAN.len()]))
                    .execute(&mut c)
                    .await
                    .unwrap();
            }
        }
    });
}

/// The application at work: `posts` read and written, `archive` not touched.
fn use_posts(admin: &ConnectionConfig, schema: &str) {
    rt().block_on(async {
        let mut c = admin.connect_one().await.unwrap();
        let t = quote::table(schema, "posts");
        c.execute(format!("SELECT * FROM {t} WHERE id < 10").as_str())
            .await
            .unwrap();
        c.execute(format!("UPDATE {t} SET body = body WHERE id = 3").as_str())
            .await
            .unwrap();
        c.execute(format!("UPDATE {t} SET id = id WHERE id = 4").as_str())
            .await
            .unwrap();
    });
}

pub(crate) fn exec(admin: &ConnectionConfig, sql: &str) {
    rt().block_on(async {
        let mut c = admin.connect_one().await.unwrap();
        c.execute(sql).await.unwrap();
    });
}

/// An option file holding the server's user and password (the fleet file holds none).
pub(crate) fn option_file(dir: &Path, name: &str, admin: &ConnectionConfig) -> std::path::PathBuf {
    let u = url::Url::parse(&admin.url_with_secret()).unwrap();
    let password = percent_encoding::percent_decode_str(u.password().unwrap_or(""))
        .decode_utf8()
        .unwrap()
        .to_string();
    let path = dir.join(format!("{name}.cnf"));
    std::fs::write(
        &path,
        format!("[client]\nuser={}\npassword={password}\n", admin.user),
    )
    .unwrap();
    path
}

fn fleet_scan(fleet: &Path, out: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args(["fleet", "scan"])
        .arg(fleet)
        .arg("--out")
        .arg(out)
        .args(["--full", "--batch-size", "10", "--pause-ms", "40"])
        .stdin(Stdio::null())
        .env_remove("MYSQL_PWD")
        .env_remove("MYSQL_URL")
        .env("HOME", out.parent().unwrap());
    cmd
}

fn reports_in(out: &Path) -> usize {
    ["a", "b"]
        .iter()
        .filter_map(|s| std::fs::read_dir(out.join(s)).ok())
        .flatten()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
        .count()
}

pub(crate) fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The scan's figures of a roll-up, per server, schema and table (what an uninterrupted
/// run must equal; the counters and estimates, read from a live server, may move).
fn figures(r: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in r["servers"].as_array().unwrap() {
        for sc in s["schemas"].as_array().unwrap() {
            for t in sc["tables"].as_array().unwrap() {
                out.push(format!(
                    "{}/{}/{}: rows {} legacy {} enc {} undecided {} blocks {}",
                    s["name"],
                    sc["name"],
                    t["name"],
                    t["rows_scanned"],
                    t["legacy_columns"],
                    t["encodings"],
                    t["undecided"],
                    t["blocks"]
                ));
            }
        }
    }
    out
}

#[test]
fn a_fleet_scan_killed_midway_resumes_and_rolls_up_what_each_schema_reported() {
    let began = Instant::now();
    let (a, b) = (start(&["--userstat=1"]), start(&[]));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    for s in ["shop_1", "shop_2", "shop_3", "other"] {
        seed(a.admin(), s, &["posts", "archive"]);
    }
    seed(b.admin(), "shop_1", &["posts", "archive"]);
    seed(b.admin(), "shop_2", &["posts", "archive", "orders"]);
    // A foreign key across schemas: `plan` refuses both its tables (one cut-over moves the
    // constraints of one schema).
    exec(
        b.admin(),
        "ALTER TABLE `shop_2`.`orders` ADD COLUMN post_id INT, \
         ADD FOREIGN KEY (post_id) REFERENCES `shop_1`.`posts` (id)",
    );
    // The seeding wrote every table; the counters start now, as after a restart.
    exec(a.admin(), "FLUSH TABLE_STATISTICS");
    for s in ["shop_1", "shop_2", "shop_3"] {
        use_posts(a.admin(), s);
    }
    for s in ["shop_1", "shop_2"] {
        use_posts(b.admin(), s);
    }
    // The counters' age is in seconds: let one pass, so the evidence shows a real uptime.
    std::thread::sleep(Duration::from_millis(1100));

    let dir = tempfile::tempdir().unwrap();
    let a_cnf = option_file(dir.path(), "a", a.admin());
    let b_cnf = option_file(dir.path(), "b", b.admin());
    let fleet = dir.path().join("fleet.yaml");
    std::fs::write(
        &fleet,
        format!(
            "servers:\n  - name: a\n    url: mysql://{}@{}:{}\n    defaults-file: {}\n    schemas: ['shop_*']\n\
             \x20 - name: b\n    url: mysql://{}@{}:{}\n    defaults-file: {}\n    schemas: [shop_1, shop_2, nosuch]\n\
             groups:\n  canary: [b]\n  rest: [a]\n",
            a.admin().user, a.admin().host, a.admin().port, a_cnf.display(),
            b.admin().user, b.admin().host, b.admin().port, b_cnf.display(),
        ),
    )
    .unwrap();
    let total = 5;

    // 1. Killed once the first schema's report is written.
    let out = dir.path().join("resumed");
    let mut child = fleet_scan(&fleet, &out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while reports_in(&out) == 0 {
        assert!(Instant::now() < deadline, "no report after 60 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the fleet scan ended before any report"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let kept = reports_in(&out);
    assert!(kept < total, "the kill came too late: {kept} reports");

    // 2. Run again: only what was left is scanned.
    let o = fleet_scan(&fleet, &out).output().unwrap();
    let (stdout, stderr) = texts(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "legacy text needs attention\n{stdout}\n{stderr}"
    );
    assert_eq!(
        stderr.matches(": scanned (").count(),
        total - kept,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("kept from an earlier run").count(),
        kept,
        "{stderr}"
    );
    assert!(stderr.contains("`nosuch` selects no schema"), "{stderr}");
    assert!(!stderr.contains(&a.admin().url_with_secret()), "{stderr}");
    let rollup = json(&out.join("fleet.json"));

    // The roll-up's figures are each schema's report's.
    let servers = rollup["servers"].as_array().unwrap();
    let mut schemas_seen = 0;
    for s in servers {
        let names: Vec<&str> = s["schemas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        let want: &[&str] = if s["name"] == "a" {
            &["shop_1", "shop_2", "shop_3"]
        } else {
            &["shop_1", "shop_2"]
        };
        assert_eq!(names, want, "`other` is not selected, system schemas never");
        for sc in s["schemas"].as_array().unwrap() {
            schemas_seen += 1;
            let report = json(&out.join(sc["report"].as_str().unwrap()));
            let mut rows = 0;
            for (t, rt) in sc["tables"]
                .as_array()
                .unwrap()
                .iter()
                .zip(report["tables"].as_array().unwrap())
            {
                assert_eq!(t["name"], rt["name"]);
                assert_eq!(t["rows_scanned"], rt["rows_scanned"]);
                assert_eq!(t["rows_scanned"], ROWS as u64);
                assert_eq!(t["estimated_rows"], rt["estimated_rows"]);
                let col = &rt["columns"][0];
                assert_eq!(t["encodings"]["cp1251"], col["labels"]["cp1251"], "{t}");
                assert!(col["labels"]["cp1251"].as_u64().unwrap() > 0, "{col}");
                assert_eq!(t["undecided"], col["undecided_total"]);
                assert_eq!(t["legacy_columns"], serde_json::json!(["body: cp1251"]));
                rows += rt["rows_scanned"].as_u64().unwrap();
            }
            assert_eq!(sc["totals"]["rows_scanned"], rows);
        }
    }
    assert_eq!(schemas_seen, total);
    assert_eq!(rollup["totals"]["tables"], 2 * total as u64 + 1);

    // Unused tables with their evidence: the counters were read before the first run's scans
    // and kept for the second (else the tables the killed run scanned would look used).
    let table = |server: usize, schema: usize, name: &str| -> Value {
        servers[server]["schemas"][schema]["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    for schema in 0..3 {
        let archive = table(0, schema, "archive");
        assert_eq!(archive["usage"]["verdict"], "unused", "{archive}");
        let ev = archive["usage"]["evidence"].as_str().unwrap();
        assert!(
            ev.starts_with(
                "TABLE_STATISTICS: 0 rows read, 0 changed since the counters started (server up "
            ),
            "{ev}"
        );
        assert!(ev.contains("UPDATE_TIME"), "{ev}");
        assert!(!ev.contains("server up 0s"), "{ev}");
    }
    for schema in 0..3 {
        let posts = table(0, schema, "posts");
        assert_eq!(posts["usage"]["verdict"], "used", "{posts}");
        let ev = posts["usage"]["evidence"].as_str().unwrap();
        assert!(!ev.contains(" 0 rows read, 0 changed"), "{ev}");
    }
    for schema in 0..2 {
        for t in ["posts", "archive"] {
            let x = table(1, schema, t);
            assert_eq!(x["usage"]["verdict"], "unknown", "{x}");
            assert!(
                x["usage"]["evidence"]
                    .as_str()
                    .unwrap()
                    .starts_with("no counters (userstat is off)"),
                "{x}"
            );
        }
    }
    // What blocks is what `plan` would refuse, in its words.
    for (schema, name) in [(0, "posts"), (1, "orders")] {
        let t = table(1, schema, name);
        let blocks = t["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 1, "{t}");
        let why = blocks[0].as_str().unwrap();
        assert!(
            why.contains("across schemas") && why.contains("Fix:"),
            "{why}"
        );
    }
    assert_eq!(rollup["totals"]["blocked_tables"], 2);
    assert!(
        stdout.contains("blocked shop_2.orders: table 'orders'"),
        "{stdout}"
    );
    assert!(
        stdout.contains("unused shop_1.archive: TABLE_STATISTICS: 0 rows read"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("fleet.md")).unwrap();
    assert!(md.contains("| shop_2 | archive | body: cp1251 |"), "{md}");

    let page = std::fs::read_to_string(out.join("fleet.html")).unwrap();
    assert!(
        page.contains("data-schema=\"shop_3\" data-table=\"archive\""),
        "{page}"
    );
    assert_eq!(page.matches("data-usage=\"unused\"").count(), 3, "{page}");
    // And as a browser shows it.
    crate::fleet_html::the_fleet_page_in_a_browser_shows_the_rollup(&out);

    // 3. An uninterrupted run ends with the same figures.
    let fresh = dir.path().join("fresh");
    let o = fleet_scan(&fleet, &fresh).output().unwrap();
    let (_, stderr) = texts(&o);
    assert_eq!(stderr.matches(": scanned (").count(), total, "{stderr}");
    assert_eq!(figures(&json(&fresh.join("fleet.json"))), figures(&rollup));
    assert!(
        began.elapsed() < Duration::from_secs(120),
        "{:?}",
        began.elapsed()
    );
}

/// Bad input is refused before anything connects, in one line with the fix and no secret;
/// a server that cannot be reached fails the run (exit 2) after the roll-up of the rest.
#[test]
fn a_bad_fleet_file_stops_before_anything_runs_and_an_unreachable_server_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet.yaml");
    let out = dir.path().join("out");
    std::fs::write(
        &fleet,
        "servers:\n  - name: db1\n    url: mysql://dba:hunter2@127.0.0.1:1\n    schemas: [shop_*]\n",
    )
    .unwrap();
    let o = fleet_scan(&fleet, &out).output().unwrap();
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("holds a password") && stderr.contains("Fix:"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("hunter2") && !stdout.contains("hunter2"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!out.exists(), "nothing ran, nothing was written");

    // Port 1 on the loopback: nothing listens there.
    std::fs::write(
        &fleet,
        "servers:\n  - name: gone\n    url: mysql://dba@127.0.0.1:1\n    schemas: ['*']\n",
    )
    .unwrap();
    let o = fleet_scan(&fleet, &out).output().unwrap();
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("gone/*: "), "{stderr}");
    assert!(
        stderr.contains("Fix: correct what each names and run the same command again"),
        "{stderr}"
    );
    let rollup = json(&out.join("fleet.json"));
    assert_eq!(rollup["servers"][0]["name"], "gone");
    assert!(rollup["servers"][0]["failed"]["*"].is_string(), "{rollup}");
    assert_eq!(rollup["totals"]["tables"], 0);
}

//! The setup the bridge cannot cover, seen before the cut-over: an unchanged legacy PHP
//! application that sends `SET NAMES latin1` itself (after `init_connect`, undoing the
//! bridge). On a server whose performance_schema keeps the statement history, `scan` sees
//! its `SET NAMES`, the plan says what the switch will do for it and what it cannot, and
//! `plan --check` stops on it with the fix. Run anyway, the cut-over does what the plan said:
//! its writes are read right by the bridge's triggers, its reads give `?`.

use super::*;
use crate::common::{self, cli};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_sending_set_names_latin1_is_named_before_the_cut_over_with_the_fix() {
    let shop = Shop::open_with("php_set_names", &HISTORY).await;
    let url = shop.url();
    shop.seed();
    // The application, at work on a connection it keeps, its SET NAMES in its history.
    let mut app = shop.app("mysqli", "latin1", "keep");
    assert_eq!(app.charset(), "latin1 latin1");
    let before = app.pages();
    let dir = tempfile::tempdir().unwrap();
    let (report, _, text) = common::scan_and_plan(&url, dir.path());
    plan_says(
        &text,
        &[
            "clients:\n  bridge: true\n  legacy: cp1251\n  users: [shopapp]\n",
            "sends SET NAMES latin1",
            "NOT COVERED: sends SET NAMES latin1 itself, after init_connect",
        ],
    );
    let job = dir.path().join("job.yaml");
    std::fs::write(&job, text.replace("cutover: manual", "cutover: auto")).unwrap();
    let jobp = job.to_str().unwrap();
    let (code, out, err) = plan_check(&url, jobp, &report);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("sends SET NAMES latin1 itself")
            && out.contains("make it send SET NAMES cp1251 (or nothing) before the cut-over"),
        "{out}"
    );

    // Run anyway: what the plan said. Its writes right, its reads '?'.
    let (code, out, err) = cli(&url, &["run", jobp, "--execute"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("cut-over:"), "{out}");
    let mut fresh = shop.app("mysqli", "latin1", "fresh");
    let id = id_of(&fresh.add(&legacy("Пишет после переключения"), &legacy("Текст")));
    assert_eq!(shop.stored(id).await.0, "Пишет после переключения");
    let after = fresh.pages();
    assert!(
        after
            .iter()
            .zip(&before)
            .all(|(a, b)| a != b && a.contains(&b'?')),
        "its pages read '?' as the plan warned"
    );
    // The same unchanged application without its SET NAMES, bridged: every page as before.
    let mut plain = shop.app("mysqli", "none", "fresh");
    assert_eq!(plain.charset(), "cp1251 cp1251");
    assert_eq!(plain.pages(), before);
}

/// The server options that keep the statement history `scan` reads a `SET NAMES` from.
const HISTORY: [&str; 3] = [
    "--performance-schema=ON",
    "--performance-schema-consumer-events-statements-current=ON",
    "--performance-schema-consumer-events-statements-history=ON",
];

/// The setup that needs nothing: tables declared cp1251 and an application that says
/// `SET NAMES cp1251`. The scan sees it declare its charset; the plan installs no bridge and
/// names nothing; the server converts between the utf8mb4 table and the session, so after
/// the cut-over every page reads byte for byte as before, its Cyrillic search finds its
/// post, and its writes are UTF-8 in the table. (Without the history the scan cannot see
/// the `SET NAMES`, takes the session to talk latin1 and says so: a warning, never a miss.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_declaring_cp1251_on_cp1251_tables_needs_nothing() {
    let shop = Shop::open_declared("php_cp1251", &HISTORY, "cp1251").await;
    let url = shop.url();
    shop.seed_as("cp1251");
    let mut app = shop.app("pdo", "cp1251", "keep");
    let before = app.pages();
    let dir = tempfile::tempdir().unwrap();
    let (_, _, text) = common::scan_and_plan(&url, dir.path());
    plan_says(&text, &["clients:\n  bridge: false\n"]);
    assert!(!text.contains("NOT COVERED"), "nothing to name:\n{text}");
    let job = dir.path().join("job.yaml");
    std::fs::write(&job, text.replace("cutover: manual", "cutover: auto")).unwrap();
    let (code, out, err) = cli(&url, &["run", job.to_str().unwrap(), "--execute"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("cut-over:"), "{out}");
    let mut admin = shop.db.config.connect_one().await.unwrap();
    assert_eq!(title_charset(&mut admin).await, "utf8mb4");
    assert_eq!(app.pages(), before, "every page byte for byte as before");
    let (title, _) = post(5);
    assert_eq!(app.find(&legacy(&title)), "1");
    let id = id_of(&app.add(&legacy("Запись после переключения"), &legacy("Текст")));
    assert_eq!(shop.stored(id).await.0, "Запись после переключения");
}

//! The job's bridge keeps the unchanged legacy application working through the switch:
//! its pages read byte for byte as before, its Cyrillic search finds its post, and every
//! write it makes (through a session opened before the swap too) is correct UTF-8 in the
//! table; new code talking utf8mb4 works beside it after the swap. The run is SIGKILLed
//! inside its cut-over on the way.

use super::*;
use crate::common::{self, cli};
use crate::groups::run::{kill_after, sentries, spawn_run, status, wait_status};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the legacy application running beside the job saw.
#[derive(Default, Debug)]
struct Seen {
    /// Each post it wrote: id and the text it meant.
    writes: Vec<(i64, String)>,
    /// Pages it read.
    reads: usize,
    /// Pages that did not read as before (the request number and what came back).
    wrong: Vec<String>,
    /// Requests that failed for good.
    errors: Vec<String>,
}

/// Whether a failed answer is one an application retries (deadlock, lock wait).
fn retried(answer: &str) -> bool {
    ["error 1213", "error 1205"]
        .iter()
        .any(|e| answer.starts_with(e))
}

/// The legacy application at work until `stop`: PDO writing posts, mysqli reading pages,
/// each request on a connection of its own (PHP-FPM without persistence).
fn legacy_at_work(l: Launcher, before: Vec<Vec<u8>>, stop: Arc<AtomicBool>) -> Seen {
    let (mut w, mut r) = (
        l.app("pdo", "none", "fresh"),
        l.app("mysqli", "none", "fresh"),
    );
    let mut seen = Seen::default();
    let mut k = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let text = format!("Запись {k}: ёлки-палки, съешь же ещё этих мягких булок");
        let a = w.add(&legacy(&text), &legacy("Тело записи"));
        if a.starts_with("ok ") {
            seen.writes.push((id_of(&a), text));
        } else if !retried(&a) {
            seen.errors.push(format!("write {k}: {a}"));
        }
        let n = k % PAGES;
        let p = r.ask(&format!("page {n}"));
        match hex::decode(&p) {
            Ok(bytes) if bytes == before[n] => seen.reads += 1,
            Ok(bytes) => seen
                .wrong
                .push(format!("read {k}: {}", String::from_utf8_lossy(&bytes))),
            Err(_) if retried(&p) => {}
            Err(_) => seen.errors.push(format!("read {k}: {p}")),
        }
        k += 1;
        std::thread::sleep(Duration::from_millis(15));
    }
    seen
}

/// Every statement of the general log that created, dropped or renamed something, or
/// failed the application, with its time and connection: what a failure is read against.
async fn ddl_history(admin: &mut sqlx::MySqlConnection) -> String {
    let rows: Vec<(String, u64, String)> = sqlx::query_as(
        "SELECT CAST(event_time AS CHAR), thread_id, CAST(argument AS CHAR) FROM mysql.general_log \
         WHERE command_type = 'Query' AND (argument RLIKE '^(CREATE|DROP|RENAME|LOCK|UNLOCK|KILL)' \
         OR argument LIKE 'INSERT INTO posts %') ORDER BY event_time",
    )
    .fetch_all(admin)
    .await
    .unwrap_or_default();
    let lines: Vec<String> = rows
        .iter()
        .map(|(t, id, q)| format!("{t} [{id}] {}", q.chars().take(160).collect::<String>()))
        .collect();
    lines.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unchanged_legacy_app_and_new_code_live_through_the_switch_with_the_bridge() {
    let shop = Shop::open("php_bridge").await;
    let url = shop.url();
    let mut admin = shop.db.config.connect_one().await.unwrap();
    // An init_connect the server had before: kept through the bridge's life.
    sqlx::query("SET GLOBAL init_connect = 'SET @shop_audit = 1'")
        .execute(&mut admin)
        .await
        .unwrap();
    // The server's own record of every statement, read back if the application saw an error.
    sqlx::query("SET GLOBAL log_output = 'TABLE', general_log = ON")
        .execute(&mut admin)
        .await
        .unwrap();
    shop.seed();
    let mut old = shop.app("mysqli", "none", "fresh");
    let before = old.pages();
    // A session of the application opened before the swap and kept (a long request, a
    // worker): its writes after the swap are read as cp1251 by the bridge's triggers.
    let mut kept = shop.app("mysqli", "none", "keep");
    assert_eq!(kept.charset(), "latin1 latin1");

    // A user with SUPER on the schema: init_connect does not run for it.
    sqlx::query("CREATE USER shopadmin@'%' IDENTIFIED BY 'Adm1n-pw'")
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query("GRANT ALL PRIVILEGES ON *.* TO shopadmin@'%'")
        .execute(&mut admin)
        .await
        .unwrap();
    let su_url = format!(
        "mysql://shopadmin:Adm1n-pw@127.0.0.1:{}/{}",
        shop.db.config.port, shop.db.name
    );
    let su = myrecode::db::connect::ConnectionConfig::from_url(&su_url).unwrap();
    let su = su.connect_one().await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let (report, planned, text) = common::scan_and_plan(&url, dir.path());
    plan_says(
        &text,
        &[
            "clients:\n  bridge: true\n  legacy: cp1251\n  users: [shopapp]\n",
            "session(s)): latin1 handshake: its sessions opened after the swap talk cp1251",
            "#   shopadmin@127.0.0.1 (1 session(s)): latin1 handshake, but init_connect does not run for it",
            "#     NOT COVERED: holds SUPER or CONNECTION ADMIN",
            "# Not seen: a client that sends SET NAMES itself (performance_schema keeps no statement history here)",
        ],
    );
    let job = dir.path().join("job.yaml");
    std::fs::write(&job, text.replace("batch_size: 1000 ", "batch_size: 10   ")).unwrap();
    let jobp = job.to_str().unwrap();
    let check = |want_code: i32, want: &str| {
        let (code, out, err) = plan_check(&url, jobp, &report);
        assert_eq!(code, want_code, "{out}\n{err}");
        assert!(out.contains(want), "{want} not in: {out}\n{err}");
    };
    check(
        1,
        "clients: shopadmin@127.0.0.1 (1 session(s)) holds SUPER or CONNECTION ADMIN, so the server runs no init_connect for it",
    );
    drop(su);
    tokio::time::sleep(Duration::from_millis(300)).await;
    check(0, "ok:");
    let _ = planned;

    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (l, b, s) = (shop.launcher(), before.clone(), stop.clone());
        std::thread::spawn(move || legacy_at_work(l, b, s))
    };
    // The copy, until it waits for `myrecode cutover`, killed once while it waits.
    let mut run = spawn_run(&url, jobp, None);
    wait_status(&url, jobp, &mut run, "the copy to be ready", |s| {
        s["waits_for_cutover"] == true
    })
    .await;
    let st = status(&url, jobp);
    assert_eq!(st["bridge"]["on"], false, "{st:#}");
    kill_after(run, 100, "ready").await;
    let (code, out, err) = cli(&url, &["cutover", jobp]);
    assert_eq!(code, 0, "{out}\n{err}");
    // Runs killed inside the cut-over (its lock held 1.5 s by the test hook), until one is.
    let mut life = common::lives(43);
    let mut tries = 0;
    for n in 0.. {
        assert!(n < 12, "no kill landed inside the cut-over");
        kill_after(
            spawn_run(&url, jobp, Some(1500)),
            life(300, 1200),
            "cut-over",
        )
        .await;
        tries += 1;
        if sentries(&mut admin, &shop.db.name).await > 0 {
            break;
        }
    }
    let out = spawn_run(&url, jobp, None).wait_with_output().unwrap();
    let (o, e) = common::texts(&out);
    assert_eq!(out.status.code(), Some(0), "{o}\n{e}");
    assert!(o.contains("cut-over:"), "{o}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let seen = worker.join().unwrap();

    // The legacy application, unchanged, through the copy and the cut-over.
    if !seen.errors.is_empty() {
        panic!(
            "{:#?}\nthe server's DDL, in order:\n{}",
            seen.errors,
            ddl_history(&mut admin).await
        );
    }
    assert!(seen.writes.len() > 20 && seen.reads > 20, "{seen:?}");
    // A request whose connection opened just before the cut-over's lock and whose read ran
    // after its rename is a session opened before the swap: at most one per attempt.
    assert!(seen.wrong.len() <= tries + 1, "{:#?}", seen.wrong);
    eprintln!(
        "legacy app beside the switch: {} writes, {} pages read as before, {} not ({} cut-over attempts)",
        seen.writes.len(),
        seen.reads,
        seen.wrong.len(),
        tries + 1
    );
    for (id, text) in &seen.writes {
        assert_eq!(
            &shop.stored(*id).await.0,
            text,
            "post {id} as the application meant it"
        );
    }
    drop(old); // its last connection was opened before the swap
    let mut old = shop.app("mysqli", "none", "fresh");
    assert_eq!(old.charset(), "cp1251 cp1251", "bridged at login");
    assert_eq!(old.pages(), before, "every page byte for byte as before");
    let mut pdo = shop.app("pdo", "none", "fresh");
    assert_eq!(pdo.pages(), before);
    let (title, _) = post(3);
    assert_eq!(
        old.find(&legacy(&title)),
        "1",
        "a Cyrillic search finds its post"
    );
    let id = id_of(&old.add(&legacy("После переключения"), &legacy("Текст")));
    assert_eq!(shop.stored(id).await.0, "После переключения");

    // The session opened before the swap: not bridged, its writes read right by the triggers.
    assert_eq!(kept.charset(), "latin1 latin1");
    let id = id_of(&kept.add(
        &legacy("Старая сессия пишет"),
        &legacy("Текст старой сессии"),
    ));
    assert_eq!(
        shop.stored(id).await,
        (
            "Старая сессия пишет".to_string(),
            "Текст старой сессии".to_string()
        )
    );
    assert_eq!(kept.set(id, &legacy("Старая сессия правит")), "ok 1");
    assert_eq!(shop.stored(id).await.0, "Старая сессия правит");

    // New code beside the old: utf8mb4, reading the same pages as text, writing UTF-8.
    let mut new = shop.app("mysqli", "utf8mb4", "fresh");
    assert_eq!(new.charset(), "utf8mb4 utf8mb4");
    for (n, page) in new.pages().iter().enumerate() {
        assert_eq!(
            String::from_utf8(page.clone()).unwrap(),
            codec::decode(Encoding::Windows1251, &before[n]).unwrap()
        );
    }
    let id = id_of(&new.add("Новый код 😀".as_bytes(), "UTF-8".as_bytes()));
    assert_eq!(shop.stored(id).await.0, "Новый код 😀");
    assert_eq!(new.find("Старая сессия правит".as_bytes()), "1");

    // status counts the session opened before the swap; cleanup keeps the bridge for it.
    let st = status(&url, jobp);
    assert_eq!(st["bridge"]["on"], true, "{st:#}");
    assert_eq!(st["bridge"]["legacy_sessions"], 1, "{st:#}");
    let (code, out, _) = cli(&url, &["status", jobp]);
    assert_eq!(code, 0);
    assert!(out.contains("bridge: on (shopapp sessions talking latin1 talk cp1251); live sessions of shopapp: 1 opened before the swap"), "{out}");
    let (code, out, err) = cli(&url, &["cleanup", jobp]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("bridge kept: 1 session(s)"), "{out}");
    drop(kept);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (code, out, err) = cli(&url, &["cleanup", jobp]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("removed the bridge"), "{out}");
    let init: String = sqlx::query_scalar("SELECT @@global.init_connect")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        init, "SET @shop_audit = 1",
        "the server's own init_connect kept"
    );
    let triggers: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(triggers, 0, "the bridge's triggers dropped");
}

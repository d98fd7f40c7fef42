//! `revert` with both kinds of the application's clients at work: the unchanged legacy PHP
//! application (bridged since the swap) and new code talking utf8mb4 write and read posts
//! while the job's tables are swapped back, through a SIGKILL under the swap back's lock and
//! the run that ends it. Every write that went through holds, in the latin1 table again,
//! what its client meant, in cp1251; the emoji new code wrote is listed, never a silent `?`;
//! the legacy application reads every page byte for byte as before, unbridged again.

use super::*;
use crate::common::{self, cli};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The bridge for the shop's application user.
const BRIDGE: &str = "clients:\n  bridge: true\n  legacy: cp1251\n  users: [shopapp]\n";

/// What one client saw: the posts it wrote (id, the text it meant) and its failed requests.
#[derive(Default, Debug)]
struct Client {
    writes: Vec<(i64, String)>,
    errors: Vec<String>,
    reads: usize,
}

/// A client at work until `stop`: writes a post (its text from `text`, its bytes from `bytes`)
/// and reads a page, each request on a connection of its own, every 20 ms.
fn at_work(
    mut app: Php,
    text: fn(usize) -> String,
    bytes: fn(&str) -> Vec<u8>,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Client>>,
) {
    let mut k = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let t = text(k);
        let a = app.add(&bytes(&t), &bytes("Тело"));
        let mut s = seen.lock().unwrap();
        if a.starts_with("ok ") {
            s.writes.push((id_of(&a), t));
        } else {
            s.errors.push(format!("write {k}: {a}"));
        }
        let p = app.ask(&format!("page {}", k % PAGES));
        if hex::decode(&p).is_ok() {
            s.reads += 1;
        } else {
            s.errors.push(format!("read {k}: {p}"));
        }
        drop(s);
        k += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The legacy application's post `k`.
fn legacy_text(k: usize) -> String {
    format!("Старый код, запись {k}: съешь же ещё")
}

/// New code's post `k`; every fifth holds an emoji cp1251 lacks.
fn new_text(k: usize) -> String {
    if k % 5 == 4 {
        format!("Новый код {k} 😀")
    } else {
        format!("Новый код, запись {k}: ёж")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_with_the_bridged_legacy_app_and_new_code_writing_loses_no_write() {
    let shop = Shop::open("php_revert").await;
    let url = shop.url();
    let mut admin = shop.db.config.connect_one().await.unwrap();
    shop.seed();
    let before = shop.app("mysqli", "none", "fresh").pages();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, job(&shop.db.name, BRIDGE)).unwrap();
    let jobp = path.to_str().unwrap();
    let (code, out, err) = cli(&url, &["run", jobp, "--execute"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("cut-over:"), "{out}");

    // A legacy session kept open from after the swap (a persistent connection): bridged.
    let mut kept = shop.app("mysqli", "none", "keep");
    assert_eq!(kept.charset(), "cp1251 cp1251");

    // Both kinds of client at work on the recoded table, then through the revert.
    let stop = Arc::new(AtomicBool::new(false));
    let (old, new) = (
        Arc::new(Mutex::new(Client::default())),
        Arc::new(Mutex::new(Client::default())),
    );
    let workers = [
        (
            shop.app("pdo", "none", "fresh"),
            legacy_text as fn(usize) -> String,
            legacy as fn(&str) -> Vec<u8>,
            old.clone(),
        ),
        (
            shop.app("mysqli", "utf8mb4", "fresh"),
            new_text,
            |t: &str| t.as_bytes().to_vec(),
            new.clone(),
        ),
    ]
    .map(|(app, text, bytes, seen)| {
        let s = stop.clone();
        std::thread::spawn(move || at_work(app, text, bytes, s, seen))
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (code, out, err) = cli(&url, &["revert", jobp]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("posts: would be swapped back"), "{out}");
    // SIGKILLed once its swap back holds the lock (an application write waits on it).
    common::revert_killed_when(
        &mut admin,
        (&url, jobp),
        3_000,
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%' AND INFO LIKE 'INSERT INTO posts%'",
        Duration::ZERO,
    )
    .await;
    let (code, out, err) = cli(&url, &["revert", jobp, "--execute"]);
    assert!(code <= 1, "{out}\n{err}");
    assert!(out.contains("posts: swapped back"), "{out}\n{err}");
    assert!(
        out.contains(
            "session(s) of shopapp opened since the cut-over's swap are still open, bridged"
        ),
        "the kept session named: {out}"
    );
    // The legacy application goes on, unbridged again; new code is switched back with the
    // tables (as docs/revert.md says): its writes after the swap back fail (1366), none is
    // stored wrong.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    let (old, new) = (
        std::mem::take(&mut *old.lock().unwrap()),
        std::mem::take(&mut *new.lock().unwrap()),
    );
    eprintln!(
        "through the revert: legacy {} writes, {} reads, {} errors; new code {} writes, {} errors",
        old.writes.len(),
        old.reads,
        old.errors.len(),
        new.writes.len(),
        new.errors.len()
    );
    // A request whose session opened (bridged) just before the swap back's lock and whose
    // write ran after its rename fails (1366), stored nowhere: at most that one.
    assert!(
        old.errors.len() <= 1 && old.errors.iter().all(|e| e.contains("error 1366")),
        "{:#?}",
        old.errors
    );
    assert!(old.writes.len() > 40, "{old:?}");
    assert!(new.writes.len() > 10, "{new:?}");
    assert!(
        new.errors.iter().all(|e| e.contains("error 1366")),
        "{:#?}",
        new.errors
    );

    // The table is latin1 again and holds each write in cp1251; the emoji listed.
    assert_eq!(title_charset(&mut admin).await, "latin1");
    let mut emoji = Vec::new();
    for (id, text) in old.writes.iter().chain(&new.writes) {
        let stored = title_bytes(&mut admin, *id).await;
        if text.contains('😀') {
            emoji.push(text.clone());
            assert_eq!(stored, legacy(&text.replace('😀', "?")), "post {id}");
        } else {
            assert_eq!(stored, legacy(text), "post {id}: {text}");
        }
    }
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM posts")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        rows as usize,
        SEEDED + old.writes.len() + new.writes.len(),
        "no write that failed was stored"
    );
    let listed: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(value_text AS CHAR) FROM _myrecode_unreverted WHERE tbl = 'posts' AND col = 'title' ORDER BY value_text",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    emoji.sort();
    assert_eq!(listed, emoji, "each emoji listed with its text");
    assert!(!emoji.is_empty());
    let mut app = shop.app("mysqli", "none", "fresh");
    assert_eq!(app.charset(), "latin1 latin1", "unbridged at login again");
    assert_eq!(app.pages(), before, "every page byte for byte as before");
    let id = id_of(&app.add(&legacy("После отката"), &legacy("Текст")));
    assert_eq!(title_bytes(&mut admin, id).await, legacy("После отката"));
    // The session bridged before the swap back fails its Cyrillic write, loudly, until it
    // reconnects (what the revert's output tells the DBA).
    let a = kept.add(&legacy("Старая сессия"), &legacy("Текст"));
    assert!(a.starts_with("error 1366"), "{a}");
}

//! Without a bridge the unchanged legacy application breaks at the cut-over: this is what
//! the bridge is measured against, so the harness is shown to see the failure.

use super::*;
use crate::common::cli;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_bridge_the_legacy_app_reads_question_marks_after_the_cut_over() {
    let shop = Shop::open("php_today").await;
    shop.seed();
    let mut app = shop.app("mysqli", "none", "fresh");
    assert_eq!(app.charset(), "latin1 latin1", "the legacy handshake");
    let before = app.pages();
    let (title, _) = post(3);
    assert_eq!(app.find(&legacy(&title)), "1");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, job(&shop.db.name, "")).unwrap();
    let (code, out, err) = cli(&shop.url(), &["run", path.to_str().unwrap(), "--execute"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("cut-over:"), "{out}");

    let after = app.pages();
    let same = before.iter().zip(&after).filter(|(b, a)| b == a).count();
    assert_eq!(same, 0, "no page reads as before");
    assert!(
        after.iter().all(|p| p.contains(&b'?')),
        "every page holds '?' where its Cyrillic was"
    );
    assert_eq!(
        app.find(&legacy(&title)),
        "0",
        "a search by a Cyrillic title finds nothing"
    );
    let id = id_of(&app.add(&legacy("Новая тема"), &legacy("Текст")));
    let (stored, _) = shop.stored(id).await;
    assert_ne!(stored, "Новая тема");
    assert_eq!(
        stored,
        codec::decode(Encoding::Latin1, &legacy("Новая тема")).unwrap(),
        "a write stores cp1251>latin1 mojibake"
    );
}

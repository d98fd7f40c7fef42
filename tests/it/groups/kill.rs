//! Cut-over groups through SIGKILLs, against a real server: the application of
//! `tests/it/groups/swap.rs` (four latin1 tables in two groups, foreign keys inside and between them,
//! a writer on a control schema beside), its run killed at random instants while it copies,
//! inside each group's cut-over (a test hook holds the lock longer than the run lives), and
//! between the two; and once with the cascade logging of a child gone while the job was
//! stopped, which the next run must check again. Afterwards each group was swapped once, at
//! its own instant, and the schema equals the control.

use super::app;
use super::run;
use crate::common;

use app::*;
use common::texts;
use myrecode::db::throwaway::test_database;
use run::*;
use sqlx::Executor;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkills_before_inside_and_between_the_groups_cut_overs_leave_each_group_swapped_or_not() {
    let db = test_database("groups_kill");
    let control = test_database("groups_kctl");
    let mut c = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    for s in ddl("latin1") {
        c.execute(s.as_str()).await.unwrap();
    }
    for s in ddl("utf8mb4") {
        k.execute(s.as_str()).await.unwrap();
    }
    seed(&mut c, true).await;
    seed(&mut k, false).await;
    let before = constraints(&mut c, &db.name).await;
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("app.yaml");
    std::fs::write(&job, job_text(&db.name)).unwrap();
    let jobp = job.to_str().unwrap();
    let url = db.config.url_with_secret();
    let steer = Arc::new(Steer::default());
    let writer = {
        let (cfg, ctl, steer, schema) = (
            db.config.clone(),
            control.config.clone(),
            steer.clone(),
            db.name.clone(),
        );
        tokio::spawn(async move { write_until(cfg, ctl, steer, schema).await })
    };
    let mut life = common::lives(0x2545_F491_4F6C_DD1D);
    let mut printed = String::new();
    let mut kills = Vec::new();
    // The copies and their replay, before any cut-over is allowed.
    for _ in 0..8 {
        let out = kill_after(spawn_run(&url, jobp, Some(1500)), life(100, 900), "copy").await;
        printed.push_str(&out);
        kills.push(format!("copy{}", sentries(&mut c, &db.name).await));
    }
    // Every copy caught up; the run waits for the first command.
    let mut run = spawn_run(&url, jobp, None);
    wait_status(
        &url,
        jobp,
        &mut run,
        "accounts to wait for its cut-over",
        |s| s["groups"][0]["waits_for_cutover"] == true,
    )
    .await;
    printed.push_str(&kill_after(run, life(0, 300), "ready").await);
    kills.push("ready".into());
    // posts (forum) logs, before each delete, the profiles (accounts) the delete sets NULL and
    // the comments it deletes. That trigger gone while the job is stopped (as a cut-over
    // killed between rewriting it and its rename leaves it), the posts deleted meanwhile never
    // reach profiles' change log: the next run must check profiles again.
    let pair = ("posts_myrecode_bde", "posts");
    assert_eq!(
        trigger_on(&mut c, &db.name, pair.0).await.as_deref(),
        Some(pair.1)
    );
    c.execute(format!("DROP TRIGGER `{}`", pair.0).as_str())
        .await
        .unwrap();
    steer.hold().await;
    for q in [
        "DELETE FROM posts WHERE id IN (5, 10, 15)",
        "UPDATE profiles SET pinned_post_id = NULL WHERE id = 4",
    ] {
        c.execute(q).await.unwrap();
        k.execute(q).await.unwrap();
    }
    // The next run finds the pair missing and checks profiles again before it is ready (the
    // writer held meanwhile, so the rows the cascade changed are still as it left them).
    let out = run_until(&url, jobp, "ready: group 'accounts'").await;
    steer.release();
    assert_eq!(
        trigger_on(&mut c, &db.name, pair.0).await.as_deref(),
        Some(pair.1),
        "the pair is back"
    );
    let rechecked = out
        .lines()
        .find(|l| l.starts_with("check: profiles: every row compared with its copy; "))
        .unwrap_or_else(|| {
            panic!("profiles was not checked again after its cascades went unlogged:\n{out}")
        });
    let differed: u64 = rechecked
        .trim_start_matches("check: profiles: every row compared with its copy; ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{rechecked}"));
    assert!(
        differed >= 3,
        "the three profiles the cascade set NULL differ: {rechecked}"
    );
    printed.push_str(&out);
    // Inside `accounts`' cut-over: the hook holds its lock longer than the run lives.
    let out = common::myrecode(Some(&url), &["cutover", jobp, "--group", "accounts"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let mut inside = 0;
    for n in 0.. {
        assert!(
            n < 40,
            "no kill landed inside the cut-over of accounts: {kills:?}"
        );
        let out = kill_after(
            spawn_run(&url, jobp, Some(1500)),
            life(200, 1300),
            "accounts",
        )
        .await;
        printed.push_str(&out);
        let s = sentries(&mut c, &db.name).await;
        inside += i64::from(s > 0);
        kills.push(format!("accounts{s}"));
        if inside >= 3 {
            break;
        }
    }
    assert_eq!(
        charsets(&mut c, &db.name).await["users"],
        "latin1",
        "a killed cut-over swapped nothing"
    );
    // Between the groups: `accounts` swapped, `forum` waiting for its command.
    let mut run = spawn_run(&url, jobp, None);
    wait_status(&url, jobp, &mut run, "accounts to be swapped", |s| {
        s["groups"][0]["swapped"] == true
    })
    .await;
    printed.push_str(&kill_after(run, life(0, 400), "between").await);
    kills.push("between".into());
    for _ in 0..4 {
        let out = kill_after(spawn_run(&url, jobp, Some(1500)), life(100, 900), "between").await;
        printed.push_str(&out);
        kills.push("between".into());
    }
    let cs = charsets(&mut c, &db.name).await;
    assert_eq!(
        (cs["users"].as_str(), cs["posts"].as_str()),
        ("utf8mb4", "latin1"),
        "{cs:?}"
    );
    // Profiles are swapped: posts no longer logs them, only the comments. Users are swapped:
    // the live users logs the posts its renumbering cascades into, under the name its
    // original did not hold (the shadow's trigger, carried over by the rename).
    let on_posts = cascade_bodies(&mut c, &db.name, "posts").await;
    assert_eq!(on_posts.len(), 1, "{on_posts:?}");
    assert!(
        on_posts[0].1.contains("comments_myrecode_log")
            && !on_posts[0].1.contains("profiles_myrecode_log"),
        "{on_posts:?}"
    );
    assert_eq!(
        trigger_on(&mut c, &db.name, "users_myrecode_bup2")
            .await
            .as_deref(),
        Some("users")
    );
    // Inside `forum`'s cut-over.
    let out = common::myrecode(Some(&url), &["cutover", jobp, "--group", "forum"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let mut inside = 0;
    for n in 0.. {
        assert!(
            n < 40,
            "no kill landed inside the cut-over of forum: {kills:?}"
        );
        let out = kill_after(spawn_run(&url, jobp, Some(1500)), life(200, 1300), "forum").await;
        printed.push_str(&out);
        let s = sentries(&mut c, &db.name).await;
        inside += i64::from(s > 0);
        kills.push(format!("forum{s}"));
        if inside >= 3 {
            break;
        }
    }
    // The rerun finishes.
    let out = spawn_run(&url, jobp, None).wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    printed.push_str(&stdout);
    tokio::time::sleep(Duration::from_millis(300)).await;
    steer.stop.store(true, Ordering::SeqCst);
    let app = writer.await.unwrap();

    // Each group swapped once, at one instant of its own, in order.
    let cut: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("cut-over:"))
        .collect();
    assert_eq!(cut.len(), 2, "{cut:?}");
    assert!(
        cut[0].starts_with("cut-over: group 'accounts'")
            && cut[1].starts_with("cut-over: group 'forum'"),
        "{cut:?}"
    );
    for (table, seen) in &app.seen_at_switch {
        let mine = if ACCOUNTS.contains(table) {
            ACCOUNTS
        } else {
            FORUM
        };
        for t in mine.iter().chain(if FORUM.contains(table) {
            &ACCOUNTS[..]
        } else {
            &[]
        }) {
            assert_eq!(seen[*t], "utf8mb4", "{table} swapped, {t} not: {seen:?}");
        }
    }
    assert_eq!(app.switched.len(), 4, "{:?}", app.switched);
    // Every value recoded right, every write present, every cascade applied; the same
    // constraints, no orphan, no trigger or sentry of the job left.
    for (table, cols) in COLUMNS {
        let got = rows(&mut c, table, cols).await;
        let want = rows(&mut k, table, cols).await;
        let differ: Vec<_> = got
            .iter()
            .zip(&want)
            .filter(|(a, b)| a != b)
            .take(3)
            .collect();
        assert!(
            got.len() == want.len() && differ.is_empty(),
            "{table}: {} rows migrated, {} in the control; e.g. {differ:?} (kills: {kills:?})",
            got.len(),
            want.len()
        );
    }
    assert_eq!(constraints(&mut c, &db.name).await, before);
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE '%myrecode%'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(left, 0, "no trigger of the job is left");
    assert_eq!(sentries(&mut c, &db.name).await, 0);
    println!(
        "{} SIGKILLs: {kills:?}; application: {} writes, {} failed alike, {} retried; {}",
        kills.len(),
        app.n,
        app.failed_alike,
        app.retries,
        cut.join(" | ")
    );
}

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
use myrecode::db::throwaway::{test_database, TestDatabase};
use run::*;
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What the scenario's steps share: the migrated schema and its control (and a connection
/// to each), the job, the runs' lives and what the killed runs printed.
struct Scene {
    db: TestDatabase,
    control: TestDatabase,
    c: MySqlConnection,
    k: MySqlConnection,
    /// Holds the job's file for the scenario's life.
    _dir: tempfile::TempDir,
    jobp: String,
    url: String,
    /// The schema's foreign keys before the job, as they must be at the end.
    before: Vec<String>,
    /// How long each killed run lives, repeatably.
    life: Box<dyn FnMut(u64, u64) -> u64>,
    /// Everything the runs printed, for their `cut-over:` lines.
    printed: String,
    /// Where each kill landed, for the messages.
    kills: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkills_before_inside_and_between_the_groups_cut_overs_leave_each_group_swapped_or_not() {
    let mut s = the_schema_and_its_control_seeded().await;
    let steer = Arc::new(Steer::default());
    let writer = {
        let (cfg, ctl, steer, schema) = (
            s.db.config.clone(),
            s.control.config.clone(),
            steer.clone(),
            s.db.name.clone(),
        );
        tokio::spawn(async move { write_until(cfg, ctl, steer, schema).await })
    };
    runs_are_killed_while_copying_and_once_ready(&mut s).await;
    cascades_unlogged_while_stopped_make_the_next_run_check_the_table_again(&mut s, &steer).await;
    kills_land_inside_the_cut_over_of(&mut s, "accounts").await;
    assert_eq!(
        charsets(&mut s.c, &s.db.name).await["users"],
        "latin1",
        "a killed cut-over swapped nothing"
    );
    between_the_groups_kills_leave_accounts_swapped_and_its_cascades_logged(&mut s).await;
    kills_land_inside_the_cut_over_of(&mut s, "forum").await;
    // The rerun finishes.
    let out = spawn_run(&s.url, &s.jobp, None).wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    s.printed.push_str(&stdout);
    tokio::time::sleep(Duration::from_millis(300)).await;
    steer.stop.store(true, Ordering::SeqCst);
    let app = writer.await.unwrap();
    each_group_swapped_once_in_order_and_the_schema_equals_the_control(&mut s, &app).await;
}

/// The legacy schema and its control, created and seeded, and the job's file.
async fn the_schema_and_its_control_seeded() -> Scene {
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
    let jobp = job.to_str().unwrap().to_string();
    let url = db.config.url_with_secret();
    Scene {
        db,
        control,
        c,
        k,
        _dir: dir,
        jobp,
        url,
        before,
        life: Box::new(common::lives(0x2545_F491_4F6C_DD1D)),
        printed: String::new(),
        kills: Vec::new(),
    }
}

/// Runs killed while they copy and replay, before any cut-over is allowed, and once every
/// copy caught up and the run waits for the first command.
async fn runs_are_killed_while_copying_and_once_ready(s: &mut Scene) {
    let (url, jobp) = (s.url.clone(), s.jobp.clone());
    // The copies and their replay, before any cut-over is allowed.
    for _ in 0..8 {
        let out = kill_after(
            spawn_run(&url, &jobp, Some(1500)),
            (s.life)(100, 900),
            "copy",
        )
        .await;
        s.printed.push_str(&out);
        s.kills
            .push(format!("copy{}", sentries(&mut s.c, &s.db.name).await));
    }
    // Every copy caught up; the run waits for the first command.
    let mut run = spawn_run(&url, &jobp, None);
    wait_status(
        &url,
        &jobp,
        &mut run,
        "accounts to wait for its cut-over",
        |s| s["groups"][0]["waits_for_cutover"] == true,
    )
    .await;
    s.printed
        .push_str(&kill_after(run, (s.life)(0, 300), "ready").await);
    s.kills.push("ready".into());
}

/// posts (forum) logs, before each delete, the profiles (accounts) the delete sets NULL and
/// the comments it deletes. That trigger gone while the job is stopped (as a cut-over
/// killed between rewriting it and its rename leaves it), the posts deleted meanwhile never
/// reach profiles' change log: the next run must check profiles again.
async fn cascades_unlogged_while_stopped_make_the_next_run_check_the_table_again(
    s: &mut Scene,
    steer: &Steer,
) {
    let (c, k) = (&mut s.c, &mut s.k);
    let pair = ("posts_myrecode_bde", "posts");
    assert_eq!(
        trigger_on(c, &s.db.name, pair.0).await.as_deref(),
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
    let out = run_until(&s.url, &s.jobp, "ready: group 'accounts'").await;
    steer.release();
    assert_eq!(
        trigger_on(c, &s.db.name, pair.0).await.as_deref(),
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
    s.printed.push_str(&out);
}

/// `cutover --group {group}`, then runs killed until three of them landed inside its
/// cut-over (the hook holds its lock longer than the run lives).
async fn kills_land_inside_the_cut_over_of(s: &mut Scene, group: &str) {
    let (url, jobp) = (s.url.clone(), s.jobp.clone());
    let out = common::myrecode(Some(&url), &["cutover", &jobp, "--group", group]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    let mut inside = 0;
    for n in 0.. {
        assert!(
            n < 40,
            "no kill landed inside the cut-over of {group}: {:?}",
            s.kills
        );
        let out = kill_after(
            spawn_run(&url, &jobp, Some(1500)),
            (s.life)(200, 1300),
            group,
        )
        .await;
        s.printed.push_str(&out);
        let held = sentries(&mut s.c, &s.db.name).await;
        inside += i64::from(held > 0);
        s.kills.push(format!("{group}{held}"));
        if inside >= 3 {
            break;
        }
    }
}

/// Between the groups: `accounts` swapped, `forum` waiting for its command, through kills.
/// Profiles are swapped: posts no longer logs them, only the comments. Users are swapped:
/// the live users logs the posts its renumbering cascades into, under the name its original
/// did not hold (the shadow's trigger, carried over by the rename).
async fn between_the_groups_kills_leave_accounts_swapped_and_its_cascades_logged(s: &mut Scene) {
    let (url, jobp) = (s.url.clone(), s.jobp.clone());
    let mut run = spawn_run(&url, &jobp, None);
    wait_status(&url, &jobp, &mut run, "accounts to be swapped", |s| {
        s["groups"][0]["swapped"] == true
    })
    .await;
    s.printed
        .push_str(&kill_after(run, (s.life)(0, 400), "between").await);
    s.kills.push("between".into());
    for _ in 0..4 {
        let out = kill_after(
            spawn_run(&url, &jobp, Some(1500)),
            (s.life)(100, 900),
            "between",
        )
        .await;
        s.printed.push_str(&out);
        s.kills.push("between".into());
    }
    let c = &mut s.c;
    let cs = charsets(c, &s.db.name).await;
    assert_eq!(
        (cs["users"].as_str(), cs["posts"].as_str()),
        ("utf8mb4", "latin1"),
        "{cs:?}"
    );
    let on_posts = cascade_bodies(c, &s.db.name, "posts").await;
    assert_eq!(on_posts.len(), 1, "{on_posts:?}");
    assert!(
        on_posts[0].1.contains("comments_myrecode_log")
            && !on_posts[0].1.contains("profiles_myrecode_log"),
        "{on_posts:?}"
    );
    assert_eq!(
        trigger_on(c, &s.db.name, "users_myrecode_bup2")
            .await
            .as_deref(),
        Some("users")
    );
}

/// Each group swapped once, at one instant of its own, in order; every value recoded
/// right, every write present, every cascade applied; the same constraints, no orphan, no
/// trigger or sentry of the job left.
async fn each_group_swapped_once_in_order_and_the_schema_equals_the_control(
    s: &mut Scene,
    app: &App,
) {
    let kills = &s.kills;
    let cut: Vec<&str> = s
        .printed
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
        let got = rows(&mut s.c, table, cols).await;
        let want = rows(&mut s.k, table, cols).await;
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
    assert_eq!(constraints(&mut s.c, &s.db.name).await, s.before);
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE '%myrecode%' \
         AND TRIGGER_NAME NOT LIKE '%\\_myrecode\\_rv_'",
    )
    .bind(&s.db.name)
    .fetch_one(&mut s.c)
    .await
    .unwrap();
    assert_eq!(
        left, 0,
        "no trigger of the job is left (but the back log's, kept for `revert` until `cleanup`)"
    );
    assert_eq!(sentries(&mut s.c, &s.db.name).await, 0);
    println!(
        "{} SIGKILLs: {kills:?}; application: {} writes, {} failed alike, {} retried; {}",
        kills.len(),
        app.n,
        app.failed_alike,
        app.retries,
        cut.join(" | ")
    );
}

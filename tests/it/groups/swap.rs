//! Cut-over groups against a real server: four latin1 tables holding cp1251 text, in two
//! groups swapped at two instants by hand (`cutover: manual`, `myrecode cutover --group`),
//! with an application writing all along.
//!
//! `accounts` (users, profiles) and `forum` (posts, comments): a foreign key on text inside
//! `accounts` (profiles.user_login -> users.login, ON UPDATE CASCADE), one on integers inside
//! `forum`, and two on integers between them, one each way, both cascading (posts.user_id ->
//! users.id, profiles.pinned_post_id -> posts.id). Every statement of the application also
//! runs on a control schema born utf8mb4; the application writes each table in cp1251 until
//! that table refuses it, then in UTF-8. Afterwards the migrated schema holds exactly what
//! the control holds, with the same constraints on the live tables; between the two instants
//! one group was utf8mb4 and the other latin1, and writes landed in both.

use super::app;
use super::run;
use crate::common;

use app::*;
use common::texts;
use myrecode::db::throwaway::{test_database, TestDatabase};
use run::*;
use sqlx::{Executor, MySqlConnection};
use std::collections::BTreeSet;
use std::process::Child;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the scenario's steps share: the migrated schema and its control (and a connection
/// to each), the job's file and the URL every command is given.
struct Scene {
    db: TestDatabase,
    control: TestDatabase,
    c: MySqlConnection,
    k: MySqlConnection,
    /// Holds the job's file for the scenario's life.
    _dir: tempfile::TempDir,
    jobp: String,
    url: String,
    /// The schema's foreign keys before the job, as every step expects them on live tables.
    before: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_groups_are_swapped_at_two_instants_with_their_foreign_keys_and_a_writer() {
    let mut s = the_rehearsal_names_the_two_groups_in_their_order().await;
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
    let mut child = common::spawn_myrecode(&s.url, &["run", &s.jobp, "--execute"], &[]);
    nothing_is_swapped_before_the_first_groups_command(&mut s, &mut child).await;
    the_first_group_swaps_alone_and_its_foreign_keys_reference_live_tables(&mut s, &mut child)
        .await;
    let cut = the_last_group_left_swaps_without_its_name(&s, child).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    steer.stop.store(true, Ordering::SeqCst);
    let app = writer.await.unwrap();

    each_group_switched_at_its_own_instant_and_was_written_around_it(&app);
    every_table_equals_the_control_under_the_same_constraints(&mut s).await;
    verify_finds_differences_only_where_the_application_wrote_after_the_swap(&s, &app);
    println!(
        "application: {} writes, {} failed alike, {} retried, switched at {:?}; {}",
        app.n,
        app.failed_alike,
        app.retries,
        app.switched,
        cut.join(" | ")
    );
}

/// The legacy schema and its control are created and seeded, `plan --check` accepts the
/// job, and the rehearsal says the groups and their order.
async fn the_rehearsal_names_the_two_groups_in_their_order() -> Scene {
    let db = test_database("groups_app");
    let control = test_database("groups_ctl");
    let mut c = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    for s in ddl("latin1") {
        c.execute(s.as_str())
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    for s in ddl("utf8mb4") {
        k.execute(s.as_str())
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    seed(&mut c, true).await;
    seed(&mut k, false).await;
    let before = constraints(&mut c, &db.name).await;
    assert_eq!(before.len(), 4, "{before:?}");

    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("app.yaml");
    std::fs::write(&job, job_text(&db.name)).unwrap();
    let jobp = job.to_str().unwrap().to_string();
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["plan", "--check", &jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    // The rehearsal says the groups and their order.
    let out = common::myrecode(Some(&url), &["run", &jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "Cut-over groups, swapped one after another in this order, each at its own instant (one lock, drain and rename each), once every table is copied:\n\
             \x20 1. accounts: users, profiles (when `myrecode cutover --group accounts` is given)\n\
             \x20 2. forum: posts, comments (when `myrecode cutover --group forum` is given)\n"
        ),
        "{stdout}"
    );
    Scene {
        db,
        control,
        c,
        k,
        _dir: dir,
        jobp,
        url,
        before,
    }
}

/// Every copy caught up, `accounts` waits for its command and `forum` its turn; `cutover`
/// without a group, or naming `forum` first, is refused; every table is still latin1.
async fn nothing_is_swapped_before_the_first_groups_command(s: &mut Scene, child: &mut Child) {
    let (url, jobp) = (s.url.as_str(), s.jobp.as_str());
    wait_status(
        url,
        jobp,
        child,
        "group accounts to wait for its cut-over",
        |s| s["groups"][0]["waits_for_cutover"] == true,
    )
    .await;
    let st = status(url, jobp);
    assert_eq!(st["waits_for_cutover"], true);
    assert_eq!(
        st["groups"][1]["waits_for_cutover"], false,
        "forum waits its turn"
    );
    let out = common::myrecode(Some(url), &["status", jobp]);
    let shown = texts(&out).0;
    assert!(
        shown.contains(
            "group accounts (users, profiles): waits for `myrecode cutover --group accounts`"
        ),
        "{shown}"
    );
    // Which group: the DBA must say, and in the job's order.
    let out = common::myrecode(Some(url), &["cutover", jobp]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the job has 2 cut-over groups still to swap (accounts, then forum)"),
        "{stderr}"
    );
    let out = common::myrecode(Some(url), &["cutover", jobp, "--group", "forum"]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("group 'forum' is swapped after group 'accounts', which is not swapped yet"),
        "{stderr}"
    );
    assert_eq!(
        charsets(&mut s.c, &s.db.name)
            .await
            .values()
            .collect::<Vec<_>>(),
        ["latin1"; 4],
        "nothing swapped before `myrecode cutover`"
    );
}

/// `cutover --group accounts` swaps `accounts` alone: between the instants it is utf8mb4,
/// `forum` still latin1, the foreign keys between them soon on live tables again, and the
/// application goes on writing both until `forum` waits for its command.
async fn the_first_group_swaps_alone_and_its_foreign_keys_reference_live_tables(
    s: &mut Scene,
    child: &mut Child,
) {
    let (url, jobp) = (s.url.as_str(), s.jobp.as_str());
    let out = common::myrecode(Some(url), &["cutover", jobp, "--group", "accounts"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    wait_status(url, jobp, child, "group accounts to be swapped", |s| {
        s["groups"][0]["swapped"] == true
    })
    .await;
    // Between the instants: `accounts` is utf8mb4, `forum` still latin1, and the foreign keys
    // between them reference live tables.
    let cs = charsets(&mut s.c, &s.db.name).await;
    for t in ACCOUNTS {
        assert_eq!(cs[t], "utf8mb4", "{t}: {cs:?}");
    }
    for t in FORUM {
        assert_eq!(cs[t], "latin1", "{t}: {cs:?}");
    }
    // The stand-ins get their names back right after the rename: at most a moment later.
    let since = Instant::now();
    while constraints(&mut s.c, &s.db.name).await != s.before {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "constraints between the instants: {:?}",
            constraints(&mut s.c, &s.db.name).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = common::myrecode(Some(url), &["status", jobp]);
    let shown = texts(&out).0;
    assert!(
        shown.contains("group accounts (users, profiles): swapped"),
        "{shown}"
    );
    // The application goes on writing both groups, each in its own charset.
    wait_status(
        url,
        jobp,
        child,
        "group forum to wait for its cut-over",
        |s| s["groups"][1]["waits_for_cutover"] == true,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// `cutover` with no group swaps the only one left; the run ends having printed one
/// `cut-over:` line per group, in order. Returns those lines.
async fn the_last_group_left_swaps_without_its_name(s: &Scene, child: Child) -> Vec<String> {
    let out = common::myrecode(Some(&s.url), &["cutover", &s.jobp]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the only group left needs no name: {:?}",
        texts(&out)
    );
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    let cut: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("cut-over:"))
        .collect();
    assert_eq!(cut.len(), 2, "{stdout}");
    assert!(
        cut[0].starts_with(
            "cut-over: group 'accounts': users, profiles now have the recoded columns"
        ),
        "{stdout}"
    );
    assert!(
        cut[1].starts_with("cut-over: group 'forum': posts, comments now have the recoded columns"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ready: group 'accounts': users, profiles are copied and caught up"),
        "{stdout}"
    );
    cut.into_iter().map(String::from).collect()
}

/// Each group switched at its own instant: when the application first found a table of
/// `accounts` recoded, all of `accounts` was and none of `forum`; then all of `forum` was.
/// Every table was written after its swap, `forum` also in latin1 between the instants.
fn each_group_switched_at_its_own_instant_and_was_written_around_it(app: &App) {
    for (table, seen) in &app.seen_at_switch {
        let (mine, other) = if ACCOUNTS.contains(table) {
            (ACCOUNTS, FORUM)
        } else {
            (FORUM, ACCOUNTS)
        };
        for t in mine {
            assert_eq!(seen[t], "utf8mb4", "{table} swapped but not {t}: {seen:?}");
        }
        if ACCOUNTS.contains(table) {
            for t in other {
                assert_eq!(seen[t], "latin1", "{t} swapped with accounts: {seen:?}");
            }
        }
    }
    assert_eq!(
        app.switched.len(),
        4,
        "the application wrote every table after its swap: {:?}",
        app.switched
    );
    for t in FORUM {
        assert!(
            app.between.get(t).copied().unwrap_or(0) > 0,
            "{t} written in latin1 between the instants: {:?}",
            app.between
        );
    }
    for t in ACCOUNTS {
        assert!(
            app.after_own.get(t).copied().unwrap_or(0) > 0,
            "{t} written in UTF-8: {:?}",
            app.after_own
        );
    }
}

/// Every value recoded right, every write present, every cascade applied; the same
/// constraints on the live tables, none on a kept original, no orphan, no trigger of the
/// job left, and `status` says both groups are swapped.
async fn every_table_equals_the_control_under_the_same_constraints(s: &mut Scene) {
    let (c, k) = (&mut s.c, &mut s.k);
    for (table, cols) in COLUMNS {
        let got = rows(c, table, cols).await;
        let want = rows(k, table, cols).await;
        let differ: Vec<_> = got
            .iter()
            .zip(&want)
            .filter(|(a, b)| a != b)
            .take(3)
            .collect();
        assert!(
            got.len() == want.len() && differ.is_empty(),
            "{table}: {} rows migrated, {} in the control; e.g. {differ:?}",
            got.len(),
            want.len()
        );
    }
    // The same constraints (names, columns, actions), on the live tables, none on a kept
    // original, and no row violates them.
    assert_eq!(constraints(c, &s.db.name).await, s.before);
    let on_old: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? \
         AND (REFERENCED_TABLE_NAME LIKE '%myrecode%' OR (TABLE_NAME NOT LIKE '%myrecode_old' AND CONSTRAINT_NAME LIKE '%myrecode%'))",
    )
    .bind(&s.db.name)
    .fetch_one(&mut *c)
    .await
    .unwrap();
    assert_eq!(
        on_old, 0,
        "no constraint references a kept original or keeps a stand-in name"
    );
    for (child, col, parent, pcol) in [
        ("posts", "user_id", "users", "id"),
        ("profiles", "user_login", "users", "login"),
        ("profiles", "pinned_post_id", "posts", "id"),
        ("comments", "post_id", "posts", "id"),
    ] {
        let orphans: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {child} x LEFT JOIN {parent} p ON p.{pcol} = x.{col} WHERE x.{col} IS NOT NULL AND p.{pcol} IS NULL"
        ))
        .fetch_one(&mut *c)
        .await
        .unwrap();
        assert_eq!(orphans, 0, "{child}.{col} -> {parent}");
    }
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE '%myrecode%' \
         AND TRIGGER_NAME NOT LIKE '%\\_myrecode\\_rv_'",
    )
    .bind(&s.db.name)
    .fetch_one(&mut *c)
    .await
    .unwrap();
    assert_eq!(
        left, 0,
        "no trigger of the job is left (but the back log's, kept for `revert` until `cleanup`)"
    );
    let st = status(&s.url, &s.jobp);
    assert_eq!(st["finished"], true);
    assert!(
        st["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["swapped"] == true),
        "{st:#}"
    );
}

/// `verify`: every row of each kept original, recoded, equals the new table's, but those
/// the application wrote after its table was swapped.
fn verify_finds_differences_only_where_the_application_wrote_after_the_swap(s: &Scene, app: &App) {
    let out = common::myrecode(Some(&s.url), &["verify", &s.jobp]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    let mut table = "";
    for line in stdout.lines() {
        if let Some((t, rest)) = line.split_once(": ") {
            if rest.contains("row(s) equal their original") {
                table = COLUMNS
                    .iter()
                    .find(|(n, _)| *n == t)
                    .map(|(n, _)| *n)
                    .unwrap_or("");
                assert!(!table.is_empty(), "{line}");
                let differ: usize = rest
                    .rsplit("; ")
                    .next()
                    .and_then(|d| d.trim_end_matches(" differ").parse().ok())
                    .unwrap_or_else(|| panic!("{line}"));
                let touched = app.touched.get(table).map_or(0, BTreeSet::len);
                assert!(
                    differ <= touched,
                    "{line}: only {touched} key(s) were written after the swap"
                );
            }
        }
        if let Some(key) = line
            .trim()
            .strip_prefix("written since the cut-over (or only on one side): key ")
        {
            let key: i64 = key.parse().unwrap_or_else(|_| panic!("{line}"));
            assert!(
                app.touched.get(table).is_some_and(|t| t.contains(&key)),
                "{table}: key {key} differs from its original, yet no write after the swap touched it\n{stdout}"
            );
        }
    }
    for (t, _) in COLUMNS {
        assert!(
            stdout.contains(&format!("{t}: ")),
            "verify compared {t}: {stdout}"
        );
    }
}

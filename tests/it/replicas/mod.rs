//! Replicas against real topologies on loopback (`myrecode::testkit::replicaset`): a primary,
//! a replica relaying with `log_slave_updates` and one chained below it.
//!
//! Under ROW and MIXED binary logs, a job mixing four copied tables (foreign keys between
//! them, cascades, triggers, one cut-over) and one in-place table (a foreign key into a
//! copied one) runs through SIGKILLs while the application writes; afterwards every job
//! table on each replica equals the primary's, and the primary's equal a control schema born
//! utf8mb4; `verify` says so of both replicas, the chained one included (also while the
//! application writes, pausing a replica at the primary's position), and names by key
//! and key range a row changed on the relay and one deleted on the chained replica outside
//! the binary log, each on its own replica only. STATEMENT is refused before any write,
//! saying why. A replica whose SQL thread stops throttles the job within a batch, `status`
//! shows it, and once it has been down longer than `max_replica_down` the job stops; the
//! rerun finishes. A replica delayed on purpose (`MASTER_DELAY`) throttles the job within a
//! batch, and the lag whenever a batch commits stays within `max_replica_lag` plus one
//! batch. `cleanup` drops the replicas' bookkeeping once the job is done.

use crate::common;
use crate::groups::app;
mod kit;
use crate::groups::run;
mod verify;

use app::*;
use common::texts;
use kit::*;
use myrecode::codec::Encoding;
use myrecode::db::throwaway::TestDatabase;
use myrecode::testkit::replicaset::{BinlogFormat, ThrowawayReplicaSet};
use run::*;
use sqlx::{Executor, MySqlConnection};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use verify::verify_names_each_replicas_rows;

/// What the topology scenario's steps share: the servers, the migrated schema and its
/// control (and a connection to each), the job and the binary log format.
struct Scene {
    db: TestDatabase,
    control: TestDatabase,
    c: MySqlConnection,
    k: MySqlConnection,
    /// Holds the job's file for the scenario's life.
    _dir: tempfile::TempDir,
    jobp: String,
    url: String,
    format: BinlogFormat,
    /// The application's own session settings (its statements logged as rows).
    app_setup: &'static [&'static str],
    /// The schema's foreign keys before the job, as every server must hold them at the end.
    before: Vec<String>,
    /// Last, so it outlives the databases and connections on its servers when dropped.
    set: ThrowawayReplicaSet,
}

async fn equal_everywhere(format: BinlogFormat) {
    let _one = ONE_AT_A_TIME.lock().await;
    let mut s = a_legacy_schema_and_its_control_on_a_chained_topology(format).await;
    the_rehearsal_finds_both_replicas_the_chained_one_below_the_relay(&s);
    let steer = Arc::new(Steer::default());
    let writer = {
        let (cfg, ctl, steer, schema, app_setup) = (
            s.db.config.clone(),
            s.control.config.clone(),
            steer.clone(),
            s.db.name.clone(),
            s.app_setup,
        );
        tokio::spawn(async move { write_after(app_setup, cfg, ctl, steer, schema).await })
    };
    let notes_writer = {
        let (cfg, ctl, steer) = (s.db.config.clone(), s.control.config.clone(), steer.clone());
        tokio::spawn(async move { write_notes(cfg, ctl, steer).await })
    };
    let peak = tokio::spawn(the_replicas_heartbeat_lag_at_its_peak(&s, steer.clone()));
    let (kills, printed) = runs_are_killed_anywhere_then_inside_the_cut_over(&mut s).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    steer.stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();
    let notes_written = notes_writer.await.unwrap();
    let peak = peak.await.unwrap();
    assert!(notes_written > 50, "{notes_written}");
    assert_eq!(
        printed
            .lines()
            .filter(|l| l.starts_with("cut-over:"))
            .count(),
        1,
        "one cut-over: {printed}"
    );
    every_replica_equals_the_primary_and_the_primary_the_control(&mut s, &kills).await;
    let f = s.format.as_str();
    verify_names_each_replicas_rows(&s.set, &s.db.config, &mut s.c, &s.url, &s.jobp, f).await;
    verify_writes_nothing_and_cleanup_drops_the_replicas_bookkeeping(&mut s).await;
    // The replicas kept up: the job throttles at 500 ms; a batch, a replay round or a
    // cut-over in flight when the lag crosses it goes on (measured: 100 to 650 ms here).
    assert!(
        peak < Duration::from_secs(3),
        "peak heartbeat lag {} ms",
        peak.as_millis()
    );
    eprintln!(
        "{f}: {} kills ({kills:?}); peak heartbeat lag of the replicas {} ms (max_replica_lag 500 ms)",
        kills.len(),
        peak.as_millis()
    );
    let Scene { db, control, .. } = s;
    drop((db, control));
}

/// A primary, a relay replicating from it and a replica chained below the relay, in
/// `format`; on the primary the legacy schema (the groups' four copied tables and the
/// in-place `notes`) and its control born utf8mb4, seeded; the job's file.
async fn a_legacy_schema_and_its_control_on_a_chained_topology(format: BinlogFormat) -> Scene {
    let set = topology(format, &[None, Some(0)]);
    let db = set.primary.fresh_database("rep_app").unwrap();
    let control = set.primary.fresh_database("rep_ctl").unwrap();
    let mut c = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    // The test application binds cp1251 bytes as parameters of a utf8mb4 connection: as a
    // statement, a replica would read them back as utf8mb4 and stop ("Incorrect string
    // value"), so its own sessions log rows. myrecode's sessions, and the triggers they
    // create, keep the server's format.
    let app_setup: &[&str] = match format {
        BinlogFormat::Row => &[],
        _ => &["SET SESSION binlog_format = 'ROW'"],
    };
    for s in app_setup {
        c.execute(*s).await.unwrap();
    }
    for s in ddl("latin1") {
        c.execute(s.as_str()).await.unwrap();
    }
    for s in ddl("utf8mb4") {
        k.execute(s.as_str()).await.unwrap();
    }
    c.execute(notes_ddl()).await.unwrap();
    k.execute(notes_ddl()).await.unwrap();
    seed(&mut c, true).await;
    seed(&mut k, false).await;
    seed_notes(&mut c, true).await;
    seed_notes(&mut k, false).await;
    let before = constraints(&mut c, &db.name).await;
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("app.yaml");
    std::fs::write(
        &jobf,
        job(
            &db.name,
            "  max_replica_lag: 500ms\n  max_replica_down: 30s\n",
        ),
    )
    .unwrap();
    let jobp = jobf.to_str().unwrap().to_string();
    let url = db.config.url_with_secret();
    Scene {
        db,
        control,
        c,
        k,
        _dir: dir,
        jobp,
        url,
        format,
        app_setup,
        before,
        set,
    }
}

/// The rehearsal finds both replicas, the chained one below the relay.
fn the_rehearsal_finds_both_replicas_the_chained_one_below_the_relay(s: &Scene) {
    let (p0, p1, p2) = (
        s.set.primary.admin().port,
        s.set.replica(0).port,
        s.set.replica(1).port,
    );
    let out = common::myrecode(Some(&s.url), &["run", &s.jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let f = s.format.as_str();
    for want in [
        format!("Replication: primary 127.0.0.1:{p0} (server 1, "),
        format!("binary log {f} ("),
        format!("  replica 127.0.0.1:{p1} (SHOW SLAVE HOSTS of 127.0.0.1:{p0}): server 2, binary log {f}, log_slave_updates ON (relays to replicas below it); lag 0 s"),
        format!("  replica 127.0.0.1:{p2} (SHOW SLAVE HOSTS of 127.0.0.1:{p1}): server 3, binary log {f}, log_slave_updates OFF; lag 0 s"),
    ] {
        assert!(stdout.contains(&want), "{want}\n{stdout}");
    }
}

/// The lag the job lets the relay and the chained replica reach, by the heartbeat, read
/// until `steer` stops; a future owning what it reads, to be spawned.
fn the_replicas_heartbeat_lag_at_its_peak(
    s: &Scene,
    steer: Arc<Steer>,
) -> impl std::future::Future<Output = Duration> {
    let (p, r1, r2) = (
        s.db.config.clone(),
        s.set.replica(0).with_database(Some(&s.db.name)),
        s.set.replica(1).with_database(Some(&s.db.name)),
    );
    async move {
        let mut p = p.connect_one().await.unwrap();
        let mut r = [
            r1.connect_one().await.unwrap(),
            r2.connect_one().await.unwrap(),
        ];
        let mut peak = Duration::ZERO;
        while !steer.stop.load(Ordering::SeqCst) {
            for r in r.iter_mut() {
                if let Some(l) = beat_lag(&mut p, r).await {
                    peak = peak.max(l);
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        peak
    }
}

/// Ten runs killed anywhere (set-up, copies, the in-place batches), then two inside the
/// cut-over (the test hook holds its lock 1.5 s; a sentry table marks it under way); then
/// the job run to its end. Returns where the kills landed and what the runs printed.
async fn runs_are_killed_anywhere_then_inside_the_cut_over(s: &mut Scene) -> (Vec<String>, String) {
    let (url, jobp, c) = (s.url.as_str(), s.jobp.as_str(), &mut s.c);
    let mut life = common::lives(0x9E37_79B9_7F4A_7C15);
    let mut kills = Vec::new();
    let mut printed = String::new();
    let mut finished = false;
    while kills.len() < 12 && !finished {
        let inside = kills.len() >= 10;
        let (mut child, lived) = if inside {
            (spawn_run(url, jobp, Some(1500)), life(0, 1000))
        } else {
            (spawn_run(url, jobp, Some(700)), life(100, 800))
        };
        let since = Instant::now();
        // A cut-over killed before leaves its sentries until the next run settles them.
        while inside
            && sentries(c, &s.db.name).await > 0
            && since.elapsed() < Duration::from_secs(5)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        while inside && sentries(c, &s.db.name).await == 0 {
            assert!(
                since.elapsed() < Duration::from_secs(120),
                "no cut-over began: {kills:?}"
            );
            if child.try_wait().unwrap().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(lived)).await;
        if child.try_wait().unwrap().is_some() {
            printed.push_str(&succeeded(child.wait_with_output().unwrap(), c).await);
            finished = true;
            break;
        }
        child.kill().unwrap(); // SIGKILL
        printed.push_str(&texts(&child.wait_with_output().unwrap()).0);
        let n = sentries(c, &s.db.name).await;
        assert!(!inside || n > 0, "the kill missed the cut-over: {kills:?}");
        kills.push(format!("{lived}ms/{n}"));
    }
    assert!(
        kills.len() >= 10,
        "only {} kills landed before the job finished: {kills:?}",
        kills.len()
    );
    if !finished {
        let out = spawn_run(url, jobp, None).wait_with_output().unwrap();
        printed.push_str(&succeeded(out, c).await);
    }
    (kills, printed)
}

/// The migrated schema equals the control, with its constraints; each replica equals the
/// primary, table by table, with the same charsets and constraints.
async fn every_replica_equals_the_primary_and_the_primary_the_control(
    s: &mut Scene,
    kills: &[String],
) {
    let (c, k) = (&mut s.c, &mut s.k);
    for (table, cols) in tables() {
        assert_eq!(differs(c, k, table, cols).await, None, "kills {kills:?}");
    }
    assert_eq!(constraints(c, &s.db.name).await, s.before);
    s.set.sync(Duration::from_secs(120)).unwrap();
    let f = s.format.as_str();
    for i in 0..2 {
        let mut r = s
            .set
            .replica(i)
            .with_database(Some(&s.db.name))
            .connect_one()
            .await
            .unwrap();
        for (table, cols) in tables() {
            assert_eq!(
                differs(c, &mut r, table, cols).await,
                None,
                "replica {i} ({f}), kills {kills:?}"
            );
        }
        assert_eq!(
            charsets(&mut r, &s.db.name).await,
            charsets(c, &s.db.name).await
        );
        assert_eq!(
            constraints(&mut r, &s.db.name).await,
            s.before,
            "replica {i}"
        );
    }
}

/// `verify` wrote nothing; the job done, `cleanup` drops the replicas' bookkeeping.
async fn verify_writes_nothing_and_cleanup_drops_the_replicas_bookkeeping(s: &mut Scene) {
    assert!(!own_objects(&mut s.c, &s.db.name)
        .await
        .contains(&"_myrecode_checksums".to_string()));
    let out = common::myrecode(Some(&s.url), &["cleanup", &s.jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let left = own_objects(&mut s.c, &s.db.name).await;
    for t in ["_myrecode_heartbeat", "_myrecode_replicas"] {
        assert!(
            stdout.contains(&format!("dropped {t} (the replicas' bookkeeping)")),
            "{t}: {stdout}\n{stderr}"
        );
        assert!(!left.contains(&t.to_string()), "{t} left: {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_row_every_replica_ends_equal_to_the_primary_through_sigkills() {
    equal_everywhere(BinlogFormat::Row).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_mixed_every_replica_ends_equal_to_the_primary_through_sigkills() {
    equal_everywhere(BinlogFormat::Mixed).await;
}

/// The primary's binary log position, file and offset; `None` without a binary log (the
/// Galera node of its test).
async fn position(c: &mut sqlx::MySqlConnection) -> Option<(String, u64)> {
    use sqlx::Row;
    let row = sqlx::query("SHOW MASTER STATUS")
        .fetch_optional(c)
        .await
        .unwrap()?;
    let offset = row
        .try_get::<u64, _>(1)
        .unwrap_or_else(|_| row.get::<i64, _>(1) as u64);
    Some((row.get::<String, _>(0), offset))
}

/// The rehearsal, `run --execute` (exit code 2, nothing written) and `plan --check` (a
/// finding at the replicas setting, exit code 1, nothing in the binary log) refuse the job on
/// this topology, saying each of `wants`.
async fn refused_before_any_write(
    url: &str,
    jobp: &str,
    c: &mut sqlx::MySqlConnection,
    schema: &str,
    wants: &[String],
) {
    for args in [vec!["run", jobp], vec!["run", jobp, "--execute"]] {
        let out = common::myrecode(Some(url), &args);
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}\n{stderr}");
        assert!(
            stderr.contains("the job cannot run on this replication topology, nothing was written"),
            "{stderr}"
        );
        for want in wants {
            assert!(stderr.contains(want), "{args:?}: {want}\n{stderr}");
        }
        assert!(stderr.contains("  refused: 127.0.0.1:"), "{stderr}");
        assert_eq!(own_objects(c, schema).await, Vec::<String>::new());
    }
    // `plan --check` refuses too, without its trial tables reaching the binary log first.
    let before = position(c).await;
    let out = common::myrecode(Some(url), &["plan", "--check", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("defaults.replicas: 127.0.0.1:") && stdout.contains(&wants[0]),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        position(c).await,
        before,
        "plan --check wrote to the binary log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_format_is_refused_before_any_write_saying_why() {
    let _one = ONE_AT_A_TIME.lock().await;
    let set = topology(BinlogFormat::Statement, &[None]);
    let db = set.primary.fresh_database("rep_stmt").unwrap();
    let mut c = legacy_schema(&db.config).await;
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("app.yaml");
    std::fs::write(&jobf, job(&db.name, "")).unwrap();
    let jobp = jobf.to_str().unwrap();
    let url = db.config.url_with_secret();
    let p0 = set.primary.admin().port;
    refused_before_any_write(
        &url,
        jobp,
        &mut c,
        &db.name,
        &[
            format!(
                "127.0.0.1:{p0} writes its binary log in STATEMENT format, and it has replicas"
            ),
            "change-log triggers insert into an AUTO_INCREMENT table".to_string(),
            "myrecode requires ROW or MIXED".to_string(),
            format!("Fix: SET GLOBAL binlog_format = 'ROW' (or 'MIXED') on 127.0.0.1:{p0}"),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_replica_throttles_within_a_batch_then_stops_the_job_and_the_rerun_finishes() {
    let _one = ONE_AT_A_TIME.lock().await;
    let set = topology(BinlogFormat::Row, &[None]);
    let db = set.primary.fresh_database("rep_lag").unwrap();
    let mut c = legacy_schema(&db.config).await;
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("notes.yaml");
    let notes_only = format!(
        "version: 1\nschema: {}\ndefaults:\n  batch_size: 20\n  target_batch_time: 20ms\n  pause_between_batches: 20ms\n  \
         max_replica_lag: 300ms\n  max_replica_down: 4s\ntables:\n  - name: notes\n    strategy: in-place\n    columns:\n      \
         - name: body\n        source: cp1251>latin1\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
        db.name
    );
    std::fs::write(&jobf, notes_only).unwrap();
    let jobp = jobf.to_str().unwrap();
    let url = db.config.url_with_secret();
    let replica = format!("127.0.0.1:{}", set.replica(0).port);
    let mut r = set.replica(0).connect_one().await.unwrap();

    let mut run = spawn_run(&url, jobp, None);
    let since = Instant::now();
    while recoded(&mut c).await < 100 {
        assert!(since.elapsed() < Duration::from_secs(60), "no progress");
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    r.execute("STOP SLAVE SQL_THREAD").await.unwrap();
    let stopped_at = recoded(&mut c).await;
    // The job stops moving within the batch under way: each batch waits for a sample begun
    // after the batch before it (batches start at 20 rows, tuned toward 20 ms: under 100).
    let (mut last, mut still) = (stopped_at, Instant::now());
    while still.elapsed() < Duration::from_millis(800) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = recoded(&mut c).await;
        if now != last {
            (last, still) = (now, Instant::now());
        }
    }
    assert!(
        last - stopped_at <= 100,
        "the job went on for {} rows after the replica stopped",
        last - stopped_at
    );
    // Throttled, and said so by `status`: the pacer's reason, and the replica's state (its
    // samples are written every second).
    wait_status(&url, jobp, &mut run, "the replica lag throttle", |s| {
        s["waiting"]["reason"].as_str().is_some_and(|w| {
            w.starts_with(&format!(
                "throttled: replica {replica} replication stopped: IO thread Yes, SQL thread No"
            ))
        })
    })
    .await;
    let (r2, name) = (url.clone(), replica.clone());
    wait_status(&url, jobp, &mut run, "the replica's state", move |_| {
        replica_states(&r2, jobp)
            .iter()
            .any(|(n, s, lag)| *n == name && s == "stopped" && lag.is_none())
    })
    .await;
    assert_eq!(recoded(&mut c).await, last, "no batch while throttled");
    // Down longer than max_replica_down: the job stops, resumably, saying why.
    let out = tokio::task::spawn_blocking(move || run.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("replica {replica} has been down for "))
            && stderr.contains("longer than max_replica_down 4 s")
            && stderr.contains("run the job again: it resumes where it stopped"),
        "{stderr}"
    );
    let halted = recoded(&mut c).await;
    r.execute("START SLAVE SQL_THREAD").await.unwrap();
    let out = common::myrecode(Some(&url), &["run", jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(recoded(&mut c).await > halted, "the rerun went on");
    set.sync(Duration::from_secs(60)).unwrap();
    let mut rd = set
        .replica(0)
        .with_database(Some(&db.name))
        .connect_one()
        .await
        .unwrap();
    assert_eq!(
        differs(&mut c, &mut rd, "notes", "id, user_id, body").await,
        None
    );
    let bodies: Vec<(i32, String)> = sqlx::query_as("SELECT id, body FROM notes ORDER BY id")
        .fetch_all(&mut c)
        .await
        .unwrap();
    assert_eq!(bodies.len() as u64, NOTES);
    for (id, body) in bodies {
        assert_eq!(body, text(50_000 + id as u64), "note {id} recoded");
    }
    // The job done, `cleanup` drops the heartbeat and the replicas' samples; `rollback`'s
    // backup stays.
    let out = common::myrecode(Some(&url), &["cleanup", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let left = own_objects(&mut c, &db.name).await;
    for t in ["_myrecode_heartbeat", "_myrecode_replicas"] {
        assert!(
            stdout.contains(&format!("dropped {t} (the replicas' bookkeeping)")),
            "{t}: {stdout}\n{stderr}"
        );
        assert!(!left.contains(&t.to_string()), "{t} left: {left:?}");
    }
    assert!(left.contains(&"_myrecode_backup".to_string()), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_replica_throttles_within_a_batch_and_the_lag_at_every_batch_stays_within_the_limit_plus_a_batch(
) {
    let _one = ONE_AT_A_TIME.lock().await;
    let set = topology(BinlogFormat::Row, &[None]);
    let db = set.primary.fresh_database("rep_delay").unwrap();
    let mut c = legacy_schema(&db.config).await;
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("notes.yaml");
    let max_lag = Duration::from_millis(400);
    // Small batches (tuned toward 2 ms) and a pause: the job takes a few seconds, many
    // batches before the delay and after it.
    let notes_only = format!(
        "version: 1\nschema: {}\ndefaults:\n  batch_size: 20\n  target_batch_time: 2ms\n  pause_between_batches: 30ms\n  \
         max_replica_lag: {}ms\n  max_replica_down: 60s\ntables:\n  - name: notes\n    strategy: in-place\n    columns:\n      \
         - name: body\n        source: cp1251>latin1\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
        db.name,
        max_lag.as_millis()
    );
    std::fs::write(&jobf, notes_only).unwrap();
    let jobp = jobf.to_str().unwrap();
    let url = db.config.url_with_secret();
    let replica = format!("127.0.0.1:{}", set.replica(0).port);
    let mut r = set.replica(0).connect_one().await.unwrap();

    let t0 = Instant::now();
    let steer = Arc::new(Steer::default());
    let sampler = {
        let (p, rc, steer) = (
            db.config.clone(),
            set.replica(0).with_database(Some(&db.name)),
            steer.clone(),
        );
        tokio::spawn(async move { sample_job(p, rc, t0, steer).await })
    };
    let mut run = spawn_run(&url, jobp, None);
    while rows_read(&mut c).await < 400 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no progress");
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let when = the_replica_is_delayed_past_the_throttle_then_lifted(
        &mut r, &replica, &url, jobp, &mut run, t0,
    )
    .await;
    let out = tokio::task::spawn_blocking(move || run.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    succeeded(out, &mut c).await;
    steer.stop.store(true, Ordering::SeqCst);
    let samples = sampler.await.unwrap();
    batches_stop_within_one_and_the_lag_at_each_commit_stays_within_the_limit_plus_a_batch(
        &samples, max_lag, &when,
    );
    set.sync(Duration::from_secs(60)).unwrap();
    let mut rd = set
        .replica(0)
        .with_database(Some(&db.name))
        .connect_one()
        .await
        .unwrap();
    assert_eq!(
        differs(&mut c, &mut rd, "notes", "id, user_id, body").await,
        None
    );
}

/// When (since the test began) the test delayed the replica and lifted the delay: each
/// between its first statement and its last, as the job saw a `STOP SLAVE` meanwhile.
struct Delay {
    delaying_at: Duration,
    delayed_at: Duration,
    lifted_at: Duration,
    restarted_at: Duration,
}

/// The replica delayed on purpose (`MASTER_DELAY = 3`: every event applied 3 s after it
/// was logged), so it goes on replicating, only its heartbeat falls behind: `status` shows
/// the lag throttle and the replica's lag; held a while past the first throttle, then the
/// delay is lifted.
async fn the_replica_is_delayed_past_the_throttle_then_lifted(
    r: &mut MySqlConnection,
    replica: &str,
    url: &str,
    jobp: &str,
    run: &mut std::process::Child,
    t0: Instant,
) -> Delay {
    // Delayed on purpose: every event applied 3 s after it was logged. The replica goes on
    // replicating (no stopped thread for the job to see), only its heartbeat falls behind.
    let delaying_at = t0.elapsed();
    for s in [
        "STOP SLAVE",
        "CHANGE MASTER TO MASTER_DELAY = 3",
        "START SLAVE",
    ] {
        r.execute(s).await.unwrap();
    }
    let delayed_at = t0.elapsed();
    // `status` shows the lag throttle and the replica's lag (its samples are written every
    // second).
    wait_status(url, jobp, run, "the replica lag throttle", |s| {
        s["waiting"]["reason"].as_str().is_some_and(|w| {
            w.starts_with(&format!("throttled: replica {replica} lags "))
                && w.ends_with(", over max_replica_lag 400 ms")
        })
    })
    .await;
    let (r2, name) = (url.to_string(), replica.to_string());
    wait_status(url, jobp, run, "the replica's lag", move |_| {
        replica_states(&r2, jobp)
            .iter()
            .any(|(n, s, lag)| *n == name && s == "replicating" && lag.is_some_and(|l| l > 400))
    })
    .await;
    // Held a while past the first throttle, then the delay is lifted and the job finishes.
    while t0.elapsed() < delayed_at + Duration::from_millis(3500) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lifted_at = t0.elapsed();
    for s in [
        "STOP SLAVE",
        "CHANGE MASTER TO MASTER_DELAY = 0",
        "START SLAVE",
    ] {
        r.execute(s).await.unwrap();
    }
    let restarted_at = t0.elapsed();
    Delay {
        delaying_at,
        delayed_at,
        lifted_at,
        restarted_at,
    }
}

/// From the readings: after the lag crossed `max_lag`, only the batch then in flight
/// commits until the delay is lifted, and the lag whenever a batch committed stays within
/// the limit plus one batch.
fn batches_stop_within_one_and_the_lag_at_each_commit_stays_within_the_limit_plus_a_batch(
    samples: &[Sample],
    max_lag: Duration,
    when: &Delay,
) {
    let Delay {
        delaying_at,
        delayed_at,
        lifted_at,
        restarted_at,
    } = *when;
    // Each commit of a batch as the readings saw it: the reading that first shows it.
    let commits: Vec<usize> = (1..samples.len())
        .filter(|&i| samples[i].rows != samples[i - 1].rows)
        .collect();
    let over = |s: &Sample| s.lag.is_some_and(|l| l > max_lag);
    // The readings' resolution: the longest span from one reading's start to the next's end.
    let step = samples
        .windows(2)
        .map(|w| w[1].end - w[0].at)
        .max()
        .unwrap();
    // One batch: the longest span between two commits seen while the replica was within the
    // limit (a batch begins after the commit before it, so it took at most that plus a step);
    // not across the test's own STOP SLAVE, which throttles the job for a wait step.
    let stopping = |a: Duration, b: Duration| {
        [(delaying_at, delayed_at), (lifted_at, restarted_at)]
            .iter()
            .any(|&(x, y)| a <= y && x <= b)
    };
    let free: Vec<Duration> = commits
        .windows(2)
        .filter(|w| !samples[w[0]..=w[1]].iter().any(over))
        .filter(|w| !stopping(samples[w[0]].at, samples[w[1]].end))
        .map(|w| samples[w[1]].at - samples[w[0]].at)
        .collect();
    assert!(
        free.len() >= 10,
        "too few batches to measure: {}",
        free.len()
    );
    let batch = *free.iter().max().unwrap() + step;
    // The job's own sample is taken just before its batch (a beat's worth of slack for the
    // pacer's control-row queries between them).
    let slack = Duration::from_millis(100);
    let first_over = samples
        .iter()
        .find(|s| s.at > delayed_at && over(s))
        .unwrap_or_else(|| panic!("the delayed replica never lagged over the limit"));
    // Throttled within one batch: after the lag crossed the limit, only the batch then in
    // flight commits until the delay is lifted.
    let late: Vec<_> = commits
        .iter()
        .map(|&i| samples[i])
        .filter(|s| s.at > first_over.end + batch + step && s.end < lifted_at)
        .collect();
    assert!(
        late.is_empty(),
        "batches committed while the replica lagged over {} ms (first over at {:?}, one batch {} ms): {late:?}",
        max_lag.as_millis(),
        first_over.at,
        batch.as_millis()
    );
    // The lag whenever a batch committed stays within the limit plus one batch: a batch
    // begins only on a sample within the limit, and the lag grows no faster than time.
    let at_commits = commits
        .iter()
        .filter_map(|&i| samples[i].lag)
        .max()
        .unwrap();
    let bound = max_lag + batch + step + slack;
    assert!(
        at_commits <= bound,
        "peak heartbeat lag at a commit {} ms, over max_replica_lag {} ms + one batch {} ms + a reading {} ms + {} ms",
        at_commits.as_millis(),
        max_lag.as_millis(),
        batch.as_millis(),
        step.as_millis(),
        slack.as_millis()
    );
    let peak = samples.iter().filter_map(|s| s.lag).max().unwrap();
    eprintln!(
        "delayed replica: peak heartbeat lag at a commit {} ms (bound {} ms: max_replica_lag {} ms + one batch {} ms + \
         a reading {} ms + {} ms); peak while delayed {} ms; {} batches seen, {} readings",
        at_commits.as_millis(),
        bound.as_millis(),
        max_lag.as_millis(),
        batch.as_millis(),
        step.as_millis(),
        slack.as_millis(),
        peak.as_millis(),
        commits.len(),
        samples.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cut_over_waits_for_a_replica_that_stopped_and_the_jobs_own_replica_setting_overrides_the_found_one(
) {
    let _one = ONE_AT_A_TIME.lock().await;
    let set = topology(BinlogFormat::Row, &[None]);
    let db = set.primary.fresh_database("rep_cut").unwrap();
    let mut c = db.config.connect_one().await.unwrap();
    c.execute("CREATE TABLE memo (id INT NOT NULL PRIMARY KEY, body VARCHAR(200) CHARACTER SET latin1) ENGINE=InnoDB")
        .await
        .unwrap();
    for i in 1..=200u64 {
        sqlx::query("INSERT INTO memo (id, body) VALUES (?, ?)")
            .bind(i as i64)
            .bind(myrecode::codec::encode(Encoding::Windows1251, &text(i)).unwrap())
            .execute(&mut c)
            .await
            .unwrap();
    }
    let replica = format!("127.0.0.1:{}", set.replica(0).port);
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("memo.yaml");
    std::fs::write(
        &jobf,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  cutover: manual\n  max_replica_lag: 300ms\n  max_replica_down: 5m\n  \
             replicas: ['{replica}']\ntables:\n  - name: memo\n    strategy: copy\n    columns:\n      - name: body\n        \
             source: cp1251\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
            db.name
        ),
    )
    .unwrap();
    let jobp = jobf.to_str().unwrap();
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["run", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let p0 = set.primary.admin().port;
    let want = format!(
        "  replica {replica} (SHOW SLAVE HOSTS of 127.0.0.1:{p0}, named in the job): server 2,"
    );
    assert!(stdout.contains(&want), "{want}\n{stdout}");
    assert_eq!(stdout.matches("  replica ").count(), 1, "once: {stdout}");

    let mut run = spawn_run(&url, jobp, None);
    wait_status(
        &url,
        jobp,
        &mut run,
        "the copy to wait for its cut-over",
        |s| s["waits_for_cutover"] == true,
    )
    .await;
    let mut r = set.replica(0).connect_one().await.unwrap();
    r.execute("STOP SLAVE SQL_THREAD").await.unwrap();
    let out = common::myrecode(Some(&url), &["cutover", jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    wait_status(
        &url,
        jobp,
        &mut run,
        "the cut-over to wait for the replica",
        |s| s["waiting"]["kind"] == "replica_lag",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        memo_charset(&mut c, &db.name).await,
        "latin1",
        "not swapped while the replica is stopped"
    );
    assert!(run.try_wait().unwrap().is_none(), "the run waits");
    r.execute("START SLAVE SQL_THREAD").await.unwrap();
    let out = tokio::task::spawn_blocking(move || run.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("cut-over: memo"), "{stdout}");
    assert_eq!(memo_charset(&mut c, &db.name).await, "utf8mb4");
    set.sync(Duration::from_secs(60)).unwrap();
    let mut rd = set
        .replica(0)
        .with_database(Some(&db.name))
        .connect_one()
        .await
        .unwrap();
    assert_eq!(
        memo_charset(&mut rd, &db.name).await,
        "utf8mb4",
        "the replica swapped too"
    );
    assert_eq!(differs(&mut c, &mut rd, "memo", "id, body").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_galera_node_is_refused_before_any_write_saying_why() {
    let _one = ONE_AT_A_TIME.lock().await;
    let provider = "/usr/lib/galera/libgalera_smm.so";
    assert!(
        std::path::Path::new(provider).exists(),
        "no Galera provider at {provider}. Fix: apt-get install -y galera-4"
    );
    // A one-node cluster, bootstrapped: wsrep on, as on every node of a cluster.
    let gcomm = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let node = myrecode::db::throwaway::ThrowawayServer::start_local_with(&[
        "--wsrep-on=ON".into(),
        format!("--wsrep-provider={provider}"),
        "--wsrep-cluster-address=gcomm://".into(),
        "--wsrep-node-address=127.0.0.1".into(),
        format!("--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:{gcomm}"),
        "--binlog-format=ROW".into(),
        "--innodb-autoinc-lock-mode=2".into(),
    ])
    .unwrap_or_else(|e| panic!("cannot start a Galera node: {e:#}"));
    let db = node.fresh_database("rep_galera").unwrap();
    let mut c = db.config.connect_one().await.unwrap();
    c.execute(
        "CREATE TABLE memo (id INT NOT NULL PRIMARY KEY, body VARCHAR(200) CHARACTER SET latin1) ENGINE=InnoDB",
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jobf = dir.path().join("memo.yaml");
    std::fs::write(
        &jobf,
        format!(
            "version: 1\nschema: {}\ntables:\n  - name: memo\n    strategy: copy\n    columns:\n      - name: body\n        \
             source: cp1251\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n",
            db.name
        ),
    )
    .unwrap();
    let jobp = jobf.to_str().unwrap();
    let url = db.config.url_with_secret();
    refused_before_any_write(
        &url,
        jobp,
        &mut c,
        &db.name,
        &[
            "is a Galera node (wsrep_on=ON: MariaDB Cluster or Percona XtraDB Cluster)".to_string(),
            "explicit LOCK TABLES".to_string(),
            "Fix: not supported yet".to_string(),
        ],
    )
    .await;
}

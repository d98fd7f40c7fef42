//! `verify` on a topology whose jobs are done: both replicas equal, also while the
//! application writes (with `--pause-replicas`, a replica paused at the primary's position
//! for the ranges it keeps changing; without, none paused and such a range said unsettled,
//! the flag named), then rows changed behind replication's back named by key and key range,
//! each on its own replica only.

use super::kit::NOTES;
use crate::common;
use crate::common::texts;
use myrecode::db::connect::ConnectionConfig;
use myrecode::engine::replicas::checksum::RANGE_ROWS;
use myrecode::testkit::replicaset::ThrowawayReplicaSet;
use sqlx::{Executor, MySqlConnection};
use std::process::Output;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The line `verify` printed for the replica on `port` (the run's output in the panic without one).
fn replica_line<'a>(stdout: &'a str, stderr: &str, port: u16) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("replica 127.0.0.1:{port}: ")))
        .unwrap_or_else(|| panic!("no line for {port}: {stdout}\n{stderr}"))
}

/// `verify` of the job `jobp` (its schema on `db`, the primary reached over `c` and `url`)
/// on `set`, whose relay and chained replica hold what the primary holds; `f` names the
/// binary log format in messages. Leaves a row changed on the relay and one deleted on the
/// chained replica.
pub async fn verify_names_each_replicas_rows(
    set: &ThrowawayReplicaSet,
    db: &ConnectionConfig,
    c: &mut MySqlConnection,
    url: &str,
    jobp: &str,
    f: &str,
) {
    let ports = [set.replica(0).port, set.replica(1).port];
    let schema = db.database.clone().unwrap_or_default();
    each_replica_is_said_equal_the_chained_one_too(url, jobp, f, ports);
    let (plain, outs, writes) = verify_runs_while_the_application_writes(set, db, url, jobp).await;
    only_with_pause_replicas_is_a_replica_paused_and_both_read_equal(
        &plain, &outs, writes, f, ports,
    );
    rows_changed_behind_replication_are_named_on_their_own_replica_only(
        set, c, &schema, url, jobp, f, ports,
    )
    .await;
}

/// `verify` says it per replica, the chained one too (each server reads its own rows).
fn each_replica_is_said_equal_the_chained_one_too(url: &str, jobp: &str, f: &str, ports: [u16; 2]) {
    let out = common::myrecode(Some(url), &["verify", jobp]);
    let (stdout, stderr) = texts(&out);
    assert!(!stderr.contains("paused"), "{stderr}");
    eprintln!(
        "{f}: verify says\n{}",
        stdout
            .lines()
            .filter(|l| l.starts_with("replica "))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for p in ports {
        let want =
            format!("replica 127.0.0.1:{p}: every job table equal to the primary's (5 tables in ");
        assert!(stdout.contains(&want), "{want}\n{stdout}\n{stderr}");
    }
}

/// While the application writes to `notes` (replicated): one `verify` without
/// `--pause-replicas`, then up to three with it until one paused a replica; then every
/// write applied everywhere. Returns the plain run, the paused ones and the writes.
async fn verify_runs_while_the_application_writes(
    set: &ThrowawayReplicaSet,
    db: &ConnectionConfig,
    url: &str,
    jobp: &str,
) -> (Output, Vec<Output>, u64) {
    let busy = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hammer = {
        let (cfg, busy) = (db.clone(), busy.clone());
        tokio::spawn(async move {
            let mut w = cfg.connect_one().await.unwrap();
            let mut n = 0u64;
            while !busy.load(Ordering::SeqCst) {
                sqlx::query("UPDATE notes SET hits = hits + 1 WHERE id = ?")
                    .bind((n * 37 % NOTES + 1) as i64)
                    .execute(&mut w)
                    .await
                    .unwrap();
                n += 1;
            }
            n
        })
    };
    let u = url.to_string();
    let jp = jobp.to_string();
    let (plain, outs) = tokio::task::spawn_blocking(move || {
        let plain = common::myrecode(Some(&u), &["verify", &jp]);
        // A replica that happens to catch up between readings is read equal without a pause:
        // the paused reading is looked for in up to three runs under the same writes (one had
        // read every range equal on a loaded machine), and every run must find both equal.
        let mut outs = Vec::new();
        for _ in 0..3 {
            let out = common::myrecode(Some(&u), &["verify", &jp, "--pause-replicas"]);
            let paused = texts(&out).1.contains(" paused ");
            outs.push(out);
            if paused {
                break;
            }
        }
        (plain, outs)
    })
    .await
    .unwrap();
    busy.store(true, Ordering::SeqCst);
    let writes = hammer.await.unwrap();
    // Applied everywhere before rows are changed behind replication's back (under ROW, an
    // update of a row a replica no longer has would stop it).
    set.sync(Duration::from_secs(60)).unwrap();
    (plain, outs, writes)
}

/// Without `--pause-replicas`, `verify` pauses no replica: a range that kept differing is
/// said unsettled, naming the flag. With it, `verify` finds both replicas equal: ranges read
/// at two positions are read again, at last with the replica paused at the primary's
/// position.
fn only_with_pause_replicas_is_a_replica_paused_and_both_read_equal(
    plain: &Output,
    outs: &[Output],
    writes: u64,
    f: &str,
    ports: [u16; 2],
) {
    let (stdout, stderr) = texts(plain);
    assert!(
        !stderr.contains("paused"),
        "no replica is paused without --pause-replicas: {stderr}"
    );
    let mut unsettled = 0;
    for p in ports {
        let line = replica_line(&stdout, &stderr, p);
        eprintln!("{f}, under writes, without --pause-replicas: {line}");
        if !line.contains("every job table equal to the primary's") {
            assert!(
                line.contains("differed at each of 3 readings")
                    && line.contains("rerun `myrecode verify JOB --pause-replicas`"),
                "{line}\n{stderr}"
            );
            unsettled += 1;
        }
    }
    if unsettled > 0 {
        // As for a replica not proven equal.
        assert_eq!(plain.status.code(), Some(1), "{stdout}\n{stderr}");
    }
    for out in outs {
        let (stdout, stderr) = texts(out);
        for p in ports {
            let line = replica_line(&stdout, &stderr, p);
            eprintln!("{f}, {writes} writes under verify: {line}");
            assert!(
                line.contains("every job table equal to the primary's"),
                "{line}\n{stderr}"
            );
        }
    }
    // Thousands of writes a second to 3,000 rows: some range of `notes` differs at every
    // lock-free reading, and a replica is paused at the primary's position to read it.
    let stderr = texts(outs.last().unwrap()).1;
    let paused: Vec<&str> = stderr.lines().filter(|l| l.contains(" paused ")).collect();
    eprintln!("{f}: {}", paused.join("\n"));
    assert!(
        paused
            .iter()
            .any(|l| l.contains("to be read at the primary's position 0-1-")
                && l.contains("key range(s) of notes the application writes to")),
        "{writes} writes, no replica paused in {} runs: {stderr}",
        outs.len()
    );
}

/// Rows changed behind the job's back, outside the binary log: one on the relay (not
/// passed on to the chained replica), one deleted on the chained replica. Each is named by
/// its key and its key range, on its own replica only.
async fn rows_changed_behind_replication_are_named_on_their_own_replica_only(
    set: &ThrowawayReplicaSet,
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    jobp: &str,
    f: &str,
    [p1, p2]: [u16; 2],
) {
    let mut at = Vec::new();
    for n in [RANGE_ROWS - 1, 2 * RANGE_ROWS - 1, RANGE_ROWS + 500] {
        let id: i32 = sqlx::query_scalar("SELECT id FROM notes ORDER BY id LIMIT ?, 1")
            .bind(n as i64)
            .fetch_one(&mut *c)
            .await
            .unwrap();
        at.push(id);
    }
    let (first, second, gone) = (at[0], at[1], at[2]);
    for (i, s) in [
        (
            0,
            "UPDATE notes SET hits = hits + 100 WHERE id = 7".to_string(),
        ),
        (1, format!("DELETE FROM notes WHERE id = {gone}")),
    ] {
        let mut r = set
            .replica(i)
            .with_database(Some(schema))
            .connect_one()
            .await
            .unwrap();
        r.execute("SET SESSION sql_log_bin = 0").await.unwrap();
        r.execute(s.as_str()).await.unwrap();
    }
    let out = common::myrecode(Some(url), &["verify", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    eprintln!(
        "{f}: verify says\n{}",
        stdout
            .lines()
            .filter(|l| l.starts_with("replica "))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for want in [
        format!("replica 127.0.0.1:{p1}: differs from the primary: notes, key range id <= [{first}]: key [7] differs\n"),
        format!("replica 127.0.0.1:{p2}: differs from the primary: notes, key range [{first}] < id <= [{second}]: key [{gone}] missing on the replica\n"),
    ] {
        assert!(stdout.contains(&want), "{want}\n{stdout}\n{stderr}");
    }
}

//! `verify` on replicas, the I/O around [`super::checksum`]: each job table read on the
//! primary in a consistent snapshot whose replication position is known, each replica
//! waited for up to that position and read in a snapshot of its own, range by range; a range
//! that differs is read row by row when both snapshots stand at the same position, and read
//! again at a later position when they do not (the application writes meanwhile), at last,
//! with `--pause-replicas` only, with the replica paused at the primary's position for the
//! time of two snapshots (started again whatever fails meanwhile).
//!
//! Nothing is written anywhere: every server computes its own checksums, so a replica below
//! a relay is compared whatever the relay's binary log format.

use super::checksum::{
    describe_difference, range_checksum_sql, range_end_sql, range_label, range_rows_sql,
    row_differences, same_position, Key, Range,
};
use crate::db::connect::ConnectionConfig;
use crate::db::errno;
use crate::db::keyset::KeyColumn;
use crate::engine::events::{Event, Events};
use crate::inventory::model::Table;
use crate::job::model::Job;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::sync::atomic::{AtomicBool, Ordering};

/// How long `verify` waits for a replica to reach the primary's position.
const CATCH_UP: u64 = 60;

/// How many times a range is read before it is called different while the two snapshots
/// never stood at the same position.
const READINGS: usize = 3;

/// The fix for a range that differed at every reading, `verify` run without
/// `--pause-replicas`.
const PAUSE_FIX: &str = ". Fix: rerun `myrecode verify JOB --pause-replicas` to read such ranges \
    with the replica paused at the primary's position for the time of two snapshots, or when \
    the application writes less";

/// Whether a replica stands paused by [`pinned_snapshot`] now (from `STOP SLAVE` until it
/// was started again): `verify --pause-replicas` defers Ctrl-C and SIGTERM meanwhile, so
/// the replica is not left stopped.
pub static PAUSING: AtomicBool = AtomicBool::new(false);

/// What `verify` found on one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compared {
    /// Every job table equal to the primary's: how many tables, in how many key ranges.
    Equal {
        /// Tables compared.
        tables: usize,
        /// Key ranges checksummed.
        ranges: usize,
    },
    /// These ranges differ, each with its rows.
    Differ(Vec<String>),
    /// Not compared, and why.
    NotCompared(String),
}

impl Compared {
    /// The line `verify` prints for `replica`.
    pub fn describe(&self, replica: &str) -> String {
        match self {
            Compared::Equal { tables, ranges } => format!(
                "replica {replica}: every job table equal to the primary's ({tables} tables in {ranges} key ranges, \
                 each read at one replication position)"
            ),
            Compared::Differ(d) => {
                format!("replica {replica}: differs from the primary: {}", d.join("; "))
            }
            Compared::NotCompared(why) => format!("replica {replica}: not compared: {why}"),
        }
    }

    /// Whether the replica equals the primary.
    pub fn is_equal(&self) -> bool {
        matches!(self, Compared::Equal { .. })
    }
}

/// The server's flavour as far as positions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// MariaDB's domain-server-sequence GTIDs.
    MariaDb,
    /// MySQL's GTID sets.
    MySql,
}

impl Flavor {
    fn wait_sql(self) -> &'static str {
        match self {
            Flavor::MariaDb => "SELECT MASTER_GTID_WAIT(?, ?)",
            Flavor::MySql => "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)",
        }
    }
}

async fn text(conn: &mut MySqlConnection, sql: &str) -> Result<String, sqlx::Error> {
    sqlx::query_scalar::<_, String>(sql)
        .fetch_one(&mut *conn)
        .await
}

/// Starts a consistent snapshot on the primary and returns the GTID position it stands at.
/// MariaDB names the binary log position of the snapshot itself (`binlog_snapshot_file`,
/// `binlog_snapshot_position`), turned into GTIDs by `BINLOG_GTID_POS`; on MySQL the
/// executed set read on both sides of the snapshot's start is taken when it did not move
/// (else the ranges that differ are read again).
async fn primary_snapshot(conn: &mut MySqlConnection, flavor: Flavor) -> Result<String> {
    let before = match flavor {
        Flavor::MySql => Some(text(conn, "SELECT CAST(@@global.gtid_executed AS CHAR)").await?),
        Flavor::MariaDb => None,
    };
    conn.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        .await
        .context("starting a consistent snapshot on the primary")?;
    match flavor {
        Flavor::MariaDb => {
            let rows = sqlx::query(
                "SHOW STATUS WHERE Variable_name IN ('binlog_snapshot_file', 'binlog_snapshot_position')",
            )
            .fetch_all(&mut *conn)
            .await?;
            let get = |name: &str| {
                rows.iter()
                    .find(|r| {
                        r.try_get::<String, _>(0)
                            .is_ok_and(|n| n.eq_ignore_ascii_case(name))
                    })
                    .and_then(|r| r.try_get::<String, _>(1).ok())
            };
            let (file, pos) = get("binlog_snapshot_file")
                .zip(get("binlog_snapshot_position"))
                .context("the primary shows no binlog_snapshot_file: is its binary log on?")?;
            let gtid: Option<String> = sqlx::query_scalar("SELECT BINLOG_GTID_POS(?, ?)")
                .bind(&file)
                .bind(pos.parse::<u64>().unwrap_or(0))
                .fetch_one(&mut *conn)
                .await
                .context("reading the snapshot's GTID position (BINLOG_GTID_POS)")?;
            gtid.with_context(|| format!("no GTID position for {file}:{pos}"))
        }
        Flavor::MySql => {
            let after = text(conn, "SELECT CAST(@@global.gtid_executed AS CHAR)").await?;
            // Moved under the snapshot's start: no position names it, and a range that
            // differs is read again.
            Ok(if before.as_deref() == Some(after.as_str()) {
                after
            } else {
                format!("{after} (moving)")
            })
        }
    }
}

/// Waits on a replica for `pos`, starts a consistent snapshot and returns the position it
/// stands at: on MariaDB, `mysql.gtid_slave_pos` read inside the snapshot (the SQL thread
/// writes it in the same transaction as what it applies, when it is InnoDB); on MySQL the
/// executed set around the snapshot's start, as on the primary.
async fn replica_snapshot(c: &mut MySqlConnection, flavor: Flavor, pos: &str) -> Result<String> {
    let waited: Option<i64> = sqlx::query(flavor.wait_sql())
        .bind(pos)
        .bind(CATCH_UP as i64)
        .fetch_one(&mut *c)
        .await
        .context("waiting for the replica to reach the primary's position")?
        .get(0);
    if waited != Some(0) {
        anyhow::bail!("it did not reach the primary's position {pos} within {CATCH_UP} s");
    }
    match flavor {
        Flavor::MariaDb => {
            c.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                .await?;
            let at: Vec<(u64, u64, u64)> = sqlx::query_as(
                "SELECT p.domain_id, p.server_id, p.seq_no FROM mysql.gtid_slave_pos p \
                 JOIN (SELECT domain_id, MAX(sub_id) AS sub_id FROM mysql.gtid_slave_pos GROUP BY domain_id) m \
                 USING (domain_id, sub_id) ORDER BY p.domain_id",
            )
            .fetch_all(&mut *c)
            .await
            .context("reading the replica's position (mysql.gtid_slave_pos)")?;
            Ok(at
                .iter()
                .map(|(d, s, q)| format!("{d}-{s}-{q}"))
                .collect::<Vec<_>>()
                .join(","))
        }
        Flavor::MySql => {
            let before = text(c, "SELECT CAST(@@global.gtid_executed AS CHAR)").await?;
            c.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                .await?;
            let after = text(c, "SELECT CAST(@@global.gtid_executed AS CHAR)").await?;
            Ok(if before == after {
                after
            } else {
                format!("{after} (moving)")
            })
        }
    }
}

/// The last resort for ranges that kept differing while the application wrote: the
/// replica stopped, a new snapshot of the primary at `P`, the replica let run up to exactly
/// `P` (`START SLAVE UNTIL master_gtid_pos`, which MariaDB takes with both threads
/// stopped), its snapshot taken there, and the replica started again at once (the snapshot
/// stays at `P`): it pauses for the time of two snapshots, never for the reading. Only with
/// `verify --pause-replicas`, MariaDB only, and only a replica whose threads run (one
/// stopped by the DBA stays as it is); [`PAUSING`] meanwhile. Returns `P`.
async fn pinned_snapshot(
    primary: &mut MySqlConnection,
    c: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    events: &dyn Events,
) -> Result<String> {
    // Replication is stopped and started on a connection of its own: `c` holds the
    // snapshot's transaction, in which STOP SLAVE is refused.
    let mut ctl = cfg.connect_one().await?;
    let ctl = &mut ctl;
    match super::discover::status(ctl).await? {
        Some(super::lag::Reading::Replicating(..)) => {}
        other => anyhow::bail!(
            "its replication is not running ({other:?}), so it was not paused at a position"
        ),
    }
    PAUSING.store(true, Ordering::SeqCst);
    let paused = pause_and_read(primary, c, cfg, ctl, events).await;
    PAUSING.store(false, Ordering::SeqCst);
    paused
}

/// [`pinned_snapshot`] from `STOP SLAVE` on: the replica is started again whatever fails.
async fn pause_and_read(
    primary: &mut MySqlConnection,
    c: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    ctl: &mut MySqlConnection,
    events: &dyn Events,
) -> Result<String> {
    if let Err(e) = ctl.execute("STOP SLAVE").await {
        let e = anyhow::Error::new(e)
            .context("pausing the replica (STOP SLAVE; needs REPLICATION SLAVE ADMIN or SUPER)");
        // Refused, it still replicates; failed midway (a lost connection), it may not.
        let running = match cfg.connect_one().await {
            Ok(mut fresh) => matches!(
                super::discover::status(&mut fresh).await,
                Ok(Some(super::lag::Reading::Replicating(..)))
            ),
            Err(_) => false,
        };
        if !running {
            start_again(ctl, cfg, events).await?;
        }
        return Err(e);
    }
    let pinned: Result<String> = async {
        primary.execute("COMMIT").await?;
        let pos = primary_snapshot(primary, Flavor::MariaDb).await?;
        ctl.execute(
            format!(
                "START SLAVE UNTIL master_gtid_pos = {}",
                crate::db::quote::literal(&pos)
            )
            .as_str(),
        )
        .await
        .context("letting the replica run up to the primary's position (START SLAVE UNTIL)")?;
        let at = replica_snapshot(c, Flavor::MariaDb, &pos).await?;
        anyhow::ensure!(
            same_position(&pos, &at),
            "it stopped at {at}, not at the primary's position {pos}"
        );
        Ok(pos)
    }
    .await;
    // Whatever happened, the replica replicates again: it was running when we came. A
    // failure to restart it comes first, whatever else failed.
    start_again(ctl, cfg, events).await?;
    pinned.context("paused (STOP SLAVE) and started again (START SLAVE) at once")
}

/// Starts a replica [`pinned_snapshot`] stopped: over `ctl`, else over a new connection
/// (`ctl` may be the one lost). When neither can, says so at once (an event) and in the
/// error, naming the replica and what to run on it.
async fn start_again(
    ctl: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    events: &dyn Events,
) -> Result<()> {
    let first = match restart(ctl).await {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let again = match cfg.connect_one().await {
        Ok(mut fresh) => restart(&mut fresh).await,
        Err(e) => Err(e),
    };
    let Err(e) = again else { return Ok(()) };
    let replica = format!("{}:{}", cfg.host, cfg.port);
    let msg = format!(
        "replica {replica} was paused (STOP SLAVE) by myrecode and could not be started again \
         ({first:#}; again over a new connection: {e:#}): it is NOT replicating. \
         Fix: run START SLAVE on {replica}, and check SHOW SLAVE STATUS"
    );
    events.event(&Event::ReplicaNotRestarted { message: &msg });
    Err(anyhow::anyhow!(msg))
}

/// Starts a replica [`pinned_snapshot`] paused, and waits until both its threads run. A
/// plain `START SLAVE` is not enough: the SQL thread may still be on its way to stop at
/// the `UNTIL` position when it comes ("already running", and then it stops), so the
/// replica is stopped first.
async fn restart(c: &mut MySqlConnection) -> Result<()> {
    c.execute("STOP SLAVE")
        .await
        .context("stopping the paused replica to start it again")?;
    c.execute("START SLAVE")
        .await
        .context("starting the replica again (START SLAVE)")?;
    let since = std::time::Instant::now();
    loop {
        match super::discover::status(c).await {
            Ok(Some(super::lag::Reading::Replicating(..))) => return Ok(()),
            other if since.elapsed() > std::time::Duration::from_secs(10) => {
                anyhow::bail!("the replica did not start replicating again within 10 s ({other:?})")
            }
            _ => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
}

/// One job table as `verify` reads it.
struct Subject {
    name: String,
    key: Vec<KeyColumn>,
    columns: Vec<String>,
}

/// The key ranges of `s` on the primary (inside its snapshot): every [`super::checksum::RANGE_ROWS`]
/// rows along the key; one range of the whole table without a key.
async fn ranges(conn: &mut MySqlConnection, schema: &str, s: &Subject) -> Result<Vec<Range>> {
    if s.key.is_empty() {
        return Ok(vec![Range {
            lower: None,
            upper: None,
        }]);
    }
    let mut out = Vec::new();
    let mut lower: Option<Key> = None;
    loop {
        let (sql, binds) = range_end_sql(schema, &s.name, &s.key, lower.is_some());
        let mut q = sqlx::query(&sql);
        if let Some(l) = &lower {
            q = crate::engine::read::bind_key(q, l, &binds);
        }
        let row = q
            .fetch_optional(&mut *conn)
            .await
            .with_context(|| format!("cutting {} into key ranges", s.name))?;
        let upper = row
            .map(|r| crate::engine::read::read_key(&r, s.key.len()))
            .transpose()?;
        let last = upper.is_none();
        out.push(Range {
            lower: lower.take(),
            upper: upper.clone(),
        });
        if last {
            return Ok(out);
        }
        lower = upper;
    }
}

/// A range's row count and checksum on one server.
async fn checksum(
    conn: &mut MySqlConnection,
    schema: &str,
    s: &Subject,
    r: &Range,
) -> Result<(i64, u64)> {
    let (sql, binds) = range_checksum_sql(schema, &s.name, &s.key, &s.columns, r);
    crate::engine::read::bind_all(sqlx::query(&sql), &binds)
        .fetch_one(&mut *conn)
        .await
        .and_then(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .with_context(|| format!("checksumming a key range of {}", s.name))
}

/// A range's rows on one server: key and digest.
async fn rows(
    conn: &mut MySqlConnection,
    schema: &str,
    s: &Subject,
    r: &Range,
) -> Result<Vec<(Key, u64)>> {
    let (sql, binds) = range_rows_sql(schema, &s.name, &s.key, &s.columns, r);
    let n = s.key.len();
    crate::engine::read::bind_all(sqlx::query(&sql), &binds)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading a key range of {}", s.name))?
        .iter()
        .map(|row| Ok((crate::engine::read::read_key(row, n)?, row.try_get(n)?)))
        .collect()
}

/// The line saying how range `r` of `s` differs between the primary (`conn`) and the replica
/// (`c`), each read in the snapshot it holds: the rows named by key (none for a keyless table).
async fn difference(
    conn: &mut MySqlConnection,
    c: &mut MySqlConnection,
    schema: &str,
    s: &Subject,
    r: &Range,
) -> Result<String> {
    let theirs = rows(c, schema, s, r).await?;
    let mine = rows(conn, schema, s, r).await?;
    let diff = if s.key.is_empty() {
        Vec::new()
    } else {
        row_differences(&mine, &theirs)
    };
    Ok(describe_difference(&s.name, &s.key, r, &diff))
}

/// Reads the key ranges `ranges` of `s` with the replica `c` paused at the primary's
/// position ([`pinned_snapshot`]); the lines of those that differ, rows named.
async fn pinned_reading(
    conn: &mut MySqlConnection,
    c: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    schema: &str,
    s: &Subject,
    ranges: &[&Range],
    events: &dyn Events,
) -> Result<Vec<String>> {
    let paused = std::time::Instant::now();
    let pos = pinned_snapshot(conn, c, cfg, events).await?;
    // The operator should know their replica was paused, and for how long.
    events.event(&Event::ReplicaPaused {
        replica: &format!("{}:{}", cfg.host, cfg.port),
        paused: paused.elapsed(),
        position: &pos,
        ranges: ranges.len(),
        table: &s.name,
    });
    let mut out = Vec::new();
    for r in ranges {
        if checksum(c, schema, s, r).await? == checksum(conn, schema, s, r).await? {
            continue;
        }
        out.push(difference(conn, c, schema, s, r).await?);
    }
    c.execute("COMMIT").await?;
    Ok(out)
}

/// One replica under comparison.
struct Replica {
    cfg: ConnectionConfig,
    conn: Option<MySqlConnection>,
    failed: Option<String>,
    differ: Vec<String>,
}

/// Compares every job table (`tables`: the inventory of the job's schema) on each replica
/// found or named with the primary `cfg` (over `conn`, in the job's schema): one verdict
/// per replica. With `pause` (`verify --pause-replicas`), a range that differed at every
/// reading is read once more with the replica paused at the primary's position (said to
/// `events`, as is a replica that could not be started again); without, it is said
/// unsettled and the flag named.
pub async fn verify(
    conn: &mut MySqlConnection,
    cfg: &ConnectionConfig,
    job: &Job,
    tables: &[Table],
    pause: bool,
    events: &dyn Events,
) -> Result<Vec<(String, Compared)>> {
    let (topology, cfgs) = super::surveyed(conn, cfg, job).await?;
    if cfgs.is_empty() {
        return Ok(Vec::new());
    }
    let schema = job.schema.as_str();
    let flavor = match text(conn, "SELECT CAST(@@global.gtid_binlog_pos AS CHAR)").await {
        Ok(_) => Flavor::MariaDb,
        Err(e) if errno::of(&e) == Some(errno::UNKNOWN_SYSTEM_VARIABLE) => Flavor::MySql,
        Err(e) => return Err(e).context("reading the primary's GTID position"),
    };
    let mut subjects = Vec::new();
    for t in &job.tables {
        let columns: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
        )
        .bind(schema)
        .bind(&t.name)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading the columns of {}", t.name))?;
        let key = tables
            .iter()
            .find(|i| i.name == t.name)
            .and_then(crate::scan::read::key_columns)
            .unwrap_or_default();
        subjects.push(Subject {
            name: t.name.clone(),
            key,
            columns,
        });
    }
    let mut replicas = Vec::new();
    for rcfg in &cfgs {
        replicas.push(match rcfg.with_database(Some(schema)).connect_one().await {
            Ok(c) => Replica {
                cfg: rcfg.clone(),
                conn: Some(c),
                failed: None,
                differ: Vec::new(),
            },
            Err(e) => Replica {
                cfg: rcfg.clone(),
                conn: None,
                failed: Some(format!("{e:#}")),
                differ: Vec::new(),
            },
        });
    }
    let mut total_ranges = 0;
    for s in &subjects {
        let r = compare_table(conn, flavor, schema, s, &mut replicas, pause, events).await;
        conn.execute("COMMIT").await?;
        total_ranges += r?;
    }
    let out = topology
        .replicas
        .iter()
        .zip(replicas)
        .map(|(node, r)| {
            let verdict = match (r.failed, r.differ.is_empty()) {
                (Some(why), _) => Compared::NotCompared(why),
                (None, true) => Compared::Equal {
                    tables: subjects.len(),
                    ranges: total_ranges,
                },
                (None, false) => Compared::Differ(r.differ),
            };
            (node.address.clone(), verdict)
        })
        .collect();
    Ok(out)
}

/// Compares table `s` on every replica still compared: returns its number of ranges; a
/// replica that fails is marked so, one that differs gets its lines. `pause`: a range that
/// differed at every reading may be read with the replica paused ([`pinned_reading`]).
async fn compare_table(
    conn: &mut MySqlConnection,
    flavor: Flavor,
    schema: &str,
    s: &Subject,
    replicas: &mut [Replica],
    pause: bool,
    events: &dyn Events,
) -> Result<usize> {
    let mut pos = primary_snapshot(conn, flavor).await?;
    let cut = ranges(conn, schema, s).await?;
    // Per replica, the ranges still to settle (all at first).
    let mut pending: Vec<Vec<usize>> = replicas.iter().map(|_| (0..cut.len()).collect()).collect();
    let mut last_at: Vec<String> = vec![String::new(); replicas.len()];
    for reading in 0..READINGS {
        if reading > 0 {
            if pending.iter().all(Vec::is_empty) {
                break;
            }
            conn.execute("COMMIT").await?;
            pos = primary_snapshot(conn, flavor).await?;
        }
        let wanted: std::collections::BTreeSet<usize> = pending.iter().flatten().copied().collect();
        let mut ours = std::collections::HashMap::new();
        for &i in &wanted {
            ours.insert(i, checksum(conn, schema, s, &cut[i]).await?);
        }
        for (ri, rep) in replicas.iter_mut().enumerate() {
            if rep.failed.is_some() || pending[ri].is_empty() {
                continue;
            }
            let Some(c) = rep.conn.as_mut() else { continue };
            let outcome: Result<()> = async {
                let at = replica_snapshot(c, flavor, &pos).await?;
                let exact = same_position(&pos, &at);
                let mut still = Vec::new();
                for &i in &pending[ri] {
                    if checksum(c, schema, s, &cut[i]).await? == ours[&i] {
                        continue;
                    }
                    if !exact {
                        still.push(i);
                        continue;
                    }
                    rep.differ
                        .push(difference(conn, c, schema, s, &cut[i]).await?);
                }
                c.execute("COMMIT").await?;
                pending[ri] = still;
                last_at[ri] = at;
                Ok(())
            }
            .await;
            if let Err(e) = outcome {
                rep.failed = Some(format!("{e:#}"));
            }
        }
    }
    // Ranges that differed at every reading, never at the primary's position: the
    // application kept writing to them. With `pause`, read once more with the replica
    // paused at the primary's position (MariaDB); said unsettled, not different, when that
    // cannot be, or was not asked for (the fix names the flag).
    for (ri, rep) in replicas.iter_mut().enumerate() {
        if rep.failed.is_some() || pending[ri].is_empty() {
            continue;
        }
        let Some(c) = rep.conn.as_mut() else { continue };
        let why = match (flavor, pause) {
            (Flavor::MariaDb, true) => {
                let ranges: Vec<&Range> = pending[ri].iter().map(|&i| &cut[i]).collect();
                match pinned_reading(conn, c, &rep.cfg, schema, s, &ranges, events).await {
                    Ok(lines) => {
                        rep.differ.extend(lines);
                        pending[ri].clear();
                        continue;
                    }
                    Err(e) => format!("; not read with the replica paused: {e:#})"),
                }
            }
            (Flavor::MariaDb, false) => ")".to_string() + PAUSE_FIX,
            (Flavor::MySql, _) => "; MySQL: no replica is paused at a position). \
                Fix: rerun `myrecode verify JOB` when the application writes less"
                .to_string(),
        };
        c.execute("ROLLBACK").await.ok();
        let n = pending[ri].len();
        for (k, &i) in pending[ri].iter().enumerate() {
            // The reason and the fix once, after the last range.
            let tail = if k + 1 == n { why.as_str() } else { ")" };
            rep.differ.push(format!(
                "{}: differed at each of {READINGS} readings, never read at the primary's position \
                 (the replica read at {}, the primary at {pos}: the application writes to these rows{tail}",
                range_label(&s.name, &s.key, &cut[i]),
                last_at[ri]
            ));
        }
    }
    Ok(cut.len())
}

//! The application of the bench: its seeded rows, the writer that changes them during a
//! tool's run (open loop, at a fixed rate), and the check of every row afterwards.

use crate::common::{encode, execute_retrying, RUSSIAN};
use anyhow::Result;
use futures_util::StreamExt;
use myrecode::codec::{self, Encoding};
use myrecode::db::connect::ConnectionConfig;
use sqlx::{Connection, Executor, MySqlConnection, Row};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Authors of the forum: Russian names (cp1251/KOI8-R in the table); ASCII rows get `userNNNN`.
pub(crate) const AUTHORS: &[&str] = &[
    "Иванов Сергей Петрович",
    "Кузнецова Анна Владимировна",
    "Смирнов Алексей",
    "Ольга Викторовна Белова",
    "Дмитрий Соколов",
    "Попова Елена Игоревна",
    "Васильев Николай Андреевич",
    "Морозова Татьяна",
];

/// Rows per multi-row INSERT while seeding.
pub(crate) const INSERT_ROWS: i64 = 1000;

/// What the application wrote into row `id` of the seed: the text, and the encoding its bytes
/// are in (`None`: ASCII, the same in every encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub(crate) author: String,
    pub(crate) body: String,
    pub(crate) enc: Option<Encoding>,
}

impl Written {
    /// The bytes a latin1 connection stored for `text`.
    fn stored(&self, text: &str) -> Vec<u8> {
        match self.enc {
            Some(enc) => encode(enc, text),
            None => text.as_bytes().to_vec(),
        }
    }
}

/// Row `id` of the seed (ids from 1): 80% cp1251, 10% KOI8-R, 10% ASCII. Deterministic.
pub(crate) fn seeded(id: i64) -> Written {
    let i = id as usize;
    match id % 10 {
        9 => Written {
            author: format!("user{:04}", id % 5000),
            body: format!(
                "Order {id} shipped, tracking number RU{:09}",
                id * 7919 % 1_000_000_007
            ),
            enc: None,
        },
        n => Written {
            author: AUTHORS[(i * 7) % AUTHORS.len()].to_string(),
            body: format!(
                "{} {} #{id}",
                RUSSIAN[i % RUSSIAN.len()],
                RUSSIAN[(i / RUSSIAN.len() + 3) % RUSSIAN.len()]
            ),
            enc: Some(if n == 8 {
                Encoding::Koi8R
            } else {
                Encoding::Windows1251
            }),
        },
    }
}

/// DDL of the bench table (the database's default charset is latin1 too).
pub(crate) const CREATE_POSTS: &str =
    "CREATE TABLE posts (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
     author VARCHAR(64) CHARACTER SET latin1, body TEXT CHARACTER SET latin1, created DATETIME, \
     KEY k_author (author)) ENGINE=InnoDB DEFAULT CHARSET=latin1";

/// Further plain secondary indexes `--indexes N` gives the bench table, as an application's
/// listing pages ask for (SMF's `messages` has eight plain ones beside three unique ones).
const MORE_INDEXES: [&str; 6] = [
    "ADD KEY k_created (created)",
    "ADD KEY k_author_created (author, created)",
    "ADD KEY k_created_author (created, author)",
    "ADD KEY k_body (body(32))",
    "ADD KEY k_author_id (author, id)",
    "ADD KEY k_body_created (body(16), created)",
];

/// The `ALTER TABLE posts` adding the first `n` of [`MORE_INDEXES`] (none: `None`).
pub(crate) fn more_indexes_sql(n: usize) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "ALTER TABLE posts {}",
            MORE_INDEXES[..n.min(MORE_INDEXES.len())].join(", ")
        )
    })
}

/// Fills `posts` of `cfg`'s database with rows `1..=rows` over two connections.
pub(crate) async fn seed(cfg: &ConnectionConfig, rows: i64) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    c.execute(CREATE_POSTS).await?;
    drop(c);
    let workers = 2;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let cfg = cfg.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = cfg.connect_one().await?;
            c.execute("SET SESSION unique_checks = 0").await?;
            let mut start = 1 + w * INSERT_ROWS;
            while start <= rows {
                let end = (start + INSERT_ROWS).min(rows + 1);
                let sql = format!(
                    "INSERT INTO posts (id, author, body, created) VALUES {}",
                    vec![
                        "(?, ?, ?, '2015-01-01 00:00:00' + INTERVAL ? MINUTE)";
                        (end - start) as usize
                    ]
                    .join(", ")
                );
                execute_retrying(&mut c, || {
                    let mut q = sqlx::query(&sql);
                    for id in start..end {
                        let s = seeded(id);
                        q = q
                            .bind(id)
                            .bind(s.stored(&s.author))
                            .bind(s.stored(&s.body))
                            .bind(id);
                    }
                    q
                })
                .await?;
                start += workers * INSERT_ROWS;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// One of the writer's statements.
#[derive(Debug)]
pub(crate) enum Op {
    Update { id: i64, w: Written },
    Insert { w: Written },
    Delete { id: i64 },
}

/// Runs `op` once: `legacy` binds cp1251 bytes (a latin1 connection), else UTF-8 text.
pub(crate) async fn write_once(
    c: &mut MySqlConnection,
    op: &Op,
    legacy: bool,
) -> Result<sqlx::mysql::MySqlQueryResult, sqlx::Error> {
    let bind_text = |q: sqlx::query::Query<'static, sqlx::MySql, sqlx::mysql::MySqlArguments>,
                     w: &Written| {
        if legacy {
            q.bind(encode(Encoding::Windows1251, &w.author))
                .bind(encode(Encoding::Windows1251, &w.body))
        } else {
            q.bind(w.author.clone()).bind(w.body.clone())
        }
    };
    match op {
        Op::Update { id, w } => {
            bind_text(
                sqlx::query("UPDATE posts SET author = ?, body = ? WHERE id = ?"),
                w,
            )
            .bind(*id)
            .execute(c)
            .await
        }
        Op::Insert { w } => {
            bind_text(
                sqlx::query("INSERT INTO posts (author, body, created) VALUES (?, ?, NOW())"),
                w,
            )
            .execute(c)
            .await
        }
        Op::Delete { id } => {
            sqlx::query("DELETE FROM posts WHERE id = ?")
                .bind(*id)
                .execute(c)
                .await
        }
    }
}

/// What the writer did during one run.
#[derive(Debug, Default)]
pub(crate) struct WriterReport {
    pub(crate) latencies: Vec<Duration>,
    /// When the column refused cp1251 bytes (after the swap), from the writer's start.
    pub(crate) switched_at: Option<Duration>,
    /// Statements retried after a transient error (table renamed under a prepared statement, deadlock).
    pub(crate) retried: u64,
    /// The first few messages of retried statements.
    pub(crate) first_retries: Vec<String>,
    /// Statements that failed for good, and the first few messages.
    pub(crate) failed: u64,
    pub(crate) first_errors: Vec<String>,
    /// The last write per row id: `None` deleted.
    pub(crate) last: HashMap<i64, Option<Written>>,
}

impl WriterReport {
    /// The `q`-quantile of the statement latencies (0 when none).
    pub(crate) fn quantile(&self, q: f64) -> Duration {
        let mut l = self.latencies.clone();
        l.sort();
        if l.is_empty() {
            return Duration::ZERO;
        }
        l[((l.len() as f64 * q) as usize).min(l.len() - 1)]
    }
}

/// Whether a failed statement is worth a retry: a table renamed or re-created under a cached
/// prepared statement, a deadlock, a lock wait timeout.
pub(crate) fn transient(msg: &str) -> bool {
    [
        "1146",
        "doesn't exist",
        "1412",
        "definition has changed",
        "1213",
        "Deadlock",
        "1205",
        "Lock wait timeout",
    ]
    .iter()
    .any(|s| msg.contains(s))
}

/// Connections the writer spreads its statements over: a statement the tool holds up does not
/// hold up the ones due after it (each waits for a free connection, timed from its due instant).
pub(crate) const WRITER_CONNECTIONS: usize = 8;

/// The writer's state its statements share: what they did, and the rows one is changing now.
#[derive(Default)]
struct Shared {
    report: WriterReport,
    /// Rows a statement in flight updates or deletes: no second one picks them, so each row's
    /// last write is known.
    in_flight: HashSet<i64>,
}

/// The application: one statement due every `every` (open loop) until `stop`, each on the first
/// free one of [`WRITER_CONNECTIONS`] connections; their connection ids go to `ids`.
pub(crate) async fn writer(
    cfg: ConnectionConfig,
    rows: i64,
    every: Duration,
    stop: Arc<AtomicBool>,
    ids: Arc<Mutex<Vec<u64>>>,
) -> Result<WriterReport> {
    let mut conns = Vec::with_capacity(WRITER_CONNECTIONS);
    let mut conn_ids = Vec::with_capacity(WRITER_CONNECTIONS);
    for _ in 0..WRITER_CONNECTIONS {
        let mut c = cfg.connect_one().await?;
        conn_ids.push(
            sqlx::query_scalar::<_, u64>("SELECT CONNECTION_ID()")
                .fetch_one(&mut c)
                .await?,
        );
        conns.push(c);
    }
    *ids.lock().expect("writer ids") = conn_ids;
    let free = Arc::new(tokio::sync::Mutex::new(conns));
    // Fair (first come, first served): statements get connections in the order they fell due.
    let permits = Arc::new(tokio::sync::Semaphore::new(WRITER_CONNECTIONS));
    let legacy = Arc::new(AtomicBool::new(true));
    let shared = Arc::new(Mutex::new(Shared::default()));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    // Open loop: each statement is due at its own instant and is issued then, whatever the
    // ones before it are waiting for; its latency counts from that instant.
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut n: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        let due = tick.tick().await;
        n += 1;
        let op = {
            let mut s = shared.lock().expect("writer state");
            let id = loop {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = 1 + (x % rows as u64) as i64;
                if !s.in_flight.contains(&id) {
                    break id;
                }
            };
            let w = Written {
                author: AUTHORS[(x >> 20) as usize % AUTHORS.len()].to_string(),
                body: format!(
                    "{} (правка {n})",
                    RUSSIAN[(x >> 8) as usize % RUSSIAN.len()]
                ),
                enc: Some(Encoding::Windows1251),
            };
            let deleted = matches!(s.report.last.get(&id), Some(None));
            let op = match x % 20 {
                0 if !deleted => Op::Delete { id },
                1..=4 => Op::Insert { w },
                _ if deleted => Op::Insert { w },
                _ => Op::Update { id, w },
            };
            if let Op::Update { id, .. } | Op::Delete { id } = op {
                s.in_flight.insert(id);
            }
            op
        };
        let (free, permits, legacy, shared) = (
            free.clone(),
            permits.clone(),
            legacy.clone(),
            shared.clone(),
        );
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("writer permits");
            let mut c = free
                .lock()
                .await
                .pop()
                .expect("a free connection per permit");
            let (result, enc_legacy, retries) = write_retrying(&mut c, &op, &legacy).await;
            let latency = due.elapsed();
            free.lock().await.push(c);
            let mut s = shared.lock().expect("writer state");
            let r = &mut s.report;
            r.latencies.push(latency);
            if r.switched_at.is_none() && !legacy.load(Ordering::SeqCst) {
                r.switched_at = Some(started.elapsed());
            }
            r.retried += retries.len() as u64;
            for msg in retries {
                if r.first_retries.len() < 3 {
                    r.first_retries.push(msg);
                }
            }
            let enc = enc_legacy.then_some(Encoding::Windows1251);
            if let Op::Update { id, .. } | Op::Delete { id } = op {
                s.in_flight.remove(&id);
            }
            let r = &mut s.report;
            match (result, op) {
                (Ok(_), Op::Delete { id }) => {
                    r.last.insert(id, None);
                }
                (Ok(done), Op::Insert { mut w }) => {
                    w.enc = enc;
                    r.last.insert(done.last_insert_id() as i64, Some(w));
                }
                (Ok(done), Op::Update { id, mut w }) => {
                    if done.rows_affected() > 0 {
                        w.enc = enc;
                        r.last.insert(id, Some(w));
                    }
                }
                (Err(msg), _) => {
                    r.failed += 1;
                    if r.first_errors.len() < 3 {
                        r.first_errors.push(msg);
                    }
                }
            }
        });
        // Reap finished statements as we go, so a long run does not hold every task.
        while let Some(done) = tasks.try_join_next() {
            done?;
        }
    }
    while let Some(done) = tasks.join_next().await {
        done?;
    }
    let s = Arc::try_unwrap(shared)
        .map_err(|_| anyhow::anyhow!("a writer statement outlived the writer"))?
        .into_inner()
        .expect("writer state");
    Ok(s.report)
}

/// Runs `op` until it succeeds or fails for good: the outcome, whether cp1251 bytes were bound
/// (the column was still latin1), and the messages of the attempts retried.
async fn write_retrying(
    c: &mut MySqlConnection,
    op: &Op,
    legacy: &AtomicBool,
) -> (
    Result<sqlx::mysql::MySqlQueryResult, String>,
    bool,
    Vec<String>,
) {
    let mut retries = Vec::new();
    loop {
        let leg = legacy.load(Ordering::SeqCst);
        match write_once(c, op, leg).await {
            Ok(done) => return (Ok(done), leg, retries),
            Err(e) => {
                let msg = e.to_string();
                if leg && msg.contains("Incorrect string value") {
                    // The column is utf8mb4 now: the application switches to UTF-8.
                    legacy.store(false, Ordering::SeqCst);
                } else if retries.len() < 5 && transient(&msg) {
                    retries.push(msg);
                    c.clear_cached_statements().await.ok();
                } else {
                    return (Err(msg), leg, retries);
                }
            }
        }
    }
}

/// How the rows came out, value by value (author and body of every row).
#[derive(Debug, Default)]
pub(crate) struct Check {
    pub(crate) rows: u64,
    /// Non-ASCII values holding the right text.
    pub(crate) recoded: u64,
    /// Non-ASCII values holding the latin1 reading of their legacy bytes.
    pub(crate) mojibake: u64,
    /// ASCII values, unchanged.
    pub(crate) ascii: u64,
    /// Anything else, with a few examples (id, column, wanted, got).
    pub(crate) other: u64,
    pub(crate) examples: Vec<(i64, &'static str, String, String)>,
    pub(crate) missing: u64,
    pub(crate) extra: u64,
    /// Character set of `body` afterwards.
    pub(crate) charset: String,
    /// A sample row: id and the start of its body.
    pub(crate) sample: Option<(i64, String)>,
}

/// Reads every row and classifies it against the seed and the writer's last writes.
pub(crate) async fn check(cfg: &ConnectionConfig, rows: i64, w: &WriterReport) -> Result<Check> {
    let mut c = cfg.connect_one().await?;
    let mut k = Check {
        charset: sqlx::query_scalar(
            "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'body'",
        )
        .fetch_one(&mut c)
        .await?,
        ..Check::default()
    };
    // The first untouched cp1251 row shows what the tool made of it.
    let sample_id = (1..=rows)
        .find(|id| seeded(*id).enc == Some(Encoding::Windows1251) && !w.last.contains_key(id))
        .unwrap_or(1);
    {
        let mut stream =
            sqlx::query("SELECT id, author, body FROM posts ORDER BY id").fetch(&mut c);
        while let Some(r) = stream.next().await {
            let r = r?;
            let id = i64::from(r.get::<u32, _>(0));
            let got: [Option<String>; 2] = [r.get(1), r.get(2)];
            k.rows += 1;
            if id == sample_id {
                let body = got[1].clone().unwrap_or_default();
                k.sample = Some((id, body.chars().take(40).collect()));
            }
            let want = match w.last.get(&id) {
                Some(Some(v)) => v.clone(),
                Some(None) => {
                    k.extra += 1;
                    continue;
                }
                None if id <= rows => seeded(id),
                None => {
                    k.extra += 1;
                    continue;
                }
            };
            for (col, text, got) in [
                ("author", &want.author, &got[0]),
                ("body", &want.body, &got[1]),
            ] {
                let got = got.as_deref().unwrap_or("");
                if text.is_ascii() && got == text {
                    k.ascii += 1;
                } else if got == text {
                    k.recoded += 1;
                } else if codec::decode(Encoding::Latin1, &want.stored(text))
                    .ok()
                    .as_deref()
                    == Some(got)
                {
                    k.mojibake += 1;
                } else {
                    k.other += 1;
                    if k.examples.len() < 3 {
                        k.examples.push((id, col, text.clone(), got.to_string()));
                    }
                }
            }
        }
    }
    let deleted_seed = w
        .last
        .iter()
        .filter(|(id, v)| **id <= rows && v.is_none())
        .count() as u64;
    let live_inserted = w
        .last
        .iter()
        .filter(|(id, v)| **id > rows && v.is_some())
        .count() as u64;
    let expected = rows as u64 - deleted_seed + live_inserted;
    let present_expected = k.rows - k.extra;
    k.missing = expected.saturating_sub(present_expected);
    Ok(k)
}

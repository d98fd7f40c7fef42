//! Bench: myrecode's online copy (`strategy: copy`) against `pt-online-schema-change --alter
//! "CONVERT TO CHARACTER SET utf8mb4"` on identical latin1 tables holding cp1251/KOI8-R text,
//! on the same server in the same invocation, each with a concurrent writer.
//!
//! ```text
//! cargo build --release --bin myrecode
//! cargo run --release --example bench_copy -- [--rows N] [--url URL] [--bin PATH] [--pt-osc PATH]
//!                                            [--writer-ms MS] [--batch-size N] [--pt-osc-first]
//! ```
//!
//! Two databases get the same table
//! `posts (id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY, author VARCHAR(64) latin1, body TEXT latin1,
//! created DATETIME, KEY k_author (author))`, seeded with what a latin1-connection application
//! wrote: 80% cp1251 bytes, 10% KOI8-R bytes, 10% ASCII. One is recoded by
//! `myrecode run JOB --execute` (copy into utf8mb4 with `cutover: auto`), the other converted by
//! pt-osc (which does not recode: the cp1251 bytes become their latin1 reading, mojibake).
//! During each run a writer on its own connection updates, inserts and deletes a row every
//! `--writer-ms` (cp1251 bytes until the column turns utf8mb4 and refuses them, UTF-8 text after)
//! and records each statement's latency; a sampler reads `information_schema.PROCESSLIST` every
//! 200 ms to show where the tool's connections spend their time. Afterwards every row of both
//! tables is checked: recoded text, mojibake, ASCII, or something else.

mod common;

use anyhow::{anyhow, bail, Context, Result};
use common::{
    check_bin, command_line, default_bin, encode, measure, myrecode_command, parse_count, tail,
    ChildCost, RUSSIAN,
};
use futures_util::StreamExt;
use myrecode::codec::{self, Encoding};
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::quote;
use myrecode::db::throwaway::ThrowawayServer;
use sqlx::{Connection, Executor, MySqlConnection, Row};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Authors of the forum: Russian names (cp1251/KOI8-R in the table); ASCII rows get `userNNNN`.
const AUTHORS: &[&str] = &[
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
const INSERT_ROWS: i64 = 1000;

/// How often the sampler reads the process list.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// Command-line options of the bench.
#[derive(Debug)]
struct Options {
    rows: i64,
    url: Option<String>,
    bin: PathBuf,
    pt_osc: PathBuf,
    writer_every: Duration,
    batch_size: i64,
    pt_osc_first: bool,
    lock_modes: Vec<u8>,
}

/// The help text.
fn usage() -> &'static str {
    "usage: bench_copy [--rows N] [--url URL] [--bin PATH] [--pt-osc PATH] [--writer-ms MS] [--batch-size N] [--pt-osc-first] [--lock-modes 1,2]\n  \
     --rows N        rows of each table (default 1000000)\n  \
     --url URL       use this server (mysql://user[:password]@host:port/; MYSQL_PWD works too) instead of a throwaway one;\n                  \
     two databases bench_copy_*_PID are created on it and dropped at the end\n  \
     --bin PATH      the myrecode binary (default: target/release/myrecode next to this example)\n  \
     --pt-osc PATH   pt-online-schema-change (default: found on the PATH)\n  \
     --writer-ms MS  the writer's period (default 5)\n  \
     --batch-size N  myrecode's starting batch_size (default 2000; it tunes towards target_batch_time 500ms)\n  \
     --pt-osc-first  run pt-osc before myrecode (default: myrecode first)\n  \
     --lock-modes L  innodb_autoinc_lock_mode of each throwaway server, in turn (default 1,2;\n                  \
     with --url, the server's own mode is measured once)"
}

/// Reads the command line.
fn parse_args() -> Result<Options> {
    let mut o = Options {
        rows: 1_000_000,
        url: None,
        bin: PathBuf::new(),
        pt_osc: PathBuf::from("pt-online-schema-change"),
        writer_every: Duration::from_millis(5),
        batch_size: 2000,
        pt_osc_first: false,
        lock_modes: vec![1, 2],
    };
    let mut bin = None;
    let mut args = std::env::args().skip(1);
    let path = |flag: &str, v: Option<String>| {
        v.map(PathBuf::from)
            .ok_or_else(|| anyhow!("{flag} needs a path\n{}", usage()))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => o.rows = parse_count("--rows", args.next(), usage())?,
            "--url" => {
                o.url = Some(
                    args.next()
                        .ok_or_else(|| anyhow!("--url needs a value\n{}", usage()))?,
                )
            }
            "--bin" => bin = Some(path("--bin", args.next())?),
            "--pt-osc" => o.pt_osc = path("--pt-osc", args.next())?,
            "--writer-ms" => {
                o.writer_every =
                    Duration::from_millis(parse_count("--writer-ms", args.next(), usage())? as u64)
            }
            "--batch-size" => o.batch_size = parse_count("--batch-size", args.next(), usage())?,
            "--pt-osc-first" => o.pt_osc_first = true,
            "--lock-modes" => {
                let v = args.next().unwrap_or_default();
                o.lock_modes = v
                    .split(',')
                    .map(|m| match m.trim() {
                        "0" => Ok(0),
                        "1" => Ok(1),
                        "2" => Ok(2),
                        _ => Err(anyhow!(
                            "--lock-modes takes 0, 1 or 2, comma-separated\n{}",
                            usage()
                        )),
                    })
                    .collect::<Result<_>>()?;
            }
            "-h" | "--help" => {
                println!("{}", usage());
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{}", usage()),
        }
    }
    o.bin = match bin {
        Some(b) => b,
        None => default_bin()?,
    };
    check_bin(&o.bin)?;
    Ok(o)
}

/// What the application wrote into row `id` of the seed: the text, and the encoding its bytes
/// are in (`None`: ASCII, the same in every encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    author: String,
    body: String,
    enc: Option<Encoding>,
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
fn seeded(id: i64) -> Written {
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
const CREATE_POSTS: &str =
    "CREATE TABLE posts (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
     author VARCHAR(64) CHARACTER SET latin1, body TEXT CHARACTER SET latin1, created DATETIME, \
     KEY k_author (author)) ENGINE=InnoDB DEFAULT CHARSET=latin1";

/// Fills `posts` of `cfg`'s database with rows `1..=rows` over two connections.
async fn seed(cfg: &ConnectionConfig, rows: i64) -> Result<()> {
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
                let mut q = sqlx::query(&sql);
                for id in start..end {
                    let s = seeded(id);
                    q = q
                        .bind(id)
                        .bind(s.stored(&s.author))
                        .bind(s.stored(&s.body))
                        .bind(id);
                }
                q.execute(&mut c).await?;
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
enum Op {
    Update { id: i64, w: Written },
    Insert { w: Written },
    Delete { id: i64 },
}

/// Runs `op` once: `legacy` binds cp1251 bytes (a latin1 connection), else UTF-8 text.
async fn write_once(
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
struct WriterReport {
    latencies: Vec<Duration>,
    /// When the column refused cp1251 bytes (after the swap), from the writer's start.
    switched_at: Option<Duration>,
    /// Statements retried after a transient error (table renamed under a prepared statement, deadlock).
    retried: u64,
    /// The first few messages of retried statements.
    first_retries: Vec<String>,
    /// Statements that failed for good, and the first few messages.
    failed: u64,
    first_errors: Vec<String>,
    /// The last write per row id: `None` deleted.
    last: HashMap<i64, Option<Written>>,
}

impl WriterReport {
    /// The `q`-quantile of the statement latencies (0 when none).
    fn quantile(&self, q: f64) -> Duration {
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
fn transient(msg: &str) -> bool {
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

/// The application: one statement every `every` on its own connection until `stop`.
async fn writer(
    cfg: ConnectionConfig,
    rows: i64,
    every: Duration,
    stop: Arc<AtomicBool>,
    my_id: Arc<AtomicU64>,
) -> Result<WriterReport> {
    let mut c = cfg.connect_one().await?;
    let id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(&mut c)
        .await?;
    my_id.store(id, Ordering::SeqCst);
    let mut r = WriterReport::default();
    let mut legacy = true;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let started = Instant::now();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        tick.tick().await;
        n += 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let id = 1 + (x % rows as u64) as i64;
        let w = Written {
            author: AUTHORS[(x >> 20) as usize % AUTHORS.len()].to_string(),
            body: format!(
                "{} (правка {n})",
                RUSSIAN[(x >> 8) as usize % RUSSIAN.len()]
            ),
            enc: Some(Encoding::Windows1251),
        };
        let deleted = matches!(r.last.get(&id), Some(None));
        let op = match x % 20 {
            0 if !deleted => Op::Delete { id },
            1..=4 => Op::Insert { w },
            _ if deleted => Op::Insert { w },
            _ => Op::Update { id, w },
        };
        let t0 = Instant::now();
        let mut tries = 0;
        let result = loop {
            match write_once(&mut c, &op, legacy).await {
                Ok(done) => break Ok(done),
                Err(e) => {
                    let msg = e.to_string();
                    if legacy && msg.contains("Incorrect string value") {
                        // The column is utf8mb4 now: the application switches to UTF-8.
                        legacy = false;
                        r.switched_at = Some(started.elapsed());
                    } else if tries < 5 && transient(&msg) {
                        tries += 1;
                        r.retried += 1;
                        if r.first_retries.len() < 3 {
                            r.first_retries.push(msg);
                        }
                        c.clear_cached_statements().await.ok();
                    } else {
                        break Err(msg);
                    }
                }
            }
        };
        r.latencies.push(t0.elapsed());
        match (result, op) {
            (Ok(_), Op::Delete { id }) => {
                r.last.insert(id, None);
            }
            (Ok(done), Op::Insert { mut w }) => {
                w.enc = legacy.then_some(Encoding::Windows1251);
                r.last.insert(done.last_insert_id() as i64, Some(w));
            }
            (Ok(done), Op::Update { id, mut w }) => {
                if done.rows_affected() > 0 {
                    w.enc = legacy.then_some(Encoding::Windows1251);
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
    }
    Ok(r)
}

/// What the tool's connections were seen doing: observations per bucket, and samples taken.
#[derive(Debug, Default)]
struct Samples {
    seen: BTreeMap<String, u64>,
    /// What the writer's connection was seen doing when it was not idle.
    writer_seen: BTreeMap<String, u64>,
    samples: u64,
}

/// The shape of a statement: its first words, numbers and the database name taken out.
fn shape(info: &str, db: &str) -> String {
    let info = info.replace(&format!("{}.", quote::ident(db)), "");
    let words: Vec<&str> = info.split_whitespace().take(6).collect();
    let mut s = String::new();
    let mut digits = false;
    for ch in words.join(" ").chars() {
        if ch.is_ascii_digit() {
            if !digits {
                s.push('N');
            }
            digits = true;
        } else {
            digits = false;
            s.push(ch);
        }
    }
    s.chars().take(60).collect()
}

/// Samples `information_schema.PROCESSLIST` for connections in `db` (the writer's apart).
async fn sampler(
    cfg: ConnectionConfig,
    db: String,
    writer_id: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> Result<Samples> {
    let mut c = cfg.connect_one().await?;
    let mut s = Samples::default();
    while !stop.load(Ordering::SeqCst) {
        let rows = sqlx::query(
            "SELECT CAST(COMMAND AS CHAR), CAST(COALESCE(STATE, '') AS CHAR), CAST(LEFT(COALESCE(INFO, ''), 120) AS CHAR), ID = ? \
             FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
        )
        .bind(writer_id.load(Ordering::SeqCst))
        .bind(&db)
        .fetch_all(&mut c)
        .await?;
        s.samples += 1;
        for r in rows {
            let (command, state, info): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            if r.get::<i64, _>(3) != 0 {
                if command != "Sleep" {
                    *s.writer_seen
                        .entry(format!("{} [{state}]", shape(&info, &db)))
                        .or_default() += 1;
                }
                continue;
            }
            let key = if command == "Sleep" {
                "(idle: the client is working, or between statements)".to_string()
            } else if state.is_empty() {
                shape(&info, &db)
            } else {
                format!("{} [{state}]", shape(&info, &db))
            };
            *s.seen.entry(key).or_default() += 1;
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    Ok(s)
}

/// One of the two databases.
#[derive(Debug, Clone)]
struct BenchDb {
    name: String,
    config: ConnectionConfig,
    /// The server's process id, when it runs on this machine (its CPU time is then measured).
    server_pid: Option<u32>,
}

/// What one tool's run gave.
#[derive(Debug)]
struct ToolRun {
    tool: &'static str,
    cost: ChildCost,
    /// Whether the tool exited with an error.
    failed: bool,
    /// The machine's CPU busy share during the run, %.
    busy: f64,
    /// CPU time the server spent during the run (a local server only): the work the tool made
    /// it do, beside the tool's own.
    server_cpu: Option<Duration>,
    writer: WriterReport,
    samples: Samples,
    check: Check,
    /// The tool's own summary lines (cut-over pause, "Successfully altered").
    summary: Vec<String>,
}

/// Runs `cmd` against `db` with the writer and sampler alongside.
fn run_tool(
    rt: &tokio::runtime::Runtime,
    opts: &Options,
    tool: &'static str,
    db: &BenchDb,
    cmd: Command,
    log: &Path,
    secret: Option<&str>,
) -> Result<ToolRun> {
    println!("== {tool} on {} ==", db.name);
    let stop = Arc::new(AtomicBool::new(false));
    let writer_id = Arc::new(AtomicU64::new(0));
    let w = rt.spawn(writer(
        db.config.clone(),
        opts.rows,
        opts.writer_every,
        stop.clone(),
        writer_id.clone(),
    ));
    while writer_id.load(Ordering::SeqCst) == 0 && !w.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = rt.spawn(sampler(
        db.config.clone(),
        db.name.clone(),
        writer_id,
        stop.clone(),
    ));
    let cpu_before = cpu_jiffies();
    let server_before = db.server_pid.and_then(process_cpu);
    let cost = measure(cmd, log);
    let busy = busy_percent(cpu_before, cpu_jiffies());
    let server_cpu = match (server_before, db.server_pid.and_then(process_cpu)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    stop.store(true, Ordering::SeqCst);
    let writer = rt.block_on(w)??;
    let samples = rt.block_on(s)??;
    let cost = cost?;
    // myrecode exits 1 when it quarantined values, which the check below shows.
    let failed = cost.code != 0 && !(tool == "myrecode" && cost.code == 1);
    let text = mask(&std::fs::read_to_string(log).unwrap_or_default(), secret);
    let mut summary: Vec<String> = text
        .lines()
        .filter(|l| {
            l.starts_with("cut-over:")
                || l.contains("Successfully altered")
                || l.contains("Swapped original and new tables")
                || (l.contains("values recoded") && !l.starts_with("run: table="))
        })
        .map(str::to_string)
        .collect();
    if failed {
        // The tool's last words: its error, not its progress lines.
        let end = mask(&tail(log, 40), secret);
        let last: Vec<&str> = end
            .lines()
            .filter(|l| !l.starts_with("run: table=") && !l.trim().is_empty())
            .collect();
        summary.push(format!("FAILED with exit code {}:", cost.code));
        summary.extend(
            last[last.len().saturating_sub(4)..]
                .iter()
                .map(|l| l.to_string()),
        );
    }
    let check = rt.block_on(check(&db.config, opts.rows, &writer))?;
    let run = ToolRun {
        tool,
        cost,
        failed,
        busy,
        server_cpu,
        writer,
        samples,
        check,
        summary,
    };
    print_run(&run, opts.rows);
    Ok(run)
}

/// Replaces the password, if any, wherever it appears.
fn mask(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => text.replace(s, "***"),
        _ => text.to_string(),
    }
}

/// How the rows came out, value by value (author and body of every row).
#[derive(Debug, Default)]
struct Check {
    rows: u64,
    /// Non-ASCII values holding the right text.
    recoded: u64,
    /// Non-ASCII values holding the latin1 reading of their legacy bytes.
    mojibake: u64,
    /// ASCII values, unchanged.
    ascii: u64,
    /// Anything else, with a few examples (id, column, wanted, got).
    other: u64,
    examples: Vec<(i64, &'static str, String, String)>,
    missing: u64,
    extra: u64,
    /// Character set of `body` afterwards.
    charset: String,
    /// A sample row: id and the start of its body.
    sample: Option<(i64, String)>,
}

/// Reads every row and classifies it against the seed and the writer's last writes.
async fn check(cfg: &ConnectionConfig, rows: i64, w: &WriterReport) -> Result<Check> {
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

/// Prints one run's figures as soon as it is done.
fn print_run(r: &ToolRun, rows: i64) {
    let w = &r.writer;
    println!(
        "{}: {:.1} s, {:.0} rows/s, exit {}, peak RSS {:.1} MiB, its CPU {:.1} s ({:.0}% of one core); machine CPU {:.0}% busy",
        r.tool,
        r.cost.wall.as_secs_f64(),
        rows as f64 / r.cost.wall.as_secs_f64(),
        r.cost.code,
        r.cost.max_rss_kib as f64 / 1024.0,
        r.cost.cpu.as_secs_f64(),
        100.0 * r.cost.cpu.as_secs_f64() / r.cost.wall.as_secs_f64(),
        r.busy
    );
    if let Some(sc) = r.server_cpu {
        println!(
            "server CPU during the run: {:.1} s; with the tool's own, {:.1} s of CPU, {:.2} s per 100k rows",
            sc.as_secs_f64(),
            (sc + r.cost.cpu).as_secs_f64(),
            (sc + r.cost.cpu).as_secs_f64() * 100_000.0 / rows as f64
        );
    }
    for l in &r.summary {
        println!("  | {l}");
    }
    println!(
        "writer: {} statements, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; switched to UTF-8 after {}; {} retried, {} failed",
        w.latencies.len(),
        ms(w.quantile(0.5)),
        ms(w.quantile(0.99)),
        ms(w.quantile(1.0)),
        w.switched_at
            .map(|d| format!("{:.1} s", d.as_secs_f64()))
            .unwrap_or_else(|| "never (no swap seen)".into()),
        w.retried,
        w.failed
    );
    for e in &w.first_retries {
        println!("  writer retried after: {e}");
    }
    for e in &w.first_errors {
        println!("  writer error: {e}");
    }
    let k = &r.check;
    println!(
        "result: body is {}; {} rows ({} missing, {} extra); values: {} recoded, {} mojibake, {} ASCII, {} other",
        k.charset, k.rows, k.missing, k.extra, k.recoded, k.mojibake, k.ascii, k.other
    );
    for (id, col, want, got) in &k.examples {
        println!("  row {id} {col}: wanted {want:?}, got {got:?}");
    }
    if let Some((id, body)) = &k.sample {
        println!("sample: row {id} body = {body:?}…");
    }
    let total: u64 = r.samples.seen.values().sum();
    println!(
        "process list ({} samples every {} ms; the tool's connections):",
        r.samples.samples,
        SAMPLE_EVERY.as_millis()
    );
    let mut seen: Vec<(&String, &u64)> = r.samples.seen.iter().collect();
    seen.sort_by(|a, b| b.1.cmp(a.1));
    for (what, n) in seen.iter().take(8) {
        println!(
            "  {:>5.1}%  {what}",
            100.0 * **n as f64 / total.max(1) as f64
        );
    }
    let mut waits: Vec<(&String, &u64)> = r.samples.writer_seen.iter().collect();
    waits.sort_by(|a, b| b.1.cmp(a.1));
    for (what, n) in waits.iter().take(4) {
        println!(
            "  writer seen busy in {n} of {} samples: {what}",
            r.samples.samples
        );
    }
    println!();
}

/// CPU time (user and system) process `pid` has used so far, from `/proc/PID/stat`.
fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may hold spaces: count fields after its closing one.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    // SAFETY: sysconf reads a constant of the system.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(Duration::from_secs_f64((utime + stime) as f64 / tick))
}

/// The process id of the server `admin` reaches, when its pid file is readable here.
async fn server_pid(admin: &ConnectionConfig) -> Option<u32> {
    let mut c = admin.connect_one().await.ok()?;
    let file: String = sqlx::query_scalar("SELECT CAST(@@pid_file AS CHAR)")
        .fetch_one(&mut c)
        .await
        .ok()?;
    let pid: u32 = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
    std::path::Path::new(&format!("/proc/{pid}/stat"))
        .exists()
        .then_some(pid)
}

/// Busy and total jiffies of all CPUs so far, from `/proc/stat` (zeros where it cannot be read).
pub fn cpu_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().next() else {
        return (0, 0);
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    // idle and iowait are the 4th and 5th fields.
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// The share of the machine's CPU time that was busy between two [`cpu_jiffies`] readings, in %.
pub fn busy_percent(before: (u64, u64), after: (u64, u64)) -> f64 {
    let total = after.1.saturating_sub(before.1).max(1);
    100.0 * after.0.saturating_sub(before.0) as f64 / total as f64
}

/// Milliseconds, for printing.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The myrecode job: both text columns to utf8mb4 by the copy strategy, automatic cut-over.
/// The targets name no collation, so both tools end with the same definitions: pt-osc's
/// `CONVERT TO CHARACTER SET utf8mb4` gives the charset's default collation too.
fn job_yaml(schema: &str, batch_size: i64) -> String {
    format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: {batch_size}\n  target_batch_time: 500ms\n  \
         pause_between_batches: 0ms\n  cutover: auto\ntables:\n  - name: posts\n    strategy: copy\n    columns:\n      \
         - name: author\n        source: auto\n        target: VARCHAR(64) CHARACTER SET utf8mb4\n      \
         - name: body\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4\n"
    )
}

/// The pt-osc DSN for `db`; the password goes into a 0600 defaults file, never on the command line.
fn pt_osc_dsn(db: &BenchDb, dir: &Path) -> Result<String> {
    let c = &db.config;
    let mut dsn = format!(
        "h={},P={},u={},D={},t=posts",
        c.host, c.port, c.user, db.name
    );
    if let Some(s) = &c.socket {
        dsn.push_str(&format!(",S={s}"));
    }
    if let Some(pw) = c.password() {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join("pt-osc.cnf");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        std::io::Write::write_all(&mut f, format!("[client]\npassword=\"{pw}\"\n").as_bytes())?;
        dsn = format!("F={},{dsn}", path.display());
    }
    Ok(dsn)
}

/// The pt-osc flags a DBA would use against a standalone server.
const PT_OSC_FLAGS: &[&str] = &[
    "--alter",
    "CONVERT TO CHARACTER SET utf8mb4",
    "--execute",
    "--recursion-method=none",
    "--no-version-check",
    "--no-drop-old-table",
];

/// Runs one statement on a fresh connection.
async fn exec(cfg: &ConnectionConfig, sql: &str) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    c.execute(sql).await.with_context(|| sql.to_string())?;
    Ok(())
}

/// Starts or borrows the server, seeds both databases, runs both tools and prints the comparison.
fn main() -> Result<()> {
    let opts = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!(
        "date:    {}",
        command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
    );
    println!(
        "machine: {} CPUs (nproc), {}; uptime: {}",
        command_line("nproc", &[]),
        command_line("uname", &["-srm"]),
        command_line("uptime", &[])
    );
    println!("myrecode: {}", opts.bin.display());
    println!(
        "pt-osc:  {}\n",
        command_line(
            opts.pt_osc.to_str().unwrap_or("pt-online-schema-change"),
            &["--version"]
        )
    );
    let modes: Vec<Option<u8>> = match &opts.url {
        Some(_) => vec![None],
        None => opts.lock_modes.iter().map(|m| Some(*m)).collect(),
    };
    let mut results = Vec::new();
    for mode in modes {
        results.push(bench_mode(&rt, &opts, mode)?);
    }
    println!("\n## Per lock mode ({} rows)\n", opts.rows);
    println!("| innodb_autoinc_lock_mode | myrecode rows/s | pt-osc rows/s | ratio | writer statements myrecode / pt-osc | writer p99 myrecode / pt-osc | CPU s (server + tool) myrecode / pt-osc | peak RSS myrecode |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        let (m, p) = (&r.myrecode, &r.pt_osc);
        let cpu = |t: &ToolRun| {
            t.server_cpu.map_or("?".to_string(), |s| {
                format!("{:.1} + {:.1}", s.as_secs_f64(), t.cost.cpu.as_secs_f64())
            })
        };
        println!(
            "| {} | {:.0} | {:.0} | **{:.2}** | {} / {} | {:.1} ms / {:.1} ms | {} / {} | {:.1} MiB |",
            r.lock_mode,
            opts.rows as f64 / m.cost.wall.as_secs_f64(),
            opts.rows as f64 / p.cost.wall.as_secs_f64(),
            p.cost.wall.as_secs_f64() / m.cost.wall.as_secs_f64(),
            m.writer.latencies.len(),
            p.writer.latencies.len(),
            ms(m.writer.quantile(0.99)),
            ms(p.writer.quantile(0.99)),
            cpu(m),
            cpu(p),
            m.cost.max_rss_kib as f64 / 1024.0
        );
    }
    let failed: Vec<String> = results
        .iter()
        .flat_map(|r| {
            [&r.myrecode, &r.pt_osc]
                .into_iter()
                .filter(|t| t.failed)
                .map(move |t| format!("{} (lock mode {})", t.tool, r.lock_mode))
        })
        .collect();
    if !failed.is_empty() {
        bail!("{} failed (see above)", failed.join(" and "));
    }
    Ok(())
}

/// Both tools' runs on one server.
struct ModeRun {
    lock_mode: i64,
    myrecode: ToolRun,
    pt_osc: ToolRun,
}

/// Seeds a server (a throwaway one started with `innodb_autoinc_lock_mode=mode`, or the
/// `--url` one) and runs both tools on it.
fn bench_mode(rt: &tokio::runtime::Runtime, opts: &Options, mode: Option<u8>) -> Result<ModeRun> {
    let (server, admin) = match (&opts.url, mode) {
        (Some(url), _) => {
            let cfg = ConnectionConfig::from_url(url)?
                .or_env_password()
                .with_database(None);
            (None, cfg)
        }
        (None, mode) => {
            let extra: Vec<String> = mode
                .map(|m| format!("--innodb-autoinc-lock-mode={m}"))
                .into_iter()
                .collect();
            let s = ThrowawayServer::start_local_with(&extra)?;
            let admin = s.admin().clone();
            (Some(s), admin)
        }
    };
    let secret = admin.password().map(str::to_string);
    let (version, lock_mode): (String, i64) = rt.block_on(async {
        let mut c = admin.connect_one().await?;
        let v: (String, i64) = sqlx::query_as("SELECT VERSION(), @@innodb_autoinc_lock_mode")
            .fetch_one(&mut c)
            .await?;
        anyhow::Ok(v)
    })?;
    let where_ = match &server {
        Some(s) => s.description().to_string(),
        None => admin.to_string(),
    };
    println!("== innodb_autoinc_lock_mode={lock_mode} ==\nserver:  {version} ({where_})\n");
    let server_pid = rt.block_on(server_pid(&admin));

    let pid = std::process::id();
    let dbs: Vec<BenchDb> = ["myrecode", "ptosc"]
        .iter()
        .map(|t| {
            let name = format!("bench_copy_{t}_{pid}");
            BenchDb {
                config: admin.with_database(Some(&name)),
                name,
                server_pid,
            }
        })
        .collect();
    let (a, b) = (&dbs[0], &dbs[1]);
    let t0 = Instant::now();
    rt.block_on(async {
        for d in &dbs {
            exec(
                &admin,
                &format!(
                    "CREATE DATABASE {} CHARACTER SET latin1",
                    quote::ident(&d.name)
                ),
            )
            .await?;
        }
        seed(&a.config, opts.rows).await?;
        // The second copy is made by the server: byte for byte the same rows.
        exec(&b.config, CREATE_POSTS).await?;
        exec(
            &b.config,
            &format!(
                "INSERT INTO posts SELECT * FROM {}.posts ORDER BY id",
                quote::ident(&a.name)
            ),
        )
        .await?;
        for d in &dbs {
            exec(&d.config, "ANALYZE TABLE posts").await?;
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM posts")
                .fetch_one(&mut d.config.connect_one().await?)
                .await?;
            if n != opts.rows {
                bail!("{}: seeded {n} rows, wanted {}", d.name, opts.rows);
            }
        }
        anyhow::Ok(())
    })?;
    println!(
        "seed: {} rows in each of {} and {} in {:.1} s\n",
        opts.rows,
        a.name,
        b.name,
        t0.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir()?;
    let job = dir.path().join("copy.yaml");
    std::fs::write(&job, job_yaml(&a.name, opts.batch_size))?;
    let job_s = job.to_str().context("temp path is not UTF-8")?.to_string();
    let run_myrecode = || {
        run_tool(
            rt,
            opts,
            "myrecode",
            a,
            myrecode_command(
                &opts.bin,
                &["run", &job_s, "--execute"],
                &a.config.url_with_secret(),
            ),
            &dir.path().join("myrecode.log"),
            secret.as_deref(),
        )
    };
    let run_pt_osc = || -> Result<ToolRun> {
        let mut cmd = Command::new(&opts.pt_osc);
        cmd.args(PT_OSC_FLAGS).arg(pt_osc_dsn(b, dir.path())?);
        run_tool(
            rt,
            opts,
            "pt-osc",
            b,
            cmd,
            &dir.path().join("pt-osc.log"),
            secret.as_deref(),
        )
    };
    let (m, p) = if opts.pt_osc_first {
        let p = run_pt_osc()?;
        (run_myrecode()?, p)
    } else {
        let m = run_myrecode()?;
        (m, run_pt_osc()?)
    };

    println!("| tool | rows | seconds | rows/s | writer statements | writer p50 | writer p99 | writer max | values recoded | mojibake | other |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in [&m, &p] {
        println!(
            "| {}{} | {} | {:.1} | {:.0} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {} | {} | {} |",
            r.tool,
            if r.failed {
                format!(" (FAILED, exit {})", r.cost.code)
            } else {
                String::new()
            },
            opts.rows,
            r.cost.wall.as_secs_f64(),
            opts.rows as f64 / r.cost.wall.as_secs_f64(),
            r.writer.latencies.len(),
            ms(r.writer.quantile(0.5)),
            ms(r.writer.quantile(0.99)),
            ms(r.writer.quantile(1.0)),
            r.check.recoded,
            r.check.mojibake,
            r.check.other
        );
    }
    let ratio = p.cost.wall.as_secs_f64() / m.cost.wall.as_secs_f64();
    println!(
        "\nratio myrecode rows/s ÷ pt-osc rows/s = {ratio:.2} (target ≥ 1.5); writer p99 myrecode {:.1} ms, pt-osc {:.1} ms (target ≤ 500 ms)",
        ms(m.writer.quantile(0.99)),
        ms(p.writer.quantile(0.99))
    );
    for r in [&m, &p] {
        if let Some((id, body)) = &r.check.sample {
            let want: String = seeded(*id).body.chars().take(40).collect();
            println!(
                "{:>8}: row {id} body {body:?}… (the application wrote {want:?}…)",
                r.tool
            );
        }
    }

    if server.is_none() {
        rt.block_on(async {
            for d in &dbs {
                exec(
                    &admin,
                    &format!("DROP DATABASE IF EXISTS {}", quote::ident(&d.name)),
                )
                .await?;
            }
            anyhow::Ok(())
        })?;
    }
    Ok(ModeRun {
        lock_mode,
        myrecode: m,
        pt_osc: p,
    })
}

//! Bench: the job's one cut-over of many copied tables (`strategy: copy`, `cutover: auto`)
//! with a writer busy on all of them: how long reads and writes pause, and what the writer sees.
//!
//! ```text
//! cargo build --release --bin myrecode
//! cargo run --release --example bench_cutover -- [--tables 10,30] [--rows N] [--url URL] [--bin PATH]
//!                                                [--writer-ms MS] [--breakdown]
//! ```
//!
//! For each table count N, a database gets N tables
//! `tNN (id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY, name VARCHAR(64) latin1, body TEXT latin1)`
//! holding cp1251 bytes (what a latin1-connection application wrote), `--rows` each. A job
//! copies all N into utf8mb4 (`strategy: copy`, `cutover: auto`) and `myrecode run JOB --execute`
//! runs as a child while a writer on its own connection updates or inserts a row every
//! `--writer-ms`, round-robin over the N tables (cp1251 bytes until the server refuses them with
//! "Incorrect string value", UTF-8 text after). Per N it prints the pause the run printed on its
//! `cut-over:` line, the run's wall time, and the writer's statements and latencies (overall, and
//! within the second around the cut-over). Afterwards every text column must be utf8mb4 and every
//! row must hold its seeded text or the writer's last write: otherwise the bench fails.
//!
//! `--breakdown` (needs the SUPER privilege; meant for the throwaway server) logs every statement
//! to `mysql.slow_log` during the run and prints where the locked window went, by statement.

// The other benches use the rest of it.
#[allow(dead_code)]
mod common;

use anyhow::{anyhow, bail, Context, Result};
use common::{
    check_bin, command_line, default_bin, encode, myrecode_command, parse_count, RUSSIAN,
};
use myrecode::codec::Encoding;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::quote;
use myrecode::db::throwaway::ThrowawayServer;
use sqlx::{Connection, Executor, MySqlConnection, Row};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Names the writer puts into `name`; all fit cp1251.
const NAMES: &[&str] = &[
    "Иванов Сергей Петрович",
    "Кузнецова Анна Владимировна",
    "Смирнов Алексей",
    "Ольга Викторовна Белова",
    "Дмитрий Соколов",
];

/// Rows per multi-row INSERT while seeding.
const INSERT_ROWS: i64 = 500;

/// The issue's targets: the cut-over of 30 tables pauses at most this long...
const TARGET_PAUSE: Duration = Duration::from_secs(1);
/// ...and the writer's p99 stays within this.
const TARGET_P99: Duration = Duration::from_millis(500);

/// Command-line options of the bench.
#[derive(Debug)]
struct Options {
    tables: Vec<usize>,
    rows: i64,
    url: Option<String>,
    bin: PathBuf,
    writer_every: Duration,
    breakdown: bool,
}

/// The help text.
fn usage() -> &'static str {
    "usage: bench_cutover [--tables 10,30] [--rows N] [--url URL] [--bin PATH] [--writer-ms MS] [--breakdown]\n  \
     --tables LIST   table counts to bench, comma-separated (default 10,30)\n  \
     --rows N        rows of each table (default 2000)\n  \
     --url URL       use this server (mysql://user[:password]@host:port/; MYSQL_PWD works too) instead of a throwaway one;\n                  \
     a database bench_cutover_N_PID per table count is created on it and dropped at the end\n  \
     --bin PATH      the myrecode binary (default: target/release/myrecode next to this example)\n  \
     --writer-ms MS  the writer's period (default 3)\n  \
     --breakdown     log every statement to mysql.slow_log (SET GLOBAL; needs SUPER) and print where the\n                  \
     locked window went; adds the log's own cost to the figures"
}

/// Reads the command line.
fn parse_args() -> Result<Options> {
    let mut o = Options {
        tables: vec![10, 30],
        rows: 2000,
        url: None,
        bin: PathBuf::new(),
        writer_every: Duration::from_millis(3),
        breakdown: false,
    };
    let mut bin = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tables" => {
                let v = args
                    .next()
                    .ok_or_else(|| anyhow!("--tables needs a value\n{}", usage()))?;
                o.tables = v
                    .split(',')
                    .map(|s| parse_count("--tables", Some(s.trim().to_string()), usage()))
                    .map(|n| n.map(|n| n as usize))
                    .collect::<Result<_>>()?;
                if o.tables.iter().any(|n| *n > 99) {
                    bail!("--tables {v}: at most 99 tables per run");
                }
            }
            "--rows" => o.rows = parse_count("--rows", args.next(), usage())?,
            "--url" => {
                o.url = Some(
                    args.next()
                        .ok_or_else(|| anyhow!("--url needs a value\n{}", usage()))?,
                )
            }
            "--bin" => {
                bin = Some(PathBuf::from(
                    args.next()
                        .ok_or_else(|| anyhow!("--bin needs a path\n{}", usage()))?,
                ))
            }
            "--writer-ms" => {
                o.writer_every =
                    Duration::from_millis(parse_count("--writer-ms", args.next(), usage())? as u64)
            }
            "--breakdown" => o.breakdown = true,
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

/// Name of table `i` (from 0) of a run.
fn table_name(i: usize) -> String {
    format!("t{:02}", i + 1)
}

/// The text of a row: `name` and `body`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Text {
    name: String,
    body: String,
}

/// What the seed put into row `id` (from 1) of table `t`. Deterministic.
fn seeded(t: usize, id: i64) -> Text {
    let i = id as usize + t * 7;
    Text {
        name: NAMES[i % NAMES.len()].to_string(),
        body: format!("{} #{id}", RUSSIAN[i % RUSSIAN.len()]),
    }
}

/// DDL of table `name` (the database's default charset is latin1 too).
fn create_table(name: &str) -> String {
    format!(
        "CREATE TABLE {} (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
         name VARCHAR(64) CHARACTER SET latin1, body TEXT CHARACTER SET latin1) \
         ENGINE=InnoDB DEFAULT CHARSET=latin1",
        quote::ident(name)
    )
}

/// Creates the `n` tables of `cfg`'s database and fills each with rows `1..=rows` of cp1251 bytes.
async fn seed(cfg: &ConnectionConfig, n: usize, rows: i64) -> Result<()> {
    let mut c = cfg.connect_one().await?;
    for t in 0..n {
        let name = table_name(t);
        c.execute(create_table(&name).as_str()).await?;
        let mut start = 1;
        while start <= rows {
            let end = (start + INSERT_ROWS).min(rows + 1);
            let sql = format!(
                "INSERT INTO {} (id, name, body) VALUES {}",
                quote::ident(&name),
                vec!["(?, ?, ?)"; (end - start) as usize].join(", ")
            );
            let mut q = sqlx::query(&sql);
            for id in start..end {
                let s = seeded(t, id);
                q = q
                    .bind(id)
                    .bind(encode(Encoding::Windows1251, &s.name))
                    .bind(encode(Encoding::Windows1251, &s.body));
            }
            q.execute(&mut c).await?;
            start = end;
        }
    }
    Ok(())
}

/// The job: every table by copy into utf8mb4, one automatic cut-over.
fn job_yaml(schema: &str, n: usize) -> String {
    let mut y = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 2000\n  target_batch_time: 500ms\n  \
         pause_between_batches: 0ms\n  cutover: auto\ntables:\n"
    );
    for t in 0..n {
        y.push_str(&format!(
            "  - name: {}\n    strategy: copy\n    columns:\n      \
             - name: name\n        source: auto\n        target: VARCHAR(64) CHARACTER SET utf8mb4\n      \
             - name: body\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4\n",
            table_name(t)
        ));
    }
    y
}

/// One statement of the writer: when it started (from the bench's clock) and how long it took.
#[derive(Debug, Clone, Copy)]
struct Stmt {
    start: Duration,
    took: Duration,
}

/// What the writer did during one run.
#[derive(Debug, Default)]
struct WriterReport {
    stmts: Vec<Stmt>,
    /// When the server first refused cp1251 bytes (the swap), from the bench's clock.
    switched_at: Option<Duration>,
    /// Statements retried after a transient error, and the first few messages.
    retried: u64,
    first_retries: Vec<String>,
    /// Statements that failed for good, and the first few messages.
    failed: u64,
    first_errors: Vec<String>,
    /// The last write per (table, id).
    last: HashMap<(usize, i64), Text>,
}

/// The `q`-quantile of `l` (sorted here; 0 when empty).
fn quantile(l: &[Duration], q: f64) -> Duration {
    let mut l = l.to_vec();
    l.sort();
    if l.is_empty() {
        return Duration::ZERO;
    }
    l[((l.len() as f64 * q) as usize).min(l.len() - 1)]
}

/// Whether a failed statement is worth a retry: a table renamed under a cached prepared
/// statement, a deadlock, a lock wait timeout.
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

/// Runs one update (`id` given) or insert into table `t`: `legacy` binds cp1251 bytes (a latin1
/// connection), else UTF-8 text.
async fn write_once(
    c: &mut MySqlConnection,
    t: usize,
    id: Option<i64>,
    w: &Text,
    legacy: bool,
) -> Result<sqlx::mysql::MySqlQueryResult, sqlx::Error> {
    let table = quote::ident(&table_name(t));
    let sql = match id {
        Some(_) => format!("UPDATE {table} SET name = ?, body = ? WHERE id = ?"),
        None => format!("INSERT INTO {table} (name, body) VALUES (?, ?)"),
    };
    let q = sqlx::query(&sql);
    let q = if legacy {
        q.bind(encode(Encoding::Windows1251, &w.name))
            .bind(encode(Encoding::Windows1251, &w.body))
    } else {
        q.bind(w.name.clone()).bind(w.body.clone())
    };
    let q = match id {
        Some(id) => q.bind(id),
        None => q,
    };
    q.execute(c).await
}

/// The application: one statement every `every`, round-robin over the `n` tables, until `stop`.
async fn writer(
    cfg: ConnectionConfig,
    n: usize,
    rows: i64,
    every: Duration,
    clock: Instant,
    stop: Arc<AtomicBool>,
    ready: Arc<AtomicU64>,
) -> Result<WriterReport> {
    let mut c = cfg.connect_one().await?;
    ready.store(1, Ordering::SeqCst);
    let mut r = WriterReport::default();
    let mut legacy = true;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut k: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        tick.tick().await;
        k += 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t = (k as usize) % n;
        let w = Text {
            name: NAMES[(x >> 20) as usize % NAMES.len()].to_string(),
            body: format!(
                "{} (правка {k})",
                RUSSIAN[(x >> 8) as usize % RUSSIAN.len()]
            ),
        };
        // One in four an insert, else an update of a seeded row.
        let id = (!x.is_multiple_of(4)).then(|| 1 + ((x >> 32) % rows as u64) as i64);
        let start = clock.elapsed();
        let t0 = Instant::now();
        let mut tries = 0;
        let result = loop {
            match write_once(&mut c, t, id, &w, legacy).await {
                Ok(done) => break Ok(done),
                Err(e) => {
                    let msg = e.to_string();
                    if legacy && msg.contains("Incorrect string value") {
                        // The tables are utf8mb4 now: the application switches to UTF-8.
                        legacy = false;
                        r.switched_at = Some(clock.elapsed());
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
        r.stmts.push(Stmt {
            start,
            took: t0.elapsed(),
        });
        match result {
            Ok(done) => {
                let id = id.unwrap_or_else(|| done.last_insert_id() as i64);
                if done.rows_affected() > 0 {
                    r.last.insert((t, id), w);
                }
            }
            Err(msg) => {
                r.failed += 1;
                if r.first_errors.len() < 3 {
                    r.first_errors.push(msg);
                }
            }
        }
    }
    Ok(r)
}

/// A line of the child's output and when it was read, from the bench's clock.
type Line = (Duration, String);

/// Runs `cmd`, copying its output (stdout and stderr) into `log` with each line's arrival time.
fn run_child(
    mut cmd: std::process::Command,
    log: &Path,
    clock: Instant,
) -> Result<(Duration, i32, Vec<Line>)> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start myrecode")?;
    let lines: Arc<Mutex<Vec<Line>>> = Arc::default();
    let file = Arc::new(Mutex::new(std::fs::File::create(log)?));
    let readers: Vec<_> = [
        Box::new(child.stdout.take().context("no stdout")?) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().context("no stderr")?),
    ]
    .into_iter()
    .map(|out| {
        let (lines, file) = (lines.clone(), file.clone());
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let at = clock.elapsed();
                let _ = writeln!(file.lock().unwrap(), "{l}");
                lines.lock().unwrap().push((at, l));
            }
        })
    })
    .collect();
    let status = child.wait()?;
    let wall = started.elapsed();
    for r in readers {
        let _ = r.join();
    }
    let code = status
        .code()
        .ok_or_else(|| anyhow!("myrecode died: {status}"))?;
    let lines = std::mem::take(&mut *lines.lock().unwrap());
    Ok((wall, code, lines))
}

/// The pause a `cut-over:` line reports (`reads and writes paused N.N ms`).
fn parse_pause(line: &str) -> Option<Duration> {
    let rest = line.split("paused ").nth(1)?;
    let ms: f64 = rest.split(" ms").next()?.trim().parse().ok()?;
    Some(Duration::from_secs_f64(ms / 1000.0))
}

/// Checks every table after the run: text columns utf8mb4, every row its seed or the writer's
/// last write, no row missing or extra. Returns the rows checked, or what is wrong.
async fn check(cfg: &ConnectionConfig, n: usize, rows: i64, w: &WriterReport) -> Result<u64> {
    let mut c = cfg.connect_one().await?;
    let wrong: Vec<(String, String, String)> = sqlx::query(
        "SELECT CAST(TABLE_NAME AS CHAR), CAST(COLUMN_NAME AS CHAR), CAST(COALESCE(CHARACTER_SET_NAME, '') AS CHAR) \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 't%' \
         AND TABLE_NAME NOT LIKE '%myrecode%' AND DATA_TYPE IN ('varchar', 'text') \
         AND COALESCE(CHARACTER_SET_NAME, '') <> 'utf8mb4'",
    )
    .fetch_all(&mut c)
    .await?
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .collect();
    if !wrong.is_empty() {
        bail!("columns not utf8mb4 after the run: {wrong:?}");
    }
    let mut checked = 0;
    let mut bad = Vec::new();
    let mut bad_count = 0;
    for t in 0..n {
        let name = table_name(t);
        let got: BTreeMap<i64, Text> = sqlx::query(&format!(
            "SELECT id, name, body FROM {} ORDER BY id",
            quote::ident(&name)
        ))
        .fetch_all(&mut c)
        .await?
        .iter()
        .map(|r| {
            (
                i64::from(r.get::<u32, _>(0)),
                Text {
                    name: r.get::<Option<String>, _>(1).unwrap_or_default(),
                    body: r.get::<Option<String>, _>(2).unwrap_or_default(),
                },
            )
        })
        .collect();
        let mut want: BTreeMap<i64, Text> = (1..=rows).map(|id| (id, seeded(t, id))).collect();
        for ((wt, id), text) in &w.last {
            if *wt == t {
                want.insert(*id, text.clone());
            }
        }
        for id in want
            .keys()
            .chain(got.keys().filter(|k| !want.contains_key(k)))
        {
            checked += 1;
            if want.get(id) != got.get(id) {
                bad_count += 1;
                if bad.len() < 5 {
                    bad.push(format!(
                        "{name} id {id}: wanted {:?}, got {:?}",
                        want.get(id),
                        got.get(id)
                    ));
                }
            }
        }
    }
    if bad_count > 0 {
        bail!(
            "{bad_count} rows differ from the seed and the writer's last writes, e.g.\n  {}",
            bad.join("\n  ")
        );
    }
    Ok(checked)
}

/// Milliseconds of a `TIME` value as text (`HH:MM:SS.ffffff`); 0 when it does not parse.
fn time_ms(t: &str) -> f64 {
    t.split(':')
        .map(|p| p.parse::<f64>().unwrap_or(0.0))
        .fold(0.0, |acc, p| acc * 60.0 + p)
        * 1000.0
}

/// Where the locked window went: statements of the cut-over's lock holder and its rename,
/// from `mysql.slow_log` (with `--breakdown`).
async fn breakdown(admin: &ConnectionConfig, schema: &str) -> Result<Vec<String>> {
    let mut c = admin.connect_one().await?;
    let rows = sqlx::query(
        "SELECT CAST(thread_id AS SIGNED), CAST(start_time AS CHAR), CAST(query_time AS CHAR), \
         CAST(LEFT(CONVERT(sql_text USING utf8mb4), 200) AS CHAR) FROM mysql.slow_log \
         WHERE db = ? ORDER BY start_time",
    )
    .bind(schema)
    .fetch_all(&mut c)
    .await?;
    let rows: Vec<(i64, String, f64, String)> = rows
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                time_ms(&r.get::<String, _>(2)),
                r.get(3),
            )
        })
        .collect();
    // The last cut-over lock (a retried cut-over locks again) and its thread.
    let Some(at) = rows
        .iter()
        .rposition(|r| r.3.starts_with("LOCK TABLES") && r.3.contains("_myrecode_new` WRITE"))
    else {
        let mut shapes: BTreeMap<String, u64> = BTreeMap::new();
        for r in &rows {
            *shapes
                .entry(r.3.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .or_default() += 1;
        }
        return Ok(vec![format!(
            "no cut-over LOCK TABLES among the {} statements in mysql.slow_log for {schema}: {shapes:?}",
            rows.len()
        )]);
    };
    let locker = rows[at].0;
    let mut by_shape: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    let mut add = |shape: String, ms: f64| {
        let e = by_shape.entry(shape).or_default();
        e.0 += 1;
        e.1 += ms;
    };
    let mut out = vec![format!(
        "lock taken at {} (LOCK TABLES itself {:.1} ms)",
        rows[at].1, rows[at].2
    )];
    for r in &rows[at + 1..] {
        if r.0 == locker {
            let words: Vec<&str> = r.3.split_whitespace().take(2).collect();
            add(format!("lock holder: {}", words.join(" ")), r.2);
            if r.3.starts_with("UNLOCK TABLES") {
                break;
            }
        } else if r.3.starts_with("RENAME") {
            add("renamer: RENAME (queued, then run)".into(), r.2);
        } else if r.3.contains("PROCESSLIST") {
            add("main: polls for the queued rename".into(), r.2);
        }
    }
    let mut v: Vec<_> = by_shape.into_iter().collect();
    v.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    for (shape, (count, ms)) in v {
        out.push(format!("{ms:>8.1} ms in {count:>4} × {shape}"));
    }
    Ok(out)
}

/// One table count's figures.
#[derive(Debug)]
struct RunFigures {
    tables: usize,
    pause: Option<Duration>,
    wall: Duration,
    code: i32,
    writer: WriterReport,
    /// Latencies of the writer's statements that overlapped the second around the cut-over.
    around: Vec<Duration>,
    checked: u64,
}

/// Runs one table count: database, seed, job, run with the writer, check, figures.
fn bench_one(
    rt: &tokio::runtime::Runtime,
    opts: &Options,
    admin: &ConnectionConfig,
    n: usize,
    dir: &Path,
) -> Result<RunFigures> {
    let schema = format!("bench_cutover_{n}_{}", std::process::id());
    let cfg = admin.with_database(Some(&schema));
    println!("== {n} tables × {} rows in {schema} ==", opts.rows);
    let t0 = Instant::now();
    rt.block_on(async {
        let mut c = admin.connect_one().await?;
        c.execute(format!("DROP DATABASE IF EXISTS {}", quote::ident(&schema)).as_str())
            .await?;
        c.execute(
            format!(
                "CREATE DATABASE {} CHARACTER SET latin1",
                quote::ident(&schema)
            )
            .as_str(),
        )
        .await?;
        seed(&cfg, n, opts.rows).await
    })?;
    println!("seed: {:.1} s", t0.elapsed().as_secs_f64());
    let job = dir.join(format!("cutover_{n}.yaml"));
    std::fs::write(&job, job_yaml(&schema, n))?;
    if opts.breakdown {
        rt.block_on(async {
            let mut c = admin.connect_one().await?;
            for s in [
                "SET GLOBAL log_output = 'TABLE'",
                "SET GLOBAL long_query_time = 0",
                "SET GLOBAL log_slow_admin_statements = ON",
                "TRUNCATE TABLE mysql.slow_log",
                "SET GLOBAL slow_query_log = ON",
            ] {
                c.execute(s).await.with_context(|| s.to_string())?;
            }
            anyhow::Ok(())
        })?;
    }

    let clock = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicU64::new(0));
    let w = rt.spawn(writer(
        cfg.clone(),
        n,
        opts.rows,
        opts.writer_every,
        clock,
        stop.clone(),
        ready.clone(),
    ));
    while ready.load(Ordering::SeqCst) == 0 && !w.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let cmd = myrecode_command(
        &opts.bin,
        &[
            "run",
            job.to_str().context("temp path is not UTF-8")?,
            "--execute",
        ],
        &cfg.url_with_secret(),
    );
    let ran = run_child(cmd, &dir.join(format!("run_{n}.log")), clock);
    // The application goes on a little on the new tables.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let writer = rt.block_on(w)??;
    let (wall, code, lines) = ran?;
    if opts.breakdown {
        rt.block_on(async {
            admin
                .connect_one()
                .await?
                .execute("SET GLOBAL slow_query_log = OFF")
                .await?;
            anyhow::Ok(())
        })?;
    }
    let secret = admin.password().unwrap_or_default().to_string();
    let mask = |l: &str| {
        if secret.is_empty() {
            l.to_string()
        } else {
            l.replace(&secret, "***")
        }
    };
    let cut = lines.iter().find(|(_, l)| l.starts_with("cut-over: "));
    if code > 1 || cut.is_none() {
        for (_, l) in lines.iter().skip(lines.len().saturating_sub(15)) {
            println!("  | {}", mask(l));
        }
        bail!("myrecode exited {code} without the cut-over line (its output above)");
    }
    let (cut_at, cut_line) = cut.expect("checked above");
    let pause = parse_pause(cut_line);
    // The locked window ended just before the line was printed: the second around its middle.
    let middle = cut_at.saturating_sub(pause.unwrap_or_default() / 2);
    let (lo, hi) = (
        middle.saturating_sub(Duration::from_millis(500)),
        middle + Duration::from_millis(500),
    );
    let around: Vec<Duration> = writer
        .stmts
        .iter()
        .filter(|s| s.start < hi && s.start + s.took > lo)
        .map(|s| s.took)
        .collect();
    let checked = rt.block_on(check(&cfg, n, opts.rows, &writer))?;
    let f = RunFigures {
        tables: n,
        pause,
        wall,
        code,
        writer,
        around,
        checked,
    };
    let all: Vec<Duration> = f.writer.stmts.iter().map(|s| s.took).collect();
    println!(
        "run: {:.1} s, exit {}; cut-over line at {:.2} s (bench clock)",
        f.wall.as_secs_f64(),
        f.code,
        cut_at.as_secs_f64()
    );
    println!("  | {}", mask(cut_line));
    println!(
        "writer: {} statements, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; in the second around the cut-over {} statements, p99 {:.1} ms, max {:.1} ms",
        all.len(),
        ms(quantile(&all, 0.5)),
        ms(quantile(&all, 0.99)),
        ms(quantile(&all, 1.0)),
        f.around.len(),
        ms(quantile(&f.around, 0.99)),
        ms(quantile(&f.around, 1.0)),
    );
    println!(
        "writer: switched to UTF-8 at {}; {} retried, {} failed",
        f.writer
            .switched_at
            .map(|d| format!("{:.2} s", d.as_secs_f64()))
            .unwrap_or_else(|| "never (no swap seen)".into()),
        f.writer.retried,
        f.writer.failed
    );
    for e in &f.writer.first_retries {
        println!("  writer retried after: {e}");
    }
    for e in &f.writer.first_errors {
        println!("  writer error: {e}");
    }
    println!(
        "check: {} rows of {n} tables hold their seed or the writer's last write; every text column utf8mb4",
        f.checked
    );
    if opts.breakdown {
        println!("breakdown of the locked window (mysql.slow_log):");
        for l in rt.block_on(breakdown(admin, &schema))? {
            println!("  {l}");
        }
    }
    if f.writer.failed > 0 {
        bail!("{} of the writer's statements failed", f.writer.failed);
    }
    if opts.url.is_some() {
        rt.block_on(async {
            admin
                .connect_one()
                .await?
                .execute(format!("DROP DATABASE IF EXISTS {}", quote::ident(&schema)).as_str())
                .await?;
            anyhow::Ok(())
        })?;
    }
    println!();
    Ok(f)
}

/// Milliseconds, for printing.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Starts or borrows the server, runs every table count and prints the summary and targets.
fn main() -> Result<()> {
    let opts = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (server, admin) = match &opts.url {
        Some(url) => {
            let cfg = ConnectionConfig::from_url(url)?
                .or_env_password()
                .with_database(None);
            (None, cfg)
        }
        None => {
            let s = ThrowawayServer::start()?;
            let admin = s.admin().clone();
            (Some(s), admin)
        }
    };
    let version: String = rt.block_on(async {
        let mut c = admin.connect_one().await?;
        let v: String = sqlx::query_scalar("SELECT VERSION()")
            .fetch_one(&mut c)
            .await?;
        anyhow::Ok(v)
    })?;
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
    let where_ = match &server {
        Some(s) => s.description().to_string(),
        None => admin.to_string(),
    };
    println!("server:  {version} ({where_})");
    println!("myrecode: {}", opts.bin.display());
    println!(
        "writer:  one statement every {} ms, round-robin over the tables (3 updates : 1 insert){}\n",
        opts.writer_every.as_millis(),
        if opts.breakdown {
            "; --breakdown: every statement logged to mysql.slow_log"
        } else {
            ""
        }
    );
    let dir = tempfile::tempdir()?;
    let mut figures = Vec::new();
    for &n in &opts.tables {
        figures.push(bench_one(&rt, &opts, &admin, n, dir.path())?);
    }

    println!("| tables | rows each | pause (cut-over line) | run | writer statements | p50 | p99 | max | p99 in the second around the cut-over | statements in it |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for f in &figures {
        let all: Vec<Duration> = f.writer.stmts.iter().map(|s| s.took).collect();
        println!(
            "| {} | {} | {} | {:.1} s | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
            f.tables,
            opts.rows,
            f.pause
                .map(|p| format!("{:.1} ms", ms(p)))
                .unwrap_or_else(|| "?".into()),
            f.wall.as_secs_f64(),
            all.len(),
            ms(quantile(&all, 0.5)),
            ms(quantile(&all, 0.99)),
            ms(quantile(&all, 1.0)),
            ms(quantile(&f.around, 0.99)),
            f.around.len()
        );
    }
    println!("\ntargets (issue #15): 30 tables within 1 s pause; writer p99 within 0.5 s");
    for f in &figures {
        let all: Vec<Duration> = f.writer.stmts.iter().map(|s| s.took).collect();
        let p99 = quantile(&all, 0.99);
        let around = quantile(&f.around, 0.99);
        let pause = f.pause.unwrap_or(Duration::MAX);
        println!(
            "  {} tables: pause {} ({}), writer p99 {:.1} ms and {:.1} ms around the cut-over ({})",
            f.tables,
            f.pause
                .map(|p| format!("{:.1} ms", ms(p)))
                .unwrap_or_else(|| "?".into()),
            if pause <= TARGET_PAUSE {
                "within 1 s"
            } else {
                "OVER 1 s"
            },
            ms(p99),
            ms(around),
            if p99.max(around) <= TARGET_P99 {
                "within 0.5 s"
            } else {
                "OVER 0.5 s"
            }
        );
    }
    Ok(())
}

//! `myrecode demo`: the whole flow on sample legacy databases, on a throwaway server or a scratch schema.
//!
//! inventory → scan → plan → run → verify, printing each step and a before/after sample.

use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::db::throwaway::ThrowawayServer;
use crate::engine::events::Lines;
use crate::engine::runner::{self, RunOptions};
use crate::engine::verify;
use crate::inventory::{self, Scope};
use crate::job::model::Job;
use crate::report;
use crate::scan::model::ScanReport;
use crate::scan::read::{self as scan, Options, Silent};
use anyhow::{anyhow, Context, Result};
use sqlx::{Executor, MySqlConnection, Row};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The sample legacy databases the demo loads: (name, schema SQL, data SQL).
pub const SAMPLES: &[(&str, &str, &str)] = &[
    (
        "a Russian forum on latin1 (cp1251, KOI8-R, CP866, ISO-8859-5 row by row)",
        include_str!("../migrations-examples/russian_forum/schema.sql"),
        include_str!("../migrations-examples/russian_forum/data.sql"),
    ),
    (
        "a half-migrated shop (utf8mb4 mojibake, double-encoded UTF-8, ASCII SKUs; not yet migrated: \
         photos in a latin1 TEXT column, a COMPACT index that overflows under utf8mb4)",
        include_str!("../migrations-examples/half_migrated_shop/schema.sql"),
        include_str!("../migrations-examples/half_migrated_shop/data.sql"),
    ),
    (
        "a Vietnamese catalogue in TCVN3 on latin1 (names, descriptions, addresses; ASCII SKUs)",
        include_str!("../migrations-examples/vietnamese_catalogue/schema.sql"),
        include_str!("../migrations-examples/vietnamese_catalogue/data.sql"),
    ),
];

/// Splits one of our sample SQL files into statements (no `;` at a line end inside literals in them).
pub fn statements(sql: &str) -> Vec<String> {
    let without_comments: String = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    without_comments
        .split(";\n")
        .map(|s| s.trim().trim_end_matches(';').trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Runs the demo against `url`, or a throwaway server when `url` is `None`; prints as it goes.
pub async fn run(url: Option<ConnectionConfig>) -> Result<()> {
    let server;
    let admin = match url {
        Some(cfg) => cfg,
        None => {
            println!("Starting a throwaway server (no --url given)...");
            server = tokio::task::spawn_blocking(ThrowawayServer::start)
                .await
                .context("server start-up task failed")??;
            println!("Server: {}", server.description());
            server.admin().clone()
        }
    };
    let schema = format!("myrecode_demo_{}", std::process::id());
    let mut conn = admin.connect_one().await?;
    conn.execute(
        format!(
            "CREATE DATABASE {} CHARACTER SET latin1",
            quote::ident(&schema)
        )
        .as_str(),
    )
    .await
    .context("cannot create the demo's scratch schema")?;
    let result = demo_in(&admin, &schema).await;
    conn.execute(format!("DROP DATABASE IF EXISTS {}", quote::ident(&schema)).as_str())
        .await
        .ok();
    result
}

/// `(id, text)` rows of a demo table, as an application reading it would see them.
async fn text_rows(conn: &mut MySqlConnection, sql: &str) -> Result<Vec<(i64, String)>> {
    let rows = sqlx::query(sql).fetch_all(conn).await?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<i32, _>(0) as i64, r.get::<String, _>(1)))
        .collect())
}

/// Prints a before/after table of `(id, text)` rows.
fn print_before_after(before: &[(i64, String)], after: &[(i64, String)]) {
    for ((id, b), (_, a)) in before.iter().zip(after) {
        println!("  {id:>3}  {b:<60}  ->  {a}");
    }
}

const PRODUCTS: &str = "SELECT id, title FROM products ORDER BY id";
const SAN_PHAM: &str = "SELECT id, name FROM san_pham ORDER BY id LIMIT 6";

/// Each photo's key, MIME type, length and MD5, to show the copy left the bytes alone.
async fn image_digests(conn: &mut MySqlConnection) -> Result<Vec<(i64, String, i64, String)>> {
    let rows =
        sqlx::query("SELECT id, mime, LENGTH(data), MD5(data) FROM product_images ORDER BY id")
            .fetch_all(conn)
            .await?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                r.get::<i32, _>(0) as i64,
                r.get::<String, _>(1),
                r.get::<i64, _>(2),
                r.get::<String, _>(3),
            )
        })
        .collect())
}

async fn comment_rows(conn: &mut MySqlConnection) -> Result<Vec<(i64, Vec<u8>)>> {
    let rows = sqlx::query("SELECT seq, CAST(body AS BINARY) FROM comments ORDER BY seq")
        .fetch_all(conn)
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<i32, _>(0) as i64, r.get::<Vec<u8>, _>(1)))
        .collect())
}

/// Loads the samples into `schema`, then inventories, scans, plans, runs and verifies them.
async fn demo_in(admin: &ConnectionConfig, schema: &str) -> Result<()> {
    let cfg = admin.with_database(Some(schema));
    let mut conn = cfg.connect_one().await?;
    load_samples(&mut conn, schema).await?;

    println!(
        "\n== 1. inventory: what text lives where, and what utf8mb4 would do to the indexes =="
    );
    let scope = Scope {
        schemas: vec![schema.to_string()],
        tables: vec![],
    };
    let inv = inventory::take(&mut conn, &scope).await?;
    print!("{}", report::inventory::to_text(&inv));

    println!("\n== 2. scan: what every value really is (read-only) ==");
    let opts = Options {
        sample: None,
        batch_size: 500,
        pause: Duration::ZERO,
    };
    let scan_report = scan::scan(&mut conn, &inv, &opts, &Silent).await?;
    print!("{}", report::scan::to_text(&scan_report));

    println!("\n== 3. plan: the job a DBA reviews ==");
    // The job's file stays until the demo is over.
    let (job, _job_dir) = plan_job(&scan_report, schema)?;

    let before = Samples::read(&mut conn).await?;
    println!(
        "\n== 4. run: in place where the type holds UTF-8, online copy where it must change =="
    );
    run_job(&cfg, &job).await?;

    println!("\n== 5. verify: in place, every changed value against its backup; copied tables, every row against the kept original ==");
    verify_job(&mut conn, schema, &scope, &job).await?;

    print_before_after_samples(&mut conn, &before).await?;
    print_left_as_is(&scan_report);
    Ok(())
}

/// Loads every sample database into `schema` and refreshes the tables' statistics.
async fn load_samples(conn: &mut MySqlConnection, schema: &str) -> Result<()> {
    for (what, ddl, data) in SAMPLES {
        println!("\nLoading {what} into `{schema}`...");
        for stmt in statements(ddl).into_iter().chain(statements(data)) {
            conn.execute(stmt.as_str())
                .await
                .with_context(|| format!("loading sample: {stmt}"))?;
        }
    }
    conn.execute(
        "ANALYZE TABLE users, comments, visit_log, products, categories, product_images, danh_muc, san_pham, cua_hang",
    )
    .await
    .ok();
    Ok(())
}

/// Writes, prints and loads the job the scan plans (its file in the returned directory).
fn plan_job(scan_report: &ScanReport, schema: &str) -> Result<(Job, tempfile::TempDir)> {
    let yaml = crate::job::plan::generate(scan_report, Some(schema), "scan.json")?;
    let dir = tempfile::tempdir()?;
    let job_path = dir.path().join("demo-job.yaml");
    std::fs::write(&job_path, &yaml)?;
    // The job without its comments, except the ones that say why a table or column is left out.
    for line in yaml.lines().filter(|l| {
        let t = l.trim_start();
        !t.is_empty()
            && (!t.starts_with('#') || t.contains("not in the job:") || t.contains("left out"))
    }) {
        println!("  {line}");
    }
    let mut job = runner::load_job(&job_path)?;
    // A generated job waits for `myrecode cutover` before swapping; the demo has no one to type it.
    job.defaults.cutover = crate::job::model::Cutover::Auto;
    println!(
        "  (the demo swaps copied tables as soon as they are caught up, as with `cutover: auto`)"
    );
    Ok((job, dir))
}

/// What the demo shows before and after the run.
struct Samples {
    /// `products.title`.
    products: Vec<(i64, String)>,
    /// `san_pham.name`.
    catalogue: Vec<(i64, String)>,
    /// `comments.body`'s bytes.
    comments: Vec<(i64, Vec<u8>)>,
    /// `product_images`' digests.
    images: Vec<(i64, String, i64, String)>,
}

impl Samples {
    /// Reads the samples as they are now.
    async fn read(conn: &mut MySqlConnection) -> Result<Samples> {
        Ok(Samples {
            products: text_rows(conn, PRODUCTS).await?,
            catalogue: text_rows(conn, SAN_PHAM).await?,
            comments: comment_rows(conn).await?,
            images: image_digests(conn).await?,
        })
    }
}

/// Runs the job for real and prints each table's counts.
async fn run_job(cfg: &ConnectionConfig, job: &Job) -> Result<()> {
    let opts = RunOptions {
        execute: true,
        job_id: "demo".into(),
        retry_for: Duration::from_secs(30),
    };
    let runner::Outcome::Ran(summaries) =
        runner::run(cfg, job, &opts, &AtomicBool::new(false), &Lines).await?
    else {
        return Err(anyhow!("the demo run did not execute"));
    };
    for s in &summaries {
        println!(
            "  {}: {} rows read, {} values recoded, {} quarantined",
            s.table, s.state.rows_read, s.state.rows_changed, s.state.rows_quarantined
        );
    }
    Ok(())
}

/// Verifies the run's in-place values and copies, and prints the findings.
async fn verify_job(
    conn: &mut MySqlConnection,
    schema: &str,
    scope: &Scope,
    job: &Job,
) -> Result<()> {
    let tables = inventory::take(conn, scope).await?.tables;
    let f = verify::verify(conn, schema, "demo", &tables).await?;
    println!("  verified {} value(s); {} error(s)", f.ok, f.errors.len());
    for (table, c) in verify::verify_copies(conn, job, "demo").await? {
        print!("  {}", verify::describe_copy_findings(&table, &c));
    }
    Ok(())
}

/// Prints each sample before and after the run; an error if the images' bytes changed.
async fn print_before_after_samples(conn: &mut MySqlConnection, before: &Samples) -> Result<()> {
    println!("\n== before / after (products.title, repaired in place) ==");
    print_before_after(&before.products, &text_rows(conn, PRODUCTS).await?);
    println!("\n== before / after (san_pham.name: TCVN3 read as latin1, now utf8mb4 text) ==");
    print_before_after(&before.catalogue, &text_rows(conn, SAN_PHAM).await?);
    println!("\n== before / after (comments.body: latin1 bytes, now utf8mb4 text) ==");
    let after = sqlx::query("SELECT seq, body FROM comments ORDER BY seq")
        .fetch_all(&mut *conn)
        .await?;
    let after: Vec<(i64, String)> = after
        .iter()
        .map(|r| (r.get::<i32, _>(0) as i64, r.get::<String, _>(1)))
        .collect();
    for ((id, b), (_, a)) in before.comments.iter().zip(&after) {
        println!(
            "  {id:>3}  {:<60}  ->  {a}",
            format!("0x{}…", hex::encode(&b[..b.len().min(12)]))
        );
    }
    println!("\n== before / after (product_images.data: PNG/JPEG bytes in a latin1 MEDIUMTEXT, left alone) ==");
    let after_images = image_digests(conn).await?;
    if after_images != before.images {
        return Err(anyhow!(
            "product_images.data changed during the run: image bytes must never be recoded"
        ));
    }
    for (id, mime, len, md5) in &after_images {
        println!("  {id:>3}  {mime:<11} {len:>4} bytes  md5 {md5}  unchanged");
    }
    Ok(())
}

/// Prints each column the scan would recode but left as it is, with why.
fn print_left_as_is(scan_report: &ScanReport) {
    for t in &scan_report.tables {
        for c in t
            .columns
            .iter()
            .filter(|c| c.strategy != crate::scan::model::Strategy::None)
        {
            if let Some(why) = &c.blocked {
                println!(
                    "\n== left as is ({}.{}: still {}) ==\n  {why}",
                    t.name,
                    c.name,
                    c.charset.as_deref().unwrap_or("binary")
                );
            }
        }
    }
}

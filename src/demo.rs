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
use crate::report;
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

async fn demo_in(admin: &ConnectionConfig, schema: &str) -> Result<()> {
    let cfg = admin.with_database(Some(schema));
    let mut conn = cfg.connect_one().await?;
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
    let yaml = crate::job::plan::generate(&scan_report, Some(schema), "scan.json")?;
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

    let before = text_rows(&mut conn, PRODUCTS).await?;
    let before_catalogue = text_rows(&mut conn, SAN_PHAM).await?;
    let before_comments = comment_rows(&mut conn).await?;
    let before_images = image_digests(&mut conn).await?;
    println!(
        "\n== 4. run: in place where the type holds UTF-8, online copy where it must change =="
    );
    let opts = RunOptions {
        execute: true,
        job_id: "demo".into(),
        retry_for: Duration::from_secs(30),
    };
    let runner::Outcome::Ran(summaries) =
        runner::run(&cfg, &job, &opts, &AtomicBool::new(false), &Lines).await?
    else {
        return Err(anyhow!("the demo run did not execute"));
    };
    for s in &summaries {
        println!(
            "  {}: {} rows read, {} values recoded, {} quarantined",
            s.table, s.state.rows_read, s.state.rows_changed, s.state.rows_quarantined
        );
    }

    println!("\n== 5. verify: in place, every changed value against its backup; copied tables, every row against the kept original ==");
    let tables = inventory::take(&mut conn, &scope).await?.tables;
    let f = verify::verify(&mut conn, schema, "demo", &tables).await?;
    println!("  verified {} value(s); {} error(s)", f.ok, f.errors.len());
    for (table, c) in runner::verify_copies(&mut conn, &job, "demo").await? {
        print!("  {}", runner::describe_copy_findings(&table, &c));
    }

    println!("\n== before / after (products.title, repaired in place) ==");
    print_before_after(&before, &text_rows(&mut conn, PRODUCTS).await?);
    println!("\n== before / after (san_pham.name: TCVN3 read as latin1, now utf8mb4 text) ==");
    print_before_after(&before_catalogue, &text_rows(&mut conn, SAN_PHAM).await?);
    println!("\n== before / after (comments.body: latin1 bytes, now utf8mb4 text) ==");
    let after = sqlx::query("SELECT seq, body FROM comments ORDER BY seq")
        .fetch_all(&mut conn)
        .await?;
    let after: Vec<(i64, String)> = after
        .iter()
        .map(|r| (r.get::<i32, _>(0) as i64, r.get::<String, _>(1)))
        .collect();
    for ((id, b), (_, a)) in before_comments.iter().zip(&after) {
        println!(
            "  {id:>3}  {:<60}  ->  {a}",
            format!("0x{}…", hex::encode(&b[..b.len().min(12)]))
        );
    }
    println!("\n== before / after (product_images.data: PNG/JPEG bytes in a latin1 MEDIUMTEXT, left alone) ==");
    let after_images = image_digests(&mut conn).await?;
    if after_images != before_images {
        return Err(anyhow!(
            "product_images.data changed during the run: image bytes must never be recoded"
        ));
    }
    for (id, mime, len, md5) in &after_images {
        println!("  {id:>3}  {mime:<11} {len:>4} bytes  md5 {md5}  unchanged");
    }
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
    Ok(())
}

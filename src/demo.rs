//! `myrecode demo`: the whole flow on a sample legacy database, on a throwaway server or a scratch schema.

use crate::db::connect::ConnectionConfig;
use crate::db::quote;
use crate::db::throwaway::ThrowawayServer;
use crate::inventory::{self, Scope};
use crate::report;
use anyhow::{Context, Result};
use sqlx::Executor;

/// The sample legacy database the demo loads.
pub const SAMPLE_SCHEMA: &str = include_str!("../migrations-examples/russian_forum/schema.sql");

/// Splits one of our sample SQL files into statements (no `;` inside literals in them).
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

async fn demo_in(admin: &ConnectionConfig, schema: &str) -> Result<()> {
    let cfg = admin.with_database(Some(schema));
    let mut conn = cfg.connect_one().await?;
    println!("\nLoading the sample legacy database (a Russian forum on latin1) into `{schema}`...");
    for stmt in statements(SAMPLE_SCHEMA) {
        conn.execute(stmt.as_str())
            .await
            .with_context(|| format!("loading sample: {stmt}"))?;
    }
    println!("\n== inventory ==");
    let inv = inventory::take(
        &mut conn,
        &Scope {
            schemas: vec![schema.to_string()],
            tables: vec![],
        },
    )
    .await?;
    print!("{}", report::inventory::to_text(&inv));
    Ok(())
}

//! `fleet scan`: every selected schema of every server scanned by [`crate::scan`], servers
//! side by side and at most `concurrency` schemas at once on each, each report written
//! whole under `--out` as `scan --json` writes it; a schema whose report is already
//! complete is kept, so a killed run goes on where it stopped. The usage counters are read
//! once per server before its first scan and kept for the resumed runs.
//!
//! Everything runs on the caller's task (the scan's progress sink is not `Send`): the
//! schemas interleave at their awaits, which is all a reader bound by the server needs.

use super::file::Server;
use super::rollup::{self, Rollup, ServerInput};
use super::{pattern, snapshot, store};
use crate::db::connect::ConnectionConfig;
use crate::db::redact::redact_error;
use crate::inventory::{self, Scope};
use crate::report;
use crate::scan::read::{self, Silent};
use anyhow::Result;
use futures_util::{future, stream, StreamExt};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How the fleet is scanned.
#[derive(Debug, Clone)]
pub struct Options {
    /// How each schema is read (sample or full, batch size, pause), as `scan` takes it.
    pub scan: read::Options,
    /// The output folder.
    pub out: PathBuf,
}

/// A server of the fleet file with its connection settings, gathered before anything runs.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server as the file names it.
    pub server: Server,
    /// Where and how to connect (the password inside, never printed).
    pub config: ConnectionConfig,
}

/// What a fleet scan did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The roll-up over every complete report.
    pub rollup: Rollup,
    /// Schemas scanned by this run.
    pub scanned: usize,
    /// Schemas whose complete report an earlier run left, kept.
    pub kept: usize,
    /// Schemas (or servers) that failed, `server/schema: error`.
    pub failed: Vec<String>,
}

/// Scans the fleet; `say` receives one line per event (never a secret).
pub async fn run(targets: &[Target], opts: &Options, say: &dyn Fn(String)) -> Result<Outcome> {
    std::fs::create_dir_all(&opts.out).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the output folder {}: {e}. Fix: give --out a folder you can write",
            opts.out.display()
        )
    })?;
    let results = future::join_all(targets.iter().map(|t| server(t, opts, say))).await;
    let mut inputs = Vec::new();
    let (mut scanned, mut kept, mut failed) = (0, 0, Vec::new());
    for (t, r) in targets.iter().zip(results) {
        scanned += r.scanned;
        kept += r.kept;
        failed.extend(
            r.input
                .failed
                .iter()
                .map(|(s, e)| format!("{}/{s}: {e}", t.server.name)),
        );
        inputs.push(r.input);
    }
    Ok(Outcome {
        rollup: rollup::rollup(&inputs, env!("CARGO_PKG_VERSION")),
        scanned,
        kept,
        failed,
    })
}

struct ServerResult {
    input: ServerInput,
    scanned: usize,
    kept: usize,
}

/// One server: its schemas listed, its counters read (or the saved ones), its pending
/// schemas scanned within its limit, then every complete report read back.
async fn server(t: &Target, opts: &Options, say: &dyn Fn(String)) -> ServerResult {
    let name = &t.server.name;
    let mut input = ServerInput {
        name: name.clone(),
        usage: None,
        reports: Vec::new(),
        failed: BTreeMap::new(),
    };
    let schemas = match prepare(t, opts, say).await {
        Ok((schemas, usage)) => {
            input.usage = Some(usage);
            schemas
        }
        Err(e) => {
            say(format!("fleet scan: {name}: {}", redact_error(&e)));
            input.failed.insert("*".into(), redact_error(&e));
            return ServerResult {
                input,
                scanned: 0,
                kept: 0,
            };
        }
    };
    let (done, pending): (Vec<&String>, Vec<&String>) = schemas
        .iter()
        .partition(|s| store::complete_report(&store::report_path(&opts.out, name, s)).is_some());
    for s in &done {
        say(format!(
            "fleet scan: {name}/{s}: complete report kept from an earlier run"
        ));
    }
    let outcomes: Vec<(String, Result<()>)> =
        bounded(pending, t.server.concurrency, |s| async move {
            (s.clone(), schema(t, s, opts, say).await)
        })
        .await;
    let mut scanned = 0;
    for (s, r) in outcomes {
        match r {
            Ok(()) => scanned += 1,
            Err(e) => {
                say(format!(
                    "fleet scan: {name}/{s}: failed: {}",
                    redact_error(&e)
                ));
                input.failed.insert(s, redact_error(&e));
            }
        }
    }
    for s in &schemas {
        let path = store::report_path(&opts.out, name, s);
        if let Some(r) = store::complete_report(&path) {
            let rel = path.strip_prefix(&opts.out).unwrap_or(&path);
            input
                .reports
                .push((s.clone(), rel.display().to_string(), r));
        }
    }
    ServerResult {
        input,
        scanned,
        kept: done.len(),
    }
}

/// Lists the server's schemas the file selects, and its usage counters: the saved snapshot
/// when an earlier run took one (the scans since moved the counters), else a new one, saved
/// before any scan starts.
async fn prepare(
    t: &Target,
    opts: &Options,
    say: &dyn Fn(String),
) -> Result<(Vec<String>, super::usage::ServerUsage)> {
    let name = &t.server.name;
    let mut conn = t.config.connect_one().await?;
    let existing = inventory::read::list_schemas(&mut conn).await?;
    for p in pattern::unmatched(&t.server.schemas, &existing) {
        say(format!(
            "fleet scan: {name}: warning: `{p}` selects no schema on this server"
        ));
    }
    let schemas = pattern::select(&t.server.schemas, &existing);
    let usage_path = store::usage_path(&opts.out, name);
    if let Some(u) = store::saved_usage(&usage_path) {
        say(format!(
            "fleet scan: {name}: usage counters as read before the first run ({})",
            u.taken_at
        ));
        return Ok((schemas, u));
    }
    let version: String = sqlx::query_scalar("SELECT VERSION()")
        .fetch_one(&mut conn)
        .await?;
    let flavor = if version.to_ascii_lowercase().contains("mariadb") {
        "MariaDB"
    } else {
        "MySQL"
    };
    let u = snapshot::take(&mut conn, flavor, &schemas).await?;
    store::write_whole(&usage_path, &serde_json::to_string_pretty(&u)?)?;
    Ok((schemas, u))
}

/// Scans one schema on a connection of its own and writes its report whole.
async fn schema(t: &Target, schema: &str, opts: &Options, say: &dyn Fn(String)) -> Result<()> {
    let started = Instant::now();
    let mut conn = t.config.connect_one().await?;
    let scope = Scope {
        schemas: vec![schema.to_string()],
        tables: Vec::new(),
    };
    let inv = inventory::take(&mut conn, &scope).await?;
    let report = read::scan(&mut conn, &inv, &opts.scan, &Silent).await?;
    let path = store::report_path(&opts.out, &t.server.name, schema);
    store::write_whole(&path, &report::scan::to_json(&report))?;
    say(format!(
        "fleet scan: {}/{schema}: scanned ({} tables, {} rows) in {:.1}s",
        t.server.name,
        report.tables.len(),
        report.tables.iter().map(|x| x.rows_scanned).sum::<u64>(),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// Runs `f` over `items`, never more than `limit` at once, on the caller's task: the one
/// place a server's concurrency is enforced.
pub async fn bounded<T, R, Fut: Future<Output = R>>(
    items: impl IntoIterator<Item = T>,
    limit: usize,
    f: impl FnMut(T) -> Fut,
) -> Vec<R> {
    stream::iter(items)
        .map(f)
        .buffer_unordered(limit.max(1))
        .collect()
        .await
}

/// Where the roll-up is written: `DIR/fleet.json`, `DIR/fleet.md` and `DIR/fleet.html`.
pub fn rollup_paths(out: &Path) -> (PathBuf, PathBuf, PathBuf) {
    (
        out.join("fleet.json"),
        out.join("fleet.md"),
        out.join("fleet.html"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Duration;

    #[test]
    fn never_more_than_the_limit_at_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for limit in [1, 2, 3] {
            let (now, peak) = (Cell::new(0), Cell::new(0));
            let done = rt.block_on(bounded(0..7, limit, |i| {
                let (now, peak) = (&now, &peak);
                async move {
                    now.set(now.get() + 1);
                    peak.set(peak.get().max(now.get()));
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    now.set(now.get() - 1);
                    i
                }
            }));
            assert_eq!(done.len(), 7);
            assert_eq!(peak.get(), limit, "limit {limit}");
        }
    }
}

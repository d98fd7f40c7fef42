//! `fleet plan`: one job per schema from the reports `fleet scan` left, each the text
//! [`crate::job::plan::generate`] writes (the one job writer), and the fleet's summary: per
//! server and schema the job, the tables it recodes, the refusals with their fixes, and the
//! estimated rows, bytes and copy time. Pure: reports in, texts out.

use super::file::Server;
use super::jobs;
use super::pace;
use super::rollup::SchemaRollup;
use crate::job::choose::choose_in;
use crate::job::model::Strategy;
use crate::scan::model::{ScanReport, Strategy as ScanStrategy, TableScan};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;

/// Version of `fleet-plan.json`'s layout.
pub const PLAN_VERSION: u32 = 1;

/// What became of one schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A job was written.
    Job,
    /// Nothing to recode: no job.
    NothingToDo,
    /// Legacy text, but every table holding it is refused: no job until the fixes are made.
    Refused,
}

/// One schema's line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaPlan {
    /// The fleet file's server.
    pub server: String,
    /// The schema.
    pub schema: String,
    /// Its scan report, relative to the scan folder.
    pub report: String,
    /// What became of it.
    pub verdict: Verdict,
    /// The job file, relative to the jobs folder (`None`: no job).
    pub job: Option<String>,
    /// The single run that runs the job (what `fleet run` spawns), without a password.
    pub command: Option<String>,
    /// Tables the job recodes, `name (strategy)`.
    pub tables: Vec<String>,
    /// Tables and columns left out, `table: reason. Fix: fix`, one each.
    pub refusals: Vec<String>,
    /// The server's row estimate of the job's tables.
    pub estimated_rows: u64,
    /// Their data and index bytes, as read before the scan.
    pub bytes: u64,
    /// Seconds to recode them at the measured pace ([`pace::SOURCE`]).
    pub estimated_seconds: u64,
}

/// The whole summary (`JOBS/fleet-plan.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetPlan {
    /// Layout version.
    pub plan_version: u32,
    /// The pace the estimates use.
    pub pace: String,
    /// Schemas, servers in fleet-file order, schemas by name.
    pub schemas: Vec<SchemaPlan>,
}

/// A schema's job text (when it gets one) and its summary line. `report_name` is the
/// report's file name, which the job's header cites as `plan --report` would.
pub fn schema_plan(
    server: &Server,
    schema: &SchemaRollup,
    report: &ScanReport,
    report_name: &str,
    jobs_dir: &Path,
) -> Result<(Option<String>, SchemaPlan)> {
    let tables: Vec<&TableScan> = report
        .tables
        .iter()
        .filter(|t| t.schema == schema.name)
        .collect();
    let mut line = SchemaPlan {
        server: server.name.clone(),
        schema: schema.name.clone(),
        report: schema.report.clone(),
        verdict: Verdict::NothingToDo,
        job: None,
        command: None,
        tables: Vec::new(),
        refusals: Vec::new(),
        estimated_rows: 0,
        bytes: 0,
        estimated_seconds: 0,
    };
    for t in &tables {
        let choice = choose_in(t, &tables);
        line.refusals
            .extend(choice.out.iter().map(|r| format!("{}: {r}", t.name)));
        line.refusals.extend(
            choice
                .refused
                .iter()
                .map(|(c, r)| format!("{}.{}: {r}", t.name, c.name)),
        );
        if !choice.in_job() {
            continue;
        }
        line.tables
            .push(format!("{} ({})", t.name, choice.strategy.as_str()));
        let bytes = schema
            .tables
            .iter()
            .find(|x| x.name == t.name)
            .and_then(|x| x.bytes)
            .unwrap_or(0);
        line.estimated_rows += t.estimated_rows;
        line.bytes += bytes;
        let strategy = match choice.strategy {
            Strategy::Copy => ScanStrategy::Copy,
            Strategy::InPlace => ScanStrategy::InPlace,
        };
        line.estimated_seconds += pace::seconds(strategy, t.estimated_rows);
    }
    line.refusals.dedup();
    if line.tables.is_empty() {
        line.verdict = if line.refusals.is_empty() {
            Verdict::NothingToDo
        } else {
            Verdict::Refused
        };
        return Ok((None, line));
    }
    let text = crate::job::plan::generate(report, Some(&schema.name), report_name)?;
    let path = jobs::job_path(jobs_dir, &server.name, &schema.name);
    line.verdict = Verdict::Job;
    line.job = Some(
        path.strip_prefix(jobs_dir)
            .unwrap_or(&path)
            .display()
            .to_string(),
    );
    line.command = Some(jobs::run_command(server, &path));
    Ok((Some(text), line))
}

/// The summary as JSON.
pub fn to_json(p: &FleetPlan) -> String {
    serde_json::to_string_pretty(p).expect("the plan serializes") + "\n"
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Job => "job",
        Verdict::NothingToDo => "nothing to do",
        Verdict::Refused => "REFUSED",
    }
}

/// One line per schema, for the terminal.
pub fn to_text(p: &FleetPlan) -> String {
    let mut o = String::new();
    for s in &p.schemas {
        let _ = writeln!(
            o,
            "{}/{}: {}{}",
            s.server,
            s.schema,
            verdict_word(s.verdict),
            match &s.job {
                Some(j) => format!(
                    " {j}: {} (~{} rows, ~{}, ~{})",
                    s.tables.join(", "),
                    s.estimated_rows,
                    super::usage::human_bytes(s.bytes),
                    super::usage::human_duration(s.estimated_seconds)
                ),
                None => String::new(),
            }
        );
        for r in &s.refusals {
            let _ = writeln!(o, "  left out: {r}");
        }
    }
    let (jobs, refused, nothing) = counts(p);
    let _ = writeln!(
        o,
        "fleet plan: {jobs} job(s), {refused} schema(s) refused, {nothing} with nothing to do"
    );
    o
}

fn counts(p: &FleetPlan) -> (usize, usize, usize) {
    let n = |v| p.schemas.iter().filter(|s| s.verdict == v).count();
    (
        n(Verdict::Job),
        n(Verdict::Refused),
        n(Verdict::NothingToDo),
    )
}

/// The summary as Markdown: a table of schemas, then each job's command and refusals.
pub fn to_markdown(p: &FleetPlan) -> String {
    let mut o = String::new();
    let (jobs, refused, nothing) = counts(p);
    let rows: u64 = p.schemas.iter().map(|s| s.estimated_rows).sum();
    let bytes: u64 = p.schemas.iter().map(|s| s.bytes).sum();
    let secs: u64 = p.schemas.iter().map(|s| s.estimated_seconds).sum();
    let _ = writeln!(
        o,
        "# Fleet plan\n\n{jobs} job(s), {refused} schema(s) refused, {nothing} with nothing to do; \
         ~{rows} rows, ~{}, ~{} of recoding {}.\n",
        super::usage::human_bytes(bytes),
        super::usage::human_duration(secs),
        pace::SOURCE
    );
    let _ = writeln!(
        o,
        "| server | schema | verdict | job | tables | est. rows | bytes | est. time |\n|---|---|---|---|---|---:|---:|---:|"
    );
    for s in &p.schemas {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            md(&s.server),
            md(&s.schema),
            verdict_word(s.verdict),
            s.job.as_deref().map(md).unwrap_or_default(),
            md(&s.tables.join(", ")),
            s.estimated_rows,
            super::usage::human_bytes(s.bytes),
            super::usage::human_duration(s.estimated_seconds)
        );
    }
    for s in p
        .schemas
        .iter()
        .filter(|s| s.command.is_some() || !s.refusals.is_empty())
    {
        let _ = writeln!(o, "\n## {}/{}\n", md(&s.server), md(&s.schema));
        if let Some(c) = &s.command {
            let _ = writeln!(o, "```sh\n{c}\n```\n");
        }
        for r in &s.refusals {
            let _ = writeln!(o, "- left out: {}", md(r));
        }
    }
    o
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::rollup::{self, ServerInput};
    use std::collections::BTreeMap;

    /// A report of schema `shop`: `posts` (cp1251 in latin1: copy), `logs` (ASCII only), and
    /// `orders` (cp1251, keyless and too big to rebuild under the lock: refused).
    fn report() -> ScanReport {
        let col = |name: &str, strategy: &str, labels: &str| {
            serde_json::json!({
                "name": name, "column_type": "text", "charset": "latin1",
                "collation": "latin1_swedish_ci", "nullable": true, "declared_max_chars": 65535,
                "rows": 10, "nulls": 0, "empty": 0, "labels": serde_json::from_str::<serde_json::Value>(labels).unwrap(),
                "confidence": {}, "examples": {}, "undecided": [], "undecided_total": 0,
                "max_bytes_now": 10, "max_bytes_after": 20, "max_chars_after": 10,
                "source": if strategy == "none" { serde_json::Value::Null } else { "cp1251".into() },
                "target": {"column_type": "text", "charset": "utf8mb4", "collation": "utf8mb4_unicode_ci", "why": ""},
                "strategy": strategy, "fits": true, "risks": []
            })
        };
        let table = |name: &str, key: bool, strategy: &str, labels: &str, est: u64| {
            serde_json::json!({
                "schema": "shop", "name": name, "row_format": "Dynamic", "engine": "InnoDB",
                "key": if key { serde_json::json!({"index": "PRIMARY", "columns": ["id"]}) } else { serde_json::Value::Null },
                "estimated_rows": est, "rows_scanned": 10, "strategy": strategy,
                "columns": [col("body", strategy, labels)], "risks": []
            })
        };
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "tool_version": "t",
            "server": {"version": "10.11", "flavor": "MariaDB", "innodb_page_size": 16384, "default_row_format": "dynamic"},
            "mode": "full", "sample_rows": null,
            "tables": [
                table("posts", true, "copy", r#"{"cp1251": 10}"#, 216_000),
                table("logs", true, "none", r#"{"ascii": 10}"#, 10),
                table("orders", false, "copy", r#"{"cp1251": 10}"#, 5_000_000),
            ]
        }))
        .expect("the fixture is a scan report")
    }

    fn server() -> Server {
        Server {
            name: "db1".into(),
            url: Some("mysql://dba@db1:3306".into()),
            defaults_file: None,
            ask_pass: false,
            schemas: vec!["*".into()],
            concurrency: 1,
        }
    }

    fn rolled(r: &ScanReport) -> SchemaRollup {
        let input = ServerInput {
            name: "db1".into(),
            usage: None,
            reports: vec![("shop".into(), "db1/shop.json".into(), r.clone())],
            failed: BTreeMap::new(),
        };
        rollup::rollup(&[input], "v").servers[0].schemas[0].clone()
    }

    #[test]
    fn a_schema_gets_plans_own_job_and_its_refusals_are_listed_with_the_fix() {
        let r = report();
        let (text, line) =
            schema_plan(&server(), &rolled(&r), &r, "shop.json", Path::new("/jobs")).unwrap();
        assert_eq!(
            text.unwrap(),
            crate::job::plan::generate(&r, Some("shop"), "shop.json").unwrap(),
            "the job is the one `plan --report shop.json` writes"
        );
        assert_eq!(line.verdict, Verdict::Job);
        assert_eq!(line.job.as_deref(), Some("db1/shop.yaml"));
        assert_eq!(line.tables, vec!["posts (copy)"]);
        assert_eq!(line.refusals.len(), 1, "{:?}", line.refusals);
        assert!(
            line.refusals[0].starts_with("orders: ") && line.refusals[0].contains("Fix:"),
            "{:?}",
            line.refusals
        );
        assert_eq!((line.estimated_rows, line.estimated_seconds), (216_000, 2));
        assert_eq!(
            line.command.as_deref(),
            Some("myrecode run /jobs/db1/shop.yaml --url mysql://dba@db1:3306 --execute")
        );
    }

    #[test]
    fn refused_and_idle_schemas_get_no_job() {
        let mut r = report();
        r.tables.retain(|t| t.name != "posts");
        let (text, line) =
            schema_plan(&server(), &rolled(&r), &r, "shop.json", Path::new("/j")).unwrap();
        assert!(text.is_none());
        assert_eq!(line.verdict, Verdict::Refused);
        assert!(line.job.is_none() && line.command.is_none());
        r.tables.retain(|t| t.name == "logs");
        let (text, line) =
            schema_plan(&server(), &rolled(&r), &r, "shop.json", Path::new("/j")).unwrap();
        assert!(text.is_none());
        assert_eq!(line.verdict, Verdict::NothingToDo);
        assert!(line.refusals.is_empty());
        let p = FleetPlan {
            plan_version: PLAN_VERSION,
            pace: pace::SOURCE.into(),
            schemas: vec![line],
        };
        assert!(to_markdown(&p).contains("| db1 | shop | nothing to do |"));
        assert!(to_text(&p).contains("0 job(s), 0 schema(s) refused, 1 with nothing to do"));
    }
}

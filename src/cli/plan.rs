//! `myrecode plan`: write a commented job from a scan report, or check a job against the live schema.

use super::common::{block_on, ConnectArgs};
use super::{EXIT_ATTENTION, EXIT_OK};
use crate::job::{check, live, load, plan};
use crate::scan::model::ScanReport;
use anyhow::{anyhow, bail, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `plan`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  myrecode plan --report scan.json -o job.yaml\n  \
                  myrecode plan --check job.yaml --report scan.json --url mysql://dba@db1:3306/shop\n\n\
                  --check exits 0 when the job is valid, 1 with findings (one line each: \
                  file:line: field: problem. Fix: ...), 2 when the file cannot be read or the server cannot be reached."
)]
pub struct Args {
    /// Scan report (`myrecode scan --json FILE`) to write the job from; with --check, used for the
    /// longest values actually stored.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Where to write the job (`-` for stdout).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "check"
    )]
    output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long, requires = "output")]
    force: bool,
    /// Schema to write the job for, when the report covers several.
    #[arg(long, value_name = "SCHEMA", conflicts_with = "check")]
    schema: Option<String>,
    /// The collation every utf8mb4 target takes (e.g. utf8mb4_unicode_ci), instead of the one
    /// closest in meaning to each column's old collation.
    #[arg(long, value_name = "NAME", conflicts_with = "check")]
    collation: Option<String>,
    /// Validate this job file against the live schema instead of writing one.
    #[arg(long, value_name = "JOB")]
    check: Option<PathBuf>,
    #[command(flatten)]
    conn: ConnectArgs,
}

/// Runs `plan` (write a job) or `plan --check` (validate one).
pub fn run(args: Args) -> Result<u8> {
    match &args.check {
        Some(job) => run_check(job, args.report.as_deref(), &args.conn),
        None => run_write(&args),
    }
}

fn read_report(path: &Path) -> Result<ScanReport> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read scan report {}. Fix: write one with `myrecode scan --json {}`",
            path.display(),
            path.display()
        )
    })?;
    let report: ScanReport = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{} is not a scan report ({e}). Fix: pass the file `myrecode scan --json FILE` wrote",
            path.display()
        )
    })?;
    if report.schema_version != crate::scan::model::SCHEMA_VERSION {
        bail!(
            "{} has report layout version {}, this myrecode reads {}. Fix: scan again with this version",
            path.display(),
            report.schema_version,
            crate::scan::model::SCHEMA_VERSION
        );
    }
    Ok(report)
}

fn run_write(args: &Args) -> Result<u8> {
    let report_path = args.report.as_deref().ok_or_else(|| {
        anyhow!("nothing to do. Fix: pass --report scan.json -o job.yaml to write a job, or --check job.yaml to check one")
    })?;
    let output = args
        .output
        .as_deref()
        .ok_or_else(|| anyhow!("no output file. Fix: pass -o job.yaml (or -o - for stdout)"))?;
    let mut report = read_report(report_path)?;
    if let Some(c) = &args.collation {
        plan::with_collation(&mut report, c)?;
    }
    let name = report_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| report_path.display().to_string());
    let text = plan::generate(&report, args.schema.as_deref(), &name)?;
    if load::load_str(&text).is_err() {
        bail!("internal error: the generated job does not load back. Fix: report this with the scan report attached");
    }
    if output == Path::new("-") {
        std::io::stdout().write_all(text.as_bytes())?;
        return Ok(EXIT_OK);
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if args.force {
        open.create(true).truncate(true);
    } else {
        open.create_new(true);
    }
    let mut file = open.open(output).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow!(
                "{} already exists and may hold your edits. Fix: pass --force to overwrite it, or choose another -o file",
                output.display()
            )
        } else {
            anyhow!("cannot write {}: {e}. Fix: check the directory and permissions", output.display())
        }
    })?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "wrote {}. Next: review it, then `myrecode plan --check {} --report {}`",
        output.display(),
        output.display(),
        report_path.display()
    );
    Ok(EXIT_OK)
}

fn run_check(job_path: &Path, report: Option<&Path>, conn: &ConnectArgs) -> Result<u8> {
    let shown = job_path.display().to_string();
    let loaded = match load::load_file(job_path) {
        Ok(l) => l,
        Err(load::LoadError::Unreadable(e)) => return Err(e),
        Err(load::LoadError::Invalid(findings)) => {
            print_findings(&shown, &findings);
            return Ok(EXIT_ATTENTION);
        }
    };
    let report = report.map(read_report).transpose()?;
    if let Some(r) = &report {
        if !r.tables.iter().any(|t| t.schema == loaded.job.schema) {
            eprintln!(
                "{shown}: note: the scan report has no tables of schema '{}': checking against the declared sizes only",
                loaded.job.schema
            );
        }
    }
    let cfg = conn.resolve()?;
    let schema = loaded.job.schema.clone();
    let limit = loaded.job.defaults.keyless_max_rows;
    let (live, clients) = block_on(async {
        let mut c = cfg.connect_one().await?;
        let live = live::read(&mut c, &schema, limit).await?;
        let clients = crate::clients::read::read(&mut c, &schema).await?;
        anyhow::Ok((live, clients))
    })?;
    let mut findings = check::check_loaded(&loaded, &live, report.as_ref());
    if findings.is_empty() {
        findings = tried_on_server(&cfg, &loaded.job)?;
        for f in &mut findings {
            f.line = loaded.locator.line(&f.path);
        }
    }
    // The clients the switch would leave broken: said before the cut-over, with the fix.
    for mut f in crate::job::clients_check::uncovered(&loaded.job, &clients) {
        f.line = loaded.locator.line(&f.path);
        findings.push(f);
    }
    if findings.is_empty() {
        println!(
            "{shown}: ok: {} table(s), {} column(s) checked against schema '{schema}'",
            loaded.job.tables.len(),
            loaded
                .job
                .tables
                .iter()
                .map(|t| t.columns.len())
                .sum::<usize>()
        );
        return Ok(EXIT_OK);
    }
    print_findings(&shown, &findings);
    Ok(EXIT_ATTENTION)
}

/// Each copied table's new definition built on the server under a scratch name and dropped
/// (as the rehearsal and `run --execute` do first): what the server refuses, as findings.
fn tried_on_server(
    cfg: &crate::db::connect::ConnectionConfig,
    job: &crate::job::model::Job,
) -> Result<Vec<crate::job::finding::Finding>> {
    let cfg = cfg.with_database(Some(&job.schema));
    block_on(async {
        let mut c = cfg.connect_one().await?;
        let plans = crate::engine::plans::plans(&mut c, job).await?;
        let (ready, _) = plans.ready();
        let mut out = Vec::new();
        // What only the live rows show (rows a recoded key would make equal): the rules'
        // other refusals were reported before this is reached.
        for (table, refusals) in plans.refused().map(|r| r.tables).unwrap_or_default() {
            let i = job.tables.iter().position(|x| x.name == table).unwrap_or(0);
            out.extend(refusals.iter().map(|r| r.finding(&format!("tables[{i}]"))));
        }
        let finding = |path: String, e: anyhow::Error| {
            let text = format!("{e:#}");
            let (message, fix) = text
                .split_once(" Fix: ")
                .unwrap_or((&text, "see the message"));
            crate::job::finding::Finding::new(
                path,
                message.trim_end_matches('.'),
                fix.trim_end_matches('.'),
            )
        };
        // What the replication topology refuses (Galera, a STATEMENT binary log feeding
        // replicas, a replica out of reach), as the rehearsal would; checked first, since the
        // trials below create and drop tables, which a binary log carries to the replicas.
        let (topology, _) = crate::engine::replicas::surveyed(&mut c, &cfg, job).await?;
        let refused = crate::engine::replicas::topology::refusals(&topology);
        for r in &refused {
            out.push(finding(
                "defaults.replicas".into(),
                anyhow::anyhow!(r.clone()),
            ));
        }
        if !refused.is_empty() {
            return anyhow::Ok(out);
        }
        for (table, e) in crate::engine::copy::trial_job(&mut c, &ready).await {
            let path = match table {
                Some(t) => format!(
                    "tables[{}].columns",
                    job.tables.iter().position(|x| x.name == t).unwrap_or(0)
                ),
                None => "schema".into(),
            };
            out.push(finding(path, e));
        }
        anyhow::Ok(out)
    })
}

fn print_findings(file: &str, findings: &[crate::job::finding::Finding]) {
    for f in findings {
        println!("{}", f.render(file));
    }
    eprintln!(
        "{file}: {} problem(s); the job is not valid until they are fixed",
        findings.len()
    );
}

//! `fleet status`: one line per job from its [`JobStatus`] (read by the single job's
//! reader), and the fleet's roll-up line. Pure.

use crate::status::{self, JobStatus, Phase};
use serde::Serialize;
use std::fmt::Write;

/// Version of `fleet status --json`'s layout.
pub const OVERVIEW_VERSION: u32 = 1;

/// One job's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobLine {
    /// Its server.
    pub server: String,
    /// Its schema.
    pub schema: String,
    /// The job file.
    pub job: String,
    /// `done`, `not started`, `waits for cutover`, `waiting: <why>`, a table phase
    /// (`copying`, `checking`, `replaying`, `running`), or `unreadable`.
    pub phase: String,
    /// Whether every table is finished.
    pub finished: bool,
    /// Rows done over its tables.
    pub rows_done: u64,
    /// The server's estimate of its tables' rows.
    pub rows_total: u64,
    /// Seconds to read the rows left at the pace of its moving table.
    pub eta_seconds: Option<u64>,
    /// The largest replica lag its run last sampled, in milliseconds.
    pub replica_lag_ms: Option<u64>,
    /// Sessions of the application still talking the legacy charset (where the job has a bridge).
    pub legacy_sessions: Option<i64>,
    /// Why it could not be read.
    pub error: Option<String>,
}

/// The fleet's lines and roll-up (`fleet status --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    /// Layout version.
    pub overview_version: u32,
    /// One line per job.
    pub jobs: Vec<JobLine>,
    /// Jobs finished.
    pub done: usize,
    /// Jobs started and not finished.
    pub underway: usize,
    /// Jobs not started.
    pub not_started: usize,
    /// Jobs whose state could not be read.
    pub unreadable: usize,
    /// Rows done over every job.
    pub rows_done: u64,
    /// Rows estimated over every job.
    pub rows_total: u64,
    /// The longest ETA of the jobs moving now.
    pub eta_seconds: Option<u64>,
    /// The largest replica lag.
    pub replica_lag_ms: Option<u64>,
    /// Legacy sessions over every job that counts them.
    pub legacy_sessions: Option<i64>,
    /// Whether every job is finished.
    pub all_done: bool,
}

/// The line of job `job` (on `server`, of `schema`) from its status, or from why it could
/// not be read.
pub fn line(server: &str, job: &str, schema: &str, s: Result<&JobStatus, String>) -> JobLine {
    let mut l = JobLine {
        server: server.to_string(),
        schema: schema.to_string(),
        job: job.to_string(),
        phase: "unreadable".into(),
        finished: false,
        rows_done: 0,
        rows_total: 0,
        eta_seconds: None,
        replica_lag_ms: None,
        legacy_sessions: None,
        error: None,
    };
    let s = match s {
        Ok(s) => s,
        Err(e) => {
            l.error = Some(e);
            return l;
        }
    };
    l.finished = s.finished;
    l.rows_done = s.tables.iter().map(|t| t.rows_done).sum();
    l.rows_total = s
        .tables
        .iter()
        .map(|t| t.rows_estimated.unwrap_or(0).max(t.rows_done))
        .sum();
    let pace = s
        .tables
        .iter()
        .filter_map(|t| t.rows_per_sec)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    let left: u64 = s
        .tables
        .iter()
        .filter(|t| t.phase != Phase::Done)
        .map(|t| t.rows_estimated.unwrap_or(0).saturating_sub(t.rows_done))
        .sum();
    l.eta_seconds = (!s.finished)
        .then(|| status::eta(0, Some(left), pace))
        .flatten();
    l.replica_lag_ms = s.replicas.iter().filter_map(|r| r.lag_ms).max();
    l.legacy_sessions = s.bridge.as_ref().map(|b| b.legacy_sessions);
    l.phase = if s.finished {
        "done".into()
    } else if !s.started {
        "not started".into()
    } else if let Some(w) = &s.waiting {
        format!("waiting: {}", w.reason)
    } else if s.waits_for_cutover {
        "waits for cutover".into()
    } else {
        s.tables
            .iter()
            .find(|t| t.phase != Phase::Done && t.phase != Phase::NotStarted)
            .or_else(|| s.tables.iter().find(|t| t.phase != Phase::Done))
            .map_or("running", |t| t.phase.as_str())
            .to_string()
    };
    l
}

/// The roll-up over `jobs`.
pub fn overview(jobs: Vec<JobLine>) -> Overview {
    let count = |f: &dyn Fn(&JobLine) -> bool| jobs.iter().filter(|j| f(j)).count();
    let done = count(&|j| j.finished);
    let unreadable = count(&|j| j.error.is_some());
    let not_started = count(&|j| j.phase == "not started");
    let sessions: Vec<i64> = jobs.iter().filter_map(|j| j.legacy_sessions).collect();
    Overview {
        overview_version: OVERVIEW_VERSION,
        done,
        underway: jobs.len() - done - unreadable - not_started,
        not_started,
        unreadable,
        rows_done: jobs.iter().map(|j| j.rows_done).sum(),
        rows_total: jobs.iter().map(|j| j.rows_total).sum(),
        eta_seconds: jobs.iter().filter_map(|j| j.eta_seconds).max(),
        replica_lag_ms: jobs.iter().filter_map(|j| j.replica_lag_ms).max(),
        legacy_sessions: (!sessions.is_empty()).then(|| sessions.iter().sum()),
        all_done: done == jobs.len(),
        jobs,
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>, unit: &str) -> String {
    v.map_or("-".into(), |v| format!("{v}{unit}"))
}

/// One line per job, then the roll-up line.
pub fn to_text(o: &Overview) -> String {
    let mut out = String::new();
    for j in &o.jobs {
        let _ = writeln!(
            out,
            "{}/{}: {}; rows {}/{}; ETA {}; replica lag {}; legacy sessions {}{}",
            j.server,
            j.schema,
            j.phase,
            j.rows_done,
            j.rows_total,
            opt(j.eta_seconds, "s"),
            opt(j.replica_lag_ms, " ms"),
            opt(j.legacy_sessions, ""),
            j.error
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "fleet: {} job(s): {} done, {} underway, {} not started, {} unreadable; rows {}/{}; ETA {}; replica lag {}; legacy sessions {}",
        o.jobs.len(),
        o.done,
        o.underway,
        o.not_started,
        o.unreadable,
        o.rows_done,
        o.rows_total,
        opt(o.eta_seconds, "s"),
        opt(o.replica_lag_ms, " ms"),
        opt(o.legacy_sessions, "")
    );
    out
}

/// The overview as JSON.
pub fn to_json(o: &Overview) -> String {
    serde_json::to_string_pretty(o).expect("the overview serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{build, Checkpoint, Facts, ReplicaStatus};
    use std::collections::HashMap;

    fn job() -> crate::job::model::Job {
        serde_yaml::from_str(
            "version: 1\nschema: shop\ndefaults:\n  cutover: auto\ntables:\n\
             - name: posts\n  strategy: copy\n  columns:\n  - name: body\n    source: auto\n    target: TEXT CHARACTER SET utf8mb4\n\
             - name: users\n  strategy: copy\n  columns:\n  - name: name\n    source: auto\n    target: TEXT CHARACTER SET utf8mb4\n",
        )
        .unwrap()
    }

    fn cp(table: &str, phase: &str, done: bool, rows: u64, pace: Option<f64>) -> Checkpoint {
        Checkpoint {
            table: table.into(),
            done,
            phase: phase.into(),
            rows_read: rows,
            rows_per_sec: pace,
            idle_secs: Some(0.5),
            ..Checkpoint::default()
        }
    }

    #[test]
    fn a_job_line_sums_its_tables_and_the_fleet_line_its_jobs() {
        let facts = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("posts", "done", true, 1000, None),
                cp("users", "copying", false, 100, Some(50.0)),
            ],
            estimates: HashMap::from([("posts".into(), 1000), ("users".into(), 600)]),
            replicas: vec![ReplicaStatus {
                replica: "r:1".into(),
                state: "replicating".into(),
                lag_ms: Some(120),
                ..ReplicaStatus::default()
            }],
            ..Facts::default()
        };
        let running = build(&job(), "shop", &facts);
        let a = line("db1", "/j/db1/shop.yaml", "shop", Ok(&running));
        assert_eq!(a.phase, running.tables[1].phase.as_str());
        assert_eq!((a.rows_done, a.rows_total), (1100, 1600));
        assert_eq!(a.eta_seconds, Some(10), "500 rows left at 50 rows/s");
        assert_eq!(a.replica_lag_ms, Some(120));
        let idle = build(&job(), "shop", &Facts::default());
        let b = line("db2", "/j/db2/shop.yaml", "shop", Ok(&idle));
        assert_eq!(b.phase, "not started");
        let c = line(
            "db3",
            "/j/db3/shop.yaml",
            "shop",
            Err("access denied".into()),
        );
        let o = overview(vec![a, b, c]);
        assert_eq!(
            (o.done, o.underway, o.not_started, o.unreadable),
            (0, 1, 1, 1)
        );
        assert!(!o.all_done);
        assert_eq!(o.eta_seconds, Some(10));
        let text = to_text(&o);
        assert!(text.contains("db3/shop: unreadable; rows 0/0; ETA -; replica lag -; legacy sessions - (access denied)"), "{text}");
        assert!(text.ends_with("fleet: 3 job(s): 0 done, 1 underway, 1 not started, 1 unreadable; rows 1100/1600; ETA 10s; replica lag 120 ms; legacy sessions -\n"), "{text}");
        let done = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("posts", "done", true, 1000, None),
                cp("users", "done", true, 600, None),
            ],
            ..Facts::default()
        };
        let finished = build(&job(), "shop", &done);
        let o = overview(vec![line("db1", "j", "shop", Ok(&finished))]);
        assert!(o.all_done && o.jobs[0].phase == "done" && o.eta_seconds.is_none());
    }
}

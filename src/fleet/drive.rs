//! `fleet run`'s waves driven: in each wave the jobs start in order, never more than their
//! server's `concurrency` at once; a job whose own state says it is finished is not run
//! again; a job that fails or is refused stops its wave (the jobs already running finish,
//! no other starts) and every later wave. How a job is started and watched is the
//! [`Launcher`]'s (a child process per job in `super::launch`), so this logic is tested
//! without a server.

use super::file::Fleet;
use super::jobs::JobRef;
use super::waves::Wave;
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

/// Version of the `--json` document's layout.
pub const RUN_VERSION: u32 = 1;

/// Where a job ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Dry run: it would be run.
    WouldRun,
    /// Its own state said finished before this fleet run: not run again.
    AlreadyDone,
    /// Run by this fleet run, and finished.
    Done,
    /// Its run stopped with an error, or ended unfinished.
    Failed,
    /// Its run refused it before writing anything.
    Refused,
    /// Not started: its wave, or an earlier one, was stopped.
    NotRun,
}

/// How a started job ended, as the launcher tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// [`State::Done`], [`State::Failed`] or [`State::Refused`].
    pub state: State,
    /// The run's exit code (`None`: killed by a signal).
    pub exit_code: Option<i32>,
    /// Why it failed or was refused, one line.
    pub reason: Option<String>,
    /// Finished with something to look at (the run's exit 1: undecided values).
    pub attention: bool,
}

/// Starts and watches the jobs.
pub trait Launcher {
    /// Whether the job's own state says it is finished (read, never written).
    fn finished(&mut self, job: &JobRef) -> Result<bool>;
    /// Starts the job's run.
    fn start(&mut self, job: &JobRef) -> Result<()>;
    /// How a started job ended, once it has.
    fn ended(&mut self, job: &JobRef) -> Option<Ended>;
    /// Waits a moment before looking again.
    fn wait(&mut self);
}

/// One job's line of the result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobResult {
    /// Its server.
    pub server: String,
    /// Its schema.
    pub schema: String,
    /// The job file.
    pub job: String,
    /// Where it stands.
    pub state: State,
    /// The run's exit code, when this fleet run ran it.
    pub exit_code: Option<i32>,
    /// Why it failed, was refused or was not run.
    pub reason: Option<String>,
    /// Finished with something to look at (undecided values: `myrecode review`).
    pub attention: bool,
}

/// One wave's part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaveResult {
    /// Its name.
    pub name: String,
    /// Its jobs.
    pub jobs: Vec<JobResult>,
}

/// The whole fleet run (`--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetRun {
    /// Layout version.
    pub fleet_run_version: u32,
    /// Whether jobs were run (`false`: a dry run).
    pub execute: bool,
    /// The waves, in order.
    pub waves: Vec<WaveResult>,
    /// Jobs per state.
    pub counts: BTreeMap<String, usize>,
    /// 0 every job done (or, dry, runnable), 1 some failed, refused or not run.
    pub exit_code: u8,
}

fn line(job: &JobRef, state: State, reason: Option<String>) -> JobResult {
    JobResult {
        server: job.server.clone(),
        schema: job.schema.clone(),
        job: job.path.display().to_string(),
        state,
        exit_code: None,
        reason,
        attention: false,
    }
}

/// Runs (or, without `execute`, only looks at) every wave; `say` gets one line per event.
pub fn drive(
    fleet: &Fleet,
    jobs: &[JobRef],
    waves: &[Wave],
    execute: bool,
    l: &mut dyn Launcher,
    say: &dyn Fn(String),
) -> FleetRun {
    let limit = |server: &str| {
        fleet
            .servers
            .iter()
            .find(|s| s.name == server)
            .map_or(1, |s| s.concurrency)
    };
    let mut stopped_by: Option<String> = None;
    let mut out = Vec::new();
    for w in waves {
        let mut results: Vec<Option<JobResult>> = vec![None; w.jobs.len()];
        if let Some(why) = &stopped_by {
            say(format!("wave {}: not started ({why})", w.name));
            for (slot, &i) in results.iter_mut().zip(&w.jobs) {
                *slot = Some(line(&jobs[i], State::NotRun, Some(why.clone())));
            }
        } else {
            say(format!("wave {}: {} job(s)", w.name, w.jobs.len()));
            if let Some(failed) = wave(w, jobs, execute, l, &limit, &mut results, say) {
                let why = format!("wave '{}' stopped: {failed}", w.name);
                for (slot, &i) in results.iter_mut().zip(&w.jobs) {
                    if slot.is_none() {
                        *slot = Some(line(&jobs[i], State::NotRun, Some(why.clone())));
                    }
                }
                stopped_by = Some(why);
            }
        }
        out.push(WaveResult {
            name: w.name.clone(),
            jobs: results
                .into_iter()
                .map(|r| r.expect("every job placed"))
                .collect(),
        });
    }
    finish(out, execute)
}

/// One wave; the job that stopped it, if one did.
fn wave(
    w: &Wave,
    jobs: &[JobRef],
    execute: bool,
    l: &mut dyn Launcher,
    limit: &dyn Fn(&str) -> usize,
    results: &mut [Option<JobResult>],
    say: &dyn Fn(String),
) -> Option<String> {
    let mut pending: Vec<usize> = (0..w.jobs.len()).collect();
    let mut running: Vec<usize> = Vec::new();
    let mut failed: Option<String> = None;
    loop {
        if failed.is_none() {
            let mut k = 0;
            while k < pending.len() {
                let slot = pending[k];
                let job = &jobs[w.jobs[slot]];
                let busy = running
                    .iter()
                    .filter(|&&r| jobs[w.jobs[r]].server == job.server)
                    .count();
                if busy >= limit(&job.server) {
                    k += 1;
                    continue;
                }
                pending.remove(k);
                let name = format!("{}/{}", job.server, job.schema);
                let started = l.finished(job).and_then(|done| {
                    if done {
                        say(format!(
                            "{name}: already done (its checkpoints say so): not run again"
                        ));
                        Ok(Some(State::AlreadyDone))
                    } else if !execute {
                        say(format!("{name}: would run {}", job.path.display()));
                        Ok(Some(State::WouldRun))
                    } else {
                        l.start(job)?;
                        say(format!("{name}: started"));
                        Ok(None)
                    }
                });
                match started {
                    Ok(Some(state)) => results[slot] = Some(line(job, state, None)),
                    Ok(None) => running.push(slot),
                    Err(e) => {
                        let why = crate::db::redact::redact_error(&e);
                        say(format!("{name}: failed to start: {why}"));
                        results[slot] = Some(line(job, State::Failed, Some(why)));
                        failed = Some(format!("{name} failed"));
                        break;
                    }
                }
            }
        }
        if running.is_empty() && (pending.is_empty() || failed.is_some()) {
            return failed;
        }
        let mut k = 0;
        while k < running.len() {
            let slot = running[k];
            let job = &jobs[w.jobs[slot]];
            let Some(e) = l.ended(job) else {
                k += 1;
                continue;
            };
            running.remove(k);
            let name = format!("{}/{}", job.server, job.schema);
            let word = match e.state {
                State::Done => "done",
                State::Refused => "REFUSED",
                _ => "FAILED",
            };
            say(format!(
                "{name}: {word}{}",
                e.reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
            if matches!(e.state, State::Failed | State::Refused) && failed.is_none() {
                failed = Some(format!(
                    "{name} {}",
                    if e.state == State::Refused {
                        "was refused"
                    } else {
                        "failed"
                    }
                ));
            }
            results[slot] = Some(JobResult {
                exit_code: e.exit_code,
                reason: e.reason,
                attention: e.attention,
                ..line(job, e.state, None)
            });
        }
        l.wait();
    }
}

fn finish(waves: Vec<WaveResult>, execute: bool) -> FleetRun {
    let mut counts = BTreeMap::new();
    let mut ok = true;
    for j in waves.iter().flat_map(|w| &w.jobs) {
        let key = serde_json::to_value(j.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        *counts.entry(key).or_insert(0) += 1;
        ok &= matches!(j.state, State::Done | State::AlreadyDone | State::WouldRun);
    }
    FleetRun {
        fleet_run_version: RUN_VERSION,
        execute,
        waves,
        counts,
        exit_code: u8::from(!ok),
    }
}

/// The result as one line per wave and job, for the terminal.
pub fn to_text(r: &FleetRun) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for w in &r.waves {
        let _ = writeln!(o, "wave {}:", w.name);
        for j in &w.jobs {
            let state = serde_json::to_value(j.state).unwrap_or_default();
            let _ = writeln!(
                o,
                "  {}/{}: {}{}{}",
                j.server,
                j.schema,
                state.as_str().unwrap_or(""),
                if j.attention {
                    " (needs attention: see its log)"
                } else {
                    ""
                },
                j.reason
                    .as_ref()
                    .map(|x| format!(": {x}"))
                    .unwrap_or_default()
            );
        }
    }
    let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let _ = writeln!(o, "fleet run: {}", counts.join(", "));
    o
}

#[cfg(test)]
mod tests {
    use super::super::file;
    use super::super::waves::waves;
    use super::*;
    use std::cell::RefCell;
    use std::collections::{BTreeSet, HashMap};
    use std::path::Path;

    /// A launcher whose jobs end after `ticks` waits each, with a given outcome; it records
    /// the starts and the most jobs running at once per server.
    #[derive(Default)]
    struct Fake {
        done_before: BTreeSet<String>,
        outcome: HashMap<String, State>,
        left: HashMap<String, u32>,
        started: Vec<String>,
        peak: RefCell<HashMap<String, usize>>,
    }

    impl Fake {
        fn running(&self, server: &str) -> usize {
            self.left
                .iter()
                .filter(|(k, &v)| k.starts_with(&format!("{server}/")) && v > 0)
                .count()
        }
    }

    fn key(j: &JobRef) -> String {
        format!("{}/{}", j.server, j.schema)
    }

    impl Launcher for Fake {
        fn finished(&mut self, job: &JobRef) -> Result<bool> {
            Ok(self.done_before.contains(&key(job)))
        }
        fn start(&mut self, job: &JobRef) -> Result<()> {
            self.started.push(key(job));
            self.left.insert(key(job), 2);
            let n = self.running(&job.server);
            let mut p = self.peak.borrow_mut();
            let e = p.entry(job.server.clone()).or_default();
            *e = (*e).max(n);
            Ok(())
        }
        fn ended(&mut self, job: &JobRef) -> Option<Ended> {
            let left = self.left.get_mut(&key(job))?;
            if *left > 0 {
                return None;
            }
            let state = self.outcome.get(&key(job)).copied().unwrap_or(State::Done);
            Some(Ended {
                state,
                exit_code: Some(if state == State::Done { 0 } else { 2 }),
                reason: (state != State::Done).then(|| "table 'x' is refused. Fix: y".into()),
                attention: false,
            })
        }
        fn wait(&mut self) {
            for v in self.left.values_mut() {
                *v = v.saturating_sub(1);
            }
        }
    }

    fn fleet() -> file::Fleet {
        file::parse(
            "servers:\n\
             - {name: a, url: 'mysql://u@a', schemas: ['*'], concurrency: 2}\n\
             - {name: b, url: 'mysql://u@b', schemas: ['*']}\n\
             - {name: c, url: 'mysql://u@c', schemas: ['*']}\n\
             groups:\n  canary: [b]\n  main: [a]\n",
            Path::new("."),
        )
        .unwrap()
    }

    fn jobs() -> Vec<JobRef> {
        [
            ("a", "s1"),
            ("a", "s2"),
            ("a", "s3"),
            ("b", "s1"),
            ("b", "s2"),
            ("c", "s1"),
        ]
        .iter()
        .map(|(s, x)| JobRef {
            server: s.to_string(),
            schema: x.to_string(),
            path: format!("/j/{s}/{x}.yaml").into(),
            job_id: x.to_string(),
        })
        .collect()
    }

    fn states(r: &FleetRun) -> Vec<(String, State)> {
        r.waves
            .iter()
            .flat_map(|w| &w.jobs)
            .map(|j| (format!("{}/{}", j.server, j.schema), j.state))
            .collect()
    }

    #[test]
    fn waves_run_in_order_within_each_servers_limit_and_done_jobs_are_not_rerun() {
        let (f, j) = (fleet(), jobs());
        let mut l = Fake {
            done_before: BTreeSet::from(["b/s1".to_string()]),
            ..Fake::default()
        };
        let r = drive(&f, &j, &waves(&f, &j), true, &mut l, &|_| {});
        assert_eq!(l.started, vec!["b/s2", "a/s1", "a/s2", "a/s3", "c/s1"]);
        assert_eq!(l.peak.borrow()["a"], 2, "a's concurrency is 2");
        assert_eq!(l.peak.borrow()["b"], 1);
        assert_eq!(r.exit_code, 0);
        assert_eq!(states(&r)[0], ("b/s1".to_string(), State::AlreadyDone));
        assert_eq!(r.counts["done"], 5);
        assert_eq!(
            r.waves.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(),
            vec!["canary", "main", "ungrouped"]
        );
    }

    #[test]
    fn a_refused_job_stops_its_wave_and_the_later_ones_but_not_its_running_neighbour() {
        let (f, j) = (fleet(), jobs());
        let mut l = Fake {
            outcome: HashMap::from([("a/s1".to_string(), State::Refused)]),
            ..Fake::default()
        };
        let r = drive(&f, &j, &waves(&f, &j), true, &mut l, &|_| {});
        // a/s2 started beside a/s1 (limit 2) and finishes; a/s3 never starts; nor does c.
        assert_eq!(l.started, vec!["b/s1", "b/s2", "a/s1", "a/s2"]);
        let s = states(&r);
        assert_eq!(s[2], ("a/s1".to_string(), State::Refused));
        assert_eq!(s[3], ("a/s2".to_string(), State::Done));
        assert_eq!(s[4], ("a/s3".to_string(), State::NotRun));
        assert_eq!(s[5], ("c/s1".to_string(), State::NotRun));
        let c = &r.waves[2].jobs[0];
        assert_eq!(
            c.reason.as_deref(),
            Some("wave 'main' stopped: a/s1 was refused")
        );
        assert_eq!(
            r.waves[1].jobs[0].reason.as_deref(),
            Some("table 'x' is refused. Fix: y")
        );
        assert_eq!(r.exit_code, 1);
        assert!(to_text(&r).contains("  a/s3: not-run: wave 'main' stopped"));
    }

    #[test]
    fn a_dry_run_starts_nothing_and_says_what_would_run_where() {
        let (f, j) = (fleet(), jobs());
        let mut l = Fake {
            done_before: BTreeSet::from(["a/s3".to_string()]),
            ..Fake::default()
        };
        let r = drive(&f, &j, &waves(&f, &j), false, &mut l, &|_| {});
        assert!(l.started.is_empty());
        assert_eq!(r.exit_code, 0);
        assert_eq!((r.counts["would-run"], r.counts["already-done"]), (5, 1));
    }
}

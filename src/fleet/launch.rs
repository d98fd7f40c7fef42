//! The [`Launcher`] of `fleet run`: each job run by a child process of this same binary,
//! exactly as `myrecode run JOB --execute` with the fleet file's connection for its server
//! ([`super::jobs::run_args`]), its stdout and stderr appended to `JOBS/<server>/<schema>.log`.
//! So each job is kill-safe, resumable, throttled and cut over by its own run, and a killed
//! fleet run leaves nothing a second one cannot pick up.
//!
//! A password never reaches an argument or a log: the child reads the option file or
//! `MYSQL_PWD` as a single run would, and a password typed at `fleet run`'s `ask-pass`
//! prompt is handed to it in `MYSQL_PWD`. Whether a job is finished is read by
//! [`super::watch`], the code `status` uses.

use super::drive::{Ended, Launcher, State};
use super::file::Server;
use super::jobs::{self, JobRef};
use super::watch;
use crate::db::connect::ConnectionConfig;
use anyhow::{anyhow, Context, Result};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A server as the children reach it.
#[derive(Debug, Clone)]
pub struct Reach {
    /// The fleet file's entry (url, option file).
    pub server: Server,
    /// The settings resolved by `fleet run` (for reading each job's state).
    pub config: ConnectionConfig,
}

struct Running {
    child: Child,
    log: PathBuf,
    /// Where this run's output begins in the log.
    from: u64,
}

/// Runs each job as a child `myrecode run`.
pub struct Children {
    exe: PathBuf,
    servers: HashMap<String, Reach>,
    running: HashMap<PathBuf, Running>,
    rt: tokio::runtime::Runtime,
    poll: Duration,
}

impl Children {
    /// A launcher running `exe` (this binary) for the jobs of `servers`.
    pub fn new(exe: PathBuf, servers: Vec<Reach>) -> Result<Self> {
        Ok(Children {
            exe,
            servers: servers
                .into_iter()
                .map(|r| (r.server.name.clone(), r))
                .collect(),
            running: HashMap::new(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            poll: Duration::from_millis(200),
        })
    }

    fn reach(&self, job: &JobRef) -> Result<&Reach> {
        self.servers.get(&job.server).ok_or_else(|| {
            anyhow!(
                "{} is in folder '{}', which names no server of the fleet file. Fix: move it under a server's folder, or add the server",
                job.path.display(),
                job.server
            )
        })
    }

    /// Whether the job's own state says finished (an error: it could not be read).
    fn is_finished(&self, job: &JobRef) -> Result<bool> {
        let cfg = &self.reach(job)?.config;
        Ok(self.rt.block_on(watch::read(cfg, job))?.finished)
    }
}

impl Launcher for Children {
    fn finished(&mut self, job: &JobRef) -> Result<bool> {
        self.is_finished(job)
    }

    fn start(&mut self, job: &JobRef) -> Result<()> {
        let reach = self.reach(job)?;
        let log_path = jobs::log_path(&job.path);
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("cannot open the job's log {}", log_path.display()))?;
        let from = log.seek(SeekFrom::End(0))?;
        let args = jobs::run_args(&reach.server, &job.path, true);
        writeln!(log, "== fleet run: myrecode {}", args.join(" "))?;
        let mut cmd = Command::new(&self.exe);
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // The fleet file names the server; a MYSQL_URL of the caller's must not.
            .env_remove("MYSQL_URL");
        if reach.server.ask_pass {
            if let Some(p) = reach.config.password() {
                cmd.env("MYSQL_PWD", p);
            }
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.exe.display()))?;
        self.running.insert(
            job.path.clone(),
            Running {
                child,
                log: log_path,
                from,
            },
        );
        Ok(())
    }

    fn ended(&mut self, job: &JobRef) -> Option<Ended> {
        let r = self.running.get_mut(&job.path)?;
        let status = match r.child.try_wait() {
            Ok(Some(s)) => s,
            Ok(None) => return None,
            Err(e) => {
                return Some(Ended {
                    state: State::Failed,
                    exit_code: None,
                    reason: Some(format!("cannot watch its run: {e}")),
                    attention: false,
                })
            }
        };
        let r = self.running.remove(&job.path)?;
        let code = status.code();
        let output = this_run(&r.log, r.from);
        let finished = self.is_finished(job);
        Some(ended(code, finished, &output, &r.log))
    }

    fn wait(&mut self) {
        std::thread::sleep(self.poll);
    }
}

/// What this run appended to the log.
fn this_run(log: &std::path::Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(log) {
        if f.seek(SeekFrom::Start(from)).is_ok() {
            let mut bytes = Vec::new();
            let _ = f.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    text
}

/// How a run ended, from its exit code, whether its state says finished, and its output.
fn ended(code: Option<i32>, finished: Result<bool>, output: &str, log: &std::path::Path) -> Ended {
    let unread = finished.as_ref().err().map(crate::db::redact::redact_error);
    let finished = finished.as_ref().map(|f| *f).unwrap_or(false);
    if matches!(code, Some(0 | 1)) && finished {
        return Ended {
            state: State::Done,
            exit_code: code,
            reason: None,
            attention: code == Some(1),
        };
    }
    let error = output
        .find("myrecode: error: ")
        .map(|i| {
            output[i + "myrecode: error: ".len()..]
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|e| !e.is_empty());
    let refused = error
        .as_deref()
        .is_some_and(|e| e.contains("refused; nothing was written"));
    let reason = match (code, error) {
        (_, Some(e)) => e,
        (Some(c), None) if unread.is_some() => format!(
            "its run ended (exit {c}) but its state could not be read: {}",
            unread.unwrap_or_default()
        ),
        (Some(c), None) => format!(
            "its run ended (exit {c}) without finishing; see {}",
            log.display()
        ),
        (None, None) => format!(
            "its run was killed by a signal; see {}. Run the fleet again to resume it",
            log.display()
        ),
    };
    Ended {
        state: if refused {
            State::Refused
        } else {
            State::Failed
        },
        exit_code: code,
        reason: Some(reason),
        attention: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_run_is_done_only_when_its_state_says_finished() {
        let log = Path::new("/j/a/s.log");
        let e = ended(Some(0), Ok(true), "", log);
        assert_eq!((e.state, e.attention), (State::Done, false));
        let e = ended(Some(1), Ok(true), "", log);
        assert_eq!((e.state, e.attention), (State::Done, true));
        // Exit 1 is also "interrupted": unfinished, it failed.
        let e = ended(Some(1), Ok(false), "Interrupted; ...", log);
        assert_eq!(e.state, State::Failed);
        assert!(e.reason.unwrap().contains("without finishing"));
        let e = ended(None, Err(anyhow!("gone")), "", log);
        assert!(e.reason.unwrap().contains("killed by a signal"));
    }

    #[test]
    fn a_refusal_is_told_from_a_failure_by_the_runs_own_words() {
        let out = "rehearsal...\nmyrecode: error: 1 table(s) of the job refused; nothing was written\n  orders: table 'orders' is in foreign key `f`. Fix: drop it\nFix the job or the tables as each line says\n";
        let e = ended(Some(2), Ok(false), out, Path::new("x.log"));
        assert_eq!(e.state, State::Refused);
        let r = e.reason.unwrap();
        assert!(
            r.starts_with("1 table(s) of the job refused") && r.contains("Fix: drop it"),
            "{r}"
        );
        assert_eq!(r.lines().count(), 1);
        let e = ended(
            Some(2),
            Ok(false),
            "myrecode: error: access denied\n",
            Path::new("x.log"),
        );
        assert_eq!(
            (e.state, e.reason.as_deref()),
            (State::Failed, Some("access denied"))
        );
    }
}

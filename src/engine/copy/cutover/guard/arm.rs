//! The run's side of the guard: started before a cut-over's first step, told the run's
//! connections, told to stand down after its last.

use super::{Brief, Message, SUBCOMMAND};
use crate::db::connect::ConnectionConfig;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

/// The binary the guard runs as (`myrecode` itself), set by the command line as it starts.
/// Unset (the engine called as a library), no guard is started and a killed cut-over waits
/// for the next run, as before.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Makes `program` (the running `myrecode`) the guard's binary.
pub fn use_program(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// A guard standing by for one cut-over. Dropped without [`Guard::stand_down`] while a panic
/// unwinds, it stays armed: the guard settles once the run's process is gone.
pub struct Guard {
    /// The guard's process (reaped once it stood down).
    child: Option<Child>,
    /// The write end of its stdin: closed by the kernel when the run dies.
    stdin: Option<ChildStdin>,
}

impl Guard {
    /// Starts the guard for a cut-over of `tables` (none started without a binary, or with
    /// the test hook that stands for a host lost with its run; a guard that fails to start
    /// is warned about and the cut-over goes on, as it did before guards).
    pub fn arm(cfg: &ConnectionConfig, schema: &str, job: &str, tables: &[&str]) -> Guard {
        let unarmed = Guard {
            child: None,
            stdin: None,
        };
        let Some(program) = PROGRAM.get() else {
            return unarmed;
        };
        if crate::engine::test_hooks::no_guard() {
            return unarmed;
        }
        let brief = Brief {
            url: cfg.url_with_secret(),
            schema: schema.to_string(),
            job: job.to_string(),
            tables: tables.iter().map(|t| t.to_string()).collect(),
            parent: std::process::id(),
        };
        match start(program, &brief) {
            Ok((child, stdin)) => Guard {
                child: Some(child),
                stdin: Some(stdin),
            },
            Err(e) => {
                tracing::warn!(error = %e, "the cut-over's guard could not start: a run killed inside this cut-over leaves it to the next run");
                unarmed
            }
        }
    }

    /// Tells the guard a connection of the run's to end before it settles.
    pub fn watch(&mut self, connection_id: u64) {
        self.say(Message::Watch(connection_id));
    }

    /// The cut-over ended with the run alive: the guard exits without settling anything.
    pub fn stand_down(mut self) {
        self.end();
    }

    fn say(&mut self, m: Message) {
        if let Some(stdin) = self.stdin.as_mut() {
            // A few bytes into an empty pipe: never blocks. A guard gone already cannot
            // be told, and has nothing to settle for us.
            let _ = writeln!(stdin, "{}", m.line());
        }
    }

    fn end(&mut self) {
        self.say(Message::StandDown);
        self.stdin = None;
        if let Some(mut child) = self.child.take() {
            // Reaped off the run's threads: it exits as soon as it reads the line.
            std::thread::spawn(move || child.wait());
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.end();
        }
    }
}

/// Spawns the guard in a process group of its own (a Ctrl-C meant for the run does not reach
/// it), its stderr the run's, and hands it the brief.
fn start(program: &PathBuf, brief: &Brief) -> std::io::Result<(Child, ChildStdin)> {
    let mut child = Command::new(program)
        .arg(SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()?;
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let line = serde_json::to_string(brief).map_err(std::io::Error::other)?;
    writeln!(stdin, "{line}")?;
    Ok((child, stdin))
}

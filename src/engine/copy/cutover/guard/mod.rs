//! The cut-over's dead man's switch. A cut-over whose moves the application would see closes
//! its tables first (see `../README.md`): killed then, a run used to leave every write to
//! them failing until someone ran the job again. Now each cut-over starts a small process of
//! the same binary, its **guard**, before its first step and tells it to stand down after its
//! last. The run holds the write end of the guard's stdin; when the run dies (SIGKILL, the
//! OOM killer, a panic) the kernel closes it, and the guard settles the cut-over itself, as the
//! next run would have ([`crate::engine::copy::group::settle_interrupted`]): the tables take
//! writes again within a second, with no rerun.
//!
//! Why a process and not the server: what a half-moved cut-over must undo includes the
//! application's own triggers, and the server refuses `CREATE TRIGGER` inside a stored
//! program (error 1303), so no event or procedure can put them back; the event scheduler is
//! off by default on MariaDB as well. What the server does do by itself is covered too: the
//! lock connection's `wait_timeout` is short, so a run whose host vanishes (no process left
//! to close a pipe) holds the tables locked for seconds, not hours (`swap.rs`).
//!
//! [`arm`] is the run's side; [`serve`] the guard's. Here: what they say to each other, one
//! line each, over the guard's stdin. Pure.

pub mod arm;
pub mod serve;

pub use arm::{use_program, Guard};
pub use serve::serve;

use serde::{Deserialize, Serialize};

/// The hidden subcommand the guard runs as (`myrecode cutover-guard`).
pub const SUBCOMMAND: &str = "cutover-guard";

/// What the guard is told first: where and what to settle if the run dies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Brief {
    /// The server, with its password: sent over the pipe only, never in argv or the
    /// environment (both readable by other users through `ps` and `/proc`).
    pub url: String,
    /// The job's schema.
    pub schema: String,
    /// The job's id.
    pub job: String,
    /// The copied tables whose cut-over may be interrupted (this group and those after it).
    pub tables: Vec<String>,
    /// The run's process id: once the pipe closes, the guard waits for that process to be
    /// gone (a panicking run may still be unwinding).
    pub parent: u32,
}

/// What the run says after the brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// A connection of the run's the cut-over works on: killed before settling, so nothing
    /// the dead run sent still runs (an `ALTER` of a move, a queued rename).
    Watch(u64),
    /// The cut-over ended with the run alive (swapped, or settled by the run itself): exit.
    StandDown,
}

impl Message {
    /// The line that carries it (without its newline).
    pub fn line(self) -> String {
        match self {
            Message::Watch(id) => format!("watch {id}"),
            Message::StandDown => "stand-down".to_string(),
        }
    }

    /// Reads a line back; `None` for anything else (ignored: a later binary's message).
    pub fn parse(line: &str) -> Option<Message> {
        let line = line.trim_end();
        if line == "stand-down" {
            return Some(Message::StandDown);
        }
        line.strip_prefix("watch ")?
            .parse()
            .ok()
            .map(Message::Watch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_back_as_written() {
        for m in [
            Message::Watch(0),
            Message::Watch(u64::MAX),
            Message::StandDown,
        ] {
            assert_eq!(Message::parse(&m.line()), Some(m));
            assert_eq!(Message::parse(&format!("{}\n", m.line())), Some(m));
        }
        assert_eq!(Message::parse("watch"), None);
        assert_eq!(Message::parse("watch -1"), None);
        assert_eq!(Message::parse("stand down"), None);
        assert_eq!(Message::parse(""), None);
    }

    #[test]
    fn the_brief_is_one_json_line() {
        let b = Brief {
            url: "mysql://u:p%0A@h:1/".into(),
            schema: "s\n".into(),
            job: "j".into(),
            tables: vec!["t\nu".into()],
            parent: 7,
        };
        let text = serde_json::to_string(&b).unwrap();
        assert!(!text.contains('\n'));
        assert_eq!(serde_json::from_str::<Brief>(&text).unwrap(), b);
    }
}

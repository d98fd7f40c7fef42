//! The guard's side: it reads the brief and the run's messages until told to stand down;
//! if its stdin closes first, the run is dead, and it settles the cut-over as the next run
//! would, under the job's lock (so never under a run begun meanwhile).

use super::{Brief, Message};
use crate::db::connect::ConnectionConfig;
use crate::engine::copy::catalog::kill_connection_sql;
use crate::engine::copy::group::settle_interrupted;
use crate::engine::job_lock;
use anyhow::{Context, Result};
use sqlx::{Executor, MySqlConnection};
use std::io::BufRead;
use std::time::{Duration, Instant};

/// How long a run that closed the pipe may take to be gone (a panic still unwinding).
const PARENT_GONE_WAIT: Duration = Duration::from_secs(60);
/// How long the server may take to answer the guard (restarting, say).
const CONNECT_FOR: Duration = Duration::from_secs(60);
/// How long the guard waits for the job's lock: the dead run's sessions end within a
/// moment; held longer, a new run has it, and that run settles.
const LOCK_WAIT_S: u32 = 10;

/// What the run said before its pipe closed.
#[derive(Debug, PartialEq, Eq)]
pub enum Heard {
    /// It stood down: the cut-over ended with the run alive.
    StoodDown,
    /// The pipe closed without it: the run died; these are its connections to end.
    Died(Vec<u64>),
}

/// Reads the run's messages after the brief, to stand-down or the end of the pipe.
pub fn listen(input: &mut impl BufRead) -> Heard {
    let mut ids = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return Heard::Died(ids),
            Ok(_) => match Message::parse(&line) {
                Some(Message::StandDown) => return Heard::StoodDown,
                Some(Message::Watch(id)) => ids.push(id),
                None => {}
            },
        }
    }
}

/// `myrecode cutover-guard`: reads the brief from `input`, then waits; settles if the run
/// dies. Returns the exit code (0 stood down or settled, 2 could not settle).
pub fn serve(input: &mut impl BufRead) -> u8 {
    let mut first = String::new();
    let brief: Brief = match input.read_line(&mut first) {
        Ok(n) if n > 0 => match serde_json::from_str(&first) {
            Ok(b) => b,
            Err(_) => return 2,
        },
        // Started by hand, or the run died before its brief: nothing to guard.
        _ => return 0,
    };
    let ids = match listen(input) {
        Heard::StoodDown => return 0,
        Heard::Died(ids) => ids,
    };
    wait_until_gone(brief.parent);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let outcome = match runtime {
        Ok(rt) => rt.block_on(settle(&brief, &ids)),
        Err(e) => Err(e.into()),
    };
    let tables = brief.tables.join(", ");
    match outcome {
        Ok(Some(took)) => {
            eprintln!(
                "myrecode: the run died inside the cut-over of {tables}; its guard settled it in {} ms: the tables take writes again. Run the job again to go on.",
                took.as_millis()
            );
            0
        }
        Ok(None) => 0,
        Err(e) => {
            eprintln!(
                "myrecode: the run died inside the cut-over of {tables} and its guard could not settle it ({}). Fix: run the job again; its first step settles the cut-over.",
                crate::db::redact::redact_error(&e)
            );
            2
        }
    }
}

/// Waits until the process `parent` is no longer this one's parent (it exited, and this
/// process was handed to another), at most [`PARENT_GONE_WAIT`].
fn wait_until_gone(parent: u32) {
    let since = Instant::now();
    while std::os::unix::process::parent_id() == parent && since.elapsed() < PARENT_GONE_WAIT {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ends the dead run's connections, takes the job's lock and settles; `None` when a new run
/// holds the lock (it settles itself). Returns how long the guard took.
async fn settle(brief: &Brief, ids: &[u64]) -> Result<Option<Duration>> {
    let since = Instant::now();
    let cfg = ConnectionConfig::from_url(&brief.url)?;
    let mut conn = connect(&cfg).await?;
    for id in ids {
        // Gone already (the usual case) answers "unknown thread": nothing to end.
        let _ = conn.execute(kill_connection_sql(*id).as_str()).await;
    }
    if !job_lock::take(&mut conn, &brief.schema, &brief.job, LOCK_WAIT_S).await? {
        return Ok(None);
    }
    let tables: Vec<&str> = brief.tables.iter().map(String::as_str).collect();
    settle_interrupted(&mut conn, &brief.schema, &brief.job, &tables)
        .await
        .context("settling the interrupted cut-over")?;
    job_lock::release(&mut conn, &brief.schema, &brief.job).await?;
    Ok(Some(since.elapsed()))
}

/// Connects, retrying while the server does not answer, for [`CONNECT_FOR`].
async fn connect(cfg: &ConnectionConfig) -> Result<MySqlConnection> {
    let since = Instant::now();
    loop {
        match cfg.connect_one().await {
            Ok(c) => return Ok(c),
            Err(e) if since.elapsed() > CONNECT_FOR => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_that_ends_without_stand_down_means_the_run_died() {
        let mut input = "watch 12\nnonsense\nwatch 13\n".as_bytes();
        assert_eq!(listen(&mut input), Heard::Died(vec![12, 13]));
        let mut input = "watch 12\nstand-down\nwatch 13\n".as_bytes();
        assert_eq!(listen(&mut input), Heard::StoodDown);
        let mut input = "".as_bytes();
        assert_eq!(listen(&mut input), Heard::Died(vec![]));
    }

    #[test]
    fn no_brief_means_nothing_to_guard() {
        assert_eq!(serve(&mut "".as_bytes()), 0);
        assert_eq!(serve(&mut "not json\n".as_bytes()), 2);
    }
}

//! What the engine has to say while it runs, as events: the engine never prints, so `run`,
//! `demo` and later `status` render the same events their own way.

use crate::bookkeeping::checkpoint::State;
use std::time::Duration;

/// How to decide the values a copy's cut-over waits for.
pub const UNDECIDED_FIX: &str = "Fix: `myrecode review job.yaml --out decisions.yaml`, write each value's `use:`, then \
`myrecode run job.yaml --execute --decisions decisions.yaml`; or name the column's fallback in the job \
(`undecidable: use <label>`) and run again";

/// One thing that happened in a run.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// What a run would do, table by table (a rehearsal: nothing written).
    Rehearsal {
        /// The rehearsal, one line per table.
        text: &'a str,
    },
    /// A batch committed: rows done so far, the table's estimate, the pace since this run began.
    Batch {
        /// Table name.
        table: &'a str,
        /// The checkpoint as committed.
        state: &'a State,
        /// The server's row estimate for the table.
        estimated: u64,
        /// Rows per second since this run began.
        rows_per_sec: f64,
    },
    /// A copy's check pass compared every row with the shadow.
    Checked {
        /// Table name.
        table: &'a str,
        /// Rows that differed (changed since copied) and were queued for replay.
        differed: u64,
        /// Batches proven by the copy's own decisions, and batches compared on the server
        /// (`None`: the check did not trail the copy, every batch was compared on the server).
        batches: Option<(u64, u64)>,
    },
    /// A copied table without transactions is compared with its copy again: the server
    /// started since it last was (a crash's repair, or a statement failed in its trigger
    /// chain, may have changed it unlogged).
    Rechecked {
        /// Table name.
        table: &'a str,
        /// Its storage engine.
        engine: &'a str,
        /// What `CHECK TABLE … MEDIUM` said of it ("OK", or its warnings and errors).
        check: &'a str,
        /// What `REPAIR TABLE` said, when the check found its index out of step with its rows.
        repair: Option<&'a str>,
    },
    /// A table of the job without transactions (an original, or a shadow) had its index out
    /// of step with its rows after a server crash, and the run repaired it; its rows are
    /// compared with its copy again before its cut-over.
    Repaired {
        /// The table repaired (an original, or a shadow's name).
        table: &'a str,
        /// Its storage engine.
        engine: &'a str,
        /// How it was found: the check after a restart, or the server's error (1032, 1034).
        found: &'a str,
        /// What `CHECK TABLE` said of it.
        check: &'a str,
        /// What `REPAIR TABLE` said.
        repair: &'a str,
    },
    /// A table without a usable key waits, its shadow empty, to be rebuilt under the cut-over's lock.
    Rebuilds {
        /// Table name.
        table: &'a str,
        /// Its rows (the server's estimate, or the count the run took).
        rows: u64,
    },
    /// A cut-over's copies are caught up and wait for `myrecode cutover` (`cutover: manual`).
    Ready {
        /// The tables the cut-over will swap.
        tables: &'a [String],
        /// Their cut-over group (`None`: the job names none, and this is all of it).
        group: Option<&'a str>,
    },
    /// A cut-over's copies are caught up, but some hold values no reading decided: the
    /// cut-over waits until each is decided, and the run stops (resumably).
    Held {
        /// Each table of the cut-over holding undecided values, with how many.
        undecided: &'a [(String, u64)],
        /// Their cut-over group (`None`: the job names none).
        group: Option<&'a str>,
    },
    /// A cut-over's copies were swapped in, all at one instant.
    CutOver {
        /// The tables swapped.
        tables: &'a [String],
        /// How long their reads and writes were paused (`None`: the run that renamed them
        /// lost its connection before it could record it).
        pause: Option<Duration>,
        /// Their cut-over group (`None`: the job names none).
        group: Option<&'a str>,
    },
    /// `myrecode abort` removed a copy's objects before its cut-over.
    CopyAborted {
        /// Table name.
        table: &'a str,
    },
    /// `myrecode abort` stopped the job.
    JobAborted {
        /// The job's id.
        job: &'a str,
    },
    /// The job waits between batches (paused by the operator, or throttled), or its reason
    /// to wait changed: said once per reason, beside the note `status` reads.
    Waiting {
        /// The job's id.
        job: &'a str,
        /// Why, in the pacer's words (the reason noted in the control row).
        why: &'a str,
    },
    /// The job goes on after it waited.
    GoingOn {
        /// The job's id.
        job: &'a str,
    },
    /// `verify --pause-replicas` paused a replica to read some key ranges at the primary's
    /// position: the operator should know their replica stood still, and for how long.
    ReplicaPaused {
        /// The replica, `host:port`.
        replica: &'a str,
        /// How long it was paused (stopped, run up to the position, started again).
        paused: Duration,
        /// The primary's position it was read at.
        position: &'a str,
        /// How many key ranges are read there.
        ranges: usize,
        /// The table they belong to.
        table: &'a str,
    },
    /// A replica `verify --pause-replicas` paused could not be started again: said at once,
    /// before the error it also stops with, since the replica is not replicating.
    ReplicaNotRestarted {
        /// What happened and what to run on it (the error's own text).
        message: &'a str,
    },
}

/// Receives the engine's events (a progress bar and lines, log lines, or nothing).
pub trait Events {
    /// Called for every event, in order.
    fn event(&self, e: &Event<'_>);
}

/// The line an operator reads for an event, on standard output; `None` for batches (a bar or
/// a log line shows those) and for notices ([`notice`]).
pub fn line(e: &Event<'_>) -> Option<String> {
    Some(match e {
        Event::Batch { .. }
        | Event::Waiting { .. }
        | Event::GoingOn { .. }
        | Event::ReplicaPaused { .. }
        | Event::ReplicaNotRestarted { .. } => return None,
        Event::Rehearsal { text } => text.trim_end().to_string(),
        Event::Checked {
            table,
            differed,
            batches,
        } => format!(
            "check: {table}: every row compared with its copy; {differed} differed (changed since copied) and were queued for replay{}",
            batches.map_or(String::new(), |(own, server)| format!(
                "; {own} of {} batches proven by the copy's own decisions, without reading their values again",
                own + server
            ))
        ),
        Event::Rechecked {
            table,
            engine,
            check,
            repair,
        } => format!(
            "restart: {table} ({engine}, no transactions): the server restarted since it was compared with its copy; CHECK TABLE … MEDIUM: {check}{}; every row is compared again before its cut-over",
            repair.map_or(String::new(), |r| format!(
                "; its index was out of step with its rows, REPAIR TABLE: {r}"
            ))
        ),
        Event::Repaired {
            table,
            engine,
            found,
            check,
            repair,
        } => format!(
            "repair: {table} ({engine}, no transactions): its index was out of step with its rows, as a server crash leaves it ({found}: {check}); REPAIR TABLE: {repair}; every row is compared with its copy again before its cut-over"
        ),
        Event::Rebuilds { table, rows } => format!(
            "keyless: {table}: no key to copy it by in batches; its {rows} row(s) are rebuilt under the cut-over's lock (about {})",
            crate::job::pause::pause_words(*rows)
        ),
        Event::Ready { tables, group } => format!(
            "ready: {}{} {} copied and caught up; replaying writes until `myrecode cutover{}` swaps {} at one instant (cutover: manual)",
            group_prefix(*group),
            tables.join(", "),
            if tables.len() == 1 { "is" } else { "are" },
            group.map_or(String::new(), |g| format!(" --group {g}")),
            if tables.len() == 1 { "it" } else { "them all" }
        ),
        Event::Held { undecided, group } => format!(
            "held: {}{}: the cut-over waits until each is decided (nothing is swapped meanwhile; the triggers keep logging). {}",
            group_prefix(*group),
            undecided
                .iter()
                .map(|(t, n)| format!("{t} holds {n} value(s) no reading decided"))
                .collect::<Vec<_>>()
                .join(", "),
            UNDECIDED_FIX
        ),
        Event::CutOver {
            tables,
            pause,
            group,
        } => format!(
            "cut-over: {}{} now {} the recoded columns, swapped at one instant; {}; each original is kept as <table>{} for rollback until `myrecode cleanup`",
            group_prefix(*group),
            tables.join(", "),
            if tables.len() == 1 { "has" } else { "have" },
            match pause {
                Some(p) => format!("reads and writes paused {:.1} ms", p.as_secs_f64() * 1000.0),
                None => "reads and writes paused for a time not measured (the run that renamed them lost its connection before recording it)".to_string(),
            },
            "_myrecode_old"
        ),
        Event::CopyAborted { table } => {
            format!("aborted: {table}: copy objects removed; the table was never changed")
        }
        Event::JobAborted { job } => format!(
            "aborted: job '{job}' stopped. Values already recoded in place stay recoded: `myrecode rollback` undoes them"
        ),
    })
}

/// The notice an operator reads beside the run's lines, on standard error (a wait, a replica
/// paused or left stopped); `None` for every other event.
pub fn notice(e: &Event<'_>) -> Option<String> {
    Some(match e {
        Event::Waiting { job, why } => format!("myrecode: {job}: {why}"),
        Event::GoingOn { job } => format!("myrecode: {job}: going on"),
        Event::ReplicaPaused {
            replica,
            paused,
            position,
            ranges,
            table,
        } => format!(
            "myrecode: replica {replica} paused {} ms to be read at the primary's position {position}: {ranges} key range(s) of {table} the application writes to",
            paused.as_millis()
        ),
        Event::ReplicaNotRestarted { message } => format!("myrecode: {message}"),
        _ => return None,
    })
}

/// `group 'name': ` before a cut-over's tables, when the job names groups.
fn group_prefix(group: Option<&str>) -> String {
    group.map_or(String::new(), |g| format!("group '{g}': "))
}

/// Prints every event's line on standard output and every notice on standard error, and
/// ignores batches (the demo, the rehearse command, `verify`).
pub struct Lines;

impl Events for Lines {
    fn event(&self, e: &Event<'_>) {
        if let Some(l) = line(e) {
            println!("{l}");
        }
        if let Some(n) = notice(e) {
            eprintln!("{n}");
        }
    }
}

/// Passes the engine's events on and notes whether a batch committed since it was last
/// asked: a success, which ends the step's streak of retries.
pub struct Committed<'a> {
    inner: &'a dyn Events,
    seen: std::sync::atomic::AtomicBool,
}

impl<'a> Committed<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a dyn Events) -> Self {
        Committed {
            inner,
            seen: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether a batch committed since the last call.
    pub fn take(&self) -> bool {
        self.seen.swap(false, std::sync::atomic::Ordering::Relaxed)
    }
}

impl Events for Committed<'_> {
    fn event(&self, e: &Event<'_>) {
        if matches!(e, Event::Batch { .. }) {
            self.seen.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.inner.event(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_table_and_what_to_do() {
        let tables = ["posts".to_string(), "users".to_string()];
        let e = Event::CutOver {
            tables: &tables,
            pause: Some(Duration::from_micros(12_345)),
            group: None,
        };
        assert_eq!(
            line(&e).unwrap(),
            "cut-over: posts, users now have the recoded columns, swapped at one instant; reads and writes paused 12.3 ms; each original is kept as <table>_myrecode_old for rollback until `myrecode cleanup`"
        );
        let e = Event::CutOver {
            tables: &tables[..1],
            pause: Some(Duration::from_micros(4_000)),
            group: Some("forum"),
        };
        assert_eq!(
            line(&e).unwrap(),
            "cut-over: group 'forum': posts now has the recoded columns, swapped at one instant; reads and writes paused 4.0 ms; each original is kept as <table>_myrecode_old for rollback until `myrecode cleanup`"
        );
        let e = Event::CutOver {
            tables: &tables[..1],
            pause: None,
            group: None,
        };
        assert_eq!(
            line(&e).unwrap(),
            "cut-over: posts now has the recoded columns, swapped at one instant; reads and writes paused for a time not measured (the run that renamed them lost its connection before recording it); each original is kept as <table>_myrecode_old for rollback until `myrecode cleanup`"
        );
        assert_eq!(
            line(&Event::Ready {
                tables: &tables,
                group: Some("forum")
            })
            .unwrap(),
            "ready: group 'forum': posts, users are copied and caught up; replaying writes until `myrecode cutover --group forum` swaps them all at one instant (cutover: manual)"
        );
        assert_eq!(
            line(&Event::Rechecked {
                table: "film_text",
                engine: "MyISAM",
                check: "OK",
                repair: None
            })
            .unwrap(),
            "restart: film_text (MyISAM, no transactions): the server restarted since it was compared with its copy; CHECK TABLE … MEDIUM: OK; every row is compared again before its cut-over"
        );
        assert_eq!(
            line(&Event::Rechecked {
                table: "film_text",
                engine: "MyISAM",
                check: "error: Key 1 doesn't point at all records",
                repair: Some("OK")
            })
            .unwrap(),
            "restart: film_text (MyISAM, no transactions): the server restarted since it was compared with its copy; CHECK TABLE … MEDIUM: error: Key 1 doesn't point at all records; its index was out of step with its rows, REPAIR TABLE: OK; every row is compared again before its cut-over"
        );
        assert_eq!(
            line(&Event::Repaired {
                table: "film_text",
                engine: "MyISAM",
                found: "1032: Can't find record in 'film_text'; CHECK TABLE … EXTENDED",
                check: "error: Found 2 keys of 3",
                repair: "OK"
            })
            .unwrap(),
            "repair: film_text (MyISAM, no transactions): its index was out of step with its rows, as a server crash leaves it (1032: Can't find record in 'film_text'; CHECK TABLE … EXTENDED: error: Found 2 keys of 3); REPAIR TABLE: OK; every row is compared with its copy again before its cut-over"
        );
        let s = State::default();
        let batch = Event::Batch {
            table: "t",
            state: &s,
            estimated: 1,
            rows_per_sec: 1.0,
        };
        assert!(line(&batch).is_none());
        let held = [("posts".to_string(), 3)];
        assert_eq!(
            line(&Event::Held {
                undecided: &held,
                group: None
            })
            .unwrap(),
            format!(
                "held: posts holds 3 value(s) no reading decided: the cut-over waits until each is decided (nothing is swapped meanwhile; the triggers keep logging). {}",
                UNDECIDED_FIX
            )
        );
        assert!(line(&Event::Ready {
            tables: &tables[..1],
            group: None
        })
        .unwrap()
        .contains("`myrecode cutover`"));
    }

    #[test]
    fn notices_go_apart_from_the_lines() {
        let waiting = Event::Waiting {
            job: "shop",
            why: "throttled: Threads_running is 40, over max_threads_running 25",
        };
        assert_eq!(
            notice(&waiting).unwrap(),
            "myrecode: shop: throttled: Threads_running is 40, over max_threads_running 25"
        );
        assert_eq!(
            notice(&Event::GoingOn { job: "shop" }).unwrap(),
            "myrecode: shop: going on"
        );
        let paused = Event::ReplicaPaused {
            replica: "db2:3306",
            paused: Duration::from_micros(12_900),
            position: "0-1-42",
            ranges: 2,
            table: "posts",
        };
        assert_eq!(
            notice(&paused).unwrap(),
            "myrecode: replica db2:3306 paused 12 ms to be read at the primary's position 0-1-42: 2 key range(s) of posts the application writes to"
        );
        let stopped = Event::ReplicaNotRestarted {
            message: "replica db2:3306 was paused (STOP SLAVE) by myrecode and could not be started again",
        };
        assert_eq!(
            notice(&stopped).unwrap(),
            "myrecode: replica db2:3306 was paused (STOP SLAVE) by myrecode and could not be started again"
        );
        for e in [waiting, Event::GoingOn { job: "shop" }, paused, stopped] {
            assert!(line(&e).is_none(), "{e:?}");
        }
        assert!(notice(&Event::JobAborted { job: "shop" }).is_none());
    }
}

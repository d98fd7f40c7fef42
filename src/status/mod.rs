//! `myrecode status`: where a job stands, read from any terminal while it runs or after.
//!
//! Per table of the job: strategy, cut-over group, phase, rows done of about how many, pace
//! and ETA, the change log's backlog (copies); per cut-over group: swapped, or whether it
//! waits for `myrecode cutover`; for the job: why it waits now (paused, throttled). Strictly read-only: it never creates the
//! bookkeeping tables, and reads what the running job already writes: the checkpoint row
//! (progress, `updated_at`, `rows_per_sec`, kept by the same statement that saves each batch)
//! and the control row (the pacer's reason, written only when it changes).
//!
//! [`build`] (facts to a [`JobStatus`]), [`sql`] and [`render`] are pure; [`read`] gathers
//! the [`Facts`] from the server.

pub mod read;
pub mod render;
pub mod sql;

use crate::bookkeeping::checkpoint::{self, State};
use crate::engine::copy::Phase as CopyPhase;
use crate::engine::{control, throttle};
use crate::job::groups;
use crate::job::model::{Cutover, Job, Strategy};
use serde::Serialize;
use std::collections::HashMap;

pub use read::read;

/// The JSON document's layout version: fields may be added, none removed or changed in
/// meaning without bumping it.
pub const SCHEMA_VERSION: u32 = 1;

/// Below this many logged rows a copy is ready for the job's one cut-over: the copy driver's own threshold.
pub const READY_BACKLOG: u64 = crate::engine::copy::DRAIN_BEFORE_CUTOVER as u64;

/// What `status` read from the server, before any judgment.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Whether the schema has a checkpoint table at all (no: no job ever ran there).
    pub bookkeeping: bool,
    /// This job's checkpoint rows.
    pub checkpoints: Vec<Checkpoint>,
    /// The server's row estimate (`information_schema.TABLES`) of each job table that exists.
    pub estimates: HashMap<String, u64>,
    /// Rows in each copy's change log, for copies started and not done whose log exists.
    pub backlogs: HashMap<String, u64>,
    /// Copies a cut-over closed and did not rename (the log gone, its spare there): killed
    /// half-moved, they refuse writes until a run settles them.
    pub closed: Vec<String>,
    /// Values listed undecided per copied table (its cut-over waits for them).
    pub undecided: HashMap<String, u64>,
    /// The job's control row, if it has one.
    pub control: Option<Control>,
    /// The job's replicas as its run last sampled them.
    pub replicas: Vec<ReplicaStatus>,
}

/// One replica as the running job last sampled it (every second, from its heartbeat).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReplicaStatus {
    /// `host:port`.
    pub replica: String,
    /// `replicating`, `stopped` or `unreachable`.
    pub state: String,
    /// Its heartbeat lag in milliseconds (`None`: not replicating).
    pub lag_ms: Option<u64>,
    /// What the sample said, in words.
    pub detail: String,
    /// When it was sampled, in the server's time zone.
    pub sampled_at: Option<String>,
}

/// One checkpoint row as `status` reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checkpoint {
    /// Table name.
    pub table: String,
    /// Whether the table is finished.
    pub done: bool,
    /// Copy phase as stored (`''` for in place, or a copy checkpoint older than phases).
    pub phase: String,
    /// Rows read (copied, for a copy).
    pub rows_read: u64,
    /// Values rewritten.
    pub rows_changed: u64,
    /// Values quarantined.
    pub rows_quarantined: u64,
    /// In place: rows the application changed under a batch; copy: logged rows replayed.
    pub rows_conflicted: u64,
    /// The pace the run measured over its last window (`None`: not yet, or an older run).
    pub rows_per_sec: Option<f64>,
    /// When the row was last saved, in the server's time zone.
    pub updated_at: Option<String>,
    /// Seconds since the row was last saved, by the server's clock.
    pub idle_secs: Option<f64>,
}

/// The job's control row as `status` reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Control {
    /// The operator's command waiting (`pause`, `cutover`, `abort`; `''`: none).
    pub command: String,
    /// Why the running job waits, as its pacer last noted (`None`: it goes on).
    pub waiting: Option<String>,
    /// Seconds since that wait began, by the server's clock.
    pub waiting_secs: Option<f64>,
    /// What the command names (`cutover`: the group it allows; `None`: every group).
    pub argument: Option<String>,
}

/// Where a table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// No checkpoint yet (a copy setting up its shadow counts here too).
    NotStarted,
    /// In place, batches going on.
    Running,
    /// Copy: copying rows in key order.
    Copying,
    /// Copy: comparing the table with the shadow.
    Checking,
    /// Copy: replaying the change log until the cut-over.
    Replaying,
    /// Finished (a copy: swapped in).
    Done,
    /// A copy swapped back by `revert`.
    Reverted,
}

impl Phase {
    /// The word shown in the text table.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::NotStarted => "not started",
            Phase::Running => "running",
            Phase::Copying => "copying",
            Phase::Checking => "checking",
            Phase::Replaying => "replaying",
            Phase::Done => "done",
            Phase::Reverted => "reverted",
        }
    }

    /// Whether rows read move in this phase (so a pace and an ETA mean something).
    fn counts_rows(self) -> bool {
        matches!(self, Phase::Running | Phase::Copying)
    }
}

/// Why the job waits now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waiting {
    /// `paused`, `threads_running`, `replica_lag` or `other`.
    pub kind: String,
    /// The reason as the run says it.
    pub reason: String,
    /// Seconds it has waited for this reason (`None`: not known, e.g. a pause not yet seen by the run).
    pub seconds: Option<f64>,
}

/// One table of the job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableStatus {
    /// Table name.
    pub table: String,
    /// `in-place` or `copy`.
    pub strategy: String,
    /// Its cut-over group (`None`: the job names none, or the table is recoded in place).
    pub group: Option<String>,
    /// Where it is.
    pub phase: Phase,
    /// Copy: caught up (backlog under the cut-over threshold) in `replaying`.
    pub ready: bool,
    /// Rows processed (in place) or copied (copy) so far.
    pub rows_done: u64,
    /// The server's estimate of the table's rows (`None`: the table is missing).
    pub rows_estimated: Option<u64>,
    /// Values rewritten so far.
    pub rows_changed: u64,
    /// Values left alone as undecidable so far.
    pub rows_quarantined: u64,
    /// In place: rows the application changed under a batch; copy: logged rows replayed.
    pub rows_conflicted: u64,
    /// Rows per second over the run's last measuring window, while rows move.
    pub rows_per_sec: Option<f64>,
    /// Seconds until every row is read at that pace (a copy's check and replay come after).
    pub eta_seconds: Option<u64>,
    /// Copy: rows waiting in its change log.
    pub backlog: Option<u64>,
    /// Seconds since its checkpoint last moved.
    pub seconds_since_progress: Option<f64>,
    /// Its phase moves rows, yet the checkpoint has not moved for a minute and the job says
    /// it waits for nothing: the run may have stopped.
    pub stalled: bool,
    /// Copy: closed by a cut-over stopped half-moved; writes to it fail until a run settles it.
    pub closed: bool,
    /// Copy not swapped yet: values listed as no reading decided; its cut-over waits for them.
    pub held: u64,
}

/// The whole job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobStatus {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The job's name.
    pub job: String,
    /// The job's schema.
    pub schema: String,
    /// `auto` or `manual`.
    pub cutover: String,
    /// Whether any table has a checkpoint (no: the job has not started).
    pub started: bool,
    /// Whether every table is done.
    pub finished: bool,
    /// Why the job waits now, if it does.
    pub waiting: Option<Waiting>,
    /// `cutover: manual` and every copy started is caught up: `myrecode cutover` swaps them.
    pub waits_for_cutover: bool,
    /// `myrecode cutover` was given and the copies have not all swapped yet.
    pub cutover_requested: bool,
    /// One per table of the job, in the job's order.
    pub tables: Vec<TableStatus>,
    /// One per cut-over group the job names, in the order they are swapped (none: the job
    /// names none, and its copies are swapped at one instant).
    pub groups: Vec<GroupStatus>,
    /// The job's replicas, each with its lag and state as last sampled (none: no replicas).
    pub replicas: Vec<ReplicaStatus>,
    /// The job's bridge (docs/switching-clients.md), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bridge: Option<BridgeStatus>,
}

/// Where the job's bridge stands, and the application's live sessions on either side of
/// the swap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BridgeStatus {
    /// The legacy charset bridged sessions talk.
    pub legacy: String,
    /// The application's users (empty: every user without SUPER).
    pub users: Vec<String>,
    /// Whether the swap is done (the bridge on).
    pub on: bool,
    /// Whether `cleanup` removed it.
    pub removed: bool,
    /// Live sessions of the application opened before the swap (all of them before it):
    /// never bridged, they read '?' after it until they reconnect.
    pub legacy_sessions: i64,
    /// Live sessions opened after the swap: bridged, or talking utf8mb4 (MariaDB cannot
    /// say which).
    pub sessions_after: i64,
}

/// Where one cut-over group is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStatus {
    /// The group's name.
    pub name: String,
    /// Its tables, in job order.
    pub tables: Vec<String>,
    /// Every table of it swapped in.
    pub swapped: bool,
    /// Every table of it not swapped is caught up (its backlog under the cut-over threshold).
    pub ready: bool,
    /// It is the next group to swap, `cutover: manual`, and the run waits for
    /// `myrecode cutover --group NAME` (every copy of the job copied, its own caught up).
    pub waits_for_cutover: bool,
    /// `myrecode cutover` was given for it and it is not swapped yet.
    pub cutover_requested: bool,
}

/// Judges the facts: each table's phase, pace and ETA, each group's state, and what the job
/// waits for.
pub fn build(job: &Job, job_id: &str, f: &Facts) -> JobStatus {
    let mut tables: Vec<TableStatus> = job
        .tables
        .iter()
        .map(|t| table_status(t.strategy, &t.name, f))
        .collect();
    for t in &mut tables {
        t.group = groups::group_of(job, &t.table).map(str::to_string);
    }
    let manual = job.defaults.cutover == Cutover::Manual;
    let control = f.control.as_ref();
    let command = control.map_or("", |c| c.command.as_str());
    let asked = (command == control::Command::Cutover.as_str())
        .then(|| control.and_then(|c| c.argument.clone()));
    let copies: Vec<&TableStatus> = tables
        .iter()
        .filter(|t| t.strategy == Strategy::Copy.as_str() && t.phase != Phase::Done)
        .collect();
    // The runner cuts a group over once every copy of the job is copied and checked, and the
    // group's own logs are caught up; groups go in order, so only the next can be waited for.
    let all_copied = copies.iter().all(|t| t.phase == Phase::Replaying);
    let of = |names: &[&str]| -> Vec<&TableStatus> {
        tables
            .iter()
            .filter(|t| names.contains(&t.table.as_str()))
            .collect()
    };
    let mut next_seen = false;
    let mut group_states = Vec::new();
    let mut next: Option<(bool, bool)> = None;
    for g in groups::ordered(job) {
        let mine = of(&g.tables);
        let swapped = mine.iter().all(|t| t.phase == Phase::Done);
        let ready = !swapped && mine.iter().all(|t| t.phase == Phase::Done || t.ready);
        let is_next = !swapped && !next_seen;
        next_seen |= is_next;
        let requested = is_next
            && asked
                .as_ref()
                .is_some_and(|a| a.is_none() || a.as_deref() == g.name);
        // A group holding undecided values waits for decisions, not for the command.
        let held = mine.iter().any(|t| t.held > 0);
        let waits = is_next && manual && !requested && ready && all_copied && !held;
        if is_next {
            next = Some((waits, requested));
        }
        if let Some(name) = g.name {
            group_states.push(GroupStatus {
                name: name.to_string(),
                tables: g.tables.iter().map(|t| t.to_string()).collect(),
                swapped,
                ready,
                waits_for_cutover: waits,
                cutover_requested: requested,
            });
        }
    }
    let (waits_for_cutover, cutover_requested) = next.unwrap_or((false, false));
    let waiting = if command == control::Command::Pause.as_str() {
        Some(Waiting {
            kind: throttle::wait_kind(throttle::PAUSED).to_string(),
            reason: throttle::PAUSED.to_string(),
            seconds: control
                .filter(|c| c.waiting.as_deref() == Some(throttle::PAUSED))
                .and_then(|c| c.waiting_secs),
        })
    } else {
        control.and_then(|c| {
            c.waiting.as_ref().map(|w| Waiting {
                kind: throttle::wait_kind(w).to_string(),
                reason: w.clone(),
                seconds: c.waiting_secs,
            })
        })
    };
    if waiting.is_some() {
        // A job that says why it waits has not stalled.
        for t in &mut tables {
            t.stalled = false;
        }
    }
    JobStatus {
        schema_version: SCHEMA_VERSION,
        job: job_id.to_string(),
        schema: job.schema.clone(),
        cutover: if manual { "manual" } else { "auto" }.to_string(),
        started: tables.iter().any(|t| t.phase != Phase::NotStarted),
        finished: tables.iter().all(|t| t.phase == Phase::Done),
        waiting,
        waits_for_cutover,
        cutover_requested,
        tables,
        groups: group_states,
        replicas: f.replicas.clone(),
        bridge: None,
    }
}

/// One table's status from its checkpoint, estimate and backlog.
fn table_status(strategy: Strategy, name: &str, f: &Facts) -> TableStatus {
    let cp = f.checkpoints.iter().find(|c| c.table == name);
    let phase = match (cp, strategy) {
        (None, _) => Phase::NotStarted,
        (Some(c), _) if c.phase == "reverted" => Phase::Reverted,
        (Some(c), _) if c.done => Phase::Done,
        (Some(_), Strategy::InPlace) => Phase::Running,
        (Some(c), Strategy::Copy) => {
            let state = State {
                phase: c.phase.clone(),
                ..State::default()
            };
            match CopyPhase::of(&state) {
                CopyPhase::Copying => Phase::Copying,
                CopyPhase::Checking => Phase::Checking,
                CopyPhase::Replaying => Phase::Replaying,
                CopyPhase::Done => Phase::Done,
                CopyPhase::Reverted => Phase::Reverted,
            }
        }
    };
    let estimated = f.estimates.get(name).copied();
    let backlog = match phase {
        Phase::Copying | Phase::Checking | Phase::Replaying => f.backlogs.get(name).copied(),
        _ => None,
    };
    let idle = cp.and_then(|c| c.idle_secs);
    let fresh = idle.is_some_and(|s| s < checkpoint::RATE_IDLE_SECS as f64);
    let rate = cp
        .and_then(|c| c.rows_per_sec)
        .filter(|_| phase.counts_rows() && fresh);
    let rows_done = cp.map_or(0, |c| c.rows_read);
    TableStatus {
        table: name.to_string(),
        strategy: strategy.as_str().to_string(),
        group: None,
        phase,
        ready: phase == Phase::Replaying && backlog.is_some_and(|b| b < READY_BACKLOG),
        rows_done,
        rows_estimated: estimated,
        rows_changed: cp.map_or(0, |c| c.rows_changed),
        rows_quarantined: cp.map_or(0, |c| c.rows_quarantined),
        rows_conflicted: cp.map_or(0, |c| c.rows_conflicted),
        rows_per_sec: rate,
        eta_seconds: eta(rows_done, estimated, rate),
        backlog,
        seconds_since_progress: if phase == Phase::NotStarted {
            None
        } else {
            idle
        },
        stalled: matches!(phase, Phase::Running | Phase::Copying | Phase::Checking)
            && idle.is_some()
            && !fresh,
        closed: f.closed.iter().any(|t| t == name),
        held: match phase {
            Phase::Copying | Phase::Checking | Phase::Replaying => {
                f.undecided.get(name).copied().unwrap_or(0)
            }
            _ => 0,
        },
    }
}

/// Seconds left at `rate` rows per second to reach the estimate (0 once past it: estimates
/// run short); `None` without a pace or an estimate.
pub fn eta(done: u64, estimated: Option<u64>, rate: Option<f64>) -> Option<u64> {
    let rate = rate.filter(|r| *r > 0.0 && r.is_finite())?;
    let left = estimated?.saturating_sub(done);
    Some((left as f64 / rate).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job of an in-place table and two copies, cut over by hand unless `auto`.
    pub(crate) fn job(auto: bool) -> Job {
        let text = format!(
            "version: 1\nschema: shop\ndefaults:\n  cutover: {}\ntables:\n\
             - name: notes\n  strategy: in-place\n  columns:\n  - name: body\n    source: auto\n    target: TEXT CHARACTER SET utf8mb4\n\
             - name: posts\n  strategy: copy\n  columns:\n  - name: body\n    source: auto\n    target: TEXT CHARACTER SET utf8mb4\n\
             - name: users\n  strategy: copy\n  columns:\n  - name: name\n    source: auto\n    target: TEXT CHARACTER SET utf8mb4\n",
            if auto { "auto" } else { "manual" }
        );
        serde_yaml::from_str(&text).unwrap()
    }

    /// [`job`] (manual) with `users` swapped first, as group `accounts`, then `posts` as `forum`.
    pub(crate) fn grouped_job() -> Job {
        let mut j = job(false);
        j.cutover_groups = vec![
            crate::job::model::CutoverGroup {
                name: "accounts".into(),
                tables: vec!["users".into()],
            },
            crate::job::model::CutoverGroup {
                name: "forum".into(),
                tables: vec!["posts".into()],
            },
        ];
        j
    }

    fn cp(table: &str, phase: &str, done: bool, rows: u64) -> Checkpoint {
        Checkpoint {
            table: table.into(),
            done,
            phase: phase.into(),
            rows_read: rows,
            idle_secs: Some(0.5),
            ..Checkpoint::default()
        }
    }

    #[test]
    fn a_job_without_checkpoints_has_not_started() {
        let s = build(&job(false), "j", &Facts::default());
        assert!(!s.started && !s.finished && !s.waits_for_cutover);
        assert!(s.tables.iter().all(|t| t.phase == Phase::NotStarted
            && t.rows_per_sec.is_none()
            && t.seconds_since_progress.is_none()
            && !t.stalled));
    }

    #[test]
    fn a_caught_up_copy_under_manual_cutover_waits_for_the_command() {
        let mut f = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("notes", "", true, 120),
                cp("posts", "replaying", false, 5000),
            ],
            ..Facts::default()
        };
        f.backlogs.insert("posts".into(), 3);
        f.estimates.insert("posts".into(), 4980);
        let s = build(&job(false), "j", &f);
        let phases: Vec<Phase> = s.tables.iter().map(|t| t.phase).collect();
        assert_eq!(phases, [Phase::Done, Phase::Replaying, Phase::NotStarted]);
        // A copy not started yet holds the one cut-over back.
        assert!(s.tables[1].ready && !s.waits_for_cutover && !s.cutover_requested);
        f.checkpoints.push(cp("users", "replaying", false, 10));
        f.backlogs.insert("users".into(), 0);
        let s = build(&job(false), "j", &f);
        assert!(s.tables[2].ready && s.waits_for_cutover && !s.cutover_requested);
        // Held by undecided values: it waits for decisions, not for `myrecode cutover`.
        let mut held = f.clone();
        held.undecided.insert("posts".into(), 3);
        let h = build(&job(false), "j", &held);
        assert_eq!(h.tables[1].held + h.tables[2].held, 3);
        assert!(!h.waits_for_cutover);
        assert_eq!(s.tables[1].backlog, Some(3));
        // Under `cutover: auto` it swaps by itself.
        assert!(!build(&job(true), "j", &f).waits_for_cutover);
        // A backlog at the threshold is not caught up yet.
        f.backlogs.insert("posts".into(), READY_BACKLOG);
        assert!(!build(&job(false), "j", &f).waits_for_cutover);
        // Once the command is given, the job no longer waits for it.
        f.backlogs.insert("posts".into(), 0);
        f.control = Some(Control {
            command: "cutover".into(),
            ..Control::default()
        });
        let s = build(&job(false), "j", &f);
        assert!(s.cutover_requested && !s.waits_for_cutover);
        // A copy still copying holds the whole job back.
        f.control = None;
        f.checkpoints.pop();
        f.checkpoints.push(cp("users", "copying", false, 10));
        assert!(!build(&job(false), "j", &f).waits_for_cutover);
    }

    #[test]
    fn groups_wait_for_their_own_cutover_in_order() {
        let mut f = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("notes", "", true, 120),
                cp("posts", "replaying", false, 5000),
                cp("users", "copying", false, 10),
            ],
            ..Facts::default()
        };
        f.backlogs.insert("posts".into(), 0);
        f.backlogs.insert("users".into(), 0);
        let s = build(&grouped_job(), "j", &f);
        let groups: Vec<Option<&str>> = s.tables.iter().map(|t| t.group.as_deref()).collect();
        assert_eq!(groups, [None, Some("forum"), Some("accounts")]);
        // `forum` is caught up, but `accounts` swaps first and is still copying.
        assert!(s.groups[1].ready && !s.groups[1].waits_for_cutover);
        assert!(!s.groups[0].ready && !s.waits_for_cutover);
        f.checkpoints[2] = cp("users", "replaying", false, 300);
        let s = build(&grouped_job(), "j", &f);
        assert!(s.groups[0].waits_for_cutover && s.waits_for_cutover);
        assert!(
            !s.groups[1].waits_for_cutover,
            "only the next group is waited for"
        );
        // `cutover --group accounts`: asked for, no longer waited for; `forum` still waits its turn.
        f.control = Some(Control {
            command: "cutover".into(),
            argument: Some("accounts".into()),
            ..Control::default()
        });
        let s = build(&grouped_job(), "j", &f);
        assert!(s.groups[0].cutover_requested && !s.groups[0].waits_for_cutover);
        assert!(s.cutover_requested && !s.groups[1].cutover_requested);
        // `accounts` swapped: `forum` is next, and waits for its own command.
        f.control = None;
        f.checkpoints[2] = cp("users", "done", true, 300);
        let s = build(&grouped_job(), "j", &f);
        assert!(s.groups[0].swapped && !s.groups[0].ready);
        assert!(s.groups[1].waits_for_cutover && s.waits_for_cutover);
        // A command naming another group does not let this one go.
        f.control = Some(Control {
            command: "cutover".into(),
            argument: Some("accounts".into()),
            ..Control::default()
        });
        assert!(build(&grouped_job(), "j", &f).groups[1].waits_for_cutover);
        // A job without groups lists none, and its tables have none.
        let s = build(&job(false), "j", &f);
        assert!(s.groups.is_empty() && s.tables.iter().all(|t| t.group.is_none()));
    }

    #[test]
    fn pace_and_eta_only_while_rows_move_and_the_checkpoint_is_fresh() {
        let mut c = cp("notes", "", false, 1000);
        c.rows_per_sec = Some(250.0);
        let mut f = Facts {
            bookkeeping: true,
            checkpoints: vec![c, {
                let mut c = cp("posts", "checking", false, 5000);
                c.rows_per_sec = Some(0.0);
                c
            }],
            ..Facts::default()
        };
        f.estimates.insert("notes".into(), 3000);
        let s = build(&job(false), "j", &f);
        assert_eq!(s.tables[0].phase, Phase::Running);
        assert_eq!(
            (s.tables[0].rows_per_sec, s.tables[0].eta_seconds),
            (Some(250.0), Some(8))
        );
        assert_eq!(s.tables[1].rows_per_sec, None, "a check reads no new rows");
        f.checkpoints[0].idle_secs = Some(600.0);
        let s = build(&job(false), "j", &f);
        assert_eq!(
            (s.tables[0].rows_per_sec, s.tables[0].eta_seconds),
            (None, None)
        );
        assert!(
            s.tables[0].stalled,
            "no save for ten minutes and no reason given"
        );
        f.control = Some(Control {
            command: "pause".into(),
            waiting: Some(throttle::PAUSED.into()),
            waiting_secs: Some(590.0),
            ..Control::default()
        });
        let s = build(&job(false), "j", &f);
        assert!(!s.tables[0].stalled, "paused, not stalled");
        let w = s.waiting.unwrap();
        assert_eq!((w.kind.as_str(), w.seconds), ("paused", Some(590.0)));
    }

    #[test]
    fn the_pacers_note_is_the_reason_and_a_pause_wins_over_it() {
        let reason = throttle::load_reason(31, 25);
        let mut f = Facts {
            control: Some(Control {
                command: String::new(),
                waiting: Some(reason.clone()),
                waiting_secs: Some(12.0),
                ..Control::default()
            }),
            ..Facts::default()
        };
        let w = build(&job(false), "j", &f).waiting.unwrap();
        assert_eq!(
            w,
            Waiting {
                kind: "threads_running".into(),
                reason,
                seconds: Some(12.0)
            }
        );
        // Paused by the operator while the run was still throttled: the pause is what holds it.
        f.control.as_mut().unwrap().command = "pause".into();
        let w = build(&job(false), "j", &f).waiting.unwrap();
        assert_eq!((w.kind.as_str(), w.seconds), ("paused", None));
    }

    #[test]
    fn eta_rounds_up_and_stops_at_the_estimate() {
        assert_eq!(eta(0, Some(1000), Some(300.0)), Some(4));
        assert_eq!(eta(1200, Some(1000), Some(300.0)), Some(0));
        assert_eq!(eta(0, None, Some(300.0)), None);
        assert_eq!(eta(0, Some(10), Some(0.0)), None);
        assert_eq!(eta(0, Some(10), None), None);
    }
}

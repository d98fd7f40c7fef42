//! `status` as text for a terminal, and as JSON: both from one [`JobStatus`].

use super::{GroupStatus, JobStatus, Phase, TableStatus};
use crate::db::quote;

/// The JSON document (`schema_version` 1), pretty-printed.
pub fn json(s: &JobStatus) -> String {
    serde_json::to_string_pretty(s).expect("a status serializes")
}

/// The text: a header, one line per table (with its cut-over group, when the job names
/// groups), one line per group, then why the job waits, if it does.
pub fn text(s: &JobStatus) -> String {
    let state = if !s.started {
        "not started (no checkpoint yet)"
    } else if s.finished {
        "finished"
    } else {
        "in progress"
    };
    let mut out = format!(
        "job '{}' on schema {}, cut-over {}: {state}\n",
        s.job,
        quote::ident(&s.schema),
        s.cutover
    );
    let grouped = !s.groups.is_empty();
    let mut head = vec!["table", "strategy"];
    if grouped {
        head.push("group");
    }
    head.extend(["phase", "rows", "rate", "ETA", "backlog"]);
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    rows.extend(s.tables.iter().map(|t| table_row(t, grouped)));
    out.push_str(&aligned(&rows));
    for t in s.tables.iter().filter(|t| t.stalled) {
        out.push_str(&format!(
            "{}: no progress for {}: is the run still going? (a rerun resumes from the checkpoint)\n",
            t.table,
            duration(t.seconds_since_progress.unwrap_or(0.0))
        ));
    }
    let closed: Vec<&str> = s
        .tables
        .iter()
        .filter(|t| t.closed)
        .map(|t| t.table.as_str())
        .collect();
    if !closed.is_empty() {
        out.push_str(&format!(
            "closed: {}: a cut-over was stopped before its rename with them half-moved, and writes to them fail \
             (1146, their change log missing) until `myrecode run <job> --execute` (or `myrecode abort`) settles it\n",
            closed.join(", ")
        ));
    }
    for t in s.tables.iter().filter(|t| t.held > 0) {
        out.push_str(&format!(
            "held: {} holds {} value(s) no reading decided: its cut-over waits until each is decided. {}\n",
            t.table,
            t.held,
            crate::engine::copy::undecided::FIX
        ));
    }
    for g in &s.groups {
        out.push_str(&group_line(g, s));
    }
    for r in &s.replicas {
        out.push_str(&format!(
            "replica {}: {} (sampled {})\n",
            r.replica,
            r.detail,
            r.sampled_at.as_deref().unwrap_or("?")
        ));
    }
    if let Some(b) = &s.bridge {
        out.push_str(&bridge_line(b));
    }
    if let Some(w) = &s.waiting {
        match w.seconds {
            Some(secs) => out.push_str(&format!("now: {} (for {})\n", w.reason, duration(secs))),
            None => out.push_str(&format!("now: {}\n", w.reason)),
        }
    }
    if grouped {
        return out;
    }
    let ready: Vec<&str> = s
        .tables
        .iter()
        .filter(|t| t.ready)
        .map(|t| t.table.as_str())
        .collect();
    if s.waits_for_cutover {
        out.push_str(&format!(
            "waits for `myrecode cutover`: {} copied and caught up, replaying writes until then\n",
            ready.join(", ")
        ));
    } else if s.cutover_requested {
        out.push_str("cut-over requested: the copies swap in once caught up\n");
    }
    out
}

/// One group's line: its tables and where it stands.
/// The bridge's line: whether it is on, and the application's sessions either side of the swap.
fn bridge_line(b: &super::BridgeStatus) -> String {
    let users = if b.users.is_empty() {
        "the application's".to_string()
    } else {
        b.users.join(", ")
    };
    if b.removed {
        return "bridge: removed by cleanup\n".to_string();
    }
    if !b.on {
        return format!(
            "bridge: installed, off until the swap ({users} sessions talking latin1 will talk {}); {} live session(s) of {users}\n",
            b.legacy, b.legacy_sessions
        );
    }
    format!(
        "bridge: on ({users} sessions talking latin1 talk {}); live sessions of {users}: {} opened before the swap (legacy, not bridged: \
         they read '?' until they reconnect), {} after it\n",
        b.legacy, b.legacy_sessions, b.sessions_after
    )
}

fn group_line(g: &GroupStatus, s: &JobStatus) -> String {
    let state = if g.swapped {
        "swapped".to_string()
    } else if g.waits_for_cutover {
        format!(
            "waits for `myrecode cutover --group {}`: copied and caught up, replaying writes until then",
            g.name
        )
    } else if g.cutover_requested {
        "cut-over requested: swaps in once caught up".to_string()
    } else {
        let before = s
            .groups
            .iter()
            .take_while(|o| o.name != g.name)
            .filter(|o| !o.swapped)
            .map(|o| format!("'{}'", o.name))
            .last();
        let started = s
            .tables
            .iter()
            .any(|t| g.tables.contains(&t.table) && t.phase != Phase::NotStarted);
        match (before, g.ready, started) {
            (Some(b), true, _) => format!("caught up; swaps after group {b}"),
            (Some(b), false, _) => format!("not caught up yet; swaps after group {b}"),
            (None, _, false) => "not started".to_string(),
            (None, _, true) if s.cutover == "auto" => {
                "swaps once every copy is caught up".to_string()
            }
            (None, _, true) => {
                "not caught up yet (every copy of the job is copied before the first swap)"
                    .to_string()
            }
        }
    };
    format!("group {} ({}): {state}\n", g.name, g.tables.join(", "))
}

/// One table's cells (with its group's, when `grouped`).
fn table_row(t: &TableStatus, grouped: bool) -> Vec<String> {
    let dash = || "-".to_string();
    let estimate = t
        .rows_estimated
        .map_or("?".to_string(), |e| format!("~{e}"));
    let phase = if t.ready {
        format!("{} (ready)", t.phase.as_str())
    } else {
        t.phase.as_str().to_string()
    };
    let mut row = vec![t.table.clone(), t.strategy.clone()];
    if grouped {
        row.push(t.group.clone().unwrap_or_else(dash));
    }
    row.extend([
        phase,
        if t.phase == Phase::NotStarted {
            format!("- of {estimate}")
        } else {
            format!("{} of {estimate}", t.rows_done)
        },
        t.rows_per_sec.map_or_else(dash, |r| format!("{r:.0}/s")),
        t.eta_seconds.map_or_else(dash, |e| duration(e as f64)),
        t.backlog.map_or_else(dash, |b| b.to_string()),
    ]);
    row
}

/// Rows of cells in columns padded to their widest cell (counted in characters: table
/// names may be Cyrillic), two spaces apart, the last column unpadded.
fn aligned(rows: &[Vec<String>]) -> String {
    let mut widths = vec![0usize; rows.first().map_or(0, Vec::len)];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(&widths).enumerate() {
            line.push_str(c);
            if i + 1 < r.len() {
                line.push_str(&" ".repeat(w - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A duration a person reads at a glance: `42s`, `3m05s`, `1h02m`, `2d03h`.
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{grouped_job, job};
    use super::super::{build, Checkpoint, Control, Facts};
    use super::*;
    use crate::engine::throttle;

    fn cp(table: &str, phase: &str, done: bool, rows: u64) -> Checkpoint {
        Checkpoint {
            table: table.into(),
            done,
            phase: phase.into(),
            rows_read: rows,
            rows_changed: rows / 2,
            idle_secs: Some(1.0),
            ..Checkpoint::default()
        }
    }

    #[test]
    fn a_job_waiting_for_its_cutover_while_throttled() {
        let mut posts = cp("posts", "replaying", false, 5000);
        posts.rows_per_sec = Some(812.4);
        let mut f = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("notes", "", true, 120),
                posts,
                cp("users", "replaying", false, 300),
            ],
            control: Some(Control {
                command: String::new(),
                waiting: Some(throttle::load_reason(31, 25)),
                waiting_secs: Some(75.0),
                ..Control::default()
            }),
            ..Facts::default()
        };
        f.estimates.insert("notes".into(), 118);
        f.estimates.insert("posts".into(), 4987);
        f.estimates.insert("users".into(), 300);
        f.backlogs.insert("posts".into(), 2);
        f.backlogs.insert("users".into(), 0);
        assert_eq!(
            text(&build(&job(false), "shop-job", &f)),
            "job 'shop-job' on schema `shop`, cut-over manual: in progress
table  strategy  phase              rows           rate  ETA  backlog
notes  in-place  done               120 of ~118    -     -    -
posts  copy      replaying (ready)  5000 of ~4987  -     -    2
users  copy      replaying (ready)  300 of ~300    -     -    0
now: throttled: Threads_running is 31, over max_threads_running 25 (for 1m15s)
waits for `myrecode cutover`: posts, users copied and caught up, replaying writes until then
"
        );
    }

    #[test]
    fn each_replica_with_its_state_and_lag_before_the_reason_to_wait() {
        use super::super::ReplicaStatus;
        let f = Facts {
            bookkeeping: true,
            checkpoints: vec![cp("notes", "", false, 120)],
            control: Some(Control {
                waiting: Some("throttled: replica db3:3306 replication stopped: IO thread Yes, SQL thread No; waiting until it replicates again".into()),
                waiting_secs: Some(4.0),
                ..Control::default()
            }),
            replicas: vec![
                ReplicaStatus {
                    replica: "db2:3306".into(),
                    state: "replicating".into(),
                    lag_ms: Some(12),
                    detail: "lag 12 ms (heartbeat)".into(),
                    sampled_at: Some("2026-11-25 00:12:12".into()),
                },
                ReplicaStatus {
                    replica: "db3:3306".into(),
                    state: "stopped".into(),
                    lag_ms: None,
                    detail: "replication stopped: IO thread Yes, SQL thread No".into(),
                    sampled_at: Some("2026-11-25 00:12:12".into()),
                },
            ],
            ..Facts::default()
        };
        let s = build(&job(false), "j", &f);
        let t = text(&s);
        assert!(
            t.ends_with(
                "replica db2:3306: lag 12 ms (heartbeat) (sampled 2026-11-25 00:12:12)\n\
                 replica db3:3306: replication stopped: IO thread Yes, SQL thread No (sampled 2026-11-25 00:12:12)\n\
                 now: throttled: replica db3:3306 replication stopped: IO thread Yes, SQL thread No; waiting until it replicates again (for 4s)\n"
            ),
            "{t}"
        );
        let v: serde_json::Value = serde_json::from_str(&json(&s)).unwrap();
        assert_eq!(v["waiting"]["kind"], "replica_lag");
        assert_eq!(v["replicas"][0]["lag_ms"], 12);
        assert_eq!(v["replicas"][1]["state"], "stopped");
        assert_eq!(v["replicas"][1]["lag_ms"], serde_json::Value::Null);
    }

    #[test]
    fn a_job_copying_with_its_pace_and_one_stalled() {
        let mut notes = cp("notes", "", false, 1000);
        notes.rows_per_sec = Some(250.0);
        let mut posts = cp("posts", "copying", false, 40);
        posts.idle_secs = Some(3725.0);
        let mut f = Facts {
            bookkeeping: true,
            checkpoints: vec![notes, posts],
            ..Facts::default()
        };
        f.estimates.insert("notes".into(), 31_000);
        f.backlogs.insert("posts".into(), 70);
        assert_eq!(
            text(&build(&job(true), "j", &f)),
            "job 'j' on schema `shop`, cut-over auto: in progress
table  strategy  phase        rows            rate   ETA    backlog
notes  in-place  running      1000 of ~31000  250/s  2m00s  -
posts  copy      copying      40 of ?         -      -      70
users  copy      not started  - of ?          -      -      -
posts: no progress for 1h02m: is the run still going? (a rerun resumes from the checkpoint)
"
        );
    }

    #[test]
    fn copies_closed_by_a_cut_over_stopped_half_moved_are_named_with_the_way_out() {
        let f = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("notes", "", true, 9),
                cp("posts", "replaying", false, 40),
                cp("users", "replaying", false, 60),
            ],
            closed: vec!["posts".into(), "users".into()],
            ..Facts::default()
        };
        let s = build(&job(false), "j", &f);
        assert!(
            text(&s).ends_with(
                "closed: posts, users: a cut-over was stopped before its rename with them half-moved, and writes \
                 to them fail (1146, their change log missing) until `myrecode run <job> --execute` (or `myrecode \
                 abort`) settles it\n"
            ),
            "{}",
            text(&s)
        );
        let v: serde_json::Value = serde_json::from_str(&json(&s)).unwrap();
        assert_eq!(v["tables"][1]["closed"], true);
        assert_eq!(v["tables"][0]["closed"], false);
        assert!(!text(&build(&job(false), "j", &Facts::default())).contains("closed"));
    }

    #[test]
    fn a_job_not_started_and_one_finished() {
        assert_eq!(
            text(&build(&job(false), "j", &Facts::default())),
            "job 'j' on schema `shop`, cut-over manual: not started (no checkpoint yet)
table  strategy  phase        rows    rate  ETA  backlog
notes  in-place  not started  - of ?  -     -    -
posts  copy      not started  - of ?  -     -    -
users  copy      not started  - of ?  -     -    -
"
        );
        let f = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("notes", "", true, 1),
                cp("posts", "done", true, 2),
                cp("users", "done", true, 3),
            ],
            ..Facts::default()
        };
        let s = build(&job(false), "j", &f);
        assert!(text(&s).starts_with("job 'j' on schema `shop`, cut-over manual: finished\n"));
        assert!(s.finished && !s.waits_for_cutover);
    }

    #[test]
    fn a_grouped_job_shows_each_tables_group_and_each_group_where_it_stands() {
        let mut f = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("notes", "", true, 120),
                cp("posts", "replaying", false, 5000),
                cp("users", "done", true, 300),
            ],
            ..Facts::default()
        };
        f.backlogs.insert("posts".into(), 1);
        assert_eq!(
            text(&build(&grouped_job(), "j", &f)),
            "job 'j' on schema `shop`, cut-over manual: in progress
table  strategy  group     phase              rows       rate  ETA  backlog
notes  in-place  -         done               120 of ?   -     -    -
posts  copy      forum     replaying (ready)  5000 of ?  -     -    1
users  copy      accounts  done               300 of ?   -     -    -
group accounts (users): swapped
group forum (posts): waits for `myrecode cutover --group forum`: copied and caught up, replaying writes until then
"
        );
        f.checkpoints[2] = cp("users", "replaying", false, 300);
        f.backlogs.insert("users".into(), 400);
        let t = text(&build(&grouped_job(), "j", &f));
        assert!(
            t.ends_with("group accounts (users): not caught up yet (every copy of the job is copied before the first swap)\n\
                         group forum (posts): caught up; swaps after group 'accounts'\n"),
            "{t}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&json(&build(&grouped_job(), "j", &f))).unwrap();
        assert_eq!(v["tables"][1]["group"], "forum");
        assert_eq!(v["tables"][0]["group"], serde_json::Value::Null);
        assert_eq!(v["groups"][0]["name"], "accounts");
        assert_eq!(v["groups"][1]["tables"][0], "posts");
        let keys: Vec<&str> = v["groups"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "cutover_requested",
                "name",
                "ready",
                "swapped",
                "tables",
                "waits_for_cutover"
            ]
        );
    }

    #[test]
    fn json_has_stable_field_names() {
        let mut f = Facts {
            bookkeeping: true,
            checkpoints: vec![
                cp("posts", "replaying", false, 7),
                cp("users", "replaying", false, 3),
            ],
            control: Some(Control {
                command: "pause".into(),
                ..Control::default()
            }),
            ..Facts::default()
        };
        f.backlogs.insert("posts".into(), 0);
        f.backlogs.insert("users".into(), 0);
        let v: serde_json::Value =
            serde_json::from_str(&json(&build(&job(false), "j", &f))).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["waiting"]["kind"], "paused");
        assert_eq!(v["waits_for_cutover"], true);
        let posts = &v["tables"][1];
        let keys: Vec<&str> = posts
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut want = [
            "table",
            "strategy",
            "group",
            "phase",
            "ready",
            "rows_done",
            "rows_estimated",
            "rows_changed",
            "rows_quarantined",
            "rows_conflicted",
            "rows_per_sec",
            "eta_seconds",
            "backlog",
            "seconds_since_progress",
            "stalled",
            "closed",
            "held",
        ];
        want.sort_unstable();
        assert_eq!(keys, want);
        let top: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        let mut want = [
            "schema_version",
            "job",
            "schema",
            "cutover",
            "started",
            "finished",
            "waiting",
            "waits_for_cutover",
            "cutover_requested",
            "tables",
            "groups",
            "replicas",
        ];
        want.sort_unstable();
        assert_eq!(top, want);
        assert_eq!(posts["phase"], "replaying");
        assert_eq!(v["tables"][0]["phase"], "not-started");
        assert_eq!(v["tables"][0]["rows_estimated"], serde_json::Value::Null);
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(0.4), "0s");
        assert_eq!(duration(59.0), "59s");
        assert_eq!(duration(185.0), "3m05s");
        assert_eq!(duration(3725.0), "1h02m");
        assert_eq!(duration(2.0 * 86_400.0 + 3.0 * 3600.0), "2d03h");
    }
}

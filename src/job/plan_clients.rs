//! The plan's `clients:` section: the application's clients the scan saw, what the switch
//! does for each and what it cannot, and the bridge, on where the plan finds the legacy
//! setup (latin1 columns holding one legacy charset, clients talking latin1). Pure.

use super::yaml_scalar::comment_safe;
use super::yaml_scalar::{flow, scalar};
use crate::clients::model::{bridge_charset, verdict, ClientsSeen, Kind};
use crate::scan::model::{ColumnScan, ScanReport};
use std::fmt::Write;

/// The legacy charset the bridge would give sessions: the one charset (server name) the
/// copied latin1 columns' legacy text is in, or why there is none.
pub fn legacy_of(columns: &[&ColumnScan]) -> Result<&'static str, String> {
    let mut found: Vec<&'static str> = Vec::new();
    for c in columns
        .iter()
        .filter(|c| c.charset.as_deref() == Some("latin1"))
    {
        let best = c
            .labels
            .iter()
            .filter_map(|(l, n)| bridge_charset(l).map(|cs| (cs, *n)))
            .max_by_key(|(_, n)| *n);
        if let Some((cs, _)) = best {
            if !found.contains(&cs) {
                found.push(cs);
            }
        }
    }
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err("no copied latin1 column holds cp1251, KOI8 or cp866 text".to_string()),
        many => Err(format!(
            "the copied latin1 columns hold several legacy charsets ({}), and a session talks one",
            many.join(", ")
        )),
    }
}

/// Writes the `clients:` section for `schema`, whose copied columns are `columns`.
pub fn clients_block(o: &mut String, report: &ScanReport, schema: &str, columns: &[&ColumnScan]) {
    let seen = report.clients.iter().find(|c| c.schema == schema);
    let legacy = legacy_of(columns);
    let handshake = seen.map(|s| s.server_handshake.as_str());
    let latin1_clients = seen.is_some_and(|s| {
        s.seen.iter().any(|c| {
            !c.privileged
                && crate::clients::model::kinds(c, &s.server_handshake)
                    .contains(&Kind::Latin1Handshake)
        })
    });
    // On only where the scan saw the legacy setup itself: a client without SUPER talking
    // latin1 to the schema. A latin1 server default alone proves no such application (a
    // global init_connect and triggers for nobody would be load and risk for nothing).
    let bridge = match &legacy {
        Ok(cs) if latin1_clients => Some(*cs),
        _ => None,
    };
    let _ = writeln!(
        o,
        "# The application's clients through the switch (docs/switching-clients.md)."
    );
    match seen {
        None => {
            let _ = writeln!(
                o,
                "# The scan read no clients (an older report, or the user may not read the process list): scan again to have them here."
            );
        }
        Some(s) => clients_seen(o, s, bridge),
    }
    match (&legacy, bridge) {
        (_, Some(cs)) => {
            let _ = writeln!(
                o,
                "# bridge: true (found: latin1 columns holding {cs}, clients talking latin1): installed before the copy and\n\
                 # inert until the cut-over's rename turns it on; then a latin1 session of the users below talks {cs}.\n\
                 # `myrecode cleanup` removes it: run it once every backend talks utf8mb4."
            );
        }
        (Err(why), None) => {
            let _ = writeln!(o, "# bridge: false: {}.", comment_safe(why));
        }
        (Ok(_), None) => {
            let _ = writeln!(
                o,
                "# bridge: false: no client was seen talking latin1 to this schema (the server's default handshake is {}); set `bridge: true` if the application does.",
                comment_safe(handshake.unwrap_or("unknown"))
            );
        }
    }
    let users: Vec<String> = seen
        .map(|s| {
            let mut u: Vec<String> = s
                .seen
                .iter()
                .filter(|c| {
                    !c.privileged
                        && crate::clients::model::kinds(c, &s.server_handshake)
                            .contains(&Kind::Latin1Handshake)
                })
                .map(|c| c.user.clone())
                .collect();
            u.dedup();
            u
        })
        .unwrap_or_default();
    let _ = writeln!(o, "clients:");
    let _ = writeln!(o, "  bridge: {}", bridge.is_some());
    let _ = writeln!(
        o,
        "  legacy: {}",
        scalar(bridge.or(legacy.as_ref().ok().copied()).unwrap_or("cp1251"))
    );
    if users.is_empty() {
        let _ = writeln!(
            o,
            "  users: []   # none seen: every user without SUPER whose session's default database is '{}'",
            comment_safe(schema)
        );
    } else {
        let list: Vec<String> = users.iter().map(|u| flow(u)).collect();
        let _ = writeln!(o, "  users: [{}]", list.join(", "));
    }
}

/// One comment line per client seen: what the switch does, and what it cannot with the fix.
fn clients_seen(o: &mut String, s: &ClientsSeen, bridge: Option<&str>) {
    let _ = writeln!(
        o,
        "# Seen on the schema while scanning: {} client(s); one that declares no charset talks the server's {}{}.",
        s.seen.len(),
        comment_safe(&s.server_handshake),
        if s.per_session {
            ""
        } else {
            " (MariaDB cannot say a session's charset: each is taken to talk it)"
        }
    );
    if !s.history && !s.seen.is_empty() {
        let _ = writeln!(
            o,
            "# Not seen: a client that sends SET NAMES itself (performance_schema keeps no statement history here). To see it: {}.",
            crate::clients::sql::HISTORY_FIX
        );
    }
    for c in &s.seen {
        let v = verdict(c, &s.server_handshake, bridge);
        let _ = writeln!(
            o,
            "#   {}@{} ({} session(s)): {}",
            comment_safe(&c.user),
            comment_safe(&c.host),
            c.sessions,
            comment_safe(&v.does)
        );
        if let Some((what, fix)) = v.cannot {
            let _ = writeln!(
                o,
                "#     NOT COVERED: {}. Fix: {}",
                comment_safe(&what),
                comment_safe(&fix)
            );
        }
    }
}

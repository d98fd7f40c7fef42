//! `plan --check` (and the rehearsal) on the job's `clients:`: each client seen on the
//! schema that the switch leaves broken, with its fix. Pure: the clients are read by
//! [`crate::clients::read`].

use super::finding::Finding;
use super::model::Job;
use crate::clients::model::{bridge_charset, verdict, ClientsSeen};

/// The clients seen that the job's switch does not cover. A job without `clients:` is not
/// asked (it was written before the section, or by hand).
pub fn uncovered(job: &Job, seen: &ClientsSeen) -> Vec<Finding> {
    let Some(c) = &job.clients else {
        return Vec::new();
    };
    let bridge = job.bridge().and_then(|c| bridge_charset(&c.legacy));
    seen.seen
        .iter()
        // A privileged user is never among the bridged ones: named whatever the list says.
        .filter(|s| c.users.is_empty() || c.users.contains(&s.user) || s.privileged || !c.bridge)
        .filter_map(|s| {
            let v = verdict(s, &seen.server_handshake, bridge);
            v.cannot.map(|(what, fix)| {
                Finding::new(
                    "clients",
                    format!("{}@{} ({} session(s)) {what}", s.user, s.host, s.sessions),
                    fix,
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::model::ClientSeen;
    use crate::job::load::load_str;

    fn seen(privileged: bool) -> ClientsSeen {
        ClientsSeen {
            schema: "shop".into(),
            server_handshake: "latin1".into(),
            per_session: false,
            history: false,
            seen: vec![ClientSeen {
                user: "app".into(),
                host: "10.0.0.5".into(),
                sessions: 2,
                charset: None,
                set_names: None,
                privileged,
                idle_secs: 0,
            }],
        }
    }

    fn job(clients: &str) -> Job {
        load_str(&format!("version: 1\nschema: shop\ntables: []\n{clients}"))
            .unwrap_or_else(|e| panic!("{e:?}"))
            .job
    }

    #[test]
    fn a_super_user_of_the_application_is_named_with_the_fix() {
        let j = job("clients:\n  bridge: true\n  legacy: cp1251\n  users: [app]\n");
        let f = uncovered(&j, &seen(true));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message
                .starts_with("app@10.0.0.5 (2 session(s)) holds SUPER"),
            "{f:?}"
        );
        assert!(f[0].fix.contains("REVOKE"));
        assert!(uncovered(&j, &seen(false)).is_empty());
    }

    #[test]
    fn no_bridge_names_the_latin1_clients_and_no_section_asks_nothing() {
        let j = job("clients:\n  bridge: false\n  legacy: cp1251\n");
        assert_eq!(uncovered(&j, &seen(false)).len(), 1);
        assert!(uncovered(&job(""), &seen(true)).is_empty());
    }

    #[test]
    fn bad_clients_settings_are_refused_at_load() {
        let bad = load_str("version: 1\nschema: shop\ntables: []\nclients:\n  bridge: true\n  legacy: utf8\n  users: [app@host]\n")
            .err()
            .unwrap();
        let paths: Vec<&str> = bad.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["clients.legacy", "clients.users[0]"], "{bad:?}");
    }
}

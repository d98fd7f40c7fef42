//! Which clients talk to a schema, in which connection charset, and what the switch does
//! for each kind of client (pure: classified here, read by [`super::read`]).

use serde::{Deserialize, Serialize};

/// An idle session older than this is counted as a persistent or pooled connection.
pub const PERSISTENT_IDLE_SECS: u64 = 60;

/// The clients seen on a schema at one moment (`scan`, `plan --check`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientsSeen {
    /// The schema whose sessions these are.
    #[serde(default)]
    pub schema: String,
    /// The charset a client that declares none gets (`character_set_server` on MariaDB
    /// 10.11; what `mysqlnd` and libmysqlclient without a charset talk).
    pub server_handshake: String,
    /// Whether each session's own charset could be read (MySQL 8:
    /// `performance_schema.variables_by_thread`); MariaDB has no such table.
    pub per_session: bool,
    /// Whether the statement history was read for `SET NAMES` (performance_schema on, with
    /// its statement consumers).
    pub history: bool,
    /// One entry per user and client host with sessions on the schema.
    pub seen: Vec<ClientSeen>,
}

/// The sessions of one user from one host on the schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSeen {
    /// The account's user name.
    pub user: String,
    /// The client host (without its port).
    pub host: String,
    /// Live sessions.
    pub sessions: u64,
    /// Their `character_set_client`, where the server says it (several: joined by ", ").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charset: Option<String>,
    /// The charset named by a `SET NAMES` / `SET CHARACTER SET` of theirs in the statement
    /// history, where it is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_names: Option<String>,
    /// Whether the user holds SUPER or CONNECTION ADMIN (the server runs no `init_connect`
    /// for it).
    pub privileged: bool,
    /// The longest a session of theirs has been idle, in seconds.
    pub idle_secs: u64,
}

/// What kind of client a [`ClientSeen`] is, for the switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// It declares a charset other than latin1 (utf8mb4, or the legacy charset itself).
    Declares(String),
    /// It declares nothing and gets the server's latin1 (or says latin1 in its handshake).
    Latin1Handshake,
    /// It sends `SET NAMES latin1` (or `SET CHARACTER SET latin1`) itself.
    SetNamesLatin1,
    /// SUPER or CONNECTION ADMIN: `init_connect` does not run for it.
    Privileged,
    /// A session idle for long: a persistent or pooled connection, reused without a new login.
    Persistent,
}

/// What a client sends of `SET NAMES`, from two of its statements seen: `latin1` if either
/// names it (a session of it talking latin1 is what the bridge cannot cover, whatever its
/// other sessions send), else the first seen.
pub fn either_set_names(a: Option<String>, b: Option<String>) -> Option<String> {
    if b.as_deref() == Some("latin1") {
        return b;
    }
    a.or(b)
}

/// The kinds `c` is, given the server's default handshake charset.
pub fn kinds(c: &ClientSeen, server_handshake: &str) -> Vec<Kind> {
    let mut out = Vec::new();
    // A `SET NAMES` it sends is what its session talks, whatever its handshake said (on
    // MariaDB the history is the only way to see it: `charset` is never read there).
    let charset = (c.set_names.as_deref())
        .or(c.charset.as_deref())
        .unwrap_or(server_handshake);
    let charsets: Vec<&str> = charset.split(", ").collect();
    if charsets.contains(&"latin1") {
        out.push(Kind::Latin1Handshake);
    }
    if let Some(other) = charsets.iter().find(|cs| **cs != "latin1") {
        out.push(Kind::Declares(other.to_string()));
    }
    if c.set_names.as_deref() == Some("latin1") {
        out.push(Kind::SetNamesLatin1);
    }
    if c.privileged {
        out.push(Kind::Privileged);
    }
    if c.idle_secs >= PERSISTENT_IDLE_SECS {
        out.push(Kind::Persistent);
    }
    out
}

/// What the switch does for a client, and what it cannot do with the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Its kinds.
    pub kinds: Vec<Kind>,
    /// What happens to it at the swap, one sentence.
    pub does: String,
    /// What the bridge cannot cover for it, and the fix (`None`: covered).
    pub cannot: Option<(String, String)>,
}

/// What the switch does for `c`: `bridge` is the legacy charset the job's bridge gives
/// latin1-handshake sessions (`None`: no bridge).
pub fn verdict(c: &ClientSeen, server_handshake: &str, bridge: Option<&str>) -> Verdict {
    let kinds = kinds(c, server_handshake);
    let has = |k: &Kind| kinds.contains(k);
    let latin1 = has(&Kind::Latin1Handshake);
    let does = match (latin1, bridge) {
        (true, Some(_)) if has(&Kind::Privileged) => {
            "latin1 handshake, but init_connect does not run for it: not bridged".to_string()
        }
        (true, Some(cs)) => format!(
            "latin1 handshake: its sessions opened after the swap talk {cs} (the bridge's init_connect), \
             the writes of those opened before are read as {cs} (the bridge's triggers)"
        ),
        (true, None) => "latin1 handshake: after the swap it reads '?' and writes mojibake unless its connection is switched at the same instant".to_string(),
        (false, _) => match kinds.iter().find_map(|k| match k {
            Kind::Declares(cs) => Some(cs.clone()),
            _ => None,
        }) {
            Some(cs) if cs.starts_with("utf8") => format!("declares {cs}: reads and writes the recoded text after the swap"),
            Some(cs) => format!("declares {cs}: the server converts between it and utf8mb4; unchanged"),
            None => "nothing to do".to_string(),
        },
    };
    let cannot = if !latin1 || bridge.is_none() {
        if latin1 {
            Some((
                "no bridge: its latin1 sessions read '?' after the swap".to_string(),
                "set clients: bridge: true, or switch its connection charset at the instant of the cut-over".to_string(),
            ))
        } else {
            None
        }
    } else if has(&Kind::Privileged) {
        Some((
            "holds SUPER or CONNECTION ADMIN, so the server runs no init_connect for it: after the swap its sessions read '?'".to_string(),
            format!(
                "give the application an account without them (REVOKE SUPER, CONNECTION ADMIN ON *.* FROM '{}'@'{}'), or make it send SET NAMES {} once the cut-over is done",
                c.user,
                c.host,
                bridge.unwrap_or("cp1251")
            ),
        ))
    } else if has(&Kind::SetNamesLatin1) {
        Some((
            "sends SET NAMES latin1 itself, after init_connect: after the swap its reads give '?' (its writes are read right by the bridge's triggers)".to_string(),
            format!("make it send SET NAMES {} (or nothing) before the cut-over", bridge.unwrap_or("cp1251")),
        ))
    } else if has(&Kind::Persistent) {
        Some((
            format!(
                "has sessions idle {} s: a persistent or pooled connection is reused after the swap without init_connect, and reads '?'",
                c.idle_secs
            ),
            "restart its pool (PHP-FPM, the connection pool) right after the cut-over, or end its sessions opened before the swap (KILL CONNECTION) so they reconnect bridged".to_string(),
        ))
    } else {
        None
    };
    Verdict {
        kinds,
        does,
        cannot,
    }
}

/// The legacy charsets the bridge can give a session (server names), by the job's label.
pub fn bridge_charset(label: &str) -> Option<&'static str> {
    match label {
        "cp1251" => Some("cp1251"),
        "koi8-r" | "koi8r" => Some("koi8r"),
        "koi8-u" | "koi8u" => Some("koi8u"),
        "cp866" => Some("cp866"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(charset: Option<&str>) -> ClientSeen {
        ClientSeen {
            user: "shop".into(),
            host: "10.0.0.5".into(),
            sessions: 3,
            charset: charset.map(String::from),
            set_names: None,
            privileged: false,
            idle_secs: 2,
        }
    }

    #[test]
    fn a_client_that_declares_nothing_on_a_latin1_server_is_bridged() {
        let v = verdict(&seen(None), "latin1", Some("cp1251"));
        assert_eq!(v.kinds, vec![Kind::Latin1Handshake]);
        assert!(v.does.contains("talk cp1251"), "{}", v.does);
        assert_eq!(v.cannot, None);
        let v = verdict(&seen(None), "latin1", None);
        assert!(v.cannot.unwrap().1.contains("bridge: true"));
    }

    #[test]
    fn declared_charsets_need_nothing() {
        let v = verdict(&seen(Some("utf8mb4")), "latin1", Some("cp1251"));
        assert_eq!(v.kinds, vec![Kind::Declares("utf8mb4".into())]);
        assert!(v.does.contains("reads and writes the recoded text"));
        assert_eq!(v.cannot, None);
        let v = verdict(&seen(None), "cp1251", Some("cp1251"));
        assert!(v.does.contains("server converts"), "{}", v.does);
        // Its own SET NAMES, seen in the history, is what it talks: not the handshake.
        let mut c = seen(None);
        c.set_names = Some("cp1251".into());
        let v = verdict(&c, "latin1", None);
        assert_eq!(v.kinds, vec![Kind::Declares("cp1251".into())]);
        assert_eq!(v.cannot, None);
        let v = verdict(&seen(Some("latin1, utf8mb4")), "latin1", Some("cp1251"));
        assert_eq!(
            v.kinds,
            vec![Kind::Latin1Handshake, Kind::Declares("utf8mb4".into())]
        );
    }

    #[test]
    fn a_set_names_latin1_among_others_is_what_counts() {
        let (l, u) = (Some("latin1".to_string()), Some("utf8mb4".to_string()));
        assert_eq!(either_set_names(u.clone(), l.clone()), l);
        assert_eq!(either_set_names(l.clone(), u.clone()), l);
        assert_eq!(either_set_names(None, u.clone()), u);
        assert_eq!(either_set_names(u.clone(), None), u);
    }

    #[test]
    fn what_the_bridge_cannot_cover_is_said_with_its_fix() {
        let mut c = seen(None);
        c.privileged = true;
        let (what, fix) = verdict(&c, "latin1", Some("cp1251")).cannot.unwrap();
        assert!(
            what.contains("SUPER")
                && fix.contains("REVOKE SUPER, CONNECTION ADMIN ON *.* FROM 'shop'@'10.0.0.5'"),
            "{what} / {fix}"
        );
        let mut c = seen(None);
        c.set_names = Some("latin1".into());
        let v = verdict(&c, "latin1", Some("cp1251"));
        assert!(v.kinds.contains(&Kind::SetNamesLatin1));
        assert!(v.cannot.unwrap().1.contains("SET NAMES cp1251"));
        let mut c = seen(None);
        c.idle_secs = 600;
        let v = verdict(&c, "latin1", Some("cp1251"));
        assert!(v.kinds.contains(&Kind::Persistent));
        assert!(v.cannot.unwrap().0.contains("idle 600 s"));
        // A utf8mb4 client idle for long is not the bridge's concern.
        let mut c = seen(Some("utf8mb4"));
        c.idle_secs = 600;
        c.privileged = true;
        assert_eq!(verdict(&c, "latin1", Some("cp1251")).cannot, None);
    }

    #[test]
    fn bridge_charsets_are_the_servers_names() {
        assert_eq!(bridge_charset("koi8-r"), Some("koi8r"));
        assert_eq!(bridge_charset("cp1251"), Some("cp1251"));
        assert_eq!(bridge_charset("utf-8>latin1"), None);
    }
}

//! The privileges a run needs, told from the grants the server lists for the job's user (and
//! its enabled roles) before the first write, and the `GRANT` that supplies what is missing.
//! Pure: the statements that read the grants, and the comparison; the runner's preflight
//! reads them.

use crate::db::quote;
use crate::job::model::Strategy;

/// What a copy needs on the job's schema: its bookkeeping tables, shadow and change log
/// created, filled and dropped (`CREATE`, `INSERT`, `UPDATE`, `DELETE`, `DROP`), the shadow
/// altered and renamed in (`ALTER`), the change-log triggers (`TRIGGER`), the locks that add
/// them and cut over (`LOCK TABLES`), the session's staging table.
pub const COPY_NEEDS: &[&str] = &[
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "ALTER",
    "TRIGGER",
    "LOCK TABLES",
    "CREATE TEMPORARY TABLES",
];

/// What an in-place run needs on the job's schema itself: the session's staging table.
pub const INPLACE_NEEDS: &[&str] = &["CREATE TEMPORARY TABLES"];

/// What an in-place run needs on each of its bookkeeping tables (created, then written), held
/// on the schema or on the table itself.
pub const BOOKKEEPING_NEEDS: &[&str] = &["SELECT", "INSERT", "UPDATE", "DELETE", "CREATE"];

/// What an in-place run needs on each of its tables, held on the schema or on the table.
pub const INPLACE_TABLE_NEEDS: &[&str] = &["SELECT", "UPDATE"];

/// One privilege the server lists: where it holds, and which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The table it is granted on; `None`: the whole schema (or every schema).
    pub table: Option<String>,
    /// The privilege, as `information_schema` spells it (`LOCK TABLES`).
    pub privilege: String,
}

/// One privilege a job needs: on the whole schema (`None`), or on one table (held on the
/// schema or on that table).
pub type Need = (&'static str, Option<String>);

/// What a job of `tables` (each with its strategy) needs: a copy its [`COPY_NEEDS`] on the
/// schema; in place, [`INPLACE_NEEDS`] on the schema, [`BOOKKEEPING_NEEDS`] on each of
/// `bookkeeping`, [`INPLACE_TABLE_NEEDS`] on each of its tables.
pub fn needs(tables: &[(Strategy, &str)], bookkeeping: &[&str]) -> Vec<Need> {
    let mut out: Vec<Need> = Vec::new();
    let mut add = |p: &'static str, t: Option<&str>| {
        let n = (p, t.map(String::from));
        if !out.contains(&n) {
            out.push(n);
        }
    };
    for (strategy, table) in tables {
        if *strategy == Strategy::Copy {
            COPY_NEEDS.iter().for_each(|p| add(p, None));
            continue;
        }
        INPLACE_NEEDS.iter().for_each(|p| add(p, None));
        for b in bookkeeping {
            BOOKKEEPING_NEEDS.iter().for_each(|p| add(p, Some(b)));
        }
        INPLACE_TABLE_NEEDS.iter().for_each(|p| add(p, Some(table)));
    }
    out
}

/// The privileges of `needs` that `held` lacks, in the order they are named, each once.
pub fn missing(held: &[Held], needs: &[Need]) -> Vec<&'static str> {
    let has = |p: &str, table: Option<&str>| {
        held.iter().any(|h| {
            h.privilege.eq_ignore_ascii_case(p)
                && (h.table.is_none() || (table.is_some() && h.table.as_deref() == table))
        })
    };
    let mut out: Vec<&'static str> = Vec::new();
    for (p, table) in needs {
        if !has(p, table.as_deref()) && !out.contains(p) {
            out.push(p);
        }
    }
    out
}

/// `'user'@'host'`, as `information_schema` names a grantee, from `CURRENT_USER()`'s
/// `user@host` (a user name may hold an `@`; the host never does).
pub fn grantee(current_user: &str) -> String {
    let (user, host) = current_user.rsplit_once('@').unwrap_or((current_user, "%"));
    format!("'{user}'@'{host}'")
}

/// The grantees a role is listed under: `'role'` (MariaDB) and `'role'@'%'` (MySQL).
pub fn role_grantees(role: &str) -> [String; 2] {
    [format!("'{role}'"), format!("'{role}'@'%'")]
}

/// The privileges listed for `grantees` placeholders (`?` each), then `?` schema twice
/// (matched as a name and as a grant's `LIKE` pattern), then `?` schema for the table
/// grants: table name (NULL: schema-wide or global) and privilege.
pub fn grants_sql(grantees: usize) -> String {
    let list = vec!["?"; grantees.max(1)].join(", ");
    format!(
        "SELECT CAST(NULL AS CHAR), CAST(PRIVILEGE_TYPE AS CHAR) FROM information_schema.USER_PRIVILEGES WHERE GRANTEE IN ({list}) \
         UNION ALL SELECT CAST(NULL AS CHAR), CAST(PRIVILEGE_TYPE AS CHAR) FROM information_schema.SCHEMA_PRIVILEGES \
         WHERE GRANTEE IN ({list}) AND (TABLE_SCHEMA = ? OR ? LIKE TABLE_SCHEMA) \
         UNION ALL SELECT CAST(TABLE_NAME AS CHAR), CAST(PRIVILEGE_TYPE AS CHAR) FROM information_schema.TABLE_PRIVILEGES \
         WHERE GRANTEE IN ({list}) AND TABLE_SCHEMA = ?"
    )
}

/// The current user (`user@host`) and its enabled roles.
pub const CURRENT_USER_SQL: &str = "SELECT CAST(CURRENT_USER() AS CHAR)";
/// The session's enabled roles (a server without roles has no such view: none).
pub const ENABLED_ROLES_SQL: &str =
    "SELECT CAST(ROLE_NAME AS CHAR) FROM information_schema.ENABLED_ROLES";

/// The refusal naming `missing` privileges on `schema` and the `GRANT` that supplies them.
pub fn refusal(schema: &str, grantee: &str, missing: &[&str]) -> String {
    let privs = missing.join(", ");
    format!(
        "missing privilege: the job's user {grantee} lacks {privs} on schema {} (the server's grants were read before anything was written; nothing was created). \
         Fix: GRANT {privs} ON {}.* TO {grantee}",
        quote::ident(schema),
        quote::ident(schema)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(table: Option<&str>, ps: &[&str]) -> Vec<Held> {
        ps.iter()
            .map(|p| Held {
                table: table.map(String::from),
                privilege: p.to_string(),
            })
            .collect()
    }

    #[test]
    fn a_copy_lacking_trigger_is_named_with_its_grant() {
        let mut h = held(None, &COPY_NEEDS[..7]);
        h.extend(held(None, &["LOCK TABLES", "CREATE TEMPORARY TABLES"]));
        let need = needs(&[(Strategy::Copy, "t")], &["_b"]);
        assert_eq!(need.len(), COPY_NEEDS.len());
        assert_eq!(missing(&h, &need), vec!["TRIGGER"]);
        h.extend(held(Some("t"), &["TRIGGER"]));
        // A trigger on the table alone is not enough: the shadow gets the table's own too.
        assert_eq!(missing(&h, &need), vec!["TRIGGER"]);
        h.extend(held(None, &["trigger"]));
        assert!(missing(&h, &need).is_empty());
        assert_eq!(
            refusal("s`1", "'u'@'%'", &["TRIGGER", "LOCK TABLES"]),
            "missing privilege: the job's user 'u'@'%' lacks TRIGGER, LOCK TABLES on schema `s``1` (the server's grants were read before anything was written; nothing was created). \
             Fix: GRANT TRIGGER, LOCK TABLES ON `s``1`.* TO 'u'@'%'"
        );
    }

    #[test]
    fn in_place_takes_grants_on_its_tables_and_bookkeeping() {
        let need = needs(
            &[(Strategy::InPlace, "a"), (Strategy::InPlace, "b")],
            &["_k"],
        );
        let mut h = held(None, INPLACE_NEEDS);
        h.extend(held(Some("_k"), BOOKKEEPING_NEEDS));
        h.extend(held(Some("a"), &["SELECT", "UPDATE"]));
        h.extend(held(Some("b"), &["SELECT"]));
        assert_eq!(missing(&h, &need), vec!["UPDATE"]);
        h.extend(held(Some("b"), &["UPDATE"]));
        assert!(missing(&h, &need).is_empty());
        // Granted on the schema, every table has it.
        let mut h = held(None, INPLACE_NEEDS);
        h.extend(held(None, BOOKKEEPING_NEEDS));
        assert!(missing(&h, &need).is_empty());
        assert_eq!(
            missing(&held(None, &["USAGE"]), &need),
            vec![
                "CREATE TEMPORARY TABLES",
                "SELECT",
                "INSERT",
                "UPDATE",
                "DELETE",
                "CREATE"
            ]
        );
    }

    #[test]
    fn grantees_and_the_grants_query() {
        assert_eq!(grantee("app@10.0.%"), "'app'@'10.0.%'");
        assert_eq!(grantee("a@b@localhost"), "'a@b'@'localhost'");
        assert_eq!(
            role_grantees("r"),
            ["'r'".to_string(), "'r'@'%'".to_string()]
        );
        assert_eq!(
            grants_sql(2),
            "SELECT CAST(NULL AS CHAR), CAST(PRIVILEGE_TYPE AS CHAR) FROM information_schema.USER_PRIVILEGES WHERE GRANTEE IN (?, ?) \
             UNION ALL SELECT CAST(NULL AS CHAR), CAST(PRIVILEGE_TYPE AS CHAR) FROM information_schema.SCHEMA_PRIVILEGES \
             WHERE GRANTEE IN (?, ?) AND (TABLE_SCHEMA = ? OR ? LIKE TABLE_SCHEMA) \
             UNION ALL SELECT CAST(TABLE_NAME AS CHAR), CAST(PRIVILEGE_TYPE AS CHAR) FROM information_schema.TABLE_PRIVILEGES \
             WHERE GRANTEE IN (?, ?) AND TABLE_SCHEMA = ?"
        );
    }
}

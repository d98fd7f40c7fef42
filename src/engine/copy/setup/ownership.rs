//! Whether the names a fresh copy needs beside a table (shadow, change log and its spare,
//! triggers) are free or the tool's own: a table or trigger of the user's under one of them
//! must never be dropped, filled or written to by the copy.
//!
//! The mark is the change log's comment ([`LOG_COMMENT`]): a copy creates its log first, so
//! a shadow or trigger a killed run left stands beside a marked log and is taken up again,
//! while one with no marked log beside it is the user's and the run refuses before it writes.

use crate::bookkeeping::names::{names, Names};
use crate::db::quote;
use crate::engine::copy::catalog::table_comment;
use crate::engine::copy::setup::back_log_sql::BACK_LOG_COMMENT;
use crate::engine::copy::setup::sql::LOG_COMMENT;
use crate::engine::error::EngineError;
use crate::engine::table_plan::TablePlan;
use anyhow::{Context, Result};
use sqlx::MySqlConnection;

/// What the schema holds under the names of one table's copy.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// The change log's comment, if a table of that name is there.
    pub log: Option<String>,
    /// The spare log's comment, if a table of that name is there.
    pub spare_log: Option<String>,
    /// Whether a table of the shadow's name is there.
    pub shadow: bool,
    /// Which of the change log's trigger names are taken in the schema.
    pub triggers: Vec<String>,
    /// The back log's comment, if a table of that name is there.
    pub back_log: Option<String>,
}

/// One name taken by something the tool did not create: kind, name and what it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// `table` or `trigger`.
    pub kind: &'static str,
    /// The name.
    pub name: String,
    /// What the copy would use it for.
    pub purpose: &'static str,
}

/// The names of `n` that `f` shows taken by something not the tool's own.
pub fn taken(n: &Names, f: &Found) -> Vec<Taken> {
    let mark = |c: &Option<String>| c.as_deref() == Some(LOG_COMMENT);
    let mut out = Vec::new();
    let mut push = |kind, name: &str, purpose| {
        out.push(Taken {
            kind,
            name: name.to_string(),
            purpose,
        })
    };
    if f.log.is_some() && !mark(&f.log) {
        push("table", &n.log, "the change log of its copy");
    }
    if f.spare_log.is_some() && !mark(&f.spare_log) {
        push("table", &n.spare_log, "the spare change log of its copy");
    }
    if f.back_log.is_some() && f.back_log.as_deref() != Some(BACK_LOG_COMMENT) {
        push(
            "table",
            &n.back_log,
            "the back log `revert` reads after its cut-over",
        );
    }
    // Without the marked log beside them, a shadow or triggers are no leftover of ours.
    if !mark(&f.log) {
        if f.shadow {
            push("table", &n.shadow, "the shadow table of its copy");
        }
        for t in &f.triggers {
            push("trigger", t, "a trigger of its copy's change log");
        }
    }
    out
}

/// The triggers of `?` schema among three names.
const TRIGGERS_NAMED_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME IN (?, ?, ?)";

/// Reads what `schema` holds under the names of `table`'s copy.
pub async fn found(conn: &mut MySqlConnection, schema: &str, table: &str) -> Result<Found> {
    let n = names(table);
    let mut q = sqlx::query_scalar(TRIGGERS_NAMED_SQL).bind(schema);
    for t in &n.triggers {
        q = q.bind(t);
    }
    let triggers: Vec<String> = q
        .fetch_all(&mut *conn)
        .await
        .context("reading information_schema.TRIGGERS")?;
    Ok(Found {
        log: table_comment(conn, schema, &n.log).await?,
        spare_log: table_comment(conn, schema, &n.spare_log).await?,
        shadow: table_comment(conn, schema, &n.shadow).await?.is_some(),
        triggers,
        back_log: table_comment(conn, schema, &n.back_log).await?,
    })
}

/// The names of `table`'s copy taken by something not the tool's own.
pub async fn taken_names(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<Taken>> {
    Ok(taken(&names(table), &found(conn, schema, table).await?))
}

/// Refuses, before anything is written, a copy that would start afresh on `plans`' tables
/// (`fresh`) while one of the names it needs is taken by the user's table or trigger.
pub async fn refuse_taken(conn: &mut MySqlConnection, fresh: &[TablePlan]) -> Result<()> {
    for p in fresh {
        if let Some(t) = taken_names(conn, &p.schema, &p.table).await?.first() {
            return Err(EngineError::NotOurs {
                kind: t.kind,
                name: quote::table(&p.schema, &t.name),
                purpose: format!("myrecode needs the name for {} '{}'", t.purpose, p.table),
                owner: format!("table '{}'", p.table),
            }
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_bookkeeping_tables_are_checked_under_their_names() {
        use crate::bookkeeping::ownership::ENGINE_LAYOUTS;
        use crate::engine::copy::cutover::carried::{foreign_sql, objects_sql, own_triggers_sql};
        use crate::engine::replicas::{checksum, lag, watch};
        let names: Vec<&str> = ENGINE_LAYOUTS.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            names,
            [
                foreign_sql::MOVES,
                own_triggers_sql::MOVED_TRIGGERS,
                objects_sql::OBJECTS,
                lag::HEARTBEAT,
                watch::REPLICA_STATE,
                checksum::CHECKSUMS,
                crate::engine::revert::sql::UNREVERTED
            ]
        );
    }

    #[test]
    fn only_a_marked_log_makes_the_names_beside_it_ours() {
        let n = names("coll");
        let marked = Some(LOG_COMMENT.to_string());
        let ours = Found {
            log: marked.clone(),
            spare_log: marked.clone(),
            shadow: true,
            triggers: n.triggers.to_vec(),
            back_log: Some(BACK_LOG_COMMENT.to_string()),
        };
        assert!(taken(&n, &ours).is_empty());
        assert!(taken(&n, &Found::default()).is_empty());
        let users_shadow = Found {
            shadow: true,
            ..Found::default()
        };
        assert_eq!(
            taken(&n, &users_shadow),
            vec![Taken {
                kind: "table",
                name: "coll_myrecode_new".into(),
                purpose: "the shadow table of its copy"
            }]
        );
        let users_log = Found {
            log: Some(String::new()),
            shadow: true,
            ..Found::default()
        };
        let names: Vec<String> = taken(&n, &users_log).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["coll_myrecode_log", "coll_myrecode_new"]);
        let users_trigger = Found {
            triggers: vec!["coll_myrecode_upd".into()],
            ..Found::default()
        };
        assert_eq!(taken(&n, &users_trigger)[0].kind, "trigger");
    }
}

//! Which tables of a job `revert` can swap back, read from the live schema: each one swapped
//! by the job, its kept original still there, its back log kept since the swap; what it
//! cannot yet do is said per table, with the way to do it by hand.

use super::sql::BackColumn;
use crate::bookkeeping::checkpoint::{self, State};
use crate::bookkeeping::names::{names, Names};
use crate::db::keyset::{KeyBind, KeyColumn};
use crate::engine::copy::catalog::{is_sentry, own_triggers, table_exists};
use crate::engine::copy::cutover::carried::foreign::foreign_keys;
use crate::engine::copy::Phase;
use crate::job::model::{Job, Strategy};
use anyhow::Result;
use sqlx::{MySqlConnection, Row};

/// A table `revert` brings back.
#[derive(Debug, Clone)]
pub struct Reverting {
    /// The live table.
    pub table: String,
    /// Its copy's names: the kept original, the back log, the name the live table takes.
    pub names: Names,
    /// Its key (none of it recoded: the back log's keys are the kept original's too).
    pub key: Vec<KeyColumn>,
    /// The kept original's stored columns, in order, with the legacy charset of each recoded one.
    pub columns: Vec<BackColumn>,
    /// Its checkpoint.
    pub state: State,
}

/// What `revert` finds of one table of the job.
#[derive(Debug)]
pub enum Found {
    /// It can be swapped back.
    Ready(Box<Reverting>),
    /// Reverted already.
    Reverted(String),
    /// Not for `revert`: the table and why, with the fix.
    Refused(String, String),
}

/// The key columns of `table`'s primary key, in order, each bound as its type needs.
const KEY_SQL: &str = "SELECT CAST(k.COLUMN_NAME AS CHAR), CAST(c.CHARACTER_SET_NAME AS CHAR), CAST(c.COLLATION_NAME AS CHAR) \
     FROM information_schema.KEY_COLUMN_USAGE k JOIN information_schema.COLUMNS c \
     ON c.TABLE_SCHEMA = k.TABLE_SCHEMA AND c.TABLE_NAME = k.TABLE_NAME AND c.COLUMN_NAME = k.COLUMN_NAME \
     WHERE k.TABLE_SCHEMA = ? AND k.TABLE_NAME = ? AND k.CONSTRAINT_NAME = 'PRIMARY' ORDER BY k.ORDINAL_POSITION";

/// The stored (not generated) columns of a table, in order.
const STORED_SQL: &str = "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
     AND EXTRA NOT LIKE '%GENERATED%' AND EXTRA NOT LIKE '%VIRTUAL%' AND EXTRA NOT LIKE '%PERSISTENT%' ORDER BY ORDINAL_POSITION";

/// Every copied table of the job as `revert` finds it.
pub async fn find(conn: &mut MySqlConnection, job: &Job, job_id: &str) -> Result<Vec<Found>> {
    let schema = job.schema.as_str();
    let fks = foreign_keys(conn, schema).await?;
    let mut out = Vec::new();
    for tj in job.tables.iter().filter(|t| t.strategy == Strategy::Copy) {
        let t = tj.name.as_str();
        let n = names(t);
        let refuse = |why: String| Found::Refused(t.to_string(), why);
        let state = match checkpoint::load(conn, schema, job_id, t).await? {
            Some(s) if s.phase == Phase::Reverted.as_str() => {
                out.push(Found::Reverted(t.to_string()));
                continue;
            }
            Some(s) if s.done => s,
            _ => {
                out.push(refuse("not swapped by this job: nothing to revert (`myrecode abort` stops a copy not yet swapped)".into()));
                continue;
            }
        };
        if !table_exists(conn, schema, &n.old).await? || is_sentry(conn, schema, &n.old).await? {
            out.push(refuse(format!("its kept original `{}` is gone (`cleanup` dropped it): there is nothing to swap back", n.old)));
            continue;
        }
        if !table_exists(conn, schema, &n.back_log).await? {
            out.push(refuse(format!(
                "no back log `{}`: its cut-over kept none (a keyless table, a key the job recodes, or a myrecode before revert), \
                 so the writes made since the swap are not known. Fix: bring `{}` up to date by hand, then RENAME it back",
                n.back_log, n.old
            )));
            continue;
        }
        if let Some(why) = outside_links(conn, schema, t, &fks).await? {
            out.push(refuse(why));
            continue;
        }
        let mut columns = Vec::new();
        let stored: Vec<String> = sqlx::query_scalar(STORED_SQL)
            .bind(schema)
            .bind(&n.old)
            .fetch_all(&mut *conn)
            .await?;
        let mut refused = None;
        for name in stored {
            let legacy = match tj.columns.iter().find(|c| c.name == name) {
                None => None,
                Some(cj) => {
                    match cj.source.fixed() {
                        Some(l) if l.needs_recode() => match l.server_charset() {
                            Some(cs) => Some(cs.to_string()),
                            None => {
                                refused = Some(format!("column `{name}`'s label {l} has no charset on the server to encode back into"));
                                break;
                            }
                        },
                        Some(_) => None,
                        None => {
                            refused = Some(format!("column `{name}`'s source is `{}`: name its label in the job to revert", cj.source.as_str()));
                            break;
                        }
                    }
                }
            };
            columns.push(BackColumn { name, legacy });
        }
        if let Some(why) = refused {
            out.push(refuse(why));
            continue;
        }
        let key = primary_key(conn, schema, t).await?;
        if key.is_empty() {
            out.push(refuse(
                "it has no primary key to bring its rows back by".into(),
            ));
            continue;
        }
        out.push(Found::Ready(Box::new(Reverting {
            table: t.to_string(),
            names: n,
            key,
            columns,
            state,
        })));
    }
    Ok(out)
}

/// Why the table cannot be swapped back by `revert` yet: its own triggers, or a foreign key
/// from or to it (they moved with the cut-over and would have to move back).
async fn outside_links(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    fks: &[crate::engine::copy::cutover::carried::foreign_sql::ForeignKey],
) -> Result<Option<String>> {
    let own = own_triggers(conn, schema, table).await?;
    if let Some(t) = own.first() {
        return Ok(Some(format!(
            "it has its own trigger `{}`, which revert does not move back yet. Fix: swap it back by hand (docs/revert.md)",
            t.name
        )));
    }
    if let Some(fk) = fks.iter().find(|f| {
        (f.child_schema == schema && f.child == table)
            || (f.parent_schema == schema && f.parent == table)
    }) {
        return Ok(Some(format!(
            "it is in foreign key `{}`, which revert does not move back yet. Fix: swap it back by hand (docs/revert.md)",
            fk.name
        )));
    }
    Ok(None)
}

/// The table's primary key columns, bound as their types need.
async fn primary_key(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<KeyColumn>> {
    let rows = sqlx::query(KEY_SQL)
        .bind(schema)
        .bind(table)
        .fetch_all(&mut *conn)
        .await?;
    let mut key = Vec::new();
    for r in rows {
        let name: String = r.try_get(0)?;
        let charset: Option<String> = r.try_get(1)?;
        let collation: Option<String> = r.try_get(2)?;
        let bind = match (charset, collation) {
            (Some(charset), Some(collation)) if charset != "binary" => {
                KeyBind::Text { charset, collation }
            }
            _ => KeyBind::Plain,
        };
        key.push(KeyColumn { name, bind });
    }
    Ok(key)
}

//! The privilege preflight: the grants the server lists for the job's user and its enabled
//! roles, read before the first write and compared with what the job needs
//! ([`crate::engine::privileges`]), so a user without one (`TRIGGER` for a copy) is refused
//! with the `GRANT` that fixes it and nothing is created.

use crate::bookkeeping::ownership::LAYOUTS;
use crate::engine::privileges::{self, Held};
use crate::engine::table_plan::TablePlan;
use anyhow::{anyhow, Context, Result};
use sqlx::{MySqlConnection, Row};

/// Refuses the job when the grants the server lists lack a privilege its `plans` need.
pub(super) async fn check_grants(
    conn: &mut MySqlConnection,
    schema: &str,
    plans: &[TablePlan],
) -> Result<()> {
    if plans.is_empty() {
        return Ok(());
    }
    let current: String = sqlx::query_scalar(privileges::CURRENT_USER_SQL)
        .fetch_one(&mut *conn)
        .await
        .context("reading the job's user")?;
    let me = privileges::grantee(&current);
    let mut grantees = vec![me.clone()];
    // A server without roles has no such view: the user's own grants are all there is.
    let roles: Vec<String> = sqlx::query_scalar(privileges::ENABLED_ROLES_SQL)
        .fetch_all(&mut *conn)
        .await
        .unwrap_or_default();
    for r in &roles {
        grantees.extend(privileges::role_grantees(r));
    }
    let sql = privileges::grants_sql(grantees.len());
    let mut q = sqlx::query(&sql);
    for g in &grantees {
        q = q.bind(g);
    }
    for g in &grantees {
        q = q.bind(g);
    }
    q = q.bind(schema).bind(schema);
    for g in &grantees {
        q = q.bind(g);
    }
    let rows = q
        .bind(schema)
        .fetch_all(&mut *conn)
        .await
        .context("reading the job's user's grants from information_schema")?;
    let held: Vec<Held> = rows
        .iter()
        .map(|r| Held {
            table: r.get(0),
            privilege: r.get(1),
        })
        .collect();
    // No grant listed at all (not even USAGE): the catalog hides them; the probe that follows
    // still finds a missing UPDATE.
    if held.is_empty() {
        return Ok(());
    }
    let tables: Vec<_> = plans
        .iter()
        .map(|p| (p.strategy, p.table.as_str()))
        .collect();
    let bookkeeping: Vec<&str> = LAYOUTS.iter().map(|(t, _)| *t).collect();
    let missing = privileges::missing(&held, &privileges::needs(&tables, &bookkeeping));
    if missing.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(privileges::refusal(schema, &me, &missing)))
    }
}

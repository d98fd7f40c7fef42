//! Which cascade-logging triggers each table needs and how to get there from those it has:
//! at a run's start, and at each cut-over group's. Pure: executed by [`crate::engine::copy::cutover::carried::cascade::logging`].
//!
//! With cut-over groups the targets are the copies still to be swapped, so a group's
//! cut-over changes what the heads log ([`at_cutover`]): under its lock, the heads outside the
//! group stop logging its tables (after the rename nothing may write a swapped table's
//! drained log), and its own heads' logging of the tables swapped later is created on their
//! shadows, which the rename carries to the live names. A kill between the two leaves chains
//! no trigger logs; the rerun sees them ([`unlogged`]) and checks those tables again.

use crate::bookkeeping::names::names;
use crate::db::quote;
use crate::engine::copy::cutover::carried::cascade::chains::{
    chains, heads, Event, Target, TooManyChains,
};
use crate::engine::copy::cutover::carried::cascade::sql::{trigger_body, trigger_ddl};
use crate::engine::copy::cutover::carried::foreign_sql::ForeignKey;
use crate::engine::copy::setup::sql::drop_trigger_sql;

/// The cascade-logging triggers one table at the head of chains needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadTriggers {
    /// The table.
    pub table: String,
    /// The bodies of its `BEFORE UPDATE` and `BEFORE DELETE` triggers (`None`: that event
    /// reaches no target).
    pub bodies: [Option<String>; 2],
}

/// The triggers the job needs, on each table at the head of a chain reaching a target;
/// tables whose events reach none are left out.
pub fn cascade_triggers(
    fks: &[ForeignKey],
    schema: &str,
    targets: &[Target<'_>],
) -> Result<Vec<HeadTriggers>, TooManyChains> {
    let names: Vec<&str> = targets.iter().map(|t| t.table).collect();
    let mut out = Vec::new();
    for head in heads(fks, schema, &names) {
        let mut bodies = [None, None];
        for (i, event) in [Event::Update, Event::Delete].into_iter().enumerate() {
            let found = chains(fks, schema, &head, event, &names)?;
            bodies[i] = trigger_body(schema, event, &found, targets);
        }
        if bodies.iter().any(Option::is_some) {
            out.push(HeadTriggers {
                table: head,
                bodies,
            });
        }
    }
    Ok(out)
}

/// One of our cascade triggers as the catalog holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    /// Its name (one of the two the table's event has).
    pub name: String,
    /// Its body (`BEGIN … END`).
    pub body: String,
}

/// The statements that bring a table's cascade trigger for `event` to `want` (`None`: none
/// needed), given the ones on it (`have`, named from `names`) and the names other tables'
/// triggers hold (`taken`: after a cut-over's rename, the kept original carries the table's
/// triggers under their names until they are dropped). A trigger whose body is stale (the
/// chains changed: a constraint added or dropped, another version of myrecode) is replaced
/// by creating the new one under the other name first and dropping the stale one after:
/// between the two both log (more keys than needed: harmless), and there is never an instant
/// without one, which a `DROP` then `CREATE` would leave (a cascade in between would go
/// unlogged). A kill between the two leaves both; the next run keeps the current one and
/// drops the other. Idempotent.
pub fn reconcile(
    schema: &str,
    table: &str,
    event: Event,
    names: &[String; 2],
    want: Option<&str>,
    have: &[Existing],
    taken: &[String],
) -> Vec<String> {
    let drop = |name: &str| drop_trigger_sql(schema, name);
    let Some(body) = want else {
        return have.iter().map(|e| drop(&e.name)).collect();
    };
    if let Some(keep) = have.iter().find(|e| e.body.trim() == body) {
        return have
            .iter()
            .filter(|e| e.name != keep.name)
            .map(|e| drop(&e.name))
            .collect();
    }
    let mut out = Vec::new();
    let on_table = |n: &String| have.iter().any(|e| &e.name == n);
    let name = match names.iter().find(|n| !on_table(n) && !taken.contains(n)) {
        Some(free) => free.clone(),
        // No name free: a stale one goes first (while both are this table's, the other logs
        // meanwhile; otherwise the other is the kept original's, after a rename, when no
        // cascade needs logging any more).
        None => match names.iter().rev().find(|n| on_table(n)) {
            Some(stale) => {
                out.push(drop(stale));
                stale.clone()
            }
            None => return out,
        },
    };
    out.push(trigger_ddl(schema, table, &name, event, body));
    out.extend(
        have.iter()
            .filter(|e| e.name != name)
            .map(|e| drop(&e.name)),
    );
    out
}

/// Our cascade triggers in a schema, as the catalog holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Present {
    /// Each one on the table whose names it bears: that table, its event, the trigger.
    pub on: Vec<(String, Event, Existing)>,
    /// The names of those on other tables: a kept original's after its rename, or a shadow's
    /// left by a cut-over that never renamed.
    pub taken: Vec<String>,
}

impl Present {
    /// The triggers on `table` for `event`.
    fn there(&self, table: &str, event: Event) -> Vec<Existing> {
        self.on
            .iter()
            .filter(|(t, e, _)| t == table && *e == event)
            .map(|(_, _, x)| x.clone())
            .collect()
    }
}

/// The statements bringing the cascade triggers of every table that has or wants some to
/// `want` ([`reconcile`] each), `skip` aside: `(table, statement)`, tables in name order.
pub fn reconcile_all(
    schema: &str,
    want: &[HeadTriggers],
    present: &Present,
    skip: &[&str],
) -> Vec<(String, String)> {
    let mut tables: Vec<&str> = want
        .iter()
        .map(|h| h.table.as_str())
        .chain(present.on.iter().map(|(t, _, _)| t.as_str()))
        .filter(|t| !skip.contains(t))
        .collect();
    tables.sort();
    tables.dedup();
    let mut out = Vec::new();
    for table in tables {
        let n = names(table);
        let bodies = want.iter().find(|h| h.table == table).map(|h| &h.bodies);
        for (i, event) in [Event::Update, Event::Delete].into_iter().enumerate() {
            let there = present.there(table, event);
            let body = bodies.and_then(|b| b[i].as_deref());
            for sql in reconcile(
                schema,
                table,
                event,
                &n.cascade[i],
                body,
                &there,
                &present.taken,
            ) {
                out.push((table.to_string(), sql));
            }
        }
    }
    out
}

/// Whether a trigger body logs into change log `log`.
fn logs_into(schema: &str, body: &str, log: &str) -> bool {
    body.contains(&format!(
        "INSERT INTO {} (key_bytes)",
        quote::table(schema, log)
    ))
}

/// The targets that some chain in `want` reaches while no trigger `present` on its head logs
/// them for that event: while the triggers were so, that chain's cascades went unlogged (a
/// cut-over killed between ending their logging and its rename, a constraint added since).
pub fn unlogged(
    schema: &str,
    want: &[HeadTriggers],
    present: &Present,
    targets: &[Target<'_>],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for head in want {
        for (i, event) in [Event::Update, Event::Delete].into_iter().enumerate() {
            let Some(body) = head.bodies[i].as_deref() else {
                continue;
            };
            let there = present.there(&head.table, event);
            for t in targets {
                if logs_into(schema, body, t.log)
                    && !there.iter().any(|e| logs_into(schema, &e.body, t.log))
                    && !out.iter().any(|o| o == t.table)
                {
                    out.push(t.table.to_string());
                }
            }
        }
    }
    out
}

/// What one group's cut-over does with the cascade triggers, under its lock, just before its
/// rename.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AtCutover {
    /// The statements, in order: on the heads outside the group, their triggers replaced by
    /// ones that no longer log the group's tables (dropped where nothing is left to log):
    /// after the rename nothing may write into a swapped table's drained log; then, on the
    /// shadows of the group's heads, the triggers logging the tables still to be swapped,
    /// which the rename carries to the live names (the originals' go with them to
    /// `<t>_myrecode_old`, where nothing fires them).
    pub statements: Vec<String>,
    /// The heads outside the group whose triggers change: locked with it.
    heads: Vec<String>,
}

impl AtCutover {
    /// The tables outside the group the cut-over must lock, once each.
    pub fn parents(&self) -> Vec<&str> {
        self.heads.iter().map(String::as_str).collect()
    }
}

/// Plans [`AtCutover`] for the cut-over of `group` (its tables), `targets` being every copy
/// still to be swapped, the group's among them, and `present` the triggers there now.
pub fn at_cutover(
    fks: &[ForeignKey],
    schema: &str,
    group: &[&str],
    targets: &[Target<'_>],
    present: &Present,
) -> Result<AtCutover, TooManyChains> {
    let after: Vec<Target<'_>> = targets
        .iter()
        .filter(|t| !group.contains(&t.table))
        .copied()
        .collect();
    let want = cascade_triggers(fks, schema, &after)?;
    let mut out = AtCutover::default();
    for (table, sql) in reconcile_all(schema, &want, present, group) {
        if !out.heads.contains(&table) {
            out.heads.push(table);
        }
        out.statements.push(sql);
    }
    for head in want.iter().filter(|h| group.contains(&h.table.as_str())) {
        let n = names(&head.table);
        for (i, event) in [Event::Update, Event::Delete].into_iter().enumerate() {
            let Some(body) = head.bodies[i].as_deref() else {
                continue;
            };
            let on_head = present.there(&head.table, event);
            // The name the original's trigger does not hold: after the rename, the live table's.
            let Some(name) = n.cascade[i]
                .iter()
                .find(|x| !on_head.iter().any(|e| &e.name == *x))
            else {
                continue;
            };
            if present.taken.contains(name) {
                out.statements.push(drop_trigger_sql(schema, name));
            }
            out.statements
                .push(trigger_ddl(schema, &n.shadow, name, event, body));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;

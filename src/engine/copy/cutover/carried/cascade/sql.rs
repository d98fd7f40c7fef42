//! The statements of the triggers that log the rows a chain of cascades is about to change
//! ([`crate::engine::copy::cutover::carried::cascade::chains`]), and the catalog queries that find them again. Pure.
//!
//! Every table at the head of a chain reaching a copied table gets `BEFORE UPDATE` and
//! `BEFORE DELETE` triggers that, while every row still holds its old values, find the rows
//! each chain is about to change and log their keys into the target's change log; the replay
//! then re-reads them.
//!
//! A table whose self-referencing constraints delete in cascade (a comment thread) has its
//! deleted rows' whole subtrees gathered by a recursive common table expression bounded by
//! the depth left, rather than by one statement per level. Intermediate tables need not be
//! the depth left, rather than by one statement per level.

use crate::db::quote;
use crate::engine::copy::cutover::carried::cascade::chains::{
    Chain, Effect, Event, SetColumn, Step, Target, MAX_DEPTH,
};
use crate::engine::copy::cutover::carried::foreign_sql::ForeignKey;
use crate::engine::copy::setup::sql::{pack_values, GATE};

/// The rows a statement is at, as SQL: the trigger's `OLD` row, a table alias, or a recursive
/// expression's alias (whose columns are `v0, v1, …`, in the order of `columns`).
enum Rows {
    Old,
    Table(String),
    Tree { alias: String, columns: Vec<String> },
}

impl Rows {
    fn col(&self, c: &str) -> String {
        match self {
            Rows::Old => format!("OLD.{}", quote::ident(c)),
            Rows::Table(a) => format!("{a}.{}", quote::ident(c)),
            Rows::Tree { alias, columns } => {
                let i = columns
                    .iter()
                    .position(|x| x == c)
                    .expect("a tree carries every column read from it");
                format!("{alias}.v{i}")
            }
        }
    }
}

/// Adds each of `more` to `cols` unless there.
fn add_all(cols: &mut Vec<String>, more: &[String]) {
    for c in more {
        if !cols.contains(c) {
            cols.push(c.clone());
        }
    }
}

/// `name (v0, …, d) AS (anchor UNION ALL …)`: the rows of `table` the anchor selects (at
/// depth 0) and, down to depth `depth_left`, every row referencing one of them by a
/// constraint of `tree`; `columns` carried. `UNION ALL`: a row reached twice is logged twice
/// (harmless), and the depth bound, not distinctness, ends a cycle in the data.
fn tree_cte(
    schema: &str,
    name: &str,
    table: &str,
    tree: &[&ForeignKey],
    columns: &[String],
    anchor: &str,
    depth_left: usize,
) -> String {
    let mut names: Vec<String> = (0..columns.len()).map(|i| format!("v{i}")).collect();
    names.push("d".into());
    let carried = Rows::Tree {
        alias: "p".into(),
        columns: columns.to_vec(),
    };
    let picked: Vec<String> = columns
        .iter()
        .map(|c| format!("t.{}", quote::ident(c)))
        .collect();
    let parts: Vec<String> = tree
        .iter()
        .map(|f| {
            let on: Vec<String> = f
                .columns
                .iter()
                .zip(&f.referenced)
                .map(|(c, r)| format!("t.{} = {}", quote::ident(c), carried.col(r)))
                .collect();
            format!(
                "SELECT {}, p.d + 1 FROM {} AS t JOIN {name} AS p ON {} WHERE p.d < {depth_left}",
                picked.join(", "),
                quote::table(schema, table),
                on.join(" AND ")
            )
        })
        .collect();
    format!(
        "{name} ({}) AS ({anchor} UNION ALL {})",
        names.join(", "),
        parts.join(" UNION ALL ")
    )
}

/// ` WHERE a AND b`, or nothing.
fn where_clause(conds: &[String]) -> String {
    if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    }
}

/// The `INSERT … SELECT`s logging the keys of the rows `chain` changes in `target`: their
/// keys as they are, and, when the chain sets key columns to the head's new values, as they
/// will be.
pub fn log_statements(schema: &str, chain: &Chain<'_>, target: &Target<'_>) -> Vec<String> {
    let key: Vec<String> = target.key.iter().map(|k| k.name.clone()).collect();
    let joined = Joined::of(schema, chain, &key);
    let log = quote::table(schema, target.log);
    let old: Vec<String> = key.iter().map(|k| joined.rows.col(k)).collect();
    let mut out = vec![joined.statement(&log, &old, &joined.conds)];
    if let Some((new, more)) = moved_key(chain, &key, &joined) {
        out.push(joined.statement(&log, &new, &more));
    }
    out
}

/// A chain's rows joined from its head to its last step: the recursive `WITH` tables of the
/// trees deletes cascade through, the `FROM` list, its conditions, and where the last
/// step's rows are read.
struct Joined {
    ctes: Vec<String>,
    from: Vec<String>,
    conds: Vec<String>,
    rows: Rows,
}

impl Joined {
    /// The joins of `chain`, carrying `key` (the target's) to its end.
    fn of(schema: &str, chain: &Chain<'_>, key: &[String]) -> Joined {
        let depth_left = MAX_DEPTH.saturating_sub(chain.steps.len());
        let mut j = Joined {
            ctes: Vec::new(),
            from: Vec::new(),
            conds: Vec::new(),
            rows: Rows::Old,
        };
        if !chain.head_tree.is_empty() {
            j.head_tree(schema, chain, key, depth_left);
        }
        for (i, step) in chain.steps.iter().enumerate() {
            j.step(schema, chain, key, (i, step), depth_left);
        }
        j
    }

    /// The head's own tree (a table referencing itself): its rows from the head's old row.
    fn head_tree(&mut self, schema: &str, chain: &Chain<'_>, key: &[String], depth_left: usize) {
        let cols = carried(chain, key, 0, &chain.head_tree);
        let old: Vec<String> = cols.iter().map(|c| Rows::Old.col(c)).collect();
        let name = "myrecode_tree0";
        self.ctes.push(tree_cte(
            schema,
            name,
            &chain.head,
            &chain.head_tree,
            &cols,
            &format!("SELECT {}, 0", old.join(", ")),
            depth_left,
        ));
        self.from.push(format!("{name} AS c0"));
        if chain.steps.is_empty() {
            // The row itself is logged by the head's own triggers: its subtree only.
            self.conds.push("c0.d > 0".into());
        }
        self.rows = Rows::Tree {
            alias: "c0".into(),
            columns: cols,
        };
    }

    /// Step `i` of the chain joined on the rows before it; a delete cascading through a tree
    /// of its child becomes a recursive `WITH` table the next step reads.
    fn step(
        &mut self,
        schema: &str,
        chain: &Chain<'_>,
        key: &[String],
        (i, step): (usize, &Step<'_>),
        depth_left: usize,
    ) {
        let alias = format!("c{}", i + 1);
        let table = quote::table(schema, &step.fk.child);
        let on: Vec<String> = step
            .fk
            .columns
            .iter()
            .zip(&step.fk.referenced)
            .map(|(c, r)| format!("{alias}.{} = {}", quote::ident(c), self.rows.col(r)))
            .collect();
        if matches!(self.rows, Rows::Old) {
            self.from.push(format!("{table} AS {alias}"));
            self.conds.extend(on);
        } else {
            self.from
                .push(format!("JOIN {table} AS {alias} ON {}", on.join(" AND ")));
        }
        self.rows = Rows::Table(alias.clone());
        let Effect::Deleted { tree } = &step.effect else {
            return;
        };
        if tree.is_empty() {
            return;
        }
        let cols = carried(chain, key, i + 1, tree.as_slice());
        let picked: Vec<String> = cols.iter().map(|c| self.rows.col(c)).collect();
        let anchor = format!(
            "SELECT {}, 0 FROM {}{}",
            picked.join(", "),
            self.from.join(" "),
            where_clause(&self.conds)
        );
        let name = format!("myrecode_tree{}", i + 1);
        self.ctes.push(tree_cte(
            schema,
            &name,
            &step.fk.child,
            tree.as_slice(),
            &cols,
            &anchor,
            depth_left,
        ));
        self.from = vec![format!("{name} AS {alias}")];
        self.conds.clear();
        self.rows = Rows::Tree {
            alias,
            columns: cols,
        };
    }

    /// The statement logging `values` (a key) of the joined rows meeting `conds` into `log`.
    fn statement(&self, log: &str, values: &[String], conds: &[String]) -> String {
        let with = if self.ctes.is_empty() {
            String::new()
        } else {
            format!("WITH RECURSIVE {} ", self.ctes.join(", "))
        };
        format!(
            "INSERT INTO {log} (key_bytes) {with}SELECT {} FROM {}{};",
            pack_values(values),
            self.from.join(" "),
            where_clause(conds)
        )
    }
}

/// The columns a tree at node `i` (0: the head) must carry: what its self-references and
/// the next step read, and the key when it is the target.
fn carried(chain: &Chain<'_>, key: &[String], i: usize, tree: &[&ForeignKey]) -> Vec<String> {
    let mut cols = Vec::new();
    for f in tree {
        add_all(&mut cols, &f.referenced);
    }
    match chain.steps.get(i) {
        Some(next) => add_all(&mut cols, &next.fk.referenced),
        None => add_all(&mut cols, key),
    }
    cols
}

/// A key column the chain sets to the head's new value: the row moves to a new key, logged
/// as well (the key as it will be, and the conditions that the head's values are set).
/// `None` when no key column moves, or one is set to NULL (which fails the statement: keys
/// are NOT NULL).
fn moved_key(
    chain: &Chain<'_>,
    key: &[String],
    joined: &Joined,
) -> Option<(Vec<String>, Vec<String>)> {
    let Some(Effect::Updated(set)) = chain.steps.last().map(|s| &s.effect) else {
        return None;
    };
    let mut new = Vec::new();
    let mut more = joined.conds.clone();
    let mut moved = false;
    for k in key {
        match set.iter().find(|s| &s.column == k) {
            Some(SetColumn { from: Some(h), .. }) => {
                let v = format!("NEW.{}", quote::ident(h));
                more.push(format!("{v} IS NOT NULL"));
                new.push(v);
                moved = true;
            }
            Some(SetColumn { from: None, .. }) => return None,
            None => new.push(joined.rows.col(k)),
        }
    }
    moved.then_some((new, more))
}

/// The body (`BEGIN … END`) of the trigger before `event` on a head, logging every chain's
/// rows into its target's log (`None` without a chain). An update runs a chain only when one
/// of its guard's columns changes, byte for byte (as InnoDB compares them).
pub fn trigger_body(
    schema: &str,
    event: Event,
    chains: &[Chain<'_>],
    targets: &[Target<'_>],
) -> Option<String> {
    let mut groups: Vec<(&[String], Vec<String>)> = Vec::new();
    for chain in chains {
        let Some(target) = targets.iter().find(|t| t.table == chain.target()) else {
            continue;
        };
        let statements = log_statements(schema, chain, target);
        match groups
            .iter_mut()
            .find(|(g, _)| *g == chain.guard.as_slice())
        {
            Some((_, s)) => s.extend(statements),
            None => groups.push((chain.guard.as_slice(), statements)),
        }
    }
    if groups.is_empty() {
        return None;
    }
    // The branch never runs, but the server locks every table a trigger names before the
    // application's statement starts: this is what puts each write behind the gate.
    let mut parts = vec![format!(
        "IF 0 THEN DO (SELECT 1 FROM {} LIMIT 1); END IF;",
        quote::table(schema, GATE)
    )];
    for (guard, statements) in groups {
        if event == Event::Update {
            let same: Vec<String> = guard
                .iter()
                .map(|c| {
                    let c = quote::ident(c);
                    format!("CAST(OLD.{c} AS BINARY) <=> CAST(NEW.{c} AS BINARY)")
                })
                .collect();
            parts.push(format!(
                "IF NOT ({}) THEN {} END IF;",
                same.join(" AND "),
                statements.join(" ")
            ));
        } else {
            parts.extend(statements);
        }
    }
    Some(format!("BEGIN {} END", parts.join(" ")))
}

/// `CREATE TRIGGER name BEFORE event ON head FOR EACH ROW body`.
pub fn trigger_ddl(schema: &str, head: &str, name: &str, event: Event, body: &str) -> String {
    format!(
        "CREATE TRIGGER {} BEFORE {} ON {} FOR EACH ROW {body}",
        quote::table(schema, name),
        event.sql(),
        quote::table(schema, head)
    )
}

/// Every trigger of schema `?`: name and the table it is on.
pub const SCHEMA_TRIGGERS_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR), CAST(EVENT_OBJECT_TABLE AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?";

/// The triggers in schema `?` named as our cascade triggers are: table, event, name, body
/// (whether one is the table's own cascade trigger is told by its name: [`crate::bookkeeping::names`]).
pub const CASCADE_TRIGGERS_SQL: &str =
    "SELECT CAST(EVENT_OBJECT_TABLE AS CHAR), CAST(EVENT_MANIPULATION AS CHAR), \
CAST(TRIGGER_NAME AS CHAR), CAST(ACTION_STATEMENT AS CHAR) FROM information_schema.TRIGGERS \
WHERE TRIGGER_SCHEMA = ? AND ACTION_TIMING = 'BEFORE' AND (TRIGGER_NAME LIKE '%\\_myrecode\\_bup' \
OR TRIGGER_NAME LIKE '%\\_myrecode\\_bde' OR TRIGGER_NAME LIKE '%\\_myrecode\\_bup2' \
OR TRIGGER_NAME LIKE '%\\_myrecode\\_bde2') ORDER BY EVENT_OBJECT_TABLE, TRIGGER_NAME";

/// Every cascade-logging trigger left in schema `?`, by its name's ending (after the rename
/// they are on the `<t>_myrecode_old` tables, whose names no longer give theirs).
pub const LEFT_CASCADE_TRIGGERS_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS \
WHERE TRIGGER_SCHEMA = ? AND (TRIGGER_NAME LIKE '%\\_myrecode\\_bup' OR TRIGGER_NAME LIKE '%\\_myrecode\\_bde' \
OR TRIGGER_NAME LIKE '%\\_myrecode\\_bup2' OR TRIGGER_NAME LIKE '%\\_myrecode\\_bde2')";

#[cfg(test)]
pub(crate) mod tests;

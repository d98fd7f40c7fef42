//! Which rows a statement's cascading foreign-key actions change, followed to any depth, and
//! the triggers that log them. Pure.
//!
//! Cascading actions fire no triggers, so a copied table's own change-log triggers never see
//! the rows a cascade changes. Every table at the head of a chain of cascades that reaches a
//! copied table (a "target") gets `BEFORE UPDATE` and `BEFORE DELETE` triggers that, while
//! every row still holds its old values, find the rows each chain is about to change and log
//! their keys into the target's change log; the replay then re-reads them.
//!
//! The chains followed are those InnoDB runs:
//! * a deleted row's children get their `ON DELETE` action: `CASCADE` deletes them (and the
//!   chain goes on from them), `SET NULL` updates their referencing columns;
//! * an updated row's children whose constraint references a column the update changed get
//!   their `ON UPDATE` action: `CASCADE` gives their referencing columns the new values,
//!   `SET NULL` nulls them; only those columns count for the grandchildren (the
//!   column-intersection rule), so a chain ends where no constraint references them;
//! * an update reaching a table that the statement or an update earlier in the same chain
//!   changed fails the whole statement (InnoDB plays safe), so such a chain is not followed:
//!   only deletes come back to a table, as in a self-referencing thread;
//! * chains end at [`MAX_DEPTH`]: InnoDB fails a statement whose cascade goes deeper;
//! * `SET DEFAULT` (MariaDB's InnoDB reads it as `RESTRICT`, MySQL's refuses it) is followed
//!   as `SET NULL` is, in case.
//!
//! With cut-over groups the targets are the copies still to be swapped, so a group's
//! cut-over changes what the heads log ([`at_cutover`]): under its lock, the heads outside the
//! group stop logging its tables (after the rename nothing may write a swapped table's
//! drained log), and its own heads' logging of the tables swapped later is created on their
//! shadows, which the rename carries to the live names. A kill between the two leaves chains
//! no trigger logs; the rerun sees them ([`unlogged`]) and checks those tables again.
//!
//! A table whose self-referencing constraints delete in cascade (a comment thread) has its
//! deleted rows' whole subtrees gathered by a recursive common table expression bounded by
//! the depth left, rather than by one statement per level. Intermediate tables need not be
//! in the job; a parent in another schema is not followed (its table gets no trigger).

use super::foreign_sql::ForeignKey;
use super::names::names;
use super::sql::{drop_trigger_sql, pack_values, GATE};
use crate::db::keyset::KeyColumn;
use crate::db::quote;

/// The deepest chain followed: InnoDB's limit on nested cascades (`FK_MAX_CASCADE_DEL`). The
/// server fails the statement whose cascade reaches this depth, so the last level logs rows
/// of a statement that rolls back: harmless.
pub const MAX_DEPTH: usize = 15;

/// The most chains one trigger logs. Only cycles of `ON DELETE CASCADE` through several
/// tables multiply chains (one per way round, up to [`MAX_DEPTH`]); past this, the job stops
/// with [`TooManyChains`] rather than put a statement of that many joins on every write.
pub const MAX_CHAINS: usize = 256;

/// Tables looked at while following one table's chains, at most (chains that end nowhere
/// included): bounds the work on a schema of many cycles.
const MAX_VISITS: usize = 65_536;

/// Whether a referential action changes or removes the child's rows (and so must be logged).
pub fn cascades(rule: &str) -> bool {
    matches!(
        rule.to_ascii_uppercase().as_str(),
        "CASCADE" | "SET NULL" | "SET DEFAULT"
    )
}

/// The statement at the head of a chain: what it does to its table's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// An `UPDATE` (or the update of `INSERT … ON DUPLICATE KEY UPDATE`, `REPLACE` aside).
    Update,
    /// A `DELETE` (or the delete of a `REPLACE`).
    Delete,
}

impl Event {
    /// The event as the trigger DDL names it.
    pub fn sql(self) -> &'static str {
        match self {
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        }
    }
}

/// One referencing column a cascade sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetColumn {
    /// The column.
    pub column: String,
    /// The head's column whose new value it takes (`ON UPDATE CASCADE` all the way from the
    /// head), or `None` (set to NULL, or to its default).
    pub from: Option<String>,
    /// The head's columns any of whose change sets it (empty under a delete: always).
    pub sources: Vec<String>,
}

/// What a chain does to the rows it reaches in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect<'a> {
    /// Deleted, and with them their subtrees by the table's own self-referencing
    /// `ON DELETE CASCADE` constraints (`tree`, empty when it has none).
    Deleted {
        /// The self-referencing constraints that delete in cascade.
        tree: Vec<&'a ForeignKey>,
    },
    /// Some referencing columns set.
    Updated(Vec<SetColumn>),
}

/// One step of a chain: the constraint followed from parent to child and what its action
/// does to the child's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step<'a> {
    /// The constraint (its child is the table reached).
    pub fk: &'a ForeignKey,
    /// What happens to the rows reached.
    pub effect: Effect<'a>,
}

/// One chain of cascades from a statement on `head` to the rows of a target it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain<'a> {
    /// The table the statement runs on.
    pub head: String,
    /// The statement.
    pub event: Event,
    /// Under a delete, the head's self-referencing `ON DELETE CASCADE` constraints: the
    /// chain starts from the deleted row's whole subtree.
    pub head_tree: Vec<&'a ForeignKey>,
    /// The steps, head first; none when the target is the head's own subtree.
    pub steps: Vec<Step<'a>>,
    /// Under an update, the head's columns any of whose change runs the whole chain.
    pub guard: Vec<String>,
}

impl Chain<'_> {
    /// The table whose rows the chain changes last (whose log it writes).
    pub fn target(&self) -> &str {
        self.steps.last().map_or(&self.head, |s| &s.fk.child)
    }
}

/// A copied table with a key, whose change log the chains reaching it write into.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The table.
    pub table: &'a str,
    /// Its change log.
    pub log: &'a str,
    /// Its paging key (what the log holds).
    pub key: &'a [KeyColumn],
}

/// Following one table's chains went past [`MAX_CHAINS`] (or [`MAX_VISITS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooManyChains {
    /// The table at the head.
    pub table: String,
    /// The statement.
    pub event: Event,
}

/// The constraints followed: both tables in `schema` (a parent elsewhere is not followed).
fn within<'a>(fks: &'a [ForeignKey], schema: &'a str) -> impl Iterator<Item = &'a ForeignKey> {
    fks.iter()
        .filter(move |f| f.child_schema == schema && f.parent_schema == schema)
}

/// The tables from which some chain of cascading constraints leads to a target (the targets
/// included): the only ones worth following.
fn reaching(fks: &[ForeignKey], schema: &str, targets: &[&str]) -> Vec<String> {
    let mut reach: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    loop {
        let more: Vec<String> = within(fks, schema)
            .filter(|f| cascades(&f.on_update) || cascades(&f.on_delete))
            .filter(|f| reach.contains(&f.child) && !reach.contains(&f.parent))
            .map(|f| f.parent.clone())
            .collect();
        if more.is_empty() {
            reach.sort();
            reach.dedup();
            return reach;
        }
        reach.extend(more);
    }
}

/// The tables at the head of some chain reaching a target: each needs the triggers.
pub fn heads(fks: &[ForeignKey], schema: &str, targets: &[&str]) -> Vec<String> {
    let reach = reaching(fks, schema, targets);
    let mut out: Vec<String> = within(fks, schema)
        .filter(|f| cascades(&f.on_update) || cascades(&f.on_delete))
        .filter(|f| reach.contains(&f.child))
        .map(|f| f.parent.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A table's self-referencing `ON DELETE CASCADE` constraints.
fn tree_of<'a>(fks: &'a [ForeignKey], schema: &'a str, table: &str) -> Vec<&'a ForeignKey> {
    within(fks, schema)
        .filter(|f| f.parent == table && f.child == table)
        .filter(|f| f.on_delete.eq_ignore_ascii_case("CASCADE"))
        .collect()
}

/// Every chain an `event` on `head` runs that ends at one of `targets`, in a stable order
/// (depth first, constraints in catalog order).
pub fn chains<'a>(
    fks: &'a [ForeignKey],
    schema: &'a str,
    head: &str,
    event: Event,
    targets: &[&str],
) -> Result<Vec<Chain<'a>>, TooManyChains> {
    let head_tree = match event {
        Event::Delete => tree_of(fks, schema, head),
        Event::Update => Vec::new(),
    };
    let mut walk = Walk {
        fks,
        schema,
        head,
        event,
        head_tree,
        targets,
        reach: reaching(fks, schema, targets),
        out: Vec::new(),
        visits: 0,
    };
    if !walk.head_tree.is_empty() && targets.contains(&head) {
        walk.emit(&[])?;
    }
    let mut updated: Vec<String> = match event {
        Event::Update => vec![head.to_string()],
        Event::Delete => Vec::new(),
    };
    walk.follow(&mut Vec::new(), &mut updated)?;
    Ok(walk.out)
}

/// The depth-first walk of [`chains`].
struct Walk<'a, 'b> {
    fks: &'a [ForeignKey],
    schema: &'a str,
    head: &'b str,
    event: Event,
    head_tree: Vec<&'a ForeignKey>,
    targets: &'b [&'b str],
    reach: Vec<String>,
    out: Vec<Chain<'a>>,
    visits: usize,
}

impl<'a> Walk<'a, '_> {
    fn too_many(&self) -> TooManyChains {
        TooManyChains {
            table: self.head.to_string(),
            event: self.event,
        }
    }

    fn emit(&mut self, steps: &[Step<'a>]) -> Result<(), TooManyChains> {
        // Sources only narrow along a chain, so the last step's are the whole chain's condition.
        let mut guard: Vec<String> = match steps.last().map(|s| &s.effect) {
            Some(Effect::Updated(set)) if self.event == Event::Update => {
                set.iter().flat_map(|s| s.sources.clone()).collect()
            }
            _ => Vec::new(),
        };
        guard.sort();
        guard.dedup();
        self.out.push(Chain {
            head: self.head.to_string(),
            event: self.event,
            head_tree: self.head_tree.clone(),
            steps: steps.to_vec(),
            guard,
        });
        if self.out.len() > MAX_CHAINS {
            return Err(self.too_many());
        }
        Ok(())
    }

    /// Follows every constraint from the rows `steps` reached (the head's, with none).
    /// `updated`: the tables the statement and the chain's updates changed.
    fn follow(
        &mut self,
        steps: &mut Vec<Step<'a>>,
        updated: &mut Vec<String>,
    ) -> Result<(), TooManyChains> {
        if steps.len() >= MAX_DEPTH {
            return Ok(());
        }
        let (table, effect): (&str, Option<Effect<'a>>) = match steps.last() {
            Some(s) => (&s.fk.child, Some(s.effect.clone())),
            None => (self.head, None),
        };
        let table = table.to_string();
        for fk in within(self.fks, self.schema) {
            if fk.parent != table || !self.reach.contains(&fk.child) {
                continue;
            }
            let child = match (&effect, self.event) {
                // A tree's rows are whole subtrees already: its self-references add none.
                (Some(Effect::Deleted { tree }), _)
                    if tree.iter().any(|t| std::ptr::eq(*t, fk)) =>
                {
                    continue;
                }
                // Likewise the head's own subtree, where every chain of a delete starts.
                (None, Event::Delete) if self.head_tree.iter().any(|t| std::ptr::eq(*t, fk)) => {
                    continue;
                }
                (Some(Effect::Deleted { .. }), _) | (None, Event::Delete) => {
                    on_delete(self.fks, self.schema, fk)
                }
                (Some(Effect::Updated(set)), _) => {
                    on_update(fk, |c| set.iter().find(|s| s.column == c).cloned())
                }
                (None, Event::Update) => on_update(fk, |c| {
                    Some(SetColumn {
                        column: c.to_string(),
                        from: Some(c.to_string()),
                        sources: vec![c.to_string()],
                    })
                }),
            };
            let Some(child) = child else { continue };
            let updates = matches!(child, Effect::Updated(_));
            if updates && updated.contains(&fk.child) {
                continue;
            }
            self.visits += 1;
            if self.visits > MAX_VISITS {
                return Err(self.too_many());
            }
            steps.push(Step { fk, effect: child });
            if updates {
                updated.push(fk.child.clone());
            }
            if self.targets.contains(&fk.child.as_str()) {
                self.emit(steps)?;
            }
            self.follow(steps, updated)?;
            if updates {
                updated.pop();
            }
            steps.pop();
        }
        Ok(())
    }
}

/// What a deleted parent row's `fk` does to its children (`None`: nothing).
fn on_delete<'a>(fks: &'a [ForeignKey], schema: &'a str, fk: &'a ForeignKey) -> Option<Effect<'a>> {
    match fk.on_delete.to_ascii_uppercase().as_str() {
        "CASCADE" => Some(Effect::Deleted {
            tree: tree_of(fks, schema, &fk.child),
        }),
        "SET NULL" | "SET DEFAULT" => Some(Effect::Updated(
            fk.columns
                .iter()
                .map(|c| SetColumn {
                    column: c.clone(),
                    from: None,
                    sources: Vec::new(),
                })
                .collect(),
        )),
        _ => None,
    }
}

/// What an update of a parent row does to its children by `fk`, given which of the parent's
/// columns it sets (`set_of`); `None` when it sets none `fk` references, or the action
/// changes nothing.
fn on_update<'a>(
    fk: &ForeignKey,
    set_of: impl Fn(&str) -> Option<SetColumn>,
) -> Option<Effect<'a>> {
    let hit: Vec<(usize, SetColumn)> = fk
        .referenced
        .iter()
        .enumerate()
        .filter_map(|(i, r)| set_of(r).map(|s| (i, s)))
        .collect();
    if hit.is_empty() {
        return None;
    }
    match fk.on_update.to_ascii_uppercase().as_str() {
        "CASCADE" => Some(Effect::Updated(
            hit.into_iter()
                .map(|(i, s)| SetColumn {
                    column: fk.columns[i].clone(),
                    ..s
                })
                .collect(),
        )),
        "SET NULL" | "SET DEFAULT" => {
            let mut sources: Vec<String> = hit.into_iter().flat_map(|(_, s)| s.sources).collect();
            sources.sort();
            sources.dedup();
            Some(Effect::Updated(
                fk.columns
                    .iter()
                    .map(|c| SetColumn {
                        column: c.clone(),
                        from: None,
                        sources: sources.clone(),
                    })
                    .collect(),
            ))
        }
        _ => None,
    }
}

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
    let n = chain.steps.len();
    let depth_left = MAX_DEPTH.saturating_sub(n);
    let key: Vec<String> = target.key.iter().map(|k| k.name.clone()).collect();
    // The columns a tree at node `i` (0: the head) must carry: what its self-references and
    // the next step read, and the key when it is the target.
    let carried = |i: usize, tree: &[&ForeignKey]| {
        let mut cols = Vec::new();
        for f in tree {
            add_all(&mut cols, &f.referenced);
        }
        match chain.steps.get(i) {
            Some(next) => add_all(&mut cols, &next.fk.referenced),
            None => add_all(&mut cols, &key),
        }
        cols
    };
    let mut ctes: Vec<String> = Vec::new();
    let mut from: Vec<String> = Vec::new();
    let mut conds: Vec<String> = Vec::new();
    let mut rows = Rows::Old;
    if !chain.head_tree.is_empty() {
        let cols = carried(0, &chain.head_tree);
        let old: Vec<String> = cols.iter().map(|c| Rows::Old.col(c)).collect();
        let name = "myrecode_tree0";
        ctes.push(tree_cte(
            schema,
            name,
            &chain.head,
            &chain.head_tree,
            &cols,
            &format!("SELECT {}, 0", old.join(", ")),
            depth_left,
        ));
        from.push(format!("{name} AS c0"));
        if n == 0 {
            // The row itself is logged by the head's own triggers: its subtree only.
            conds.push("c0.d > 0".into());
        }
        rows = Rows::Tree {
            alias: "c0".into(),
            columns: cols,
        };
    }
    for (i, step) in chain.steps.iter().enumerate() {
        let alias = format!("c{}", i + 1);
        let table = quote::table(schema, &step.fk.child);
        let on: Vec<String> = step
            .fk
            .columns
            .iter()
            .zip(&step.fk.referenced)
            .map(|(c, r)| format!("{alias}.{} = {}", quote::ident(c), rows.col(r)))
            .collect();
        if matches!(rows, Rows::Old) {
            from.push(format!("{table} AS {alias}"));
            conds.extend(on);
        } else {
            from.push(format!("JOIN {table} AS {alias} ON {}", on.join(" AND ")));
        }
        rows = Rows::Table(alias.clone());
        if let Effect::Deleted { tree } = &step.effect {
            if !tree.is_empty() {
                let cols = carried(i + 1, tree);
                let picked: Vec<String> = cols.iter().map(|c| rows.col(c)).collect();
                let anchor = format!(
                    "SELECT {}, 0 FROM {}{}",
                    picked.join(", "),
                    from.join(" "),
                    where_clause(&conds)
                );
                let name = format!("myrecode_tree{}", i + 1);
                ctes.push(tree_cte(
                    schema,
                    &name,
                    &step.fk.child,
                    tree,
                    &cols,
                    &anchor,
                    depth_left,
                ));
                from = vec![format!("{name} AS {alias}")];
                conds.clear();
                rows = Rows::Tree {
                    alias,
                    columns: cols,
                };
            }
        }
    }
    let with = if ctes.is_empty() {
        String::new()
    } else {
        format!("WITH RECURSIVE {} ", ctes.join(", "))
    };
    let log = quote::table(schema, target.log);
    let statement = |values: &[String], conds: &[String]| {
        format!(
            "INSERT INTO {log} (key_bytes) {with}SELECT {} FROM {}{};",
            pack_values(values),
            from.join(" "),
            where_clause(conds)
        )
    };
    let old: Vec<String> = key.iter().map(|k| rows.col(k)).collect();
    let mut out = vec![statement(&old, &conds)];
    // A key column the chain sets to the head's new value: the row moves to a new key.
    if let Some(Effect::Updated(set)) = chain.steps.last().map(|s| &s.effect) {
        let mut new = Vec::new();
        let mut more = conds.clone();
        let mut moved = false;
        for k in &key {
            match set.iter().find(|s| &s.column == k) {
                Some(SetColumn { from: Some(h), .. }) => {
                    let v = format!("NEW.{}", quote::ident(h));
                    more.push(format!("{v} IS NOT NULL"));
                    new.push(v);
                    moved = true;
                }
                // A key column set to NULL fails the statement (keys are NOT NULL).
                Some(SetColumn { from: None, .. }) => return out,
                None => new.push(rows.col(k)),
            }
        }
        if moved {
            out.push(statement(&new, &more));
        }
    }
    out
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

/// Every trigger of schema `?`: name and the table it is on.
pub const SCHEMA_TRIGGERS_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR), CAST(EVENT_OBJECT_TABLE AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?";

/// The triggers in schema `?` named as our cascade triggers are: table, event, name, body
/// (whether one is the table's own cascade trigger is told by its name: [`super::names`]).
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

//! Which rows a statement's cascading foreign-key actions change, followed to any depth. Pure.
//!
//! Cascading actions fire no triggers, so a copied table's own change-log triggers never see
//! the rows a cascade changes: the tables at the head of a chain of cascades that reaches a
//! copied table (a "target") log them instead ([`crate::engine::copy::cutover::carried::cascade::plan`],
//! [`crate::engine::copy::cutover::carried::cascade::sql`]). The chains followed are those InnoDB runs:
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
//! Intermediate tables need not be in the job; a parent in another schema is not followed.

use crate::db::keyset::KeyColumn;
use crate::engine::copy::cutover::carried::foreign_sql::ForeignKey;

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

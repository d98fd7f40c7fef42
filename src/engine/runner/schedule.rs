//! Which steps a run takes, in which order (pure): each table in job order (in place to its
//! end, a copy up to ready), then each cut-over group's swap, in the order the job's groups
//! are swapped (the whole job's copies in one when it names none).

use crate::engine::copy::group::GroupPlans;
use crate::engine::table_plan::TablePlan;
use crate::inventory::model::Table;
use crate::job::model::{Job, Strategy};

/// A run's steps and what they share.
pub(super) struct Schedule<'a> {
    /// The tables that run, in job order.
    pub plans: &'a [TablePlan],
    /// Their live tables, in the same order.
    tables: &'a [Table],
    /// The copied tables among them, in job order.
    pub copies: Vec<TablePlan>,
    /// Whether a copied table is in a foreign key: only then are constraints read and moved,
    /// and cascades logged.
    pub with_fks: bool,
    /// Each cut-over group (its name; `None` when the job names none) with its copies, in
    /// the order they are swapped; a group without copies is left out.
    groups: Vec<(Option<&'a str>, Vec<TablePlan>)>,
    /// For each group, the copies of the groups after it: still logged and replayed while
    /// it waits.
    later: Vec<Vec<TablePlan>>,
}

impl<'a> Schedule<'a> {
    /// The schedule of `job`'s tables that run (`plans`, with their live `tables`).
    pub fn of(job: &'a Job, plans: &'a [TablePlan], tables: &'a [Table]) -> Self {
        let copies: Vec<TablePlan> = plans
            .iter()
            .filter(|p| p.strategy == Strategy::Copy)
            .cloned()
            .collect();
        let with_fks = plans
            .iter()
            .zip(tables)
            .any(|(p, t)| p.strategy == Strategy::Copy && !t.foreign_keys.is_empty());
        let groups: Vec<(Option<&str>, Vec<TablePlan>)> = crate::job::groups::ordered(job)
            .into_iter()
            .map(|g| {
                let mine: Vec<TablePlan> = copies
                    .iter()
                    .filter(|p| g.tables.contains(&p.table.as_str()))
                    .cloned()
                    .collect();
                (g.name, mine)
            })
            .filter(|(_, mine)| !mine.is_empty())
            .collect();
        let later = (0..groups.len())
            .map(|i| {
                groups[i + 1..]
                    .iter()
                    .flat_map(|(_, p)| p.clone())
                    .collect()
            })
            .collect();
        Schedule {
            plans,
            tables,
            copies,
            with_fks,
            groups,
            later,
        }
    }

    /// The steps in order: each table (copies only up to ready), then each group's cut-over.
    pub fn steps(&self) -> Vec<Step<'_>> {
        let tables = self.plans.iter().zip(self.tables);
        let cutovers = self.groups.iter().zip(&self.later);
        tables
            .map(|(p, t)| Step::Table(p, t))
            .chain(cutovers.map(|((name, mine), later)| {
                Step::CutOver(GroupPlans {
                    name: *name,
                    plans: mine,
                    later,
                })
            }))
            .collect()
    }
}

/// One step of a run: a table (in place to the end, a copy up to ready), or one group's cut-over.
#[derive(Clone, Copy)]
pub(super) enum Step<'a> {
    /// A table and its live table.
    Table(&'a TablePlan, &'a Table),
    /// A group's cut-over.
    CutOver(GroupPlans<'a>),
}

impl Step<'_> {
    /// The tables the step reads and writes: a table, or a group's and the later groups'.
    pub fn plans(&self) -> Vec<&TablePlan> {
        match self {
            Step::Table(p, _) => vec![*p],
            Step::CutOver(g) => g.plans.iter().chain(g.later).collect(),
        }
    }
}

impl std::fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Table(p, _) => write!(f, "{}", p.table),
            Step::CutOver(g) => match g.name {
                Some(name) => write!(f, "the cut-over of group '{name}'"),
                None => write!(f, "the cut-over"),
            },
        }
    }
}

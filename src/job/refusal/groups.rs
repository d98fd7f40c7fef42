//! The rules of cut-over groups: what must not be split between two groups' instants.
//!
//! Between the cut-over of one group and the next, the first group's tables hold utf8mb4 text
//! and the second's still their legacy charset. A foreign key between text columns cannot
//! hold across that gap (the server keeps no constraint between text of different character
//! sets), and an application trigger that reads or writes a table of another group would
//! carry text between a recoded table and one not yet recoded. Both are refused, before
//! anything is written, with the groups named. Foreign keys on other columns (integers)
//! between groups are allowed: each group's cut-over moves the constraints of its tables as
//! it moves those of tables outside the job.

use super::{charset_after, At, Class, Facts, Refusal};
use crate::bookkeeping::names::is_copy_trigger;
use crate::db::charset::normalize_charset;
use crate::db::quote;
use crate::job::groups::group_of;
use crate::job::model::{Job, Strategy, TableJob};

/// The group of table `name` when it is a copied table of `all` in a named group.
fn copied_group<'a>(all: &'a Job, name: &str) -> Option<&'a str> {
    all.tables
        .iter()
        .any(|t| t.name == name && t.strategy == Strategy::Copy)
        .then(|| group_of(all, name))
        .flatten()
}

/// Every refusal of table `t` (job entry `job`) that the job's cut-over groups cause: a
/// foreign key whose text columns are recoded on both sides by two groups, and a trigger of
/// the table that names a copied table of another group. `all` is the whole job; a job that
/// names no groups has nothing to refuse here.
pub fn group_splits(t: &Facts, job: &TableJob, all: &Job) -> Vec<Refusal> {
    let mut out = Vec::new();
    let Some(mine) = copied_group(all, &job.name) else {
        return out;
    };
    let mut seen: Vec<&str> = Vec::new();
    for fk in t.foreign_keys {
        if fk.from_schema != fk.to_schema || seen.contains(&fk.name.as_str()) {
            continue;
        }
        let outgoing = fk.from_schema == t.schema && fk.from_table == t.name;
        let other = if outgoing {
            &fk.to_table
        } else {
            &fk.from_table
        };
        let Some(theirs) = copied_group(all, other).filter(|g| *g != mine) else {
            continue;
        };
        let other_job = all.tables.iter().find(|j| &j.name == other);
        for (from, to) in fk.from_columns.iter().zip(&fk.to_columns) {
            let (a, b) = if outgoing { (from, to) } else { (to, from) };
            let Some(now) = t
                .columns
                .iter()
                .find(|c| c.name == a.as_str())
                .and_then(|c| c.charset)
            else {
                continue;
            };
            let here = charset_after(Some(job), a, Some(now));
            let there = charset_after(other_job, b, Some(now));
            let before = normalize_charset(now);
            // Ending apart is the split rule's; both unchanged holds at every instant.
            if here != there || here.as_deref() == Some(before.as_str()) {
                continue;
            }
            seen.push(&fk.name);
            out.push(Refusal {
                class: Class::ForeignKeyAcrossGroups,
                at: At::Name,
                reason: format!(
                    "foreign key {} joins {}.{a} (group '{mine}') to {other}.{b} (group '{theirs}'), text columns recoded from {before} to {} on both sides: between the two groups' cut-overs one would be {} and the other still {before}, and the server keeps no constraint between text columns of different character sets",
                    quote::ident(&fk.name),
                    t.name,
                    here.as_deref().unwrap_or("binary"),
                    here.as_deref().unwrap_or("binary"),
                ),
                fix: format!(
                    "put '{}' and '{other}' in the same cut-over group",
                    t.name
                ),
            });
            break;
        }
    }
    for trg in t.triggers.iter().filter(|x| !is_copy_trigger(&x.name)) {
        for u in &trg.tables {
            let Some(theirs) = copied_group(all, u).filter(|g| *g != mine) else {
                continue;
            };
            out.push(Refusal {
                class: Class::TriggerAcrossGroups,
                at: At::Name,
                reason: format!(
                    "trigger {} on table '{}' (group '{mine}') names table '{u}' of group '{theirs}': between the two groups' cut-overs it would carry text between a table already recoded to utf8mb4 and one still in its legacy character set",
                    quote::ident(&trg.name),
                    t.name
                ),
                fix: format!(
                    "put '{}' and '{u}' in the same cut-over group, or drop the trigger for the job and create it again once both groups are swapped",
                    t.name
                ),
            });
        }
    }
    out
}

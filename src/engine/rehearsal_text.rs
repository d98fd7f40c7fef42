//! The rehearsal's text, built by pure functions: what a run would do without writing, table
//! by table, then the cut-over groups in the order they are swapped.

use super::plans::Plans;
use crate::job::model::{Cutover, Job, Strategy};
use crate::recode::value::Source;

/// What a run would do, without writing: each table's plan, or why it is refused; then, for
/// a job that names cut-over groups, the groups in the order they are swapped.
pub fn rehearsal(plans: &Plans, job: &Job) -> String {
    let mut out = String::from("Rehearsal (nothing written; add --execute to run):\n");
    for entry in &plans.entries {
        let (p, t) = match (&entry.planned, entry.refusals.as_slice()) {
            (Some((p, t)), []) => (p, t),
            (_, refusals) => {
                for r in refusals {
                    out.push_str(&format!("  {}: refused: {r}\n", entry.table));
                }
                continue;
            }
        };
        let key: Vec<&str> = p.key.iter().map(|k| k.name.as_str()).collect();
        let cols: Vec<String> = p
            .columns
            .iter()
            .map(|c| match &c.source {
                Source::Auto => format!("{} (auto)", c.name),
                Source::Fixed(l) => format!("{} ({l})", c.name),
            })
            .collect();
        let when = if p.manual_cutover {
            "waits for `myrecode cutover` before the"
        } else {
            "automatic"
        };
        let line = match p.strategy {
            Strategy::InPlace => format!(
                "in place, ~{} rows by key ({}), columns {}, batches of {} tuned toward {:?}",
                t.estimated_rows,
                key.join(", "),
                cols.join(", "),
                p.batch_size,
                p.target_batch_time
            ),
            Strategy::Copy if p.key.is_empty() && !p.recoded_key.is_empty() => format!(
                "its key holds recoded column(s) {}: rebuilt whole into {} under the cut-over's lock ({} rows, about {}; {when} cut-over), columns {}",
                p.recoded_key.join(", "),
                crate::bookkeeping::names::names(&p.table).shadow,
                t.estimated_rows,
                crate::job::pause::pause_words(t.estimated_rows),
                cols.join(", ")
            ),
            Strategy::Copy if p.key.is_empty() => format!(
                "no key: rebuilt whole into {} under the cut-over's lock ({} rows, about {}; {when} cut-over), columns {}",
                crate::bookkeeping::names::names(&p.table).shadow,
                t.estimated_rows,
                crate::job::pause::pause_words(t.estimated_rows),
                cols.join(", ")
            ),
            Strategy::Copy => {
                // A recoded key part: the shadow finds each row by its old key's bytes.
                let (lead, found) = if p.recoded_key.is_empty() {
                    (String::new(), "")
                } else {
                    (
                        format!("its key holds recoded column(s) {}: ", p.recoded_key.join(", ")),
                        "each row found there by its old key read in its legacy charset; ",
                    )
                };
                format!(
                    "{lead}online copy into {} (triggers, change log, check pass; {found}{when} cut-over), ~{} rows by key ({}), columns {}, batches of {} tuned toward {:?}",
                    crate::bookkeeping::names::names(&p.table).shadow,
                    t.estimated_rows,
                    key.join(", "),
                    cols.join(", "),
                    p.batch_size,
                    p.target_batch_time
                )
            }
        };
        out.push_str(&format!("  {}: {line}\n", p.table));
    }
    out.push_str(&groups_rehearsal(job));
    out
}

/// The rehearsal's lines on cut-over groups (none when the job names none): each group in
/// the order it is swapped, its tables, and what swaps it.
pub fn groups_rehearsal(job: &Job) -> String {
    let order = crate::job::groups::ordered(job);
    if job.cutover_groups.is_empty() || order.is_empty() {
        return String::new();
    }
    let manual = job.defaults.cutover == Cutover::Manual;
    let mut out = String::from(
        "Cut-over groups, swapped one after another in this order, each at its own instant (one lock, drain and rename each), once every table is copied:\n",
    );
    for (i, g) in order.iter().enumerate() {
        let name = g.name.unwrap_or_default();
        let when = if manual {
            format!("when `myrecode cutover --group {name}` is given")
        } else if i == 0 {
            "as soon as caught up".to_string()
        } else {
            "right after the group before it".to_string()
        };
        out.push_str(&format!(
            "  {}. {name}: {} ({when})\n",
            i + 1,
            g.tables.join(", ")
        ));
    }
    out
}

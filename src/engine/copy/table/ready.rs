//! A batch's write made ready before it runs: its decided rows gathered into what to stage
//! and what to name by key, and its `INSERT … SELECT` built. Pure.

use crate::db::quote;
use crate::engine::copy::table::context::Ctx;
use crate::engine::copy::table::decide::{gather, Decided};
use crate::engine::copy::table::named_values;
use crate::engine::copy::table::recoded::{Decisions, Stage};
use crate::engine::copy::table::write_sql::{replace_select, Special};
use crate::engine::read::Key;

/// A batch's write made ready: its rows gathered ([`gather`]) and its `INSERT … SELECT`
/// built, for the key range `cond` after `after`.
pub(crate) struct Ready {
    pub(crate) decided: Decided,
    pub(crate) insert: String,
    pub(crate) cond: String,
    /// The range's exclusive lower bound: the statement names rows by their distance from it.
    pub(crate) after: Option<Key>,
}

impl Ready {
    /// The write of the decided `rows`, the rows of the key range `cond` (its keys after
    /// `after`, exclusive, when it has a lower bound).
    pub(crate) fn gather(
        ctx: &Ctx<'_>,
        rows: &[(Key, Decisions)],
        (after, cond): (Option<&[Vec<u8>]>, &str),
    ) -> Ready {
        let fits = |ci: usize, stored: &[u8], stage: &Stage| {
            named_values::fits(&ctx.job_columns[ci], &ctx.holds[ci], stored, stage)
        };
        let decided = gather(&ctx.plan.columns, rows, ctx.named, fits);
        let b = ctx.plan;
        let src = quote::table(&b.schema, &b.table);
        let base = named_values::map_base(after).filter(|_| ctx.named);
        let whens = named_values::whens(
            &ctx.job_columns,
            &src,
            &ctx.decider.others,
            (&decided.chosen, &decided.fits),
            base,
        );
        let special = Special {
            key: &b.key,
            staged: decided.stages(),
            whens: &whens,
        };
        let insert = replace_select(
            &b.schema,
            &b.table,
            &ctx.names.shadow,
            &ctx.all_columns,
            &ctx.job_columns,
            &special,
            cond,
        );
        Ready {
            decided,
            insert,
            cond: cond.to_string(),
            after: after.map(<[Vec<u8>]>::to_vec),
        }
    }

    /// The write `made` ahead, if it was made for this very range (its statement's `?`s are
    /// bound to the step's, its map counts from its lower bound) and none of its rows was
    /// read again since (`renewed`); else the write of `rows` made now ([`Ready::gather`]).
    pub(crate) fn made_or_gather(
        made: Option<Ready>,
        renewed: bool,
        ctx: &Ctx<'_>,
        rows: &[(Key, Decisions)],
        (after, cond): (Option<&[Vec<u8>]>, &str),
    ) -> Ready {
        match made {
            Some(r) if !renewed && r.cond == cond && r.after.as_deref() == after => r,
            _ => Ready::gather(ctx, rows, (after, cond)),
        }
    }
}

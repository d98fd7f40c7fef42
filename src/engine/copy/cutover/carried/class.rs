//! The shape every class carried across a cut-over has (`Carried`), and the cut-over it is
//! carried across (`Cut`).

use crate::bookkeeping::checkpoint::State;
use crate::engine::copy::table::context::Ctx;
use crate::engine::table_plan::TablePlan;
use anyhow::Result;
use sqlx::MySqlConnection;

/// The cut-over a class is carried across: what each class is planned, applied and settled
/// by (a settle knows only the tables, and no copy read).
pub(crate) struct Cut<'a, 'c> {
    /// The job's schema.
    pub(crate) schema: &'a str,
    /// The job's name, which its records are kept under.
    pub(crate) job: &'a str,
    /// The copies this cut-over swaps, with what the run read of them (none when settling).
    pub(crate) ctxs: &'a [Ctx<'c>],
    /// The group's tables.
    pub(crate) tables: &'a [&'a str],
    /// The copies still to be swapped, the group's among them: their cascades stay logged
    /// until their own cut-over.
    pub(crate) logged: &'a [TablePlan],
    /// The group's plans (the job's last group's give the schema's objects their reading and
    /// the schema its collation).
    pub(crate) plans: &'a [TablePlan],
    /// Whether the rename ran (then every table of the group is swapped).
    pub(crate) renamed: bool,
}

impl<'a> Cut<'a, '_> {
    /// A cut-over of `schema` by `job` known by nothing else yet.
    pub(crate) fn of(schema: &'a str, job: &'a str) -> Self {
        Cut {
            schema,
            job,
            ctxs: &[],
            tables: &[],
            logged: &[],
            plans: &[],
            renamed: false,
        }
    }
}

/// One class of what a cut-over carries across besides the rows (foreign keys, the tables'
/// own triggers, cascade logging, views/routines/events, the schema's default): **planned**
/// from the catalog, **recorded** before anything of it moves, **applied** at its instant,
/// **settled** by the next run from its record whatever instant a kill chose. Each step
/// sends its class's statements in the order the class needs; the order between classes is
/// the caller's (see [`crate::engine::copy::cutover::carried::under_lock`]).
pub(crate) trait Carried: Sized {
    /// Reads what the cut-over carries of this class; writes nothing.
    async fn plan(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Self>;

    /// Writes the plan down before anything of it moves, so that a run after a kill knows
    /// what to finish or undo. Nothing for a class whose record is the server's own state.
    async fn record(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()>;

    /// Carries the class across at its instant: under the cut-over's lock, or after the
    /// job's last rename.
    async fn apply(&self, conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<()>;

    /// Settles what a cut-over left of this class, from its record; idempotent. Returns the
    /// checkpoints it wrote (copies sent back to their check), in the order written.
    async fn settle(conn: &mut MySqlConnection, cut: &Cut<'_, '_>) -> Result<Vec<(String, State)>>;
}

/// `C` planned and, at once, recorded.
pub(crate) async fn planned<C: Carried>(
    conn: &mut MySqlConnection,
    cut: &Cut<'_, '_>,
) -> Result<C> {
    let c = C::plan(conn, cut).await?;
    c.record(conn, cut).await?;
    Ok(c)
}

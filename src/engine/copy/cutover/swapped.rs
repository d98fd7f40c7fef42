//! Which of a job's copies are swapped already: read from their checkpoints and from the
//! tables themselves (a shadow gone means the rename ran and only the finish is left).

use crate::bookkeeping::checkpoint;
use crate::bookkeeping::names::names;
use crate::engine::table_plan::TablePlan;
use anyhow::Result;
use sqlx::MySqlConnection;

/// Whether `table` of the job is swapped: its checkpoint says done, or the cut-over's rename
/// ran (its shadow is gone) and only the finish is left.
pub async fn swapped(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    table: &str,
) -> Result<bool> {
    Ok(match checkpoint::load(conn, schema, job, table).await? {
        Some(s) if s.done => true,
        Some(_) => {
            !crate::engine::copy::catalog::table_exists(conn, schema, &names(table).shadow).await?
        }
        None => false,
    })
}

/// The copies among `plans` not swapped yet: no checkpoint, or one not done whose shadow is
/// still there (a shadow gone means the rename ran and only the finish is left).
pub(crate) async fn still_to_swap(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[TablePlan],
) -> Result<Vec<TablePlan>> {
    let mut out = Vec::new();
    for p in plans {
        if !crate::engine::copy::cutover::swapped::swapped(conn, &p.schema, job, &p.table).await? {
            out.push(p.clone());
        }
    }
    Ok(out)
}

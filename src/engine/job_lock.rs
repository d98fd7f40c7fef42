//! The job's lock: a server user lock a run of the job holds for its whole life (on a
//! connection of its own), and which the cut-over's guard takes before it settles what a
//! killed run left. So a guard never settles under a run that has begun meanwhile, and two
//! runs of one job never write at once. The server releases it with the session that holds
//! it: a run that dies frees it by itself.

use crate::bookkeeping::checkpoint::fingerprint;
use crate::db::connect::ConnectionConfig;
use crate::engine::error::EngineError;
use anyhow::{Context, Result};
use sqlx::MySqlConnection;

/// Seconds a command that writes waits for the job's lock: a cut-over's guard settling a
/// killed run holds it about a second.
const HOLD_WAIT_S: u32 = 30;

/// The job's lock, on a connection of its own for the caller to keep as long as it writes:
/// one run (or revert) of a job writes at a time, and a killed run's cut-over guard never
/// settles under it. Refused with [`EngineError::JobBusy`] when another session keeps it.
pub async fn hold(cfg: &ConnectionConfig, schema: &str, job: &str) -> Result<MySqlConnection> {
    let mut conn = cfg.connect_one().await?;
    if !take(&mut conn, schema, job, HOLD_WAIT_S).await? {
        return Err(EngineError::JobBusy {
            schema: schema.to_string(),
            job: job.to_string(),
        }
        .into());
    }
    Ok(conn)
}

/// The lock's name for `job` on `schema`: at most 64 characters, as the server requires.
pub fn name(schema: &str, job: &str) -> String {
    // A separator no schema name holds keeps ("a", "bc") and ("ab", "c") apart.
    let key = format!("{schema}\u{0}{job}");
    format!("myrecode_job_{}", fingerprint(&key))
}

/// Takes the job's lock on `conn`, waiting up to `wait_s` seconds; `false` when another
/// session still holds it then.
pub async fn take(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    wait_s: u32,
) -> Result<bool> {
    let got: Option<i64> = sqlx::query_scalar("SELECT GET_LOCK(?, ?)")
        .bind(name(schema, job))
        .bind(wait_s)
        .fetch_one(&mut *conn)
        .await
        .context("taking the job's lock")?;
    Ok(got == Some(1))
}

/// Gives the job's lock back (it also goes with the session).
pub async fn release(conn: &mut MySqlConnection, schema: &str, job: &str) -> Result<()> {
    sqlx::query("DO RELEASE_LOCK(?)")
        .bind(name(schema, job))
        .execute(&mut *conn)
        .await
        .context("releasing the job's lock")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_server_and_keep_jobs_apart() {
        let long = "ш".repeat(64);
        let n = name(&long, &long);
        assert!(n.chars().count() <= 64, "{n}");
        assert_ne!(name("a", "bc"), name("ab", "c"));
        assert_eq!(name("shop", "job1"), name("shop", "job1"));
        assert_ne!(name("shop", "job1"), name("shop", "job2"));
    }
}

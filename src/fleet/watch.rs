//! One fleet job's state read from its server by the single job's reader
//! ([`crate::status::read`]): what `fleet status` shows and what tells `fleet run` a job is
//! finished. Reads only.

use super::jobs::JobRef;
use crate::db::connect::ConnectionConfig;
use crate::status::JobStatus;
use anyhow::Result;

/// Where `job` stands, read on `cfg`'s server as `myrecode status JOB` reads it.
pub async fn read(cfg: &ConnectionConfig, job: &JobRef) -> Result<JobStatus> {
    let loaded = crate::engine::runner::load_job(&job.path)?;
    let mut conn = cfg
        .with_database(Some(&loaded.schema))
        .connect_one()
        .await?;
    crate::status::read(&mut conn, &loaded, &job.job_id).await
}

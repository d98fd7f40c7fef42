//! The checks of a job's settings that need no server (its version, batch size, throttle, a
//! password in a replica URL): made when the job is loaded, so every command that reads a
//! job refuses them alike. Pure.

use super::finding::Finding;
use super::model::{Job, JOB_VERSION};

/// Checks that need no server: version and batch/throttle settings. Run when the job is
/// loaded ([`super::load::load_str`]), so `plan --check`, the rehearsal and `run` refuse alike.
pub(crate) fn check_settings(job: &Job) -> Vec<Finding> {
    let mut out = Vec::new();
    if job.version != JOB_VERSION {
        out.push(Finding::new(
            "version",
            format!("job layout version {} is not supported", job.version),
            format!("write `version: {JOB_VERSION}` (the only layout so far)"),
        ));
    }
    if crate::inventory::read::is_system_schema(&job.schema) {
        out.push(Finding::new(
            "schema",
            format!(
                "'{}' is a system schema of the server, which myrecode never recodes",
                job.schema
            ),
            "name the application's schema (the one its tables are in)",
        ));
    }
    if job.defaults.batch_size == 0 {
        out.push(Finding::new(
            "defaults.batch_size",
            "batch_size 0 would never make progress",
            "use a positive number of rows, e.g. 1000",
        ));
    }
    if job.defaults.max_threads_running == 0 {
        out.push(Finding::new(
            "defaults.max_threads_running",
            "max_threads_running 0 would throttle forever (our own connection is running)",
            "use a positive number, e.g. 25",
        ));
    }
    for (i, r) in job.defaults.replicas.iter().enumerate() {
        if let Ok(u) = url::Url::parse(r) {
            if u.password().is_some() {
                out.push(Finding::new(
                    format!("defaults.replicas[{i}]"),
                    "this replica URL holds a password, and job files get read, copied and committed",
                    "remove the password from the URL; it comes from MYSQL_PWD or the primary's URL",
                ));
            }
        }
    }
    for (i, t) in job.tables.iter().enumerate() {
        if t.batch_size == Some(0) {
            out.push(Finding::new(
                format!("tables[{i}].batch_size"),
                "batch_size 0 would never make progress",
                "use a positive number of rows, or remove it to use defaults.batch_size",
            ));
        }
    }
    out
}

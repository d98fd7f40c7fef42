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
    out.extend(clients(job));
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

/// The `clients:` section: a legacy charset the bridge can give a session, plain user names,
/// and one cut-over (a session talks one charset, so the bridge turns on at one instant).
fn clients(job: &Job) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(c) = &job.clients else {
        return out;
    };
    if crate::clients::model::bridge_charset(&c.legacy).is_none() {
        out.push(Finding::new(
            "clients.legacy",
            format!("'{}' is not a charset the bridge can give a session", c.legacy),
            "write the legacy charset the application's bytes are in: cp1251, koi8r, koi8u or cp866",
        ));
    }
    for (i, u) in c.users.iter().enumerate() {
        if u.is_empty() || u.contains('@') || u.chars().any(char::is_control) {
            out.push(Finding::new(
                format!("clients.users[{i}]"),
                format!("'{u}' is not a user name"),
                "write the application's user names alone, without a host (shop, not shop@10.0.0.5)",
            ));
        }
    }
    if c.bridge && !job.cutover_groups.is_empty() {
        out.push(Finding::new(
            "clients.bridge",
            "the bridge turns a session's charset at one instant, and this job names cut-over groups",
            "remove cutover_groups (one cut-over), or set clients: bridge: false and switch each group's connections yourself",
        ));
    }
    out
}

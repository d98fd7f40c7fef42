//! The fleet's jobs on disk: `JOBS/<server>/<schema>.yaml`, one per schema, each exactly the
//! job `plan` writes; its log beside it; and the one `myrecode run` command line that runs
//! it, which `fleet plan` prints and `fleet run` spawns. Pure.
//!
//! A job names no server (the same job can be rehearsed on a dump): the folder it sits in
//! names the fleet file's server, and the fleet file says how to reach it. So the
//! connection is written once, in the fleet file, and a job moved to another fleet runs
//! against that fleet's server of the same name.

use super::file::Server;
use super::store::file_stem;
use std::path::{Path, PathBuf};

/// One job of the fleet, found under `--jobs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRef {
    /// The fleet file's server it runs on (its folder under `--jobs`).
    pub server: String,
    /// The schema it recodes (the job's `schema:`).
    pub schema: String,
    /// The job file.
    pub path: PathBuf,
    /// The name its run keeps its checkpoints under (as `run` names it: the file's stem).
    pub job_id: String,
}

/// `JOBS/<server>/<schema>.yaml`.
pub fn job_path(jobs: &Path, server: &str, schema: &str) -> PathBuf {
    jobs.join(server)
        .join(format!("{}.yaml", file_stem(schema)))
}

/// `JOBS/<server>/<schema>.log`: the job's run output, appended to by each fleet run.
pub fn log_path(job: &Path) -> PathBuf {
    job.with_extension("log")
}

/// `JOBS/fleet-plan.md` and `JOBS/fleet-plan.json`: what `fleet plan` wrote, and why not more.
pub fn plan_paths(jobs: &Path) -> (PathBuf, PathBuf) {
    (jobs.join("fleet-plan.md"), jobs.join("fleet-plan.json"))
}

/// The arguments of the single run of `job` on `server` (after the program's name): what a
/// DBA would type, and what `fleet run` spawns. Never a password: it comes from the option
/// file, `MYSQL_PWD` or, with `ask-pass`, from `fleet run`'s prompt through `MYSQL_PWD`.
pub fn run_args(server: &Server, job: &Path, execute: bool) -> Vec<String> {
    let mut a = vec!["run".to_string(), job.display().to_string()];
    if let Some(u) = &server.url {
        a.extend(["--url".to_string(), u.clone()]);
    }
    if let Some(f) = &server.defaults_file {
        a.extend(["--defaults-file".to_string(), f.display().to_string()]);
    }
    if execute {
        a.push("--execute".into());
    }
    a
}

/// The single run's command line as shown to a person (`--ask-pass` where the fleet file
/// asks for the password, since a person runs it from a terminal).
pub fn run_command(server: &Server, job: &Path) -> String {
    let mut a = run_args(server, job, true);
    if server.ask_pass {
        a.push("--ask-pass".into());
    }
    std::iter::once("myrecode".to_string())
        .chain(a.iter().map(|x| shell_word(x)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `w` quoted for a POSIX shell where it needs it.
fn shell_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@=%+,".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(ask: bool) -> Server {
        Server {
            name: "db1".into(),
            url: Some("mysql://dba@db1:3306?ssl-mode=REQUIRED".into()),
            defaults_file: Some(PathBuf::from("/etc/fleet/db 1.cnf")),
            ask_pass: ask,
            schemas: vec!["*".into()],
            concurrency: 1,
        }
    }

    #[test]
    fn the_job_sits_in_its_servers_folder_and_runs_as_a_single_run() {
        let p = job_path(Path::new("/j"), "db1", "shop.eu");
        assert_eq!(p, PathBuf::from("/j/db1/shop@002eeu.yaml"));
        assert_eq!(log_path(&p), PathBuf::from("/j/db1/shop@002eeu.log"));
        assert_eq!(
            run_args(&server(true), &p, true),
            vec![
                "run",
                "/j/db1/shop@002eeu.yaml",
                "--url",
                "mysql://dba@db1:3306?ssl-mode=REQUIRED",
                "--defaults-file",
                "/etc/fleet/db 1.cnf",
                "--execute"
            ]
        );
        assert_eq!(
            run_command(&server(true), &p),
            "myrecode run /j/db1/shop@002eeu.yaml --url 'mysql://dba@db1:3306?ssl-mode=REQUIRED' \
             --defaults-file '/etc/fleet/db 1.cnf' --execute --ask-pass"
        );
        assert!(!run_args(&server(false), &p, false).contains(&"--execute".to_string()));
    }
}

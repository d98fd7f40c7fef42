//! Which jobs run in which wave: the fleet file's `groups` in file order, then every server
//! in no group in one last wave (the only wave when the file names no group). Pure.

use super::file::Fleet;
use super::jobs::JobRef;
use serde::Serialize;

/// The name of the wave of servers in no group.
pub const UNGROUPED: &str = "ungrouped";

/// One wave: a name and its jobs (indexes into the job list), in job-list order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wave {
    /// The group's name, or [`UNGROUPED`].
    pub name: String,
    /// Its jobs.
    pub jobs: Vec<usize>,
}

/// The waves of `jobs`; waves without a job are left out.
pub fn waves(fleet: &Fleet, jobs: &[JobRef]) -> Vec<Wave> {
    let mut out: Vec<Wave> = fleet
        .groups
        .iter()
        .map(|(name, servers)| Wave {
            name: name.clone(),
            jobs: (0..jobs.len())
                .filter(|&i| servers.contains(&jobs[i].server))
                .collect(),
        })
        .collect();
    let grouped = |s: &str| fleet.groups.iter().any(|(_, m)| m.iter().any(|x| x == s));
    out.push(Wave {
        name: UNGROUPED.to_string(),
        jobs: (0..jobs.len())
            .filter(|&i| !grouped(&jobs[i].server))
            .collect(),
    });
    out.retain(|w| !w.jobs.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn job(server: &str, schema: &str) -> JobRef {
        JobRef {
            server: server.into(),
            schema: schema.into(),
            path: format!("/j/{server}/{schema}.yaml").into(),
            job_id: schema.into(),
        }
    }

    #[test]
    fn groups_in_file_order_then_the_rest_in_one_wave() {
        let fleet = super::super::file::parse(
            "servers:\n\
             - {name: a, url: 'mysql://u@a', schemas: ['*']}\n\
             - {name: b, url: 'mysql://u@b', schemas: ['*']}\n\
             - {name: c, url: 'mysql://u@c', schemas: ['*']}\n\
             - {name: d, url: 'mysql://u@d', schemas: ['*']}\n\
             groups:\n  zz-canary: [c]\n  main: [a, d]\n",
            Path::new("."),
        )
        .unwrap();
        let jobs = vec![
            job("a", "s1"),
            job("a", "s2"),
            job("b", "s1"),
            job("c", "s1"),
            job("d", "s1"),
        ];
        let w = waves(&fleet, &jobs);
        let names: Vec<(&str, &[usize])> =
            w.iter().map(|w| (w.name.as_str(), &w.jobs[..])).collect();
        assert_eq!(
            names,
            vec![
                ("zz-canary", &[3][..]),
                ("main", &[0, 1, 4][..]),
                (UNGROUPED, &[2][..])
            ]
        );
        // No groups: one wave; a group whose servers have no job: no wave.
        let mut flat = fleet.clone();
        flat.groups.clear();
        assert_eq!(waves(&flat, &jobs).len(), 1);
        assert_eq!(waves(&fleet, &jobs[..3]).len(), 2);
    }
}

//! Cut-over groups: which copied tables are swapped together, and in what order.
//!
//! By default a job's copied tables are swapped at one instant, behind one lock over all of
//! them. `cutover_groups:` splits them into groups, each swapped at an instant of its own,
//! one after another in the order listed; the application switches its connection charset
//! for a group's tables at that group's instant. Pure: the job's groups checked as written
//! ([`validate`], findings with the fix, run by the loader), and the order the engine,
//! `status` and `cutover` follow ([`ordered`]).

use super::finding::Finding;
use super::locate::Locator;
use super::model::{Job, Strategy};
use super::suggest::did_you_mean;

/// Longest group name: it is typed after `--group` and kept in the control row.
pub const MAX_NAME: usize = 64;

/// One cut-over: a name (`None`: the job names no groups, and this is the whole job) and its
/// copied tables, in job order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group<'a> {
    /// The group's name as the job writes it; `None` for the job's one implicit group.
    pub name: Option<&'a str>,
    /// Its copied tables, in the order of the job's `tables:`.
    pub tables: Vec<&'a str>,
}

impl Group<'_> {
    /// How a message names it: `group 'accounts'`, or `the job` for the implicit one.
    pub fn shown(&self) -> String {
        match self.name {
            Some(n) => format!("group '{n}'"),
            None => "the job".to_string(),
        }
    }
}

/// The job's cut-overs in the order they happen: its groups as listed, or one group of every
/// copied table when it names none (none at all when nothing is copied).
pub fn ordered(job: &Job) -> Vec<Group<'_>> {
    let copies = || job.tables.iter().filter(|t| t.strategy == Strategy::Copy);
    if job.cutover_groups.is_empty() {
        let tables: Vec<&str> = copies().map(|t| t.name.as_str()).collect();
        if tables.is_empty() {
            return Vec::new();
        }
        return vec![Group { name: None, tables }];
    }
    job.cutover_groups
        .iter()
        .map(|g| Group {
            name: Some(g.name.as_str()),
            tables: copies()
                .filter(|t| g.tables.contains(&t.name))
                .map(|t| t.name.as_str())
                .collect(),
        })
        .collect()
}

/// The name of the group that lists `table`, if the job names groups and one lists it.
pub fn group_of<'a>(job: &'a Job, table: &str) -> Option<&'a str> {
    job.cutover_groups
        .iter()
        .find(|g| g.tables.iter().any(|t| t == table))
        .map(|g| g.name.as_str())
}

/// Whether `name` may name a group: letters, digits, `_`, `-` and `.`, at most [`MAX_NAME`]
/// characters (it is typed on a command line and shown in every message).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.".contains(c))
}

/// Every problem with the job's `cutover_groups:` as written (no server needed): a bad or
/// repeated name, a group with no table, a table that is not a copied table of the job or is
/// in two groups, and (once groups are named) a copied table in none.
pub fn validate(job: &Job) -> Vec<Finding> {
    let mut out = Vec::new();
    if job.cutover_groups.is_empty() {
        return out;
    }
    let job_tables: Vec<&str> = job.tables.iter().map(|t| t.name.as_str()).collect();
    // (table, group index) for each table already placed in a group.
    let mut placed: Vec<(&str, usize)> = Vec::new();
    for (i, g) in job.cutover_groups.iter().enumerate() {
        let path = format!("cutover_groups[{i}]");
        if !valid_name(&g.name) {
            out.push(Finding::new(
                format!("{path}.name"),
                format!("group name '{}' cannot be used", g.name),
                format!(
                    "use letters, digits, '_', '-' or '.', at most {MAX_NAME} characters (it is typed after `myrecode cutover --group`)"
                ),
            ));
        } else if let Some(first) = job.cutover_groups[..i]
            .iter()
            .position(|o| o.name == g.name)
        {
            out.push(Finding::new(
                format!("{path}.name"),
                format!(
                    "group name '{}' is used twice (first by cutover_groups[{first}])",
                    g.name
                ),
                "give each group a name of its own",
            ));
        }
        if g.tables.is_empty() {
            out.push(Finding::new(
                format!("{path}.tables"),
                format!("group '{}' names no table", g.name),
                "list the copied tables it swaps (`tables: [orders, order_lines]`), or remove the group",
            ));
        }
        for (j, table) in g.tables.iter().enumerate() {
            let tpath = format!("{path}.tables[{j}]");
            let Some(tj) = job.tables.iter().find(|t| &t.name == table) else {
                out.push(Finding::new(
                    tpath,
                    format!(
                        "group '{}' names table '{table}', which is not in the job's tables",
                        g.name
                    ),
                    format!(
                        "name a copied table of the job{}, or add '{table}' to `tables:` with `strategy: copy`",
                        did_you_mean(table, &job_tables)
                    ),
                ));
                continue;
            };
            if tj.strategy != Strategy::Copy {
                out.push(Finding::new(
                    tpath,
                    format!(
                        "group '{}' names table '{table}', which the job recodes in place: only copied tables are swapped at a cut-over",
                        g.name
                    ),
                    format!("remove '{table}' from the group (in place needs no cut-over)"),
                ));
                continue;
            }
            match placed.iter().find(|(t, _)| t == table) {
                Some((_, k)) if *k == i => out.push(Finding::new(
                    tpath,
                    format!("table '{table}' is listed twice in group '{}'", g.name),
                    "keep one entry",
                )),
                Some((_, k)) => out.push(Finding::new(
                    tpath,
                    format!(
                        "table '{table}' is in two groups ('{}' and '{}'): a table is swapped once",
                        job.cutover_groups[*k].name, g.name
                    ),
                    "keep it in the group whose instant it belongs to",
                )),
                None => placed.push((table, i)),
            }
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for g in &job.cutover_groups {
        if !names.contains(&g.name.as_str()) {
            names.push(&g.name);
        }
    }
    for (k, t) in job.tables.iter().enumerate() {
        if t.strategy == Strategy::Copy && !placed.iter().any(|(p, _)| *p == t.name) {
            out.push(Finding::new(
                format!("tables[{k}].name"),
                format!(
                    "copied table '{}' is in no cut-over group: once `cutover_groups:` is written, every copied table is swapped with its group",
                    t.name
                ),
                format!(
                    "add '{}' to the `tables:` of one of the groups ({}), or to a group of its own",
                    t.name,
                    names.join(", ")
                ),
            ));
        }
    }
    out
}

/// Which group `myrecode cutover` allows: `asked` (its `--group`), checked against the
/// job's groups in order and which are `swapped` already (one flag per group of
/// [`ordered`]); without `--group`, the only group left. `None`: the job names no groups
/// (the one cut-over of every copy). `command` is how the message shows the command
/// (`myrecode cutover job.yaml`). The error is the sentence to print, with its fix.
pub fn choose_group<'a>(
    order: &[Group<'a>],
    swapped: &[bool],
    asked: Option<&str>,
    command: &str,
) -> Result<Option<&'a str>, String> {
    let named: Vec<&'a str> = order.iter().filter_map(|g| g.name).collect();
    if named.is_empty() {
        return match asked {
            Some(g) => Err(format!(
                "the job names no cut-over groups, so there is no group '{g}': every copied table is swapped at one instant. Fix: run `{command}` without --group"
            )),
            None => Ok(None),
        };
    }
    let left: Vec<&'a str> = named
        .iter()
        .zip(swapped)
        .filter(|(_, s)| !**s)
        .map(|(n, _)| *n)
        .collect();
    let Some(next) = left.first().copied() else {
        return Err(format!(
            "every cut-over group of the job is swapped already ({}). Fix: nothing to allow; `myrecode status` shows the job, `myrecode cleanup` drops the originals kept",
            named.join(", ")
        ));
    };
    let Some(asked) = asked else {
        return match left.as_slice() {
            [one] => Ok(Some(*one)),
            _ => Err(format!(
                "the job has {} cut-over groups still to swap ({}), each at its own instant: say which one this is. Fix: `{command} --group {next}` (they are swapped in this order)",
                left.len(),
                left.join(", then ")
            )),
        };
    };
    if !named.contains(&asked) {
        return Err(format!(
            "the job has no cut-over group '{asked}'. Fix: name one of its groups: {}{}",
            named.join(", "),
            did_you_mean(asked, &named)
        ));
    }
    if !left.contains(&asked) {
        return Err(format!(
            "group '{asked}' is swapped already. Fix: the next group to swap is '{next}': `{command} --group {next}`"
        ));
    }
    if asked != next {
        return Err(format!(
            "group '{asked}' is swapped after group '{next}', which is not swapped yet: groups are swapped in the job's order. Fix: `{command} --group {next}` first, or reorder `cutover_groups:` in the job"
        ));
    }
    Ok(Some(next))
}

/// The finest grouping of `tables` that keeps every `links` pair in one group: the connected
/// components, each in `tables` order, in the order of their first table.
pub fn components<'a>(tables: &[&'a str], links: &[(&str, &str)]) -> Vec<Vec<&'a str>> {
    let mut root: Vec<usize> = (0..tables.len()).collect();
    fn find(root: &mut [usize], i: usize) -> usize {
        let mut r = i;
        while root[r] != r {
            r = root[r];
        }
        root[i] = r;
        r
    }
    for (a, b) in links {
        let (Some(i), Some(j)) = (
            tables.iter().position(|t| t == a),
            tables.iter().position(|t| t == b),
        ) else {
            continue;
        };
        let (ri, rj) = (find(&mut root, i), find(&mut root, j));
        // The earlier table is the root, so each component keeps its first table's place.
        root[ri.max(rj)] = ri.min(rj);
    }
    let mut out: Vec<(usize, Vec<&'a str>)> = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        let r = find(&mut root, i);
        match out.iter_mut().find(|(k, _)| *k == r) {
            Some((_, v)) => v.push(t),
            None => out.push((r, vec![t])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// The line of `path`, else of the nearest enclosing path that has one: an item of a flow
/// list (`tables: [a, b]`) is found at its key's line.
pub fn line_of(locator: &Locator, path: &str) -> Option<usize> {
    let mut p = path;
    loop {
        if let Some(l) = locator.line(p) {
            return Some(l);
        }
        let cut = p.rfind(['.', '['])?;
        p = &p[..cut];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::load::load_str;

    const TABLES: &str = concat!(
        "version: 1\nschema: shop\ndefaults:\n  cutover: manual\ntables:\n",
        "  - name: users\n    strategy: copy\n    columns:\n",
        "      - {name: login, source: auto, target: TEXT CHARACTER SET utf8mb4}\n",
        "  - name: posts\n    strategy: copy\n    columns:\n",
        "      - {name: body, source: auto, target: TEXT CHARACTER SET utf8mb4}\n",
        "  - name: notes\n    strategy: in-place\n    columns:\n",
        "      - {name: body, source: auto, target: TEXT CHARACTER SET utf8mb4}\n",
        "  - name: tags\n    strategy: copy\n    columns:\n",
        "      - {name: label, source: auto, target: TEXT CHARACTER SET utf8mb4}\n",
    );

    /// The loader's findings for the job above with `groups` appended, rendered.
    fn errs(groups: &str) -> Vec<String> {
        match load_str(&format!("{TABLES}{groups}")) {
            Ok(_) => Vec::new(),
            Err(f) => f.iter().map(|f| f.render("job.yaml")).collect(),
        }
    }

    #[test]
    fn without_groups_the_whole_job_is_one_cut_over() {
        let job = load_str(TABLES).unwrap().job;
        let g = ordered(&job);
        assert_eq!(
            g,
            vec![Group {
                name: None,
                tables: vec!["users", "posts", "tags"]
            }]
        );
        assert_eq!(g[0].shown(), "the job");
        assert_eq!(group_of(&job, "users"), None);
        assert!(validate(&job).is_empty());
    }

    #[test]
    fn groups_come_in_their_listed_order_with_tables_in_job_order() {
        let job = load_str(&format!(
            "{TABLES}cutover_groups:\n  - name: forum\n    tables: [tags, posts]\n  - name: accounts\n    tables:\n      - users\n"
        ))
        .unwrap()
        .job;
        let g = ordered(&job);
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].name, g[0].tables.clone()),
            (Some("forum"), vec!["posts", "tags"])
        );
        assert_eq!(
            (g[1].name, g[1].tables.clone()),
            (Some("accounts"), vec!["users"])
        );
        assert_eq!(g[1].shown(), "group 'accounts'");
        assert_eq!(group_of(&job, "tags"), Some("forum"));
        assert_eq!(group_of(&job, "notes"), None);
    }

    #[test]
    fn every_mistake_in_the_groups_is_named_with_its_fix() {
        let e = errs(
            "cutover_groups:\n  - name: forum\n    tables: [posts, post]\n  - name: forum\n    tables: [notes, posts]\n  - name: 'a b'\n    tables: []\n",
        );
        assert_eq!(
            e,
            vec![
                "job.yaml:6: tables[0].name: copied table 'users' is in no cut-over group: once `cutover_groups:` is written, every copied table is swapped with its group. Fix: add 'users' to the `tables:` of one of the groups (forum, a b), or to a group of its own",
                "job.yaml:18: tables[3].name: copied table 'tags' is in no cut-over group: once `cutover_groups:` is written, every copied table is swapped with its group. Fix: add 'tags' to the `tables:` of one of the groups (forum, a b), or to a group of its own",
                "job.yaml:24: cutover_groups[0].tables[1]: group 'forum' names table 'post', which is not in the job's tables. Fix: name a copied table of the job (did you mean 'posts'?), or add 'post' to `tables:` with `strategy: copy`",
                "job.yaml:25: cutover_groups[1].name: group name 'forum' is used twice (first by cutover_groups[0]). Fix: give each group a name of its own",
                "job.yaml:26: cutover_groups[1].tables[0]: group 'forum' names table 'notes', which the job recodes in place: only copied tables are swapped at a cut-over. Fix: remove 'notes' from the group (in place needs no cut-over)",
                "job.yaml:26: cutover_groups[1].tables[1]: table 'posts' is in two groups ('forum' and 'forum'): a table is swapped once. Fix: keep it in the group whose instant it belongs to",
                "job.yaml:27: cutover_groups[2].name: group name 'a b' cannot be used. Fix: use letters, digits, '_', '-' or '.', at most 64 characters (it is typed after `myrecode cutover --group`)",
                "job.yaml:28: cutover_groups[2].tables: group 'a b' names no table. Fix: list the copied tables it swaps (`tables: [orders, order_lines]`), or remove the group",
            ]
        );
    }

    #[test]
    fn a_table_listed_twice_and_block_lists_find_their_own_line() {
        let e = errs(
            "cutover_groups:\n  - name: a\n    tables:\n      - users\n      - posts\n      - users\n  - name: b\n    tables: [tags]\n",
        );
        assert_eq!(
            e,
            vec!["job.yaml:27: cutover_groups[0].tables[2]: table 'users' is listed twice in group 'a'. Fix: keep one entry"]
        );
        assert!(
            errs("cutover_groups:\n  - name: a\n    tables: [users, posts, tags]\n").is_empty()
        );
        // An empty list is no groups at all: the whole job is one.
        assert!(errs("cutover_groups: []\n").is_empty());
    }

    #[test]
    fn cutover_names_the_next_group_or_says_why_not() {
        let job = load_str(&format!(
            "{TABLES}cutover_groups:\n  - name: accounts\n    tables: [users]\n  - name: forum\n    tables: [posts, tags]\n"
        ))
        .unwrap()
        .job;
        let order = ordered(&job);
        let cmd = "myrecode cutover job.yaml";
        let choose =
            |swapped: &[bool], asked: Option<&str>| choose_group(&order, swapped, asked, cmd);
        assert_eq!(
            choose(&[false, false], Some("accounts")),
            Ok(Some("accounts"))
        );
        assert_eq!(
            choose(&[true, false], None),
            Ok(Some("forum")),
            "the only group left"
        );
        assert_eq!(
            choose(&[false, false], None),
            Err("the job has 2 cut-over groups still to swap (accounts, then forum), each at its own instant: say which one this is. \
                 Fix: `myrecode cutover job.yaml --group accounts` (they are swapped in this order)".into())
        );
        assert_eq!(
            choose(&[false, false], Some("forum")),
            Err("group 'forum' is swapped after group 'accounts', which is not swapped yet: groups are swapped in the job's order. \
                 Fix: `myrecode cutover job.yaml --group accounts` first, or reorder `cutover_groups:` in the job".into())
        );
        assert_eq!(
            choose(&[true, false], Some("accounts")),
            Err("group 'accounts' is swapped already. Fix: the next group to swap is 'forum': `myrecode cutover job.yaml --group forum`".into())
        );
        assert_eq!(
            choose(&[false, false], Some("forums")),
            Err("the job has no cut-over group 'forums'. Fix: name one of its groups: accounts, forum (did you mean 'forum'?)".into())
        );
        assert!(choose(&[true, true], None)
            .unwrap_err()
            .starts_with("every cut-over group of the job is swapped already (accounts, forum)"));
        // A job without groups: one cut-over, no name to give.
        let plain = load_str(TABLES).unwrap().job;
        let one = ordered(&plain);
        assert_eq!(choose_group(&one, &[false], None, cmd), Ok(None));
        assert!(choose_group(&one, &[false], Some("x"), cmd)
            .unwrap_err()
            .starts_with("the job names no cut-over groups, so there is no group 'x'"));
    }

    #[test]
    fn components_keep_linked_tables_together_in_table_order() {
        let tables = ["a", "b", "c", "d", "e"];
        assert_eq!(
            components(&tables, &[("d", "b"), ("e", "d"), ("x", "a")]),
            vec![vec!["a"], vec!["b", "d", "e"], vec!["c"]]
        );
        assert_eq!(components(&tables, &[("a", "e"), ("c", "e")]).len(), 3);
        assert_eq!(components(&tables, &[]).len(), 5);
    }

    #[test]
    fn unknown_keys_in_a_group_are_typos_with_suggestions() {
        let e = errs("cutover_groups:\n  - name: a\n    table: [users]\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("job.yaml:24: cutover_groups[0].table: unknown key 'table'. Fix: did you mean 'tables'?"),
            "{e:?}"
        );
    }
}

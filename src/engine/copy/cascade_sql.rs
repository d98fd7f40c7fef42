//! Which triggers log the rows a parent's cascading actions change in the copied children,
//! and how they follow the cut-over groups. Pure: the plans here, the statements in
//! [`super::foreign_sql::cascade_trigger_ddl`], their execution in [`super::cascade`].
//!
//! A cascade (`ON UPDATE CASCADE`, `ON DELETE CASCADE`, `SET NULL`, `SET DEFAULT`) fires no
//! trigger of the child, so the child's change-log triggers never see it: a trigger on the
//! parent logs, before the parent's row changes, the keys of the child rows about to change.
//! There is one such pair of triggers (`BEFORE UPDATE`, `BEFORE DELETE`) per parent and child
//! that is still to be swapped, named after the table it is on and the child
//! (`<parent>><child>_myrecode_bup`), so that each child's logging can end without touching
//! another's:
//!
//! * a child swapped by a group's cut-over stops being logged at that instant: under the
//!   group's lock, the triggers logging it on parents outside the group are dropped (after
//!   the rename nothing but the kept original's own triggers may write its drained log);
//! * a parent swapped by a group's cut-over keeps logging the children still to be swapped:
//!   under the lock its triggers for them are created on its shadow (named after the shadow),
//!   which the rename carries to the live name; those on the original go with it to
//!   `<parent>_myrecode_old`, where nothing fires them;
//! * at a run's start, and again before a cut-over, a missing pair is created; where none
//!   existed while the child's copy had begun (a cut-over killed between the drop and its
//!   rename), cascades may have gone unlogged, and the child is checked again.

use super::foreign_sql::{cascade_trigger_ddl, cascades, Cascaded, ForeignKey};
use super::names::{cascade_names, names};
use crate::db::keyset::KeyColumn;

/// Every trigger of schema `?`: name and the table it is on.
pub const SCHEMA_TRIGGERS_SQL: &str = "SELECT CAST(TRIGGER_NAME AS CHAR), CAST(EVENT_OBJECT_TABLE AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?";

/// The cascade-logging triggers of schema `?`, of every style: names ending in
/// `_myrecode_bup` or `_myrecode_bde`.
pub const CASCADE_TRIGGERS_SQL: &str =
    "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? \
AND (TRIGGER_NAME LIKE '%\\_myrecode\\_bup' OR TRIGGER_NAME LIKE '%\\_myrecode\\_bde')";

/// A copied child still to be swapped, as its cascade logging needs it.
#[derive(Debug, Clone, Copy)]
pub struct Logged<'a> {
    /// The child table.
    pub table: &'a str,
    /// Its paging key (what its change log holds); never empty (a keyless child is rebuilt
    /// whole under its cut-over's lock, cascades included).
    pub key: &'a [KeyColumn],
}

/// A trigger of the schema: its name and the table it is on.
pub type Existing = (String, String);

/// One parent and one logged child, with the cascading constraints between them.
#[derive(Debug, Clone)]
pub struct Pair<'a> {
    /// The parent (in the job's schema).
    pub parent: &'a str,
    /// The child.
    pub child: Logged<'a>,
    /// The constraints from the child to the parent whose actions change the child's rows.
    pub fks: Vec<&'a ForeignKey>,
}

/// Every parent and logged child joined by a cascading constraint, in catalog order.
pub fn pairs<'a>(fks: &'a [ForeignKey], schema: &str, logged: &[Logged<'a>]) -> Vec<Pair<'a>> {
    let mut out: Vec<Pair<'a>> = Vec::new();
    for fk in fks {
        if fk.child_schema != schema || fk.parent_schema != schema {
            continue;
        }
        if !(cascades(&fk.on_update) || cascades(&fk.on_delete)) {
            continue;
        }
        let Some(child) = logged.iter().find(|l| l.table == fk.child) else {
            continue;
        };
        match out
            .iter_mut()
            .find(|p| p.parent == fk.parent && p.child.table == child.table)
        {
            Some(p) => p.fks.push(fk),
            None => out.push(Pair {
                parent: &fk.parent,
                child: *child,
                fks: vec![fk],
            }),
        }
    }
    out
}

/// The `BEFORE UPDATE` and `BEFORE DELETE` triggers of `pair`, created on table `on` (the
/// parent or its shadow) and named after it: `(name, DDL)` each, `None` for an event none of
/// its constraints cascades on.
pub fn pair_ddl(schema: &str, on: &str, pair: &Pair<'_>) -> [Option<(String, String)>; 2] {
    let log = names(pair.child.table).log;
    let children: Vec<Cascaded<'_>> = pair
        .fks
        .iter()
        .map(|fk| Cascaded {
            fk,
            log: &log,
            key: pair.child.key,
        })
        .collect();
    let n = cascade_names(on, pair.child.table);
    let [u, d] = cascade_trigger_ddl(schema, on, &n, &children);
    let [nu, nd] = n;
    [u.map(|ddl| (nu, ddl)), d.map(|ddl| (nd, ddl))]
}

/// Whether trigger `name` is on `table` among `existing`.
fn on(existing: &[Existing], name: &str, table: &str) -> bool {
    existing.iter().any(|(n, t)| n == name && t == table)
}

/// What a run's start (and a cut-over's retry) does so that every logged child's cascades are
/// logged: the triggers to create on the live parents, the children that went without (to be
/// checked again, if their copy had begun), and the triggers of an older myrecode (one per
/// parent, for every child) to drop once the pairs are in place.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ensure {
    /// `(parent, name, DDL)` of each missing trigger.
    pub create: Vec<(String, String, String)>,
    /// Children none of whose parents' triggers (new or old style) logged an event.
    pub unlogged: Vec<String>,
    /// `(parent, name)` of each per-parent trigger an older myrecode made.
    pub legacy: Vec<(String, String)>,
}

/// Plans [`Ensure`] for the `logged` children from the schema's constraints and `existing` triggers.
pub fn ensure(
    fks: &[ForeignKey],
    schema: &str,
    logged: &[Logged<'_>],
    existing: &[Existing],
) -> Ensure {
    let mut out = Ensure::default();
    for pair in pairs(fks, schema, logged) {
        let parent = pair.parent;
        let shadow_named = cascade_names(&names(parent).shadow, pair.child.table);
        let legacy = names(parent).cascade;
        for (i, made) in pair_ddl(schema, parent, &pair).into_iter().enumerate() {
            let Some((name, ddl)) = made else { continue };
            // After the parent's own cut-over, its pairs carry the shadow's names.
            if on(existing, &name, parent) || on(existing, &shadow_named[i], parent) {
                continue;
            }
            if !on(existing, &legacy[i], parent)
                && !out.unlogged.iter().any(|c| c == pair.child.table)
            {
                out.unlogged.push(pair.child.table.to_string());
            }
            out.create.push((parent.to_string(), name, ddl));
        }
        for name in legacy {
            let entry = (parent.to_string(), name);
            if on(existing, &entry.1, parent) && !out.legacy.contains(&entry) {
                out.legacy.push(entry);
            }
        }
    }
    out
}

/// What one group's cut-over does with the cascade-logging triggers, under its lock.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AtCutover {
    /// `(parent, name)`: the triggers logging this group's children on parents outside it,
    /// dropped (each parent is locked with the group).
    pub drop: Vec<(String, String)>,
    /// `(shadow, name, DDL)`: the triggers of this group's parents for children swapped later,
    /// created on the parents' shadows.
    pub create: Vec<(String, String, String)>,
}

impl AtCutover {
    /// The parents outside the group the cut-over must lock, once each.
    pub fn parents(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (p, _) in &self.drop {
            if !out.contains(&p.as_str()) {
                out.push(p);
            }
        }
        out
    }
}

/// Plans [`AtCutover`] for the cut-over of `group` (its tables), `logged` being every child
/// still to be swapped, this group's among them.
pub fn at_cutover(
    fks: &[ForeignKey],
    schema: &str,
    group: &[&str],
    logged: &[Logged<'_>],
    existing: &[Existing],
) -> AtCutover {
    let mut out = AtCutover::default();
    for pair in pairs(fks, schema, logged) {
        let (parent, child) = (pair.parent, pair.child.table);
        match (group.contains(&parent), group.contains(&child)) {
            (false, true) => {
                let shadow_named = cascade_names(&names(parent).shadow, child);
                for name in cascade_names(parent, child).into_iter().chain(shadow_named) {
                    if on(existing, &name, parent) {
                        out.drop.push((parent.to_string(), name));
                    }
                }
            }
            (true, false) => {
                let shadow = names(parent).shadow;
                for (name, ddl) in pair_ddl(schema, &shadow, &pair).into_iter().flatten() {
                    if !on(existing, &name, &shadow) {
                        out.create.push((shadow.clone(), name, ddl));
                    }
                }
            }
            // Both swapped at this instant (the parent's go with it), or neither.
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fk(name: &str, child: &str, parent: &str, upd: &str, del: &str) -> ForeignKey {
        ForeignKey {
            name: name.into(),
            child_schema: "s".into(),
            child: child.into(),
            columns: vec!["p_id".into()],
            parent_schema: "s".into(),
            parent: parent.into(),
            referenced: vec!["id".into()],
            on_update: upd.into(),
            on_delete: del.into(),
        }
    }

    fn existing(v: &[(&str, &str)]) -> Vec<Existing> {
        v.iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn pairs_join_each_parent_to_each_logged_child_it_cascades_into() {
        let fks = [
            fk("a", "c", "p", "CASCADE", "RESTRICT"),
            fk("b", "c", "p", "RESTRICT", "SET NULL"),
            fk("r", "d", "p", "RESTRICT", "NO ACTION"),
            fk("x", "k", "p", "CASCADE", "CASCADE"),
        ];
        let key = [KeyColumn::plain("id")];
        let logged = [
            Logged {
                table: "c",
                key: &key,
            },
            Logged {
                table: "d",
                key: &key,
            },
        ];
        let p = pairs(&fks, "s", &logged);
        assert_eq!(p.len(), 1, "RESTRICT changes no row; `k` is not logged");
        assert_eq!(
            (p[0].parent, p[0].child.table, p[0].fks.len()),
            ("p", "c", 2)
        );
        let [u, d] = pair_ddl("s", "p", &p[0]);
        let (un, u) = u.unwrap();
        assert_eq!(un, "p>c_myrecode_bup");
        assert!(u.starts_with("CREATE TRIGGER `s`.`p>c_myrecode_bup` BEFORE UPDATE ON `s`.`p` FOR EACH ROW BEGIN IF 0 THEN DO (SELECT 1 FROM `s`.`!myrecode_gate` LIMIT 1); END IF; IF NOT (OLD.`id` <=> NEW.`id`) THEN INSERT INTO `s`.`c_myrecode_log` (key_bytes) SELECT "), "{u}");
        let (dn, d) = d.unwrap();
        assert_eq!(dn, "p>c_myrecode_bde");
        assert!(
            d.contains("BEFORE DELETE ON `s`.`p`") && d.contains("WHERE `s`.`c`.`p_id` = OLD.`id`"),
            "{d}"
        );
        // On the shadow, named after it, still logging the live child.
        let [u, _] = pair_ddl("s", "p_myrecode_new", &p[0]);
        let (un, u) = u.unwrap();
        assert_eq!(un, "p_myrecode_new>c_myrecode_bup");
        assert!(
            u.contains("ON `s`.`p_myrecode_new`") && u.contains("FROM `s`.`c` WHERE"),
            "{u}"
        );
    }

    #[test]
    fn a_run_creates_what_is_missing_and_knows_which_children_went_unlogged() {
        let fks = [
            fk("a", "c", "p", "CASCADE", "CASCADE"),
            fk("b", "d", "p", "CASCADE", "RESTRICT"),
            fk("e", "c", "q", "RESTRICT", "CASCADE"),
        ];
        let key = [KeyColumn::plain("id")];
        let logged = [
            Logged {
                table: "c",
                key: &key,
            },
            Logged {
                table: "d",
                key: &key,
            },
        ];
        // A fresh start: everything missing, no copy begun yet (the caller asks its checkpoints).
        let e = ensure(&fks, "s", &logged, &[]);
        let made: Vec<(&str, &str)> = e
            .create
            .iter()
            .map(|(t, n, _)| (t.as_str(), n.as_str()))
            .collect();
        assert_eq!(
            made,
            [
                ("p", "p>c_myrecode_bup"),
                ("p", "p>c_myrecode_bde"),
                ("p", "p>d_myrecode_bup"),
                ("q", "q>c_myrecode_bde")
            ]
        );
        assert_eq!(e.unlogged, ["c", "d"]);
        // All in place, one of them under the shadow's name (the parent was swapped since).
        let all = existing(&[
            ("p>c_myrecode_bup", "p"),
            ("p_myrecode_new>c_myrecode_bde", "p"),
            ("p>d_myrecode_bup", "p"),
            ("q>c_myrecode_bde", "q"),
        ]);
        assert_eq!(ensure(&fks, "s", &logged, &all), Ensure::default());
        // A pair dropped by a cut-over that never renamed: recreated, its child checked again.
        let e = ensure(&fks, "s", &logged, &all[1..]);
        assert_eq!(e.create.len(), 1);
        assert_eq!(e.unlogged, ["c"]);
        // An older myrecode's per-parent triggers logged every child: no gap, and they go.
        let old = existing(&[
            ("p_myrecode_bup", "p"),
            ("p_myrecode_bde", "p"),
            ("q_myrecode_bde", "q"),
        ]);
        let e = ensure(&fks, "s", &logged, &old);
        assert_eq!(e.create.len(), 4);
        assert!(e.unlogged.is_empty(), "{e:?}");
        assert_eq!(
            e.legacy,
            [
                ("p".to_string(), "p_myrecode_bup".to_string()),
                ("p".to_string(), "p_myrecode_bde".to_string()),
                ("q".to_string(), "q_myrecode_bde".to_string())
            ]
        );
    }

    #[test]
    fn a_groups_cut_over_ends_its_childrens_logging_and_moves_its_parents_logging_to_the_shadows() {
        // p (group 1) is the parent of c (group 1) and of d (group 2); o, outside the job, is the
        // parent of c.
        let fks = [
            fk("pc", "c", "p", "CASCADE", "CASCADE"),
            fk("pd", "d", "p", "RESTRICT", "SET NULL"),
            fk("oc", "c", "o", "CASCADE", "RESTRICT"),
        ];
        let key = [KeyColumn::plain("id")];
        let logged = [
            Logged {
                table: "c",
                key: &key,
            },
            Logged {
                table: "d",
                key: &key,
            },
        ];
        let all = existing(&[
            ("p>c_myrecode_bup", "p"),
            ("p>c_myrecode_bde", "p"),
            ("p>d_myrecode_bde", "p"),
            ("o>c_myrecode_bup", "o"),
        ]);
        let g1 = at_cutover(&fks, "s", &["p", "c"], &logged, &all);
        assert_eq!(
            g1.drop,
            [("o".to_string(), "o>c_myrecode_bup".to_string())],
            "the outside parent stops logging c; p's go to p_myrecode_old with it"
        );
        assert_eq!(g1.parents(), ["o"]);
        let made: Vec<(&str, &str)> = g1
            .create
            .iter()
            .map(|(t, n, _)| (t.as_str(), n.as_str()))
            .collect();
        assert_eq!(made, [("p_myrecode_new", "p_myrecode_new>d_myrecode_bde")]);
        assert!(g1.create[0]
            .2
            .contains("BEFORE DELETE ON `s`.`p_myrecode_new`"));
        // Left on the shadow by a killed attempt: not created twice.
        let mut with = all.clone();
        with.push((
            "p_myrecode_new>d_myrecode_bde".into(),
            "p_myrecode_new".into(),
        ));
        assert!(at_cutover(&fks, "s", &["p", "c"], &logged, &with)
            .create
            .is_empty());
        // Group 2 later: p (swapped, its pair under the shadow's name) stops logging d.
        let later = existing(&[("p_myrecode_new>d_myrecode_bde", "p")]);
        let g2 = at_cutover(&fks, "s", &["d"], &logged[1..], &later);
        assert_eq!(
            g2.drop,
            [("p".to_string(), "p_myrecode_new>d_myrecode_bde".to_string())]
        );
        assert!(g2.create.is_empty());
    }
}

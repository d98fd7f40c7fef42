use super::*;
use crate::bookkeeping::names::names;
use crate::engine::copy::cutover::carried::cascade::sql::tests::{fk, id_key, logs, targets};

#[test]
fn a_stale_trigger_is_replaced_under_the_other_name_before_it_is_dropped() {
    let names = ["p_myrecode_bde".to_string(), "p_myrecode_bde2".to_string()];
    let have = |list: &[(&str, &str)]| -> Vec<Existing> {
        list.iter()
            .map(|(n, b)| Existing {
                name: n.to_string(),
                body: b.to_string(),
            })
            .collect()
    };
    let create = |name: &str| {
        format!("CREATE TRIGGER `s`.`{name}` BEFORE DELETE ON `s`.`p` FOR EACH ROW BEGIN new END")
    };
    let drop = |name: &str| format!("DROP TRIGGER IF EXISTS `s`.`{name}`");
    let want = Some("BEGIN new END");
    let go =
        |h: &[Existing], w: Option<&str>| reconcile("s", "p", Event::Delete, &names, w, h, &[]);
    // None yet: created.
    assert_eq!(go(&[], want), [create("p_myrecode_bde")]);
    // Current: nothing to do (the catalog may keep surrounding blanks).
    assert!(go(&have(&[("p_myrecode_bde", " BEGIN new END\n")]), want).is_empty());
    // Stale: the new one first, under the other name, then the stale one dropped.
    assert_eq!(
        go(&have(&[("p_myrecode_bde", "BEGIN old END")]), want),
        [create("p_myrecode_bde2"), drop("p_myrecode_bde")]
    );
    assert_eq!(
        go(&have(&[("p_myrecode_bde2", "BEGIN old END")]), want),
        [create("p_myrecode_bde"), drop("p_myrecode_bde2")]
    );
    // Killed between the two: the current one stays, the stale one goes.
    assert_eq!(
        go(
            &have(&[
                ("p_myrecode_bde", "BEGIN old END"),
                ("p_myrecode_bde2", "BEGIN new END")
            ]),
            want
        ),
        [drop("p_myrecode_bde")]
    );
    // Both stale: one dropped while the other still logs, the new one created, the other dropped.
    assert_eq!(
        go(
            &have(&[
                ("p_myrecode_bde", "BEGIN a END"),
                ("p_myrecode_bde2", "BEGIN b END")
            ]),
            want
        ),
        [
            drop("p_myrecode_bde2"),
            create("p_myrecode_bde2"),
            drop("p_myrecode_bde")
        ]
    );
    // No chain any more: nothing to log, the trigger goes.
    assert_eq!(
        go(&have(&[("p_myrecode_bde", "BEGIN old END")]), None),
        [drop("p_myrecode_bde")]
    );
    // After a rename the kept original holds the first name: the other is used.
    let old = ["p_myrecode_bde".to_string()];
    assert_eq!(
        reconcile("s", "p", Event::Delete, &names, want, &[], &old),
        [create("p_myrecode_bde2")]
    );
    let both = ["p_myrecode_bde".to_string(), "p_myrecode_bde2".to_string()];
    assert!(reconcile("s", "p", Event::Delete, &names, want, &[], &both).is_empty());
}

#[test]
fn the_jobs_triggers_are_on_every_head_and_only_where_a_chain_ends_at_a_target() {
    let fks = [
        fk(
            "fp",
            "posts",
            &["user_id"],
            "users",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "fc",
            "comments",
            &["post_id"],
            "posts",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        // Cascades on `users` by a column nothing downstream references on update.
        fk(
            "fl",
            "logins",
            &["user_id"],
            "users",
            &["id"],
            "CASCADE",
            "RESTRICT",
        ),
    ];
    let tables = ["comments"];
    let (l, k) = (logs(&tables), vec![id_key()]);
    let t = targets(&tables, &l, &k);
    let all = cascade_triggers(&fks, "s", &t).unwrap();
    let got: Vec<(&str, bool, bool)> = all
        .iter()
        .map(|h| {
            (
                h.table.as_str(),
                h.bodies[0].is_some(),
                h.bodies[1].is_some(),
            )
        })
        .collect();
    assert_eq!(got, [("posts", false, true), ("users", false, true)]);
}

/// users (group 1) -> posts (group 1) -> comments (group 2), all deleting in cascade; `tags`
/// outside the job deletes `comments`' rows too.
fn grouped_schema() -> Vec<ForeignKey> {
    vec![
        fk(
            "fp",
            "posts",
            &["user_id"],
            "users",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "fc",
            "comments",
            &["post_id"],
            "posts",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "ft",
            "comments",
            &["tag_id"],
            "tags",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
    ]
}

/// `Present` with the triggers `want` wants on the tables they are for, under their first
/// names.
fn as_made(want: &[HeadTriggers]) -> Present {
    let mut p = Present::default();
    for h in want {
        for (i, event) in [Event::Update, Event::Delete].into_iter().enumerate() {
            if let Some(b) = &h.bodies[i] {
                p.on.push((
                    h.table.clone(),
                    event,
                    Existing {
                        name: names(&h.table).cascade[i][0].clone(),
                        body: b.clone(),
                    },
                ));
            }
        }
    }
    p
}

/// The `BEFORE DELETE` triggers `heads` want, present under their second names (as a head
/// swapped by a group, or one whose stale trigger was replaced, holds them).
fn deletes_under_second_name<'a>(
    heads: impl Iterator<Item = &'a HeadTriggers>,
) -> Vec<(String, Event, Existing)> {
    heads
        .map(|h| {
            (
                h.table.clone(),
                Event::Delete,
                Existing {
                    name: names(&h.table).cascade[1][1].clone(),
                    body: h.bodies[1].clone().unwrap(),
                },
            )
        })
        .collect()
}

#[test]
fn a_groups_cut_over_ends_its_tables_logging_outside_and_moves_its_heads_logging_to_shadows() {
    let fks = grouped_schema();
    let tables = ["users", "posts", "comments"];
    let (l, k) = (logs(&tables), vec![id_key(), id_key(), id_key()]);
    let all = targets(&tables, &l, &k);
    let want = cascade_triggers(&fks, "s", &all).unwrap();
    let heads: Vec<&str> = want.iter().map(|h| h.table.as_str()).collect();
    assert_eq!(heads, ["posts", "tags", "users"]);
    let present = as_made(&want);
    assert!(reconcile_all("s", &want, &present, &[]).is_empty());
    assert!(unlogged("s", &want, &present, &all).is_empty());

    // Group 1 (users, posts): `tags` stays a head but only for comments (unchanged, untouched);
    // users' and posts' logging of comments goes to their shadows under their second names.
    let g1 = at_cutover(&fks, "s", &["users", "posts"], &all, &present).unwrap();
    assert!(g1.parents().is_empty(), "{g1:?}");
    assert_eq!(g1.statements.len(), 2, "{:#?}", g1.statements);
    assert!(g1.statements[0].starts_with(
        "CREATE TRIGGER `s`.`posts_myrecode_bde2` BEFORE DELETE ON `s`.`posts_myrecode_new` FOR EACH ROW BEGIN"
    ));
    assert!(g1.statements[1].starts_with(
        "CREATE TRIGGER `s`.`users_myrecode_bde2` BEFORE DELETE ON `s`.`users_myrecode_new`"
    ));
    for s in &g1.statements {
        assert!(
            s.contains("INSERT INTO `s`.`comments_myrecode_log`")
                && !s.contains("`s`.`posts_myrecode_log`"),
            "only the later group's table is logged: {s}"
        );
    }

    // Group 2 (comments), after group 1's rename: every head stops logging it, under the lock.
    let mut after = Present::default();
    for (t, e, x) in &present.on {
        if t == "tags" {
            after.on.push((t.clone(), *e, x.clone()));
        } else {
            // The originals' went to `<t>_myrecode_old`; the shadows' are the live tables'.
            after.taken.push(x.name.clone());
        }
    }
    let rest = &all[2..];
    let later = cascade_triggers(&fks, "s", rest).unwrap();
    after.on.extend(deletes_under_second_name(
        later.iter().filter(|h| h.table != "tags"),
    ));
    assert!(unlogged("s", &later, &after, rest).is_empty());
    let g2 = at_cutover(&fks, "s", &["comments"], rest, &after).unwrap();
    assert_eq!(g2.parents(), ["posts", "tags", "users"]);
    assert_eq!(
        g2.statements,
        [
            "DROP TRIGGER IF EXISTS `s`.`posts_myrecode_bde2`",
            "DROP TRIGGER IF EXISTS `s`.`tags_myrecode_bde`",
            "DROP TRIGGER IF EXISTS `s`.`users_myrecode_bde2`",
        ]
    );
}

#[test]
fn a_cut_over_killed_before_its_rename_leaves_chains_unlogged_that_a_rerun_sees() {
    let fks = grouped_schema();
    let tables = ["posts", "comments"];
    let (l, k) = (logs(&tables), vec![id_key(), id_key()]);
    let all = targets(&tables, &l, &k);
    let want = cascade_triggers(&fks, "s", &all).unwrap();
    let present = as_made(&want);
    // Group {comments} ran its statements under the lock, then the run died before the rename.
    let g = at_cutover(&fks, "s", &["comments"], &all, &present).unwrap();
    assert!(g.parents().contains(&"tags") && g.parents().contains(&"users"));
    // users still logs posts, no longer comments; tags logs nothing (its trigger dropped).
    let users_after = cascade_triggers(&fks, "s", &all[..1]).unwrap();
    let left = Present {
        on: deletes_under_second_name(users_after.iter()),
        taken: Vec::new(),
    };
    assert_eq!(unlogged("s", &want, &left, &all), ["comments"]);
    // The rerun puts them back, each under the name free.
    let back = reconcile_all("s", &want, &left, &[]);
    assert!(back
        .iter()
        .any(|(t, s)| t == "tags" && s.starts_with("CREATE TRIGGER `s`.`tags_myrecode_bde`")));
}

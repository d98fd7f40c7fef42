use super::*;
use crate::db::keyset::KeyColumn;
use crate::engine::copy::cutover::carried::cascade::chains::*;

pub(crate) fn fk(
    name: &str,
    child: &str,
    columns: &[&str],
    parent: &str,
    referenced: &[&str],
    on_update: &str,
    on_delete: &str,
) -> ForeignKey {
    ForeignKey {
        name: name.into(),
        child_schema: "s".into(),
        child: child.into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        parent_schema: "s".into(),
        parent: parent.into(),
        referenced: referenced.iter().map(|c| c.to_string()).collect(),
        on_update: on_update.into(),
        on_delete: on_delete.into(),
    }
}

/// The packed key of `values`, spelled out as the log stores it.
fn pk(values: &[&str]) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|e| {
            let v = format!("CAST({e} AS BINARY)");
            let len = format!("OCTET_LENGTH({v})");
            format!(
                "CHAR(({len}) & 255, (({len}) >> 8) & 255, (({len}) >> 16) & 255, (({len}) >> 24) & 255), {v}"
            )
        })
        .collect();
    format!("CONCAT({})", parts.join(", "))
}

const GATE_SQL: &str = "IF 0 THEN DO (SELECT 1 FROM `s`.`!myrecode_gate` LIMIT 1); END IF;";

pub(crate) fn id_key() -> Vec<KeyColumn> {
    vec![KeyColumn::plain("id")]
}

/// The targets named, each keyed by `id` unless listed in `keys`.
pub(crate) fn targets<'a>(
    tables: &'a [&'a str],
    logs: &'a [String],
    keys: &'a [Vec<KeyColumn>],
) -> Vec<Target<'a>> {
    tables
        .iter()
        .zip(logs)
        .zip(keys)
        .map(|((t, l), k)| Target {
            table: t,
            log: l,
            key: k,
        })
        .collect()
}

pub(crate) fn logs(tables: &[&str]) -> Vec<String> {
    tables.iter().map(|t| format!("{t}_myrecode_log")).collect()
}

fn body_of(fks: &[ForeignKey], head: &str, event: Event, t: &[Target<'_>]) -> Option<String> {
    let names: Vec<&str> = t.iter().map(|t| t.table).collect();
    let found = chains(fks, "s", head, event, &names).unwrap();
    trigger_body("s", event, &found, t)
}

fn route(c: &Chain<'_>) -> String {
    let mut r = vec![c.head.clone()];
    if !c.head_tree.is_empty() {
        r[0].push('*');
    }
    for s in &c.steps {
        let mut t = s.fk.child.clone();
        if matches!(&s.effect, Effect::Deleted { tree } if !tree.is_empty()) {
            t.push('*');
        }
        r.push(t);
    }
    r.join(">")
}

fn routes(fks: &[ForeignKey], head: &str, event: Event, targets: &[&str]) -> Vec<String> {
    chains(fks, "s", head, event, targets)
        .unwrap()
        .iter()
        .map(route)
        .collect()
}

#[test]
fn a_delete_reaches_grandchildren_through_two_levels_of_on_delete_cascade() {
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
    ];
    let tables = ["posts", "comments"];
    let (l, k) = (logs(&tables), vec![id_key(), id_key()]);
    let t = targets(&tables, &l, &k);
    assert_eq!(heads(&fks, "s", &tables), ["posts", "users"]);
    assert_eq!(
        body_of(&fks, "users", Event::Delete, &t).unwrap(),
        format!(
            "BEGIN {GATE_SQL} \
             INSERT INTO `s`.`posts_myrecode_log` (key_bytes) SELECT {} FROM `s`.`posts` AS c1 WHERE c1.`user_id` = OLD.`id`; \
             INSERT INTO `s`.`comments_myrecode_log` (key_bytes) SELECT {} FROM `s`.`posts` AS c1 \
             JOIN `s`.`comments` AS c2 ON c2.`post_id` = c1.`id` WHERE c1.`user_id` = OLD.`id`; END",
            pk(&["c1.`id`"]),
            pk(&["c2.`id`"])
        )
    );
    // No constraint acts on an update: no update trigger.
    assert_eq!(body_of(&fks, "users", Event::Update, &t), None);
    // The intermediate table need not be copied: only the end of the chain is logged.
    let only = ["comments"];
    let (l1, k1) = (logs(&only), vec![id_key()]);
    let t1 = targets(&only, &l1, &k1);
    assert_eq!(heads(&fks, "s", &only), ["posts", "users"]);
    let body = body_of(&fks, "users", Event::Delete, &t1).unwrap();
    assert!(!body.contains("posts_myrecode_log"), "{body}");
    assert!(body.contains("JOIN `s`.`comments` AS c2"), "{body}");
    // A trigger's whole DDL.
    assert_eq!(
        trigger_ddl("s", "users", "users_myrecode_bde", Event::Delete, "BEGIN END"),
        "CREATE TRIGGER `s`.`users_myrecode_bde` BEFORE DELETE ON `s`.`users` FOR EACH ROW BEGIN END"
    );
}

/// A sakila-like schema: country -> city -> address by surrogate keys, the circular pair
/// store <-> staff, and sections -> topics -> posts by a natural key (topics' primary key).
fn update_schema() -> Vec<ForeignKey> {
    vec![
        fk(
            "f_city",
            "city",
            &["country_id"],
            "country",
            &["id"],
            "CASCADE",
            "CASCADE",
        ),
        fk(
            "f_addr",
            "address",
            &["city_id"],
            "city",
            &["id"],
            "CASCADE",
            "SET NULL",
        ),
        fk(
            "f_staff",
            "staff",
            &["store_id"],
            "store",
            &["id"],
            "CASCADE",
            "SET NULL",
        ),
        fk(
            "f_mgr",
            "store",
            &["manager_id"],
            "staff",
            &["id"],
            "CASCADE",
            "SET NULL",
        ),
        fk(
            "f_topic",
            "topics",
            &["section"],
            "sections",
            &["code"],
            "CASCADE",
            "CASCADE",
        ),
        fk(
            "f_post",
            "posts",
            &["section", "topic"],
            "topics",
            &["section", "slug"],
            "CASCADE",
            "CASCADE",
        ),
    ]
}

#[test]
fn an_update_follows_only_the_columns_it_changed_and_stops_at_the_circular_pair() {
    let fks = update_schema();
    let all = ["city", "address", "store", "staff", "topics", "posts"];
    // The country's id changes city.country_id, which no constraint references: one level.
    assert_eq!(
        routes(&fks, "country", Event::Update, &all),
        ["country>city"]
    );
    // store.id -> staff.store_id; store.manager_id references staff.id, not store_id (and
    // store is the statement's own table): the pair's chain stops after one step each way.
    assert_eq!(routes(&fks, "store", Event::Update, &all), ["store>staff"]);
    assert_eq!(routes(&fks, "staff", Event::Update, &all), ["staff>store"]);
    // A deleted store nulls staff.store_id; nothing references it: one step too.
    assert_eq!(routes(&fks, "store", Event::Delete, &all), ["store>staff"]);
    // A section renamed: topics' key, then the posts referencing it, two levels.
    assert_eq!(
        routes(&fks, "sections", Event::Update, &all),
        ["sections>topics", "sections>topics>posts"]
    );
    let tables = ["staff", "store", "topics", "posts"];
    let l = logs(&tables);
    let k = vec![
        id_key(),
        id_key(),
        vec![KeyColumn::plain("section"), KeyColumn::plain("slug")],
        id_key(),
    ];
    let t = targets(&tables, &l, &k);
    assert_eq!(
        body_of(&fks, "store", Event::Update, &t).unwrap(),
        format!(
            "BEGIN {GATE_SQL} IF NOT (CAST(OLD.`id` AS BINARY) <=> CAST(NEW.`id` AS BINARY)) THEN \
             INSERT INTO `s`.`staff_myrecode_log` (key_bytes) SELECT {} FROM `s`.`staff` AS c1 WHERE c1.`store_id` = OLD.`id`; \
             END IF; END",
            pk(&["c1.`id`"])
        )
    );
    // topics' key moves with the section: its rows are logged under the old key and the new.
    assert_eq!(
        body_of(&fks, "sections", Event::Update, &t).unwrap(),
        format!(
            "BEGIN {GATE_SQL} IF NOT (CAST(OLD.`code` AS BINARY) <=> CAST(NEW.`code` AS BINARY)) THEN \
             INSERT INTO `s`.`topics_myrecode_log` (key_bytes) SELECT {} FROM `s`.`topics` AS c1 WHERE c1.`section` = OLD.`code`; \
             INSERT INTO `s`.`topics_myrecode_log` (key_bytes) SELECT {} FROM `s`.`topics` AS c1 WHERE c1.`section` = OLD.`code` AND NEW.`code` IS NOT NULL; \
             INSERT INTO `s`.`posts_myrecode_log` (key_bytes) SELECT {} FROM `s`.`topics` AS c1 \
             JOIN `s`.`posts` AS c2 ON c2.`section` = c1.`section` AND c2.`topic` = c1.`slug` WHERE c1.`section` = OLD.`code`; \
             END IF; END",
            pk(&["c1.`section`", "c1.`slug`"]),
            pk(&["NEW.`code`", "c1.`slug`"]),
            pk(&["c2.`id`"])
        )
    );
    // A topic renamed: only its slug changes, which posts.topic references.
    let body = body_of(&fks, "topics", Event::Update, &t).unwrap();
    assert!(
        body.contains("IF NOT (CAST(OLD.`section` AS BINARY) <=> CAST(NEW.`section` AS BINARY) AND CAST(OLD.`slug` AS BINARY) <=> CAST(NEW.`slug` AS BINARY)) THEN"),
        "{body}"
    );
}

#[test]
fn an_update_reaching_a_table_it_already_updated_is_not_followed() {
    // InnoDB fails the statement instead: a self-referencing ON UPDATE CASCADE...
    let fks = [fk(
        "f_parent",
        "nodes",
        &["parent_id"],
        "nodes",
        &["id"],
        "CASCADE",
        "SET NULL",
    )];
    assert!(routes(&fks, "nodes", Event::Update, &["nodes"]).is_empty());
    // ...while a delete nulls the children's reference (a delete is no update of the table).
    assert_eq!(
        routes(&fks, "nodes", Event::Delete, &["nodes"]),
        ["nodes>nodes"]
    );
    // ...and a chain coming back to a table it updated, through another table.
    let fks = [
        fk(
            "f_b",
            "b",
            &["a_code"],
            "a",
            &["code"],
            "CASCADE",
            "RESTRICT",
        ),
        fk(
            "f_a",
            "a",
            &["b_code"],
            "b",
            &["a_code"],
            "CASCADE",
            "RESTRICT",
        ),
        fk(
            "f_c",
            "c",
            &["b_code"],
            "b",
            &["a_code"],
            "SET NULL",
            "RESTRICT",
        ),
    ];
    assert_eq!(
        routes(&fks, "a", Event::Update, &["a", "b", "c"]),
        ["a>b", "a>b>c"]
    );
    // SET NULL on an update: the nulled columns' sources are the guard.
    let found = chains(&fks, "s", "a", Event::Update, &["c"]).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].guard, ["code"]);
}

#[test]
fn a_self_referencing_delete_takes_the_whole_thread_by_a_recursive_expression() {
    let fks = [
        fk(
            "f_post",
            "comments",
            &["post_id"],
            "posts",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "f_parent",
            "comments",
            &["parent_id"],
            "comments",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "f_react",
            "reactions",
            &["comment_id"],
            "comments",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "f_note",
            "notes",
            &["reaction_id"],
            "reactions",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
    ];
    let tables = ["comments", "notes"];
    let (l, k) = (logs(&tables), vec![id_key(), id_key()]);
    let t = targets(&tables, &l, &k);
    assert_eq!(
        heads(&fks, "s", &tables),
        ["comments", "posts", "reactions"]
    );
    assert_eq!(
        routes(&fks, "posts", Event::Delete, &tables),
        ["posts>comments*", "posts>comments*>reactions>notes"]
    );
    let tree = |anchor: &str, name: &str, depth: usize| {
        format!(
            "WITH RECURSIVE {name} (v0, d) AS ({anchor} UNION ALL SELECT t.`id`, p.d + 1 FROM `s`.`comments` AS t \
             JOIN {name} AS p ON t.`parent_id` = p.v0 WHERE p.d < {depth}) "
        )
    };
    let from_post = "SELECT c1.`id`, 0 FROM `s`.`comments` AS c1 WHERE c1.`post_id` = OLD.`id`";
    assert_eq!(
        body_of(&fks, "posts", Event::Delete, &t).unwrap(),
        format!(
            "BEGIN {GATE_SQL} \
             INSERT INTO `s`.`comments_myrecode_log` (key_bytes) {}SELECT {} FROM myrecode_tree1 AS c1; \
             INSERT INTO `s`.`notes_myrecode_log` (key_bytes) {}SELECT {} FROM myrecode_tree1 AS c1 \
             JOIN `s`.`reactions` AS c2 ON c2.`comment_id` = c1.v0 JOIN `s`.`notes` AS c3 ON c3.`reaction_id` = c2.`id`; END",
            tree(from_post, "myrecode_tree1", 14),
            pk(&["c1.v0"]),
            tree(from_post, "myrecode_tree1", 12),
            pk(&["c3.`id`"])
        )
    );
    // A comment deleted itself: its replies (not the row, its own triggers log it), and the
    // notes on it and on them.
    let from_old = "SELECT OLD.`id`, 0";
    assert_eq!(
        body_of(&fks, "comments", Event::Delete, &t).unwrap(),
        format!(
            "BEGIN {GATE_SQL} \
             INSERT INTO `s`.`comments_myrecode_log` (key_bytes) {}SELECT {} FROM myrecode_tree0 AS c0 WHERE c0.d > 0; \
             INSERT INTO `s`.`notes_myrecode_log` (key_bytes) {}SELECT {} FROM myrecode_tree0 AS c0 \
             JOIN `s`.`reactions` AS c1 ON c1.`comment_id` = c0.v0 JOIN `s`.`notes` AS c2 ON c2.`reaction_id` = c1.`id`; END",
            tree(from_old, "myrecode_tree0", 15),
            pk(&["c0.v0"]),
            tree(from_old, "myrecode_tree0", 13),
            pk(&["c2.`id`"])
        )
    );
    assert_eq!(body_of(&fks, "comments", Event::Update, &t), None);
}

#[test]
fn a_tree_carries_what_its_references_and_the_next_step_read_and_recurses_by_each() {
    // Two self-references (a reply and a quote), a tree in the middle of a chain keyed by code.
    let fks = [
        fk(
            "f_list",
            "items",
            &["list_code"],
            "lists",
            &["code"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "f_reply",
            "items",
            &["reply_to"],
            "items",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "f_quote",
            "items",
            &["quote_of"],
            "items",
            &["id"],
            "RESTRICT",
            "CASCADE",
        ),
        fk(
            "f_tag",
            "tags",
            &["item_code"],
            "items",
            &["code"],
            "RESTRICT",
            "CASCADE",
        ),
    ];
    let tables = ["tags"];
    let (l, k) = (logs(&tables), vec![id_key()]);
    let t = targets(&tables, &l, &k);
    assert_eq!(
        body_of(&fks, "lists", Event::Delete, &t).unwrap(),
        format!(
            "BEGIN {GATE_SQL} INSERT INTO `s`.`tags_myrecode_log` (key_bytes) WITH RECURSIVE myrecode_tree1 (v0, v1, d) AS (\
             SELECT c1.`id`, c1.`code`, 0 FROM `s`.`items` AS c1 WHERE c1.`list_code` = OLD.`code` \
             UNION ALL SELECT t.`id`, t.`code`, p.d + 1 FROM `s`.`items` AS t JOIN myrecode_tree1 AS p ON t.`reply_to` = p.v0 WHERE p.d < 13 \
             UNION ALL SELECT t.`id`, t.`code`, p.d + 1 FROM `s`.`items` AS t JOIN myrecode_tree1 AS p ON t.`quote_of` = p.v0 WHERE p.d < 13) \
             SELECT {} FROM myrecode_tree1 AS c1 JOIN `s`.`tags` AS c2 ON c2.`item_code` = c1.v1; END",
            pk(&["c2.`id`"])
        )
    );
}

#[test]
fn chains_end_at_innodbs_depth_and_cycles_of_deletes_are_bounded() {
    let fks: Vec<ForeignKey> = (1..=20)
        .map(|i| {
            fk(
                &format!("f{i}"),
                &format!("t{i}"),
                &["p"],
                &format!("t{}", i - 1),
                &["id"],
                "RESTRICT",
                "CASCADE",
            )
        })
        .collect();
    let names: Vec<String> = (1..=20).map(|i| format!("t{i}")).collect();
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    let found = chains(&fks, "s", "t0", Event::Delete, &all).unwrap();
    assert_eq!(found.len(), MAX_DEPTH);
    assert_eq!(found.last().unwrap().target(), "t15");
    // A cycle of two tables deleting each other: one chain per depth, no more.
    let pair = [
        fk("ab", "b", &["a_id"], "a", &["id"], "RESTRICT", "CASCADE"),
        fk("ba", "a", &["b_id"], "b", &["id"], "RESTRICT", "CASCADE"),
    ];
    assert_eq!(
        chains(&pair, "s", "a", Event::Delete, &["a", "b"])
            .unwrap()
            .len(),
        MAX_DEPTH
    );
    // Three tables each deleting both others: the chains double at every level.
    let mut tangle = Vec::new();
    for x in ["a", "b", "c"] {
        for y in ["a", "b", "c"] {
            if x != y {
                tangle.push(fk(
                    &format!("{x}{y}"),
                    y,
                    &[x],
                    x,
                    &["id"],
                    "RESTRICT",
                    "CASCADE",
                ));
            }
        }
    }
    assert_eq!(
        chains(&tangle, "s", "a", Event::Delete, &["a", "b", "c"]),
        Err(TooManyChains {
            table: "a".into(),
            event: Event::Delete
        })
    );
    // A parent in another schema is not followed.
    let mut other = fk(
        "x",
        "child",
        &["p"],
        "parent",
        &["id"],
        "CASCADE",
        "CASCADE",
    );
    other.parent_schema = "elsewhere".into();
    assert!(heads(&[other], "s", &["child"]).is_empty());
}

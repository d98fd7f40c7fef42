//! Unit tests of `job::refusal`, kept apart so the rules read on their own.

use super::*;
use crate::bookkeeping::names::names;
use crate::inventory::model::{Column, ColumnKind, RowSize};
use crate::job::model::ColumnJob;

/// The built-in `keyless_max_rows`.
const LIMIT: u64 = 10_000;

/// The rules under the built-in keyless limit.
fn refusals(t: &Table, j: &TableJob) -> Vec<Refusal> {
    super::refusals(t, j, LIMIT)
}

/// The rules on facts, under the built-in keyless limit.
fn check(t: &Facts, j: &TableJob) -> Vec<Refusal> {
    super::check(t, j, LIMIT)
}

fn column(name: &str, column_type: &str, charset: Option<&str>) -> Column {
    Column {
        name: name.into(),
        position: 1,
        kind: if charset.is_some() {
            ColumnKind::Text
        } else {
            ColumnKind::Binary
        },
        data_type: column_type.split('(').next().unwrap().into(),
        column_type: column_type.into(),
        charset: charset.map(str::to_string),
        collation: None,
        max_chars: None,
        max_bytes: None,
        max_bytes_utf8mb4: None,
        nullable: true,
        definition: Default::default(),
        in_primary_key: false,
        indexes: Vec::new(),
    }
}

/// `s.posts` (InnoDB), paged by PRIMARY (id, code): `code` latin1, `body` latin1,
/// `note` utf8mb4, `data` blob.
fn posts() -> Table {
    Table {
        schema: "s".into(),
        name: "posts".into(),
        engine: "InnoDB".into(),
        row_format: "Dynamic".into(),
        estimated_rows: 0,
        collation: None,
        key_part_limit: 3072,
        key_limit: 3072,
        primary_key: Some(vec!["id".into(), "code".into()]),
        recode_key: Some(RecodeKey {
            index: "PRIMARY".into(),
            columns: vec!["id".into(), "code".into()],
        }),
        columns: vec![
            column("code", "varchar(20)", Some("latin1")),
            column("body", "text", Some("latin1")),
            column("note", "varchar(100)", Some("utf8mb4")),
            column("data", "blob", None),
        ],
        indexes: Vec::new(),
        triggers: Vec::new(),
        foreign_keys: Vec::new(),
        row_size: RowSize {
            bytes: 0,
            bytes_utf8mb4: 0,
            limit: 65535,
        },
        risks: Vec::new(),
    }
}

fn job(strategy: Strategy, columns: &[&str]) -> TableJob {
    TableJob {
        name: "posts".into(),
        strategy,
        key: None,
        batch_size: None,
        target_batch_time: None,
        engine: None,
        columns: columns
            .iter()
            .map(|c| ColumnJob {
                name: c.to_string(),
                source: "auto".into(),
                target: "TEXT CHARACTER SET utf8mb4".into(),
                undecidable: None,
                redefine: false,
            })
            .collect(),
    }
}

fn classes(t: &Table, j: &TableJob) -> Vec<Class> {
    refusals(t, j).iter().map(|r| r.class).collect()
}

fn trigger(name: &str) -> Trigger {
    Trigger {
        name: name.into(),
        timing: "AFTER".into(),
        event: "UPDATE".into(),
        portable: true,
        tables: Vec::new(),
    }
}

fn fk(name: &str, direction: &str, from: &str, to: &str) -> ForeignKey {
    ForeignKey {
        name: name.into(),
        direction: direction.into(),
        from_schema: "s".into(),
        from_table: from.into(),
        from_columns: vec!["post_id".into()],
        to_schema: "s".into(),
        to_table: to.into(),
        to_columns: vec!["id".into()],
    }
}

#[test]
fn a_plain_innodb_table_is_refused_nothing() {
    let t = posts();
    assert!(refusals(&t, &job(Strategy::Copy, &["body"])).is_empty());
    assert!(refusals(&t, &job(Strategy::InPlace, &["note", "data"])).is_empty());
}

#[test]
fn own_triggers_refuse_neither_strategy() {
    // The copy carries them across the cut-over (`engine::copy::cutover::carried::own_triggers`).
    let mut t = posts();
    t.triggers = vec![trigger("audit")];
    t.triggers
        .extend(names("posts").triggers.iter().map(|n| trigger(n)));
    assert!(classes(&t, &job(Strategy::Copy, &["body"])).is_empty());
    assert!(classes(&t, &job(Strategy::InPlace, &["note"])).is_empty());
}

#[test]
fn foreign_keys_in_the_schema_are_carried_and_across_schemas_refused() {
    let mut t = posts();
    t.foreign_keys = vec![
        fk("fk_author", "outgoing", "posts", "authors"),
        fk("fk_self", "outgoing", "posts", "posts"),
        fk("fk_self", "incoming", "posts", "posts"),
    ];
    // The one cut-over moves the schema's constraints with the tables.
    assert!(classes(&t, &job(Strategy::Copy, &["body"])).is_empty());
    let mut other = fk("fk_post", "incoming", "comments", "posts");
    other.from_schema = "forum".into();
    t.foreign_keys.push(other);
    let r = refusals(&t, &job(Strategy::Copy, &["body"]));
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].class, r[0].at), (Class::ForeignKey, At::Name));
    assert_eq!(
        r[0].reason,
        "table 'posts' is in foreign key `fk_post` (forum.comments -> s.posts) across schemas: the one cut-over moves the constraints of one schema"
    );
    assert!(r[0].fix.starts_with("drop the foreign key for the job"));
    assert!(classes(&t, &job(Strategy::InPlace, &["note"])).is_empty());
}

#[test]
fn a_foreign_key_between_text_columns_is_refused_unless_both_sides_change_together() {
    let mut t = posts();
    let mut text_fk = fk("fk_code", "incoming", "orders", "posts");
    text_fk.from_columns = vec!["post_code".into()];
    text_fk.to_columns = vec!["code".into()];
    t.foreign_keys = vec![text_fk];
    let mine = job(Strategy::Copy, &["code"]);
    let facts = Facts::of_table(&t);
    // `orders.post_code` stays latin1 while `posts.code` becomes utf8mb4.
    let r = foreign_key_splits(&facts, &mine, std::slice::from_ref(&mine));
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].class, Class::ForeignKeyCharsetSplit);
    assert_eq!(
        r[0].to_string(),
        "foreign key `fk_code` would join posts.code (utf8mb4) to orders.post_code (latin1) after the cut-over: the server keeps no constraint between text columns of different character sets. \
         Fix: recode both columns in this job with targets of the same character set (add orders.post_code with `strategy: copy`), or leave both out"
    );
    // Both sides to utf8mb4 in the same job: one cut-over, no refusal.
    let mut orders = job(Strategy::Copy, &["post_code"]);
    orders.name = "orders".into();
    assert!(foreign_key_splits(&facts, &mine, &[mine.clone(), orders.clone()]).is_empty());
    // Both recoded, but to different sets.
    orders.columns[0].target = "VARCHAR(20) CHARACTER SET utf8mb3".into();
    assert_eq!(
        foreign_key_splits(&facts, &mine, &[mine.clone(), orders]).len(),
        1
    );
    // Neither side changes (the column is not in the job): nothing to refuse.
    let body_only = job(Strategy::Copy, &["body"]);
    assert!(foreign_key_splits(&facts, &body_only, std::slice::from_ref(&body_only)).is_empty());
}

/// A job of `posts` (`posts_cols`) and `orders` (`post_code`), both copied, with `groups`
/// (`name: [tables]`, in order).
fn grouped(posts_cols: &[&str], groups: &[(&str, &[&str])]) -> crate::job::model::Job {
    let mut orders = job(Strategy::Copy, &["post_code"]);
    orders.name = "orders".into();
    crate::job::model::Job {
        version: 1,
        schema: "s".into(),
        defaults: Default::default(),
        tables: vec![job(Strategy::Copy, posts_cols), orders],
        cutover_groups: groups
            .iter()
            .map(|(name, tables)| crate::job::model::CutoverGroup {
                name: name.to_string(),
                tables: tables.iter().map(|t| t.to_string()).collect(),
            })
            .collect(),
        clients: None,
    }
}

#[test]
fn a_foreign_key_between_text_columns_recoded_by_two_groups_is_refused() {
    let mut t = posts();
    let mut text_fk = fk("fk_code", "incoming", "orders", "posts");
    text_fk.from_columns = vec!["post_code".into()];
    text_fk.to_columns = vec!["code".into()];
    t.foreign_keys = vec![text_fk];
    let facts = Facts::of_table(&t);
    let split = grouped(
        &["code"],
        &[("catalog", &["posts"]), ("sales", &["orders"])],
    );
    let r = group_splits(&facts, &split.tables[0], &split);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].class, r[0].at),
        (Class::ForeignKeyAcrossGroups, At::Name)
    );
    assert_eq!(
        r[0].to_string(),
        "foreign key `fk_code` joins posts.code (group 'catalog') to orders.post_code (group 'sales'), text columns recoded from latin1 to utf8mb4 on both sides: \
         between the two groups' cut-overs one would be utf8mb4 and the other still latin1, and the server keeps no constraint between text columns of different character sets. \
         Fix: put 'posts' and 'orders' in the same cut-over group"
    );
    // One group: one instant, nothing split.
    let together = grouped(&["code"], &[("all", &["posts", "orders"])]);
    assert!(group_splits(&facts, &together.tables[0], &together).is_empty());
    // No groups named: the whole job is one.
    let none = grouped(&["code"], &[]);
    assert!(group_splits(&facts, &none.tables[0], &none).is_empty());
    // The key's column not recoded here: the split rule speaks of it, not this one.
    let body = grouped(
        &["body"],
        &[("catalog", &["posts"]), ("sales", &["orders"])],
    );
    assert!(group_splits(&facts, &body.tables[0], &body).is_empty());
    // A foreign key on integers between groups is allowed: its constraint moves at each instant.
    t.foreign_keys = vec![fk("fk_post", "incoming", "orders", "posts")];
    assert!(group_splits(&Facts::of_table(&t), &split.tables[0], &split).is_empty());
}

#[test]
fn a_trigger_naming_a_table_of_another_group_is_refused() {
    let mut t = posts();
    let mut keep = trigger("keep_orders");
    keep.tables = vec!["orders".into(), "outside".into()];
    // The copy's own triggers name other tables (a cascade's child): never refused.
    let mut ours = trigger(&names("posts").cascade[0][1]);
    ours.tables = vec!["orders".into()];
    t.triggers = vec![keep, ours];
    let facts = Facts::of_table(&t);
    let split = grouped(
        &["body"],
        &[("catalog", &["posts"]), ("sales", &["orders"])],
    );
    let r = group_splits(&facts, &split.tables[0], &split);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].class, Class::TriggerAcrossGroups);
    assert_eq!(
        r[0].to_string(),
        "trigger `keep_orders` on table 'posts' (group 'catalog') names table 'orders' of group 'sales': \
         between the two groups' cut-overs it would carry text between a table already recoded to utf8mb4 and one still in its legacy character set. \
         Fix: put 'posts' and 'orders' in the same cut-over group, or drop the trigger for the job and create it again once both groups are swapped"
    );
    let together = grouped(&["body"], &[("all", &["orders", "posts"])]);
    assert!(group_splits(&facts, &together.tables[0], &together).is_empty());
    // A table recoded in place has no cut-over: a trigger naming it splits nothing.
    let mut in_place = split.clone();
    in_place.tables[1].strategy = Strategy::InPlace;
    in_place.cutover_groups.pop();
    assert!(group_splits(&facts, &in_place.tables[0], &in_place).is_empty());
}

#[test]
fn without_a_usable_key_in_place_is_refused_and_a_copy_only_above_the_limit() {
    let mut t = posts();
    t.recode_key = None;
    t.estimated_rows = 400;
    // Small: the copy rebuilds it under the cut-over's lock; in place cannot page over it.
    assert!(refusals(&t, &job(Strategy::Copy, &["body"])).is_empty());
    let r = refusals(&t, &job(Strategy::InPlace, &["note"]));
    assert_eq!((r[0].class, r[0].at), (Class::NoUsableKey, At::Name));
    assert_eq!(
        r[0].to_string(),
        "table 'posts' has no primary key and no unique key over NOT NULL columns, so in-place batches cannot page over it. \
         Fix: write `strategy: copy` (a table of at most `keyless_max_rows` rows is rebuilt under the cut-over's lock, about 16 ms of pause here), \
         or add a primary key (ALTER TABLE `s`.`posts` ADD PRIMARY KEY (...)) or a unique key over NOT NULL columns"
    );
    // Over the limit: refused, with both ways out.
    t.estimated_rows = 250_000;
    let r = refusals(&t, &job(Strategy::Copy, &["body"]));
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].class, r[0].at), (Class::NoUsableKey, At::Name));
    assert_eq!(
        r[0].to_string(),
        "table 'posts' has no primary key and no unique key over NOT NULL columns, so batches cannot page over it, \
         and about 250000 rows are more than `keyless_max_rows` (10000) to rebuild under the cut-over's lock (about 10.0 s of pause). \
         Fix: add a primary key (ALTER TABLE `s`.`posts` ADD PRIMARY KEY (...)) or a unique key over NOT NULL columns, so it is copied online in batches; \
         or raise `keyless_max_rows` above 250000 if that pause is acceptable; or leave the table out of the job"
    );
    assert!(super::refusals(&t, &job(Strategy::Copy, &["body"]), 300_000).is_empty());
}

#[test]
fn engine_is_only_for_the_copy_and_only_innodb() {
    let t = posts();
    let mut j = job(Strategy::Copy, &["body"]);
    j.engine = Some("innodb".into());
    assert!(refusals(&t, &j).is_empty());
    j.engine = Some("Aria".into());
    let r = refusals(&t, &j);
    assert_eq!((r[0].class, r[0].at), (Class::EngineOption, At::Engine));
    assert_eq!(r[0].path("tables[0]"), "tables[0].engine");
    assert!(r[0].reason.contains("converts to InnoDB only"), "{}", r[0]);
    let mut j = job(Strategy::InPlace, &["note"]);
    j.engine = Some("InnoDB".into());
    let r = refusals(&t, &j);
    assert_eq!(r[0].class, Class::EngineOption);
    assert!(r[0].reason.contains("only the copy strategy"), "{}", r[0]);
}

#[test]
fn a_job_key_must_be_the_key_batches_page_over() {
    let t = posts();
    let mut j = job(Strategy::InPlace, &["note"]);
    j.key = Some(vec!["id".into(), "code".into()]);
    assert!(refusals(&t, &j).is_empty());
    j.key = Some(vec!["code".into(), "id".into()]);
    let r = refusals(&t, &j);
    assert_eq!((r[0].class, r[0].at), (Class::KeyMismatch, At::Key));
    assert_eq!(
        r[0].to_string(),
        "key (code, id) in the job is not the key batches page over: PRIMARY (id, code). Fix: write `key: [id, code]`, or remove `key:`"
    );
}

#[test]
fn a_key_column_in_a_copy_job_needs_a_fixed_source_and_few_enough_rows() {
    let mut t = posts();
    t.estimated_rows = 5000;
    // `source: auto`: refused by its position.
    let mut j = job(Strategy::Copy, &["body", "code"]);
    let r = refusals(&t, &j);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].class, r[0].at),
        (Class::KeyColumnInJob, At::Column(1))
    );
    assert_eq!(r[0].path("tables[3]"), "tables[3].columns[1].name");
    assert_eq!(
        r[0].to_string(),
        "column 'code' of table 'posts' is part of its key (PRIMARY) and its `source: auto` decides each value by itself: a recoded key must follow from its bytes under one label, the same every time. \
         Fix: write the label the scan found as its `source:` (`source: cp1251`, say), or leave this column out of the job"
    );
    // A fixed label the server reads: copied online, whatever the table's size.
    j.columns[1].source = "cp1251".into();
    assert!(refusals(&t, &j).is_empty());
    assert_eq!(recoded_key_columns(&Facts::of_table(&t), &j), [(1, "code")]);
    assert!(recoded_key_online(&Facts::of_table(&t), &j));
    t.estimated_rows = 50_000_000;
    assert!(refusals(&t, &j).is_empty());
    // One it lacks (TCVN3): rebuilt under the cut-over's lock, up to `keyless_max_rows`.
    j.columns[1].source = "tcvn3".into();
    assert!(!recoded_key_online(&Facts::of_table(&t), &j));
    t.estimated_rows = 5000;
    assert!(refusals(&t, &j).is_empty());
    t.estimated_rows = LIMIT + 1;
    let r = refusals(&t, &j);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].class, r[0].at),
        (Class::KeyColumnInJob, At::Column(1))
    );
    assert!(
        r[0].reason
            .contains("its `source: tcvn3` has no charset on the server")
            && r[0].reason.contains("more than `keyless_max_rows` (10000)")
            && r[0].fix.starts_with("raise `keyless_max_rows` above 10001"),
        "{}",
        r[0]
    );
    // In place, a key column is no concern of this rule.
    j.strategy = Strategy::InPlace;
    assert!(recoded_key_columns(&Facts::of_table(&t), &j).is_empty());
}

#[test]
fn a_name_whose_side_tables_cannot_sort_after_it_refuses_the_copy() {
    let mut t = posts();
    // Over 51 characters, the side tables' names are cut at 42 and end in `~hash…`:
    // a letter past ASCII there sorts after `~`, and the shadow would sort first.
    t.name = format!("{}ы{}", "a".repeat(42), "b".repeat(9));
    let r = refusals(&t, &job(Strategy::Copy, &["body"]));
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].class, r[0].at), (Class::NameTooLong, At::Name));
    assert!(
        r[0].reason.starts_with(&format!(
            "table '{}': its name is too long for the copy's side tables to sort after it ({}",
            t.name,
            names(&t.name).shadow
        )),
        "{}",
        r[0].reason
    );
    assert_eq!(
        r[0].fix,
        "rename the table to at most 51 characters for the job"
    );
    assert!(classes(&t, &job(Strategy::InPlace, &["note"])).is_empty());
    t.name = "a".repeat(60);
    assert!(classes(&t, &job(Strategy::Copy, &["body"])).is_empty());
}

#[test]
fn engines_without_transactions_refuse_in_place_only() {
    for engine in ["MyISAM", "Aria", "MEMORY", "CSV", "ARCHIVE", ""] {
        let mut t = posts();
        t.engine = engine.into();
        let r = refusals(&t, &job(Strategy::InPlace, &["note"]));
        assert_eq!(r.len(), 1, "{engine}: {r:?}");
        assert_eq!(
            (r[0].class, r[0].at),
            (Class::NonTransactionalInPlace, At::Strategy)
        );
        assert!(classes(&t, &job(Strategy::Copy, &["body"])).is_empty());
    }
    let mut t = posts();
    t.engine = "MyISAM".into();
    assert_eq!(
        refusals(&t, &job(Strategy::InPlace, &["note"]))[0].to_string(),
        "table 'posts' uses the MyISAM engine, which has no transactions: in place, a kill mid-batch would keep rewritten values and lose their backups. \
         Fix: set `strategy: copy` (the original stays untouched until the cut-over), or convert the table first (ALTER TABLE `s`.`posts` ENGINE=InnoDB)"
    );
    t.engine = "innodb".into();
    assert!(classes(&t, &job(Strategy::InPlace, &["note"])).is_empty());
}

#[test]
fn in_place_needs_a_type_that_holds_utf8() {
    let t = posts();
    let r = refusals(
        &t,
        &job(Strategy::InPlace, &["note", "body", "data", "nope"]),
    );
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].class, r[0].at),
        (Class::InPlaceCannotHoldUtf8, At::Strategy)
    );
    assert_eq!(
        r[0].finding("tables[0]").render("j"),
        "j: tables[0].strategy: in-place cannot work for column 'body' of table 'posts': it is text latin1, which cannot hold UTF-8. \
         Fix: set `strategy: copy` (it changes the column to its target type online)"
    );
    assert!(holds_utf8(Some("utf8")) && holds_utf8(Some("UTF8MB4")) && holds_utf8(None));
    assert!(!holds_utf8(Some("cp1251")));
}

#[test]
fn a_scan_report_gives_the_same_refusals_as_the_live_table() {
    let mut t = posts();
    t.engine = "MyISAM".into();
    t.triggers = vec![trigger("audit")];
    t.foreign_keys = vec![fk("fk_post", "incoming", "comments", "posts")];
    let scan: TableScan = serde_json::from_value(serde_json::json!({
        "schema": "s", "name": "posts", "row_format": "Dynamic", "engine": "MyISAM",
        "key": {"index": "PRIMARY", "columns": ["id", "code"]},
        "estimated_rows": 0, "rows_scanned": 0, "strategy": "copy", "risks": [],
        "triggers": t.triggers, "foreign_keys": t.foreign_keys,
        "columns": t.columns.iter().map(|c| serde_json::json!({
            "name": c.name, "column_type": c.column_type, "charset": c.charset,
            "collation": null, "nullable": true, "declared_max_chars": null, "rows": 0,
            "nulls": 0, "empty": 0, "labels": {}, "confidence": {}, "examples": {},
            "undecided": [], "undecided_total": 0, "max_bytes_now": 0, "max_bytes_after": 0,
            "max_chars_after": 0, "source": null, "strategy": "copy", "fits": true, "risks": [],
            "target": {"column_type": c.column_type, "charset": null, "collation": null, "why": ""}
        })).collect::<Vec<_>>(),
    }))
    .unwrap();
    for j in [
        job(Strategy::Copy, &["body", "code"]),
        job(Strategy::InPlace, &["note", "body"]),
    ] {
        assert_eq!(check(&Facts::of_scan(&scan), &j), refusals(&t, &j));
    }
    // A report from before engines were recorded cannot tell: nothing refused for it.
    let mut old = scan.clone();
    old.engine = None;
    assert!(check(&Facts::of_scan(&old), &job(Strategy::InPlace, &["note"])).is_empty());
}

#[test]
fn refused_tables_print_one_line_per_refusal() {
    let mut t = posts();
    t.recode_key = None;
    t.estimated_rows = LIMIT + 1;
    let e = Refused {
        tables: vec![(
            "posts".into(),
            refusals(&t, &job(Strategy::Copy, &["body"])),
        )],
    };
    let text = e.to_string();
    assert!(
        text.starts_with("1 table(s) of the job refused; nothing was written\n  posts: table 'posts' has no primary key"),
        "{text}"
    );
    assert!(text.ends_with("then run again"), "{text}");
}

//! Unit tests of `job::plan`, kept apart so the rules read on their own.

use super::*;
use crate::inventory::model::{RecodeKey, ServerInfo};
use crate::job::load::load_str;
use crate::job::model::Strategy;
use crate::scan::model::Target;
use std::collections::BTreeMap;

fn column(
    name: &str,
    labels: &[(&str, u64)],
    strategy: ScanStrategy,
    target: Target,
) -> ColumnScan {
    ColumnScan {
        name: name.into(),
        column_type: "varchar(100)".into(),
        charset: Some("latin1".into()),
        collation: Some("latin1_swedish_ci".into()),
        nullable: name != "title",
        definition: Default::default(),
        declared_max_chars: Some(100),
        rows: 1000,
        nulls: 3,
        empty: 1,
        labels: labels.iter().map(|(l, n)| (l.to_string(), *n)).collect(),
        confidence: BTreeMap::new(),
        examples: BTreeMap::new(),
        undecided: Vec::new(),
        undecided_total: labels
            .iter()
            .find(|(l, _)| *l == "unknown")
            .map(|x| x.1)
            .unwrap_or(0),
        serialized: 0,
        serialized_unparsed: 0,
        max_bytes_now: 90,
        max_bytes_after: 170,
        max_chars_after: 90,
        source: None,
        target,
        strategy,
        fits: true,
        risks: Vec::new(),
        blocked: None,
    }
}

fn utf8(ty: &str) -> Target {
    Target {
        column_type: ty.into(),
        charset: Some("utf8mb4".into()),
        collation: Some("utf8mb4_unicode_ci".into()),
        why: "holds Cyrillic text".into(),
    }
}

fn table(name: &str, key: bool, strategy: ScanStrategy, columns: Vec<ColumnScan>) -> TableScan {
    TableScan {
        schema: "shop".into(),
        name: name.into(),
        row_format: "Dynamic".into(),
        engine: Some("InnoDB".into()),
        key: key.then(|| RecodeKey {
            index: "PRIMARY".into(),
            columns: vec!["id".into()],
        }),
        estimated_rows: 1000,
        rows_scanned: 1000,
        strategy,
        columns,
        risks: if key {
            Vec::new()
        } else {
            vec!["no primary key and no NOT NULL unique key: it cannot be recoded online in batches. Fix: add a primary key".into()]
        },
        triggers: Vec::new(),
        foreign_keys: Vec::new(),
    }
}

pub(crate) fn sample_report() -> ScanReport {
    let keep = Target {
        column_type: "char(32)".into(),
        charset: Some("latin1".into()),
        collation: Some("latin1_swedish_ci".into()),
        why: "pure ASCII (hex tokens): stays latin1, index does not grow".into(),
    };
    ScanReport {
        schema_version: 1,
        tool_version: "0.1.0".into(),
        server: ServerInfo {
            version: "10.11.6-MariaDB".into(),
            flavor: "MariaDB".into(),
            innodb_page_size: 16384,
            default_row_format: "dynamic".into(),
        },
        mode: "full".into(),
        sample_rows: None,
        objects: Vec::new(),
        clients: Vec::new(),
        tables: vec![
            table(
                "customers",
                true,
                ScanStrategy::Copy,
                vec![
                    column(
                        "name",
                        &[
                            ("ascii", 500),
                            ("cp1251", 300),
                            ("koi8-r", 150),
                            ("cp866", 40),
                            ("unknown", 10),
                        ],
                        ScanStrategy::Copy,
                        utf8("varchar(100)"),
                    ),
                    column(
                        "title",
                        &[("cp1251", 12), ("ascii", 3)],
                        ScanStrategy::Copy,
                        utf8("varchar(100)"),
                    ),
                    column(
                        "bio",
                        &[("cp1251", 12), ("utf-8", 3)],
                        ScanStrategy::Copy,
                        utf8("varchar(100)"),
                    ),
                    column("api_token", &[("ascii", 1000)], ScanStrategy::None, keep),
                    column(
                        "we ird: #name",
                        &[("tcvn3", 5)],
                        ScanStrategy::Copy,
                        utf8("text"),
                    ),
                ],
            ),
            table("audit", false, ScanStrategy::None, vec![]),
            table(
                "codes",
                true,
                ScanStrategy::None,
                vec![column(
                    "code",
                    &[("ascii", 9)],
                    ScanStrategy::None,
                    utf8("varchar(10)"),
                )],
            ),
        ],
    }
}

#[test]
fn generated_job_loads_back_with_every_decision() {
    let text = generate(&sample_report(), None, "scan.json").unwrap();
    let loaded = load_str(&text).unwrap_or_else(|e| panic!("{e:#?}\n{text}"));
    let job = loaded.job;
    assert_eq!(job.schema, "shop");
    assert_eq!(job.defaults, Defaults::default());
    assert_eq!(job.tables.len(), 1, "{text}");
    let t = &job.tables[0];
    assert_eq!((t.name.as_str(), t.strategy), ("customers", Strategy::Copy));
    assert_eq!(t.key.as_deref(), Some(&["id".to_string()][..]));
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["name", "title", "bio", "we ird: #name"]);
    assert_eq!(t.columns[0].source, "auto", "mixed column");
    assert_eq!(t.columns[1].source, "cp1251", "one encoding: fixed label");
    assert_eq!(
        t.columns[2].source, "auto",
        "UTF-8 rows beside cp1251: detect"
    );
    assert!(text.contains("source: auto   # mostly cp1251, next to utf-8: detect row by row"));
    assert_eq!(t.columns[3].source, "tcvn3");
    assert_eq!(
        t.columns[1].target,
        "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL"
    );
    assert_eq!(
        t.columns[0].target,
        "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
    );
    // Evidence and reasons are comments.
    assert!(text.contains("# myrecode job:"), "{text}");
    assert!(text.contains("myrecode plan --check job.yaml --report scan.json"));
    assert!(
        text.contains("# scan: 1,000 rows (3 NULL, 1 empty); ascii 500, cp1251 300, koi8-r 150, cp866 40, unknown 10; 10 undecided\n        # size: longest after recoding 170 bytes / 90 chars (now 90 bytes, declared varchar(100) latin1)\n"),
        "{text}"
    );
    assert!(text.contains(
        "      # - name: api_token   # pure ASCII (hex tokens): stays latin1, index does not grow"
    ));
    // Without a key but with nothing to recode, the key does not matter.
    assert!(text.contains("  # - name: audit   # not in the job: nothing to recode"));
    assert!(text.contains("  # - name: codes   # not in the job: nothing to recode"));
    assert!(text.contains("several encodings row by row (cp1251, cp866, koi8-r)"));
    assert!(text.contains("undecidable: quarantine   # 10 undecided values wait"));
    // Lines point where the locator says.
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    assert_eq!(
        loaded.locator.line("tables[0].columns[1].source"),
        Some(line_of("source: cp1251"))
    );
}

#[test]
fn a_blocked_column_is_left_out_with_its_reason() {
    const WHY: &str = "index `u_name` would need 1020 bytes for one column under utf8mb4, over the limit of 767 on row format Compact: the copy would fail at its ALTER. Fix: ALTER TABLE `customers` ROW_FORMAT=DYNAMIC, then scan and plan again";
    let mut r = sample_report();
    r.tables[0].columns[1].blocked = Some(WHY.into());
    let text = generate(&r, None, "scan.json").unwrap();
    let job = load_str(&text).unwrap().job;
    let names: Vec<&str> = job.tables[0]
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["name", "bio", "we ird: #name"], "{text}");
    assert!(
        text.contains(&format!(
            "      # - name: title   # left out (stays latin1): {WHY}\n      #   scan: 1,000 rows"
        )),
        "{text}"
    );

    // With every column to recode blocked, the table is out of the job, and says why.
    for c in &mut r.tables[0].columns {
        c.blocked = Some(WHY.into());
    }
    let text = generate(&r, None, "scan.json").unwrap();
    assert!(load_str(&text).unwrap().job.tables.is_empty(), "{text}");
    assert!(
        text.contains(&format!(
            "  # - name: customers   # not in the job: name left out (stays latin1): {WHY}\n  #   would need: name ("
        )),
        "{text}"
    );
}

#[test]
fn a_table_whose_copy_columns_are_blocked_is_rewritten_in_place() {
    let mut r = sample_report();
    let mut mojibake = r.tables[0].columns[0].clone();
    mojibake.name = "note".into();
    mojibake.charset = Some("utf8mb4".into());
    mojibake.strategy = ScanStrategy::InPlace;
    for c in &mut r.tables[0].columns {
        c.blocked = Some("index `k` would overflow".into());
    }
    r.tables[0].columns.push(mojibake);
    let text = generate(&r, None, "scan.json").unwrap();
    let t = &load_str(&text).unwrap().job.tables[0];
    assert_eq!(t.strategy, Strategy::InPlace, "{text}");
    assert_eq!(t.columns.len(), 1);
    assert_eq!(t.columns[0].name, "note");
}

#[test]
fn nothing_to_do_still_loads() {
    let mut r = sample_report();
    r.tables.remove(0);
    let text = generate(&r, None, "scan.json").unwrap();
    assert!(text.contains("tables: []"), "{text}");
    assert!(load_str(&text).unwrap().job.tables.is_empty());
}

#[test]
fn several_schemas_need_a_choice() {
    let mut r = sample_report();
    r.tables[1].schema = "other".into();
    let e = generate(&r, None, "s.json").unwrap_err().to_string();
    assert!(e.contains("--schema"), "{e}");
    let text = generate(&r, Some("other"), "s.json").unwrap();
    assert!(text.contains("schema: other"));
    assert!(generate(&r, Some("nope"), "s.json").is_err());
}

#[test]
fn scalars_read_back_as_written() {
    for s in [
        "name",
        "we ird: #name",
        "yes",
        "123",
        "null",
        "a'b",
        "ENUM('a','b') CHARACTER SET utf8mb4",
        "-x",
        "tab\there",
        "ünï",
        "",
    ] {
        let y = format!("k: {}\n", scalar(s));
        let v: BTreeMap<String, String> =
            serde_yaml::from_str(&y).unwrap_or_else(|e| panic!("{y}: {e}"));
        assert_eq!(v["k"], s, "{y}");
    }
    assert_eq!(thousands(1234567), "1,234,567");
    assert_eq!(thousands(12), "12");
}

/// Three copied tables of `shop`: `users` and `posts` joined by a foreign key on a recoded
/// text column and by a trigger, `tags` on its own.
fn three_copies() -> ScanReport {
    let text = |name: &str| {
        column(
            name,
            &[("cp1251", 12)],
            ScanStrategy::Copy,
            utf8("varchar(100)"),
        )
    };
    let mut users = table("users", true, ScanStrategy::Copy, vec![text("login")]);
    let mut posts = table("posts", true, ScanStrategy::Copy, vec![text("author")]);
    let tags = table("tags", true, ScanStrategy::Copy, vec![text("label")]);
    let fk = crate::inventory::model::ForeignKey {
        name: "fk_post_author".into(),
        direction: "outgoing".into(),
        from_schema: "shop".into(),
        from_table: "posts".into(),
        from_columns: vec!["author".into()],
        to_schema: "shop".into(),
        to_table: "users".into(),
        to_columns: vec!["login".into()],
    };
    posts.foreign_keys = vec![fk.clone()];
    users.foreign_keys = vec![crate::inventory::model::ForeignKey {
        direction: "incoming".into(),
        ..fk
    }];
    users.triggers = vec![crate::inventory::model::Trigger {
        name: "count_posts".into(),
        timing: "AFTER".into(),
        event: "INSERT".into(),
        portable: true,
        tables: vec!["posts".into()],
    }];
    let mut r = sample_report();
    r.tables = vec![users, posts, tags];
    r
}

#[test]
fn several_copies_get_the_groups_explained_and_the_finest_grouping_commented() {
    let text = generate(&three_copies(), None, "scan.json").unwrap();
    // The groups' block, up to the clients' that follows it.
    let block = text
        .split("# Cut-over groups (optional).")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    let block = block
        .split("\n# The application's clients through the switch")
        .next()
        .unwrap_or_default();
    assert!(
        block.contains("Where one lock over everything is too much, name groups"),
        "{block}"
    );
    assert!(
        block.ends_with(
            "# cutover_groups:\n\
             #   - name: group1\n\
             #     tables: [users, posts]   # joined by foreign key `fk_post_author` on text columns, trigger `count_posts`\n\
             #   - name: group2\n\
             #     tables: [tags]\n"
        ),
        "{block}"
    );
    // Commented out: the job as written is one group, and loads as such.
    let job = load_str(&text).unwrap().job;
    assert!(job.cutover_groups.is_empty());
    // Uncommented, the suggested groups load, and the rules accept them.
    let groups: String = block
        .lines()
        .skip_while(|l| !l.starts_with("# cutover_groups:"))
        .map(|l| format!("{}\n", l.trim_start_matches("# ").trim_start_matches('#')))
        .collect();
    let grouped = load_str(&format!("{text}{groups}")).unwrap().job;
    assert_eq!(grouped.cutover_groups.len(), 2);
    // Every table joined to another: one group, the default, and no list to uncomment.
    let mut r = three_copies();
    r.tables.pop();
    let text = generate(&r, None, "scan.json").unwrap();
    assert!(
        text.contains("# Here every copied table is joined to the others (foreign key `fk_post_author` on text columns, trigger `count_posts`): one group, the default."),
        "{text}"
    );
    assert!(!text.contains("# cutover_groups:"));
    // One copied table: nothing to group.
    r.tables.pop();
    assert!(!generate(&r, None, "scan.json")
        .unwrap()
        .contains("Cut-over groups"));
}

#[test]
fn plan_collation_gives_every_utf8mb4_target_the_named_collation_and_refuses_others() {
    let mut report = sample_report();
    with_collation(&mut report, "utf8mb4_unicode_520_ci").unwrap();
    let text = generate(&report, None, "scan.json").unwrap();
    assert!(!text.contains("COLLATE utf8mb4_unicode_ci"), "{text}");
    assert!(text.contains("COLLATE utf8mb4_unicode_520_ci"), "{text}");
    // A kept single-byte column keeps its own.
    assert!(report
        .tables
        .iter()
        .flat_map(|t| &t.columns)
        .any(|c| c.target.collation.as_deref() == Some("latin1_swedish_ci")));
    for bad in [
        "latin1_swedish_ci",
        "utf8mb4_general_ci; DROP TABLE t",
        "UTF8MB4_BIN",
    ] {
        let e = with_collation(&mut sample_report(), bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a utf8mb4 collation. Fix:"), "{e}");
    }
}

#[test]
fn a_column_of_one_decided_label_gets_it_as_its_fallback_and_any_doubt_keeps_quarantine() {
    let mut r = sample_report();
    // Every decided non-ASCII value is cp1251, two are undecided.
    r.tables[0].columns[1] = column(
        "title",
        &[("cp1251", 12), ("ascii", 3), ("unknown", 2)],
        ScanStrategy::Copy,
        utf8("varchar(100)"),
    );
    let text = generate(&r, None, "scan.json").unwrap();
    let job = load_str(&text)
        .unwrap_or_else(|e| panic!("{e:#?}\n{text}"))
        .job;
    let cp1251: crate::detect::Label = "cp1251".parse().unwrap();
    let t = &job.tables[0];
    assert_eq!(
        t.columns[1].undecidable,
        Some(crate::job::model::Undecidable::Use(cp1251)),
        "{text}"
    );
    assert!(text.contains("undecidable: use cp1251   # 2 undecided values read as cp1251"));
    // Several labels (name): doubt, listed for review.
    assert_eq!(
        t.columns[0].undecidable,
        Some(crate::job::model::Undecidable::Quarantine)
    );
    assert!(
        text.contains("undecidable: quarantine   # 10 undecided values wait for `myrecode review`")
    );
}

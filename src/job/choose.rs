//! What `plan` does with each table of a scan report: the strategy and the columns it puts in
//! the job, or why the table stays out, decided by the same refusal rules `plan --check` and
//! `run` apply ([`super::refusal`]).
//!
//! Pure: a [`TableScan`] in, a [`Choice`] out; [`super::plan`] writes it as YAML.

use super::model::{ColumnJob, Defaults, Strategy, TableJob};
use super::refusal::{self, At, Class, Facts, Refusal};
use crate::scan::model::{ColumnScan, Strategy as ScanStrategy, TableScan};

/// Why the table keeps the strategy the scan asks for.
const WHY_IN_PLACE: &str =
    "the column types already hold UTF-8: values are rewritten where they are";
/// Why the table is copied when a column must change type.
const WHY_COPY: &str = "a column changes type: online copy into a shadow table, then cut-over";

/// The planner's decision for one table.
#[derive(Debug, Clone)]
pub struct Choice<'a> {
    /// The strategy, when the table goes into the job.
    pub strategy: Strategy,
    /// Why that strategy, for the comment beside it.
    pub why: String,
    /// The columns that go into the job, in table order.
    pub columns: Vec<&'a ColumnScan>,
    /// Columns left out because a rule refuses them (a key column under copy), with the refusal.
    pub refused: Vec<(&'a ColumnScan, Refusal)>,
    /// Why the table is out of the job, one refusal each; empty when it is in.
    pub out: Vec<Refusal>,
}

impl Choice<'_> {
    /// Whether the table goes into the job.
    pub fn in_job(&self) -> bool {
        self.out.is_empty() && !self.columns.is_empty()
    }

    /// The refusal that left column `name` out, if one did.
    pub fn refused(&self, name: &str) -> Option<&Refusal> {
        self.refused
            .iter()
            .find(|(c, _)| c.name == name)
            .map(|(_, r)| r)
    }
}

/// Whether a column needs recoding and nothing blocks its target (the scan's verdict).
pub fn needs_recoding(c: &ColumnScan) -> bool {
    c.strategy != ScanStrategy::None && c.blocked.is_none()
}

/// The job entry the rules are asked about (they read the name, strategy, key, column names
/// and targets); `tables` are the schema's, which say how a column without legacy text of its
/// own is read ([`super::context`]).
fn table_job(
    t: &TableScan,
    tables: &[&TableScan],
    strategy: Strategy,
    columns: &[&ColumnScan],
) -> TableJob {
    let read = |c: &ColumnScan| super::context::reading(c, t, tables);
    TableJob {
        name: t.name.clone(),
        strategy,
        key: t.key.as_ref().map(|k| k.columns.clone()),
        batch_size: None,
        target_batch_time: None,
        engine: None,
        columns: columns
            .iter()
            .map(|c| ColumnJob {
                name: c.name.clone(),
                source: super::source::planned_source(c, read(c).as_ref())
                    .0
                    .as_str()
                    .into(),
                target: super::scan_target::target_definition_as(
                    c,
                    read(c).as_ref().map(|r| r.label()),
                ),
                undecidable: None,
                redefine: false,
            })
            .collect(),
    }
}

/// Decides `t`: in-place where the types hold UTF-8 and the engine has transactions, else
/// copy; columns a rule refuses are left out one by one, and a table the rules refuse as a
/// whole (or with no column left) is left out with every refusal.
pub fn choose(t: &TableScan) -> Choice<'_> {
    choose_in(t, &[t])
}

/// [`choose`], `t` among the schema's `tables` (which say how its columns without legacy text
/// of their own are read, [`super::context`]).
pub fn choose_in<'a>(t: &'a TableScan, tables: &[&TableScan]) -> Choice<'a> {
    let facts = Facts::of_scan(t);
    // `plan` writes the built-in defaults: the keyless limit is theirs.
    let limit = Defaults::default().keyless_max_rows;
    let mut columns: Vec<&ColumnScan> = t.columns.iter().filter(|c| needs_recoding(c)).collect();
    let mut refused: Vec<(&ColumnScan, Refusal)> = Vec::new();
    // Kept so a table left out later still says why in-place was not an option.
    let mut in_place_refusal: Option<Refusal> = None;
    loop {
        if columns.is_empty() {
            let out = in_place_refusal
                .into_iter()
                .chain(refused.iter().map(|(_, r)| r.clone()))
                .collect();
            return Choice {
                strategy: Strategy::Copy,
                why: String::new(),
                columns,
                refused,
                out,
            };
        }
        let needs_copy = columns.iter().any(|c| c.strategy == ScanStrategy::Copy);
        let mut strategy = if needs_copy {
            Strategy::Copy
        } else {
            Strategy::InPlace
        };
        let mut why = if needs_copy { WHY_COPY } else { WHY_IN_PLACE }.to_string();
        let mut found = refusal::check(&facts, &table_job(t, tables, strategy, &columns), limit);
        if strategy == Strategy::InPlace && refusal::rebuilt_under_lock(&facts, limit) {
            // In place needs a key; the copy rebuilds a small keyless table under the lock.
            strategy = Strategy::Copy;
            found = refusal::check(&facts, &table_job(t, tables, strategy, &columns), limit);
        }
        if strategy == Strategy::Copy && refusal::rebuilt_under_lock(&facts, limit) {
            why = format!(
                "no primary key and no NOT NULL unique key: its {} row(s) are rebuilt under the cut-over's lock (about {}; `keyless_max_rows` bounds it)",
                t.estimated_rows,
                crate::job::pause::pause_words(t.estimated_rows)
            );
        }
        let tj = table_job(t, tables, strategy, &columns);
        let in_key = refusal::recoded_key_columns(&facts, &tj);
        if !in_key.is_empty() && refusal::recoded_key_online(&facts, &tj) {
            let names: Vec<&str> = in_key.iter().map(|(_, n)| *n).collect();
            why = format!(
                "its key holds recoded column(s) {}: copied online, each row found in the new table by its old key read in its legacy charset (rows its new collation would make equal are refused before anything is written)",
                names.join(", ")
            );
        } else if !in_key.is_empty() {
            let names: Vec<&str> = in_key.iter().map(|(_, n)| *n).collect();
            why = format!(
                "its key holds recoded column(s) {}: its {} row(s) are rebuilt under the cut-over's lock (about {}; `keyless_max_rows` bounds it)",
                names.join(", "),
                t.estimated_rows,
                crate::job::pause::pause_words(t.estimated_rows)
            );
        }
        if let Some(r) = found
            .iter()
            .find(|r| r.class == Class::NonTransactionalInPlace)
        {
            // The copy never writes the original, so a kill loses nothing on any engine.
            why = format!(
                "the column types already hold UTF-8, but {}; so copied instead: the copy leaves the original untouched until the cut-over",
                r.reason
            );
            in_place_refusal = Some(r.clone());
            strategy = Strategy::Copy;
            found = refusal::check(&facts, &table_job(t, tables, strategy, &columns), limit);
        }
        if found.iter().any(|r| !matches!(r.at, At::Column(_))) {
            let out = in_place_refusal
                .into_iter()
                .chain(found)
                .chain(refused.iter().map(|(_, r)| r.clone()))
                .collect();
            return Choice {
                strategy,
                why,
                columns,
                refused,
                out,
            };
        }
        if found.is_empty() {
            return Choice {
                strategy,
                why,
                columns,
                refused,
                out: Vec::new(),
            };
        }
        // Leave the refused columns out (last first, so the indexes stay valid) and decide
        // again: without them the table may need another strategy.
        let mut at: Vec<(usize, Refusal)> = found
            .into_iter()
            .filter_map(|r| match r.at {
                At::Column(j) => Some((j, r)),
                _ => None,
            })
            .collect();
        at.sort_by_key(|(j, _)| std::cmp::Reverse(*j));
        for (j, r) in at {
            refused.push((columns.remove(j), r));
        }
        refused.sort_by_key(|(c, _)| t.columns.iter().position(|x| x.name == c.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{ForeignKey, RecodeKey, ServerInfo};
    use crate::job::load::load_str;
    use crate::job::plan::generate;
    use crate::scan::model::{ScanReport, Target};
    use std::collections::BTreeMap;

    /// A column the scan wants recoded: `copy` for latin1 (cp1251 inside), `in-place` for
    /// utf8mb4 (mojibake inside).
    fn column(name: &str, charset: &str) -> ColumnScan {
        let copy = charset != "utf8mb4";
        ColumnScan {
            name: name.into(),
            column_type: "varchar(50)".into(),
            charset: Some(charset.into()),
            collation: Some(format!("{charset}_general_ci")),
            nullable: false,
            definition: Default::default(),
            declared_max_chars: Some(50),
            rows: 10,
            nulls: 0,
            empty: 0,
            labels: BTreeMap::from([(
                if copy { "cp1251" } else { "cp1251>latin1" }.to_string(),
                10,
            )]),
            confidence: BTreeMap::new(),
            examples: BTreeMap::new(),
            undecided: Vec::new(),
            undecided_total: 0,
            serialized: 0,
            serialized_unparsed: 0,
            max_bytes_now: 20,
            max_bytes_after: 40,
            max_chars_after: 20,
            source: Some("cp1251".into()),
            target: Target {
                column_type: "varchar(50)".into(),
                charset: Some("utf8mb4".into()),
                collation: Some("utf8mb4_unicode_ci".into()),
                why: String::new(),
            },
            strategy: if copy {
                ScanStrategy::Copy
            } else {
                ScanStrategy::InPlace
            },
            fits: true,
            risks: Vec::new(),
            blocked: None,
        }
    }

    /// `s.posts` (InnoDB) paged by PRIMARY (code), with these columns.
    fn posts(columns: Vec<ColumnScan>) -> TableScan {
        TableScan {
            schema: "s".into(),
            name: "posts".into(),
            row_format: "Dynamic".into(),
            engine: Some("InnoDB".into()),
            key: Some(RecodeKey {
                index: "PRIMARY".into(),
                columns: vec!["code".into()],
            }),
            estimated_rows: 10,
            rows_scanned: 10,
            strategy: ScanStrategy::Copy,
            columns,
            risks: Vec::new(),
            triggers: Vec::new(),
            foreign_keys: Vec::new(),
        }
    }

    fn plan_of(t: &TableScan) -> (String, crate::job::model::Job) {
        let report = ScanReport {
            schema_version: 1,
            tool_version: "0".into(),
            server: ServerInfo {
                version: "10.11".into(),
                flavor: "MariaDB".into(),
                innodb_page_size: 16384,
                default_row_format: "dynamic".into(),
            },
            mode: "full".into(),
            sample_rows: None,
            objects: Vec::new(),
            clients: Vec::new(),
            tables: vec![t.clone()],
        };
        let text = generate(&report, None, "scan.json").unwrap();
        let job = load_str(&text)
            .unwrap_or_else(|e| panic!("{e:#?}\n{text}"))
            .job;
        (text, job)
    }

    fn classes(c: &Choice) -> Vec<Class> {
        c.out.iter().map(|r| r.class).collect()
    }

    #[test]
    fn a_table_the_rules_allow_goes_in_as_the_scan_says() {
        let t = posts(vec![column("body", "latin1"), column("note", "utf8mb4")]);
        let c = choose(&t);
        assert!(c.in_job() && c.refused.is_empty());
        assert_eq!((c.strategy, c.why.as_str()), (Strategy::Copy, WHY_COPY));
        let t = posts(vec![column("note", "utf8mb4")]);
        assert_eq!(choose(&t).strategy, Strategy::InPlace);
    }

    #[test]
    fn a_table_refused_as_a_whole_is_left_out_with_every_reason() {
        let mut t = posts(vec![column("body", "latin1")]);
        t.key = None;
        t.estimated_rows = 50_000;
        t.foreign_keys = vec![ForeignKey {
            name: "fk_author".into(),
            direction: "outgoing".into(),
            from_schema: "s".into(),
            from_table: "posts".into(),
            from_columns: vec!["author".into()],
            to_schema: "shop".into(),
            to_table: "authors".into(),
            to_columns: vec!["id".into()],
        }];
        let c = choose(&t);
        assert_eq!(classes(&c), [Class::NoUsableKey, Class::ForeignKey]);
        let (text, job) = plan_of(&t);
        assert!(job.tables.is_empty(), "{text}");
        assert!(
            text.contains("# No table can be recoded as it stands; the entries below say why and what to fix.\ntables: []"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "  # - name: posts   # not in the job: {}\n  #   and: {}\n  #   would need: body (10 rows; cp1251 10; 0 undecided)\n",
                c.out[0], c.out[1]
            )),
            "{text}"
        );
        // Without a key and too big to rebuild under the lock, the same: out, with the rule's words.
        let mut t = posts(vec![column("body", "latin1")]);
        t.key = None;
        t.estimated_rows = 50_000;
        let c = choose(&t);
        assert_eq!(classes(&c), [Class::NoUsableKey]);
        let (text, _) = plan_of(&t);
        assert!(text.contains("# - name: posts   # not in the job: table 'posts' has no primary key and no unique key over NOT NULL columns"), "{text}");
        // Small enough: in the job, copied (in place too: it needs a key), with the pause.
        for charset in ["latin1", "utf8mb4"] {
            let mut t = posts(vec![column("body", charset)]);
            t.key = None;
            t.estimated_rows = 2_000;
            let c = choose(&t);
            assert!(c.in_job(), "{charset}: {:?}", c.out);
            assert_eq!(c.strategy, Strategy::Copy);
            let (text, job) = plan_of(&t);
            assert_eq!(job.tables[0].key, None, "{text}");
            assert!(
                text.contains("strategy: copy   # no primary key and no NOT NULL unique key: its 2000 row(s) are rebuilt under the cut-over's lock (about 80 ms of pause"),
                "{text}"
            );
        }
        // A name the side tables cannot sort after.
        let mut t = posts(vec![column("body", "latin1")]);
        t.name = format!("{}ы{}", "a".repeat(42), "b".repeat(9));
        assert_eq!(classes(&choose(&t)), [Class::NameTooLong]);
    }

    #[test]
    fn a_key_column_of_one_label_is_copied_online() {
        let t = posts(vec![column("code", "latin1"), column("body", "latin1")]);
        let c = choose(&t);
        assert!(c.in_job() && c.refused.is_empty(), "{:?}", c.refused);
        let (text, job) = plan_of(&t);
        let names: Vec<&str> = job.tables[0]
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["code", "body"], "{text}");
        assert!(
            text.contains("strategy: copy   # its key holds recoded column(s) code: copied online, each row found in the new table by its old key read in its legacy charset"),
            "{text}"
        );
        assert_eq!(job.tables[0].columns[0].source.to_string(), "cp1251");
    }

    #[test]
    fn a_key_column_detected_row_by_row_is_left_out_of_a_copy_and_the_rest_decided_again() {
        let mut code = column("code", "latin1");
        code.labels.insert("koi8-r".into(), 5);
        let t = posts(vec![
            code.clone(),
            column("body", "latin1"),
            column("note", "utf8mb4"),
        ]);
        let c = choose(&t);
        assert!(c.in_job());
        assert_eq!(c.refused.len(), 1);
        assert_eq!(c.refused[0].1.class, Class::KeyColumnInJob);
        let (text, job) = plan_of(&t);
        let names: Vec<&str> = job.tables[0]
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["body", "note"], "{text}");
        assert!(
            text.contains(&format!(
                "      # - name: code   # left out (stays latin1): {}\n      #   scan: ",
                c.refused[0].1
            )),
            "{text}"
        );
        // Without the key column, nothing needs the copy: in place.
        let t = posts(vec![code.clone(), column("note", "utf8mb4")]);
        let (text, job) = plan_of(&t);
        assert_eq!(job.tables[0].strategy, Strategy::InPlace, "{text}");
        // The key column alone: the table is out, saying why.
        let t = posts(vec![code]);
        let c = choose(&t);
        assert!(!c.in_job());
        assert_eq!(classes(&c), [Class::KeyColumnInJob]);
        let (text, _) = plan_of(&t);
        assert!(
            text.contains(&format!(
                "  # - name: posts   # not in the job: {}\n",
                c.out[0]
            )),
            "{text}"
        );
    }

    #[test]
    fn without_transactions_in_place_becomes_a_copy_unless_the_copy_is_refused_too() {
        let mut t = posts(vec![column("note", "utf8mb4")]);
        t.engine = Some("MyISAM".into());
        let c = choose(&t);
        assert!(c.in_job());
        assert_eq!(c.strategy, Strategy::Copy);
        assert!(c.why.starts_with("the column types already hold UTF-8, but table 'posts' uses the MyISAM engine, which has no transactions"), "{}", c.why);
        let (text, job) = plan_of(&t);
        assert_eq!(job.tables[0].strategy, Strategy::Copy, "{text}");
        assert!(
            text.contains(&format!("    strategy: copy   # {}\n", c.why)),
            "{text}"
        );
        t.foreign_keys = vec![ForeignKey {
            name: "fk_author".into(),
            direction: "outgoing".into(),
            from_schema: "s".into(),
            from_table: "posts".into(),
            from_columns: vec!["author".into()],
            to_schema: "shop".into(),
            to_table: "authors".into(),
            to_columns: vec!["id".into()],
        }];
        let c = choose(&t);
        assert_eq!(
            classes(&c),
            [Class::NonTransactionalInPlace, Class::ForeignKey]
        );
        let (text, job) = plan_of(&t);
        assert!(job.tables.is_empty(), "{text}");
        assert!(
            text.contains(&format!("\n  #   and: {}\n", c.out[1])),
            "{text}"
        );
    }

    #[test]
    fn a_report_without_engines_says_the_rules_on_them_wait_for_the_check() {
        let mut t = posts(vec![column("note", "utf8mb4")]);
        t.engine = None;
        let (text, job) = plan_of(&t);
        assert_eq!(job.tables[0].strategy, Strategy::InPlace);
        assert!(
            text.contains(
                "# Note: scan.json was written by an older myrecode and does not record engines"
            ),
            "{text}"
        );
        let old: TableScan = serde_json::from_str(
            &serde_json::to_string(&t)
                .unwrap()
                .replace(",\"triggers\":[],\"foreign_keys\":[]", ""),
        )
        .unwrap();
        assert!(old.triggers.is_empty() && old.engine.is_none());
    }
}

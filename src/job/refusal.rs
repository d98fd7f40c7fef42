//! The rules that refuse a table, in one place: `plan` leaves a refused table out of the job,
//! `plan --check` reports it, the rehearsal prints it, and `run --execute` stops on it before
//! its first write, all with the same words.
//!
//! Pure: the rules read [`Facts`], taken from the inventory ([`Facts::of_table`], what
//! `plan --check` and `run` see live) or from a scan report ([`Facts::of_scan`], what `plan`
//! works from offline), and the job's entry for the table.

use super::finding::Finding;
use super::model::{Strategy, TableJob};
use crate::bookkeeping::names;
use crate::bookkeeping::names::sorts_after;
use crate::db::charset::normalize_charset;
use crate::db::quote;
use crate::inventory::model::{Definition, ForeignKey, RecodeKey, Table, Trigger};
use crate::scan::model::TableScan;
use std::fmt;

/// The only engine whose writes commit in one transaction with myrecode's own bookkeeping
/// tables (backup, quarantine, checkpoint), which are InnoDB.
const TRANSACTIONAL_ENGINE: &str = "InnoDB";

/// Why a table (or one of its job columns) cannot be recoded as the job says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Copy: a foreign key to or from a table in another schema.
    ForeignKey,
    /// Copy: a foreign key joins text columns that would end up in different character sets.
    ForeignKeyCharsetSplit,
    /// Copy: a foreign key joins text columns recoded on both sides by two cut-over groups.
    ForeignKeyAcrossGroups,
    /// Copy: a trigger of a table of one cut-over group names a table of another.
    TriggerAcrossGroups,
    /// No primary key and no unique key over NOT NULL columns to page over (in place), or too
    /// many rows to rebuild under the cut-over's lock (copy).
    NoUsableKey,
    /// `engine:` in the job where the copy cannot honour it.
    EngineOption,
    /// The job's `key:` is not the key batches page over.
    KeyMismatch,
    /// Copy: a job column is part of the paging key, and the table too large to rebuild
    /// under the cut-over's lock, or the column's `source:` not a fixed label.
    KeyColumnInJob,
    /// Copy: rows that become equal on a unique key once recoded (found by a live query).
    KeyCollision,
    /// Copy: the side tables' names cannot sort after the table's.
    NameTooLong,
    /// In place on an engine without transactions (MyISAM, Aria, MEMORY, ...).
    NonTransactionalInPlace,
    /// In place on a column whose type cannot hold UTF-8.
    InPlaceCannotHoldUtf8,
    /// Copy: a target changes the column beyond charset, collation and widening, unsaid.
    TargetRedefines,
    /// Copy: a job column is generated (the server computes it).
    GeneratedInJob,
}

/// Which field of the job's table entry a refusal points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// `tables[i].name`: the table as a whole.
    Name,
    /// `tables[i].strategy`.
    Strategy,
    /// `tables[i].key`.
    Key,
    /// `tables[i].engine`.
    Engine,
    /// `tables[i].columns[j].name`: one job column.
    Column(usize),
}

/// One refusal: its class, where in the job entry, the reason and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What kind of refusal.
    pub class: Class,
    /// The field of the table's job entry it points at.
    pub at: At,
    /// Why, naming the table and the column, trigger or constraint; no final period.
    pub reason: String,
    /// What to do instead; no final period.
    pub fix: String,
}

impl Refusal {
    /// The field path for the table at `table_path` (`tables[2]`), e.g. `tables[2].strategy`.
    pub fn path(&self, table_path: &str) -> String {
        match self.at {
            At::Name => format!("{table_path}.name"),
            At::Strategy => format!("{table_path}.strategy"),
            At::Key => format!("{table_path}.key"),
            At::Engine => format!("{table_path}.engine"),
            At::Column(j) => format!("{table_path}.columns[{j}].name"),
        }
    }

    /// The refusal as a `plan --check` finding for the table at `table_path`.
    pub fn finding(&self, table_path: &str) -> Finding {
        Finding::new(self.path(table_path), &self.reason, &self.fix)
    }
}

impl fmt::Display for Refusal {
    /// `reason. Fix: fix`, the one sentence every caller prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}. Fix: {}", self.reason, self.fix)
    }
}

/// The tables of a job that `run --execute` refuses, found before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Each refused table's name with its refusals, in job order.
    pub tables: Vec<(String, Vec<Refusal>)>,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} table(s) of the job refused; nothing was written",
            self.tables.len()
        )?;
        for (table, refusals) in &self.tables {
            for r in refusals {
                write!(f, "\n  {table}: {r}")?;
            }
        }
        write!(
            f,
            "\nFix the job or the tables as each line says (`myrecode plan --check` lists the same), then run again"
        )
    }
}

impl std::error::Error for Refused {}

/// One column as the rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnFacts<'a> {
    /// Column name.
    pub name: &'a str,
    /// `COLUMN_TYPE`, e.g. `varchar(100)`.
    pub column_type: &'a str,
    /// Character set; `None` for binary columns.
    pub charset: Option<&'a str>,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// DEFAULT, COMMENT, generation and the rest.
    pub definition: &'a Definition,
}

/// What the rules need to know about a table.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    /// Schema name.
    pub schema: &'a str,
    /// Table name.
    pub name: &'a str,
    /// Storage engine; `None` when the source did not record it (a report from an older myrecode).
    pub engine: Option<&'a str>,
    /// The key batches page over, if the table has one.
    pub recode_key: Option<&'a RecodeKey>,
    /// Rows: the server's estimate, or an exact count where one was taken (a keyless table).
    pub rows: u64,
    /// Triggers on the table (a running copy's own are told apart by name).
    pub triggers: &'a [Trigger],
    /// Foreign keys from the table and to it.
    pub foreign_keys: &'a [ForeignKey],
    /// Text and binary columns.
    pub columns: Vec<ColumnFacts<'a>>,
}

impl<'a> Facts<'a> {
    /// The facts of an inventoried table (the live schema).
    pub fn of_table(t: &'a Table) -> Self {
        Facts {
            schema: &t.schema,
            name: &t.name,
            engine: Some(&t.engine),
            recode_key: t.recode_key.as_ref(),
            rows: t.estimated_rows,
            triggers: &t.triggers,
            foreign_keys: &t.foreign_keys,
            columns: t
                .columns
                .iter()
                .map(|c| ColumnFacts {
                    name: &c.name,
                    column_type: &c.column_type,
                    charset: c.charset.as_deref(),
                    nullable: c.nullable,
                    definition: &c.definition,
                })
                .collect(),
        }
    }

    /// The facts a scan report recorded for a table.
    pub fn of_scan(t: &'a TableScan) -> Self {
        Facts {
            schema: &t.schema,
            name: &t.name,
            engine: t.engine.as_deref(),
            recode_key: t.key.as_ref(),
            rows: t.estimated_rows,
            triggers: &t.triggers,
            foreign_keys: &t.foreign_keys,
            columns: t
                .columns
                .iter()
                .map(|c| ColumnFacts {
                    name: &c.name,
                    column_type: &c.column_type,
                    charset: c.charset.as_deref(),
                    nullable: c.nullable,
                    definition: &c.definition,
                })
                .collect(),
        }
    }
}

/// Whether a column with this charset can hold UTF-8 as it is (UTF-8 charsets; `None` is binary).
pub fn holds_utf8(charset: Option<&str>) -> bool {
    charset.is_none_or(|cs| matches!(normalize_charset(cs).as_str(), "utf8mb4" | "utf8mb3"))
}

/// Every refusal of the live table `table` for its job entry `job`; `keyless_max_rows`: the
/// job's limit on a keyless table rebuilt under the cut-over's lock.
pub fn refusals(table: &Table, job: &TableJob, keyless_max_rows: u64) -> Vec<Refusal> {
    check(&Facts::of_table(table), job, keyless_max_rows)
}

/// Every refusal of a table with these facts for its job entry `job`, table-wide ones first.
pub fn check(t: &Facts, job: &TableJob, keyless_max_rows: u64) -> Vec<Refusal> {
    let mut out = Vec::new();
    no_usable_key(t, job.strategy, keyless_max_rows, &mut out);
    key_mismatch(t, job, &mut out);
    engine_option(job, &mut out);
    match job.strategy {
        Strategy::Copy => {
            foreign_keys_across_schemas(t, &mut out);
            name_too_long(t, &mut out);
            key_columns_in_job(t, job, keyless_max_rows, &mut out);
            definition::target_redefines(t, job, &mut out);
        }
        Strategy::InPlace => {
            non_transactional(t, &mut out);
            cannot_hold_utf8(t, job, &mut out);
        }
    }
    out
}

/// Whether a table without a usable key, of `rows` rows, may be rebuilt under the cut-over's lock.
pub fn rebuilt_under_lock(t: &Facts, keyless_max_rows: u64) -> bool {
    t.recode_key.is_none() && t.rows <= keyless_max_rows
}

/// The job columns of a copy that are part of the table's paging key: their values change,
/// so the shadow finds a row by the original's key read in its legacy charset (online, where
/// the server has that charset: [`recoded_key_online`]), or the table is rebuilt under the
/// cut-over's lock (see [`key_columns_in_job`]).
pub fn recoded_key_columns<'j>(t: &Facts, job: &'j TableJob) -> Vec<(usize, &'j str)> {
    let Some(key) = t.recode_key else {
        return Vec::new();
    };
    if job.strategy != Strategy::Copy {
        return Vec::new();
    }
    (job.columns.iter().enumerate())
        .filter(|(_, c)| key.columns.contains(&c.name))
        .map(|(j, c)| (j, c.name.as_str()))
        .collect()
}

/// Whether a copy whose key holds recoded columns copies online, batch by batch: every such
/// column has a fixed `source:` whose label the server reads too (cp1251, KOI8-R, KOI8-U,
/// CP866), so the shadow's key follows from the original's bytes by the server's own
/// conversion. Otherwise (TCVN3, ISO-8859-5) the table is rebuilt under the cut-over's lock.
pub fn recoded_key_online(t: &Facts, job: &TableJob) -> bool {
    let in_key = recoded_key_columns(t, job);
    !in_key.is_empty()
        && in_key.iter().all(|(j, _)| {
            (job.columns[*j].source.fixed()).is_some_and(|l| l.server_charset().is_some())
        })
}

fn no_usable_key(t: &Facts, strategy: Strategy, keyless_max_rows: u64, out: &mut Vec<Refusal>) {
    if t.recode_key.is_some() {
        return;
    }
    let add_key = format!(
        "add a primary key (ALTER TABLE {} ADD PRIMARY KEY (...)) or a unique key over NOT NULL columns",
        quote::table(t.schema, t.name)
    );
    let (reason, fix) = match strategy {
        Strategy::InPlace => (
            format!(
                "table '{}' has no primary key and no unique key over NOT NULL columns, so in-place batches cannot page over it",
                t.name
            ),
            if t.rows <= keyless_max_rows {
                format!("write `strategy: copy` (a table of at most `keyless_max_rows` rows is rebuilt under the cut-over's lock, about {} here), or {add_key}", crate::job::pause::pause_words(t.rows))
            } else {
                format!("{add_key}, or leave the table out of the job")
            },
        ),
        Strategy::Copy if t.rows > keyless_max_rows => (
            format!(
                "table '{}' has no primary key and no unique key over NOT NULL columns, so batches cannot page over it, and about {} rows are more than `keyless_max_rows` ({keyless_max_rows}) to rebuild under the cut-over's lock (about {})",
                t.name,
                t.rows,
                crate::job::pause::pause_words(t.rows)
            ),
            format!(
                "{add_key}, so it is copied online in batches; or raise `keyless_max_rows` above {} if that pause is acceptable; or leave the table out of the job",
                t.rows
            ),
        ),
        Strategy::Copy => return,
    };
    out.push(Refusal {
        class: Class::NoUsableKey,
        at: At::Name,
        reason,
        fix,
    });
}

fn engine_option(job: &TableJob, out: &mut Vec<Refusal>) {
    let Some(engine) = &job.engine else { return };
    let reason = if job.strategy != Strategy::Copy {
        format!(
            "`engine: {engine}` on table '{}': only the copy strategy builds a new table, so only it can change the engine",
            job.name
        )
    } else if !engine.eq_ignore_ascii_case(TRANSACTIONAL_ENGINE) {
        format!(
            "`engine: {engine}` on table '{}': the copy converts to InnoDB only",
            job.name
        )
    } else {
        return;
    };
    out.push(Refusal {
        class: Class::EngineOption,
        at: At::Engine,
        reason,
        fix: "write `engine: InnoDB` with `strategy: copy`, or remove `engine:`".into(),
    });
}

fn key_mismatch(t: &Facts, job: &TableJob, out: &mut Vec<Refusal>) {
    let (Some(key), Some(wanted)) = (t.recode_key, &job.key) else {
        return;
    };
    if *wanted != key.columns {
        out.push(Refusal {
            class: Class::KeyMismatch,
            at: At::Key,
            reason: format!(
                "key ({}) in the job is not the key batches page over: {} ({})",
                wanted.join(", "),
                key.index,
                key.columns.join(", ")
            ),
            fix: format!(
                "write `key: [{}]`, or remove `key:`",
                key.columns
                    .iter()
                    .map(|c| super::yaml_scalar::flow(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
}

fn foreign_keys_across_schemas(t: &Facts, out: &mut Vec<Refusal>) {
    let mut shown: Vec<String> = Vec::new();
    for fk in t.foreign_keys {
        if fk.from_schema == fk.to_schema {
            continue;
        }
        let s = format!(
            "{} ({}.{} -> {}.{})",
            quote::ident(&fk.name),
            fk.from_schema,
            fk.from_table,
            fk.to_schema,
            fk.to_table
        );
        if !shown.contains(&s) {
            shown.push(s);
        }
    }
    if shown.is_empty() {
        return;
    }
    out.push(Refusal {
        class: Class::ForeignKey,
        at: At::Name,
        reason: format!(
            "table '{}' is in foreign key {} across schemas: the one cut-over moves the constraints of one schema",
            t.name,
            shown.join(", ")
        ),
        fix: "drop the foreign key for the job and add it back after the cut-over, or recode with an offline ALTER TABLE in a maintenance window".into(),
    });
}

/// The character set a column ends up in: its target's for a column of a copied table in
/// the job, its own otherwise; `None` for a column that is not text.
fn charset_after(job: Option<&TableJob>, column: &str, now: Option<&str>) -> Option<String> {
    let now = now.map(normalize_charset);
    let Some(cj) = job
        .filter(|j| j.strategy == Strategy::Copy)
        .and_then(|j| j.columns.iter().find(|c| c.name == column))
    else {
        return now;
    };
    match super::target::parse(&cj.target) {
        Ok(def) if def.is_binary() => None,
        Ok(def) => def.charset.map(|c| normalize_charset(&c)).or(now),
        Err(_) => now,
    }
}

/// Foreign keys joining text columns that the job leaves in different character sets (one
/// side recoded, the other not, or both to different sets): the server cannot keep such a
/// constraint, so the job is refused before it writes. `all` is every table entry of the job.
pub fn foreign_key_splits(t: &Facts, job: &TableJob, all: &[TableJob]) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for fk in t.foreign_keys {
        if fk.from_schema != fk.to_schema || seen.contains(&fk.name) {
            continue;
        }
        let outgoing = fk.from_schema == t.schema && fk.from_table == t.name;
        let other = if outgoing {
            &fk.to_table
        } else {
            &fk.from_table
        };
        let other_job = all.iter().find(|j| &j.name == other);
        for (from, to) in fk.from_columns.iter().zip(&fk.to_columns) {
            let (mine, theirs) = if outgoing { (from, to) } else { (to, from) };
            // The constraint holds today: both sides share this column's character set.
            let now = t
                .columns
                .iter()
                .find(|c| c.name == mine.as_str())
                .and_then(|c| c.charset);
            if now.is_none() {
                continue;
            }
            let here = charset_after(Some(job), mine, now);
            let there = charset_after(other_job, theirs, now);
            if here != there {
                seen.push(fk.name.clone());
                let side = |table: &str, col: &str, cs: &Option<String>| {
                    format!("{table}.{col} ({})", cs.as_deref().unwrap_or("binary"))
                };
                out.push(Refusal {
                    class: Class::ForeignKeyCharsetSplit,
                    at: At::Name,
                    reason: format!(
                        "foreign key {} would join {} to {} after the cut-over: the server keeps no constraint between text columns of different character sets",
                        quote::ident(&fk.name),
                        side(t.name, mine, &here),
                        side(other, theirs, &there)
                    ),
                    fix: format!(
                        "recode both columns in this job with targets of the same character set (add {other}.{theirs} with `strategy: copy`), or leave both out"
                    ),
                });
                break;
            }
        }
    }
    out
}

fn name_too_long(t: &Facts, out: &mut Vec<Refusal>) {
    let n = names::names(t.name);
    let side = [n.shadow, n.old]
        .into_iter()
        .find(|side| !sorts_after(t.name, side));
    if let Some(side) = side {
        out.push(Refusal {
            class: Class::NameTooLong,
            at: At::Name,
            reason: format!(
                "table '{}': its name is too long for the copy's side tables to sort after it ({side}), which the atomic cut-over needs",
                t.name
            ),
            fix: "rename the table to at most 51 characters for the job".into(),
        });
    }
}

/// A key column in a copy's job is recoded online where the server reads its label
/// ([`recoded_key_online`]), else by rebuilding the table under the cut-over's lock, where
/// each distinct value is decided once (the same bytes, the same new key). Refused when the
/// column's `source:` is `auto` (a key's new value must follow from its bytes and the one
/// label, not from a per-value guess), or when a table to rebuild has more rows than
/// `keyless_max_rows` (the pause of that rebuild).
fn key_columns_in_job(t: &Facts, job: &TableJob, keyless_max_rows: u64, out: &mut Vec<Refusal>) {
    let Some(key) = t.recode_key else { return };
    let online = recoded_key_online(t, job);
    for (j, name) in recoded_key_columns(t, job) {
        let cj = &job.columns[j];
        let (reason, fix) = if cj.source.fixed().is_none() {
            (
                format!(
                    "column '{name}' of table '{}' is part of its key ({}) and its `source: {}` decides each value by itself: a recoded key must follow from its bytes under one label, the same every time",
                    t.name, key.index, cj.source
                ),
                "write the label the scan found as its `source:` (`source: cp1251`, say), or leave this column out of the job".to_string(),
            )
        } else if !online && t.rows > keyless_max_rows {
            (
                format!(
                    "column '{name}' of table '{}' is part of its key ({}) and its `source: {}` has no charset on the server: such a table is rebuilt under the cut-over's lock, and about {} rows are more than `keyless_max_rows` ({keyless_max_rows}) (about {})",
                    t.name,
                    key.index,
                    cj.source,
                    t.rows,
                    crate::job::pause::pause_words(t.rows)
                ),
                format!(
                    "raise `keyless_max_rows` above {} if that pause is acceptable; or give the table a surrogate primary key; or leave this column out of the job",
                    t.rows
                ),
            )
        } else {
            continue;
        };
        out.push(Refusal {
            class: Class::KeyColumnInJob,
            at: At::Column(j),
            reason,
            fix,
        });
    }
}

fn non_transactional(t: &Facts, out: &mut Vec<Refusal>) {
    // A report from an older myrecode does not say; `plan --check` and `run` see the live engine.
    let Some(engine) = t.engine else { return };
    if engine.eq_ignore_ascii_case(TRANSACTIONAL_ENGINE) {
        return;
    }
    let shown = if engine.is_empty() {
        "an engine the server does not name".to_string()
    } else {
        format!("the {engine} engine")
    };
    out.push(Refusal {
        class: Class::NonTransactionalInPlace,
        at: At::Strategy,
        reason: format!(
            "table '{}' uses {shown}, which has no transactions: in place, a kill mid-batch would keep rewritten values and lose their backups",
            t.name
        ),
        fix: format!(
            "set `strategy: copy` (the original stays untouched until the cut-over), or convert the table first (ALTER TABLE {} ENGINE=InnoDB)",
            quote::table(t.schema, t.name)
        ),
    });
}

fn cannot_hold_utf8(t: &Facts, job: &TableJob, out: &mut Vec<Refusal>) {
    for c in &job.columns {
        // An unknown column is the job's mistake, reported as such by its callers.
        let Some(col) = t.columns.iter().find(|x| x.name == c.name) else {
            continue;
        };
        if !holds_utf8(col.charset) {
            out.push(Refusal {
                class: Class::InPlaceCannotHoldUtf8,
                at: At::Strategy,
                reason: format!(
                    "in-place cannot work for column '{}' of table '{}': it is {} {}, which cannot hold UTF-8",
                    col.name,
                    t.name,
                    col.column_type,
                    col.charset.unwrap_or("binary")
                ),
                fix: "set `strategy: copy` (it changes the column to its target type online)"
                    .into(),
            });
        }
    }
}

mod definition;
mod groups;
pub use groups::group_splits;

#[cfg(test)]
mod tests;

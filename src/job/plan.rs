//! Writes a commented job from a scan report: one entry per table and column that needs
//! recoding, and the rest listed commented out with the reason.
//!
//! serde_yaml cannot write comments, so the text is built here; a test proves it loads back.

use super::choose::{choose_in, Choice};
use super::context::reading;
use super::labels;
use super::model::{Defaults, Strategy};
use super::scan_target::{target_definition_as, target_sql_as};
use super::source::planned_source;
use super::yaml_scalar::comment_safe;
use super::yaml_scalar::{flow, scalar};
use crate::scan::model::{ColumnScan, ScanReport, Strategy as ScanStrategy, TableScan};
use anyhow::{bail, Result};
use std::fmt::Write;

/// Renders the job for `report`'s tables in `schema` (needed only when the report covers several).
pub fn generate(report: &ScanReport, schema: Option<&str>, report_name: &str) -> Result<String> {
    let mut schemas: Vec<&str> = report.tables.iter().map(|t| t.schema.as_str()).collect();
    schemas.sort();
    schemas.dedup();
    let schema = match (schema, schemas.as_slice()) {
        (Some(s), _) if schemas.contains(&s) => s.to_string(),
        (Some(s), _) => bail!(
            "the report has no tables of schema '{s}'. Fix: pass one of: {}",
            schemas.join(", ")
        ),
        (None, [one]) => one.to_string(),
        (None, []) => bail!(
            "the report holds no tables. Fix: scan a schema with tables first (myrecode scan --json scan.json)"
        ),
        (None, many) => bail!(
            "the report covers several schemas ({}) and a job covers one. Fix: pass --schema NAME",
            many.join(", ")
        ),
    };
    let tables: Vec<&TableScan> = report
        .tables
        .iter()
        .filter(|t| t.schema == schema)
        .collect();
    let mut o = String::new();
    header(&mut o, report, &schema, report_name);
    if tables.iter().any(|t| t.engine.is_none()) {
        let _ = writeln!(
            o,
            "# Note: {} was written by an older myrecode and does not record engines, triggers\n\
             # or foreign keys, so the rules on them could not be applied here: `plan --check`\n\
             # applies them against the live schema (or scan again to have them here).\n",
            comment_safe(report_name)
        );
    }
    let _ = writeln!(o, "version: 1");
    let _ = writeln!(o, "schema: {}", scalar(&schema));
    o.push('\n');
    defaults(&mut o, &Defaults::default());
    o.push('\n');
    let choices: Vec<Choice> = tables.iter().map(|t| choose_in(t, &tables)).collect();
    if !choices.iter().any(Choice::in_job) {
        let _ = writeln!(
            o,
            "{}",
            if choices.iter().any(|c| !c.out.is_empty()) {
                "# No table can be recoded as it stands; the entries below say why and what to fix."
            } else {
                "# Nothing in this schema needs recoding; the entries below say why."
            }
        );
        let _ = writeln!(o, "tables: []");
    } else {
        let _ = writeln!(o, "tables:");
    }
    for (i, (t, choice)) in tables.iter().zip(&choices).enumerate() {
        if i > 0 {
            o.push('\n');
        }
        if choice.in_job() {
            active_table(&mut o, t, choice, &tables);
        } else {
            inactive_table(&mut o, t, choice);
        }
    }
    let copied: Vec<(&TableScan, &Choice)> = tables
        .iter()
        .zip(&choices)
        .filter(|(_, c)| c.in_job() && c.strategy == Strategy::Copy)
        .map(|(t, c)| (*t, c))
        .collect();
    if copied.len() > 1 {
        o.push('\n');
        groups_block(&mut o, &copied);
    }
    if !copied.is_empty() {
        objects_block(&mut o, report, &schema);
        let columns: Vec<&ColumnScan> = copied
            .iter()
            .flat_map(|(_, c)| c.columns.iter().copied())
            .collect();
        o.push('\n');
        super::plan_clients::clients_block(&mut o, report, &schema, &columns);
    }
    Ok(o)
}

/// Gives every utf8mb4 target of `report` the collation `name` (`plan --collation`), in place
/// of the one closest in meaning to each column's old collation.
pub fn with_collation(report: &mut ScanReport, name: &str) -> Result<()> {
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !plain || !name.starts_with("utf8mb4_") {
        bail!(
            "--collation {name:?} is not a utf8mb4 collation. Fix: name one the server lists (SHOW COLLATION LIKE 'utf8mb4%'), e.g. utf8mb4_unicode_ci"
        );
    }
    for c in report.tables.iter_mut().flat_map(|t| t.columns.iter_mut()) {
        if c.target.charset.as_deref() == Some("utf8mb4") {
            c.target.collation = Some(name.to_string());
        }
    }
    Ok(())
}

/// The schema's views, routines and events the cut-over recreates in UTF-8, with what
/// changes in each, as comments: nothing to edit, but a reviewer sees them.
fn objects_block(o: &mut String, report: &ScanReport, schema: &str) {
    let mine: Vec<_> = report
        .objects
        .iter()
        .filter(|x| x.schema == schema)
        .collect();
    if mine.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\n# Views, routines and events holding legacy text: recreated in UTF-8 right after the\n\
         # last cut-over (definer, SQL SECURITY, sql_mode and schedule kept; `plan --check` and\n\
         # the rehearsal try each first):"
    );
    for x in mine {
        let what = match &x.problem {
            Some(p) => format!("cannot be recreated: {p}"),
            None => x.changes.join("; "),
        };
        let _ = writeln!(
            o,
            "#   {} {}: {}",
            x.kind.to_lowercase(),
            comment_safe(&x.name),
            comment_safe(&what)
        );
    }
}

/// What joins two copied tables so they must share a cut-over group: `(a, b, why)` for a
/// foreign key with a job column on a text column pair, and for a trigger of one naming the other.
fn group_links<'a>(copied: &[(&'a TableScan, &Choice)]) -> Vec<(&'a str, &'a str, String)> {
    let in_job = |name: &str| copied.iter().any(|(t, _)| t.name == name);
    let mut out: Vec<(&'a str, &'a str, String)> = Vec::new();
    for (t, choice) in copied {
        for fk in &t.foreign_keys {
            let outgoing = fk.from_table == t.name;
            let other = if outgoing {
                &fk.to_table
            } else {
                &fk.from_table
            };
            let mine = if outgoing {
                &fk.from_columns
            } else {
                &fk.to_columns
            };
            let text = mine.iter().any(|c| {
                choice
                    .columns
                    .iter()
                    .any(|j| &j.name == c && j.charset.is_some())
            });
            if fk.from_schema == fk.to_schema && other != &t.name && in_job(other) && text {
                let why = format!("foreign key `{}` on text columns", fk.name);
                if !out.iter().any(|(_, _, w)| *w == why) {
                    out.push((t.name.as_str(), other.as_str(), why));
                }
            }
        }
        for trg in t
            .triggers
            .iter()
            .filter(|x| !crate::bookkeeping::names::is_copy_trigger(&x.name))
        {
            for u in trg.tables.iter().filter(|u| in_job(u)) {
                out.push((
                    t.name.as_str(),
                    u.as_str(),
                    format!("trigger `{}`", trg.name),
                ));
            }
        }
    }
    out
}

/// The commented `cutover_groups:` block for a job of several copied tables: what groups
/// are for, and the finest grouping the rules allow.
fn groups_block(o: &mut String, copied: &[(&TableScan, &Choice)]) {
    let _ = writeln!(
        o,
        "\
# Cut-over groups (optional). As written, every copied table above is swapped at one
# instant, behind one lock over all of them, and the application switches its connection
# to utf8mb4 at that instant. Where one lock over everything is too much, name groups:
# each is swapped at an instant of its own, in the order listed (with `cutover: manual`,
# `myrecode cutover job.yaml --group NAME` says when), and the application switches for
# that group's tables at its instant. Tables joined by a foreign key on text columns, or
# by a trigger, must share a group (`plan --check` and `run` refuse a split)."
    );
    let names: Vec<&str> = copied.iter().map(|(t, _)| t.name.as_str()).collect();
    let links = group_links(copied);
    let pairs: Vec<(&str, &str)> = links.iter().map(|(a, b, _)| (*a, *b)).collect();
    let parts = super::groups::components(&names, &pairs);
    if parts.len() < 2 {
        let why: Vec<&str> = links.iter().map(|(_, _, w)| w.as_str()).collect();
        let _ = writeln!(
            o,
            "# Here every copied table is joined to the others ({}): one group, the default.",
            comment_safe(&why.join(", "))
        );
        return;
    }
    let _ = writeln!(
        o,
        "# The finest grouping that keeps them together (name and order them as the\n# application's switch-over needs):\n#\n# cutover_groups:"
    );
    for (i, part) in parts.iter().enumerate() {
        let why: Vec<&str> = links
            .iter()
            .filter(|(a, _, _)| part.contains(a))
            .map(|(_, _, w)| w.as_str())
            .collect();
        let _ = writeln!(o, "#   - name: group{}", i + 1);
        let list = format!(
            "#     tables: [{}]",
            part.iter().map(|t| flow(t)).collect::<Vec<_>>().join(", ")
        );
        if why.is_empty() {
            let _ = writeln!(o, "{list}");
        } else {
            let _ = writeln!(o, "{list}   # joined by {}", comment_safe(&why.join(", ")));
        }
    }
}

/// The comment for a column that needs recoding but is left out, with the scan's reason.
fn left_out(c: &ColumnScan, why: &str) -> String {
    format!(
        "left out (stays {}): {why}",
        c.charset.as_deref().unwrap_or("binary")
    )
}

fn header(o: &mut String, r: &ScanReport, schema: &str, report_name: &str) {
    let sample = match r.sample_rows {
        Some(n) if r.mode == "sample" => format!(" (sample of {} rows per table)", thousands(n)),
        _ => String::new(),
    };
    let _ = write!(
        o,
        "\
# myrecode job: recode the legacy-encoded text of schema `{schema}` to UTF-8.
#
# Written by `myrecode plan` {tool} from {report_name}: a {mode} scan{sample} of {server}.
# One entry per table and column to recode; columns and tables that need nothing are
# listed commented out, with why. Review and edit it (every key is explained in
# config/example-job.yaml; unknown keys are errors), then check it against the live schema:
#
#   myrecode plan --check job.yaml --report {report_name} --url mysql://user@host:3306/{schema}
#
# and rehearse it (nothing is written without --execute):
#
#   myrecode run job.yaml --url mysql://user@host:3306/{schema}
#
# Values the detector cannot decide are never guessed: they stay as they are and their
# keys go to the quarantine table (`undecidable: quarantine`).

",
        schema = comment_safe(schema),
        tool = r.tool_version,
        report_name = comment_safe(report_name),
        mode = r.mode,
        server = if r.server.version.contains(&r.server.flavor) {
            r.server.version.clone()
        } else {
            format!("{} {}", r.server.flavor, r.server.version)
        },
    );
}

fn defaults(o: &mut String, d: &Defaults) {
    let replicas = if d.replicas.is_empty() {
        "[]".to_string()
    } else {
        format!(
            "[{}]",
            d.replicas
                .iter()
                .map(|r| flow(r))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let cutover = match d.cutover {
        super::model::Cutover::Auto => "auto",
        super::model::Cutover::Manual => "manual",
    };
    let rows: [(&str, String, &str); 10] = [
        (
            "batch_size",
            d.batch_size.to_string(),
            "rows per batch to start with; tuned toward target_batch_time",
        ),
        (
            "target_batch_time",
            d.target_batch_time.to_string(),
            "one batch (read, recode, write, checkpoint) should take this long",
        ),
        (
            "pause_between_batches",
            d.pause_between_batches.to_string(),
            "sleep between batches so the application gets its turn",
        ),
        (
            "max_threads_running",
            d.max_threads_running.to_string(),
            "throttle while the server's Threads_running is above this",
        ),
        (
            "max_replica_lag",
            d.max_replica_lag.to_string(),
            "throttle while a replica lags more than this (heartbeat, ms)",
        ),
        (
            "max_replica_down",
            d.max_replica_down.to_string(),
            "stop (resumably) once a replica is stopped or unreachable this long",
        ),
        (
            "replicas",
            replicas,
            "replicas to watch besides those found: mysql://user@host:port or host:port",
        ),
        (
            "undecidable",
            "quarantine".to_string(),
            "left untouched, keys listed in _myrecode_quarantine",
        ),
        (
            "cutover",
            cutover.to_string(),
            "copy: `manual` waits for `myrecode cutover`; `auto` swaps when caught up",
        ),
        (
            "keyless_max_rows",
            d.keyless_max_rows.to_string(),
            "copy: a table without a key is rebuilt under the cut-over's lock up to this many rows",
        ),
    ];
    let _ = writeln!(
        o,
        "# Batch and throttle settings for every table (a table may override batch_size and\n# target_batch_time).\ndefaults:"
    );
    for (k, v, why) in rows {
        let kv = format!("  {k}: {v}");
        let _ = writeln!(o, "{kv:<34}# {why}");
    }
}

fn active_table(o: &mut String, t: &TableScan, choice: &Choice, tables: &[&TableScan]) {
    let _ = writeln!(o, "  - name: {}", scalar(&t.name));
    let _ = writeln!(
        o,
        "    # {} rows scanned of about {}; row format {}",
        thousands(t.rows_scanned),
        thousands(t.estimated_rows),
        comment_safe(&t.row_format)
    );
    for r in &t.risks {
        let _ = writeln!(o, "    # risk: {}", comment_safe(r));
    }
    let _ = writeln!(
        o,
        "    strategy: {}   # {}",
        choice.strategy.as_str(),
        comment_safe(&choice.why)
    );
    // Only a table rebuilt whole under the cut-over's lock is in the job without a key.
    if let Some(key) = &t.key {
        let _ = writeln!(
            o,
            "    key: [{}]   # {} (batches page over it)",
            key.columns
                .iter()
                .map(|c| flow(c))
                .collect::<Vec<_>>()
                .join(", "),
            comment_safe(&key.index)
        );
    }
    let _ = writeln!(
        o,
        "    # batch_size: 500          # uncomment to override defaults for this table"
    );
    let _ = writeln!(o, "    columns:");
    for c in &t.columns {
        let left_out_why = match (&c.blocked, choice.refused(&c.name)) {
            (_, Some(r)) => Some(r.to_string()),
            (Some(why), None) if c.strategy != ScanStrategy::None => Some(why.clone()),
            _ => None,
        };
        if let Some(why) = left_out_why {
            let _ = writeln!(
                o,
                "      # - name: {}   # {}",
                scalar(&c.name),
                comment_safe(&left_out(c, &why))
            );
            let _ = writeln!(o, "      #   scan: {}", comment_safe(&evidence(c)));
        } else if c.strategy == ScanStrategy::None {
            let _ = writeln!(
                o,
                "      # - name: {}   # {}",
                scalar(&c.name),
                comment_safe(&nothing_to_do(c))
            );
        } else {
            active_column(o, c, reading(c, t, tables).as_ref());
        }
    }
}

fn inactive_table(o: &mut String, t: &TableScan, choice: &Choice) {
    let mut why: Vec<String> = choice.out.iter().map(|r| r.to_string()).collect();
    if why.is_empty() {
        why.push(
            match t
                .columns
                .iter()
                .find(|c| c.strategy != ScanStrategy::None && c.blocked.is_some())
            {
                Some(c) => format!(
                    "{} {}",
                    c.name,
                    left_out(c, c.blocked.as_deref().unwrap_or_default())
                ),
                None => {
                    "nothing to recode: every text column is ASCII, already UTF-8 or binary data"
                        .into()
                }
            },
        );
    }
    let _ = writeln!(
        o,
        "  # - name: {}   # not in the job: {}",
        scalar(&t.name),
        comment_safe(&why[0])
    );
    for more in &why[1..] {
        let _ = writeln!(o, "  #   and: {}", comment_safe(more));
    }
    for c in t
        .columns
        .iter()
        .filter(|c| c.strategy != ScanStrategy::None)
    {
        let _ = writeln!(
            o,
            "  #   would need: {} ({})",
            comment_safe(&c.name),
            comment_safe(&evidence(c))
        );
    }
}

/// One column of the job; `read` is how a column without legacy text of its own is read.
fn active_column(o: &mut String, c: &ColumnScan, read: Option<&super::context::Context>) {
    let (source, why) = planned_source(c, read);
    let _ = writeln!(o, "      - name: {}", scalar(&c.name));
    let _ = writeln!(o, "        # scan: {}", comment_safe(&evidence(c)));
    let _ = writeln!(o, "        # size: {}", comment_safe(&sizes(c)));
    if !c.target.why.is_empty() {
        let _ = writeln!(o, "        # target: {}", comment_safe(&c.target.why));
    }
    for r in &c.risks {
        let _ = writeln!(o, "        # risk: {}", comment_safe(r));
    }
    let context = read.map(|r| r.label());
    if let Err(e) = target_sql_as(c, context) {
        let _ = writeln!(
            o,
            "        # risk: {}: the target below leaves it out; write it in, read as it should be, or add `redefine: true`",
            comment_safe(&e)
        );
    }
    let _ = writeln!(
        o,
        "        source: {}   # {}",
        scalar(&source),
        comment_safe(&why)
    );
    let _ = writeln!(
        o,
        "        target: {}",
        scalar(&target_definition_as(c, context))
    );
    let _ = writeln!(o, "        undecidable: {}", undecidable(c));
}

/// The column's `undecidable:` and why: `use <label>` where the column leaves no doubt (every
/// non-ASCII value the scan decided has that one label), else `quarantine`.
fn undecidable(c: &ColumnScan) -> String {
    if c.undecided_total == 0 {
        return "quarantine".into();
    }
    let n = thousands(c.undecided_total);
    let decided: Vec<&str> = c
        .labels
        .iter()
        .filter(|(l, k)| **k > 0 && !matches!(l.as_str(), "ascii" | "unknown"))
        .map(|(l, _)| l.as_str())
        .collect();
    match decided.as_slice() {
        [one] if *one != labels::AUTO && labels::is_known(one) => format!(
            "use {one}   # {n} undecided values read as {one}, as every decided non-ASCII value of the column is (round trip proven; `quarantine` lists them for `myrecode review`)"
        ),
        _ => format!("quarantine   # {n} undecided values wait for `myrecode review` (a copy holds its cut-over until they are decided)"),
    }
}

fn nothing_to_do(c: &ColumnScan) -> String {
    if !c.target.why.is_empty() {
        return c.target.why.clone();
    }
    let l = c
        .labels
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(l, _)| l.as_str())
        .collect::<Vec<_>>();
    if l.is_empty() {
        "no values: nothing to recode".into()
    } else {
        format!("holds only {}: nothing to recode", l.join(", "))
    }
}

/// One line of scan evidence: rows, counts per label, undecided.
pub fn evidence(c: &ColumnScan) -> String {
    let mut s = format!("{} rows", thousands(c.rows));
    if c.nulls > 0 || c.empty > 0 {
        let _ = write!(
            s,
            " ({} NULL, {} empty)",
            thousands(c.nulls),
            thousands(c.empty)
        );
    }
    let mut counts: Vec<(&String, &u64)> = c.labels.iter().filter(|(_, n)| **n > 0).collect();
    counts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if !counts.is_empty() {
        let parts: Vec<String> = counts
            .iter()
            .map(|(l, n)| format!("{l} {}", thousands(**n)))
            .collect();
        let _ = write!(s, "; {}", parts.join(", "));
    }
    let _ = write!(s, "; {} undecided", thousands(c.undecided_total));
    if c.serialized > 0 {
        let _ = write!(
            s,
            "; {} PHP-serialized (recoded string by string, byte counts rewritten)",
            thousands(c.serialized)
        );
    }
    s
}

/// One line of sizes: longest value after recoding against what is stored and declared.
pub fn sizes(c: &ColumnScan) -> String {
    format!(
        "longest after recoding {} bytes / {} chars (now {} bytes, declared {} {})",
        thousands(c.max_bytes_after),
        thousands(c.max_chars_after),
        thousands(c.max_bytes_now),
        c.column_type,
        c.charset.as_deref().unwrap_or("binary")
    )
}

/// `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests;

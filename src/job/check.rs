//! Validates a job against the live schema (and, if given, the scan report): every problem
//! is its own [`Finding`], so one run lists them all.
//!
//! Pure: the live facts come in as [`Live`], read beforehand by [`super::live::read`].

use super::finding::Finding;
use super::labels;
use super::live::{Live, LiveColumn};
use super::load::Loaded;
use super::model::{Job, Strategy, TableJob};
use super::refusal;
use super::suggest::{closest, did_you_mean};
use super::target::{self, lob_capacity, TargetDef};
use crate::inventory::model::{Column, ColumnKind, Table};
use crate::scan::model::{ColumnScan, ScanReport};
use std::collections::BTreeSet;

/// The definition plans use for text that must hold any Unicode.
pub const UTF8MB4_SUFFIX: &str = "CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci";

/// Checks a loaded job and fills in each finding's line; findings come in file order.
pub fn check_loaded(loaded: &Loaded, live: &Live, report: Option<&ScanReport>) -> Vec<Finding> {
    let mut out = check(&loaded.job, live, report);
    for f in &mut out {
        if f.line.is_none() {
            f.line = loaded.locator.line(&f.path);
        }
    }
    out.sort_by_key(|f| f.line.unwrap_or(0));
    out
}

/// Every finding about `job`, in the order the checks meet them (lines not filled in).
pub fn check(job: &Job, live: &Live, report: Option<&ScanReport>) -> Vec<Finding> {
    let mut out = Vec::new();
    if !live.has_schema(&job.schema) {
        out.push(Finding::new(
            "schema",
            format!("schema '{}' does not exist on this server", job.schema),
            format!(
                "name an existing schema{} (the server has: {})",
                did_you_mean(&job.schema, &live.schemas),
                list_or_none(&live.schemas)
            ),
        ));
        return out;
    }
    let mut seen = BTreeSet::new();
    for (i, t) in job.tables.iter().enumerate() {
        let path = format!("tables[{i}]");
        if !seen.insert(t.name.as_str()) {
            out.push(Finding::new(
                format!("{path}.name"),
                format!("table '{}' is listed twice", t.name),
                "merge the two entries into one",
            ));
            continue;
        }
        let scan = report.and_then(|r| {
            r.tables
                .iter()
                .find(|s| s.schema == job.schema && s.name == t.name)
        });
        check_table(
            t,
            &path,
            &job.schema,
            job.defaults.keyless_max_rows,
            live,
            scan.map(|s| &s.columns[..]),
            &mut out,
        );
        // Rules across the job's tables: a foreign key the job would split, and what its
        // cut-over groups would split.
        if let Some(inv) = live.inventory.tables.iter().find(|x| x.name == t.name) {
            let facts = refusal::Facts::of_table(inv);
            for r in refusal::foreign_key_splits(&facts, t, &job.tables) {
                out.push(r.finding(&path));
            }
            for r in refusal::group_splits(&facts, t, job) {
                out.push(r.finding(&path));
            }
        }
    }
    out
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn check_table(
    t: &TableJob,
    path: &str,
    schema: &str,
    keyless_max_rows: u64,
    live: &Live,
    scan: Option<&[ColumnScan]>,
    out: &mut Vec<Finding>,
) {
    let Some(all_columns) = live.tables.get(&t.name) else {
        let names: Vec<&String> = live.tables.keys().collect();
        out.push(Finding::new(
            format!("{path}.name"),
            format!("unknown table '{}' in schema '{schema}'", t.name),
            match closest(&t.name, names.iter().copied()) {
                Some(c) => format!("did you mean '{c}'? (names are case-sensitive)"),
                None => format!(
                    "name a table of '{schema}' (it has: {})",
                    list_or_none(&live.tables.keys().cloned().collect::<Vec<_>>())
                ),
            },
        ));
        return;
    };
    let Some(inv) = live.inventory.tables.iter().find(|x| x.name == t.name) else {
        out.push(Finding::new(
            format!("{path}.name"),
            format!(
                "table '{}' has no text or binary columns: nothing to recode",
                t.name
            ),
            "remove this entry",
        ));
        return;
    };
    // Keys, strategies and what the table itself allows: the rules `plan` and `run` apply too.
    for r in refusal::refusals(inv, t, keyless_max_rows) {
        out.push(r.finding(path));
    }
    if t.columns.is_empty() {
        out.push(Finding::new(
            format!("{path}.columns"),
            "no columns to recode",
            "list the columns to recode, or remove this table",
        ));
    }
    let mut seen = BTreeSet::new();
    let mut targets: Vec<(usize, &Column, TargetDef)> = Vec::new();
    for (j, c) in t.columns.iter().enumerate() {
        let cpath = format!("{path}.columns[{j}]");
        if !seen.insert(c.name.as_str()) {
            out.push(Finding::new(
                format!("{cpath}.name"),
                format!("column '{}' is listed twice", c.name),
                "keep one entry",
            ));
            continue;
        }
        if !c.source.is_known() {
            out.push(Finding::new(
                format!("{cpath}.source"),
                format!("unknown label '{}'", c.source),
                format!(
                    "use one of {}{}",
                    labels::known().join(", "),
                    did_you_mean(c.source.as_str(), labels::known())
                ),
            ));
        }
        let col = match inv.columns.iter().find(|x| x.name == c.name) {
            Some(col) => col,
            None => {
                out.push(unknown_column(&cpath, &c.name, inv, all_columns));
                continue;
            }
        };
        let def = match target::parse(&c.target) {
            Ok(d) => d,
            Err(e) => {
                out.push(Finding::new(
                    format!("{cpath}.target"),
                    format!("target '{}' cannot be used: {e}", c.target),
                    format!(
                        "write a full column definition, e.g. {}",
                        suggested_target(col)
                    ),
                ));
                continue;
            }
        };
        let cscan = scan.and_then(|s| s.iter().find(|x| x.name == c.name));
        let ok = check_strategy(t, &cpath, col, &def, out);
        check_target(&cpath, c.source.as_str(), col, &def, cscan, ok, out);
        targets.push((j, col, def));
    }
    let mariadb = live.inventory.server.flavor != "MySQL";
    check_indexes(path, inv, &targets, mariadb, out);
    check_row_size(path, inv, &targets, out);
}

/// Bytes a column takes in the declared row size: VARCHAR its bytes plus a 1- or 2-byte
/// length, CHAR its bytes, the TEXT/BLOB family only its pointer.
fn row_bytes(data_type: &str, max_bytes: u64) -> u64 {
    match data_type {
        "varchar" | "varbinary" => max_bytes + if max_bytes > 255 { 2 } else { 1 },
        "tinytext" | "tinyblob" => 9,
        "text" | "blob" => 10,
        "mediumtext" | "mediumblob" => 11,
        "longtext" | "longblob" => 12,
        "enum" | "set" => 2,
        _ => max_bytes,
    }
}

/// The 65,535-byte limit on a row's declared size, with the targets in place.
fn check_row_size(
    path: &str,
    inv: &Table,
    targets: &[(usize, &Column, TargetDef)],
    out: &mut Vec<Finding>,
) {
    let mut bytes = inv.row_size.bytes;
    for (_, col, def) in targets {
        let before = row_bytes(&col.data_type, col.max_bytes.unwrap_or(0));
        let after_bytes = match def.data_type.as_str() {
            "char" | "varchar" | "binary" | "varbinary" => def.byte_capacity().unwrap_or(0),
            _ => 0,
        };
        let after = row_bytes(&def.data_type, after_bytes);
        bytes = bytes.saturating_sub(before) + after;
    }
    if bytes > inv.row_size.limit && inv.row_size.bytes <= inv.row_size.limit {
        out.push(Finding::new(
            format!("{path}.name"),
            format!(
                "with these targets the declared row size of '{}' would be {bytes} bytes, over the {}-byte limit (the copy would fail to create the table)",
                inv.name, inv.row_size.limit
            ),
            "make the longest VARCHAR targets TEXT, or keep columns that hold only ASCII single-byte",
        ));
    }
}

fn unknown_column(cpath: &str, name: &str, inv: &Table, all: &[LiveColumn]) -> Finding {
    if let Some(other) = all.iter().find(|x| x.name == name) {
        return Finding::new(
            format!("{cpath}.name"),
            format!(
                "column '{name}' is {}, not a text or binary column: nothing to recode",
                other.data_type
            ),
            "remove this entry",
        );
    }
    let names: Vec<&str> = inv.columns.iter().map(|c| c.name.as_str()).collect();
    Finding::new(
        format!("{cpath}.name"),
        format!("unknown column '{name}' in table '{}'", inv.name),
        match closest(name, &names) {
            Some(c) => format!("did you mean '{c}'? (names are case-sensitive)"),
            None => format!(
                "name a text column of '{}' (it has: {})",
                inv.name,
                names.join(", ")
            ),
        },
    )
}

/// A definition to offer as an example: the column's type in utf8mb4.
fn suggested_target(col: &Column) -> String {
    let base = col.column_type.to_ascii_uppercase();
    let not_null = if col.nullable { "" } else { " NOT NULL" };
    if col.kind == ColumnKind::Binary {
        format!("{base}{not_null}")
    } else {
        format!("{base} {UTF8MB4_SUFFIX}{not_null}")
    }
}

/// Strategy checks; false when the column's strategy cannot work at all (a type that cannot
/// hold UTF-8 under in-place, which [`refusal`] reports).
fn check_strategy(
    t: &TableJob,
    cpath: &str,
    col: &Column,
    def: &TargetDef,
    out: &mut Vec<Finding>,
) -> bool {
    if t.strategy != Strategy::InPlace {
        return true;
    }
    if !refusal::holds_utf8(col.charset.as_deref()) {
        return false;
    }
    let live_len = match col.data_type.as_str() {
        "char" | "varchar" => col.max_chars,
        "binary" | "varbinary" => col.max_bytes,
        _ => None,
    };
    let live_cs = col
        .charset
        .as_deref()
        .map(crate::db::charset::normalize_charset);
    if def.data_type != col.data_type || def.length != live_len || def.charset != live_cs {
        out.push(Finding::new(
            format!("{cpath}.target"),
            format!(
                "in-place keeps the column as it is ({} {}), but the target asks for a different type",
                col.column_type,
                col.charset.as_deref().unwrap_or("binary")
            ),
            format!(
                "set `strategy: copy` to change the type, or make the target the current definition ({})",
                current_definition(col)
            ),
        ));
    }
    true
}

fn current_definition(col: &Column) -> String {
    let mut s = col.column_type.to_ascii_uppercase();
    if let Some(cs) = &col.charset {
        s.push_str(&format!(" CHARACTER SET {cs}"));
    }
    if let Some(co) = &col.collation {
        s.push_str(&format!(" COLLATE {co}"));
    }
    if !col.nullable {
        s.push_str(" NOT NULL");
    }
    s
}

fn only_ascii(scan: Option<&ColumnScan>) -> bool {
    scan.is_some_and(|s| s.labels.iter().all(|(l, n)| *n == 0 || l == "ascii"))
}

fn check_target(
    cpath: &str,
    source: &str,
    col: &Column,
    def: &TargetDef,
    scan: Option<&ColumnScan>,
    strategy_ok: bool,
    out: &mut Vec<Finding>,
) {
    let tpath = format!("{cpath}.target");
    let utf8 = match def.length {
        Some(n) => format!(
            "{}({n}) {UTF8MB4_SUFFIX}",
            def.data_type.to_ascii_uppercase()
        ),
        None => format!("{} {UTF8MB4_SUFFIX}", def.data_type.to_ascii_uppercase()),
    };
    if !def.is_binary() {
        match &def.charset {
            None => out.push(Finding::new(
                &tpath,
                "the target names no character set, so the table's default would apply",
                format!("add {UTF8MB4_SUFFIX}"),
            )),
            Some(cs) if target::charset_maxlen(cs).is_none() => out.push(Finding::new(
                &tpath,
                format!("unknown character set '{cs}'"),
                format!("use {UTF8MB4_SUFFIX}"),
            )),
            Some(cs) if !target::holds_unicode(cs) && cs != "utf8mb3" && !only_ascii(scan) => out
                .push(Finding::new(
                    &tpath,
                    format!(
                        "character set {cs} cannot hold the recoded text (Cyrillic, Vietnamese)"
                    ),
                    format!(
                        "use {utf8}; a pure-ASCII column needs no recoding: remove it from the job"
                    ),
                )),
            _ => {}
        }
    }
    if strategy_ok {
        if let Some(f) = too_short(&tpath, source, col, def, scan) {
            out.push(f);
        }
    }
    if !col.nullable && !def.not_null {
        out.push(Finding::new(
            &tpath,
            format!(
                "column '{}' is NOT NULL today but the target drops NOT NULL",
                col.name
            ),
            "append NOT NULL to the target (and the DEFAULT, if the column has one)",
        ));
    }
}

/// Largest number of UTF-8 bytes one stored byte can become for this column and label.
fn growth(col: &Column, source: &str) -> u64 {
    if col.charset.is_some() && refusal::holds_utf8(col.charset.as_deref())
        || source.starts_with("utf-8>")
    {
        1
    } else {
        labels::utf8_growth(source)
    }
}

fn too_short(
    tpath: &str,
    source: &str,
    col: &Column,
    def: &TargetDef,
    scan: Option<&ColumnScan>,
) -> Option<Finding> {
    let base = def.data_type.to_ascii_uppercase();
    let shown = match def.length {
        Some(n) => format!("{base}({n})"),
        None => base.clone(),
    };
    let now = format!(
        "{} {}",
        col.column_type,
        col.charset.as_deref().unwrap_or("binary")
    );
    // Declared length in characters: shrinking it is always a finding.
    if let (Some(n), Some(declared)) = (def.char_capacity(), col.max_chars) {
        if matches!(
            col.data_type.as_str(),
            "char" | "varchar" | "binary" | "varbinary"
        ) && n < declared
        {
            return Some(Finding::new(
                tpath,
                format!(
                    "target {shown} is too short: the column is {now} and holds up to {declared} characters",
                ),
                format!("use {base}({declared}) or longer"),
            ));
        }
    }
    if let Some(s) = scan {
        if let Some(n) = def.char_capacity() {
            if n < s.max_chars_after {
                return Some(Finding::new(
                    tpath,
                    format!(
                        "target {shown} is too short: the scan found a value of {} characters after recoding",
                        s.max_chars_after
                    ),
                    format!("use {base}({}) or longer", s.max_chars_after),
                ));
            }
        }
        if let Some(cap) = def.byte_capacity() {
            if cap < s.max_bytes_after {
                return Some(Finding::new(
                    tpath,
                    format!(
                        "target {shown} holds {cap} bytes, but the scan found a value of {} bytes after recoding",
                        s.max_bytes_after
                    ),
                    bigger_type(def, s.max_bytes_after),
                ));
            }
        }
        return None;
    }
    // No report: the declared capacity times what recoding can do to each byte.
    if lob_capacity(&def.data_type).is_some() || def.data_type == "varbinary" {
        let cap = def.byte_capacity()?;
        let now_bytes = col.max_bytes?;
        let need = now_bytes.saturating_mul(growth(col, source));
        if cap < need {
            return Some(Finding::new(
                tpath,
                format!(
                    "target {shown} holds {cap} bytes, but the column ({now}) can hold {now_bytes} bytes that may become {need} bytes of UTF-8 (×{})",
                    growth(col, source)
                ),
                format!(
                    "{}, or pass --report scan.json so the check can use the longest value actually stored",
                    bigger_type(def, need)
                ),
            ));
        }
    }
    None
}

fn bigger_type(def: &TargetDef, need: u64) -> String {
    let family: &[&str] = if def.is_binary() {
        &["blob", "mediumblob", "longblob"]
    } else {
        &["text", "mediumtext", "longtext"]
    };
    match family
        .iter()
        .find(|t| lob_capacity(t).is_some_and(|c| c >= need))
    {
        Some(t) => format!("use {} or larger", t.to_ascii_uppercase()),
        None => "the value cannot fit any type: check the column".to_string(),
    }
}

/// Index key lengths with the targets in place, against the table's limits.
/// An index MariaDB adapts itself on MyISAM and Aria (see `scan::index_risks::index_risks`) is not
/// a problem.
fn check_indexes(
    path: &str,
    inv: &Table,
    targets: &[(usize, &Column, TargetDef)],
    mariadb: bool,
    out: &mut Vec<Finding>,
) {
    let adapts = mariadb && matches!(inv.engine.to_ascii_lowercase().as_str(), "myisam" | "aria");
    for idx in &inv.indexes {
        if matches!(idx.index_type.as_str(), "FULLTEXT" | "SPATIAL" | "HASH") {
            continue;
        }
        let mut first: Option<usize> = None;
        let mut total = 0u64;
        let mut widest = 0u64;
        let mut widest_col = String::new();
        let mut lob_without_prefix = None;
        for p in &idx.parts {
            let bytes = match targets.iter().find(|(_, c, _)| c.name == p.column) {
                Some((j, _, def)) => {
                    first = first.or(Some(*j));
                    if lob_capacity(&def.data_type).is_some() && p.prefix.is_none() {
                        lob_without_prefix = Some(*j);
                    }
                    let chars = p.prefix.or(def.length).unwrap_or(0);
                    if def.is_binary() {
                        chars
                    } else {
                        chars * def.bytes_per_char().unwrap_or(4)
                    }
                }
                None => p.bytes,
            };
            total += bytes;
            if bytes > widest {
                widest = bytes;
                widest_col = p.column.clone();
            }
        }
        let Some(j) = first else { continue };
        if let Some(j) = lob_without_prefix {
            out.push(Finding::new(
                format!("{path}.columns[{j}].target"),
                format!(
                    "index `{}` covers the whole column, which a TEXT or BLOB target does not allow",
                    idx.name
                ),
                "keep a VARCHAR/VARBINARY target, or change the index to a prefix first",
            ));
            continue;
        }
        let adapted = adapts
            && crate::inventory::keylen::server_adapts(&idx.name, idx.unique, idx.parts.len());
        if (widest > inv.key_part_limit || total > inv.key_limit) && !idx.overflows_now && !adapted
        {
            out.push(Finding::new(
                format!("{path}.columns[{j}].target"),
                format!(
                    "index `{}` would need {total} bytes with this target ({widest_col}: {widest}), over the limit of {} bytes per column and {} per key on row format {}",
                    idx.name, inv.key_part_limit, inv.key_limit, inv.row_format
                ),
                format!(
                    "keep the column single-byte if it is pure ASCII, index a prefix ({}({}) fits), or rebuild the table with ROW_FORMAT=DYNAMIC first",
                    widest_col,
                    inv.key_part_limit.min(inv.key_limit) / 4
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests;

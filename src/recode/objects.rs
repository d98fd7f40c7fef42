//! Legacy text in the schema's views, routines and events: what recoding them changes (for
//! `scan`'s report and the cut-over's recreation alike). Pure.

use super::sql_text::{literal_changes, recode_text};
use crate::db::charset::normalize_charset;
use crate::db::quote;
use crate::db::sqltext::{self, Mode};
use crate::detect::Label;
use crate::inventory::objects::{Kind, Object};

/// How the objects' texts are read: the job's labels, the utf8mb4 collation they take.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The labels of the job's values, most trusted first.
    pub labels: Vec<Label>,
    /// The collation recreated strings and declarations take.
    pub collation: String,
}

/// Whether a charset already holds UTF-8 (or is binary: bytes, not text).
fn is_utf8(cs: &str) -> bool {
    matches!(
        normalize_charset(cs).as_str(),
        "utf8mb4" | "utf8mb3" | "binary"
    )
}

/// What recreating `o` changes, one phrase each (its literals `'before' → 'after'`, its
/// string declarations, its comment), for `scan` and `plan` to show; empty: nothing.
pub fn changes(o: &Object, r: &Reading) -> Result<Vec<String>, String> {
    let mode = Mode::from_sql_mode(&o.sql_mode);
    let mut out = literal_changes(&o.create, Some(&o.charset), &r.labels, mode)?;
    if matches!(o.kind, Kind::Procedure | Kind::Function)
        && utf8_declarations(&o.create, mode, &o.charset, &r.collation)? != o.create
    {
        out.push("string parameters, return type and variables declared utf8mb4".into());
    }
    let comment = recode_text(&o.comment, Some(&o.charset), &r.labels)?;
    if comment != o.comment {
        out.push(format!(
            "COMMENT {} → {}",
            quote::literal(&o.comment),
            quote::literal(&comment)
        ));
    }
    Ok(out)
}

/// A routine's `CREATE` with every string parameter, return type and variable in utf8mb4:
/// one declared in a legacy charset gets utf8mb4 instead, one declared without takes it
/// explicitly when the routine's default (`charset`) was legacy.
pub fn utf8_declarations(
    create: &str,
    mode: Mode,
    charset: &str,
    collation: &str,
) -> Result<String, String> {
    let types = sqltext::routine_string_types(create, mode).map_err(|e| e.to_string())?;
    let utf8 = format!("CHARACTER SET utf8mb4 COLLATE {collation}");
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for t in types {
        match (&t.explicit, &t.charset) {
            (Some(span), Some(cs)) if !is_utf8(cs) => edits.push((span.clone(), utf8.clone())),
            (Some(_), _) => {}
            (None, _) if !is_utf8(charset) => {
                edits.push((t.span.end..t.span.end, format!(" {utf8}")))
            }
            (None, _) => {}
        }
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = create.to_string();
    for (r, s) in edits {
        out.replace_range(r, &s);
    }
    Ok(out)
}

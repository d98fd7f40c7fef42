//! The full column definition a scanned column's target gets: its type in utf8mb4 and
//! everything else the column has, its texts read as the column's values are. Pure.

use super::definition::{self, Live};
use crate::detect::Label;
use crate::scan::model::ColumnScan;

/// Labels that mean "nothing to recode" or "cannot tell", never a fixed source.
pub(crate) const NOT_SOURCES: &[&str] = &["ascii", "utf-8", "unknown", "binary"];

pub(crate) fn recodable_labels(c: &ColumnScan) -> Vec<&str> {
    c.labels
        .iter()
        .filter(|(l, n)| **n > 0 && !NOT_SOURCES.contains(&l.as_str()))
        .map(|(l, _)| l.as_str())
        .collect()
}

/// The full column definition for the scan's target: its type and utf8mb4, and everything
/// else the column has (NOT NULL, DEFAULT, ON UPDATE, COMMENT, INVISIBLE, ENUM/SET members),
/// its texts read as the column's values are. A text no reading decides is kept as the
/// catalog shows it, and `plan --check` then names it.
pub fn target_definition(c: &ColumnScan) -> String {
    target_definition_as(c, None)
}

/// [`target_definition`], its texts read also as `context` (the label a column without legacy
/// text of its own is read as, [`super::context`]).
pub fn target_definition_as(c: &ColumnScan, context: Option<&str>) -> String {
    target_sql_as(c, context).unwrap_or_else(|_| {
        let t = &c.target;
        let mut bare = c.clone();
        bare.definition = Default::default();
        target_sql(&bare).unwrap_or_else(|_| t.column_type.clone())
    })
}

/// [`target_definition`], or the text no reading decides.
pub fn target_sql(c: &ColumnScan) -> Result<String, String> {
    target_sql_as(c, None)
}

/// [`target_definition_as`], or the text no reading decides.
pub fn target_sql_as(c: &ColumnScan, context: Option<&str>) -> Result<String, String> {
    let t = &c.target;
    let live = Live {
        column_type: &c.column_type,
        charset: c.charset.as_deref(),
        nullable: c.nullable,
        definition: &c.definition,
    };
    let mut read: Vec<Label> = c.source.iter().filter_map(|l| l.parse().ok()).collect();
    read.extend(
        recodable_labels(c)
            .iter()
            .filter_map(|l| l.parse::<Label>().ok()),
    );
    read.extend(context.and_then(|l| l.parse::<Label>().ok()));
    definition::target_sql(
        live,
        &t.column_type,
        t.charset.as_deref(),
        t.collation.as_deref(),
        &read,
    )
}

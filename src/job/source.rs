//! The `source:` `plan` writes for a column, and why; the refusal rules read it too (a key
//! column the job recodes needs a fixed label). Pure.

use super::context::Context;
use super::labels;
use super::scan_target::recodable_labels;
use crate::scan::model::ColumnScan;

/// The `source:` `plan` writes for a column, and why: a fixed label only when every
/// non-ASCII value has it, else `auto`; for a column without legacy text of its own, as its
/// context `read` says. The rules read it too (a key column needs a fixed one).
pub fn planned_source(c: &ColumnScan, read: Option<&Context>) -> (String, String) {
    let recodable = recodable_labels(c);
    // A fixed label only when every non-ASCII value has it: already-UTF-8, binary or
    // undecided values next to it must go through detection, not be forced.
    let non_ascii: Vec<&str> = c
        .labels
        .iter()
        .filter(|(l, n)| **n > 0 && l.as_str() != "ascii")
        .map(|(l, _)| l.as_str())
        .collect();
    match (non_ascii.as_slice(), recodable.as_slice()) {
        // Nothing decided of its own (empty, ASCII, or only undecided values): read as the
        // column's context says, which the plan states and a reviewer can change.
        (_, []) if read.is_some() && non_ascii.iter().all(|l| *l == "unknown") => {
            let read = read.expect("matched");
            (read.label().to_string(), read.why())
        }
        ([one], _) if labels::is_known(one) => {
            (one.to_string(), format!("every non-ASCII value is {one}"))
        }
        (_, []) => (
            labels::AUTO.to_string(),
            "no single encoding stands out: detect row by row".to_string(),
        ),
        (_, [one]) => (
            labels::AUTO.to_string(),
            format!(
                "mostly {one}, next to {}: detect row by row",
                non_ascii
                    .iter()
                    .filter(|l| *l != one)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        (_, many) => (
            labels::AUTO.to_string(),
            format!("several encodings row by row ({})", many.join(", ")),
        ),
    }
}

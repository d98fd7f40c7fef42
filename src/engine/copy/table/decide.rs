//! What each stored value becomes in the shadow: decided by our detector and codecs,
//! written by the server where its own conversion is proven equal. Pure.

use crate::bookkeeping::keycodec;
use crate::bookkeeping::quarantine::Quarantined;
use crate::detect::{ColumnPrior, Label};
use crate::engine::copy::table::expect::{self, Expected, Target};
use crate::engine::copy::table::job_column::{STAGED_DECLARED, STAGED_VALUE};
use crate::engine::copy::table::named_values::{self, choice_of, key_literal, Chosen};
use crate::engine::copy::table::recoded::{Decisions, Recoded, Stage};
use crate::engine::read::{Key, Stored};
use crate::engine::servercodec::ServerCodec;
use crate::engine::table_plan::ColumnPlan;
use crate::recode::serialized;
use crate::recode::short_values::Remembered;
use crate::recode::value as recode;
use crate::recode::value::{Action, Source};
use std::collections::HashMap;

/// How one job column's values are read: its source, its fallback (`undecidable: use
/// <label>`), its prior (fixed at job start), its server codec.
pub(crate) type ColumnRules = (
    Source,
    Option<Label>,
    Option<ColumnPrior>,
    Option<ServerCodec>,
);

/// Decides job values: owned, so the read-ahead can run it on a blocking thread while the
/// async side waits on the server.
pub(crate) struct Decider {
    /// Per job column: its source, its fallback (`undecidable: use <label>`), its prior (fixed
    /// at job start), its server codec.
    pub(crate) columns: Vec<ColumnRules>,
    pub(crate) threshold: f32,
    /// Every charset conversion the server was found to give as our codec does, for values
    /// of another label than their column's ([`Stage::Other`]); empty for columns whose
    /// target is binary (their values are staged as bytes).
    pub(crate) others: Vec<ServerCodec>,
    /// Per job column, whether its target is text (a value of another label may then be
    /// written by the server's conversion).
    pub(crate) text: Vec<bool>,
    /// Per job column, decisions on short values already seen.
    pub(crate) seen: Remembered<Recoded>,
    /// Per job column, what the DBA decided for values no reading decided, by their stored
    /// bytes ([`crate::bookkeeping::decided`]): a replay meeting them again writes that.
    pub(crate) decided: Vec<HashMap<Vec<u8>, Option<Label>>>,
}

impl Decider {
    /// Decides every value of `rows` (per row, per job column; `None`: NULL), remembering
    /// decisions on short values so a repeated value is decided once.
    pub(crate) fn decide_all<K>(&self, rows: Vec<(K, Stored)>) -> Vec<(K, Decisions)> {
        rows.into_iter()
            .map(|(key, cells)| (key, self.decide_row(cells)))
            .collect()
    }

    /// Decides one row's values ([`Decider::decide_all`]).
    fn decide_row(&self, cells: Stored) -> Decisions {
        cells
            .into_iter()
            .enumerate()
            .map(|(ci, v)| {
                v.map(|v| {
                    let r = self.seen.decide(ci, &v, || self.decide(ci, &v));
                    (v, r)
                })
            })
            .collect()
    }

    /// Decides `rows` and, with `targets` (a trailing check will compare them), sums what the
    /// shadow should hold ([`expect::batch`], aligned with the rows); row by row, it then drops
    /// the bytes nothing after needs, on this (deciding) thread rather than the one driving the
    /// writes: the recoded bytes of values the server converts itself, and their stored bytes.
    /// Dropped as each row is summed, not once the batch is: the batch's recoded bytes are
    /// never all held at once.
    pub(crate) fn decide_ahead(
        &self,
        rows: Vec<(Key, Stored, Option<u32>)>,
        targets: Option<&[Target]>,
    ) -> (Vec<(Key, Decisions)>, Option<Expected>) {
        let mut expected = targets.map(|_| Vec::with_capacity(rows.len()));
        let mut out = Vec::with_capacity(rows.len());
        for (key, cells, others) in rows {
            let mut cells = self.decide_row(cells);
            if let (Some(t), Some(e)) = (targets, expected.as_mut()) {
                match expect::row(&key, &cells, t, others) {
                    Some(sum) => e.push(sum),
                    None => expected = None,
                }
            }
            for (stored, r) in cells.iter_mut().flatten() {
                if matches!(r.stage, Stage::Server(_)) && r.undecidable.is_none() {
                    r.stage = Stage::Server(None);
                    *stored = Vec::new();
                }
            }
            out.push((key, cells));
        }
        (out, expected)
    }

    /// Decides what one stored value of job column `ci` becomes in the shadow.
    pub(crate) fn decide(&self, ci: usize, stored: &[u8]) -> Recoded {
        let (source, fallback, prior, server) = &self.columns[ci];
        let r = |stage, recoded, undecidable| Recoded {
            stage,
            recoded,
            undecidable,
        };
        // The server's conversion serves a value only where it is ours, byte for byte.
        let by_server = |label: Option<Label>| {
            server
                .as_ref()
                .is_some_and(|sc| label.is_none_or(|l| l == sc.label) && sc.reproduces(stored))
        };
        // Without a server codec the default already is the declared conversion.
        let declared = if server.is_some() {
            Stage::Declared
        } else {
            Stage::Server(None)
        };
        // Another charset's conversion, where the server's is ours for every byte.
        let other = |label: Label| {
            let text = self.text.get(ci).copied().unwrap_or(false);
            (self.others.iter())
                .position(|sc| sc.label == label && sc.reproduces(stored))
                .filter(|_| text)
        };
        let action = match self.decided.get(ci).and_then(|d| d.get(stored)) {
            Some(&choice) => decided_before(choice, stored),
            None => recode::decide(source, *fallback, prior.as_ref(), self.threshold, stored),
        };
        match action {
            // A PHP-serialized value's counts change with its strings: never the server's CONVERT.
            Action::Rewrite { new, .. } if serialized::looks_serialized(stored) => {
                r(Stage::Value(new), true, None)
            }
            Action::Rewrite { label, new } if by_server(Some(label)) => {
                r(Stage::Server(Some(new)), true, None)
            }
            Action::Rewrite { label, new } => match other(label) {
                Some(i) => r(Stage::Other(i, new), true, None),
                None => r(Stage::Value(new), true, None),
            },
            Action::Keep if stored.is_ascii() && by_server(None) => {
                r(Stage::Server(None), false, None)
            }
            // UTF-8 already (written through a latin1 connection): its text, not its latin1 reading.
            Action::Keep if !stored.is_ascii() && std::str::from_utf8(stored).is_ok() => {
                r(Stage::Value(stored.to_vec()), false, None)
            }
            Action::Keep => r(declared, false, None),
            Action::Quarantine { reason, runner_up } => {
                r(declared, false, Some((reason, runner_up)))
            }
        }
    }
}

/// What a value decided before becomes: its reading (still only through its round trip),
/// or, decided `keep`, the copy's own reading of it, no longer listed.
fn decided_before(choice: Option<Label>, stored: &[u8]) -> Action {
    match choice {
        None => Action::Keep,
        Some(label) => match recode::rewrite(label, stored) {
            Some(new) => Action::Rewrite { new, label },
            None => Action::Quarantine {
                reason: format!("decided as {label}, which does not round-trip losslessly"),
                runner_up: Some(label.to_string()),
            },
        },
    }
}

/// A row's job values as staged: the value (if any) and the staging flag.
pub(crate) type StagedCells = Vec<(Option<Vec<u8>>, i8)>;

/// A batch's decisions: what to stage per key (value and flag per job column), what the server
/// writes by another conversion named by key ([`crate::engine::copy::table::named_values`]), the keys of every row
/// written otherwise than by default, how many values were recoded, what to quarantine.
pub(crate) struct Decided {
    pub(crate) staged: Vec<(Key, StagedCells)>,
    pub(crate) chosen: Chosen,
    /// Each row written otherwise than by its columns' defaults, once (the check pass judges
    /// these one by one).
    pub(crate) special: Vec<Key>,
    pub(crate) changed: u64,
    pub(crate) quarantine: Vec<Quarantined>,
    /// Per job column, whether every value chosen by key can be written in its default's
    /// charset ([`named_values::fits`]): its `CASE` is then written there.
    pub(crate) fits: Vec<bool>,
}

impl Decided {
    /// Whether any row's values are staged (the copy's statement then joins the staging table).
    pub(crate) fn stages(&self) -> bool {
        !self.staged.is_empty()
    }
}

/// Turns decided rows into what to stage, choose and quarantine: rows the server copies alone
/// (every value its default) are not staged at all; with `named` (the key is integers), a value
/// the server writes without its bytes is chosen by key rather than staged.
///
/// Borrows the rows, cloning only what it keeps (rows written otherwise than by default, the
/// undecidable): the caller chooses where the rest is freed. `fits` tells whether a chosen
/// value of job column `i` can be written in its default's charset ([`named_values::fits`]).
pub(crate) fn gather(
    columns: &[ColumnPlan],
    rows: &[(Key, Decisions)],
    named: bool,
    fits: impl Fn(usize, &[u8], &Stage) -> bool,
) -> Decided {
    let mut d = Decided {
        staged: Vec::new(),
        chosen: vec![Vec::new(); columns.len()],
        special: Vec::new(),
        changed: 0,
        quarantine: Vec::new(),
        fits: vec![true; columns.len()],
    };
    for (key, cells) in rows {
        // Made once, for a row with a choice only.
        let mut literal: Option<Option<String>> = None;
        let mut values = Vec::with_capacity(cells.len());
        let mut special = false;
        for (ci, cell) in cells.iter().enumerate() {
            let Some((stored, r)) = cell else {
                values.push((None, 0));
                continue;
            };
            d.changed += r.recoded as u64;
            let choice = choice_of(stored, &r.stage).filter(|_| named).and_then(|c| {
                let lit = literal.get_or_insert_with(|| key_literal(key)).as_deref()?;
                Some((c, lit))
            });
            special |= !matches!(r.stage, Stage::Server(_));
            values.push(match (choice, &r.stage) {
                (Some((c, lit)), _) => {
                    named_values::add(&mut d.chosen[ci], c, lit);
                    d.fits[ci] = d.fits[ci] && fits(ci, stored, &r.stage);
                    (None, 0)
                }
                (None, Stage::Server(_)) => (None, 0),
                (None, Stage::Value(v) | Stage::Other(_, v)) => (Some(v.clone()), STAGED_VALUE),
                (None, Stage::Declared) => (None, STAGED_DECLARED),
            });
            if let Some((reason, runner_up)) = &r.undecidable {
                d.quarantine.push(Quarantined {
                    col: columns[ci].name.clone(),
                    key: keycodec::pack(key),
                    value: stored.clone(),
                    reason: reason.clone(),
                    runner_up: runner_up.clone(),
                });
            }
        }
        if values.iter().any(|(_, flag)| *flag != 0) {
            d.staged.push((key.clone(), values));
        }
        if special {
            d.special.push(key.clone());
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str) -> ColumnPlan {
        ColumnPlan {
            name: name.into(),
            source: Source::Auto,
            fallback: None,
            binary: false,
            target: "TEXT CHARACTER SET utf8mb4".into(),
        }
    }

    fn recoded(stage: Stage) -> Recoded {
        Recoded {
            stage,
            recoded: true,
            undecidable: None,
        }
    }

    #[test]
    fn a_row_is_staged_with_every_column_in_place_whichever_column_stages_first() {
        let columns = [column("a"), column("b")];
        let server = || Some((b"x".to_vec(), recoded(Stage::Server(None))));
        let value = |v: &str| Some((b"y".to_vec(), recoded(Stage::Value(v.as_bytes().to_vec()))));
        let rows: Vec<(Key, Decisions)> = vec![
            (vec![b"1".to_vec()], vec![value("first"), server()]),
            (vec![b"2".to_vec()], vec![server(), value("second")]),
            (vec![b"3".to_vec()], vec![None, value("third")]),
            (vec![b"4".to_vec()], vec![server(), server()]),
        ];
        // Keys that are not integers: nothing is chosen by key, each such value is staged.
        let d = gather(&columns, &rows, false, |_, _, _| true);
        let v = |s: &str| (Some(s.as_bytes().to_vec()), STAGED_VALUE);
        assert_eq!(
            d.staged,
            vec![
                (vec![b"1".to_vec()], vec![v("first"), (None, 0)]),
                (vec![b"2".to_vec()], vec![(None, 0), v("second")]),
                (vec![b"3".to_vec()], vec![(None, 0), v("third")]),
            ]
        );
        assert_eq!(d.special.len(), 3);
        assert_eq!(d.changed, 7);
    }

    #[test]
    fn a_column_fits_its_default_s_charset_only_when_every_value_chosen_in_it_does() {
        let columns = [column("a"), column("b"), column("c")];
        let other = |stored: &[u8]| Some((stored.to_vec(), recoded(Stage::Other(0, vec![]))));
        let rows: Vec<(Key, Decisions)> = vec![
            (vec![b"1".to_vec()], vec![other(b"ok"), other(b"ok"), None]),
            (vec![b"2".to_vec()], vec![other(b"ok"), other(b"no"), None]),
        ];
        let d = gather(&columns, &rows, true, |_, stored, _| stored == b"ok");
        // c chose nothing: its CASE is its default alone, whatever this says.
        assert_eq!(d.fits, vec![true, false, true]);
        assert_eq!(d.chosen[1][0].1, vec!["1".to_string(), "2".to_string()]);
    }
}

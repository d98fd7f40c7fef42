//! What each stored value becomes in the shadow: decided by our detector and codecs,
//! written by the server where its own conversion is proven equal. Pure.

use super::sql::{STAGED_DECLARED, STAGED_VALUE};
use crate::detect::{ColumnPrior, Label};
use crate::engine::keycodec;
use crate::engine::plan::ColumnPlan;
use crate::engine::quarantine::Quarantined;
use crate::engine::read::{read_key, Key};
use crate::engine::recode::{self, Action, Source};
use crate::engine::remember::Remembered;
use crate::engine::serialized;
use crate::engine::servercodec::ServerCodec;
use anyhow::Result;
use sqlx::mysql::MySqlRow;
use sqlx::Row;

/// How the copy writes one job value.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Stage {
    /// The column's default: the server's conversion ([`JobColumn::default_expr`]), which
    /// gives exactly our decision: the recoded bytes when it recodes (for the check's sums,
    /// [`super::expect`]), `None` when it keeps them.
    Server(Option<Vec<u8>>),
    /// These bytes, staged.
    Value(Vec<u8>),
    /// The server's conversion from the declared charset (the latin1 reading: kept, reversible).
    Declared,
}

/// What one stored value becomes in the shadow.
#[derive(Clone)]
pub(super) struct Recoded {
    /// How it is written.
    pub(super) stage: Stage,
    /// Whether the value was recoded (not just kept).
    pub(super) recoded: bool,
    /// Why and the runner-up, when undecidable (it is quarantined).
    pub(super) undecidable: Option<(String, Option<String>)>,
}

/// Decides job values: owned, so the read-ahead can run it on a blocking thread while the
/// async side waits on the server.
pub(super) struct Decider {
    /// Per job column: its source, its prior (fixed at job start), its server codec.
    pub(super) columns: Vec<(Source, Option<ColumnPrior>, Option<ServerCodec>)>,
    pub(super) threshold: f32,
    /// Per job column, decisions on short values already seen.
    pub(super) seen: Remembered<Recoded>,
}

impl Decider {
    /// Decides every value of `rows` (per row, per job column; `None`: NULL), remembering
    /// decisions on short values so a repeated value is decided once.
    pub(super) fn decide_all<K>(&self, rows: Vec<(K, Stored)>) -> Vec<(K, Decisions)> {
        rows.into_iter()
            .map(|(key, cells)| {
                let decided = cells
                    .into_iter()
                    .enumerate()
                    .map(|(ci, v)| {
                        v.map(|v| {
                            let r = self.seen.decide(ci, &v, || self.decide(ci, &v));
                            (v, r)
                        })
                    })
                    .collect();
                (key, decided)
            })
            .collect()
    }

    /// Decides what one stored value of job column `ci` becomes in the shadow.
    pub(super) fn decide(&self, ci: usize, stored: &[u8]) -> Recoded {
        let (source, prior, server) = &self.columns[ci];
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
        match recode::decide(source, prior.as_ref(), self.threshold, stored) {
            // A PHP-serialized value's counts change with its strings: never the server's CONVERT.
            Action::Rewrite { label, new }
                if by_server(Some(label)) && !serialized::looks_serialized(stored) =>
            {
                r(Stage::Server(Some(new)), true, None)
            }
            Action::Rewrite { new, .. } => r(Stage::Value(new), true, None),
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

/// Per job column of one row: the stored bytes and what they become (`None`: NULL).
pub(super) type Decisions = Vec<Option<(Vec<u8>, Recoded)>>;

/// A row's stored job values (`None`: NULL).
pub(super) type Stored = Vec<Option<Vec<u8>>>;

/// A row's job values as staged: the value (if any) and the staging flag.
pub(super) type StagedCells = Vec<(Option<Vec<u8>>, i8)>;

/// A batch's decisions: what to stage per key (value and flag per job column), how many
/// values were recoded, what to quarantine.
pub(super) struct Decided {
    pub(super) staged: Vec<(Key, StagedCells)>,
    pub(super) changed: u64,
    pub(super) quarantine: Vec<Quarantined>,
}

/// Each row's key and stored job values, of rows read as `key…, job columns…`.
pub(super) fn stored_rows(nk: usize, nc: usize, rows: &[MySqlRow]) -> Result<Vec<(Key, Stored)>> {
    rows.iter()
        .map(|row| {
            let cells = (nk..nk + nc)
                .map(|i| row.try_get::<Option<Vec<u8>>, _>(i))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((read_key(row, nk)?, cells))
        })
        .collect()
}

/// Turns decided rows into what to stage and quarantine: rows the server copies alone
/// (every value its default) are not staged at all.
pub(super) fn gather(columns: &[ColumnPlan], rows: Vec<(Key, Decisions)>) -> Decided {
    let mut d = Decided {
        staged: Vec::new(),
        changed: 0,
        quarantine: Vec::new(),
    };
    for (key, cells) in rows {
        let mut values = Vec::with_capacity(cells.len());
        for (ci, cell) in cells.into_iter().enumerate() {
            let Some((stored, r)) = cell else {
                values.push((None, 0));
                continue;
            };
            d.changed += r.recoded as u64;
            if let Some((reason, runner_up)) = r.undecidable {
                d.quarantine.push(Quarantined {
                    col: columns[ci].name.clone(),
                    key: keycodec::pack(&key),
                    value: stored,
                    reason,
                    runner_up,
                });
            }
            values.push(match r.stage {
                Stage::Server(_) => (None, 0),
                Stage::Value(v) => (Some(v), STAGED_VALUE),
                Stage::Declared => (None, STAGED_DECLARED),
            });
        }
        if values.iter().any(|(_, flag)| *flag != 0) {
            d.staged.push((key, values));
        }
    }
    d
}

//! What the shadow should hold for a batch, summed on our side from the decisions the copy
//! wrote: per row the `CRC32` the server's [`crate::engine::copy::table::checksum_sql::Compare::light_sums_sql`]
//! gives the shadow's key and job values. Pure.
//!
//! The copy decided every value of the batch from its bytes, so it knows what each job value
//! in the shadow must be; summing that here spares the check pass reading the table's job
//! values a second time and converting them again on the server (the cost the check had:
//! more than a third of the server's work in a copy). A value whose shadow bytes only the
//! server knows (its conversion from the declared charset, outside the proven codec) leaves
//! the batch to the server-side comparison.

use crate::engine::copy::table::recoded::{Decisions, Stage};
use crate::engine::read::Key;
use std::hash::BuildHasher;

/// How a job column's shadow bytes follow from a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A UTF-8 column (utf8mb4, utf8mb3): a staged value is stored as it is, UTF-8 already.
    Utf8,
    /// A binary column: bytes as they are.
    Binary,
}

/// Each job column's [`Target`], or `None` when some column's bytes cannot be told here
/// (a target charset outside UTF-8 and binary, or a job column in the key: the shadow's key
/// then is not the table's).
pub(crate) fn targets(
    charsets: &[Option<String>],
    key_names: &[&str],
    job_names: &[&str],
) -> Option<Vec<Target>> {
    if job_names.iter().any(|j| key_names.contains(j)) {
        return None;
    }
    charsets
        .iter()
        .map(|cs| match cs.as_deref() {
            None => Some(Target::Binary),
            Some("utf8mb4" | "utf8mb3" | "utf8") => Some(Target::Utf8),
            Some(_) => None,
        })
        .collect()
}

/// A batch's rows as the shadow should hold them: per row a tag of its key
/// ([`key_tag`]), the hash of its key and job values, and, where the row's read gave it, the
/// server's hash of its key and other columns as the table held them
/// ([`crate::engine::copy::table::checksum_sql::Compare::others_hash_sql`]).
pub(crate) type Expected = Vec<(u64, u32, Option<u32>)>;

/// The shadow bytes of one decided job value (`None`: only the server knows them).
fn shadow_bytes<'a>(stored: &'a [u8], stage: &'a Stage, target: Target) -> Option<&'a [u8]> {
    match (stage, target) {
        (Stage::Value(v), Target::Binary) => Some(v),
        (Stage::Value(v), Target::Utf8) => std::str::from_utf8(v).is_ok().then_some(v.as_slice()),
        (Stage::Server(Some(v)) | Stage::Other(_, v), _) => Some(v),
        // A binary target copies the stored bytes; ASCII reads the same in every charset.
        (Stage::Server(None) | Stage::Declared, Target::Binary) => Some(stored),
        (Stage::Server(None) | Stage::Declared, Target::Utf8) => {
            stored.is_ascii().then_some(stored)
        }
    }
}

/// `CRC32(CONCAT_WS('#', key…, job values…, CONCAT(ISNULL(value)…)))` of one decided row
/// as the shadow should hold it; `None` when some value's shadow bytes are the server's to know.
pub(crate) fn row_hash(key: &Key, cells: &Decisions, targets: &[Target]) -> Option<u32> {
    let mut h = crc32fast::Hasher::new();
    let mut first = true;
    let mut part = |h: &mut crc32fast::Hasher, bytes: &[u8]| {
        if !first {
            h.update(b"#");
        }
        first = false;
        h.update(bytes);
    };
    for k in key {
        part(&mut h, k);
    }
    let mut nulls = Vec::with_capacity(cells.len());
    for (cell, target) in cells.iter().zip(targets) {
        match cell {
            None => nulls.push(b'1'),
            Some((stored, r)) => {
                part(&mut h, shadow_bytes(stored, &r.stage, *target)?);
                nulls.push(b'0');
            }
        }
    }
    part(&mut h, &nulls);
    Some(h.finalize())
}

/// A tag for a key, to find a row of a batch by its key without keeping the key.
pub(crate) fn key_tag(key: &Key) -> u64 {
    tagger().hash_one(key)
}

/// One hasher for every tag of the process: tags are compared within it only. A collision
/// costs no correctness: a row left out on our side and not on the server's is a difference,
/// and the batch goes to the server-side comparison.
fn tagger() -> &'static foldhash::fast::RandomState {
    static T: std::sync::OnceLock<foldhash::fast::RandomState> = std::sync::OnceLock::new();
    T.get_or_init(Default::default)
}

/// The batch's expectation, or `None` when some row's shadow bytes are the server's to know
/// (without the hashes of the other columns: the check sums the table's side).
pub(crate) fn batch(rows: &[(Key, Decisions)], targets: &[Target]) -> Option<Expected> {
    rows.iter()
        .map(|(k, cells)| row(k, cells, targets, None))
        .collect()
}

/// One row's part of its batch's expectation ([`batch`]), with `others` the server's hash
/// of its key and other columns where its read gave it.
pub(crate) fn row(
    key: &Key,
    cells: &Decisions,
    targets: &[Target],
    others: Option<u32>,
) -> Option<(u64, u32, Option<u32>)> {
    Some((key_tag(key), row_hash(key, cells, targets)?, others))
}

/// `expected` (aligned with a batch's rows) once the rows whose keys are `stale` are replaced
/// by `renewed`, decided afresh: theirs left out, the renewed rows' added; `None` when some
/// renewed row's shadow bytes are the server's to know.
pub(crate) fn renew(
    expected: Expected,
    stale: &[Key],
    renewed: &[(Key, Decisions)],
    targets: &[Target],
) -> Option<Expected> {
    if stale.is_empty() && renewed.is_empty() {
        return Some(expected);
    }
    let gone: std::collections::HashSet<u64> = stale.iter().map(key_tag).collect();
    let mut out: Expected = expected
        .into_iter()
        .filter(|(tag, _, _)| !gone.contains(tag))
        .collect();
    out.extend(batch(renewed, targets)?);
    Some(out)
}

/// What a batch's rows should sum to once the rows `changed` says of their tags (rows the
/// application changed since they were decided: the change log's business) are left out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Sums {
    /// Rows summed.
    pub(crate) rows: i64,
    /// `BIT_XOR` of their hashes of key and job values.
    pub(crate) job: u64,
    /// `BIT_XOR` of their hashes of key and other columns as read, when every row summed
    /// has one.
    pub(crate) others: Option<u64>,
    /// The tags left out.
    pub(crate) left_out: Vec<u64>,
}

/// The [`Sums`] of `expected` without the rows `changed` says of their tags.
pub(crate) fn sums_without(expected: &Expected, changed: impl Fn(u64) -> bool) -> Sums {
    let mut s = Sums {
        rows: 0,
        job: 0,
        others: Some(0),
        left_out: Vec::new(),
    };
    for &(tag, hash, others) in expected {
        if changed(tag) {
            s.left_out.push(tag);
        } else {
            s.rows += 1;
            s.job ^= u64::from(hash);
            s.others = s.others.zip(others).map(|(a, b)| a ^ u64::from(b));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::copy::table::recoded::Recoded;
    use std::collections::HashSet;

    fn cell(stored: &[u8], stage: Stage) -> Option<(Vec<u8>, Recoded)> {
        Some((
            stored.to_vec(),
            Recoded {
                stage,
                recoded: false,
                undecidable: None,
            },
        ))
    }

    #[test]
    fn a_rows_hash_is_the_crc32_of_what_concat_ws_gives_the_server() {
        let key = vec![b"42".to_vec()];
        let moscow = "Москва".as_bytes().to_vec();
        let cells: Decisions = vec![
            cell(
                b"\xcc\xee\xf1\xea\xe2\xe0",
                Stage::Server(Some(moscow.clone())),
            ),
            None,
            cell(b"raw\xff", Stage::Declared),
        ];
        let t = [Target::Utf8, Target::Utf8, Target::Binary];
        let mut want = b"42#".to_vec();
        want.extend(&moscow);
        want.extend(b"#raw\xff#010");
        assert_eq!(row_hash(&key, &cells, &t), Some(crc32fast::hash(&want)));
        // Known value of the server's CRC32('a#b#0') (zlib's CRC-32, as MySQL and MariaDB use).
        let one: Decisions = vec![cell(b"b", Stage::Server(None))];
        assert_eq!(
            row_hash(&vec![b"a".to_vec()], &one, &[Target::Utf8]),
            Some(crc32fast::hash(b"a#b#0"))
        );
    }

    #[test]
    fn a_value_only_the_server_can_convert_leaves_the_batch_to_the_server() {
        let key = vec![b"1".to_vec()];
        let declared: Decisions = vec![cell(b"\xe9t\xe9", Stage::Declared)];
        assert_eq!(row_hash(&key, &declared, &[Target::Utf8]), None);
        let not_utf8: Decisions = vec![cell(b"x", Stage::Value(b"\xff".to_vec()))];
        assert_eq!(row_hash(&key, &not_utf8, &[Target::Utf8]), None);
        let ascii: Decisions = vec![cell(b"plain", Stage::Declared)];
        assert!(row_hash(&key, &ascii, &[Target::Utf8]).is_some());
        assert!(batch(&[(key.clone(), declared)], &[Target::Utf8]).is_none());
    }

    #[test]
    fn targets_outside_utf8_and_binary_or_a_job_column_in_the_key_are_not_summed_here() {
        let utf8 = Some("utf8mb4".to_string());
        assert_eq!(
            targets(&[utf8.clone(), None], &["id"], &["a", "b"]),
            Some(vec![Target::Utf8, Target::Binary])
        );
        assert_eq!(targets(&[Some("latin1".into())], &["id"], &["a"]), None);
        assert_eq!(targets(&[utf8], &["code"], &["code"]), None);
    }

    #[test]
    fn renewed_rows_replace_the_stale_ones_in_a_batch_s_expectation() {
        let t = [Target::Utf8];
        let row = |k: &[u8], v: &[u8]| (vec![k.to_vec()], vec![cell(v, Stage::Server(None))]);
        let rows = vec![row(b"1", b"a"), row(b"2", b"b"), row(b"3", b"c")];
        let exp = batch(&rows, &t).unwrap();
        let renewed = vec![row(b"2", b"B")];
        let got = renew(
            exp.clone(),
            &[vec![b"2".to_vec()], vec![b"3".to_vec()]],
            &renewed,
            &t,
        );
        let want = batch(&[row(b"1", b"a"), row(b"2", b"B")], &t);
        assert_eq!(got, want);
        assert_eq!(renew(exp.clone(), &[], &[], &t), Some(exp));
    }

    #[test]
    fn changed_rows_are_left_out_of_the_sums() {
        let exp: Expected = vec![
            (1, 0b001, Some(0b100)),
            (2, 0b010, None),
            (3, 0b100, Some(0b001)),
        ];
        let changed: HashSet<u64> = [2, 9].into_iter().collect();
        let want = Sums {
            rows: 2,
            job: 0b101,
            others: Some(0b101),
            left_out: vec![2],
        };
        assert_eq!(sums_without(&exp, |t| changed.contains(&t)), want);
        // A row summed without the other columns' hash: the table's side is summed apart.
        let none = sums_without(&exp, |t| t == 1);
        assert_eq!((none.rows, none.job, none.others), (2, 0b110, None));
    }
}

//! Which logged keys the copy has yet to read, so their replay can be left to it. Pure.
//!
//! A row the application changes ahead of the copy is logged by the triggers like any other,
//! but replaying it then is wasted: the copy reads it later, as it stands then, and decides it
//! afresh, and first deletes whatever the replay had put in the shadow for its range. Under a
//! writer spread over the table, most logged keys lie there (half the updates, every insert
//! at the end). gh-ost and Spirit skip such keys the same way, for keys they can order.
//!
//! The mark is the last key anything has read: the rows read ahead when there are some,
//! else the last key copied. A key is past it only when every key column is an integer (then
//! the server's key order is the order of the numbers, compared here) and the copy will read
//! on past the mark (the rows read ahead were a full batch: fewer, and the table ended there
//! when they were read, so a row inserted since must come from the log).
//!
//! A key the copy has read ahead but not yet copied is left in the log ([`Fate::Hold`]) until
//! the step that copies its range is done: replayed now, its row would be copied into the
//! shadow, deleted again by that step and copied once more. That step still reads the row
//! again and decides it afresh (the replay names it among the keys changed since the
//! read-ahead), so no decision made on its old bytes is written.

use crate::engine::read::Key;
use std::cmp::Ordering;

/// Whether the copy will yet read the row of `key`: it lies past `mark` in key order
/// (integer keys, compared part by part). `false` whenever either cannot be read as integers.
pub(crate) fn unread(key: &[Vec<u8>], mark: &[Vec<u8>]) -> bool {
    compare(key, mark) == Some(Ordering::Greater)
}

/// Where the copy stands, for the replay while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marks {
    /// The last key copied (`None`: none yet).
    pub(crate) copied: Option<Key>,
    /// The last key read: the rows read ahead's, else the last copied.
    pub(crate) read: Key,
}

/// What the replay does now with a logged key while the copy runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Copied again now: the copy has written its row (or its key is not integers).
    Replay,
    /// Left in the log: its row was read ahead and the next step copies it; replayed after.
    Hold,
    /// Taken off the log: the copy reads the row later, as it stands.
    Drop,
}

/// The fate of logged `key` by where the copy stands ([`Marks`]).
pub(crate) fn fate(key: &[Vec<u8>], marks: &Marks) -> Fate {
    match compare(key, &marks.read) {
        Some(Ordering::Greater) => Fate::Drop,
        Some(_) if marks.copied.as_ref().is_none_or(|c| unread(key, c)) => Fate::Hold,
        _ => Fate::Replay,
    }
}

/// Compares two integer keys part by part, as the server orders them; `None` unless every
/// part of both is a plain integer.
fn compare(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Ordering> {
    if a.len() != b.len() {
        return None;
    }
    for (x, y) in a.iter().zip(b) {
        match integer(x)?.cmp(&integer(y)?) {
            Ordering::Equal => continue,
            other => return Some(other),
        }
    }
    Some(Ordering::Equal)
}

/// A key part's integer, as `CAST(… AS BINARY)` writes it (`-12`, `18446744073709551615`).
fn integer(part: &[u8]) -> Option<i128> {
    let digits = part.strip_prefix(b"-").unwrap_or(part);
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(part).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(parts: &[&str]) -> Key {
        parts.iter().map(|p| p.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_key_is_unread_only_past_the_mark_in_number_order() {
        let mark = key(&["100"]);
        assert!(unread(&key(&["101"]), &mark));
        assert!(unread(&key(&["1000"]), &mark), "by number, not by bytes");
        assert!(!unread(&key(&["100"]), &mark), "the mark itself was read");
        assert!(!unread(&key(&["99"]), &mark));
        assert!(!unread(&key(&["-5"]), &mark));
        assert!(unread(&key(&["-5"]), &key(&["-10"])));
        assert!(unread(
            &key(&["18446744073709551615"]),
            &key(&["18446744073709551614"])
        ));
    }

    #[test]
    fn a_key_read_ahead_and_not_yet_copied_is_held_for_the_next_step() {
        let marks = Marks {
            copied: Some(key(&["100"])),
            read: key(&["140"]),
        };
        assert_eq!(fate(&key(&["99"]), &marks), Fate::Replay);
        assert_eq!(fate(&key(&["100"]), &marks), Fate::Replay);
        assert_eq!(fate(&key(&["101"]), &marks), Fate::Hold);
        assert_eq!(fate(&key(&["140"]), &marks), Fate::Hold);
        assert_eq!(fate(&key(&["141"]), &marks), Fate::Drop);
        // Nothing read past what was copied: no key held.
        let flush = Marks {
            copied: Some(key(&["100"])),
            read: key(&["100"]),
        };
        assert_eq!(fate(&key(&["100"]), &flush), Fate::Replay);
        assert_eq!(fate(&key(&["101"]), &flush), Fate::Drop);
        // Nothing copied yet: everything up to the read mark is held.
        let first = Marks {
            copied: None,
            read: key(&["140"]),
        };
        assert_eq!(fate(&key(&["-3"]), &first), Fate::Hold);
        // A key that is not integers is replayed, whatever the marks.
        assert_eq!(fate(&key(&["abc"]), &marks), Fate::Replay);
        assert_eq!(fate(&key(&["abc"]), &first), Fate::Replay);
    }

    #[test]
    fn a_composite_key_compares_part_by_part() {
        let mark = key(&["7", "20"]);
        assert!(unread(&key(&["7", "21"]), &mark));
        assert!(unread(&key(&["8", "1"]), &mark));
        assert!(!unread(&key(&["7", "3"]), &mark));
        assert!(!unread(&key(&["6", "99"]), &mark));
    }

    #[test]
    fn anything_not_an_integer_is_left_to_the_replay() {
        let mark = key(&["100"]);
        for odd in [
            &["abc"][..],
            &["1e5"],
            &[""],
            &["-"],
            &["101", "1"],
            &["123456789012345678901"],
        ] {
            assert!(!unread(&key(odd), &mark), "{odd:?}");
        }
        assert!(!unread(&key(&["200"]), &key(&["x"])));
    }
}

//! Decisions on short values remembered per job column, for the copy's and the in-place
//! deciders alike: names, cities and statuses repeat across rows, and a decision depends on
//! nothing but the bytes and the column (its prior is fixed at job start).

use std::collections::HashMap;
use std::sync::Mutex;

/// Values up to this long are remembered.
pub const REMEMBER_BYTES: usize = 96;
/// Remembered decisions per column before the memory starts afresh.
pub const REMEMBER_VALUES: usize = 50_000;

/// One column's remembered decisions. foldhash, not SipHash: the keys are the table's own
/// values, hashed once per row, and SipHash's defence against chosen keys cost a percent of
/// a copy's CPU.
type Column<T> = HashMap<Vec<u8>, T, foldhash::fast::RandomState>;

/// Each job column's remembered decisions, shared by the threads that decide.
pub struct Remembered<T> {
    columns: Mutex<Vec<Column<T>>>,
}

impl<T: Clone> Remembered<T> {
    /// An empty memory for `columns` job columns.
    pub fn new(columns: usize) -> Self {
        Remembered {
            columns: Mutex::new((0..columns).map(|_| Column::default()).collect()),
        }
    }

    /// The decision on `stored` in job column `ci`: remembered, or made by `decide` (and
    /// remembered when the value is short and not ASCII: ASCII is decided at once anyway).
    /// The memory is locked per look-up, not across `decide`: several threads decide at once.
    pub fn decide(&self, ci: usize, stored: &[u8], decide: impl FnOnce() -> T) -> T {
        if stored.is_ascii() || stored.len() > REMEMBER_BYTES {
            return decide();
        }
        if let Some(d) = self.columns().get(ci).and_then(|m| m.get(stored)) {
            return d.clone();
        }
        let d = decide();
        let mut columns = self.columns();
        if columns[ci].len() >= REMEMBER_VALUES {
            columns[ci].clear();
        }
        columns[ci].insert(stored.to_vec(), d.clone());
        d
    }

    /// The memory (a panic elsewhere leaves it as valid as before).
    fn columns(&self) -> std::sync::MutexGuard<'_, Vec<Column<T>>> {
        self.columns.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_value_is_decided_once_a_long_or_ascii_one_every_time() {
        let m = Remembered::new(2);
        let mut calls = 0;
        for _ in 0..3 {
            assert_eq!(
                m.decide(1, b"\xcc\xee\xf1\xea\xe2\xe0", || {
                    calls += 1;
                    7
                }),
                7
            );
        }
        assert_eq!(calls, 1, "remembered per column");
        m.decide(0, b"\xcc\xee\xf1\xea\xe2\xe0", || {
            calls += 1;
            8
        });
        assert_eq!(calls, 2, "each column its own memory");
        for _ in 0..2 {
            m.decide(0, b"plain", || {
                calls += 1;
                0
            });
            m.decide(0, &[0xE0; REMEMBER_BYTES + 1], || {
                calls += 1;
                0
            });
        }
        assert_eq!(calls, 6);
    }
}

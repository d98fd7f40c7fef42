//! Decisions on short values remembered per job column, for the copy's and the in-place
//! deciders alike: names, cities and statuses repeat across rows, and a decision depends on
//! nothing but the bytes and the column (its prior is fixed at job start).

use std::collections::HashMap;
use std::sync::Mutex;

/// Values up to this long are remembered.
pub const REMEMBER_BYTES: usize = 96;
/// Remembered decisions per column before the memory starts afresh.
pub const REMEMBER_VALUES: usize = 50_000;
/// Look-ups per column after which the memory judges whether it serves.
pub const PROBE_VALUES: u32 = 4_096;
/// A column whose look-ups found fewer than one in this many remembered stops remembering
/// for [`REST_VALUES`] values: its short values do not repeat (a body with its order number),
/// and each miss cost a hash, a copy of the key and of the decision, and memory that a
/// full map is cleared of again, for nothing (in a profile of bench_copy's 1M-row copy, this
/// function's own share of the tool's CPU fell from 4.7% to 2.6%, its allocations with it).
pub const HIT_ONE_IN: u32 = 8;
/// Values a column that stopped remembering is decided without the memory, before it tries
/// again (the table's later rows may repeat where its first did not).
pub const REST_VALUES: u32 = 200_000;

/// One column's remembered decisions, and how well they serve. foldhash, not SipHash: the
/// keys are the table's own values, hashed once per row, and SipHash's defence against
/// chosen keys cost a percent of a copy's CPU.
struct Column<T> {
    map: HashMap<Vec<u8>, T, foldhash::fast::RandomState>,
    /// Look-ups and hits since the memory last judged itself.
    lookups: u32,
    hits: u32,
    /// Values still to decide without the memory (0: remembering).
    resting: u32,
}

impl<T> Default for Column<T> {
    fn default() -> Self {
        Column {
            map: HashMap::default(),
            lookups: 0,
            hits: 0,
            resting: 0,
        }
    }
}

impl<T> Column<T> {
    /// After [`PROBE_VALUES`] look-ups: rests (its memory freed) when too few hit, else
    /// counts afresh.
    fn judge(&mut self) {
        if self.lookups < PROBE_VALUES {
            return;
        }
        if self.hits * HIT_ONE_IN < self.lookups {
            self.resting = REST_VALUES;
            self.map = HashMap::default();
        }
        self.lookups = 0;
        self.hits = 0;
    }
}

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
    /// remembered when the value is short and not ASCII: ASCII is decided at once anyway,
    /// and while the column rests, see [`HIT_ONE_IN`]). The memory is locked per look-up,
    /// not across `decide`: several threads decide at once. A decision depends on nothing
    /// but the bytes and the column, so whether it was remembered changes nothing but the cost.
    pub fn decide(&self, ci: usize, stored: &[u8], decide: impl FnOnce() -> T) -> T {
        if stored.is_ascii() || stored.len() > REMEMBER_BYTES {
            return decide();
        }
        {
            let mut columns = self.columns();
            let Some(c) = columns.get_mut(ci) else {
                return decide();
            };
            if c.resting > 0 {
                c.resting -= 1;
                return decide();
            }
            c.lookups += 1;
            if let Some(d) = c.map.get(stored) {
                c.hits += 1;
                let d = d.clone();
                c.judge();
                return d;
            }
        }
        let d = decide();
        let mut columns = self.columns();
        let c = &mut columns[ci];
        c.judge();
        if c.resting == 0 {
            if c.map.len() >= REMEMBER_VALUES {
                c.map.clear();
            }
            c.map.insert(stored.to_vec(), d.clone());
        }
        d
    }

    /// How many decisions column `ci` remembers now.
    pub fn remembered(&self, ci: usize) -> usize {
        self.columns().get(ci).map_or(0, |c| c.map.len())
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

    /// A short non-ASCII value unique to its row (`id` makes it so).
    fn unique(id: u32) -> Vec<u8> {
        let mut v = b"\xcc\xee\xf1\xea\xe2\xe0 #".to_vec();
        v.extend_from_slice(id.to_string().as_bytes());
        v
    }

    #[test]
    fn a_column_whose_values_do_not_repeat_stops_remembering_then_tries_again() {
        let m = Remembered::new(2);
        let mut calls = 0u32;
        let probe = PROBE_VALUES;
        for id in 0..probe {
            assert_eq!(
                m.decide(0, &unique(id), || {
                    calls += 1;
                    id
                }),
                id
            );
            // The other column repeats one name: every look-up but the first hits.
            m.decide(1, b"\xcc\xee\xf1\xea\xe2\xe0", || 7);
        }
        assert_eq!(calls, probe);
        assert_eq!(
            m.remembered(0),
            0,
            "judged useless after {probe} look-ups: freed"
        );
        assert_eq!(
            m.remembered(1),
            1,
            "a column whose values repeat keeps its memory"
        );
        // Resting: a value seen before is decided again, nothing is remembered.
        m.decide(0, &unique(1), || {
            calls += 1;
            1
        });
        assert_eq!((calls, m.remembered(0)), (probe + 1, 0));
        for id in 1..REST_VALUES {
            m.decide(0, &unique(id), || id);
        }
        // Rested: it remembers again (and a repeat hits).
        m.decide(0, &unique(5), || {
            calls += 1;
            5
        });
        m.decide(0, &unique(5), || {
            calls += 1;
            5
        });
        assert_eq!((calls, m.remembered(0)), (probe + 2, 1));
    }
}

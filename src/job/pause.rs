//! What rebuilding a keyless table under the cut-over's lock adds to the pause, as `plan`,
//! the refusals and the rehearsal say it.

use std::time::Duration;

/// Rows per second a rebuild writes under the lock, for the estimate `plan` and the rehearsal
/// print: measured on the throwaway MariaDB 10.11 with 10,000 rows of two text columns (~30
/// and ~150 bytes) beside a keyed table: 168 ms on a quiet moment, 350-690 ms with other
/// builds on the two cores (the server's `INSERT … SELECT` through the maps took 97 ms).
pub const REBUILD_ROWS_PER_SEC: u64 = 25_000;

/// What a rebuild of `rows` rows adds to the cut-over's pause, about.
pub fn pause_estimate(rows: u64) -> Duration {
    Duration::from_millis(rows.saturating_mul(1000) / REBUILD_ROWS_PER_SEC)
}

/// [`pause_estimate`] in words: `40 ms of pause`, `2.5 s of pause`.
pub fn pause_words(rows: u64) -> String {
    let d = pause_estimate(rows);
    if d < Duration::from_secs(1) {
        format!("{} ms of pause", d.as_millis().max(1))
    } else {
        format!("{:.1} s of pause", d.as_secs_f64())
    }
}

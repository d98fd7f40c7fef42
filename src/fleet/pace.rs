//! The measured pace a fleet's copy time is estimated at: the figures of
//! docs/benchmarks.md, named here once so the reports say which they use. Pure.

use crate::scan::model::Strategy;

/// Rows per second of the online copy: `bench_copy` on 1M rows with a writer, lock mode 1,
/// the restructured binary (docs/benchmarks.md, "After the layout change", 2026-11-28).
pub const COPY_ROWS_PER_SEC: u64 = 108_000;

/// Rows per second of an in-place run: `bench_scan_run --rows 1000000`, same section.
pub const IN_PLACE_ROWS_PER_SEC: u64 = 47_000;

/// The sentence the reports print beside an estimate.
pub const SOURCE: &str = "at the measured pace of docs/benchmarks.md (online copy 108,000 rows/s, \
     in place 47,000 rows/s, 1M rows on 2 cores with nothing else running): a floor, since \
     a job's pauses, throttling, replicas and the application's load only slow it";

/// Seconds to recode `rows` rows by `strategy` at the measured pace (0 for `none`).
pub fn seconds(strategy: Strategy, rows: u64) -> u64 {
    let pace = match strategy {
        Strategy::Copy => COPY_ROWS_PER_SEC,
        Strategy::InPlace => IN_PLACE_ROWS_PER_SEC,
        Strategy::None => return 0,
    };
    rows.div_ceil(pace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_rows_at_the_measured_pace() {
        assert_eq!(seconds(Strategy::Copy, 1_000_000), 10);
        assert_eq!(seconds(Strategy::InPlace, 1_000_000), 22);
        assert_eq!(seconds(Strategy::Copy, 1), 1);
        assert_eq!(seconds(Strategy::None, 1_000_000), 0);
    }
}

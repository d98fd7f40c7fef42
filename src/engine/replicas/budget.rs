//! The lag budget, without I/O: how many rows the next batch may take so that no replica,
//! chained ones included, lags past `max_replica_lag` while applying it, and whether the
//! job must hold before it.
//!
//! Every batch the job commits is noted with the tool's clock at its commit. A replica has
//! applied a batch once the heartbeat it has applied was written after that commit (the
//! beat follows the batch in the binary log). From when a replica was seen applying each
//! batch, the model learns its apply time per row: the time from when it could begin the
//! batch (the batch committed on the primary, its source replica had applied it, and it had
//! finished the batch before) to when it had applied it, over the batch's rows. A replica
//! below a relay begins a batch only once the relay has committed it (`log_slave_updates`
//! writes the relay's binary log at its commit), so its lag adds its source's apply time
//! to its own: chain depth counts.
//!
//! Before a batch, the model predicts each replica's lag at the end of applying it: the time
//! from the batch's commit until the replica has applied it, plus the heartbeat's own
//! granularity. That is the backlog it is still applying (earlier batches, predicted from
//! its measured pace), its source's time for the new batch, and its own. The batch takes the
//! most rows for which every prediction stays within the budget; when even a small batch
//! would not, the job holds until the replicas have worked their backlog off. So the job
//! holds before the overshoot, and a batch under way is one the slowest chain can apply
//! within the limit.
//!
//! A pace can be wrong by a few times from one batch to the next (a table outgrowing a
//! replica's buffer pool): the first batch takes [`FIRST_ROWS`] at most, one batch at most
//! [`BATCH_SHARE`] of the aim, and a pace that slowed is predicted to slow as much again.

use std::collections::VecDeque;

/// What the next batch may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowance {
    /// Go, with at most this many rows.
    Go(usize),
    /// Hold: replica `.0` (index) would lag past the limit even after a small batch.
    Hold(usize),
}

/// Share of `max_replica_lag` the predictions aim at (the rest absorbs a misprediction).
const AIM: f64 = 0.8;
/// A batch is started only if at least this share of the size an idle chain could take
/// fits the budget now (a smaller one would spend a transaction on little).
const SMALLEST_SHARE: f64 = 0.25;
/// The fewest rows a batch takes.
const FEWEST: usize = 10;
/// The most rows a batch takes before every replica's pace is measured: a first pace is
/// measured on a batch this small, so a replica slower than the first batch showed (a
/// fresh table's pages still cached, a busy host) is found out on a small batch, and the
/// next batches grow from it (twice the rows measured at most).
pub const FIRST_ROWS: usize = 500;
/// Weight of a new measurement of a replica's pace that is faster than the one known (a
/// slower one is taken at once: the budget errs toward holding).
const EASE: f64 = 0.3;
/// Share of the aim one batch's own apply on the whole chain may take, by the pace known:
/// a replica's pace can jump between two batches of the same size (the copy's table
/// outgrowing its buffer pool made every row 5 to 10 times dearer there within a few
/// batches), and a batch committed cannot be taken back: a batch is one transaction, so the
/// replica's lag grows for as long as it applies it. At a sixth or so of the aim, a batch
/// whose rows turned five times dearer still ends within the limit (measured on a chained
/// replica with a 16 MiB buffer pool: half the aim overshot 500 ms by 1.4 times, a
/// quarter by 1.15, this share by none; docs/benchmarks.md).
const BATCH_SHARE: f64 = 0.15;
/// The most a pace that slowed is expected to slow again by, batch to batch.
const MOST_TREND: f64 = 3.0;

/// One committed batch not yet seen applied by every replica.
#[derive(Debug, Clone)]
struct Batch {
    /// Its number, from 1.
    id: u64,
    /// The tool's clock when its commit returned, in microseconds.
    committed_us: i64,
    /// Rows it wrote.
    rows: u64,
    /// Per replica, when it was seen applied (estimated), once it was.
    applied_us: Vec<Option<i64>>,
}

/// What the model knows of one replica.
#[derive(Debug, Clone, Default)]
struct Pace {
    /// Its apply time per row, in microseconds (`None`: no batch measured yet).
    us_per_row: Option<f64>,
    /// How much slower its last measurement was than the pace known before it (1: not
    /// slower): a pace that slowed is predicted to slow as much again for the next batch
    /// (a table outgrowing a replica's buffer pool slows it batch after batch).
    trend: f64,
    /// The last batch it was seen applying (0: none).
    applied: u64,
    /// When it finished that batch (estimated).
    finished_us: i64,
    /// When it was last sampled (0: never).
    sampled_us: i64,
    /// The lag that sample showed, in microseconds: what it still has to apply of the
    /// application's own writes too, which no batch of the job's accounts for.
    lag_us: i64,
    /// The most rows one measurement of its pace spanned: a pace is trusted for a batch up
    /// to twice that (a replica's pace changes with what it holds: an index outgrowing its
    /// buffer pool makes every row dearer).
    measured_rows: u64,
    /// Whether it was seen stopped since its last measured batch: the next measurement
    /// holds the stop's time, not its pace, and is not taken.
    disturbed: bool,
}

/// The lag budget of one job's replicas.
#[derive(Debug, Clone)]
pub struct Budget {
    limit_us: f64,
    /// The lag's measuring granularity (a beat interval and a sampling interval): a lag
    /// shows that much late.
    grain_us: f64,
    /// Per replica, the replica it relays from (`None`: the primary).
    sources: Vec<Option<usize>>,
    paces: Vec<Pace>,
    /// Batches committed and not yet applied everywhere, in commit order.
    batches: VecDeque<Batch>,
    next_id: u64,
    /// The primary's time per row of a batch, in microseconds (what a batch's commit waits).
    primary_us_per_row: Option<f64>,
}

impl Budget {
    /// A budget of `limit_us` for replicas relaying from `sources` (`None`: the primary;
    /// `Some(i)`: replica `i`), whose lag is measured `grain_us` late at most.
    pub fn new(limit_us: i64, grain_us: i64, sources: Vec<Option<usize>>) -> Budget {
        let n = sources.len();
        Budget {
            limit_us: limit_us as f64,
            grain_us: grain_us as f64,
            sources: sources
                .into_iter()
                .enumerate()
                .map(|(i, s)| s.filter(|&s| s != i && s < n))
                .collect(),
            paces: vec![Pace::default(); n],
            batches: VecDeque::new(),
            next_id: 1,
            primary_us_per_row: None,
        }
    }

    /// Notes a batch of `rows` whose commit returned at `committed_us`, after `took_us` on
    /// the primary.
    pub fn committed(&mut self, committed_us: i64, rows: u64, took_us: i64) {
        if rows == 0 {
            return;
        }
        let per_row = took_us.max(0) as f64 / rows as f64;
        self.primary_us_per_row = Some(match self.primary_us_per_row {
            Some(p) => p.min(per_row) * 0.5 + per_row * 0.5,
            None => per_row,
        });
        if self.paces.is_empty() {
            return;
        }
        self.batches.push_back(Batch {
            id: self.next_id,
            committed_us,
            rows,
            applied_us: vec![None; self.paces.len()],
        });
        self.next_id += 1;
    }

    /// Notes that replica `r` was seen stopped (or not answering) at `at_us`.
    pub fn stopped(&mut self, r: usize, at_us: i64) {
        if let Some(p) = self.paces.get_mut(r) {
            p.disturbed = true;
            p.sampled_us = at_us;
        }
    }

    /// Notes a sample of replica `r` taken at `at_us` that found the heartbeat written at
    /// `beat_us` applied: every batch committed before that beat was written is applied
    /// there, and the batches applied since its last sample measure its pace.
    pub fn sampled(&mut self, r: usize, at_us: i64, beat_us: i64) {
        let Some(pace) = self.paces.get_mut(r) else {
            return;
        };
        pace.lag_us = (at_us - beat_us).max(0);
        let before = if pace.sampled_us > 0 {
            pace.sampled_us
        } else {
            at_us
        };
        // Applied somewhere between the sample before and this one.
        let done_us = before + (at_us - before) / 2;
        let (applied, finished, disturbed) = (pace.applied, pace.finished_us, pace.disturbed);
        let source = self.sources[r];
        let mut begin: Option<i64> = None;
        let (mut rows, mut last) = (0u64, applied);
        for b in self.batches.iter_mut() {
            if b.id <= applied || b.committed_us > beat_us {
                continue;
            }
            // The source's own estimate, where it saw the batch applied first.
            let from_source = source.and_then(|s| b.applied_us[s]).unwrap_or(i64::MIN);
            begin.get_or_insert(b.committed_us.max(finished).max(from_source));
            b.applied_us[r] = Some(done_us);
            rows += b.rows;
            last = b.id;
        }
        let pace = &mut self.paces[r];
        pace.sampled_us = at_us;
        if let Some(begin) = begin {
            let took = (done_us - begin).max(0) as f64;
            let seen = took / rows as f64;
            if !disturbed {
                pace.measured_rows = pace.measured_rows.max(rows);
                pace.trend = match pace.us_per_row {
                    Some(p) if seen > p && p > 0.0 => (seen / p).min(MOST_TREND),
                    _ => 1.0,
                };
                pace.us_per_row = Some(match pace.us_per_row {
                    Some(p) if seen < p => p + (seen - p) * EASE,
                    _ => seen,
                });
            }
            pace.applied = last;
            pace.finished_us = done_us.max(finished);
            pace.disturbed = false;
        }
        let everywhere = |b: &Batch| b.applied_us.iter().all(Option::is_some);
        while self.batches.front().is_some_and(everywhere) {
            self.batches.pop_front();
        }
    }

    /// What the next batch may do at `now_us`, asked for `wanted` rows.
    pub fn allow(&self, now_us: i64, wanted: usize) -> Allowance {
        let wanted = wanted.max(FEWEST);
        // A replica whose pace is unknown takes one batch at a time until it is measured.
        if let Some(r) = self.paces.iter().position(|p| p.us_per_row.is_none()) {
            return if self.batches.is_empty() {
                Allowance::Go(wanted.min(FIRST_ROWS))
            } else {
                Allowance::Hold(r)
            };
        }
        let aim = self.limit_us * AIM - self.grain_us;
        // The most an idle chain could take, and the least worth a batch now.
        let idle = (0..self.paces.len())
            .map(|r| self.rows_within(r, aim * BATCH_SHARE))
            .min()
            .unwrap_or(usize::MAX);
        let fewest = ((idle as f64 * SMALLEST_SHARE) as usize)
            .max(FEWEST)
            .min(wanted);
        let backlog = self.backlog(now_us);
        let trusted = self
            .paces
            .iter()
            .map(|p| (2 * p.measured_rows).min(usize::MAX as u64) as usize)
            .min()
            .unwrap_or(usize::MAX);
        let mut n = wanted.min(idle.max(FEWEST)).min(trusted.max(FEWEST));
        loop {
            match self.worst(now_us, &backlog, n, aim) {
                None => return Allowance::Go(n),
                Some(r) if n <= fewest => {
                    // Not even the smallest batch fits an idle chain (a pace measured through
                    // a delay or a stall): holding would learn nothing, so the smallest goes,
                    // and its apply measures the pace again. Only a backlog holds.
                    let idle = backlog.iter().all(|&d| d <= now_us as f64);
                    let fits_idle =
                        self.worst(now_us, &vec![now_us as f64; backlog.len()], fewest, aim);
                    return match (idle, fits_idle) {
                        (true, Some(_)) => Allowance::Go(fewest),
                        _ => Allowance::Hold(r),
                    };
                }
                Some(_) => n = ((n as f64 * 0.85) as usize).max(fewest),
            }
        }
    }

    /// The rows replica `r`'s chain applies within `aim` when idle.
    fn rows_within(&self, r: usize, aim: f64) -> usize {
        let per_row: f64 = self.chain(r).map(|x| self.per_row(x)).sum();
        if aim <= 0.0 {
            return 0;
        }
        (aim / per_row.max(1e-3)).min(usize::MAX as f64 / 2.0) as usize
    }

    /// Replica `r` and the relays above it, nearest first.
    fn chain(&self, r: usize) -> impl Iterator<Item = usize> + '_ {
        let mut at = Some(r);
        let mut steps = 0;
        std::iter::from_fn(move || {
            let here = at?;
            steps += 1;
            at = self.sources[here].filter(|_| steps <= self.sources.len());
            Some(here)
        })
    }

    /// Replica `r`'s apply time per row as predicted for the next batch: its pace, slowed
    /// by its trend.
    fn per_row(&self, r: usize) -> f64 {
        let p = &self.paces[r];
        p.us_per_row.unwrap_or(0.0) * p.trend.max(1.0)
    }

    /// When each replica is predicted to have applied every batch committed so far.
    fn backlog(&self, now_us: i64) -> Vec<f64> {
        let n = self.paces.len();
        // Per batch, per replica, its predicted (or seen) finish; sources before replicas.
        let order = self.order();
        let mut done: Vec<f64> = self.paces.iter().map(|p| p.finished_us as f64).collect();
        for b in &self.batches {
            let mut this = vec![0.0; n];
            for &r in &order {
                this[r] = match b.applied_us[r] {
                    Some(t) => t as f64,
                    None if b.id <= self.paces[r].applied => done[r],
                    None => {
                        let from_source = self.sources[r].map_or(f64::MIN, |s| this[s]);
                        let begin = (b.committed_us as f64).max(done[r]).max(from_source);
                        begin + b.rows as f64 * self.per_row(r)
                    }
                };
                done[r] = done[r].max(this[r]);
            }
        }
        // A replica seen lagging is busy that long from its sample, less a beat's quantum,
        // whatever the model says: with the application's writes, or batches begun late.
        let quantum = self.grain_us / 2.0;
        done.into_iter()
            .zip(&self.paces)
            .map(|(d, p)| {
                let behind = p.sampled_us as f64 + (p.lag_us as f64 - quantum).max(0.0);
                d.max(behind).max(now_us as f64)
            })
            .collect()
    }

    /// The replicas in an order where each relay comes before those below it.
    fn order(&self) -> Vec<usize> {
        let depth = |r: usize| self.chain(r).count();
        let mut order: Vec<usize> = (0..self.paces.len()).collect();
        order.sort_by_key(|&r| depth(r));
        order
    }

    /// The first replica predicted to pass `aim` applying a batch of `rows` begun at
    /// `now_us`, if one is.
    fn worst(&self, now_us: i64, backlog: &[f64], rows: usize, aim: f64) -> Option<usize> {
        let primary = self.primary_us_per_row.unwrap_or(0.0) * 0.5;
        let commit = now_us as f64 + primary * rows as f64;
        let mut finish = vec![0.0; self.paces.len()];
        for r in self.order() {
            let from_source = self.sources[r].map_or(commit, |s| finish[s]);
            let begin = commit.max(backlog[r]).max(from_source);
            finish[r] = begin + rows as f64 * self.per_row(r);
        }
        (0..finish.len()).find(|&r| finish[r] - commit > aim)
    }

    /// Whether every replica has been seen applying every batch committed so far.
    pub fn all_applied(&self) -> bool {
        self.batches.is_empty()
    }

    /// Replica `r`'s measured apply time per row, in microseconds, once measured.
    pub fn us_per_row(&self, r: usize) -> Option<f64> {
        self.paces.get(r).and_then(|p| p.us_per_row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1000;

    /// A chain primary -> R0 -> R1, limit 500 ms, lag measured 50 ms late at most.
    fn chain() -> Budget {
        Budget::new(500 * MS, 50 * MS, vec![None, Some(0)])
    }

    #[test]
    fn the_first_batch_goes_alone_until_every_replica_is_measured() {
        let mut b = chain();
        assert_eq!(b.allow(0, 1000), Allowance::Go(FIRST_ROWS));
        b.committed(100 * MS, 1000, 50 * MS);
        assert_eq!(b.allow(100 * MS, 2000), Allowance::Hold(0));
        // R0 applies it 100 ms after the commit (sampled at 90 and 110 ms: done ~ 100 + 5).
        b.sampled(0, 190 * MS, 0);
        b.sampled(0, 210 * MS, 150 * MS);
        assert_eq!(b.us_per_row(0), Some(100.0));
        assert_eq!(b.allow(210 * MS, 2000), Allowance::Hold(1));
        // R1 begins it once R0 has it (200 ms) and finishes 200 ms later.
        b.sampled(1, 390 * MS, 0);
        b.sampled(1, 410 * MS, 150 * MS);
        assert_eq!(b.us_per_row(1), Some(200.0));
        assert!(b.batches.is_empty());
    }

    #[test]
    fn a_batch_is_as_large_as_the_whole_chain_applies_within_the_limit() {
        let mut b = chain();
        b.committed(100 * MS, 1000, 50 * MS);
        b.sampled(0, 190 * MS, 0);
        b.sampled(0, 210 * MS, 150 * MS);
        b.sampled(1, 390 * MS, 0);
        b.sampled(1, 410 * MS, 150 * MS);
        // Aim 0.8 * 500 - 50 = 350 ms, 0.15 of it for one batch; the chain takes 100 + 200
        // us per row: 175 rows.
        let Allowance::Go(n) = b.allow(500 * MS, 100_000) else {
            panic!("idle chain")
        };
        assert_eq!(n, 175);
        // A pace measured on 100 rows is trusted for 200 at most.
        let mut small = chain();
        small.committed(100 * MS, 100, 5 * MS);
        small.sampled(0, 110 * MS, 150 * MS);
        small.sampled(1, 120 * MS, 150 * MS);
        assert_eq!(small.allow(500 * MS, 100_000), Allowance::Go(200));
        assert_eq!(b.allow(500 * MS, 100), Allowance::Go(100));
    }

    #[test]
    fn the_job_holds_while_the_chain_still_applies_earlier_batches() {
        let mut b = chain();
        b.committed(100 * MS, 1000, 50 * MS);
        b.sampled(0, 210 * MS, 150 * MS);
        b.sampled(1, 410 * MS, 150 * MS);
        // A batch of 1500 rows committed at 500 ms: R0 busy until 650, R1 until 950.
        b.committed(500 * MS, 1500, 50 * MS);
        assert!(matches!(b.allow(520 * MS, 1100), Allowance::Hold(_)));
        // Late enough that the next batch's lag fits again.
        assert!(matches!(b.allow(900 * MS, 1100), Allowance::Go(_)));
    }

    #[test]
    fn a_replica_that_lags_on_the_applications_writes_leaves_less_room() {
        let mut b = Budget::new(500 * MS, 50 * MS, vec![None]);
        b.committed(0, 1000, MS);
        b.sampled(0, 100 * MS, MS);
        let Allowance::Go(idle) = b.allow(200 * MS, 100_000) else {
            panic!("idle")
        };
        // 0.15 of the aim of 350 ms at 100 us per row is 525 rows.
        assert_eq!(idle, 525);
        // Seen 300 ms behind (its beat written at 0 ms, read at 300 ms): busy until about
        // 275 ms from now (less half the grain), so a batch has about 75 ms of room.
        b.sampled(0, 300 * MS, 0);
        let Allowance::Go(n) = b.allow(300 * MS, 100_000) else {
            panic!("room left")
        };
        assert!((500..=750).contains(&n), "{n}");
        // Seen 380 ms behind: busy past the aim already, even the smallest batch waits.
        b.sampled(0, 400 * MS, 20 * MS);
        assert_eq!(b.allow(400 * MS, 100_000), Allowance::Hold(0));
    }

    #[test]
    fn a_pace_too_slow_for_any_batch_still_lets_the_smallest_go_once_the_chain_is_idle() {
        let mut b = Budget::new(400 * MS, 80 * MS, vec![None]);
        // 20 rows applied 3 s after their commit (a replica delayed on purpose).
        b.committed(0, 20, MS);
        b.sampled(0, 3_000 * MS, 3_000 * MS);
        assert_eq!(b.us_per_row(0), Some(150_000.0));
        assert_eq!(b.allow(3_100 * MS, 20), Allowance::Go(FEWEST));
        // While that batch is not applied, the backlog holds the next.
        b.committed(3_100 * MS, 10, MS);
        assert_eq!(b.allow(3_200 * MS, 20), Allowance::Hold(0));
        // Applied at once this time: the pace eases back.
        b.sampled(0, 3_150 * MS, 3_140 * MS);
        assert!(b.us_per_row(0).unwrap() < 150_000.0);
        assert_eq!(b.allow(3_200 * MS, 20), Allowance::Go(FEWEST));
    }

    #[test]
    fn a_slower_pace_is_taken_at_once_and_a_faster_one_eased_in() {
        let mut b = Budget::new(500 * MS, 50 * MS, vec![None]);
        b.committed(0, 1000, MS);
        b.sampled(0, 100 * MS, MS);
        assert_eq!(b.us_per_row(0), Some(100.0));
        b.committed(200 * MS, 1000, MS);
        b.sampled(0, 600 * MS, 200 * MS);
        // Sampled at 100 and 600: done ~350 ms, 150 ms for 1000 rows.
        assert_eq!(b.us_per_row(0), Some(150.0));
        b.committed(700 * MS, 1000, MS);
        b.sampled(0, 800 * MS, 750 * MS);
        // Done ~700 ms: 0 us per row seen, eased in by 0.3.
        assert_eq!(b.us_per_row(0), Some(105.0));
    }

    #[test]
    fn a_pace_that_slowed_is_predicted_to_slow_as_much_again() {
        let mut b = Budget::new(500 * MS, 50 * MS, vec![None]);
        b.committed(0, 1000, MS);
        b.sampled(0, 100 * MS, MS);
        let Allowance::Go(before) = b.allow(200 * MS, 100_000) else {
            panic!("idle")
        };
        // 1000 rows in 150 ms: 1.5 times slower, so 225 us per row predicted next.
        b.committed(200 * MS, 1000, MS);
        b.sampled(0, 600 * MS, 200 * MS);
        assert_eq!(b.us_per_row(0), Some(150.0));
        assert!((b.per_row(0) - 225.0).abs() < 1e-9);
        let Allowance::Go(slowed) = b.allow(700 * MS, 100_000) else {
            panic!("idle")
        };
        assert!(slowed * 2 < before, "{slowed} {before}");
        // Faster again: the trend is gone, the pace eased in.
        b.committed(700 * MS, 1000, MS);
        b.sampled(0, 800 * MS, 750 * MS);
        assert_eq!(b.per_row(0), b.us_per_row(0).unwrap());
    }

    #[test]
    fn the_settled_chain_has_every_batch_applied() {
        let mut b = chain();
        assert!(b.all_applied());
        b.committed(100 * MS, 1000, 50 * MS);
        assert!(!b.all_applied());
        b.sampled(0, 210 * MS, 150 * MS);
        assert!(!b.all_applied(), "R1 has not applied it yet");
        b.sampled(1, 410 * MS, 150 * MS);
        assert!(b.all_applied());
    }

    #[test]
    fn a_stop_is_not_taken_for_the_replicas_pace() {
        let mut b = Budget::new(500 * MS, 50 * MS, vec![None]);
        b.committed(0, 1000, MS);
        b.sampled(0, 100 * MS, MS);
        b.committed(200 * MS, 1000, MS);
        b.stopped(0, 5_000 * MS);
        b.sampled(0, 5_100 * MS, 5_000 * MS);
        assert_eq!(b.us_per_row(0), Some(100.0));
        assert!(b.batches.is_empty());
    }

    #[test]
    fn a_chain_that_names_itself_is_no_loop() {
        let b = Budget::new(500 * MS, 50 * MS, vec![Some(0), Some(5)]);
        assert_eq!(b.sources, vec![None, None]);
        let mut c = Budget::new(500 * MS, 50 * MS, vec![Some(1), Some(0)]);
        assert_eq!(c.chain(0).count(), 3);
        c.committed(0, 10, 0);
        let _ = c.allow(0, 10);
    }
}

//! The retry loop's timings, against the throwaway server through the fault proxy: the
//! engine driven as a library, its connections cut again and again, each time after some
//! batches committed. Every cut must be retried at the shortest backoff (a success ended the
//! streak before it); without the reset the backoffs alone would sum to 11 s over six cuts
//! (0.2, 0.4, 0.8, 1.6, 3.2, 5 s). And a server that stays unreachable past `--retry-for`
//! stops the run saying what kept failing and for how long.

use crate::common;
use common::exec_script;
use myrecode::db::throwaway::test_database;
use myrecode::engine::events::{Event, Events};
use myrecode::engine::runner::{self, RunOptions};
use myrecode::job::load::load_str;
use myrecode::job::model::Job;
use myrecode::testkit::faultproxy::FaultProxy;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const CUTS: usize = 6;

fn job(schema: &str) -> Job {
    let text = format!(
        "version: 1\nschema: {schema}\ndefaults:\n  batch_size: 40\n  target_batch_time: 1ms\n  \
         pause_between_batches: 10ms\n  cutover: auto\ntables:\n  - name: posts\n    strategy: in-place\n    \
         columns:\n      - name: body\n        source: auto\n        target: TEXT CHARACTER SET utf8mb4\n"
    );
    load_str(&text).expect("the test job loads").job
}

/// Cuts every connection after each tenth batch, and measures how long the engine takes to
/// commit its next batch after each cut.
struct Cutter<'a> {
    proxy: &'a FaultProxy,
    state: Mutex<(usize, Option<Instant>, Vec<Duration>)>,
}

impl Events for Cutter<'_> {
    fn event(&self, e: &Event<'_>) {
        if !matches!(e, Event::Batch { .. }) {
            return;
        }
        let mut s = self.state.lock().unwrap();
        let (batches, cut_at, gaps) = &mut *s;
        if let Some(at) = cut_at.take() {
            gaps.push(at.elapsed());
            *batches = 0;
        }
        *batches += 1;
        if *batches == 10 && gaps.len() < CUTS {
            self.proxy.cut();
            *cut_at = Some(Instant::now());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_success_the_next_cut_retries_at_the_shortest_backoff() {
    let db = test_database("retry_backoff");
    let rows: Vec<String> = (1..=4000)
        .map(|i| format!("({i}, CONVERT(_latin1 0xCFF0E8E2E5F2 USING utf8mb4))"))
        .collect();
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY, body TEXT CHARACTER SET utf8mb4) ENGINE=InnoDB",
            &format!("INSERT INTO posts VALUES {}", rows.join(", ")),
        ],
    )
    .await;
    let proxy = FaultProxy::start(&db.config).unwrap();
    let cutter = Cutter {
        proxy: &proxy,
        state: Mutex::new((0, None, Vec::new())),
    };
    let opts = RunOptions {
        execute: true,
        job_id: "retry".into(),
        retry_for: Duration::from_secs(60),
    };
    let out = runner::run(
        &proxy.route(&db.config),
        &job(&db.name),
        &opts,
        &AtomicBool::new(false),
        &cutter,
    )
    .await
    .expect("the run outlives every cut by itself");
    let runner::Outcome::Ran(done) = out else {
        panic!("the run rehearsed instead of executing");
    };
    assert!(done.iter().all(|s| s.done));
    let gaps = cutter.state.lock().unwrap().2.clone();
    assert_eq!(gaps.len(), CUTS, "every cut landed mid-run: {gaps:?}");
    let total: Duration = gaps.iter().sum();
    // Shortest backoff each time: 6 × 0.2 s, plus reconnecting and resuming. Without the
    // reset the backoffs alone are 11.2 s.
    assert!(
        total < Duration::from_secs(6) && gaps.iter().all(|g| *g < Duration::from_millis(2500)),
        "each cut after a success should retry at 0.2 s: {gaps:?}"
    );
    assert!(
        proxy.accepted() > CUTS as u64,
        "the run reconnected after each cut"
    );
    println!("from each cut to the next committed batch: {gaps:?}");
}

/// Takes the server away (through the proxy) after the fifth batch, for good.
struct Gone<'a> {
    proxy: &'a FaultProxy,
    batches: Mutex<usize>,
}

impl Events for Gone<'_> {
    fn event(&self, e: &Event<'_>) {
        if matches!(e, Event::Batch { .. }) {
            let mut n = self.batches.lock().unwrap();
            *n += 1;
            if *n == 5 {
                self.proxy.set_down(true);
                self.proxy.cut();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gone_past_retry_for_stops_the_run_saying_what_and_how_long() {
    let db = test_database("retry_gone");
    let rows: Vec<String> = (1..=2000)
        .map(|i| format!("({i}, CONVERT(_latin1 0xCFF0E8E2E5F2 USING utf8mb4))"))
        .collect();
    exec_script(
        &db.config,
        &[
            "CREATE TABLE posts (id INT PRIMARY KEY, body TEXT CHARACTER SET utf8mb4) ENGINE=InnoDB",
            &format!("INSERT INTO posts VALUES {}", rows.join(", ")),
        ],
    )
    .await;
    let proxy = FaultProxy::start(&db.config).unwrap();
    let opts = RunOptions {
        execute: true,
        job_id: "gone".into(),
        retry_for: Duration::from_secs(2),
    };
    let gone = Gone {
        proxy: &proxy,
        batches: Mutex::new(0),
    };
    let began = Instant::now();
    let err = runner::run(
        &proxy.route(&db.config),
        &job(&db.name),
        &opts,
        &AtomicBool::new(false),
        &gone,
    )
    .await
    .expect_err("the server never comes back");
    let took = began.elapsed();
    let said = format!("{err:#}");
    assert!(
        said.contains("gave up retrying: server unreachable for ")
            && said.contains("without a success, past --retry-for 2 s; progress is checkpointed"),
        "{said}"
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(20),
        "{took:?}"
    );
    // The batches before the fault are kept: the server back, the run goes on from there.
    let mut c = db.config.connect_one().await.unwrap();
    let read: i64 =
        sqlx::query_scalar("SELECT rows_read FROM _myrecode_checkpoint WHERE job = 'gone'")
            .fetch_one(&mut c)
            .await
            .unwrap();
    assert!(read > 0, "{read} rows checkpointed");
    proxy.set_down(false);
    let out = runner::run(
        &proxy.route(&db.config),
        &job(&db.name),
        &opts,
        &AtomicBool::new(false),
        &Gone {
            proxy: &FaultProxy::start(&db.config).unwrap(),
            batches: Mutex::new(usize::MAX / 2),
        },
    )
    .await
    .expect("the server back, the run finishes");
    assert!(matches!(out, runner::Outcome::Ran(s) if s.iter().all(|t| t.done)));
    println!("{said}");
}

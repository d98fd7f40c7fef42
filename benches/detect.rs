//! Detection throughput: values/s on one core, ours vs chardetng, same values.
//!
//! `cargo bench --bench detect`. Values come from the committed corpus
//! (`data/detect_corpus.tsv`): a mix of every label, plus an ASCII-only set
//! that exercises the fast path. Criterion reports `thrpt` in elements/s,
//! which is values/s. Measured 2026-11-22 on a 2-core shared VM (other
//! builds running, load ≈3): mixed ≈147k values/s ours, ≈73k chardetng,
//! ≈128k ours in column mode; ASCII-only ≈6M values/s ours, ≈3.4M chardetng.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use myrecode::detect::{detect, detect_column, Context};
use myrecode::testkit::eval;

fn corpus() -> Vec<Vec<u8>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/detect_corpus.tsv");
    let rows = eval::parse_corpus(&std::fs::read_to_string(path).expect("corpus")).expect("parse");
    rows.into_iter().map(|r| r.bytes).collect()
}

fn chardetng_guess(v: &[u8]) -> &'static encoding_rs::Encoding {
    let mut d = chardetng::EncodingDetector::new();
    d.feed(v, true);
    d.guess(None, true)
}

fn bench(c: &mut Criterion) {
    let mixed = corpus();
    let ascii: Vec<Vec<u8>> = mixed.iter().filter(|v| v.is_ascii()).cloned().collect();
    let ctx = Context::default();
    for (name, values) in [("mixed", &mixed), ("ascii", &ascii)] {
        let mut g = c.benchmark_group(format!("detect/{name}"));
        g.throughput(Throughput::Elements(values.len() as u64));
        g.sample_size(10);
        g.bench_function("ours", |b| {
            b.iter(|| {
                for v in values.iter() {
                    black_box(detect(black_box(v), &ctx));
                }
            })
        });
        g.bench_function("chardetng", |b| {
            b.iter(|| {
                for v in values.iter() {
                    black_box(chardetng_guess(black_box(v)));
                }
            })
        });
        g.bench_function("ours --column", |b| {
            let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
            b.iter(|| black_box(detect_column(black_box(&refs))))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

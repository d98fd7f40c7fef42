#!/usr/bin/env bash
# Fixed-work throughput of detection, two commits side by side.
#
# Usage: bash scripts/bench_detect_ab.sh BEFORE_REV AFTER_REV [ROUNDS] [RUNS]
#
# Builds the detector (src/detect and src/codec) of each commit into one small
# program that detects every value of data/detect_corpus.tsv alone ROUNDS times
# (default 40), then times the two programs in turn with farm-bench (RUNS pairs,
# default 15) and prints its report: quote the median A/B ratio (A = AFTER).
# Whole-process timing of the same work in both, so a shared, loaded machine
# drifts both alike; `cargo bench --bench detect` gives values/s instead.
set -euo pipefail
before=${1:?before revision}
after=${2:?after revision}
rounds=${3:-40}
runs=${4:-15}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for side in before after; do
    rev=${!side}
    mkdir -p "$work/$side/tree" "$work/$side/src"
    git -C "$root" archive "$rev" src/detect src/codec | tar -x -C "$work/$side/tree"
    cat >"$work/$side/Cargo.toml" <<EOF
[package]
name = "detect_$side"
version = "0.1.0"
edition = "2021"
[dependencies]
chardetng = "0.1"
encoding_rs = "0.8"
hex = "0.4"
thiserror = "2"
EOF
    cp "$root/Cargo.lock" "$work/$side/"
    cat >"$work/$side/src/main.rs" <<EOF
#![allow(dead_code)]
#[path = "$work/$side/tree/src/codec/mod.rs"]
pub mod codec;
#[path = "$work/$side/tree/src/detect/mod.rs"]
pub mod detect;
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = a[0].parse().unwrap();
    let text = std::fs::read_to_string(&a[1]).unwrap();
    let values: Vec<Vec<u8>> = detect::eval::parse_corpus(&text).unwrap().into_iter().map(|r| r.bytes).collect();
    let ctx = detect::Context::default();
    let mut acted = 0usize;
    for _ in 0..rounds {
        for v in &values {
            acted += detect::detect(std::hint::black_box(v), &ctx).actionable() as usize;
        }
    }
    println!("{acted}");
}
EOF
    (cd "$work/$side" && CARGO_TARGET_DIR="$work/target-$side" cargo build --release --offline -q)
done

farm-bench -n "$runs" --warmup 2 --timeout 900 \
    --vs "$work/target-before/release/detect_before $rounds $root/data/detect_corpus.tsv" \
    -- "$work/target-after/release/detect_after" "$rounds" "$root/data/detect_corpus.tsv"

#!/usr/bin/env python3
"""Summarise `cargo bench --bench codec`: MB/s (10^6 bytes/s, mean estimate)
per benchmark and the ratio ours / theirs for each input.

Usage: bench_ratios.py [CRITERION_DIR]   (default: $CARGO_TARGET_DIR/criterion
or target/criterion)
"""
import json
import os
import sys

def main():
    default = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")
    root = sys.argv[1] if len(sys.argv) > 1 else default
    rows = {}
    for group in sorted(os.listdir(root)):
        if not (group.startswith("decode-") or group.startswith("validate-")):
            continue
        gdir = os.path.join(root, group)
        for func in sorted(os.listdir(gdir)):
            fdir = os.path.join(gdir, func)
            if not os.path.isdir(fdir) or func == "report":
                continue
            for param in sorted(os.listdir(fdir)):
                new = os.path.join(fdir, param, "new")
                try:
                    est = json.load(open(os.path.join(new, "estimates.json")))
                    bench = json.load(open(os.path.join(new, "benchmark.json")))
                except FileNotFoundError:
                    continue
                nbytes = bench["throughput"]["Bytes"]
                ns = est["mean"]["point_estimate"]
                rows.setdefault((group, param), {})[func] = nbytes / ns * 1e3  # MB/s
    print(f"{'group':<20} {'input':<12} {'ours MB/s':>10} {'theirs':>12} {'MB/s':>10} {'ratio':>7}")
    for (group, param), funcs in sorted(rows.items()):
        ours = funcs.get("myrecode")
        theirs = [(k, v) for k, v in funcs.items() if k != "myrecode"]
        if theirs:
            name, v = theirs[0]
            print(f"{group:<20} {param:<12} {ours:>10.0f} {name:>12} {v:>10.0f} {ours / v:>7.2f}")
        else:
            print(f"{group:<20} {param:<12} {ours:>10.0f} {'-':>12} {'-':>10} {'-':>7}")

if __name__ == "__main__":
    main()

//! Prints every reading of each hex value on stdin with its score: a tuning aid.
//!
//! `echo 4dfc6c6c6572 | cargo run --release --example detect_explain`

use myrecode::detect::{detect, explain, Context};
use std::io::BufRead;

fn main() -> anyhow::Result<()> {
    for line in std::io::stdin().lock().lines() {
        let bytes = hex::decode(line?.trim())?;
        let v = detect(&bytes, &Context::default());
        println!("{} {:.2} {:?}", v.label, v.confidence, v.decoded);
        for (label, score) in explain(&bytes) {
            let text = label.repair(&bytes).unwrap_or_default();
            println!("  {label:<18} {score:>7.1}  {text}");
        }
    }
    Ok(())
}

use myrecode::codec::{self, Encoding};
use myrecode::detect::{self, Context};
use std::time::Instant;
mod common;
fn main() {
    let mut vals: Vec<Vec<u8>> = Vec::new();
    for i in 0..20000usize {
        let t = format!(
            "{} {} #{i}",
            common::RUSSIAN[i % 15],
            common::RUSSIAN[(i / 15 + 3) % 15]
        );
        let enc = if i % 10 == 8 {
            Encoding::Koi8R
        } else {
            Encoding::Windows1251
        };
        vals.push(codec::encode(enc, &t).unwrap());
    }
    let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
    let prior = detect::column_prior(&refs[..1000]);
    let ctx = Context {
        threshold: 0.95,
        prior: Some(&prior),
    };
    let t = Instant::now();
    let mut n = 0;
    for v in &vals {
        if detect::detect(v, &ctx).label != detect::Label::Unknown {
            n += 1;
        }
    }
    let e = t.elapsed();
    println!(
        "{n} values, {:.2} us/value",
        e.as_secs_f64() * 1e6 / vals.len() as f64
    );
    let t = Instant::now();
    for v in &vals {
        let _ = myrecode::engine::recode::decide(
            &myrecode::engine::recode::Source::Auto,
            Some(&prior),
            0.95,
            v,
        );
    }
    println!(
        "recode::decide {:.2} us/value",
        t.elapsed().as_secs_f64() * 1e6 / vals.len() as f64
    );
}

//! Scores detection on a labelled corpus, ours beside chardetng.
//!
//! `cargo run --release --example detect_score -- [data/detect_corpus.tsv] [--mistakes]`

use myrecode::detect::eval;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map_or("data/detect_corpus.tsv", |s| s.as_str());
    let rows = eval::parse_corpus(&std::fs::read_to_string(path)?).map_err(anyhow::Error::msg)?;
    let report = eval::evaluate(&rows);
    print!("{}", report.render());
    if args.iter().any(|a| a == "--mistakes") {
        for (exp, got, text) in &report.mistakes {
            println!("{exp}\t{got}\t{text}");
        }
    }
    let fails = report.target_failures();
    if fails.is_empty() {
        println!("all targets met");
    } else {
        for f in &fails {
            println!("MISSED: {f}");
        }
    }
    Ok(())
}

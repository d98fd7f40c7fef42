//! `myrecode detect`: per-line encoding detection of stdin.
//!
//! One value per line (or, with `--hex`, one value's bytes in hex per line);
//! prints `LABEL<TAB>CONFIDENCE<TAB>DECODED` per line in input order. Offline:
//! the same detection `scan` runs, for trying values by hand and in scripts.

use crate::detect::{detect, detect_column_with, Context, Verdict};
use anyhow::Context as _;
use std::io::{Read, Write};

/// Arguments of `detect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Each line is a value's bytes in hex (e.g. `cff0e8e2e5f2`), so any byte,
    /// newlines included, can be given.
    #[arg(long)]
    pub hex: bool,
    /// Treat all lines as one column: the other rows form a prior, so short
    /// values read as the column's encoding.
    #[arg(long)]
    pub column: bool,
    /// Confidence a rewriting verdict needs (0..=1); below it the answer is `unknown`.
    #[arg(long, default_value_t = crate::detect::DEFAULT_THRESHOLD)]
    pub threshold: f32,
}

/// Splits stdin into values: lines without their terminator (`\n` or `\r\n`).
fn read_values(input: &[u8], hex: bool) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for (n, line) in input.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if hex {
            let s = std::str::from_utf8(line)
                .map_err(|_| anyhow::anyhow!("line {} of stdin is not ASCII, and --hex reads hex digits. Fix: give each value as hex digits (e.g. cff0e8e2e5f2), or drop --hex to give the values themselves", n + 1))?;
            let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
            out.push(hex::decode(&s).map_err(|e| anyhow::anyhow!("line {} of stdin is not hex ({e}): {s:?}. Fix: give each value as an even number of hex digits (e.g. cff0e8e2e5f2), or drop --hex to give the values themselves", n + 1))?);
        } else {
            out.push(line.to_vec());
        }
    }
    // A final newline ends the last line rather than starting an empty value.
    if input.ends_with(b"\n") {
        out.pop();
    }
    Ok(out)
}

/// Renders decoded text on one line: tabs, newlines and controls escaped.
fn one_line(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\\' => o.push_str("\\\\"),
            c if c.is_control() => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// Runs `detect`. Exit 0 when every value is decided, 1 when some are `unknown`.
pub fn run(args: Args) -> anyhow::Result<u8> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.threshold),
        "--threshold must be between 0 and 1"
    );
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut input)
        .context("reading stdin")?;
    let values = read_values(&input, args.hex)?;
    let verdicts: Vec<Verdict> = if args.column {
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        detect_column_with(&refs, args.threshold)
    } else {
        let ctx = Context {
            threshold: args.threshold,
            prior: None,
        };
        values.iter().map(|v| detect(v, &ctx)).collect()
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut undecided = false;
    for v in &verdicts {
        undecided |= v.label == crate::detect::Label::Unknown;
        let decoded = v.decoded.as_deref().map(one_line).unwrap_or_default();
        writeln!(out, "{}\t{:.2}\t{}", v.label, v.confidence, decoded)?;
    }
    out.flush()?;
    Ok(if undecided {
        super::EXIT_ATTENTION
    } else {
        super::EXIT_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_hex_lines_split_into_values() {
        assert_eq!(
            read_values(b"a\r\nb\n", false).unwrap(),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            read_values(b"cff0\n\n", true).unwrap(),
            vec![vec![0xcf, 0xf0], vec![]]
        );
        assert!(read_values(b"zz\n", true).is_err());
    }
}

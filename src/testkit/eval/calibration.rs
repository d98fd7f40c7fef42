//! Does a verdict's confidence mean what it says? Decided values (any label but `unknown`)
//! counted by confidence bucket and length bucket, with how many were right: values decided
//! at confidence c must be right at least c of the time. Used by `examples/detect_score.rs`
//! and `tests/it/detect/columns.rs`.
//!
//! Pure: takes verdicts with their rows' answers, returns counts and a table.

use std::fmt::Write as _;

/// Lower edges of the confidence buckets (the last runs to 1.0 inclusive).
pub const CONFIDENCE_EDGES: [f32; 5] = [0.0, 0.5, 0.9, 0.95, 0.99];
/// Length buckets by the words of the real text: 1–2 words, 3–10, longer.
pub const LENGTHS: [&str; 3] = ["1-2 words", "3-10 words", "11+ words"];

/// Decided values and how many were right, per length bucket and confidence bucket.
#[derive(Debug, Clone, Default)]
pub struct Reliability {
    /// `[length][confidence] = (decided, right)`.
    cells: [[(usize, usize); CONFIDENCE_EDGES.len()]; LENGTHS.len()],
}

impl Reliability {
    /// Counts one decided value: its confidence, its text's word count, and whether it was right.
    pub fn add(&mut self, confidence: f32, words: usize, right: bool) {
        let l = match words {
            0..=2 => 0,
            3..=10 => 1,
            _ => 2,
        };
        let c = CONFIDENCE_EDGES
            .iter()
            .rposition(|&e| confidence >= e)
            .unwrap_or(0);
        let cell = &mut self.cells[l][c];
        cell.0 += 1;
        cell.1 += usize::from(right);
    }

    /// (decided, right) in one cell.
    pub fn cell(&self, length: usize, bucket: usize) -> (usize, usize) {
        self.cells[length][bucket]
    }

    /// Buckets of confidence ≥ 0.9 whose observed accuracy is below their lower edge.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (l, row) in self.cells.iter().enumerate() {
            for (c, &(n, right)) in row.iter().enumerate() {
                let edge = CONFIDENCE_EDGES[c];
                if edge >= 0.9 && n > 0 && (right as f64) < f64::from(edge) * n as f64 {
                    out.push(format!(
                        "{} at confidence >= {edge}: {right} right of {n} ({:.2}%)",
                        LENGTHS[l],
                        100.0 * right as f64 / n as f64
                    ));
                }
            }
        }
        out
    }

    /// The table: one line per length bucket, `right/decided (accuracy)` per confidence bucket.
    pub fn render(&self, title: &str) -> String {
        let mut s = String::new();
        let _ = write!(s, "{title:<14}");
        for (i, e) in CONFIDENCE_EDGES.iter().enumerate() {
            let hi = CONFIDENCE_EDGES.get(i + 1).copied().unwrap_or(1.0);
            let close = if i + 1 == CONFIDENCE_EDGES.len() {
                ']'
            } else {
                ')'
            };
            let _ = write!(s, " | {:^22}", format!("[{e:.2}, {hi:.2}{close}"));
        }
        s.push('\n');
        for (l, row) in self.cells.iter().enumerate() {
            let _ = write!(s, "{:<14}", LENGTHS[l]);
            for &(n, right) in row {
                let cell = if n == 0 {
                    "-".to_owned()
                } else {
                    format!("{right}/{n} ({:.2}%)", 100.0 * right as f64 / n as f64)
                };
                let _ = write!(s, " | {cell:^22}");
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_failures() {
        let mut r = Reliability::default();
        for i in 0..100 {
            r.add(0.96, 1, i != 0); // 99% right at 0.95-0.99: fine
            r.add(0.995, 12, i >= 2); // 98% right at >= 0.99: below the edge
        }
        r.add(0.3, 5, false); // below 0.9: not judged
        assert_eq!(r.cell(0, 3), (100, 99));
        assert_eq!(r.cell(2, 4), (100, 98));
        assert_eq!(r.cell(1, 0), (1, 0));
        let f = r.failures();
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].starts_with("11+ words at confidence >= 0.99"), "{f:?}");
        let table = r.render("alone");
        assert!(table.contains("99/100 (99.00%)"), "{table}");
        assert!(
            table.contains("[0.95, 0.99)") && table.contains("[0.99, 1.00]"),
            "{table}"
        );
    }
}

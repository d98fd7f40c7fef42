//! A readable line diff for tests that compare output with committed expected files.

/// Lines of context shown around each change.
const CONTEXT: usize = 2;
/// Diff lines shown at most, so one changed layout does not flood the terminal.
const MAX_LINES: usize = 120;

/// A unified-style diff of `expected` against `actual` (`-` expected, `+` actual), or `None` when equal.
pub fn line_diff(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // Longest common subsequence table from the end, so the walk below goes forward.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, usize, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', i + 1, a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Removed lines before added ones, as `diff -u` shows a change.
            ops.push(('-', i + 1, a[i]));
            i += 1;
        } else {
            ops.push(('+', j + 1, b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| {
        let lo = k.saturating_sub(CONTEXT);
        let hi = (k + CONTEXT + 1).min(ops.len());
        ops[lo..hi].iter().any(|(op, _, _)| *op != ' ')
    };
    let mut out = Vec::new();
    let mut skipped = false;
    for (k, (op, line, text)) in ops.iter().enumerate() {
        if !near_change(k) {
            skipped = true;
            continue;
        }
        if skipped || out.is_empty() {
            out.push(format!("@@ line {line} @@"));
            skipped = false;
        }
        out.push(format!("{op} {text}"));
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        out.push("(the files differ in the final newline)".to_string());
    }
    let total = out.len();
    out.truncate(MAX_LINES);
    if total > MAX_LINES {
        out.push(format!("... {} more diff line(s)", total - MAX_LINES));
    }
    Some(out.join("\n"))
}

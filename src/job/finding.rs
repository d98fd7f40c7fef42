//! One problem in a job file: where (line, field path), what, and the fix.

use std::fmt;

/// A problem found in a job, printed as `file:LINE: path: message. Fix: fix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// 1-based line in the job file, when known.
    pub line: Option<usize>,
    /// Field path, e.g. `tables[1].columns[0].source` (empty for the whole file).
    pub path: String,
    /// What is wrong, one sentence without a final period.
    pub message: String,
    /// How to fix it, one sentence without a final period.
    pub fix: String,
}

impl Finding {
    /// A finding at `path`; its line is filled in later from the text.
    pub fn new(
        path: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Finding {
            line: None,
            path: path.into(),
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// Renders it for `file`: `job.yaml:12: tables[0].columns[1].source: unknown label 'x'. Fix: ...`.
    pub fn render(&self, file: &str) -> String {
        let mut out = String::from(file);
        if let Some(l) = self.line {
            out.push_str(&format!(":{l}"));
        }
        out.push_str(": ");
        if !self.path.is_empty() {
            out.push_str(&self.path);
            out.push_str(": ");
        }
        out.push_str(&self.message);
        if !self.fix.is_empty() {
            out.push_str(". Fix: ");
            out.push_str(&self.fix);
        }
        out
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render("job"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_file_line_path_message_and_fix() {
        let mut f = Finding::new("tables[0].name", "unknown table 'x'", "use 'y'");
        f.line = Some(7);
        assert_eq!(
            f.render("job.yaml"),
            "job.yaml:7: tables[0].name: unknown table 'x'. Fix: use 'y'"
        );
        f.line = None;
        f.path.clear();
        assert_eq!(f.render("j"), "j: unknown table 'x'. Fix: use 'y'");
    }
}

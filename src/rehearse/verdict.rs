//! What a rehearsal found, table by table, and the exit code it comes to.
//!
//! Pure: the orchestration fills [`TableResult`]s; this file judges them, and
//! [`crate::report::junit`] renders them.

/// Exit code: every table was recoded and verified, or needed nothing.
pub const EXIT_CLEAN: u8 = 0;
/// Exit code: values the detector could not decide were left as they were (quarantined).
pub const EXIT_UNDECIDED: u8 = 1;
/// Exit code: the rehearsal could not be carried out (dump, job, server); no verdict.
pub const EXIT_ERROR: u8 = 2;
/// Exit code: a table is refused by the rules (`run --execute` would stop on it), or left
/// out by `plan` because its target cannot be applied.
pub const EXIT_REFUSED: u8 = 3;
/// Exit code: a table was not finished, or `verify` could not prove a recoded value.
pub const EXIT_UNPROVEN: u8 = 4;

/// One table's part in the rehearsal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableResult {
    /// Schema (database) name.
    pub schema: String,
    /// Table name.
    pub table: String,
    /// `in-place` or `copy` when the table ran.
    pub strategy: Option<String>,
    /// Whether the job holds the table (false: nothing to recode, or left out by `plan`).
    pub in_job: bool,
    /// Whether the run finished the table.
    pub finished: bool,
    /// Rows read by the run.
    pub rows_read: u64,
    /// Values recoded.
    pub recoded: u64,
    /// Values left as they were because the detector could not decide them.
    pub undecided: u64,
    /// Why the rules refuse the table, one sentence with its fix each.
    pub refusals: Vec<String>,
    /// What `verify` could not prove.
    pub unproven: Vec<String>,
    /// The undecided values, one line each (column, key, bytes, readings): the report keeps
    /// them because the server holding `_myrecode_quarantine` is gone when it is read.
    pub undecided_values: Vec<String>,
}

/// One undecided value for the report: its column, its row's key (each part as text when
/// it is UTF-8, else hex), its first bytes in hex, and why no reading was chosen.
pub fn undecided_line(
    col: &str,
    key: Option<&[Vec<u8>]>,
    value: &[u8],
    reason: &str,
    runner_up: Option<&str>,
) -> String {
    let show = |b: &[u8]| match std::str::from_utf8(b) {
        Ok(t) if !t.chars().any(char::is_control) => t.to_string(),
        _ => format!("0x{}", hex(b)),
    };
    let key = match key {
        Some(parts) => parts.iter().map(|p| show(p)).collect::<Vec<_>>().join(", "),
        None => "(unreadable)".into(),
    };
    let more = if value.len() > 32 { "..." } else { "" };
    let runner = runner_up.map_or(String::new(), |r| format!("; runner-up reading {r}"));
    format!(
        "column {col}, key [{key}]: bytes 0x{}{more}: {reason}{runner}",
        hex(&value[..value.len().min(32)])
    )
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A table's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Recoded and verified.
    Recoded,
    /// Nothing in it needs recoding.
    NothingToDo,
    /// Recoded, but some values were left undecided.
    Undecided,
    /// Refused by the rules; not touched.
    Refused,
    /// Not finished, or a recoded value `verify` does not prove.
    Unproven,
}

impl Status {
    /// The exit code this verdict alone would give.
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Recoded | Status::NothingToDo => EXIT_CLEAN,
            Status::Undecided => EXIT_UNDECIDED,
            Status::Refused => EXIT_REFUSED,
            Status::Unproven => EXIT_UNPROVEN,
        }
    }

    /// Whether CI should show the table as failed.
    pub fn failed(self) -> bool {
        self.exit_code() != EXIT_CLEAN
    }
}

impl TableResult {
    /// The table's verdict: refused, then unproven, then undecided, before success.
    pub fn status(&self) -> Status {
        if !self.refusals.is_empty() {
            Status::Refused
        } else if !self.unproven.is_empty() || (self.in_job && !self.finished) {
            Status::Unproven
        } else if self.undecided > 0 {
            Status::Undecided
        } else if self.in_job {
            Status::Recoded
        } else {
            Status::NothingToDo
        }
    }

    /// One line for the terminal and the report's message.
    pub fn line(&self) -> String {
        let name = format!("{}.{}", self.schema, self.table);
        match self.status() {
            Status::Refused => format!("{name}: refused: {}", self.refusals.join("; ")),
            Status::Unproven if !self.finished && self.in_job => {
                format!("{name}: not finished ({} rows read)", self.rows_read)
            }
            Status::Unproven => format!(
                "{name}: {} value(s) verify cannot prove: {}",
                self.unproven.len(),
                self.unproven.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
            ),
            Status::Undecided => format!(
                "{name}: {} undecided value(s) left as they were (listed below and in the JUnit report); {} recoded",
                self.undecided, self.recoded
            ),
            Status::Recoded => format!(
                "{name}: recoded {} value(s) ({}, {} rows read); verified",
                self.recoded,
                self.strategy.as_deref().unwrap_or("?"),
                self.rows_read
            ),
            Status::NothingToDo => format!("{name}: nothing to recode"),
        }
    }
}

/// The exit code of the whole rehearsal: the worst table's; no table at all is no verdict,
/// never a pass.
pub fn exit_code(results: &[TableResult]) -> u8 {
    results
        .iter()
        .map(|r| r.status().exit_code())
        .max()
        .unwrap_or(EXIT_ERROR)
}

/// The closing summary; its counts are the JUnit report's.
pub fn summary(results: &[TableResult]) -> String {
    let count = |s: Status| results.iter().filter(|r| r.status() == s).count();
    let undecided: u64 = results.iter().map(|r| r.undecided).sum();
    format!(
        "rehearse: {} table(s): {} recoded, {} with nothing to recode, {} with undecided values ({} value(s)), {} refused, {} unproven; {} failed",
        results.len(),
        count(Status::Recoded),
        count(Status::NothingToDo),
        count(Status::Undecided),
        undecided,
        count(Status::Refused),
        count(Status::Unproven),
        results.iter().filter(|r| r.status().failed()).count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str) -> TableResult {
        TableResult {
            schema: "s".into(),
            table: name.into(),
            in_job: true,
            finished: true,
            recoded: 3,
            ..Default::default()
        }
    }

    #[test]
    fn the_worst_table_decides_the_exit_code() {
        let clean = table("a");
        let mut undecided = table("b");
        undecided.undecided = 2;
        let mut refused = table("c");
        refused.in_job = false;
        refused.refusals = vec!["has triggers. Fix: drop them".into()];
        let mut unproven = table("d");
        unproven.unproven = vec!["d.x key [1]: mismatch".into()];
        assert_eq!(exit_code(&[]), EXIT_ERROR, "0 tables is not a pass");
        assert_eq!(exit_code(std::slice::from_ref(&clean)), EXIT_CLEAN);
        assert_eq!(
            exit_code(&[clean.clone(), undecided.clone()]),
            EXIT_UNDECIDED
        );
        assert_eq!(
            exit_code(&[undecided.clone(), refused.clone(), clean.clone()]),
            EXIT_REFUSED
        );
        assert_eq!(exit_code(&[refused, unproven, undecided]), EXIT_UNPROVEN);
        let codes = [
            EXIT_CLEAN,
            EXIT_UNDECIDED,
            EXIT_ERROR,
            EXIT_REFUSED,
            EXIT_UNPROVEN,
        ];
        let mut sorted = codes.to_vec();
        sorted.dedup();
        assert_eq!(sorted.len(), codes.len(), "each verdict has its own code");
    }

    #[test]
    fn tables_outside_the_job_need_nothing_unless_refused() {
        let mut t = table("a");
        t.in_job = false;
        t.finished = false;
        assert_eq!(t.status(), Status::NothingToDo);
        let mut t = table("b");
        t.finished = false;
        assert_eq!(t.status(), Status::Unproven);
        assert!(t.line().contains("not finished"));
    }

    #[test]
    fn an_undecided_value_is_listed_with_its_key_bytes_and_readings() {
        assert_eq!(
            undecided_line(
                "body",
                Some(&[b"1002".to_vec()]),
                b"Order \x9a\x9b",
                "no reading is safe",
                Some("windows-1251")
            ),
            "column body, key [1002]: bytes 0x4f72646572209a9b: no reading is safe; runner-up reading windows-1251"
        );
        let l = undecided_line("c", None, &[0u8; 40], "r", None);
        assert!(
            l.starts_with("column c, key [(unreadable)]: bytes 0x0000") && l.ends_with("...: r"),
            "{l}"
        );
    }

    #[test]
    fn summary_counts_each_verdict() {
        let mut u = table("u");
        u.undecided = 4;
        let s = summary(&[table("a"), u]);
        assert_eq!(
            s,
            "rehearse: 2 table(s): 1 recoded, 0 with nothing to recode, 1 with undecided values (4 value(s)), 0 refused, 0 unproven; 1 failed"
        );
    }
}

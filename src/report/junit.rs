//! The rehearsal as a JUnit XML report, which CI systems (GitLab, Jenkins, GitHub actions
//! reporters) display: one `<testsuite>` per schema, one `<testcase>` per table; a refused
//! table, undecided values or an unproven value is a `<failure>` saying why.
//!
//! Pure: results in, text out. Every name and message is escaped; characters XML 1.0 cannot
//! carry at all are replaced, so a table named with control bytes still gives a valid file.

use crate::rehearse::verdict::{Status, TableResult};
use std::fmt::Write;

/// Renders `results` (in order; schemas grouped as they first appear) as a JUnit XML document.
pub fn to_junit(results: &[TableResult], server: &str, seconds: f64) -> String {
    let mut schemas: Vec<&str> = Vec::new();
    for r in results {
        if !schemas.contains(&r.schema.as_str()) {
            schemas.push(&r.schema);
        }
    }
    let failures = results.iter().filter(|r| r.status().failed()).count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"myrecode rehearse\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{seconds:.3}\">",
        results.len()
    );
    for schema in schemas {
        let tables: Vec<&TableResult> = results.iter().filter(|r| r.schema == schema).collect();
        let failed = tables.iter().filter(|r| r.status().failed()).count();
        let _ = writeln!(
            o,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"0\">",
            escape(schema),
            tables.len()
        );
        let _ = writeln!(
            o,
            "    <properties><property name=\"server\" value=\"{}\"/></properties>",
            escape(server)
        );
        for r in tables {
            testcase(&mut o, r);
        }
        o.push_str("  </testsuite>\n");
    }
    o.push_str("</testsuites>\n");
    o
}

/// A report for a rehearsal that could not reach a verdict (the dump did not load, say): one
/// test case in error, so CI shows why rather than an empty or missing report.
pub fn to_junit_error(message: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"myrecode rehearse\" tests=\"1\" failures=\"0\" errors=\"1\">\n\
         \x20 <testsuite name=\"rehearse\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n\
         \x20   <testcase classname=\"rehearse\" name=\"rehearsal\">\n\
         \x20     <error type=\"error\" message=\"{m}\">{m}</error>\n\
         \x20   </testcase>\n\
         \x20 </testsuite>\n\
         </testsuites>\n",
        m = escape(message)
    )
}

fn testcase(o: &mut String, r: &TableResult) {
    let _ = writeln!(
        o,
        "    <testcase classname=\"{}\" name=\"{}\">",
        escape(&r.schema),
        escape(&r.table)
    );
    let failure = match r.status() {
        Status::Refused => Some(("refused", r.refusals.join("\n"))),
        Status::Undecided => Some((
            "undecided",
            format!(
                "{} undecided value(s) were left as they were:\n{}\n\
                 Fix: decide them (a fixed `source:` for the column in the job) or accept them as they are",
                r.undecided,
                r.undecided_values.join("\n")
            ),
        )),
        Status::Unproven => Some(("unproven", r.unproven.join("\n"))),
        Status::Recoded | Status::NothingToDo => None,
    };
    if let Some((kind, body)) = failure {
        let _ = writeln!(
            o,
            "      <failure type=\"{kind}\" message=\"{}\">{}</failure>",
            escape(&r.line()),
            escape(&body)
        );
    }
    let _ = writeln!(
        o,
        "      <system-out>{}</system-out>",
        escape(&format!(
            "{}\nrows read: {}, values recoded: {}, undecided: {}",
            r.line(),
            r.rows_read,
            r.recoded,
            r.undecided
        ))
    );
    o.push_str("    </testcase>\n");
}

/// Escapes text for an XML attribute or element; characters XML 1.0 forbids become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_forbidden_characters() {
        assert_eq!(
            escape("a<b>&\"c\"'\u{1}\n"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;\u{FFFD}&#10;"
        );
    }

    #[test]
    fn an_error_is_one_testcase_in_error() {
        let x = to_junit_error("loading the dump failed: ERROR 1064 <near 'x'>");
        assert!(x.contains("errors=\"1\""));
        assert!(x.contains("<error type=\"error\" message=\"loading the dump failed: ERROR 1064 &lt;near &apos;x&apos;&gt;\">"));
    }

    #[test]
    fn one_testcase_per_table_and_failures_counted() {
        let ok = TableResult {
            schema: "shop".into(),
            table: "products".into(),
            in_job: true,
            finished: true,
            recoded: 5,
            ..Default::default()
        };
        let refused = TableResult {
            schema: "shop".into(),
            table: "orders<1>".into(),
            refusals: vec!["has trigger `t`. Fix: drop it".into()],
            ..Default::default()
        };
        let x = to_junit(&[ok, refused], "MariaDB 10.11", 1.5);
        assert!(x.contains("<testsuites name=\"myrecode rehearse\" tests=\"2\" failures=\"1\""));
        assert!(x.contains("<testsuite name=\"shop\" tests=\"2\" failures=\"1\""));
        assert!(x.contains("name=\"orders&lt;1&gt;\""));
        assert!(x.contains("<failure type=\"refused\""));
        assert_eq!(x.matches("<testcase ").count(), 2);
        assert_eq!(x.matches("<failure ").count(), 1);
    }
}

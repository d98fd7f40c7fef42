//! What a scan says when its connection was lost mid-way (killed, a server restart, a
//! timeout, an exchange over `max_allowed_packet`): one line naming the problem, what was
//! scanned and the fix, never the driver's raw words. A scan writes nothing and keeps no
//! partial report, so it is run again; the tables not yet scanned are named for `--tables`
//! when they all belong to one schema.
//!
//! Pure: names in, text out.

/// Where a lost connection stopped the scan.
pub struct Stopped<'a> {
    /// How the connection went (the retry classifier's words, e.g. "connection lost").
    pub how: &'a str,
    /// The table being read, `schema.table`, if one was.
    pub at: Option<&'a str>,
    /// The tables the scan meant to read, `(schema, table)`, in order.
    pub planned: &'a [(String, String)],
    /// How many of them were read whole before it.
    pub done: usize,
}

/// The one-line message for a scan whose connection was lost.
pub fn message(s: &Stopped<'_>) -> String {
    let at =
        s.at.map(|t| format!(" while reading {t}"))
            .unwrap_or_default();
    let left = &s.planned[s.done.min(s.planned.len())..];
    let one_schema = left.windows(2).all(|w| w[0].0 == w[1].0);
    let rest = if left.is_empty() {
        String::new()
    } else if one_schema {
        let names: Vec<&str> = left.iter().map(|(_, t)| t.as_str()).collect();
        format!(
            "; to read only the {} table(s) not yet scanned, add --schema {} --tables {}",
            left.len(),
            left[0].0,
            names.join(",")
        )
    } else {
        format!("; {} table(s) were not yet scanned", left.len())
    };
    format!(
        "the scan lost its connection to the server{at} ({}), after {} of {} table(s): the connection was killed \
         (KILL, a query killer), the server restarted, or it dropped the session (wait_timeout, net_write_timeout, \
         an exchange over max_allowed_packet). Nothing was written, and a scan keeps no partial report. \
         Fix: see the server's error log for which (SHOW GLOBAL VARIABLES LIKE 'max_allowed_packet' and 'wait_timeout'), \
         then run the scan again{rest}",
        s.how,
        s.done,
        s.planned.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(names: &[(&str, &str)]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|(s, t)| (s.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn one_line_naming_the_problem_what_was_read_and_the_tables_left() {
        let p = planned(&[("shop", "a"), ("shop", "b"), ("shop", "c")]);
        let m = message(&Stopped {
            how: "connection lost",
            at: Some("shop.b"),
            planned: &p,
            done: 1,
        });
        assert_eq!(m.lines().count(), 1);
        assert_eq!(
            m,
            "the scan lost its connection to the server while reading shop.b (connection lost), after 1 of 3 table(s): \
             the connection was killed (KILL, a query killer), the server restarted, or it dropped the session \
             (wait_timeout, net_write_timeout, an exchange over max_allowed_packet). Nothing was written, and a scan \
             keeps no partial report. Fix: see the server's error log for which (SHOW GLOBAL VARIABLES LIKE \
             'max_allowed_packet' and 'wait_timeout'), then run the scan again; to read only the 2 table(s) not yet \
             scanned, add --schema shop --tables b,c"
        );
    }

    #[test]
    fn tables_of_several_schemas_are_counted_not_listed() {
        let p = planned(&[("a", "x"), ("b", "y")]);
        let m = message(&Stopped {
            how: "server gone away",
            at: None,
            planned: &p,
            done: 0,
        });
        assert!(
            m.ends_with("then run the scan again; 2 table(s) were not yet scanned"),
            "{m}"
        );
        assert!(!m.contains(" while reading"), "{m}");
        // Lost after the last table (reading the schema's objects): nothing left to name.
        let m = message(&Stopped {
            how: "connection lost",
            at: Some("b.y"),
            planned: &p,
            done: 2,
        });
        assert!(m.ends_with("then run the scan again"), "{m}");
    }
}

//! Values the server writes otherwise than by their column's default, named by key in the
//! copy's own statement rather than staged. Pure (SQL built here has golden tests below).
//!
//! Most values a copy does not write by its column's default conversion still need no bytes
//! from us: a KOI8-R value in a cp1251 column is the server's `koi8r` conversion (proven byte
//! for byte as the default is, [`crate::engine::servercodec`]), a value that is UTF-8 already
//! is its bytes read as UTF-8, a quarantined value keeps its declared charset's reading.
//! Staging them cost an insert into the session's staging table and a join per batch, on
//! the copy's critical path (a tenth of each batch's time with one value in ten so). Where the
//! key is integers, such rows are named instead in the `INSERT … SELECT` itself:
//! `CASE WHEN id IN (3, 17, …) THEN CONVERT(… USING koi8r) … ELSE <default> END`, the list
//! written as literals (numbers parsed from the key's bytes: an integer column compared with
//! an integer, never through a string or a floating-point comparison). Other keys, and the
//! values only our codecs can write (mojibake repaired, ISO-8859-5, TCVN3), are staged.

use super::decide::Stage;
use super::write_sql::JobColumn;
use crate::db::quote;
use crate::engine::read::Key;
use crate::engine::servercodec::ServerCodec;

/// How the server writes a value that is not its column's default, without its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Choice {
    /// Another charset's conversion (an index into [`super::decide::Decider::others`]).
    Codec(usize),
    /// The stored bytes, UTF-8 already, read as UTF-8.
    Utf8,
    /// The declared charset's reading (kept, reversible).
    Declared,
}

/// Per job column, each choice made in a batch and the keys it writes, as SQL literals.
pub(super) type Chosen = Vec<Vec<(Choice, Vec<String>)>>;

/// What a staged cell asks of the server, as a choice when the server needs no bytes for it:
/// `stored` is the value as the table holds it.
pub(super) fn choice_of(stored: &[u8], stage: &Stage) -> Option<Choice> {
    match stage {
        Stage::Server(_) => None,
        Stage::Other(i, _) => Some(Choice::Codec(*i)),
        Stage::Value(v) => {
            (v.as_slice() == stored && std::str::from_utf8(stored).is_ok()).then_some(Choice::Utf8)
        }
        Stage::Declared => Some(Choice::Declared),
    }
}

/// Adds `key` (a literal) to `choice`'s list of one column.
pub(super) fn add(column: &mut Vec<(Choice, Vec<String>)>, choice: Choice, key: &str) {
    match column.iter_mut().find(|(c, _)| *c == choice) {
        Some((_, keys)) => keys.push(key.to_string()),
        None => column.push((choice, vec![key.to_string()])),
    }
}

/// Whether a key column's SQL type (`COLUMN_TYPE`) is an integer type: only then are its
/// keys named as literals.
pub(super) fn is_integer_type(ty: &str) -> bool {
    let t = ty.trim_start().to_ascii_lowercase();
    ["tinyint", "smallint", "mediumint", "int", "bigint"]
        .iter()
        .any(|p| {
            t.strip_prefix(p)
                .is_some_and(|rest| !rest.starts_with(char::is_alphabetic))
        })
}

/// A key as an SQL literal (`7`, `(7,-2)`): `None` unless every part is a plain integer
/// (an optional `-` and at most 20 digits), so nothing but a number reaches the statement.
pub(super) fn key_literal(key: &Key) -> Option<String> {
    let number = |b: &[u8]| {
        let digits = b.strip_prefix(b"-").unwrap_or(b);
        (!digits.is_empty() && digits.len() <= 20 && digits.iter().all(u8::is_ascii_digit))
            .then(|| String::from_utf8_lossy(b).into_owned())
    };
    match key.as_slice() {
        [one] => number(one),
        parts => {
            let parts: Option<Vec<String>> = parts.iter().map(|p| number(p)).collect();
            Some(format!("({})", parts?.join(",")))
        }
    }
}

/// The expression that writes `choice` for column `jc` of row `src`, as UTF-8 text for a text
/// target (every `THEN` of one `CASE` in one charset) or as bytes for a binary one.
fn expr(jc: &JobColumn, src: &str, others: &[ServerCodec], choice: Choice) -> String {
    let own = format!("{src}.{}", quote::ident(&jc.name));
    if jc.binary {
        return own;
    }
    let text = match choice {
        Choice::Codec(i) => match others.get(i) {
            Some(sc) => sc.expr(&own),
            // Never made without its codec: the declared reading is what the server has.
            None => own,
        },
        Choice::Utf8 => format!("CAST({own} AS BINARY)"),
        Choice::Declared => own,
    };
    format!("CONVERT({text} USING utf8mb4)")
}

/// Per job column, its choices as `WHEN` parts of the copy's `CASE`: (the expression, the
/// comma-separated keys it writes).
pub(super) fn whens(
    job: &[JobColumn],
    src: &str,
    others: &[ServerCodec],
    chosen: &Chosen,
) -> Vec<Vec<(String, String)>> {
    job.iter()
        .zip(chosen)
        .map(|(jc, column)| {
            column
                .iter()
                .map(|(choice, keys)| (expr(jc, src, others, *choice), keys.join(",")))
                .collect()
        })
        .collect()
}

/// `CASE WHEN <key> IN (<list>) THEN <expr> … ELSE <otherwise> END`, or `otherwise` itself
/// when nothing is chosen; `key` is the row's key columns as SQL (`t.id`, or `(t.a, t.b)`).
pub(super) fn case_of(key: &str, whens: &[(String, String)], otherwise: String) -> String {
    if whens.is_empty() {
        return otherwise;
    }
    let parts: Vec<String> = whens
        .iter()
        .map(|(e, list)| format!("WHEN {key} IN ({list}) THEN {e}"))
        .collect();
    format!("CASE {} ELSE {otherwise} END", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Encoding;
    use crate::detect::Label;
    use crate::engine::servercodec;

    #[test]
    fn only_integer_keys_become_literals() {
        assert_eq!(key_literal(&vec![b"17".to_vec()]).as_deref(), Some("17"));
        assert_eq!(
            key_literal(&vec![b"-3".to_vec(), b"18446744073709551615".to_vec()]).as_deref(),
            Some("(-3,18446744073709551615)")
        );
        for bad in [
            &b""[..],
            b"-",
            b"1e5",
            b"1 OR 1",
            b"0x1F",
            b"123456789012345678901",
        ] {
            assert_eq!(key_literal(&vec![bad.to_vec()]), None, "{bad:?}");
        }
        assert_eq!(key_literal(&vec![b"1".to_vec(), b"a".to_vec()]), None);
        for t in [
            "int(10) unsigned",
            "bigint(20)",
            "TINYINT",
            "smallint unsigned",
            "int",
        ] {
            assert!(is_integer_type(t), "{t}");
        }
        for t in [
            "varchar(9)",
            "decimal(10,0)",
            "char(4)",
            "datetime",
            "integerish",
            "point",
        ] {
            assert!(!is_integer_type(t), "{t}");
        }
    }

    #[test]
    fn choices_need_no_bytes_only_where_the_server_has_them() {
        assert_eq!(choice_of(b"x", &Stage::Server(None)), None);
        assert_eq!(
            choice_of(b"\xd4", &Stage::Other(1, "Ф".into())),
            Some(Choice::Codec(1))
        );
        assert_eq!(
            choice_of("é".as_bytes(), &Stage::Value("é".into())),
            Some(Choice::Utf8)
        );
        // Bytes only our codecs give (a repaired mojibake): staged.
        assert_eq!(
            choice_of(b"\xc3\x83\xc2\xa9", &Stage::Value("é".into())),
            None
        );
        assert_eq!(choice_of(b"\xff", &Stage::Declared), Some(Choice::Declared));
        let mut col = Vec::new();
        add(&mut col, Choice::Utf8, "3");
        add(&mut col, Choice::Codec(0), "4");
        add(&mut col, Choice::Utf8, "5");
        assert_eq!(
            col,
            vec![
                (Choice::Utf8, vec!["3".into(), "5".into()]),
                (Choice::Codec(0), vec!["4".into()])
            ]
        );
    }

    #[test]
    fn a_case_names_each_choice_s_keys_in_the_copy_statement() {
        let koi8 = Encoding::Koi8R;
        let sc = ServerCodec::from_server(Label::Legacy(koi8), &servercodec::ours(koi8)).unwrap();
        let job = [
            JobColumn {
                name: "b".into(),
                binary: false,
                server: None,
            },
            JobColumn {
                name: "raw".into(),
                binary: true,
                server: None,
            },
        ];
        let chosen: Chosen = vec![
            vec![
                (Choice::Codec(0), vec!["3".into(), "17".into()]),
                (Choice::Utf8, vec!["4".into()]),
                (Choice::Declared, vec!["9".into()]),
            ],
            vec![(Choice::Utf8, vec!["5".into()])],
        ];
        let w = whens(&job, "`s`.`t`", &[sc], &chosen);
        assert_eq!(
            case_of("`s`.`t`.`id`", &w[0], "DEFAULT_B".into()),
            "CASE WHEN `s`.`t`.`id` IN (3,17) THEN CONVERT(CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING `koi8r`) USING utf8mb4) \
             WHEN `s`.`t`.`id` IN (4) THEN CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING utf8mb4) \
             WHEN `s`.`t`.`id` IN (9) THEN CONVERT(`s`.`t`.`b` USING utf8mb4) ELSE DEFAULT_B END"
        );
        assert_eq!(
            case_of("(`s`.`t`.`a`, `s`.`t`.`b`)", &w[1], "RAW".into()),
            "CASE WHEN (`s`.`t`.`a`, `s`.`t`.`b`) IN (5) THEN `s`.`t`.`raw` ELSE RAW END"
        );
        assert_eq!(case_of("k", &[], "AS_IS".into()), "AS_IS");
    }
}

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
//! an integer, never through a string or a floating-point comparison). Where the statement's
//! range has a lower bound and its named keys are many and dense, a string of one code per
//! key of the range replaces the lists, looked up by the row's distance from the bound
//! ([`Named::Map`]). Other keys, and the values only our codecs can write (mojibake repaired,
//! ISO-8859-5, TCVN3), are staged.

use crate::db::quote;
use crate::engine::copy::table::job_column::JobColumn;
use crate::engine::copy::table::recoded::Stage;
use crate::engine::read::Key;
use crate::engine::servercodec::ServerCodec;

/// How the server writes a value that is not its column's default, without its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Another charset's conversion (an index into [`crate::engine::copy::table::decide::Decider::others`]).
    Codec(usize),
    /// The stored bytes, UTF-8 already, read as UTF-8.
    Utf8,
    /// The declared charset's reading (kept, reversible).
    Declared,
}

/// Per job column, each choice made in a batch and the keys it writes, as SQL literals.
pub(crate) type Chosen = Vec<Vec<(Choice, Vec<String>)>>;

/// What a staged cell asks of the server, as a choice when the server needs no bytes for it:
/// `stored` is the value as the table holds it.
pub(crate) fn choice_of(stored: &[u8], stage: &Stage) -> Option<Choice> {
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
pub(crate) fn add(column: &mut Vec<(Choice, Vec<String>)>, choice: Choice, key: &str) {
    match column.iter_mut().find(|(c, _)| *c == choice) {
        Some((_, keys)) => keys.push(key.to_string()),
        None => column.push((choice, vec![key.to_string()])),
    }
}

/// Whether a key column's SQL type (`COLUMN_TYPE`) is an integer type: only then are its
/// keys named as literals.
pub(crate) fn is_integer_type(ty: &str) -> bool {
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
pub(crate) fn key_literal(key: &Key) -> Option<String> {
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

/// Whether a value the copy names by key (`stage`, from `stored`) can be written in its
/// column's default charset, so its `CASE` has one charset ([`expr`]): another label's value
/// whose every byte that charset holds (`holds`, per other label: [`ServerCodec::holds`]),
/// or UTF-8 already whose every character it holds. A quarantined value keeps its declared
/// charset's reading, in UTF-8.
pub(crate) fn fits(jc: &JobColumn, holds: &[[bool; 256]], stored: &[u8], stage: &Stage) -> bool {
    let Some(sc) = jc.server.as_ref().filter(|_| !jc.binary) else {
        return false;
    };
    match stage {
        Stage::Other(i, _) => holds
            .get(*i)
            .is_some_and(|h| stored.iter().all(|&b| h[b as usize])),
        Stage::Value(_) => sc.writes(stored),
        Stage::Server(_) | Stage::Declared => false,
    }
}

/// The expression that writes `choice` for column `jc` of row `src`: for a text target, as
/// text in one charset for every `THEN` of one `CASE`, its `ELSE`'s (the column's default
/// conversion) where every value it names `fits` there ([`fits`]), else UTF-8; as bytes for
/// a binary one.
///
/// In its default's charset the `CASE` converts each row once, on its way into the column;
/// in UTF-8 each row's default value is converted inside the `CASE` and then copied into the
/// column (a KOI8-R row in ten of a cp1251 column: 5% of the copy's `INSERT … SELECT`). A row
/// the application rewrote since it was read ahead may then not fit: strict mode refuses the
/// statement and the step reads its range again (`copier::write_step`); otherwise the value
/// is a `?` until the row's replay, as any stale value is.
fn expr(jc: &JobColumn, src: &str, others: &[ServerCodec], choice: Choice, fits: bool) -> String {
    let own = format!("{src}.{}", quote::ident(&jc.name));
    if jc.binary {
        return own;
    }
    let into = jc.server.as_ref().filter(|_| fits);
    let text = match choice {
        Choice::Codec(i) => match others.get(i) {
            Some(sc) => sc.expr(&own),
            // Never made without its codec: the declared reading is what the server has.
            None => own,
        },
        Choice::Utf8 if into.is_some() => format!("CONVERT(CAST({own} AS BINARY) USING utf8mb4)"),
        Choice::Utf8 => format!("CAST({own} AS BINARY)"),
        Choice::Declared => own,
    };
    match into {
        Some(sc) => format!("CONVERT({text} USING {})", quote::ident(sc.charset)),
        None => format!("CONVERT({text} USING utf8mb4)"),
    }
}

/// A statement's exclusive lower bound `after` as a map's base ([`Named::Map`]): a key of one
/// part, a non-negative integer (so `key - base` overflows no integer type).
pub(crate) fn map_base(after: Option<&[Vec<u8>]>) -> Option<u64> {
    match after? {
        [one] if one.iter().all(u8::is_ascii_digit) => std::str::from_utf8(one).ok()?.parse().ok(),
        _ => None,
    }
}

/// How one job column's `CASE` names the rows it writes otherwise than by its default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// Per choice, `WHEN <key> IN (<list>) THEN <expr>`: (the expression, the comma-separated
    /// keys it writes).
    Lists(Vec<(String, String)>),
    /// One code per key after `base` (the range's exclusive lower bound): byte `k - base - 1`
    /// of `codes` is `0` for the default, `1` for the first expression, `2` the second….
    /// The server looks a row up by position in one step, where `IN (…)` searches its sorted
    /// list: on a cp1251 column with a KOI8-R row in ten, 40,000-row steps, 5% of the copy's
    /// `INSERT … SELECT` (docs/benchmarks.md).
    Map {
        /// The range's exclusive lower bound: every row the statement reads has a key above it.
        base: u64,
        /// One code per key from `base + 1`, ASCII digits.
        codes: String,
        /// The expressions, in the order their codes count from `1`.
        exprs: Vec<String>,
    },
}

/// Fewest keys a column names before a map replaces its lists: a short list is searched in
/// a few steps, and the map costs a byte of statement per key of the range.
const MAP_FEWEST: usize = 64;
/// Most keys a map spans (bytes of statement per column; a sparse range keeps its lists).
const MAP_MOST: u64 = 1 << 16;
/// Most choices one map codes (`1`…`9`).
const MAP_CHOICES: usize = 9;

/// The map of one column's choices over the keys after `base`, when every key is a number
/// above it and the range is dense enough ([`MAP_FEWEST`], [`MAP_MOST`]).
fn map_of(column: &[(Choice, Vec<String>)], base: u64) -> Option<String> {
    let count: usize = column.iter().map(|(_, keys)| keys.len()).sum();
    if count < MAP_FEWEST || column.len() > MAP_CHOICES {
        return None;
    }
    let mut at = Vec::with_capacity(count);
    for (code, (_, keys)) in (b'1'..).zip(column) {
        for k in keys {
            let k: u64 = k.parse().ok()?;
            let offset = k.checked_sub(base)?.checked_sub(1)?;
            (offset < MAP_MOST).then_some(())?;
            at.push((offset as usize, code));
        }
    }
    let span = at.iter().map(|&(o, _)| o + 1).max()?;
    let mut codes = vec![b'0'; span];
    for (o, code) in at {
        codes[o] = code;
    }
    String::from_utf8(codes).ok()
}

/// Per job column, how its `CASE` names its choices ([`Named`]): by a map of the range after
/// `base` (the statement's exclusive lower bound, when it is one non-negative integer key
/// part) where [`map_of`] makes one, else by lists; in its default's charset where `fits`
/// says so for the column ([`expr`]).
pub(crate) fn whens(
    job: &[JobColumn],
    src: &str,
    others: &[ServerCodec],
    (chosen, fits): (&Chosen, &[bool]),
    base: Option<u64>,
) -> Vec<Named> {
    job.iter()
        .zip(chosen)
        .enumerate()
        .map(|(ci, (jc, column))| {
            let fits = fits.get(ci).copied().unwrap_or(false);
            let expr = |choice: &Choice| expr(jc, src, others, *choice, fits);
            match base.and_then(|b| Some((b, map_of(column, b)?))) {
                Some((base, codes)) => Named::Map {
                    base,
                    codes,
                    exprs: column.iter().map(|(c, _)| expr(c)).collect(),
                },
                None => Named::Lists(
                    column
                        .iter()
                        .map(|(c, keys)| (expr(c), keys.join(",")))
                        .collect(),
                ),
            }
        })
        .collect()
}

/// The column's `CASE` around `otherwise` by how it names its rows (`otherwise` itself when
/// it names none); `key` is the row's key columns as SQL (`t.id`, or `(t.a, t.b)`).
///
/// A map's position is `key - base`, at least 1 as the statement reads only keys above
/// `base` (non-negative, so no integer type overflows); past the codes `SUBSTRING` gives
/// `''`, whose `ASCII` is 0, the default.
pub(crate) fn case_of(key: &str, named: Option<&Named>, otherwise: String) -> String {
    match named {
        Some(Named::Lists(whens)) if !whens.is_empty() => {
            let parts: Vec<String> = whens
                .iter()
                .map(|(e, list)| format!("WHEN {key} IN ({list}) THEN {e}"))
                .collect();
            format!("CASE {} ELSE {otherwise} END", parts.join(" "))
        }
        Some(Named::Map { base, codes, exprs }) if !exprs.is_empty() => {
            let parts: Vec<String> = (b'1'..)
                .zip(exprs)
                .map(|(code, e)| format!("WHEN {code} THEN {e}"))
                .collect();
            format!(
                "CASE ASCII(SUBSTRING(_binary'{codes}', {key} - {base}, 1)) {} ELSE {otherwise} END",
                parts.join(" ")
            )
        }
        _ => otherwise,
    }
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
        let w = whens(&job, "`s`.`t`", &[sc], (&chosen, &[false, false]), None);
        assert_eq!(
            case_of("`s`.`t`.`id`", Some(&w[0]), "DEFAULT_B".into()),
            "CASE WHEN `s`.`t`.`id` IN (3,17) THEN CONVERT(CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING `koi8r`) USING utf8mb4) \
             WHEN `s`.`t`.`id` IN (4) THEN CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING utf8mb4) \
             WHEN `s`.`t`.`id` IN (9) THEN CONVERT(`s`.`t`.`b` USING utf8mb4) ELSE DEFAULT_B END"
        );
        assert_eq!(
            case_of("(`s`.`t`.`a`, `s`.`t`.`b`)", Some(&w[1]), "RAW".into()),
            "CASE WHEN (`s`.`t`.`a`, `s`.`t`.`b`) IN (5) THEN `s`.`t`.`raw` ELSE RAW END"
        );
        assert_eq!(case_of("k", None, "AS_IS".into()), "AS_IS");
        assert_eq!(
            case_of("k", Some(&Named::Lists(vec![])), "AS_IS".into()),
            "AS_IS"
        );
    }

    #[test]
    fn a_case_is_in_its_default_s_charset_when_every_value_it_names_fits_there() {
        let codec = |e| ServerCodec::from_server(Label::Legacy(e), &servercodec::ours(e));
        let koi = codec(Encoding::Koi8R).unwrap();
        let job = [JobColumn {
            name: "b".into(),
            binary: false,
            server: codec(Encoding::Windows1251),
        }];
        let holds = [job[0].server.as_ref().unwrap().holds(&koi)];
        let other = |stored: &[u8]| fits(&job[0], &holds, stored, &Stage::Other(0, vec![]));
        assert!(other(b"\xf0\xd2\xc9\xd7\xc5\xd4, 5"));
        // Box drawing cp1251 lacks.
        assert!(!other(b"\xf0\x80"));
        let utf8 = |stored: &[u8]| fits(&job[0], &holds, stored, &Stage::Value(stored.to_vec()));
        assert!(utf8("№ 5 — мир".as_bytes()));
        assert!(!utf8("café".as_bytes()));
        assert!(!fits(&job[0], &holds, b"x", &Stage::Declared));
        let binary = JobColumn {
            binary: true,
            ..job[0].clone()
        };
        assert!(!fits(&binary, &holds, b"\xf0", &Stage::Other(0, vec![])));
        let chosen: Chosen = vec![vec![
            (Choice::Codec(0), vec!["3".into()]),
            (Choice::Utf8, vec!["4".into()]),
        ]];
        let w = whens(&job, "`s`.`t`", &[koi], (&chosen, &[true]), None);
        assert_eq!(
            case_of("`s`.`t`.`id`", Some(&w[0]), "DEFAULT_B".into()),
            "CASE WHEN `s`.`t`.`id` IN (3) THEN CONVERT(CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING `koi8r`) USING `cp1251`) \
             WHEN `s`.`t`.`id` IN (4) THEN CONVERT(CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING utf8mb4) USING `cp1251`) \
             ELSE DEFAULT_B END"
        );
    }

    #[test]
    fn only_one_non_negative_integer_bound_is_a_map_s_base() {
        let one = |b: &[u8]| map_base(Some(&[b.to_vec()]));
        assert_eq!(one(b"0"), Some(0));
        assert_eq!(one(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b"-1"[..], b"+1", b"", b"18446744073709551616", b"1 "] {
            assert_eq!(one(bad), None, "{bad:?}");
        }
        assert_eq!(map_base(Some(&[b"1".to_vec(), b"2".to_vec()])), None);
        assert_eq!(map_base(None), None);
    }

    #[test]
    fn a_dense_range_names_its_rows_by_a_map_of_codes() {
        let job = [JobColumn {
            name: "b".into(),
            binary: false,
            server: None,
        }];
        let others = [ServerCodec::from_server(
            Label::Legacy(Encoding::Koi8R),
            &servercodec::ours(Encoding::Koi8R),
        )
        .unwrap()];
        // Every tenth key after 1000 KOI8-R, key 1005 UTF-8 already.
        let koi: Vec<String> = (1..=MAP_FEWEST)
            .map(|i| (1000 + 10 * i).to_string())
            .collect();
        let chosen: Chosen = vec![vec![
            (Choice::Codec(0), koi.clone()),
            (Choice::Utf8, vec!["1005".into()]),
        ]];
        let w = whens(&job, "`s`.`t`", &others, (&chosen, &[false]), Some(1000));
        let Named::Map { base, codes, exprs } = &w[0] else {
            panic!("{w:?}")
        };
        assert_eq!((*base, exprs.len()), (1000, 2));
        assert_eq!(codes.len(), 10 * MAP_FEWEST);
        assert_eq!(&codes[..10], "0000200001");
        assert_eq!(codes.matches('1').count(), MAP_FEWEST);
        let sql = case_of("`s`.`t`.`id`", Some(&w[0]), "DEFAULT_B".into());
        assert_eq!(
            sql,
            format!(
                "CASE ASCII(SUBSTRING(_binary'{codes}', `s`.`t`.`id` - 1000, 1)) \
                 WHEN 49 THEN CONVERT(CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING `koi8r`) USING utf8mb4) \
                 WHEN 50 THEN CONVERT(CAST(`s`.`t`.`b` AS BINARY) USING utf8mb4) ELSE DEFAULT_B END"
            )
        );
        // Without a lower bound, with too few keys, keys too far apart, or a key not above
        // the bound: lists.
        let lists = |chosen: &Chosen, base| {
            matches!(
                whens(&job, "`s`.`t`", &others, (chosen, &[false]), base)[0],
                Named::Lists(_)
            )
        };
        assert!(lists(&chosen, None));
        let few: Chosen = vec![vec![(Choice::Codec(0), koi[1..].to_vec())]];
        assert!(lists(&few, Some(1000)));
        let mut far = koi.clone();
        far.push((1000 + MAP_MOST + 1).to_string());
        assert!(lists(&vec![vec![(Choice::Codec(0), far)]], Some(1000)));
        assert!(!lists(
            &vec![vec![(Choice::Codec(0), koi.clone())]],
            Some(1000)
        ));
        assert!(lists(
            &vec![vec![(Choice::Codec(0), koi.clone())]],
            Some(1010)
        ));
        let mut tuple = koi.clone();
        tuple[0] = "(1010,2)".into();
        assert!(lists(&vec![vec![(Choice::Codec(0), tuple)]], Some(1000)));
    }
}

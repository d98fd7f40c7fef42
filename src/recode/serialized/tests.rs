//! Unit tests of `serialized`, kept apart so the module reads on its own.

use super::*;
use proptest::prelude::*;

fn to_cp1251(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| match c {
            'Ё' => 0xA8,
            'ё' => 0xB8,
            'А'..='я' => (c as u32 - 0x410 + 0xC0) as u8,
            _ => u8::try_from(c).expect("test text is ASCII or Cyrillic"),
        })
        .collect()
}

/// The mapping a caller would pass: cp1251 to UTF-8, None for ASCII or valid UTF-8.
fn cp1251(b: &[u8]) -> Option<Vec<u8>> {
    if b.is_ascii() || std::str::from_utf8(b).is_ok() {
        return None;
    }
    let text: String = b
        .iter()
        .map(|&c| match c {
            0xA8 => 'Ё',
            0xB8 => 'ё',
            0xC0.. => char::from_u32(0x410 + u32::from(c - 0xC0)).unwrap_or('?'),
            _ => char::from(c),
        })
        .collect();
    Some(text.into_bytes())
}

fn round_trips(old: &[u8], new: &[u8]) -> bool {
    std::str::from_utf8(new).is_ok_and(|s| to_cp1251(s) == old)
}

fn reason(stored: &[u8]) -> String {
    recode(stored, cp1251).expect_err("must be refused").reason
}

const WIDGET: &str = "a:2:{i:2;a:4:{s:5:\"title\";s:12:\"Наши новости\";s:4:\"text\";\
        s:20:\"Ёлки: \"; } и ёжики!!\";s:4:\"tags\";a:2:{i:0;s:3:\"Раз\";s:3:\"Два\";d:0.5;}\
        s:6:\"filter\";b:0;}s:12:\"_multiwidget\";i:1;}";

#[test]
fn wordpress_widget_gets_new_counts_byte_for_byte() {
    let stored = to_cp1251(WIDGET);
    let out = recode(&stored, cp1251).unwrap();
    let expected = "a:2:{i:2;a:4:{s:5:\"title\";s:23:\"Наши новости\";s:4:\"text\";\
            s:30:\"Ёлки: \"; } и ёжики!!\";s:4:\"tags\";a:2:{i:0;s:6:\"Раз\";s:6:\"Два\";d:0.5;}\
            s:6:\"filter\";b:0;}s:12:\"_multiwidget\";i:1;}";
    assert_eq!(String::from_utf8(out.bytes.clone()).unwrap(), expected);
    assert!(out.changed);
    assert_eq!(out.strings, 9);
    assert!(same_shape(&stored, &out.bytes, round_trips));
    assert_eq!(payloads(&stored).unwrap().len(), 9);
    // Already recoded: parses, and a mapping that skips UTF-8 leaves it alone.
    let again = recode(&out.bytes, cp1251).unwrap();
    assert!(!again.changed);
    assert_eq!(again.bytes, out.bytes);
}

#[test]
fn naive_whole_value_recode_is_refused_not_repaired() {
    let stored = to_cp1251(WIDGET);
    let naive = cp1251(&stored).unwrap();
    assert!(looks_serialized(&naive));
    assert!(reason(&naive).contains("count"), "{}", reason(&naive));
    assert!(!same_shape(&stored, &naive, |_, _| true));
    // Naively recoded, the old count 6 lands exactly on the `";` inside the text.
    let trap = to_cp1251("a:1:{i:0;s:6:\"ЖЖЖ\";x\";}");
    assert_eq!(recode(&trap, cp1251).unwrap().strings, 1);
    assert!(recode(&cp1251(&trap).unwrap(), cp1251).is_err());
}

#[test]
fn private_and_protected_names_keep_their_nul_prefix() {
    let stored = to_cp1251(
        "O:4:\"User\":4:{s:10:\"\0User\0name\";s:4:\"Иван\";s:7:\"\0*\0role\";s:5:\"admin\";\
             s:5:\"Город\";i:1;s:9:\"\0User\0Имя\";N;}",
    );
    let out = recode(&stored, cp1251).unwrap();
    let expected = "O:4:\"User\":4:{s:10:\"\0User\0name\";s:8:\"Иван\";s:7:\"\0*\0role\";\
             s:5:\"admin\";s:10:\"Город\";i:1;s:12:\"\0User\0Имя\";N;}";
    assert_eq!(String::from_utf8(out.bytes.clone()).unwrap(), expected);
    assert_eq!(out.strings, 4, "ASCII property names are not offered");
    assert!(same_shape(&stored, &out.bytes, round_trips));
    let class = to_cp1251("O:5:\"Класс\":0:{}");
    assert!(reason(&class).contains("non-ASCII"));
}

#[test]
fn references_enums_and_doubles_are_copied_verbatim() {
    let text = "a:9:{i:0;O:8:\"stdClass\":1:{s:1:\"a\";s:2:\"Да\";}i:1;r:2;i:2;R:2;\
            i:3;d:0.1000000000000000055511151231257827;i:4;d:-INF;i:5;d:1.0E+25;i:6;d:NAN;\
            i:7;E:11:\"Suit:Hearts\";i:-8;d:.5e-7;}";
    let out = recode(&to_cp1251(text), cp1251).unwrap();
    assert_eq!(
        String::from_utf8(out.bytes).unwrap(),
        text.replace("s:2:\"Да", "s:4:\"Да")
    );
    assert!(recode(b"d:1e5;", cp1251).is_ok());
    assert!(recode(b"d:1.2.3;", cp1251).is_err());
    assert!(recode(b"E:4:\"Suit\";", cp1251).is_err());
}

#[test]
fn empty_strings_and_scalars_round_trip() {
    for v in [
        &b"a:1:{s:0:\"\";s:0:\"\";}"[..],
        b"s:0:\"\";",
        b"i:5;",
        b"b:1;",
        b"N;",
    ] {
        let out = recode(v, cp1251).unwrap();
        assert_eq!((out.bytes.as_slice(), out.changed), (v, false));
    }
    assert!(recode(b"b:01;", cp1251).is_err());
}

#[test]
fn custom_payloads_recode_when_serialized_else_stay_opaque() {
    let inner = "a:1:{i:0;s:2:\"Да\";}";
    let stored = to_cp1251(&format!("C:3:\"Foo\":19:{{{inner}}}"));
    let out = recode(&stored, cp1251).unwrap();
    assert_eq!(
        out.bytes,
        "C:3:\"Foo\":21:{a:1:{i:0;s:4:\"Да\";}}".as_bytes()
    );
    assert!(same_shape(&stored, &out.bytes, round_trips));
    let ascii = b"C:11:\"ArrayObject\":21:{x:i:0;a:0:{};m:a:0:{}}";
    assert_eq!(recode(ascii, cp1251).unwrap().bytes, ascii);
    let opaque = to_cp1251("C:3:\"Foo\":7:{x:Дом;m}");
    assert!(reason(&opaque).contains("opaque"), "{}", reason(&opaque));
}

#[test]
fn malformed_values_are_refused() {
    let full = to_cp1251(WIDGET);
    for cut in 0..full.len() {
        assert!(
            recode(&full[..cut], cp1251).is_err(),
            "prefix of {cut} bytes"
        );
    }
    assert!(reason(b"i:5;x").contains("bytes follow"));
    assert!(reason(b"a:0:{}}").contains("bytes follow"));
    assert!(reason(b"s:3:\"ab\";").contains("count 3"));
    assert!(reason(b"s:1:\"ab\";").contains("count 1"));
    assert!(reason(b"a:2:{i:0;i:1;}").contains("neither"));
    assert!(reason(b"s:03:\"abc\";").contains("leading zero"));
    assert!(reason(b"a:1:{d:0.5;i:1;}").contains("neither"));
    assert!(reason(b"s:99999999999999999999999:\"\";").contains("too large"));
}

#[test]
fn nesting_is_capped() {
    let nest = |n: usize| format!("{}N;{}", "a:1:{i:0;".repeat(n), "}".repeat(n));
    assert!(recode(nest(MAX_DEPTH).as_bytes(), cp1251).is_ok());
    assert!(reason(nest(MAX_DEPTH + 1).as_bytes()).contains("deeper"));
    let mut custom = to_cp1251("s:2:\"Да\";");
    for _ in 0..2000 {
        custom = [
            format!("C:1:\"X\":{}:{{", custom.len()).as_bytes(),
            &custom,
            b"}",
        ]
        .concat();
    }
    assert!(
        reason(&custom).contains("opaque"),
        "too deep, so opaque: {}",
        reason(&custom)
    );
}

#[test]
fn looks_serialized_is_precise() {
    for yes in [
        "a:2:{",
        "s:3:\"abc\";",
        "N;",
        "i:5;",
        "b:0;",
        "d:-INF;",
        "O:1:\"X",
        "s:3:\"ab\";",
    ] {
        assert!(looks_serialized(yes.as_bytes()), "{yes}");
    }
    for no in [
        "a: note", "Ssome", "", "a:2", "a:2:x", "i:5", "N;x", "Noted", "b:2;", "s:x",
    ] {
        assert!(!looks_serialized(no.as_bytes()), "{no}");
    }
    assert!(recode(b"s:3:\"ab\";", cp1251).is_err());
}

#[test]
fn same_shape_rejects_changed_structure() {
    let old = to_cp1251("a:2:{s:3:\"Имя\";i:5;i:1;s:2:\"Да\";}");
    let good = "a:2:{s:6:\"Имя\";i:5;i:1;s:4:\"Да\";}";
    assert!(same_shape(&old, good.as_bytes(), round_trips));
    for bad in [
        "a:2:{s:6:\"Имя\";i:6;i:1;s:4:\"Да\";}",
        "a:2:{s:6:\"Имя\";i:5;i:2;s:4:\"Да\";}",
        "a:2:{s:6:\"Имп\";i:5;i:1;s:4:\"Да\";}",
        "a:2:{s:6:\"Имя\";i:5;i:1;s:4:\"Да\";}x",
        "a:2:{s:6:\"Имя\";i:05;i:1;s:4:\"Да\";}",
        "a:1:{s:6:\"Имя\";i:5;}",
    ] {
        assert!(!same_shape(&old, bad.as_bytes(), round_trips), "{bad}");
    }
    assert!(!same_shape(&old, good.as_bytes(), |_, _| false));
}

/// A value to serialize in property tests; `D` and class names are valid PHP text.
#[derive(Debug, Clone)]
enum V {
    Leaf(String),
    S(Vec<u8>),
    A(Vec<(Result<i64, Vec<u8>>, V)>),
    O(String, Vec<(Vec<u8>, V)>),
    C(String, Box<V>),
}

fn ser(v: &V, out: &mut Vec<u8>) {
    let s = |out: &mut Vec<u8>, p: &[u8]| {
        out.extend(format!("s:{}:\"", p.len()).bytes().chain(p.iter().copied()));
        out.extend(b"\";");
    };
    match v {
        V::Leaf(t) => out.extend(t.bytes()),
        V::S(p) => s(out, p),
        V::A(es) => {
            out.extend(format!("a:{}:{{", es.len()).bytes());
            for (k, v) in es {
                match k {
                    Ok(i) => out.extend(format!("i:{i};").bytes()),
                    Err(p) => s(out, p),
                }
                ser(v, out);
            }
            out.push(b'}');
        }
        V::O(class, ps) => {
            out.extend(format!("O:{}:\"{class}\":{}:{{", class.len(), ps.len()).bytes());
            for (k, v) in ps {
                s(out, k);
                ser(v, out);
            }
            out.push(b'}');
        }
        V::C(class, inner) => {
            let mut payload = Vec::new();
            ser(inner, &mut payload);
            out.extend(format!("C:{}:\"{class}\":{}:{{", class.len(), payload.len()).bytes());
            out.extend(payload);
            out.push(b'}');
        }
    }
}

fn value() -> impl Strategy<Value = V> {
    let leaf = prop_oneof![
        prop::sample::select(vec![
            "N;",
            "b:1;",
            "i:-12;",
            "d:0.5;",
            "d:-INF;",
            "d:1.0E+25;",
            "r:1;"
        ])
        .prop_map(|t| V::Leaf(t.into())),
        prop::collection::vec(any::<u8>(), 0..12).prop_map(V::S),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            any::<i64>().prop_map(Ok),
            prop::collection::vec(any::<u8>(), 0..6).prop_map(Err)
        ];
        prop_oneof![
            prop::collection::vec((key, inner.clone()), 0..6).prop_map(V::A),
            (
                "[A-Z][a-z]{0,6}",
                prop::collection::vec(
                    (prop::collection::vec(any::<u8>(), 0..6), inner.clone()),
                    0..4
                )
            )
                .prop_map(|(c, ps)| V::O(c, ps)),
            ("[A-Z][a-z]{0,6}", inner).prop_map(|(c, v)| V::C(c, Box::new(v))),
        ]
    })
}

fn double(b: &[u8]) -> Vec<u8> {
    b.iter().flat_map(|&c| [c, c]).collect()
}

proptest! {
    #[test]
    fn recode_keeps_shape(v in value()) {
        let mut stored = Vec::new();
        ser(&v, &mut stored);
        prop_assert_eq!(render(&parse(&stored).unwrap(), &[]), stored.clone());
        let out = recode(&stored, |p| Some(double(p))).unwrap();
        prop_assert_eq!(out.changed, out.strings > 0 && payloads(&stored).unwrap().iter().any(|p| !p.is_empty()));
        prop_assert!(same_shape(&stored, &out.bytes, |old, new| new == double(old)));
        prop_assert!(!same_shape(&stored, &out.bytes, |_, _| false) || out.strings == 0);
    }

    #[test]
    fn no_panic_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64), v in value(), at in any::<usize>(), b in any::<u8>()) {
        let _ = (recode(&bytes, cp1251), looks_serialized(&bytes), same_shape(&bytes, &bytes, |_, _| true));
        let mut stored = Vec::new();
        ser(&v, &mut stored);
        if !stored.is_empty() {
            let at = at % stored.len();
            stored[at] = b;
            let _ = (recode(&stored, |p| Some(double(p))), recode(&stored[..at], cp1251));
        }
    }
}

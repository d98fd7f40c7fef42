//! Every byte of every codec, and every mappable character in reverse,
//! checked against independent oracles: the WHATWG indexes, CPython's
//! unicode.org-derived codecs, MySQL's own charset tables, encoding_rs,
//! GNU iconv, libiconv's TCVN table and the TCVN3 seed document.
//!
//! The oracles are data files in `tests/data/oracles` (their sources and
//! licences in the README there). Where oracles disagree, the
//! expected exceptions are listed here explicitly so that any other
//! difference fails; `src/codec/README.md` explains each decision.

use myrecode::codec::{
    decode, decode_tcvn3, encode, encode_tcvn3, DecodeErrorKind, EncodeErrorKind, Encoding,
    Tcvn3Convention,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Expected character of each high byte 0x80..=0xFF; `None` = unmapped.
type High = [Option<char>; 128];

/// A documented difference: (byte, ours, the oracle's).
type Exception = (u8, Option<char>, Option<char>);

fn oracle_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/oracles")
}

fn read_oracle(name: &str) -> String {
    let path = oracle_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read oracle {} ({e}); it is committed under tests/data/oracles",
            path.display()
        )
    })
}

fn cp(hex: &str) -> Option<char> {
    let v = u32::from_str_radix(hex.trim_start_matches("0x"), 16).expect("hex code point");
    char::from_u32(v)
}

/// WHATWG index: `pointer<TAB>0xCODE<TAB>...`, pointer = byte - 0x80.
fn whatwg(name: &str) -> High {
    let mut t = [None; 128];
    for line in read_oracle(&format!("whatwg-index-{name}.txt")).lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut f = line.split_whitespace();
        let p: usize = f.next().unwrap().parse().unwrap();
        t[p] = cp(f.next().unwrap());
    }
    t
}

/// `0xBYTE<TAB>0xCODE` files (python-*, mysql-*, tcvn); `UNDEFINED*` and
/// (for MySQL) 0x0000 mean unmapped. Returns every listed byte.
fn byte_table(name: &str) -> BTreeMap<u8, Option<char>> {
    let mut t = BTreeMap::new();
    for line in read_oracle(name).lines() {
        let line = line.split('#').next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        let mut f = line.split_whitespace();
        let b = u8::from_str_radix(f.next().unwrap().trim_start_matches("0x"), 16).unwrap();
        let v = f.next().unwrap();
        let c = if v.starts_with("UNDEFINED") {
            None
        } else {
            cp(v).filter(|&c| c != '\0')
        };
        t.insert(b, c);
    }
    t
}

fn high_of(name: &str) -> High {
    let t = byte_table(name);
    let mut h = [None; 128];
    for b in 0x80..=0xFFu8 {
        h[(b - 0x80) as usize] = *t
            .get(&b)
            .unwrap_or_else(|| panic!("{name} lacks byte {b:#04X}"));
    }
    h
}

/// What our codec decodes each high byte to.
fn ours(enc: Encoding) -> High {
    let mut h = [None; 128];
    for b in 0x80..=0xFFu8 {
        h[(b - 0x80) as usize] = match decode(enc, &[b]) {
            Ok(s) => {
                let mut it = s.chars();
                let c = it.next().unwrap();
                assert!(it.next().is_none(), "{enc} byte {b:#04X} gave {s:?}");
                Some(c)
            }
            Err(e) => {
                assert_eq!(
                    (e.offset, e.bytes(), e.kind),
                    (0, &[b][..], DecodeErrorKind::Unmapped)
                );
                None
            }
        };
    }
    h
}

/// Asserts `ours == oracle` except at `exceptions` (byte, ours, oracle's).
fn assert_matches(enc: Encoding, oracle_name: &str, oracle: &High, exceptions: &[Exception]) {
    let mine = ours(enc);
    for b in 0x80..=0xFFu8 {
        let (m, o) = (mine[(b - 0x80) as usize], oracle[(b - 0x80) as usize]);
        match exceptions.iter().find(|e| e.0 == b) {
            Some(&(_, want_ours, want_oracle)) => {
                assert_eq!(
                    (m, o),
                    (want_ours, want_oracle),
                    "{enc} vs {oracle_name}: documented difference at {b:#04X} changed"
                );
            }
            None => assert_eq!(m, o, "{enc} vs {oracle_name} at byte {b:#04X}"),
        }
    }
}

const SINGLE_BYTE: [Encoding; 6] = [
    Encoding::Windows1251,
    Encoding::Koi8R,
    Encoding::Koi8U,
    Encoding::Ibm866,
    Encoding::Iso8859_5,
    Encoding::Latin1,
];

const CP1251_0X98: Exception = (0x98, None, Some('\u{98}'));
const KOI8U_RFC2319: [Exception; 2] = [(0xAE, Some('╝'), Some('ў')), (0xBE, Some('╬'), Some('Ў'))];
const CP866_MYSQL: [Exception; 2] = [(0xFC, Some('№'), Some('ⁿ')), (0xFD, Some('¤'), Some('²'))];
const CP1252_HOLES: [Exception; 5] = [
    (0x81, Some('\u{81}'), None),
    (0x8D, Some('\u{8D}'), None),
    (0x8F, Some('\u{8F}'), None),
    (0x90, Some('\u{90}'), None),
    (0x9D, Some('\u{9D}'), None),
];

#[test]
fn low_half_is_ascii_in_every_codec() {
    for enc in Encoding::ALL {
        for b in 0..0x80u8 {
            assert_eq!(
                decode(enc, &[b]).unwrap(),
                (b as char).to_string(),
                "{enc} {b:#04X}"
            );
            assert_eq!(
                encode(enc, &(b as char).to_string()).unwrap(),
                [b],
                "{enc} {b:#04X}"
            );
        }
    }
}

#[test]
fn cp1251_matches_python_mysql_and_whatwg_except_0x98() {
    let e = Encoding::Windows1251;
    assert_matches(
        e,
        "python cp1251",
        &high_of("python-cp1251-decode.txt"),
        &[],
    );
    assert_matches(e, "mysql cp1251", &high_of("mysql-cp1251-decode.txt"), &[]);
    assert_matches(
        e,
        "whatwg windows-1251",
        &whatwg("windows-1251"),
        &[CP1251_0X98],
    );
}

#[test]
fn koi8r_matches_python_mysql_and_whatwg() {
    let e = Encoding::Koi8R;
    assert_matches(
        e,
        "python koi8_r",
        &high_of("python-koi8_r-decode.txt"),
        &[],
    );
    assert_matches(e, "mysql koi8r", &high_of("mysql-koi8r-decode.txt"), &[]);
    assert_matches(e, "whatwg koi8-r", &whatwg("koi8-r"), &[]);
}

#[test]
fn koi8u_follows_rfc_2319_not_whatwg_at_0xae_0xbe() {
    let e = Encoding::Koi8U;
    assert_matches(
        e,
        "python koi8_u",
        &high_of("python-koi8_u-decode.txt"),
        &[],
    );
    assert_matches(e, "whatwg koi8-u", &whatwg("koi8-u"), &KOI8U_RFC2319);
    // KOI8-U differs from KOI8-R only in the eight Ukrainian letters.
    let diff: Vec<u8> = (0x80..=0xFFu8)
        .filter(|&b| decode(Encoding::Koi8R, &[b]) != decode(e, &[b]))
        .collect();
    assert_eq!(diff, [0xA4, 0xA6, 0xA7, 0xAD, 0xB4, 0xB6, 0xB7, 0xBD]);
}

#[test]
fn cp866_matches_python_and_whatwg_but_not_mysql_at_0xfc_0xfd() {
    let e = Encoding::Ibm866;
    assert_matches(e, "python cp866", &high_of("python-cp866-decode.txt"), &[]);
    assert_matches(e, "whatwg ibm866", &whatwg("ibm866"), &[]);
    assert_matches(
        e,
        "mysql cp866",
        &high_of("mysql-cp866-decode.txt"),
        &CP866_MYSQL,
    );
}

#[test]
fn iso8859_5_matches_python_and_whatwg() {
    let e = Encoding::Iso8859_5;
    assert_matches(
        e,
        "python iso8859_5",
        &high_of("python-iso8859_5-decode.txt"),
        &[],
    );
    assert_matches(e, "whatwg iso-8859-5", &whatwg("iso-8859-5"), &[]);
}

#[test]
fn latin1_is_mysql_latin1_exactly() {
    let e = Encoding::Latin1;
    assert_matches(e, "mysql latin1", &high_of("mysql-latin1-decode.txt"), &[]);
    assert_matches(e, "whatwg windows-1252", &whatwg("windows-1252"), &[]);
    assert_matches(
        e,
        "python cp1252",
        &high_of("python-cp1252-decode.txt"),
        &CP1252_HOLES,
    );
}

/// Every mapped byte encodes back from its character, and no other character
/// in the whole BMP (plus a sample of astral planes) encodes at all.
#[test]
fn every_character_in_reverse_and_nothing_else() {
    for enc in SINGLE_BYTE.into_iter().chain([Encoding::Tcvn3]) {
        let mine = ours(enc);
        let mut expected: BTreeMap<char, u8> = (0..0x80u8).map(|b| (b as char, b)).collect();
        for (i, c) in mine.iter().enumerate() {
            if let Some(c) = c {
                assert!(
                    expected.insert(*c, 0x80 + i as u8).is_none(),
                    "{enc}: {c:?} twice"
                );
            }
        }
        let astral = (0x10000..0x110000).step_by(97);
        for v in (0..0x10000u32).chain(astral) {
            let Some(c) = char::from_u32(v) else { continue };
            let got = encode_tcvn3_or(enc, c);
            match expected.get(&c) {
                Some(&b) => assert_eq!(got, Ok(vec![b]), "{enc} U+{v:04X}"),
                None if enc == Encoding::Tcvn3 && got.is_ok() => {
                    // Toned capitals: two bytes, checked against the seed below.
                    assert_eq!(got.as_ref().unwrap().len(), 2, "tcvn3 U+{v:04X}");
                }
                None => assert_eq!(got, Err(EncodeErrorKind::Unmappable), "{enc} U+{v:04X}"),
            }
        }
    }
}

fn encode_tcvn3_or(enc: Encoding, c: char) -> Result<Vec<u8>, EncodeErrorKind> {
    let s = c.to_string();
    encode(enc, &s).map_err(|e| {
        assert_eq!((e.offset, e.ch), (0, c));
        e.kind
    })
}

/// encoding_rs (WHATWG) agrees byte for byte, except the documented cases.
#[test]
fn cross_check_encoding_rs() {
    let pairs: [(Encoding, &'static encoding_rs::Encoding, &[Exception]); 6] = [
        (
            Encoding::Windows1251,
            encoding_rs::WINDOWS_1251,
            &[CP1251_0X98],
        ),
        (Encoding::Koi8R, encoding_rs::KOI8_R, &[]),
        (Encoding::Koi8U, encoding_rs::KOI8_U, &KOI8U_RFC2319),
        (Encoding::Ibm866, encoding_rs::IBM866, &[]),
        (Encoding::Iso8859_5, encoding_rs::ISO_8859_5, &[]),
        (Encoding::Latin1, encoding_rs::WINDOWS_1252, &[]),
    ];
    for (enc, rs, exceptions) in pairs {
        let mut theirs = [None; 128];
        for b in 0x80..=0xFFu8 {
            let one = [b];
            let d = rs.decode_without_bom_handling_and_without_replacement(&one);
            theirs[(b - 0x80) as usize] = d.map(|s| s.chars().next().unwrap());
        }
        assert_matches(enc, rs.name(), &theirs, exceptions);
        // And a whole-range decode agrees with the byte-by-byte one.
        let all: Vec<u8> = (0..=255u8)
            .filter(|&b| enc.decode_byte(b).is_some() && !exceptions.iter().any(|e| e.0 == b))
            .collect();
        let (s, bad) = rs.decode_without_bom_handling(&all);
        assert!(!bad);
        assert_eq!(decode(enc, &all).unwrap(), s, "{enc} vs {}", rs.name());
        // Reverse: encoding_rs writes every one of these characters as the same byte.
        for &b in &all {
            let c = enc.decode_byte(b).unwrap().to_string();
            let (bytes, _, unmappable) = rs.encode(&c);
            assert!(!unmappable, "{enc}: encoding_rs cannot encode {c:?}");
            assert_eq!(&bytes[..], &[b], "{enc} vs {} encoding {c:?}", rs.name());
        }
    }
}

/// Decodes each byte (except 0x0A, the separator) with `iconv -c`, which
/// drops bytes it cannot convert, so an empty line means "unmapped".
fn iconv_high(iconv_name: &str) -> High {
    let mut input = Vec::new();
    for b in 0x80..=0xFFu8 {
        input.push(b);
        input.push(b'\n');
    }
    let mut child = Command::new("iconv")
        .args(["-c", "-f", iconv_name, "-t", "UTF-8"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect(
            "iconv not found: this test needs GNU iconv (Debian/Ubuntu: apt-get install libc-bin; \
             Alpine: apk add gnu-libiconv). It is present on CI; do not skip it.",
        );
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).expect("iconv writes UTF-8");
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines.len(), 129, "iconv {iconv_name}: unexpected output");
    let mut h = [None; 128];
    for (i, line) in lines[..128].iter().enumerate() {
        let mut it = line.chars();
        h[i] = it.next();
        assert!(
            it.next().is_none(),
            "iconv {iconv_name} byte {:#04X}: {line:?}",
            0x80 + i
        );
    }
    h
}

/// Encodes each character (one per line) with iconv, in reverse of [`iconv_high`].
fn iconv_encode_lines(iconv_name: &str, chars: &[char]) -> Vec<Vec<u8>> {
    let input: String = chars.iter().flat_map(|&c| [c, '\n']).collect();
    let mut child = Command::new("iconv")
        .args(["-f", "UTF-8", "-t", iconv_name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("iconv not found: install GNU iconv (it is present on CI)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "iconv -t {iconv_name} refused one of our characters"
    );
    let mut lines: Vec<Vec<u8>> = out
        .stdout
        .split(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    assert_eq!(lines.pop(), Some(vec![]));
    lines
}

#[test]
fn cross_check_iconv_in_reverse() {
    for (enc, name) in [
        (Encoding::Windows1251, "CP1251"),
        (Encoding::Koi8R, "KOI8-R"),
        (Encoding::Koi8U, "KOI8-U"),
        (Encoding::Ibm866, "CP866"),
        (Encoding::Iso8859_5, "ISO-8859-5"),
        (Encoding::Latin1, "CP1252"),
    ] {
        // Every mapped high byte except the MySQL latin1 holes, which glibc's CP1252 lacks.
        let bytes: Vec<u8> = (0x80..=0xFFu8)
            .filter(|&b| enc.decode_byte(b).is_some())
            .filter(|&b| !(enc == Encoding::Latin1 && CP1252_HOLES.iter().any(|h| h.0 == b)))
            .collect();
        let chars: Vec<char> = bytes.iter().map(|&b| enc.decode_byte(b).unwrap()).collect();
        let theirs = iconv_encode_lines(name, &chars);
        for ((b, c), t) in bytes.iter().zip(&chars).zip(&theirs) {
            assert_eq!(t, &[*b], "{enc} vs iconv {name} encoding {c:?}");
            assert_eq!(encode(enc, &c.to_string()).unwrap(), [*b]);
        }
    }
}

#[test]
fn cross_check_iconv() {
    let e = Encoding::Windows1251;
    assert_matches(e, "iconv CP1251", &iconv_high("CP1251"), &[]);
    assert_matches(Encoding::Koi8R, "iconv KOI8-R", &iconv_high("KOI8-R"), &[]);
    assert_matches(Encoding::Koi8U, "iconv KOI8-U", &iconv_high("KOI8-U"), &[]);
    assert_matches(Encoding::Ibm866, "iconv CP866", &iconv_high("CP866"), &[]);
    assert_matches(
        Encoding::Iso8859_5,
        "iconv ISO-8859-5",
        &iconv_high("ISO-8859-5"),
        &[],
    );
    assert_matches(
        Encoding::Latin1,
        "iconv CP1252",
        &iconv_high("CP1252"),
        &CP1252_HOLES,
    );
    // glibc's TCVN5712-1 is VN1: it agrees on every VN3 byte and also maps
    // the VN1-only capitals and combining marks, which VN3 does not have.
    let vn1 = iconv_high("TCVN5712-1");
    let mine = ours(Encoding::Tcvn3);
    for i in 0..128 {
        if mine[i].is_some() {
            assert_eq!(
                mine[i],
                vn1[i],
                "tcvn3 vs iconv TCVN5712-1 at {:#04X}",
                0x80 + i
            );
        }
    }
}

#[test]
fn tcvn3_single_bytes_match_the_vn3_subset_of_libiconv_vn1() {
    let derived = byte_table("tcvn3-vn3-subset-DERIVED.txt");
    let vn1 = byte_table("libiconv-tcvn-vn1-decode.txt");
    let mine = ours(Encoding::Tcvn3);
    for b in 0x80..=0xFFu8 {
        let want = derived.get(&b).copied().flatten(); // 0x80..0x9F: not listed = unmapped
        assert_eq!(mine[(b - 0x80) as usize], want, "tcvn3 byte {b:#04X}");
        if let Some(c) = want {
            assert_eq!(
                vn1.get(&b).copied().flatten(),
                Some(c),
                "VN3 is a subset of VN1 at {b:#04X}"
            );
        }
        // The single-byte reading agrees on every lone byte.
        assert_eq!(
            decode_tcvn3(&[b], Tcvn3Convention::SingleByte).ok(),
            want.map(String::from)
        );
    }
    assert_eq!(
        mine.iter().flatten().count(),
        75,
        "VN3 has 75 characters above ASCII"
    );
    // VN1 puts capitals on some control codes; VN3 keeps ASCII there.
    assert!(vn1.keys().any(|&b| b < 0x20));
}

/// The seed article's encode table (`tests/data/oracles/tcvn3-seed-encode.tsv`):
/// one `0xCODE<TAB>HH HH` line per character.
fn seed_tcvn3_table() -> Vec<(char, Vec<u8>)> {
    read_oracle("tcvn3-seed-encode.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (code, bytes) = line.split_once('\t').expect("code<TAB>bytes");
            let bytes = bytes
                .split_whitespace()
                .map(|h| u8::from_str_radix(h, 16).expect("hex byte"))
                .collect();
            (cp(code).expect("code point"), bytes)
        })
        .collect()
}

#[test]
fn tcvn3_matches_the_seed_table_in_both_directions() {
    let rows = seed_tcvn3_table();
    assert_eq!(rows.len(), 134, "seed encode table size");
    let (mut one, mut two) = (0, 0);
    for (c, bytes) in &rows {
        let s = c.to_string();
        assert_eq!(
            &encode_tcvn3(&s, Tcvn3Convention::TwoByte).unwrap(),
            bytes,
            "{c}"
        );
        assert_eq!(&encode(Encoding::Tcvn3, &s).unwrap(), bytes, "{c}");
        assert_eq!(decode(Encoding::Tcvn3, bytes).unwrap(), s, "{c}");
        let single = encode_tcvn3(&s, Tcvn3Convention::SingleByte);
        if bytes.len() == 1 {
            one += 1;
            assert_eq!(&single.unwrap(), bytes);
        } else {
            two += 1;
            let e = single.unwrap_err();
            assert_eq!((e.ch, e.kind), (*c, EncodeErrorKind::Tcvn3NeedsTwoByte));
            assert!(
                e.to_string()
                    .contains(&format!("U+{:04X} '{c}'", *c as u32)),
                "{e}"
            );
            // Read in the single-byte convention, the pair is two letters.
            assert_eq!(
                decode_tcvn3(bytes, Tcvn3Convention::SingleByte)
                    .unwrap()
                    .chars()
                    .count(),
                2
            );
        }
    }
    assert_eq!((one, two), (74, 60));
}

#[test]
fn tcvn3_unmappable_character_is_named() {
    let e = encode(Encoding::Tcvn3, "Xin chào 中").unwrap_err();
    assert_eq!(e.to_string(), "U+4E2D '中' at offset 10 has no tcvn3 byte");
    let e = encode(Encoding::Tcvn3, "Aà").unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::Tcvn3Ambiguous { previous: 'A' });
    assert_eq!(e.offset, 1);
    // The single-byte convention writes it (and decodes it back the same way).
    let b = encode_tcvn3("Aà", Tcvn3Convention::SingleByte).unwrap();
    assert_eq!(decode_tcvn3(&b, Tcvn3Convention::SingleByte).unwrap(), "Aà");
}

/// Long mixed inputs decode exactly as a naive reader built only from the
/// oracles (VN3 subset table + the seed's pairs) would: exercises the fast
/// paths, block boundaries and every split point class at scale.
#[test]
fn tcvn3_long_inputs_match_a_naive_reader_built_from_the_oracles() {
    let single = byte_table("tcvn3-vn3-subset-DERIVED.txt");
    let pairs: BTreeMap<(u8, u8), char> = seed_tcvn3_table()
        .into_iter()
        .filter(|(_, b)| b.len() == 2)
        .map(|(c, b)| ((b[0], b[1]), c))
        .collect();
    let naive = |input: &[u8]| -> Result<String, usize> {
        let mut out = String::new();
        let mut i = 0;
        while i < input.len() {
            if let Some(&c) = input.get(i + 1).and_then(|&b2| pairs.get(&(input[i], b2))) {
                out.push(c);
                i += 2;
                continue;
            }
            let b = input[i];
            let c = if b < 0x80 {
                Some(b as char)
            } else {
                single.get(&b).copied().flatten()
            };
            out.push(c.ok_or(i)?);
            i += 1;
        }
        Ok(out)
    };
    let alphabet: Vec<u8> =
        b"AEIOUYaeiouy hnt\xA1\xA2\xA3\xA4\xA5\xA6\xB5\xB8\xCA\xC7\xD5\xE8\xED\xF8\xFD\xB9\xA8\xAE"
            .to_vec();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..40 {
        let len = 1 + (round * 997) % 9000;
        let mut input: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly letters, sometimes a run of ASCII to hit the memcpy path.
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect();
        if round % 3 == 0 {
            let at = (x as usize) % input.len();
            input.splice(at..at, std::iter::repeat_n(b'x', 100));
        }
        if round % 5 == 0 {
            let at = (x as usize >> 8) % input.len();
            input[at] = 0x90; // unmapped in VN3
        }
        let ours = decode(Encoding::Tcvn3, &input).map_err(|e| e.offset);
        assert_eq!(ours, naive(&input), "round {round}");
    }
}

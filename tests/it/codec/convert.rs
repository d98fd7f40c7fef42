//! `myrecode convert` end to end: the built binary, stdin to stdout.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn convert(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .arg("convert")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run myrecode");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Write from a thread so a large output cannot deadlock against us.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn cp1251_to_utf8_by_default() {
    let o = convert(&["--from", "cp1251"], b"\xcf\xf0\xe8\xe2\xe5\xf2, world\n");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, "Привет, world\n".as_bytes());
}

#[test]
fn utf8_to_cp1251_and_other_directions() {
    let o = convert(&["--from", "utf-8", "--to", "cp1251"], "Привет".as_bytes());
    assert_eq!(
        (o.status.code(), o.stdout.as_slice()),
        (Some(0), &b"\xcf\xf0\xe8\xe2\xe5\xf2"[..])
    );
    // koi8r -> cp866 through MySQL charset names.
    let o = convert(
        &["--from", "koi8r", "--to", "CP866"],
        b"\xf0\xd2\xc9\xd7\xc5\xd4",
    );
    assert_eq!(
        (o.status.code(), o.stdout.as_slice()),
        (Some(0), &b"\x8f\xe0\xa8\xa2\xa5\xe2"[..])
    );
}

#[test]
fn bad_byte_stops_with_its_offset_and_keeps_the_output_before_it() {
    let o = convert(&["--from", "cp1251"], b"abc\xe0\x98def");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(o.stdout, "abcа".as_bytes());
    let e = stderr(&o);
    assert!(
        e.contains("byte 0x98 at offset 4 has no cp1251 character"),
        "{e}"
    );
    assert!(e.contains("--replace"), "{e}");
}

#[test]
fn replace_substitutes_and_exits_1() {
    let o = convert(&["--from", "cp1251", "--replace"], b"abc\x98def");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(o.stdout, "abc\u{FFFD}def".as_bytes());
    assert!(
        stderr(&o).contains("replaced 1 undecodable"),
        "{}",
        stderr(&o)
    );
    let o = convert(
        &["--from", "utf-8", "--to", "koi8-r", "--replace"],
        "да 中 нет".as_bytes(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(o.stdout, b"\xc4\xc1 ? \xce\xc5\xd4");
    // A bad byte into a legacy target is one '?', counted once.
    let o = convert(
        &["--from", "cp1251", "--to", "koi8-r", "--replace"],
        b"a\x98b",
    );
    assert_eq!(
        (o.status.code(), o.stdout.as_slice()),
        (Some(1), &b"a?b"[..])
    );
    assert!(
        stderr(&o).contains("replaced 1 undecodable cp1251 input sequence(s) and 0 character(s)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unencodable_character_is_named_with_its_input_offset() {
    let o = convert(&["--from", "utf-8", "--to", "cp1251"], "ok 中".as_bytes());
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("U+4E2D '中' has no cp1251 byte (input byte offset 3)"),
        "{e}"
    );
    assert_eq!(o.stdout, b"ok ");
    // From a single-byte codec the offset is still a byte offset of the input.
    let o = convert(&["--from", "koi8-r", "--to", "cp1251"], b"ab\x80");
    let e = stderr(&o);
    assert!(
        e.contains("U+2500 '─' has no cp1251 byte (input byte offset 2)"),
        "{e}"
    );
}

#[test]
fn tcvn3_both_conventions() {
    // "ẤN ĐỘ" in the two-byte convention, and Vietnamese lower case.
    let two_byte = b"\xa2\xcaN \xa7\xa4\xe9 ti\xd5ng";
    let o = convert(&["--from", "tcvn3"], two_byte);
    assert_eq!(
        (o.status.code(), String::from_utf8_lossy(&o.stdout).as_ref()),
        (Some(0), "ẤN ĐỘ tiếng")
    );
    let o = convert(
        &["--from", "utf-8", "--to", "tcvn3"],
        "ẤN ĐỘ tiếng".as_bytes(),
    );
    assert_eq!(
        (o.status.code(), o.stdout.as_slice()),
        (Some(0), &two_byte[..])
    );
    let o = convert(
        &["--from", "utf-8", "--to", "tcvn3", "--tcvn3", "single-byte"],
        "ẤN".as_bytes(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("U+1EA4 'Ấ' has no single-byte tcvn3 byte"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn large_input_streams_across_read_boundaries() {
    // Multi-byte characters land on every position relative to 64 KiB reads.
    let text = "Съешь же ещё этих мягких французских булок, да выпей чаю. ".repeat(5000);
    let cp1251 = myrecode::codec::encode(myrecode::codec::Encoding::Windows1251, &text).unwrap();
    let o = convert(&["--from", "cp1251"], &cp1251);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout == text.as_bytes());
    let o = convert(&["--from", "utf-8", "--to", "cp1251"], text.as_bytes());
    assert!(o.status.code() == Some(0) && o.stdout == cp1251);
    let vi = "Trường Đại học ẤN ĐỘ Ước mơ Ỷ ".repeat(9000);
    let tcvn = myrecode::codec::encode(myrecode::codec::Encoding::Tcvn3, &vi).unwrap();
    let o = convert(&["--from", "tcvn3"], &tcvn);
    assert!(o.status.code() == Some(0) && o.stdout == vi.as_bytes());
}

#[test]
fn unknown_label_is_a_usage_error() {
    let o = convert(&["--from", "cp1252x"], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown encoding \"cp1252x\"; known: utf-8, cp1251"),
        "{}",
        stderr(&o)
    );
}

//! `myrecode detect` end to end: stdin lines in, one verdict line out per value.

use std::io::Write;
use std::process::{Command, Stdio};

fn run(args: &[&str], input: &[u8]) -> (String, i32) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .arg("detect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn myrecode");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8(out.stdout).expect("utf-8 output"),
        out.status.code().unwrap_or(-1),
    )
}

fn labels(out: &str) -> Vec<&str> {
    out.lines().map(|l| l.split('\t').next().unwrap()).collect()
}

#[test]
fn raw_lines_get_one_verdict_each_in_order() {
    let mut input = Vec::new();
    input.extend_from_slice(b"plain ascii\n");
    input.extend_from_slice(b"\xcf\xf0\xe8\xe2\xe5\xf2, \xea\xe0\xea \xe4\xe5\xeb\xe0?\n"); // cp1251
    input.extend_from_slice("Ïðèâåò, êàê äåëà?\n".as_bytes()); // cp1251>latin1
    input.extend_from_slice("Привет, как дела?\r\n".as_bytes()); // utf-8, CRLF
    let (out, code) = run(&[], &input);
    assert_eq!(
        labels(&out),
        ["ascii", "cp1251", "cp1251>latin1", "utf-8"],
        "{out}"
    );
    let second: Vec<&str> = out.lines().nth(1).unwrap().split('\t').collect();
    assert_eq!(second[2], "Привет, как дела?");
    assert!(second[1].parse::<f32>().unwrap() >= 0.95);
    assert_eq!(code, 0);
}

#[test]
fn hex_lines_carry_any_bytes_and_undecided_values_exit_1() {
    // A PNG header (binary) and a lone high byte nobody can decide.
    let (out, code) = run(&["--hex"], b"89504e470d0a1a0a0000000d49484452\nc8\n");
    assert_eq!(labels(&out), ["binary", "unknown"], "{out}");
    assert_eq!(code, 1);
    let (_, code) = run(&["--hex"], b"not hex\n");
    assert_eq!(code, 2);
}

#[test]
fn column_mode_reads_a_short_value_as_its_column() {
    // Seventy rows: seven are too few for a column to lend a two-letter value its lead.
    let rows = [
        "Москва, ул. Ленина, д. 5",
        "Иванов Иван Петрович",
        "Доставка курьером",
        "Заказ отменён по просьбе покупателя",
        "Санкт-Петербург, Невский проспект, 28",
        "Петрова Анна Сергеевна",
        "Ключи оставить у консьержа",
    ];
    let mut input = Vec::new();
    for s in rows.iter().cycle().take(70).chain(["Ёж"].iter()) {
        input.extend_from_slice(&encoding_rs::KOI8_R.encode(s).0);
        input.push(b'\n');
    }
    let (out, _) = run(&["--column"], &input);
    assert_eq!(labels(&out), ["koi8-r"; 71], "{out}");
    assert_eq!(out.lines().last().unwrap().split('\t').nth(2), Some("Ёж"));
}

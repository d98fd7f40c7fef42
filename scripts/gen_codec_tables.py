#!/usr/bin/env python3
"""Generate src/codec/tables.rs from the published mapping data.

Sources (all under tests/data/oracles, relative to the crate root):
  * WHATWG Encoding Standard indexes for windows-1251, koi8-r, koi8-u,
    ibm866, iso-8859-5 and windows-1252 (= MySQL latin1: WHATWG already maps
    the five cp1252 holes to C1 controls, exactly as MySQL does);
  * GNU libiconv's TCVN 5712 VN1 table, restricted by rule to VN3.

Deliberate departures from WHATWG (see src/codec/README.md "Oracle
disagreements"):
  * windows-1251 0x98 is unmapped (Unicode.org, CPython, MySQL, iconv agree;
    WHATWG maps it to U+0098 only so browsers never fail);
  * koi8-u 0xAE/0xBE are U+255D/U+256C as in RFC 2319 (CPython, iconv);
    WHATWG puts the Belarusian U+045E/U+040E there (that is KOI8-RU).

TCVN3 two-byte convention: a toned capital with no VN3 byte is written as its
base capital (ASCII A E I O U Y, or VN3 Ă Â Ê Ô Ơ Ư) followed by the VN3 byte of
the same letter in lower case.  The pairs are derived here from Unicode
decomposition, and the tests check them against the seed document's list.

Usage: gen_codec_tables.py [--check] [--oracles DIR]
  --check  regenerate in memory and exit 1 if src/codec/tables.rs differs.
Python 3.8+, standard library only.
"""
import argparse
import os
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "codec", "tables.rs")
BEGIN = "// BEGIN GENERATED TABLES (scripts/gen_codec_tables.py; do not edit by hand)\n"
END = "// END GENERATED TABLES\n"

TONE_MARKS = {0x0300, 0x0301, 0x0303, 0x0309, 0x0323}


def read_whatwg(path):
    table = [0] * 128
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            pointer, code = line.split()[:2]
            table[int(pointer)] = int(code, 16)
    return table


def read_vn1(path):
    table = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if not line:
                continue
            byte, code = line.split()[:2]
            table[int(byte, 16)] = int(code, 16)
    return table


def is_toned_capital(cp):
    ch = chr(cp)
    if not ch.isupper():
        return False
    return any(ord(c) in TONE_MARKS for c in unicodedata.normalize("NFD", ch))


def vn3_from_vn1(vn1):
    """VN3 = VN1's 0xA0..0xFF minus combining marks and toned capitals."""
    table = [0] * 128
    for byte in range(0xA0, 0x100):
        cp = vn1.get(byte)
        if cp is None or unicodedata.combining(chr(cp)) or is_toned_capital(cp):
            continue
        table[byte - 0x80] = cp
    return table


def strip_tone(ch):
    kept = "".join(c for c in unicodedata.normalize("NFD", ch) if ord(c) not in TONE_MARKS)
    return unicodedata.normalize("NFC", kept)


def tcvn3_pairs(vn3):
    """(capital, base byte, tone byte) for every toned capital with no VN3 byte."""
    byte_of = {cp: 0x80 + i for i, cp in enumerate(vn3) if cp}
    for b in range(0x80):
        byte_of[b] = b
    lower_toned = [cp for cp in vn3 if cp and not chr(cp).isupper() and strip_tone(chr(cp)) != chr(cp)]
    pairs = []
    for cp in lower_toned:
        cap = chr(cp).upper()
        assert len(cap) == 1 and ord(cap) not in byte_of, cap
        base = strip_tone(cap)
        assert len(base) == 1 and ord(base) in byte_of, (cap, base)
        pairs.append((ord(cap), byte_of[ord(base)], byte_of[cp]))
    pairs.sort()
    return pairs


def fmt_u16_table(name, doc, table):
    lines = [f"/// {doc}", "#[rustfmt::skip]", f"pub static {name}: [u16; 128] = ["]
    for row in range(0, 128, 8):
        cells = " ".join(f"0x{v:04X}," for v in table[row:row + 8])
        lines.append(f"    {cells} // 0x{0x80 + row:02X}")
    lines.append("];")
    return "\n".join(lines) + "\n"


def generate(oracles):
    w = lambda n: read_whatwg(os.path.join(oracles, f"whatwg-index-{n}.txt"))
    cp1251 = w("windows-1251")
    assert cp1251[0x18] == 0x0098
    cp1251[0x18] = 0  # 0x98: unmapped outside WHATWG
    koi8u = w("koi8-u")
    assert koi8u[0x2E] == 0x045E and koi8u[0x3E] == 0x040E
    koi8u[0x2E], koi8u[0x3E] = 0x255D, 0x256C  # RFC 2319
    latin1 = w("windows-1252")
    for hole in (0x81, 0x8D, 0x8F, 0x90, 0x9D):
        assert latin1[hole - 0x80] == hole  # the MySQL latin1 holes
    vn3 = vn3_from_vn1(read_vn1(os.path.join(oracles, "libiconv-tcvn-vn1-decode.txt")))
    pairs = tcvn3_pairs(vn3)

    tables = [
        ("WINDOWS_1251", "windows-1251 (cp1251) 0x80..=0xFF; 0 = unmapped (0x98).", cp1251),
        ("KOI8_R", "KOI8-R (RFC 1489) 0x80..=0xFF.", w("koi8-r")),
        ("KOI8_U", "KOI8-U (RFC 2319) 0x80..=0xFF.", koi8u),
        ("IBM866", "IBM866 (cp866) 0x80..=0xFF.", w("ibm866")),
        ("ISO_8859_5", "ISO-8859-5 0x80..=0xFF.", w("iso-8859-5")),
        ("LATIN1", "MySQL latin1 (cp1252, holes as C1 controls) 0x80..=0xFF.", latin1),
        ("TCVN3", "TCVN3 (TCVN 5712 VN3) 0x80..=0xFF; 0 = unmapped.", vn3),
    ]
    body = [BEGIN]
    for name, doc, table in tables:
        body.append(fmt_u16_table(name, doc, table))
        body.append("\n")
    body.append("/// TCVN3 two-byte convention: (toned capital, base-capital byte, lower-case toned byte),\n")
    body.append("/// sorted by code point.\n")
    body.append("#[rustfmt::skip]\n")
    body.append(f"pub static TCVN3_PAIRS: [(u16, u8, u8); {len(pairs)}] = [\n")
    for i in range(0, len(pairs), 4):
        cells = " ".join(f"(0x{c:04X}, 0x{a:02X}, 0x{b:02X})," for c, a, b in pairs[i:i + 4])
        body.append(f"    {cells}\n")
    body.append("];\n")
    body.append(END)
    return "".join(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--oracles", default=os.path.join(ROOT, "tests", "data", "oracles"))
    args = ap.parse_args()
    with open(OUT, encoding="utf-8") as f:
        current = f.read()
    if current.count(BEGIN) != 1 or current.count(END) != 1:
        sys.exit(f"{OUT}: BEGIN/END markers missing or repeated; refusing to write")
    head, rest = current.split(BEGIN)
    _, tail = rest.split(END)
    new = head + generate(args.oracles) + tail
    if args.check:
        if new != current:
            sys.exit(f"{OUT} is stale: run scripts/gen_codec_tables.py")
        print("tables up to date")
        return
    if new != current:
        with open(OUT, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"wrote {OUT}")
    else:
        print("tables up to date")


if __name__ == "__main__":
    main()

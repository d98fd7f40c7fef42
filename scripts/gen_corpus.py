#!/usr/bin/env python3
"""Generate the labelled detection corpus (deterministic).

Usage: python3 scripts/gen_corpus.py [--per-group N] [--seed S] > data/detect_corpus.tsv

Each line: LABEL <TAB> LANG <TAB> SHAPE <TAB> HEX(bytes) <TAB> EXPECTED-TEXT
LABEL is the answer `myrecode detect` should give (`unknown` rows hold text in
encodings we must not touch). Source text is hand-written (corpus_text.py)
plus single words from the wordfreq ranks that scripts/build_models.py holds
out of training (every 10th rank), so the models never saw the test text.

Encoders are independent of our Rust codecs: Python's codecs for the
Cyrillic encodings, MySQL's latin1/cp1251 tables from tests/data/oracles for
mojibake, and a TCVN3 (VN3) table read from the same oracle files, with
toned capitals written as base letter + toned lower-case byte.
"""
import argparse
import gzip
import hashlib
import os
import random
import struct
import sys
import unicodedata
import uuid
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_context as X  # noqa: E402
import corpus_text as T  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ORACLES = os.path.join(ROOT, "tests", "data", "oracles")


def load_table(name):
    """byte -> char from an oracle file (0x80-0xFF listed; 0x0000 = unmapped)."""
    m = {b: chr(b) for b in range(0x80)}
    with open(os.path.join(ORACLES, name), encoding="utf-8") as f:
        for line in f:
            if not line.startswith("0x"):
                continue
            parts = line.split("\t")
            b = int(parts[0], 16)
            v = parts[1].strip()
            if v.startswith("0x") and int(v, 16) != 0:
                m[b] = chr(int(v, 16))
    return m


MYSQL_LATIN1 = load_table("mysql-latin1-decode.txt")
MYSQL_CP1251 = load_table("mysql-cp1251-decode.txt")
TCVN3_DEC = load_table("tcvn3-vn3-subset-DERIVED.txt")
TCVN3_ENC = {c: b for b, c in TCVN3_DEC.items()}


def mysql_decode(table, data):
    out = []
    for b in data:
        if b not in table:
            raise ValueError("unmapped")
        out.append(table[b])
    return "".join(out)


def tcvn3_encode(text):
    out = bytearray()
    for ch in unicodedata.normalize("NFC", text):
        if ch in TCVN3_ENC:
            out.append(TCVN3_ENC[ch])
            continue
        low = ch.lower()
        if ch != low and low in TCVN3_ENC:
            # toned capital: base capital + toned lower-case byte
            d = unicodedata.normalize("NFD", ch)
            tones = "".join(c for c in d if c in "\u0300\u0301\u0303\u0309\u0323")
            base = unicodedata.normalize("NFC", d.replace(tones, "")) if tones else None
            if base and base in TCVN3_ENC:
                out.append(TCVN3_ENC[base])
                out.append(TCVN3_ENC[low])
                continue
        raise ValueError(f"not in TCVN3: {ch!r}")
    return bytes(out)


def enc(encoding, text):
    """Bytes of text in one of our legacy encodings (independent encoders)."""
    if encoding == "tcvn3":
        return tcvn3_encode(text)
    py = {"cp1251": "cp1251", "koi8-r": "koi8_r", "koi8-u": "koi8_u", "cp866": "cp866",
          "iso-8859-5": "iso8859_5", "cp1252": "cp1252", "cp1250": "cp1250", "cp1253": "cp1253"}[encoding]
    return text.encode(py, errors="strict")


def chain(label, text):
    """Bytes a column holds after the wrong steps `label` names (stored as UTF-8)."""
    first, second = label.split(">")
    raw = text.encode("utf-8") if first == "utf-8" else enc(first, text)
    table = MYSQL_LATIN1 if second == "latin1" else MYSQL_CP1251
    return mysql_decode(table, raw).encode("utf-8")


LEGACY = {
    "ru": ["cp1251", "koi8-r", "cp866", "iso-8859-5"],
    "uk": ["cp1251", "koi8-u", "iso-8859-5"],
    "be": ["cp1251", "iso-8859-5"],
    "bg": ["cp1251", "koi8-r", "cp866", "iso-8859-5"],
    "sr": ["cp1251", "iso-8859-5"],
    "mk": ["cp1251", "iso-8859-5"],
    "vi": ["tcvn3"],
}
CHAINS = {
    "utf-8>latin1": ["ru", "uk", "bg", "sr", "vi"],
    "utf-8>cp1251": ["ru", "uk", "bg"],
    "cp1251>latin1": ["ru", "uk", "bg", "sr", "mk", "be"],
    "koi8-r>latin1": ["ru"],
    "cp866>latin1": ["ru"],
    "iso-8859-5>latin1": ["ru"],
    "tcvn3>latin1": ["vi"],
}


def heldout_words(lang):
    try:
        import wordfreq
    except ImportError:
        # Without the held-out words the corpus would silently differ from the committed one.
        sys.exit("gen_corpus.py needs wordfreq: pip install wordfreq==3.1.1")
    src = "sh" if lang == "sr" else lang
    if src not in ("ru", "uk", "bg", "mk", "sh", "vi"):
        return []
    words = wordfreq.top_n_list(src, 30000, wordlist="best")
    out = []
    for rank, w in enumerate(words):
        if rank % 10 != 0 or len(w) < 3 or not w.isalpha():
            continue
        if src == "sh":
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from build_models import sr_cyr
            w = sr_cyr(w)
            if not w:
                continue
        if src == "vi":
            from build_models import vi_syllable
            if not vi_syllable(w) or w.isascii():
                continue
        elif not any("\u0400" <= c <= "\u04ff" for c in w):
            continue
        out.append(w)
    return out


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.held = {lang: heldout_words(lang) for lang in T.LANGS}

    def case(self, s):
        r = self.rng.random()
        if r < 0.1:
            return s.upper()
        if r < 0.15:
            return s.lower()
        return s

    def sku(self):
        r = self.rng
        return r.choice(["", "Арт. ", "SKU ", "#", "код "]).strip() + r.choice(
            [f"{r.randint(100, 99999)}", f"{r.choice('ABCDKMX')}{r.choice('ABHTZ')}-{r.randint(10, 9999)}",
             f"{r.randint(1, 99)}x{r.randint(1, 999)}", f"M{r.choice([4, 5, 6, 8, 10, 12])}x{r.randint(10, 80)}"])

    def value(self, lang, shape):
        d, r = T.LANGS[lang], self.rng
        if shape == "name":
            if lang == "vi":
                return self.case(r.choice(d["first"]))
            parts = [r.choice(d["last"]), r.choice(d["first"])]
            if d["patr"] and r.random() < 0.4:
                parts.append(r.choice(d["patr"]))
            if r.random() < 0.3:
                parts = parts[1:] + parts[:1]
            return self.case(" ".join(parts))
        if shape == "address":
            fmt = r.choice(d["addr_fmt"])
            return fmt.format(city=r.choice(d["city"]), st=r.choice(d["st_type"]), street=r.choice(d["street"]),
                              n=r.randint(1, 250), m=r.randint(1, 300), k=r.randint(1, 12), idx=r.randint(100000, 699999))
        if shape == "sentence":
            s = r.choice(d["sentences"])
            if r.random() < 0.3:
                s += " " + r.choice(d["sentences"])
            return s
        if shape == "word":
            held = self.held.get(lang) or []
            pool = held if held and r.random() < 0.7 else [w for w in " ".join(
                d["city"] + d["products"] + d["street"]).split() if w.isalpha()]
            n = 1 if r.random() < 0.6 else 2
            return self.case(" ".join(r.choice(pool) for _ in range(n)))
        if shape == "short":
            return r.choice([r.choice(d["city"]), r.choice(d["first"]).split()[-1], r.choice(d["products"]),
                             (r.choice(d["last"]) if d["last"] else r.choice(d["street"]))])
        if shape == "mixed":
            p = r.choice(d["products"])
            return r.choice([f"{p} {self.sku()}", f"{self.sku()} {p}, {r.randint(1, 50)} {r.choice(d['units'])}",
                             f"{p} {r.randint(1, 999)} {r.choice(['g', 'ml', 'W', 'V', 'mm'])}",
                             f"{p} ({r.choice(['Bosch', 'Samsung', 'LG', 'Nestle', 'IKEA', '3M'])})",
                             f"{r.randint(1, 31):02d}.{r.randint(1, 12):02d}.20{r.randint(10, 24)} {p}"])
        raise ValueError(shape)


SHAPES = ["name"] * 4 + ["address"] * 3 + ["sentence"] * 4 + ["word"] * 4 + ["mixed"] * 3 + ["short"] * 2


def binary_values(rng, n):
    out = []
    kinds = ["uuid", "md5", "sha1", "sha256", "zlib", "gzip", "png", "jpeg", "gif", "random", "random", "utf16"]
    for i in range(n):
        k = kinds[i % len(kinds)]
        text = rng.choice(T.RU["sentences"] + T.VI["sentences"]).encode("utf-8")
        if k == "uuid":
            v = uuid.UUID(int=rng.getrandbits(128)).bytes
        elif k in ("md5", "sha1", "sha256"):
            v = hashlib.new(k, text + bytes([i % 256])).digest()
        elif k == "zlib":
            v = zlib.compress(text)
        elif k == "gzip":
            v = gzip.compress(text, mtime=0)
        elif k == "png":
            v = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + bytes(rng.getrandbits(8) for _ in range(17))
        elif k == "jpeg":
            v = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01" + bytes(rng.getrandbits(8) for _ in range(20))
        elif k == "gif":
            v = b"GIF89a" + bytes(rng.getrandbits(8) for _ in range(20))
        elif k == "utf16":
            v = rng.choice(T.RU["products"]).encode("utf-16-le")
        else:
            v = bytes(rng.getrandbits(8) for _ in range(rng.randint(8, 64)))
        out.append((k, v))
    return out


def ascii_values(rng, n):
    out = []
    for i in range(n):
        k = i % 4
        if k == 0:
            v = rng.choice(T.ASCII_WORDS)
        elif k == 1:
            v = str(uuid.UUID(int=rng.getrandbits(128)))
        elif k == 2:
            v = "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice([8, 32, 40])))
        else:
            v = f"{rng.choice(['ORD', 'INV', 'SKU', 'A'])}-{rng.randint(0, 10**6):06d}"
        out.append(v)
    return out


def valid_utf8(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def author(rng):
    """A forum author's signature of one or two words."""
    k = rng.random()
    if k < 0.2:
        return rng.choice(X.RU_FIRST)
    if k < 0.4:
        return rng.choice(X.RU_SHORT_NAMES)
    if k < 0.6:
        first = rng.choice(X.RU_FIRST + X.RU_SHORT_NAMES)
        last = rng.choice(X.RU_LAST)
        return f"{first} {last}" if rng.random() < 0.6 else f"{last} {first}"
    if k < 0.8:
        return rng.choice(X.RU_NICKS)
    if k < 0.9:
        return f"{rng.choice(X.RU_NICKS)} {rng.choice(X.RU_NICK_WORD2)}"
    return f"{rng.choice(X.RU_NICKS)}{rng.randint(1, 99)}"


def context_rows(rng, emit):
    """Issue 42's columns: Russian city names and forum authors of one or two words in cp1251
    and KOI8-R, each column with the short answers whose bytes in its table are also valid
    UTF-8 ("Ні." in cp1251 is UTF-8 "ͳ."). A separate generator, appended after the rest, so
    the rows before stay as they were."""
    for e in ["cp1251", "koi8-r"]:
        for city in X.RU_CITIES:
            text = city.upper() if rng.random() < 0.1 else city
            emit(e, "ru-city", "city", enc(e, text), text)
        for _ in range(200):
            text = author(rng)
            if rng.random() < 0.1:
                text = text.upper() if rng.random() < 0.5 else text.lower()
            emit(e, "ru-author", "author", enc(e, text), text)
        # Every short answer, in Title, UPPER and lower case, with and without a full stop,
        # whose bytes in this table are valid UTF-8: the city column holds them, as the
        # issue's `Ні.` rows; alone nothing but their UTF-8 reading's oddity tells them.
        seen = set()
        for words in X.SHORT_ANSWERS.values():
            for w in words:
                for form in (w, w.upper(), w.lower()):
                    for text in {form, form.rstrip(".") + "."}:
                        try:
                            data = enc(e, text)
                        except UnicodeEncodeError:
                            continue
                        if text in seen or data.isascii() or not valid_utf8(data):
                            continue
                        seen.add(text)
                        emit(e, "ru-city", "lookalike", data, text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-group", type=int, default=120)
    ap.add_argument("--seed", type=int, default=20261122)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    g = Gen(rng)
    rows = []

    def emit(label, lang, shape, data, text):
        rows.append(f"{label}\t{lang}\t{shape}\t{data.hex()}\t{text}")

    def fill(label, lang, make):
        done, tries = 0, 0
        while done < a.per_group and tries < a.per_group * 20:
            tries += 1
            shape = rng.choice(SHAPES)
            text = g.value(lang, shape)
            try:
                data = make(text)
            except (UnicodeEncodeError, ValueError):
                continue
            if max(data, default=0) < 0x80:
                continue  # pure ASCII is `ascii`, whatever it was meant as
            emit(label, lang, shape, data, text)
            done += 1

    for lang, encs in LEGACY.items():
        for e in encs:
            fill(e, lang, lambda t, e=e: enc(e, t))
    for label, langs in CHAINS.items():
        for lang in langs:
            fill(label, lang, lambda t, label=label: chain(label, t))
    for lang in T.LANGS:
        fill("utf-8", lang, lambda t: t.encode("utf-8"))
    for lang, text in T.UTF8_OTHER:
        emit("utf-8", lang, "other", text.encode("utf-8"), text)
    for e, text in T.UNKNOWN_SRC:
        emit("unknown", e, "foreign", enc(e, text), text)
    for v in ascii_values(rng, a.per_group * 2):
        emit("ascii", "en", "token", v.encode("ascii"), v)
    for k, v in binary_values(rng, a.per_group * 3):
        emit("binary", "-", k, v, "")
    context_rows(random.Random(a.seed + 42), emit)
    print("# label\tlang\tshape\thex\texpected (generated by scripts/gen_corpus.py; do not edit)")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Stress sets for tuning detection, cut from the development set's text (never the
held-out set's): the shapes whose wrong rewrites the real sets hold too few of.

Usage: python3 scripts/gen_stress.py short > /tmp/stress-short.tsv
       python3 scripts/gen_stress.py long > /tmp/stress-long.tsv
       python3 scripts/gen_stress.py western > /tmp/stress-western.tsv
       python3 scripts/gen_stress.py western-legacy > /tmp/stress-western-legacy.tsv

  short    every word of one to three letters of tests/data/dev/<lang>.txt in lower, Title
           and UPPER case, through every table and chain of its language (gen_corpus.py)
  long     600 words of four to nine Cyrillic letters per language (seeded), the same way,
           the UTF-8 chains left out
  western  Western words of eleven languages whose letters are all in Latin-1 (wordfreq
           3.1.1, 20,000 most frequent each; short ones also in Title and UPPER case), as
           genuine UTF-8: any rewrite is a wrong one. `detect_score --inject FILE` puts
           them into the mojibake columns of a set.
  lookalike every frequent word of ru, uk, bg, sr, mk (wordfreq 3.1.1, 20,000 each; Serbian
           from Serbo-Croatian as build_models.py writes it) in lower, Title and UPPER case,
           with and without a full stop ("Ні."), and every initial ("Н.", "Н. П.") of their
           alphabets, through every legacy table of the language, kept only where the bytes
           are also valid UTF-8 (cp1251 "Ні." is U+0373 "ͳ."): they must follow their column
           (issue 28). Committed as data/stress_lookalike.tsv.
  units    prices, quantities, addresses, phones and names with initials in each language's
           own abbreviations ("47319 руб.", "вул. Шевченка, буд. 5, кв. 12", "5 лв. 20 ст.",
           "А. С. Петров"), seeded, through every legacy table of the language; the shape
           names the template, so a column of one shape is one (label, language, shape)
           group. Committed as data/stress_units.tsv.
  western-legacy  the same Western words in cp1252, and Central European (pl cs sk sl hu ro)
           words in cp1250 and Turkish ones in cp1254, the same way: stored text in an
           encoding we do not handle, labelled `unknown`. `detect_score --column-stress FILE`
           puts them into every legacy and mojibake column of a set.
Same line format as data/detect_corpus.tsv. `lookalike` and `units` are committed (the
issue 28 tests read them); the others are not (scored, not tuned on, value by value).
"""
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_corpus as G  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "dev")
WORD = re.compile(r"[^\W\d_]+")
CYR = re.compile("^[\u0400-\u04ff]+$")


def words(lang):
    with open(os.path.join(ROOT, f"{lang}.txt"), encoding="utf-8") as f:
        for line in f:
            yield from WORD.findall(line.split("\t", 1)[1])


def cased(w):
    """(shape, form) in lower, Title and UPPER case, each form once."""
    out = [("lower", w)]
    if len(w) > 1:
        out.append(("title", w.title()))
    if w.upper() != w:
        out.append(("upper", w.upper()))
    return out


def encoded(lang, forms, chains_utf8=True):
    labels = list(G.LEGACY[lang]) + [
        l for l, ls in G.CHAINS.items() if lang in ls and (chains_utf8 or not l.startswith("utf-8"))
    ]
    for label in labels:
        for shape, v in forms:
            try:
                raw = G.chain(label, v) if ">" in label else G.enc(label, v)
            except (UnicodeEncodeError, ValueError, KeyError):
                continue
            if max(raw) >= 0x80:
                yield f"{label}\t{lang}\t{shape}\t{raw.hex()}\t{v}"


ALPHABET = {
    "ru": "АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ",
    "uk": "АБВГҐДЕЄЖЗИІЇЙКЛМНОПРСТУФХЦЧШЩЬЮЯ",
    "bg": "АБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЬЮЯ",
    "sr": "АБВГДЂЕЖЗИЈКЛЉМНЊОПРСТЋУФХЦЧЏШ",
    "mk": "АБВГДЃЕЖЗЅИЈКЛЉМНЊОПРСЌТУФХЦЧЏШ",
}


def freq_words(lang, n=20000):
    """The `n` most frequent Cyrillic words of a language (wordfreq 3.1.1, "best" list)."""
    import wordfreq

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from build_models import sr_cyr  # noqa: E402

    src = wordfreq.top_n_list("sh" if lang == "sr" else lang, n, wordlist="best")
    out = []
    for w in src:
        if lang == "sr":
            w = sr_cyr(w)
        if w and CYR.match(w):
            out.append(w)
    return out


def lookalike():
    rows = []
    for lang in ALPHABET:
        forms = set()
        for w in freq_words(lang):
            for f in {w, w.title(), w.upper()}:
                forms.update([f, f + "."])
        letters = ALPHABET[lang]
        forms.update(f"{a}." for a in letters)
        forms.update(f"{a}. {b}." for a in letters for b in letters)
        for label in G.LEGACY[lang]:
            for f in sorted(forms):
                try:
                    raw = G.enc(label, f)
                    raw.decode("utf-8")
                except (UnicodeEncodeError, UnicodeDecodeError, ValueError, KeyError):
                    continue
                if max(raw) >= 0x80:
                    shape = "initial" if len(f.replace(".", "").replace(" ", "")) <= 2 and f.endswith(".") and f[0].isupper() and (len(f) == 2 or f[2] == " ") else "word"
                    rows.append(f"{label}\t{lang}\t{shape}\t{raw.hex()}\t{f}")
    return rows


# Each language's own abbreviations for money, quantities and addresses.
UNITS = {
    "ru": {
        "price": ["{n} руб.", "{n} руб. {k} коп.", "{n} р.", "{n} тыс. руб.", "{n} млн руб.", "{n},{k} руб."],
        "qty": ["{n} шт.", "{n} кг", "{n} г", "{n} см", "{n} мм", "{n} л", "{n} уп."],
        "address": ["ул. {W}, д. {n}, кв. {k}", "г. {W}, ул. {V}, д. {n}", "пр. {W}, д. {n}, корп. {k}",
                    "пер. {W}, д. {n}", "обл. {W}, г. {V}"],
        "phone": ["тел. {p}", "моб. {p}", "тел./факс {p}"],
        "person": ["{I}. {J}. {W}", "{W} {I}. {J}.", "{W} {I}.{J}."],
    },
    "uk": {
        "price": ["{n} грн.", "{n} грн. {k} коп.", "{n} тис. грн.", "{n},{k} грн."],
        "qty": ["{n} шт.", "{n} кг", "{n} г", "{n} см", "{n} л"],
        "address": ["вул. {W}, буд. {n}, кв. {k}", "м. {W}, вул. {V}, {n}", "просп. {W}, {n}",
                    "пров. {W}, {n}", "обл. {W}, м. {V}"],
        "phone": ["тел. {p}", "моб. {p}"],
        "person": ["{I}. {J}. {W}", "{W} {I}. {J}."],
    },
    "bg": {
        "price": ["{n} лв.", "{n} лв. {k} ст.", "{n},{k} лв.", "{n} хил. лв."],
        "qty": ["{n} бр.", "{n} кг", "{n} г", "{n} см", "{n} л"],
        "address": ["ул. {W} № {n}", "бул. {W} {n}, ет. {k}, ап. {k}", "гр. {W}, ул. {V} {n}",
                    "ж.к. {W}, бл. {n}, вх. {I}"],
        "phone": ["тел. {p}", "моб. {p}"],
        "person": ["{I}. {J}. {W}", "{W} {I}."],
    },
    "sr": {
        "price": ["{n} дин.", "{n},{k} дин.", "{n} хиљ. дин."],
        "qty": ["{n} ком.", "{n} кг", "{n} г", "{n} см"],
        "address": ["ул. {W} бр. {n}", "{W} бр. {n}, стан {k}", "бул. {W} {n}"],
        "phone": ["тел. {p}", "моб. {p}"],
        "person": ["{I}. {J}. {W}", "{W} {I}."],
    },
    "mk": {
        "price": ["{n} ден.", "{n},{k} ден."],
        "qty": ["{n} пар.", "{n} кг", "{n} г"],
        "address": ["ул. {W} бр. {n}", "бул. {W} бр. {n}"],
        "phone": ["тел. {p}"],
        "person": ["{I}. {J}. {W}", "{W} {I}."],
    },
}


def units(per_shape=150):
    rng = random.Random(28)
    rows = []
    for lang, shapes in UNITS.items():
        names = [w.title() for w in freq_words(lang, 8000) if 5 <= len(w) <= 11]
        letters = [a for a in ALPHABET[lang] if a not in "ЁЪЫЬ"]
        for shape, templates in shapes.items():
            values = set()
            while len(values) < per_shape:
                t = rng.choice(templates)
                values.add(t.format(
                    n=rng.choice([rng.randint(1, 99), rng.randint(100, 99999)]),
                    k=rng.randint(1, 99),
                    W=rng.choice(names),
                    V=rng.choice(names),
                    I=rng.choice(letters),
                    J=rng.choice(letters),
                    p=f"{rng.randint(100, 999)}-{rng.randint(10, 99)}-{rng.randint(10, 99)}",
                ))
            for label in G.LEGACY[lang]:
                for v in sorted(values):
                    try:
                        raw = G.enc(label, v)
                    except (UnicodeEncodeError, ValueError, KeyError):
                        continue
                    rows.append(f"{label}\t{lang}\t{shape}\t{raw.hex()}\t{v}")
    return rows


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "short"
    rows = []
    if kind == "short":
        for lang in G.LEGACY:
            ws = sorted({w.lower() for w in words(lang) if not w.isascii() and len(w) <= 3})
            rows += encoded(lang, [f for w in ws for f in cased(w)])
    elif kind == "long":
        rng = random.Random(5)
        for lang in ["ru", "uk", "be", "bg", "sr", "mk"]:
            ws = sorted({w.lower() for w in words(lang) if 4 <= len(w) <= 9 and CYR.match(w)})
            ws = rng.sample(ws, min(600, len(ws)))
            rows += encoded(lang, [f for w in ws for f in cased(w)], chains_utf8=False)
    elif kind == "western":
        import wordfreq

        out = set()
        for lang in ["fr", "de", "es", "pt", "it", "ca", "da", "sv", "nl", "fi", "is"]:
            for w in wordfreq.top_n_list(lang, 20000):
                if w.isascii() or not w.isalpha():
                    continue
                try:
                    w.encode("cp1252")
                except UnicodeEncodeError:
                    continue
                out.update([w, w.title()] + ([w.upper()] if len(w) <= 4 else []))
        rows = [f"utf-8\twest\tword\t{w.encode().hex()}\t{w}" for w in sorted(out)]
    elif kind == "western-legacy":
        import wordfreq

        langs = [("cp1252", ["fr", "de", "es", "pt", "it", "ca", "da", "sv", "nl", "fi", "is"])]
        langs += [("cp1250", ["pl", "cs", "sk", "sl", "hu", "ro"]), ("cp1254", ["tr"])]
        out = set()
        for codec, ls in langs:
            for lang in ls:
                for w in wordfreq.top_n_list(lang, 20000):
                    if w.isascii() or not w.isalpha():
                        continue
                    for f in [w, w.title()] + ([w.upper()] if len(w) <= 4 else []):
                        try:
                            out.add((codec, f, f.encode(codec)))
                        except UnicodeEncodeError:
                            pass
        rows = [f"unknown\t{c}\tword\t{raw.hex()}\t{w}" for c, w, raw in sorted(out)]
    elif kind == "lookalike":
        rows = lookalike()
    elif kind == "units":
        rows = units()
    else:
        sys.exit(f"unknown kind {kind}")
    source = "wordfreq 3.1.1" if kind in ("lookalike", "units", "western", "western-legacy") else "development text only"
    print(f"# stress set `{kind}` (scripts/gen_stress.py; {source})")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

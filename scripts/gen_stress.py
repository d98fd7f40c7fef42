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
  western-legacy  the same Western words in cp1252, and Central European (pl cs sk sl hu ro)
           words in cp1250 and Turkish ones in cp1254, the same way: stored text in an
           encoding we do not handle, labelled `unknown`. `detect_score --column-stress FILE`
           puts them into every legacy and mojibake column of a set.
Same line format as data/detect_corpus.tsv; not committed (scored, not tuned on, value
by value).
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
    else:
        sys.exit(f"unknown kind {kind}")
    print(f"# stress set `{kind}` (scripts/gen_stress.py; development text only)")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

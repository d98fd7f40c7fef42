#!/usr/bin/env python3
"""Build the letter-bigram language models that src/detect embeds.

Source: the word-frequency lists shipped inside the PyPI package `wordfreq`
(pin: wordfreq==3.1.1), so the models are reproducible without network access
beyond the package install. Output (committed, so builds never need Python):

  src/detect/models/cyr-<lang>.bin  50x50 bytes: Cyrillic bigram costs
  src/detect/models/latin.bin       188x188 bytes: Western/Central Latin
  src/detect/models/vi.bin          NxN bytes over the alphabet in vi-alphabet.txt
  src/detect/models/vi-alphabet.txt the Vietnamese alphabet (index order)
  src/detect/models/vi-syllables.txt known Vietnamese syllables, one per line
  src/detect/models/cyr-words.bin   known Cyrillic words: of the LEXICON most frequent
                                    training-split words of ru, uk, bg, sr, mk, those the
                                    scorer asks about, the TOP_WORDS most frequent marked
  src/detect/models/cyr-short.bin   short tokens: Cyrillic words of one to four letters of
                                    Zipf >= SHORT_ZIPF in ru, uk, bg, sr or mk (units,
                                    currencies, abbreviations: "руб", "ул", "кг", "тел")
  src/detect/models/be-words.bin    Belarusian word forms of 4 to 8 letters: the training-split
                                    stems of hunspell-be expanded by its suffix rules

A cost byte is round(-ln P(next | prev) * SCALE), clamped to 255; index N-1
is the word boundary. Held-out words (every 10th rank) are NOT used, so the
corpus generator can draw test words the models never saw.

Belarusian comes from the Debian package hunspell-be (0.53-3.1, CC BY-SA 3.0), whose
stems are unweighted: apt-get install hunspell-be.

Usage: pip install wordfreq==3.1.1 && python3 scripts/build_models.py [--only-lexicon]
       [--only-short]
"""
import math
import re
import unicodedata
import os
import sys

import wordfreq

BE_DIC = "/usr/share/hunspell/be_BY.dic"
BE_AFF = "/usr/share/hunspell/be_BY.aff"
# Lengths of the Belarusian forms kept: shorter ones are too often a wrong table's reading,
# longer ones earn enough from the letter bigrams (chosen on the development set).
BE_MIN, BE_MAX = 4, 8
# be-words.bin: a count per bucket (the top BE_BUCKET_BITS bits of a hash), then the next
# 16 bits of each hash, sorted, bucket by bucket (a 30-bit key: 188k forms make a chance
# match one lookup in 5,700).
BE_BUCKET_BITS = 14
SCALE = 8.0  # cost units per nat: 255 units = 31.9 nats
TOP = 30000
# Words per language in the known-word lexicon (cyr-words.bin), and how many of them
# count as the language's most frequent (function words: "на", "для"). 20,000 rather than
# 10,000: development set legacy alone 226 -> 223 misses, long stress set 44,274 -> 44,307
# right, no wrong rewrite added (30,000: the same on the development set, 44,324).
LEXICON = 20000
TOP_WORDS = 100
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "detect", "models")


def held_out(rank):
    """Every 10th word by rank is reserved for the test corpus."""
    return rank % 10 == 0


def words(lang, n=TOP):
    """(word, weight) pairs for the training split of a language."""
    out = []
    for rank, w in enumerate(wordfreq.top_n_list(lang, n, wordlist="best")):
        if held_out(rank):
            continue
        f = wordfreq.word_frequency(w, lang, wordlist="best")
        # Damp the Zipf head: short function words would otherwise swamp the
        # letter statistics that content words (names, products) need.
        out.append((w, math.sqrt(f)))
    return out


# Serbian Cyrillic: wordfreq only has Serbo-Croatian in Latin script; the
# Latin->Cyrillic mapping of Serbian is one-to-one (Vuk's alphabet).
SR_DIGRAPHS = {"lj": "љ", "nj": "њ", "dž": "џ"}
SR_SINGLE = dict(zip("abvgdđežzijklmnoprstćufhcčš", "абвгдђежзијклмнопрстћуфхцчш"))


def sr_cyr(w):
    out, i = [], 0
    while i < len(w):
        two = w[i : i + 2]
        if two in SR_DIGRAPHS:
            out.append(SR_DIGRAPHS[two])
            i += 2
            continue
        c = w[i]
        if c not in SR_SINGLE:
            return None
        out.append(SR_SINGLE[c])
        i += 1
    return "".join(out)


def cyr_index(c):
    o = ord(c.lower())
    if o == 0x451:  # ё is written as е as often as not: fold it
        return 5
    if 0x430 <= o <= 0x45F:
        return o - 0x430
    if o == 0x491:  # ґ
        return 48
    return None


def latin_index(c):
    c = c.lower()
    o = ord(c)
    if 0x61 <= o <= 0x7A:
        return o - 0x61
    if 0xDF <= o <= 0xFF and o != 0xF7:
        return 26 + o - 0xDF
    if 0x100 <= o <= 0x17F:
        return 59 + o - 0x100
    return None


def train(pairs, index, n, alpha=0.02):
    """Bigram costs with boundary n-1, add-alpha smoothing per row."""
    b = n - 1
    counts = [[0.0] * n for _ in range(n)]
    for w, wt in pairs:
        idx = [index(c) for c in w]
        if not idx or any(i is None for i in idx):
            continue
        seq = [b] + idx + [b]
        for p, q in zip(seq, seq[1:]):
            counts[p][q] += wt
    table = bytearray()
    for p in range(n):
        row = counts[p]
        total = sum(row)
        # alpha relative to the row mass so unseen pairs stay expensive but finite
        a = alpha * total / n if total else 1.0
        denom = total + a * n
        for q in range(n):
            pr = (row[q] + a) / denom
            table.append(min(255, int(round(-math.log(pr) * SCALE))))
    return bytes(table)


VI_BASE = "aăâeêioôơuưy"
VI_TONES = ["\u0300", "\u0301", "\u0303", "\u0309", "\u0323"]
VI_LETTERS = set("abcdeghiklmnopqrstuvxyđăâêôơư") | {
    unicodedata.normalize("NFC", v + t) for v in VI_BASE for t in VI_TONES
}
VI_SYLLABLE = re.compile(
    "^(ngh|ng|gh|gi|kh|nh|ph|th|tr|ch|qu|[bcdđghklmnprstvx])?"
    "[aăâeêioôơuưy]{1,3}(ch|nh|ng|[cmnpt])?$"
)


def vi_syllable(w):
    """A lowercase Vietnamese syllable: one tone mark at most, legal shape."""
    if not w or any(c not in VI_LETTERS for c in w):
        return False
    d = unicodedata.normalize("NFD", w)
    if sum(d.count(t) for t in VI_TONES) > 1:
        return False
    base = unicodedata.normalize("NFC", "".join(c for c in d if c not in VI_TONES))
    return bool(VI_SYLLABLE.match(base))


def fnv32(idx):
    """FNV-1a over Cyrillic model indices, as src/detect/text.rs hashes a word."""
    h = 0x811C9DC5
    for i in idx:
        h = ((h ^ i) * 0x01000193) & 0xFFFFFFFF
    return h


def lexicon():
    """cyr-words.bin: of the LEXICON most frequent training-split words (two letters or
    more, Cyrillic only) of ru, uk, bg, sr and mk (Belarusian has no frequency list), those
    of four letters or more and the three-letter ones among the TOP_WORDS most frequent, as
    sorted u32 hashes of their model indices (little-endian), then one byte per hash: 1 when
    the word is among the TOP_WORDS most frequent of a language, else 2."""
    tier = {}
    for lang in ["ru", "uk", "bg", "sr", "mk"]:
        # Twice as many ranks as words kept: held-out ranks, Latin-script and one-letter
        # words are skipped on the way.
        src = words("sh", 2 * LEXICON) if lang == "sr" else words(lang, 2 * LEXICON)
        src = [(sr_cyr(w), wt) for w, wt in src] if lang == "sr" else src
        n = 0
        for w, _ in src:
            if not w or len(w) < 2:
                continue
            idx = [cyr_index(c) for c in w]
            if any(i is None for i in idx):
                continue
            top = n < TOP_WORDS
            n += 1
            # The scorer asks only about words of four letters or more, and about
            # three-letter ones among the most frequent (src/detect/text.rs, KNOWN_WORD).
            if len(w) < 3 or (len(w) == 3 and not top):
                continue
            h = fnv32(idx)
            tier[h] = min(tier.get(h, 2), 1 if top else 2)
            if n == LEXICON:
                break
    keys = sorted(tier)
    data = b"".join(k.to_bytes(4, "little") for k in keys) + bytes(tier[k] for k in keys)
    write("cyr-words.bin", data)


# Zipf frequency from which a short token counts (wordfreq's "руб" is 5.1 in Russian, "ул"
# 4.7, "тел" 4.5; 3 is once per million words).
SHORT_ZIPF = 3.0


def short_tokens():
    """cyr-short.bin: sorted u32 hashes (little-endian) of the lower-case Cyrillic words of
    one to four letters with Zipf >= SHORT_ZIPF in any of ru, uk, bg, sr, mk: the units,
    currencies and abbreviations that prices and addresses hold ("47319 руб.", "ул.")."""
    keys = set()
    for lang in ["ru", "uk", "bg", "sr", "mk"]:
        src = "sh" if lang == "sr" else lang
        for w in wordfreq.top_n_list(src, 100000, wordlist="best"):
            if wordfreq.zipf_frequency(w, src, wordlist="best") < SHORT_ZIPF:
                break
            w = sr_cyr(w) if lang == "sr" else w
            if not w or len(w) > 4:
                continue
            idx = [cyr_index(c) for c in w]
            if any(i is None for i in idx):
                continue
            keys.add(fnv32(idx))
    write("cyr-short.bin", b"".join(k.to_bytes(4, "little") for k in sorted(keys)))


def be_forms():
    """Belarusian word forms: each training-split stem of hunspell-be (every 10th stem held
    out, as for the bigrams) with the forms its suffix flags (SFX rules) make; prefixes are
    left out. Lower case, ё folded into е, Cyrillic letters only."""
    aff = open(BE_AFF, encoding="utf-8").read().splitlines()
    rules, i = {}, 0
    while i < len(aff):
        f = aff[i].split()
        if len(f) == 4 and f[0] == "SFX" and f[2] in "YN":
            rs = []
            for line in aff[i + 1 : i + 1 + int(f[3])]:
                g = line.split()
                strip = "" if g[2] == "0" else g[2]
                add = "" if g[3] == "0" else g[3].split("/")[0]
                rs.append((strip, add, re.compile("(" + (g[4] if len(g) > 4 else ".") + ")$")))
            rules[f[1]] = rs
            i += int(f[3]) + 1
        else:
            i += 1
    forms = set()
    with open(BE_DIC, encoding="utf-8") as f:
        next(f)  # entry count
        for rank, line in enumerate(f):
            if held_out(rank):
                continue
            stem, _, flags = line.strip().partition("/")
            stem = stem.lower()
            out = {stem}
            for fl in flags:
                for strip, add, cond in rules.get(fl, []):
                    if cond.search(stem) and stem.endswith(strip):
                        out.add(stem[: len(stem) - len(strip)] + add)
            for w in out:
                idx = [cyr_index(c) for c in w]
                if BE_MIN <= len(w) <= BE_MAX and all(i is not None for i in idx):
                    forms.add(fnv32(idx))
    return forms


def be_lexicon():
    """be-words.bin: Belarusian has no frequency list, so its lexicon is the dictionary's
    forms (`be_forms`), stored as 16-bit remainders in 2^14 buckets of their hashes."""
    buckets = [[] for _ in range(1 << BE_BUCKET_BITS)]
    for h in be_forms():
        buckets[h >> (32 - BE_BUCKET_BITS)].append((h >> (16 - BE_BUCKET_BITS)) & 0xFFFF)
    assert max(len(b) for b in buckets) < 256
    data = bytes(len(b) for b in buckets) + b"".join(
        x.to_bytes(2, "little") for b in buckets for x in sorted(b))
    write("be-words.bin", data)


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    print(f"wrote {name}: {len(data)} bytes", file=sys.stderr)


def main():
    os.makedirs(OUT, exist_ok=True)
    short_tokens()
    if "--only-short" in sys.argv:
        return
    lexicon()
    be_lexicon()
    if "--only-lexicon" in sys.argv:
        return
    for lang in ["ru", "uk", "bg", "mk"]:
        write(f"cyr-{lang}.bin", train(words(lang), cyr_index, 50))
    sr = [(sr_cyr(w), wt) for w, wt in words("sh")]
    write("cyr-sr.bin", train([(w, wt) for w, wt in sr if w], cyr_index, 50))
    # Belarusian: wordfreq has none; the Debian hunspell-be dictionary's stems
    # (unweighted) stand in. Every 10th stem is held out like the others.
    be = []
    with open(BE_DIC, encoding="utf-8") as f:
        next(f)  # entry count
        for rank, line in enumerate(f):
            w = line.split("/")[0].strip().lower()
            if w and not held_out(rank):
                be.append((w, 1.0))
    write("cyr-be.bin", train(be, cyr_index, 50))

    latin = []
    for lang in ["en", "fr", "de", "es", "it", "pt", "nl", "sv", "da", "fi", "pl", "cs", "sk", "hu", "ro", "tr", "sl", "lt", "lv", "ca"]:
        latin.extend(words(lang, 15000))
    write("latin.bin", train(latin, latin_index, 188))

    vi_words = [(w, wt) for w, wt in words("vi", 20000) if vi_syllable(w)]
    syll = sorted({w for w, _ in vi_words})
    alphabet = [chr(c) for c in range(0x61, 0x7B)] + sorted(VI_LETTERS - set("abcdefghijklmnopqrstuvwxyz"))
    pos = {c: i for i, c in enumerate(alphabet)}
    n = len(alphabet) + 1
    write("vi.bin", train(vi_words, lambda c: pos.get(c.lower()), n))
    write("vi-alphabet.txt", "".join(alphabet).encode("utf-8"))
    # The toneless base letter of each alphabet letter, same order, for the
    # syllable-structure check (std Rust has no Unicode decomposition).
    bases = "".join(unicodedata.normalize("NFC", "".join(
        x for x in unicodedata.normalize("NFD", c) if x not in VI_TONES)) for c in alphabet)
    assert len(bases) == len(alphabet)
    write("vi-base.txt", bases.encode("utf-8"))
    # The tone of each alphabet letter: 0 none, 1 grave, 2 acute, 3 tilde,
    # 4 hook above, 5 dot below (stop-final syllables take only 2 or 5).
    tones = "".join(next((str(i + 1) for i, t in enumerate(VI_TONES)
                          if t in unicodedata.normalize("NFD", c)), "0") for c in alphabet)
    write("vi-tone.txt", tones.encode("ascii"))
    write("vi-syllables.txt", ("\n".join(sorted(syll)) + "\n").encode("utf-8"))


if __name__ == "__main__":
    main()

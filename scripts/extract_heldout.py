#!/usr/bin/env python3
"""Extract the held-out evaluation text from Debian's translation catalogs.

Usage: python3 scripts/extract_heldout.py [--locale-dir /usr/share/locale] [--set heldout|dev]

Writes tests/data/heldout/<lang>.txt: one `domain<TAB>text` line per
translated message, cleaned the way a database would hold it (format
directives, mnemonic underscores and markup dropped, one line per paragraph).
The catalogs come from the Debian 12 packages named in tests/data/README.md
(`apt-get download` them and `dpkg-deb -x` if they are not installed);
none of this text was used to build the models (scripts/build_models.py
reads wordfreq and hunspell-be only) or written by anyone here.

`--set dev` writes tests/data/dev/<lang>.txt instead, from other catalogs
(DEV_DOMAINS) and without any message the held-out files hold: the
development set detection rules are tuned on, so the held-out set stays
held out.
"""
import argparse
import gettext
import os
import re

LANGS = ["ru", "uk", "be", "bg", "sr", "mk", "vi"]
# Names (countries, regions, currencies, languages) and UI messages.
DOMAINS = ["iso_3166-1", "iso_3166-2", "iso_4217", "iso_639-3", "gtk30", "glib20", "coreutils"]
# The development set: catalogs of other packages (no gtk20 or old iso_3166/iso_639
# files: they repeat the held-out domains' messages).
DEV_DOMAINS = ["iso_3166-3", "iso_15924", "iso_639-5", "xkeyboard-config", "libc", "bash",
               "apt", "systemd", "findutils", "grep", "sed", "tar", "gettext-tools", "wget",
               "Linux-PAM", "shared-mime-info", "make", "diffutils", "gdk-pixbuf", "psmisc",
               "software-properties", "python-apt", "gstreamer-1.0", "at-spi2-core"]
# At most this many messages per (language, domain): keeps the files small
# while every domain still contributes.
CAP = 700
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

FORMAT = re.compile(r"%(\d+\$)?[-#0 +'I]*(\*|\d+)?(\.(\*|\d+))?(hh|h|ll|l|L|z|j|t|q|I64)?[a-zA-Z%]|%[A-Z]+|\$\{\w+\}")
MARKUP = re.compile(r"<[^>]{1,40}>")


def clean(text):
    text = FORMAT.sub("", text)
    text = MARKUP.sub("", text)
    text = re.sub(r"_(?=\w)", "", text)  # mnemonic underscores
    text = text.replace("\t", " ")
    # Control characters (bash's "\a" bell) are no text a column holds.
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", text)
    out = []
    for para in text.split("\n"):
        para = re.sub(r"\s+", " ", para).strip(" :-")
        # Needs a non-ASCII letter: pure ASCII tells detection nothing.
        if len(para) >= 2 and any(c.isalpha() and ord(c) > 0x7F for c in para):
            out.append(para)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--locale-dir", default="/usr/share/locale")
    ap.add_argument("--set", choices=["heldout", "dev"], default="heldout")
    args = ap.parse_args()
    domains = DOMAINS if args.set == "heldout" else DEV_DOMAINS
    for lang in LANGS:
        lines = []
        held = set()
        if args.set == "dev":
            with open(os.path.join(ROOT, "tests", "data", "heldout", f"{lang}.txt"), encoding="utf-8") as f:
                held = {line.rstrip("\n").split("\t", 1)[1] for line in f if "\t" in line}
        for dom in domains:
            path = os.path.join(args.locale_dir, lang, "LC_MESSAGES", dom + ".mo")
            if not os.path.exists(path):
                continue
            with open(path, "rb") as f:
                cat = gettext.GNUTranslations(f)._catalog
            msgs = []
            seen = set()
            for key in sorted(cat, key=str):
                if not key or isinstance(key, tuple) and not key[0]:
                    continue
                for para in clean(cat[key]):
                    if para not in seen and para not in held:
                        seen.add(para)
                        msgs.append(para)
            step = max(1, len(msgs) // CAP)
            lines += [f"{dom}\t{m}" for m in msgs[::step][:CAP]]
        os.makedirs(os.path.join(ROOT, "tests", "data", args.set), exist_ok=True)
        out = os.path.join(ROOT, "tests", "data", args.set, f"{lang}.txt")
        with open(out, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print(lang, len(lines))


if __name__ == "__main__":
    main()

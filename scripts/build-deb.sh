#!/usr/bin/env bash
# Builds the Debian package of myrecode with cargo-deb (configured in Cargo.toml,
# [package.metadata.deb]): the binary, a man page per command and bash/zsh/fish completions
# (both written by the binary itself, `myrecode generate`, from its clap definitions), the
# README, the docs and the example job.
#
#   scripts/build-deb.sh                 # cargo build --release, then the package in target/debian/
#   scripts/build-deb.sh --binary PATH   # package an already built binary (the test suite's)
#   scripts/build-deb.sh --out DIR       # write the .deb into DIR
#
# Needs cargo-deb (`cargo install cargo-deb --locked`; scripts/setup-server.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
binary=""
out="target/debian"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "build-deb.sh: unknown argument '$1'. Fix: --binary PATH and/or --out DIR" >&2; exit 2 ;;
  esac
done
if ! cargo deb --version >/dev/null 2>&1; then
  echo "build-deb.sh: cargo-deb is missing. Fix: cargo install cargo-deb --locked (or bash scripts/setup-server.sh)" >&2
  exit 2
fi
# cargo-deb takes the binary from target/release (its asset path); a given one is staged
# in a release folder of a scratch target directory, so a debug build is never taken for a
# release one in this checkout.
target="target"
if [ -z "$binary" ]; then
  cargo build --release --locked
  binary="target/release/myrecode"
else
  target="$(mktemp -d)"
  mkdir -p "$target/release"
  cp "$binary" "$target/release/myrecode"
fi
assets="target/deb-assets"
rm -rf "$assets"
mkdir -p "$assets/completions"
"$binary" generate man "$assets/man"
"$binary" generate completions bash > "$assets/completions/myrecode.bash"
"$binary" generate completions zsh > "$assets/completions/_myrecode"
"$binary" generate completions fish > "$assets/completions/myrecode.fish"
mkdir -p "$out"
if [ "$target" != "target" ]; then
  # cargo-deb reads assets under target/ relative to the manifest: point target/release at
  # the staged binary only for this call, through CARGO_TARGET_DIR.
  CARGO_TARGET_DIR="$target" cargo deb --no-build --fast --strip --output "$out"
  rm -rf "$target"
else
  cargo deb --no-build --strip --output "$out"
fi

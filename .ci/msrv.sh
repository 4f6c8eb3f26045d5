#!/usr/bin/env bash
# The minimum supported Rust version (MSRV) is declared in five places, and
# the vendored crates can raise it behind our back (libloading 0.9 needed
# 1.88 while we still said 1.85). This computes the true minimum -- the
# highest `rust-version` among the vendored crates and our own two crates --
# and fails, naming the file, if any declaration says something else:
#   configure                 MIN_RUST="X"
#   src/rust/Cargo.toml       rust-version = "X"
#   src/rust/core/Cargo.toml  rust-version = "X"
#   DESCRIPTION               SystemRequirements: ... rustc >= X
#   README.md                 every "Rust ... >= X" / "rustc >= X"
# Run by .ci/test.sh and at the end of .ci/vendor.sh. Needs no Rust.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# rust-version of the [package] section of a Cargo.toml ("" if none).
rust_version() {
  awk '/^\[/ { pkg = ($0 == "[package]") }
       pkg && /^rust-version[ \t]*=/ { sub(/^[^"]*"/, ""); sub(/".*$/, ""); print; exit }' "$1"
}
# "1.88.0" and "1.88" are the same minimum; declarations use the short form.
short() { sed -e 's/^\([0-9]*\.[0-9]*\)\.0$/\1/'; }

manifests=(src/rust/Cargo.toml src/rust/core/Cargo.toml)
if [ -f src/rust/vendor.tar.xz ]; then
  # Only the manifests are needed, not the 1.5 MB of sources.
  tar -xJf src/rust/vendor.tar.xz -C "$tmp" --wildcards 'vendor/*/Cargo.toml'
  manifests+=("$tmp"/vendor/*/Cargo.toml)
fi
# One line per crate: "rust-version name-version".
for m in "${manifests[@]}"; do
  v=$(rust_version "$m")
  [ -z "$v" ] || printf '%s %s\n' "$v" \
    "$(awk -F'"' '/^name *=/ { n = $2 } /^version *=/ { print n "-" $2; exit }' "$m")"
done | sort -V -k1,1 > "$tmp/versions"
msrv=$(tail -n 1 "$tmp/versions" | cut -d' ' -f1 | short)
[ -n "$msrv" ] || { echo "msrv.sh: no rust-version found in any Cargo.toml" >&2; exit 1; }
# The crates that need it (ours only count when no vendored crate does).
at_msrv=$(while read -r v crate; do
           if [ "$(printf '%s\n' "$v" | short)" = "$msrv" ]; then echo "$crate"; fi
         done < "$tmp/versions")
set_by=$(printf '%s\n' "$at_msrv" | grep -v '^bulkem' || printf '%s\n' "$at_msrv")
set_by=$(printf '%s\n' "$set_by" | paste -sd' ' -)

stale=0
# check FILE WHAT DECLARED...: every declared value must be the MSRV, and
# there must be at least one.
check() {
  local file=$1 what=$2; shift 2
  if [ $# -eq 0 ]; then
    echo "msrv.sh: $file: no $what found (expected $msrv)" >&2; stale=1; return
  fi
  local v
  for v in "$@"; do
    if [ "$(printf '%s\n' "$v" | short)" != "$msrv" ]; then
      echo "msrv.sh: $file is stale: $what is $v, but the minimum is $msrv (set by $set_by)" >&2
      stale=1
    fi
  done
}
# $(...) unquoted on purpose: each declaration is one word.
# shellcheck disable=SC2046
check configure 'MIN_RUST' $(sed -n 's/^MIN_RUST="\([^"]*\)".*/\1/p' configure)
for m in src/rust/Cargo.toml src/rust/core/Cargo.toml; do
  # shellcheck disable=SC2046
  check "$m" 'rust-version' $(rust_version "$m")
done
# shellcheck disable=SC2046
check DESCRIPTION 'SystemRequirements rustc >=' \
  $(grep '^SystemRequirements:' DESCRIPTION | grep -o 'rustc >= *[0-9][0-9.]*' | grep -o '[0-9][0-9.]*$')
# shellcheck disable=SC2046
check README.md '"Rust ... >= X"' \
  $(grep -oiE '(rust[a-z ]*|rustc) >= *[0-9]+\.[0-9.]*[0-9]' README.md | grep -oE '[0-9][0-9.]*$')

if [ "$stale" -ne 0 ]; then
  echo "msrv.sh: FAIL: declare Rust $msrv everywhere (configure, src/rust/Cargo.toml, src/rust/core/Cargo.toml, DESCRIPTION, README.md)." >&2
  exit 1
fi
echo "msrv.sh: minimum Rust $msrv (set by $set_by), declared consistently"

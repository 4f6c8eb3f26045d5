#!/bin/sh
# Usage: sh tools/rust-bin.sh MIN_VERSION
# Prints the directory holding the cargo and rustc to build bulkem with: the
# first directory, in this order, that has both and whose rustc is at least
# MIN_VERSION:
#   1. ~/.cargo/bin (rustup; preferred when new enough, as it is often not on
#      the PATH R was started with),
#   2. each directory on PATH in turn (e.g. /usr/bin, where Debian 12's
#      rustc-web and cargo-web put their cargo and rustc; a too-old rustc
#      earlier on PATH is skipped, not fatal).
# Exits 1 when there is none, printing (on stdout) what it found instead.
# Used by configure (which passes the result to src/Makevars), .ci/deps.sh
# and .ci/test.sh, so all three agree on the toolchain. POSIX sh: configure
# runs it on any system R installs on.
min=$1

# ge A B: version A >= version B ("1.96.0" vs "1.88"; a "-nightly" suffix
# counts as the release).
ge() {
  printf '%s %s\n' "$1" "$2" | awk '{
    split($1, a, "."); split($2, b, ".")
    for (i = 1; i <= 3; i++) if (a[i] + 0 != b[i] + 0) exit !(a[i] + 0 > b[i] + 0)
    exit 0 }'
}

seen=":"
report=""
old_ifs=$IFS
IFS=:
for dir in "${HOME}/.cargo/bin" ${PATH}; do
  IFS=$old_ifs
  [ -n "${dir}" ] && [ -x "${dir}/cargo" ] && [ -x "${dir}/rustc" ] || continue
  # Each directory once, also where /bin is a link to /usr/bin.
  real=$(cd "${dir}" && pwd -P) || continue
  case "${seen}" in *":${real}:"*) continue ;; esac
  seen="${seen}${real}:"
  # "rustc 1.96.0 (a1b2c3d4e 2026-05-28) (built from a source tarball)" -> 1.96.0.
  # A rustup proxy with no default toolchain fails here and is skipped.
  version=$("${dir}/rustc" --version 2>/dev/null | awk '{ print $2 }')
  if [ -n "${version}" ] && ge "${version}" "${min}"; then
    echo "${dir}"
    exit 0
  fi
  report="${report}  ${dir}/rustc: ${version:-'rustc --version' failed}
"
done
IFS=$old_ifs
if [ -n "${report}" ]; then
  printf 'no rustc >= %s found; found only:\n%s' "${min}" "${report}"
else
  echo "no cargo and rustc found (looked in ~/.cargo/bin and on PATH)."
fi
exit 1

#!/usr/bin/env bash
# The project's test command (CI: .ci/run on a fresh clone). Exits non-zero
# on the first failure of: cargo tests of the whole workspace, building and
# installing the package tarball, the minimum Rust version declared
# inconsistently (.ci/msrv.sh), generated files being out of date, or
# R CMD check reporting an ERROR or WARNING.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. .ci/env.sh

t_all=$SECONDS
step() { printf '\n==> %s\n' "$*"; t_step=$SECONDS; }
done_step() { printf '<== %ss\n' "$((SECONDS - t_step))"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step "dependencies"
bash .ci/deps.sh
# cargo test uses the toolchain the package build will (configure picks it
# with the same script), first on PATH.
PATH="$(sh tools/rust-bin.sh "$(sed -n 's/^MIN_RUST="\([^"]*\)".*/\1/p' configure)"):$PATH"
export PATH
done_step

step "minimum Rust version declared consistently"
# Seconds, and catches a vendored crate raising the MSRV before a user with
# the old declared minimum does (.ci/msrv.sh says how).
bash .ci/msrv.sh
done_step

step "cargo test --release (workspace: glue + core)"
# Test against the same vendored crates the package installs from, offline,
# so the tests also prove the snapshot is complete. R_HOME/R_INCLUDE_DIR are
# what R CMD INSTALL would pass (src/Makevars says why they matter).
# They are unpacked under the (ignored) target dir rather than a temp dir:
# cargo fingerprints the source path, so a fixed path keeps reruns warm.
vendor_args=()
if [ -f src/rust/vendor.tar.xz ]; then
  vsrc=$root/src/rust/target/vendor-src
  rm -rf "$vsrc" && mkdir -p "$vsrc"
  tar -xf src/rust/vendor.tar.xz -C "$vsrc"
  vendor_args=(--offline
    --config "source.crates-io.replace-with='vendored-sources'"
    --config "source.vendored-sources.directory='$vsrc/vendor'")
fi
cargo --version
(cd src/rust &&
  R_HOME=$(R RHOME) R_INCLUDE_DIR=$(Rscript -e 'cat(R.home("include"))') \
  cargo test --release --locked --workspace "${vendor_args[@]}") || {
  echo "FAIL: cargo test. If a Cargo dependency changed, run .ci/vendor.sh and commit its output." >&2
  exit 1; }
done_step

step "rustfmt and clippy (no warnings)"
# Offline like the tests above; clippy checks both crates, tests and
# examples included, and any warning fails the run. rustup's toolchains
# (CI's) have both; Debian's rustc-web/cargo-web, which deps.sh installs on
# a bare Debian 12, have neither: there the step says so and is skipped.
if cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; then
  (cd src/rust &&
    cargo fmt --all --check &&
    R_HOME=$(R RHOME) R_INCLUDE_DIR=$(Rscript -e 'cat(R.home("include"))') \
    cargo clippy --release --locked --workspace --all-targets "${vendor_args[@]}" -- -D warnings) || {
    echo "FAIL: cargo fmt --check or cargo clippy: run cargo fmt, fix clippy's warnings." >&2
    exit 1; }
else
  echo "SKIPPED: this Rust toolchain has no rustfmt or clippy (rustup component add rustfmt clippy)"
fi
done_step

step "R CMD build"
rm -rf bulkem_*.tar.gz bulkem.Rcheck
R CMD build .
tarball=$(ls bulkem_*.tar.gz)
done_step

step "R CMD INSTALL $tarball"
mkdir "$work/lib"
R CMD INSTALL -l "$work/lib" "$tarball"
done_step

step "sharded bulkem() on a one-node Slurm (future.batchtools)"
bash .ci/test-cluster.sh "$work/lib"
done_step

step "generated files up to date"
# Snapshot, regenerate, compare. Unlike `git diff`, this also sees new or
# removed man pages and works before the first commit; on a clean clone
# (CI) the snapshot is exactly what is committed.
mkdir "$work/before"
cp -R R/extendr-wrappers.R NAMESPACE man "$work/before/" 2>/dev/null || true
bash .ci/update-generated.sh "$work/lib"
mkdir "$work/after"
cp -R R/extendr-wrappers.R NAMESPACE man "$work/after/" 2>/dev/null || true
if ! diff -ru "$work/before" "$work/after"; then
  echo "FAIL: R/extendr-wrappers.R, NAMESPACE or man/ were stale; they have now been regenerated: review and commit them." >&2
  exit 1
fi
done_step

step "R CMD check --as-cran"
check_rc=0
# --as-cran: CRAN's checks, with qpdf (PDF sizes) and checkbashisms
# (configure, cleanup) installed by deps.sh so none of them is skipped.
# --no-manual: there is no LaTeX here (pdflatex; texlive is a large install),
# so the PDF manual is not built; the Rd files are still checked.
# Offline: the CRAN incoming feasibility check asks CRAN's package database
# and the URLs in the docs, which an offline machine cannot reach, so its
# remote part is turned off (its local part still runs). --as-cran forces
# the future file-timestamp check on, and offline it always leaves the NOTE
# "unable to verify current time" (it asks a time server): expected here.
_R_CHECK_FORCE_SUGGESTS_=false \
_R_CHECK_CRAN_INCOMING_REMOTE_=false \
  R CMD check --as-cran --no-manual "$tarball" || check_rc=$?
log=bulkem.Rcheck/00check.log
status=$(grep '^Status:' "$log" 2>/dev/null || echo "Status: (none; check did not finish)")
if [ "$check_rc" -ne 0 ] || ! grep -q '^Status:' "$log" 2>/dev/null \
   || grep -qE '^Status:.*(ERROR|WARNING)' "$log"; then
  echo "FAIL: R CMD check (exit $check_rc) $status" >&2
  [ -f "$log" ] && cat "$log"
  for f in bulkem.Rcheck/tests/testthat.Rout.fail bulkem.Rcheck/tests/testthat.Rout; do
    [ -f "$f" ] && { echo "---- $f"; cat "$f"; break; }
  done
  exit 1
fi
done_step

# NOTEs do not fail the run; list them so a new one is seen.
awk '/\.\.\. (\[[^]]*\] )?NOTE$/ { p = 1; print; next } /^\* / { p = 0 } p' "$log"
printf '\nOK: all tests passed in %ss. R CMD check %s\n' "$((SECONDS - t_all))" "$status"

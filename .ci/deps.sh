#!/usr/bin/env bash
# Install what building, testing and running bulkem needs, and nothing twice:
# apt packages that are already installed are skipped, and `apt-get update`
# runs only when something is missing. CI runs as root; elsewhere sudo is used.
# Rust: a rustup toolchain (~/.cargo/bin) or any cargo+rustc on PATH that is
# at least configure's MIN_RUST is used as it is; with none, Debian 12's
# rustc-web and cargo-web are installed (into /usr/bin; bookworm's plain
# rustc/cargo, 1.63, are too old, and apt replaces them).
set -euo pipefail
cd "$(dirname "$0")/.."
min_rust=$(sed -n 's/^MIN_RUST="\([^"]*\)".*/\1/p' configure)

pkgs=(r-base-dev r-cran-testthat r-cran-roxygen2 r-cran-knitr r-cran-rmarkdown
      pandoc r-cran-generics r-cran-statmod r-cran-mixtools r-cran-mclust r-cran-flexmix
      r-cran-suppdists r-cran-rtdists r-cran-mass r-cran-jsonlite r-cran-progressr r-cran-survival
      r-cran-parallelly r-cran-future r-cran-future.apply r-cran-future.batchtools
      slurm-wlm munge xz-utils qpdf devscripts)

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
      || missing+=("$p")
  done
  # The same search configure does (tools/rust-bin.sh).
  sh tools/rust-bin.sh "$min_rust" >/dev/null || missing+=(rustc-web cargo-web)
  if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "deps.sh: installing ${missing[*]}"
    t0=$SECONDS
    $sudo apt-get update
    # env, not a plain assignment: sudo would drop the variable.
    $sudo env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y --no-install-recommends "${missing[@]}"
    echo "deps.sh: apt-get update + install took $((SECONDS - t0))s"
  fi
else
  # Not Debian/Ubuntu: nothing to install with, so just check the essentials.
  Rscript -e 'for (p in c("testthat", "roxygen2", "jsonlite"))
                if (!requireNamespace(p, quietly = TRUE)) stop("R package ", p, " is missing")' \
    || { echo "deps.sh: no apt-get here; install R (>= 4.2) and the R packages named in DESCRIPTION yourself." >&2; exit 1; }
fi

# Whatever installed it, there must now be a new-enough toolchain (rustc-web
# from bookworm without bookworm-security is 1.85, too old).
if ! rust_bin=$(sh tools/rust-bin.sh "$min_rust"); then
  echo "deps.sh: $rust_bin" >&2
  echo "deps.sh: install Rust >= $min_rust with rustup (https://rustup.rs), or on Debian 12" >&2
  echo "deps.sh: apt-get install rustc-web cargo-web from bookworm-security, and retry." >&2
  exit 1
fi
echo "deps.sh: Rust: $("$rust_bin/rustc" --version) in $rust_bin"

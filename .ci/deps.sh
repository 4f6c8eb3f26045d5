#!/usr/bin/env bash
# Install what building, testing and running bulkem needs, and nothing twice:
# apt packages that are already installed are skipped, and `apt-get update`
# runs only when something is missing. CI runs as root; elsewhere sudo is used.
set -euo pipefail

pkgs=(r-base-dev r-cran-testthat r-cran-roxygen2 r-cran-knitr r-cran-rmarkdown
      pandoc r-cran-statmod r-cran-mixtools r-cran-mclust r-cran-flexmix
      r-cran-suppdists r-cran-rtdists r-cran-jsonlite xz-utils)

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
      || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "deps.sh: installing ${missing[*]}"
    $sudo apt-get update
    # env, not a plain assignment: sudo would drop the variable.
    $sudo env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y --no-install-recommends "${missing[@]}"
  fi
else
  # Not Debian/Ubuntu: nothing to install with, so just check the essentials.
  Rscript -e 'for (p in c("testthat", "roxygen2", "jsonlite"))
                if (!requireNamespace(p, quietly = TRUE)) stop("R package ", p, " is missing")' \
    || { echo "deps.sh: no apt-get here; install R (>= 4.2) and the R packages named in DESCRIPTION yourself." >&2; exit 1; }
fi

# The Rust toolchain comes from rustup, not apt (Debian's rustc is too old
# for rand 0.10).
export PATH="$PATH:$HOME/.cargo/bin"
if ! command -v cargo >/dev/null 2>&1 || ! command -v rustc >/dev/null 2>&1; then
  echo "deps.sh: cargo/rustc not found (looked on PATH and in ~/.cargo/bin)." >&2
  echo "deps.sh: install Rust >= 1.85 with rustup (https://rustup.rs) and retry." >&2
  exit 1
fi

#!/usr/bin/env bash
# Quick start: install bulkem from this checkout and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps.sh
export PATH="$PATH:$HOME/.cargo/bin"
R CMD INSTALL .
if [ -f inst/scripts/demo.R ]; then
  Rscript inst/scripts/demo.R
else
  echo "demo.sh: inst/scripts/demo.R is not written yet; bulkem is installed." >&2
fi

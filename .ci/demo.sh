#!/usr/bin/env bash
# Quick start: install bulkem from this checkout and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps.sh
export PATH="$PATH:$HOME/.cargo/bin"
R CMD INSTALL .
Rscript inst/scripts/demo.R

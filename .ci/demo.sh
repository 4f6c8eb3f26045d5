#!/usr/bin/env bash
# Quick start: install bulkem from this checkout and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/env.sh
bash .ci/deps.sh
R CMD INSTALL .   # configure finds the Rust toolchain deps.sh checked
Rscript inst/scripts/demo.R

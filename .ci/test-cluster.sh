#!/usr/bin/env bash
# The cluster part of the test command: a sharded bulkem() call through
# future.batchtools on a one-node Slurm started here (.ci/slurm-test.sh),
# identical to the local call. Needs root; about 30-40 s on a 2-core machine
# once slurm-wlm and munge are installed (deps.sh installs them).
# Usage: .ci/test-cluster.sh LIB   (an R library holding the installed bulkem)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "test-cluster.sh: skipped (not root: cannot start Slurm's daemons); run .ci/slurm-test.sh as root" >&2
  exit 0
fi
bash .ci/slurm-test.sh "${1:?usage: .ci/test-cluster.sh LIB}"

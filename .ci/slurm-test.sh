#!/usr/bin/env bash
# A real cluster, tested (issue 12, item 3): starts a one-node Slurm cluster
# on this machine (Debian's slurm-wlm and munge; as root, without systemd:
# the daemons are started directly, on localhost), runs a sharded bulkem()
# call through future.batchtools (plan(batchtools_slurm)), checks that its
# result is identical to the same call run locally, and stops the daemons it
# started, by their process ids, however it exits.
#
# Usage: .ci/slurm-test.sh [LIB]
#   LIB  an R library holding bulkem built from this tree (test.sh passes the
#        one it has just installed); without it the tree is installed into a
#        temporary library first (compiles the Rust core: minutes).
# Needs root (it apt-installs slurm-wlm, munge and r-cran-future.batchtools
# when missing, and runs the daemons as root).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
t0=$SECONDS

if [ "$(id -u)" -ne 0 ]; then
  echo "slurm-test.sh: must run as root (it starts munged, slurmctld and slurmd)" >&2
  exit 1
fi

missing=()
for p in slurm-wlm munge r-cran-future r-cran-future.apply r-cran-future.batchtools; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "slurm-test.sh: installing ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

tmp=$(mktemp -d /tmp/bulkem-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  rc=$?
  # the daemons this script started, by their ids, newest first
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[$i]}" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    for f in "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/munged.log; do
      [ -f "$f" ] && { echo "---- $f (last 30 lines)"; tail -n 30 "$f"; }
    done
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

lib=${1:-}
if [ -z "$lib" ]; then
  lib=$tmp/lib
  mkdir -p "$lib"
  R CMD INSTALL --no-docs --no-html -l "$lib" . >"$tmp/install.log" 2>&1 \
    || { cat "$tmp/install.log"; exit 1; }
fi
lib=$(cd "$lib" && pwd)

host=$(hostname -s)
ncpu=$(nproc)
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/jobs"

# munge: its own key and socket in the temp dir, so that a munged already
# running here (if any) is left alone.
key=$tmp/munge/munge.key
if command -v mungekey >/dev/null 2>&1; then
  mungekey --create --keyfile="$key" --force
else
  dd if=/dev/urandom of="$key" bs=1 count=1024 status=none
fi
chmod 600 "$key"
socket=$tmp/munge/munge.socket
munged --foreground --force --key-file="$key" --socket="$socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" \
  --seed-file="$tmp/munge/munged.seed" >>"$tmp/daemons.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { echo "slurm-test.sh: munged did not start" >&2; exit 1; }

# Ports away from Slurm's defaults, so that a Slurm already here is not hit.
ctl_port=$((16000 + RANDOM % 2000))
d_port=$((ctl_port + 1))
export SLURM_CONF=$tmp/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=bulkemci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$ncpu State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -D -c -f "$SLURM_CONF" >>"$tmp/daemons.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >>"$tmp/daemons.out" 2>&1 &
pids+=($!)

idle=""
for _ in $(seq 120); do
  state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)
  if [ "$state" = "idle" ]; then idle=yes; break; fi
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "slurm-test.sh: a daemon ($pid) exited" >&2; exit 1; }
  done
  sleep 0.5
done
[ -n "$idle" ] || { echo "slurm-test.sh: the node did not become idle (sinfo: ${state:-nothing})" >&2; exit 1; }
echo "slurm-test.sh: one-node Slurm up in $((SECONDS - t0))s: $(sinfo -h -N -o '%N %T %c CPUs')"
# Slurm 22.05 has no listen-address setting: the daemons take their ports
# (away from the defaults) on every interface; clients reach them on
# 127.0.0.1 and munge authenticates every message.
if command -v ss >/dev/null 2>&1; then
  ss -ltnp 2>/dev/null | grep -E "slurm(ctld|d)" | sed 's/^/slurm-test.sh: listening: /' || true
fi

# The batchtools template: one job per future (= one shard), one CPU each
# unless resources say otherwise; the jobs find bulkem through R_LIBS.
cat >"$tmp/slurm.tmpl" <<'EOF'
#!/bin/bash
#SBATCH --job-name=<%= job.name %>
#SBATCH --output=<%= log.file %>
#SBATCH --error=<%= log.file %>
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=<%= if (is.null(resources$ncpus)) 1L else resources$ncpus %>
<%= if (!is.null(resources$gres)) paste0("#SBATCH --gres=", resources$gres) %>
export R_LIBS=<%= Sys.getenv("BULKEM_SLURM_LIBS") %>
Rscript -e 'batchtools::doJobCollection("<%= uri %>")'
EOF

cd "$tmp/jobs"
BULKEM_SLURM_LIBS=$lib R_LIBS=$lib Rscript --vanilla - "$tmp/slurm.tmpl" <<'EOF'
tmpl <- commandArgs(TRUE)[[1]]
library(bulkem)
set.seed(2015)
d <- lapply(1:40, function(i) c(rnorm(150, 0, 1), rnorm(100, 3 + i / 20, 0.6)))
names(d) <- sprintf("d%02d", 1:40)
args <- list(d, num.components = 1:3, family = "normal", random.inits = 6, seed = 77,
             use.gpu = FALSE)
local <- do.call(bulkem, args)
future::plan(future.batchtools::batchtools_slurm, template = tmpl, workers = 2L,
             resources = list(ncpus = 1L))
before <- future::plan()
t <- system.time(
  sharded <- do.call(bulkem, c(args, list(control = list(future = TRUE))))
)[["elapsed"]]
shards <- attr(sharded, "shards")
print(shards)
stopifnot(identical(future::plan(), before))
stopifnot(identical(names(sharded), names(local)))
for (i in seq_along(local)) {
  if (!identical(sharded[[i]], local[[i]])) stop("dataset ", i, " differs from the local fit")
}
for (a in c("seed", "family", "num.components", "em_iterations")) {
  if (!identical(attr(sharded, a), attr(local, a))) stop("attribute ", a, " differs")
}
cat(sprintf("slurm-test.sh: %d datasets in %d shards (Slurm jobs) in %.1f s: identical to the local call\n",
            length(sharded), nrow(shards), t))
EOF
echo "slurm-test.sh: OK in $((SECONDS - t0))s"

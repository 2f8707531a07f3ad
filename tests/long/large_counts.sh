#!/usr/bin/env bash
# garray transfers beyond MPI's int counts at their real sizes (tests/array/long_counts.cpp),
# over MPI RMA windows (shared windows never call MPI for data). Opt-in, not CI:
# needs ~17 GiB of memory at LEVEL 2 (~9 GiB at LEVEL 1) and 2-3 minutes on 2 cores.
# Usage: tests/long/large_counts.sh BUILD_DIR [LEVEL]   (exit status: 0 iff every run passed)
set -u
build=${1:?usage: large_counts.sh BUILD_DIR [LEVEL]}
level=${2:-2}
cmake --build "$build" --target test_long_counts >/dev/null || exit 1
status=0
for kind in rma mixed; do
  start=$(date +%s)
  env GARRAY_WINDOW=$kind GARRAY_NODE_RANKS=1 GARRAY_TEST_LONG_COUNTS=$level timeout 1800 \
    mpiexec --allow-run-as-root --oversubscribe -n 2 "$build/tests/test_long_counts" \
    >/tmp/large_counts.$kind.log 2>&1
  rc=$?
  echo "window=$kind level=$level rc=$rc seconds=$(( $(date +%s) - start ))"
  [ $rc -eq 0 ] || status=1
done
exit $status

#!/usr/bin/env bash
# The long random differential run of issue 12: 100,000 mixed one-sided operations per
# element type (tests/array/random_ops.cpp) at np 2, 3 and 4 on both window kinds.
# Usage: tests/long/random_ops.sh BUILD_DIR [OPS]   (exit status: 0 iff every run passed)
set -u
build=${1:?usage: random_ops.sh BUILD_DIR [OPS]}
ops=${2:-100000}
status=0
for kind in shared rma; do
  for np in 2 3 4; do
    start=$(date +%s)
    GARRAY_WINDOW=$kind GARRAY_TEST_OPS=$ops timeout 1800 \
      mpiexec --allow-run-as-root --oversubscribe -n "$np" "$build/tests/test_contract" -tc='*random*' >/tmp/random_ops.$kind.$np.log 2>&1
    rc=$?
    echo "window=$kind np=$np ops=$ops rc=$rc seconds=$(( $(date +%s) - start ))"
    [ $rc -eq 0 ] || status=1
  done
done
exit $status

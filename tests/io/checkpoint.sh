#!/bin/bash
# Checkpoint/restart of apps/laplace end to end (issue 14), driven by ctest:
#   checkpoint.sh MPIEXEC LAPLACE PYTHON WORKDIR
# 1. an uninterrupted run (np 3) writes the reference field;
# 2. a run with checkpoints every 10 steps is SIGKILLed on one rank after step 35;
#    restarted at np 3 it ends with the reference's field (bitwise) and error;
# 3. a run is SIGKILLed on rank 0 while it writes the checkpoint of step 40: the checkpoint
#    of step 30 is intact; restarted from it at np 2 (grid 2x1) and np 4 (grid 1x4) the
#    field is bitwise the reference's;
# 4. a restart with another grid size fails with a message naming the file.
set -u -o pipefail
MPIEXEC=$1; LAPLACE=$2; PY=$3; DIR=$4
mkdir -p "$DIR" && cd "$DIR" || exit 1
rm -f ref.h5 ck.h5 ck.h5.tmp r*.h5
run() {  # np, args...
  local np=$1; shift
  timeout 60 "$MPIEXEC" -n "$np" "$LAPLACE" --nx 48 --ny 40 --init hash --iters 60 --quiet "$@"
}
fail() { echo "FAIL: $*"; exit 1; }
value() { grep "^$1=" | cut -d= -f2; }
same_field() {  # a.h5 b.h5: dataset u bitwise equal
  "$PY" - "$1" "$2" <<'PYEOF' || fail "field of $2 differs from $1"
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1], "r")["u"][...]
b = h5py.File(sys.argv[2], "r")["u"][...]
assert a.shape == b.shape and a.dtype == b.dtype == np.float64, (a.shape, b.shape)
assert np.array_equal(a.view(np.uint64), b.view(np.uint64)), "not bitwise equal"
PYEOF
}
step_of() { "$PY" -c "import h5py,sys; print(int(h5py.File(sys.argv[1],'r').attrs['step']))" "$1"; }

ref_err=$(run 3 --output ref.h5 | value error)
[ -n "$ref_err" ] || fail "reference run"

# 2. killed after step 35 (rank 1), restarted at the same rank count
GARRAY_LAPLACE_KILL=step:35:1 run 3 --checkpoint ck.h5 --checkpoint-every 10 >/dev/null 2>&1 && fail "the killed run succeeded"
[ "$(step_of ck.h5)" = 30 ] || fail "checkpoint step $(step_of ck.h5), expected 30"
out=$(run 3 --restart ck.h5 --checkpoint ck.h5 --checkpoint-every 10 --output r3.h5) || fail "restart np 3"
[ "$(echo "$out" | value iterations)" = 30 ] || fail "restart took $(echo "$out" | value iterations) steps, expected 30"
[ "$(echo "$out" | value error)" = "$ref_err" ] || fail "error $(echo "$out" | value error) != $ref_err"
same_field ref.h5 r3.h5
[ "$(step_of ck.h5)" = 60 ] || fail "final checkpoint step $(step_of ck.h5)"

# 3. killed while writing the checkpoint of step 40 (rank 0): step 30's survives
GARRAY_LAPLACE_KILL=step:35:2 run 3 --checkpoint ck.h5 --checkpoint-every 10 >/dev/null 2>&1 && fail "the killed run succeeded"
rm -f ck.h5.tmp
GARRAY_LAPLACE_KILL=checkpoint:40:0 run 3 --restart ck.h5 --checkpoint ck.h5 --checkpoint-every 10 >/dev/null 2>&1 \
  && fail "the run killed in a checkpoint succeeded"
# the kill came while the checkpoint was being written (not before: else step 30's file
# surviving would show nothing)
[ -e ck.h5.tmp ] || fail "no ck.h5.tmp: the run did not die while writing the checkpoint of step 40"
[ "$(step_of ck.h5)" = 30 ] || fail "after a kill during the write the checkpoint is at step $(step_of ck.h5)"
out=$(run 2 --grid 2x1 --restart ck.h5 --output r2.h5) || fail "restart np 2"
[ "$(echo "$out" | value steps)" = 60 ] || fail "np 2 restart ended at step $(echo "$out" | value steps)"
same_field ref.h5 r2.h5
out=$(run 4 --grid 1x4 --restart ck.h5 --output r4.h5) || fail "restart np 4"
same_field ref.h5 r4.h5

# 4. a checkpoint of another problem
msg=$(timeout 60 "$MPIEXEC" -n 2 "$LAPLACE" --nx 50 --ny 40 --init hash --iters 60 --quiet --restart ck.h5 2>&1) \
  && fail "restart with another grid succeeded"
echo "$msg" | grep -q "ck.h5" || fail "message does not name the file: $msg"
echo "$msg" | grep -q "48x40" || fail "message does not name the grid: $msg"
msg=$(timeout 60 "$MPIEXEC" -n 2 "$LAPLACE" --nx 48 --ny 40 --quiet --restart missing.h5 2>&1) && fail "missing file"
echo "$msg" | grep -q "missing.h5" || fail "message does not name the missing file: $msg"
echo "checkpoint/restart: pass"

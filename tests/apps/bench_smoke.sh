#!/bin/bash
# bench_smoke.sh MPIEXEC BENCH_DIR
#
# Every bench_* binary once at 2 ranks, with the smallest sizes and repetitions its command
# line allows: each checks every contender's result and exits non-zero when one is wrong, so
# a benchmark whose contenders compute wrong results (or that crashes, or hangs: each run is
# under `timeout`) fails here. Also the edge inputs that used to hang or read out of bounds
# (halo with an empty neighbour block, redistribute with more ranks than rows), and a few bad
# option values, which must end every rank with exit code 2 and a message naming the option.
# A binary that is not built (bench_io without parallel HDF5, bench_laplace without the apps)
# is skipped; bench_rma and bench_matmul run their GA/ScaLAPACK columns when built with them.
set -u
mpiexec=${1:?usage: bench_smoke.sh MPIEXEC BENCH_DIR}
dir=${2:?}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0 runs=0
# (hydra, MPICH's mpiexec, may report a rank's exit code differently: 'any' accepts any non-zero)
code() { case $mpiexec in *mpich*) echo any ;; *) echo "$1" ;; esac; }

# run NAME WANT_RC TEXT BENCH ARGS...: one run at np 2; WANT_RC 0 (TEXT ignored) or the exit
# code wanted with TEXT in the output
run() {
  local name=$1 want=$2 text=$3 bench=$4
  shift 4
  if [ ! -x "$dir/$bench" ]; then
    echo "bench_smoke: skip $name ($bench not built)"
    return
  fi
  runs=$((runs + 1))
  local out rc
  out=$(cd "$tmp" && ulimit -c 0 && timeout -k 5 60 "$mpiexec" -n 2 "$dir/$bench" "$@" 2>&1)
  rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "bench_smoke: FAIL $name: did not end within 60 s (a hang)"; echo "$out" | tail -15; fails=$((fails + 1))
  elif [ "$want" = 0 ] && [ "$rc" != 0 ]; then
    echo "bench_smoke: FAIL $name: exit $rc"; echo "$out" | tail -25; fails=$((fails + 1))
  elif [ "$want" != 0 ] && { [ "$rc" = 0 ] || { [ "$want" != any ] && [ "$rc" != "$want" ]; }; }; then
    echo "bench_smoke: FAIL $name: exit $rc, wanted $want"; echo "$out" | tail -15; fails=$((fails + 1))
  elif [ "$want" != 0 ] && ! grep -q -- "$text" <<<"$out"; then
    echo "bench_smoke: FAIL $name: no '$text' in the output"; echo "$out" | tail -15; fails=$((fails + 1))
  elif grep -q "terminate called" <<<"$out"; then
    echo "bench_smoke: FAIL $name: an uncaught exception"; grep -m1 -A1 "terminate called" <<<"$out"; fails=$((fails + 1))
  else
    echo "bench_smoke: pass $name (exit $rc)"
  fi
}
ok() { run "$1" 0 "" "${@:2}"; }
bad() { run "$1" "$(code 2)" "$2" "${@:3}"; }

ok rma bench_rma --sizes 8,1M --reps 1 --warmup 0 --min-rep-ms 0
ok halo bench_halo --n 16 --width 2 --reps 2 --warmup 1 --inner 1
ok halo_empty_block bench_halo --n 1 --width 1 --reps 1 --warmup 0 --inner 1
ok redistribute bench_redistribute --n 16 --reps 2 --warmup 1
ok redistribute_more_ranks_than_rows bench_redistribute --n 1 --reps 1 --warmup 0
ok progress bench_progress --reps 1 --busy 0.02 --delay 0.005 --poll 0.001
ok cache bench_cache --n 16 --reps 1 --hit-pairs 1 --lap-n 8 --iters 2 --depths 0,3 --lap-reps 2 \
  --shapes 20 --block 2 --window 10
ok io bench_io --n 8 --reps 2 --warmup 0 --dir "$tmp"
ok io_other_rotation bench_io --n 8 --reps 3 --warmup 0 --layouts grid --dir "$tmp"
ok laplace bench_laplace --sizes 16,9 --iters 10 --repeat 2 \
  --contenders serial,mpi,mpi:blocked,kernel,kernel:rows,fused,numpy
ok matmul bench_matmul --sizes 24,7 --nb 8,16 --reps 1 --warmup 0 --mutex-iters 2
ok numpy bench_numpy --n 8 --reps 1
ok numpy_axis bench_numpy_axis --n 8 --reps 1
ok indexing bench_indexing --n 64 --m 32 --reps 1
ok numeric bench_numeric --n 16 --reps 1
ok numeric_reductions bench_numeric --n 16 --reps 1 --reductions

bad halo_width_wider_than_block "--width" bench_halo --n 4 --width 3
bad io_no_reps "--reps" bench_io --n 8 --reps 0 --dir "$tmp"
bad matmul_nb_zero "--nb" bench_matmul --sizes 8 --nb 0
bad laplace_size_2 "--sizes" bench_laplace --sizes 2
bad indexing_n_zero "--n" bench_indexing --n 0
bad progress_delay "--delay" bench_progress --busy 0.01 --delay 0.02

if [ "$runs" -lt 5 ]; then echo "bench_smoke: FAIL only $runs runs: bench binaries missing in $dir"; exit 1; fi
if [ "$fails" = 0 ]; then echo "bench_smoke: all pass"; exit 0; fi
exit 1

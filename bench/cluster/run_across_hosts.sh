#!/bin/bash
# run_across_hosts.sh SOURCE_DIR BUILD_DIR [CSV]
#
# Issue 13's benchmarks on the two simulated hosts of tests/cluster/sim_cluster.sh (root;
# one CPU per host), Open MPI 4.1 with `--mca osc ^ucx` (osc/pt2pt across hosts, the
# setting garray documents for TCP clusters):
#   laplace  bench_laplace --sizes 1000: the hand-written MPI Jacobi (row slabs, and on
#            garray's default blocked grid) and garray's kernel (both layouts) and fused
#            variants side by side (interleaved rounds, medians), np=2 (one rank per
#            host), np=4 block (ranks 0,1 on host 1) and np=4 round robin, the latter both
#            renumbered node by node (bench_laplace's default --rank-order node) and as
#            mpiexec numbered the ranks (--rank-order given); every contender, the
#            hand-written MPI version included, runs on the same numbering
#   rma      bench_rma --quick: raw MPI RMA vs garray, rank 0 -> rank 1 on the other host,
#            the same osc component; then at np=4 block, rank 0 -> rank 1 on the same host,
#            with mixed windows (garray's default across hosts) and with GARRAY_WINDOW=rma
# With CSV given, the two benchmarks' tables go to separate files (their columns differ):
# CSV's name with _laplace and _rma before .csv.
# The hosts are always torn down. Run on an otherwise idle machine. Exit 1 if any run
# failed (a benchmark's non-zero exit, e.g. a result mismatch, or SIM_TIMEOUT); sim_cluster's
# warnings stay in the output.
set -uo pipefail
SRC=$(cd "${1:?usage: run_across_hosts.sh SOURCE_DIR BUILD_DIR [CSV]}" && pwd)
BUILD=$(cd "${2:?usage: run_across_hosts.sh SOURCE_DIR BUILD_DIR [CSV]}" && pwd)
CSV=${3:-}
SIM=$SRC/tests/cluster/sim_cluster.sh
export SIM_PREFIX=${SIM_PREFIX:-gabench} SIM_QUIET=1 SIM_TIMEOUT=${SIM_TIMEOUT:-600}
for b in bench_laplace bench_rma; do
  [ -x "$BUILD/bench/$b" ] || { echo "run_across_hosts.sh: $BUILD/bench/$b not built" >&2; exit 2; }
done
lap_csv=() rma_csv=()
if [ -n "$CSV" ]; then
  csv_base=$(realpath -m "$CSV")
  lap_csv=(--csv "${csv_base%.csv}_laplace.csv")
  rma_csv=(--csv "${csv_base%.csv}_rma.csv")
fi
trap '"$SIM" down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
"$SIM" down >/dev/null 2>&1
"$SIM" up 2 || exit 1
echo "# $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
OSC="--mca osc ^ucx"
rc=0
# bench LABEL NP CMD... with SIM_OMPI_ARGS set by the caller; a failure is reported and counted
bench() {
  local label=$1 np=$2 r=0; shift 2
  "$SIM" run-ompi "$np" "$@" 2>&1 || r=$?
  if [ "$r" != 0 ]; then echo "run_across_hosts.sh: FAILED: $label (exit $r)" >&2; rc=1; fi
}
# np=4 block runs twice: with the default window kind (mixed: the two ranks of a host share
# memory) and with GARRAY_WINDOW=rma (every neighbour through MPI RMA), side by side
for cfg in "2 block" "4 block" "4 rr" "4 rr given" "4 block rma"; do
  set -- $cfg
  extra="" order=node
  [ "$2" = rr ] && extra="--map-by node"
  [ "${3:-}" = rma ] && extra="-x GARRAY_WINDOW=rma"
  [ "${3:-}" = given ] && order=given
  echo "## laplace np=$1 $2${3:+, $3}"
  SIM_OMPI_ARGS="$OSC $extra" bench "laplace np=$1 $2${3:+ $3}" "$1" "$BUILD/bench/bench_laplace" --sizes 1000 \
    --iters 20 --repeat "${LAPLACE_REPEAT:-5}" --contenders mpi,mpi:blocked,kernel,kernel:rows,fused \
    --rank-order $order "${lap_csv[@]}"
done
echo "## rma np=2 (rank 1 on the other host)"
SIM_OMPI_ARGS="$OSC" bench "rma np=2" 2 "$BUILD/bench/bench_rma" --quick --no-strided "${rma_csv[@]}"
for w in auto rma; do
  echo "## rma np=4 block (rank 1 on the same host), GARRAY_WINDOW=$w"
  SIM_OMPI_ARGS="$OSC -x GARRAY_WINDOW=$w" bench "rma np=4 GARRAY_WINDOW=$w" 4 "$BUILD/bench/bench_rma" --quick \
    --no-strided "${rma_csv[@]}"
done
[ "$rc" = 0 ] || echo "run_across_hosts.sh: some runs failed (see FAILED above)" >&2
exit "$rc"

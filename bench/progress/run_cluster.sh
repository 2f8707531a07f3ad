#!/bin/bash
# run_cluster.sh SOURCE_DIR BUILD_DIR [REPS=7] [CSV]
#
# bench_progress (issue 13) across the two simulated hosts of tests/cluster/sim_cluster.sh
# (root; one rank per host, one CPU per host): the latency of an 8 B and a 1 MiB get from
# a target waiting in MPI and from a target computing 100 ms without MPI calls, for
#   Open MPI 4.1 --mca osc ^ucx (osc/pt2pt across hosts), GARRAY_PROGRESS=none
#   Open MPI over UCX (pml and osc), none and thread (interval 100, 30 and 10 us); osc/pt2pt
#     refuses the MPI_THREAD_MULTIPLE the thread needs (docs/semantics.md "Progress")
#   MPICH 4.0 ch4:ucx, GARRAY_PROGRESS=none
#   MPICH, GARRAY_PROGRESS=thread with GARRAY_PROGRESS_INTERVAL 100, 30, 10 and 0 us
# BUILD_DIR holds the Open MPI build's bench/bench_progress; the MPICH binary is built in
# BUILD_DIR/bench-mpich (configured here with MPICH's compilers on first use).
# The hosts are always torn down. Run on an otherwise idle machine.
set -uo pipefail
SRC=$(cd "${1:?usage: run_cluster.sh SOURCE_DIR BUILD_DIR [REPS] [CSV]}" && pwd)
BUILD=$(cd "${2:?usage: run_cluster.sh SOURCE_DIR BUILD_DIR [REPS] [CSV]}" && pwd)
REPS=${3:-7} CSV=${4:-}
SIM=$SRC/tests/cluster/sim_cluster.sh
export SIM_PREFIX=${SIM_PREFIX:-gaprog} SIM_QUIET=1 SIM_TIMEOUT=${SIM_TIMEOUT:-120}
OBIN=$BUILD/bench/bench_progress
[ -x "$OBIN" ] || { echo "run_cluster.sh: $OBIN not built (cmake --build $BUILD --target bench_progress)" >&2; exit 2; }
MB=$BUILD/bench-mpich
if [ ! -x "$MB/bench/bench_progress" ]; then
  echo "# building bench_progress against MPICH in $MB" >&2
  cmake -S "$SRC" -B "$MB" -DCMAKE_BUILD_TYPE=Release -DMPI_CXX_COMPILER=mpicxx.mpich -DMPI_C_COMPILER=mpicc.mpich \
    -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)" -DGARRAY_BUILD_TESTS=OFF -DGARRAY_BUILD_APPS=OFF \
    -DHDF5_C_COMPILER_EXECUTABLE=h5pcc.mpich >"$MB.log" 2>&1 &&
    cmake --build "$MB" --target bench_progress -j"$(nproc)" >>"$MB.log" 2>&1 ||
    { echo "run_cluster.sh: MPICH build failed, see $MB.log" >&2; exit 1; }
fi
MBIN=$MB/bench/bench_progress
csv_args=()
[ -n "$CSV" ] && csv_args=(--csv "$(realpath -m "$CSV")")

trap '"$SIM" down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
"$SIM" down >/dev/null 2>&1
"$SIM" up 2 || exit 1
echo "# $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), reps $REPS"
row() { # LABEL then the command; prints the bench's table rows
  local label=$1; shift
  echo "## $label"
  "$@" --reps "$REPS" --label "$label" "${csv_args[@]}" 2>&1 | grep -E '^\| (none|thread)|check=|rror'
}
SIM_OMPI_ARGS="--mca osc ^ucx" row "ompi osc ^ucx, none" "$SIM" run-ompi 2 "$OBIN"
UCX="--mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
SIM_OMPI_ARGS="$UCX" row "ompi ucx, none" "$SIM" run-ompi 2 "$OBIN"
for us in 100 30 10; do
  SIM_OMPI_ARGS="$UCX -x GARRAY_PROGRESS=thread -x GARRAY_PROGRESS_INTERVAL=$us" \
    row "ompi ucx, thread, interval $us us" "$SIM" run-ompi 2 "$OBIN"
done
row "mpich, none" "$SIM" run-mpich 2 "$MBIN"
for us in 100 30 10 0; do
  SIM_MPICH_ARGS="-genv GARRAY_PROGRESS thread -genv GARRAY_PROGRESS_INTERVAL $us" \
    row "mpich, thread, interval $us us" "$SIM" run-mpich 2 "$MBIN"
done

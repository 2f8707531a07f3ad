#!/bin/bash
# bench_laplace_reference.sh MPIEXEC BENCH_LAPLACE NP
#
# The hand-written MPI Jacobi is the reference of every laplace ratio (docs/performance.md):
# it must compute what the serial loop and garray's kernel compute, on row slabs (mpi) and on
# the blocked grid (mpi:blocked), at grid sizes that split unevenly. Every contender's error
# after the last step must match the serial loop's to 1e-12 (relative; the partial sums are
# combined in different orders, so not bitwise).
set -u
mpiexec=${1:?usage: bench_laplace_reference.sh MPIEXEC BENCH_LAPLACE NP}
bench=${2:?}
np=${3:?}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
out=$(timeout -k 5 120 "$mpiexec" -n "$np" "$bench" --sizes 37,64 --iters 7 --repeat 1 \
  --contenders serial,mpi,mpi:blocked,kernel,kernel:rows 2>&1)
rc=$?
echo "$out"
[ "$rc" = 0 ] || { echo "bench_laplace_reference: FAIL: exit $rc"; exit 1; }
echo "$out" | awk '
  /^ n=/ { n = $1; sub("n=", "", n); sizes++ }
  $1 == "serial" { ref[n] = $(NF - 1) }
  $1 ~ /^(mpi|mpi:blocked|kernel|kernel:rows)$/ { err[n, $1] = $(NF - 1); seen[n, $1] = 1 }
  END {
    split("mpi mpi:blocked kernel kernel:rows", names, " ")
    bad = 0
    if (sizes != 2) { print "bench_laplace_reference: FAIL: " sizes " grid sizes printed, wanted 2"; bad = 1 }
    for (s in ref) for (i = 1; i <= 4; ++i) {
      c = names[i]
      if (!((s, c) in seen)) { print "bench_laplace_reference: FAIL: n=" s " " c " missing"; bad = 1; continue }
      d = err[s, c] - ref[s]; if (d < 0) d = -d
      if (ref[s] <= 0 || d > 1e-12 * ref[s]) {
        printf "bench_laplace_reference: FAIL: n=%s %s error %s, serial %s\n", s, c, err[s, c], ref[s]; bad = 1
      }
    }
    if (!bad) print "bench_laplace_reference: all contenders match the serial loop"
    exit bad
  }'

#!/bin/bash
# cluster_test.sh SUITE BUILD_DIR [MPICH_BUILD_DIR]
#
# One ctest test of label `cluster` (tests/cluster/CMakeLists.txt): brings 2 simulated hosts
# up (sim_cluster.sh, network namespaces joined by TCP), runs MPI test binaries across them,
# and always tears the hosts down (trap, also on failure, timeout or signal).
#
# SUITE:
#   ompi      test binaries under Open MPI (`--mca osc ^ucx`) at np=2 (1 rank per host),
#             np=4 block (ranks 0,1 on host 1) and np=4 round robin (--map-by node, the
#             contexts renumbered node by node: GARRAY_RANK_ORDER=node); and
#             test_runtime's progress cases over UCX with GARRAY_PROGRESS=thread; and
#             without the thread, over osc/pt2pt and over UCX, its case of a target that
#             calls ctx.progress() (served within 200 calls)
#   mpich     the same binaries from the MPICH build tree (MPICH_BUILD_DIR), np=2, np=4
#             block and round robin (with the tree's yield module preloaded), and
#             test_runtime's progress cases with GARRAY_PROGRESS=thread (a busy target)
#             and without it (a target calling ctx.progress())
#   laplace   apps/laplace --variant kernel|fused|numpy across hosts (Open MPI np=2, np=4
#             block and round robin, the latter renumbered node by node, laplace's default,
#             and with --rank-order given; MPICH np=2 and np=4 block from MPICH_BUILD_DIR)
#             against a one-host run of the same MPI: the `error=` lines must be bitwise equal
#   defaults  Open MPI with Debian's defaults (no osc option), np=4 block: window creation
#             fails; expect a non-zero exit naming `--mca osc pt2pt` within the timeout;
#             and GARRAY_PROGRESS=thread under osc/pt2pt: a non-zero exit naming GARRAY_PROGRESS
#
# Exit: 0 pass, 1 fail, 77 skipped (not root / no network namespaces / missing tree).
# Knobs: CLUSTER_RUN_TIMEOUT (s, per MPI launch, default 120), SIM_* (see sim_cluster.sh).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SIM=$HERE/sim_cluster.sh
suite=${1:?usage: cluster_test.sh SUITE BUILD_DIR [MPICH_BUILD_DIR]}
build=${2:?usage: cluster_test.sh SUITE BUILD_DIR [MPICH_BUILD_DIR]}
mpich_build=${3:-}
export SIM_PREFIX=${SIM_PREFIX:-gasim} SIM_QUIET=${SIM_QUIET:-1}
export SIM_TIMEOUT=${CLUSTER_RUN_TIMEOUT:-120}
logs=$build/cluster-logs/$suite
skip() { echo "cluster_test: SKIPPED ($suite): $*"; exit 77; }

# ---- can we build hosts at all?
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "'ip' not found (apt-get install iproute2)"
command -v unshare >/dev/null || skip "'unshare' not found (apt-get install util-linux)"
probe=${SIM_PREFIX}-probe$$
if ! ip netns add "$probe" 2>/dev/null; then skip "cannot create network namespaces (ip netns add failed)"; fi
ip netns del "$probe" 2>/dev/null || true

case $suite in
  ompi | laplace | defaults)
    command -v mpirun.openmpi >/dev/null || skip "mpirun.openmpi not found" ;;
  mpich)
    command -v mpiexec.mpich >/dev/null || skip "mpiexec.mpich not found"
    [ -n "$mpich_build" ] && [ -x "$mpich_build/tests/test_array" ] ||
      skip "no MPICH build tree with test binaries at '${mpich_build:-<none>}' (built by the test mpich.build_and_test)" ;;
  *) echo "cluster_test: unknown suite '$suite'" >&2; exit 2 ;;
esac

rm -rf "$logs"; mkdir -p "$logs"
down() { "$SIM" down >/dev/null 2>&1 || "$SIM" down; }
trap 'down' EXIT
trap 'exit 130' INT TERM
down  # leftovers of an earlier, killed run
"$SIM" up 2 || { echo "cluster_test: FAIL: could not bring the simulated hosts up"; exit 1; }

fails=0 runs=0
t_start=$(date +%s)
# run LABEL KIND(ompi|mpich) NP PLACEMENT(block|rr) CMD... -> log in $logs/LABEL.log
run() {
  local label=$1 kind=$2 np=$3 place=$4; shift 4
  local log=$logs/$label.log rc=0 t0 t1
  t0=$(date +%s.%N)
  local env_args sub
  if [ "$kind" = ompi ]; then
    # GARRAY_TEST_NODE_LOCAL_DIR: a directory private to each host (test_io's node-local case)
    local a="${SIM_OMPI_OSC:---mca osc ^ucx} -x GARRAY_TEST_NODE_LOCAL_DIR=/dev/shm"
    # round robin: also numbered node by node (RankOrder::node through GARRAY_RANK_ORDER),
    # so the suites run on contexts renumbered from the real MPI_COMM_TYPE_SHARED split
    [ "$place" = rr ] && a+=" --map-by node -x GARRAY_RANK_ORDER=node"
    env_args="SIM_OMPI_ARGS=$a ${CLUSTER_OMPI_ARGS:-}" sub=run-ompi
  else
    local a="${SIM_MPICH_EXTRA:-} -genv GARRAY_TEST_NODE_LOCAL_DIR /dev/shm"
    [ "$place" = rr ] && a+=" -ppn 1 -genv GARRAY_RANK_ORDER node"
    env_args="SIM_MPICH_ARGS=$a" sub=run-mpich
  fi
  # MPICH/UCX over TCP may hang in MPI_Finalize (openucx/ucx#8738): once the job has
  # printed its result (RUN_DONE_MARK), give it FINALIZE_GRACE s to exit, then end it
  env "$env_args" "$SIM" "$sub" "$np" "$@" >"$log" 2>&1 &
  local pid=$! seen=""
  while kill -0 "$pid" 2>/dev/null; do
    if [ -n "${RUN_DONE_MARK:-}" ] && grep -q -- "$RUN_DONE_MARK" "$log" 2>/dev/null; then
      seen=${seen:-$(date +%s)}
      if [ $(($(date +%s) - seen)) -ge "${FINALIZE_GRACE:-3}" ]; then
        echo "cluster_test: the job printed its result but did not exit within ${FINALIZE_GRACE:-3} s; ending it" >>"$log"
        "$SIM" kill >>"$log" 2>&1
        wait "$pid"; rc=124; break
      fi
    fi
    sleep 0.5
  done
  [ "$rc" = 124 ] || { wait "$pid" || rc=$?; }
  t1=$(date +%s.%N)
  RUN_RC=$rc RUN_LOG=$log
  RUN_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
}
verdict() { # LABEL OK(0/1) NOTE
  runs=$((runs + 1))
  if [ "$2" = 1 ]; then echo "cluster_test: PASS $1 (${RUN_SECS}s) $3"
  else
    fails=$((fails + 1)); echo "cluster_test: FAIL $1 (rc=$RUN_RC, ${RUN_SECS}s) $3"
    echo "---- last lines of $RUN_LOG"; tail -25 "$RUN_LOG"; echo "----"
  fi
}
# a doctest binary: pass iff exit 0 and the test main's "[mpi] N ranks: all passed" (printed
# once every rank's doctest run succeeded; rank 0's "Status: SUCCESS" alone says nothing about
# the others); under MPICH also if it printed that and then hung in MPI_Finalize
# (openucx/ucx#8738, see README.md) until the timeout
doctest_run() { # LABEL KIND NP PLACE BIN ARGS...
  local label=$1 kind=$2 all="ranks: all passed"
  RUN_DONE_MARK=$all run "$@" -ni
  if [ "$RUN_RC" = 0 ] && grep -q "$all" "$RUN_LOG"; then verdict "$label" 1 ""
  elif [ "$RUN_RC" = 124 ] && grep -q "$all" "$RUN_LOG"; then
    verdict "$label" 1 "(tests passed; the job then hung in MPI_Finalize$([ "$kind" = mpich ] && echo ': openucx/ucx#8738'))"
  else verdict "$label" 0 ""; fi
}

# The subset run across hosts (each binary once per placement). It covers every transfer
# path: RMA across hosts, shared windows on a sub-communicator within one host (groups.cpp,
# np=4 block), strided and negative-step slices, index lists, read_inc and accumulate
# (transfers, lists_atomics), the cache, movement, halo and numeric.
ARRAY_FILTER='-sf=*transfers.cpp,*lists_atomics.cpp,*movement.cpp,*halo.cpp,*groups.cpp'
CACHE_FILTER='-tc=*1000 create/destroy*,*from the cache behaves exactly*,*byte cap*,*injected failure in acquire*'
NUMERIC_FILTER='-sf=*expressions.cpp,*reductions.cpp'
IO_FILTER='-tc=*node-local*'
POLL_FILTER='-tc=*ctx.progress() calls*'
suite_bins() { # KIND DIR NP PLACE
  local kind=$1 dir=$2 np=$3 place=$4 tag="$1.np$3.$4"
  doctest_run "$tag.test_array" "$kind" "$np" "$place" "$dir/tests/test_array" "$ARRAY_FILTER"
  doctest_run "$tag.test_cache" "$kind" "$np" "$place" "$dir/tests/test_cache" "$CACHE_FILTER"
  doctest_run "$tag.test_numeric" "$kind" "$np" "$place" "$dir/tests/test_numeric" "$NUMERIC_FILTER"
  # io::File on a path only some ranks see (each host's private /dev/shm): every rank throws
  if [ -x "$dir/tests/test_io" ]; then
    doctest_run "$tag.test_io" "$kind" "$np" "$place" "$dir/tests/test_io" "$IO_FILTER"
  fi
}

case $suite in
  ompi)
    suite_bins ompi "$build" 2 block
    suite_bins ompi "$build" 4 block
    suite_bins ompi "$build" 4 rr
    # GARRAY_PROGRESS=thread needs MPI_THREAD_MULTIPLE, which osc/pt2pt refuses: over UCX
    # (pml and osc), the busy-target cases of test_runtime (see the mpich suite)
    SIM_OMPI_OSC="--mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x GARRAY_PROGRESS=thread" \
      doctest_run "ompi.np2.ucx.progress_thread.test_runtime" ompi 2 block "$build/tests/test_runtime" \
      '-tc=*GARRAY_PROGRESS*,*progress thread*,*while the target computes*'
    # no thread: a target that calls ctx.progress() is served within 200 calls (over UCX a
    # probe alone ran the whole progress engine every 100th call: never served in the budget)
    doctest_run "ompi.np2.progress_calls.test_runtime" ompi 2 block "$build/tests/test_runtime" "$POLL_FILTER"
    SIM_OMPI_OSC="--mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" \
      doctest_run "ompi.np2.ucx.progress_calls.test_runtime" ompi 2 block "$build/tests/test_runtime" "$POLL_FILTER"
    ;;
  mpich)
    suite_bins mpich "$mpich_build" 2 block
    # GARRAY_PROGRESS=thread (issue 13): the target computes without MPI calls while the
    # origin on the other host gets, accumulates, read_incs and puts; the test fails unless
    # the target's progress thread served them before its 20 s deadline
    SIM_MPICH_EXTRA="-genv GARRAY_PROGRESS thread" \
      doctest_run "mpich.np2.progress_thread.test_runtime" mpich 2 block "$mpich_build/tests/test_runtime" \
      '-tc=*GARRAY_PROGRESS*,*progress thread*,*while the target computes*'
    doctest_run "mpich.np2.progress_calls.test_runtime" mpich 2 block "$mpich_build/tests/test_runtime" "$POLL_FILTER"
    # np=4 (2 ranks per 1-core host): MPICH busy-polls without yielding (each subset ran past
    # 120 s); with the test-only yield module (tests/support/mpich_yield_when_idle.cpp,
    # built in the MPICH tree) preloaded, each subset takes 1-5 s (measured)
    yield_so=$mpich_build/tests/libgarray_mpich_yield.so
    if [ -f "$yield_so" ]; then
      SIM_MPICH_EXTRA="-genv LD_PRELOAD $yield_so" suite_bins mpich "$mpich_build" 4 block
      SIM_MPICH_EXTRA="-genv LD_PRELOAD $yield_so" suite_bins mpich "$mpich_build" 4 rr
    else
      echo "cluster_test: NOTE: $yield_so not built (GARRAY_TEST_MPICH_YIELD=OFF?): MPICH np=4 left out"
    fi
    ;;
  laplace)
    lap=$build/apps/laplace/laplace
    [ -x "$lap" ] || { echo "cluster_test: FAIL: $lap not built"; exit 1; }
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    for np in 2 4; do
      for v in kernel fused numpy; do
        args=(--nx 200 --ny 200 --iters 50 --init hash --variant "$v")
        ref=$(timeout -k 5 "$SIM_TIMEOUT" mpirun.openmpi --oversubscribe -np $np "$lap" "${args[@]}" --quiet 2>&1 | grep '^error=')
        # rr: laplace numbers the ranks node by node (its default --rank-order node: the
        # describe() lines must say it renumbered); rr.given: as mpiexec numbered them
        for place in block rr rr.given; do
          [ $np = 2 ] && [ $place != block ] && continue
          extra=(--quiet)
          [ $place = rr.given ] && extra=(--quiet --rank-order given)
          [ $place = rr ] && [ $v = kernel ] && extra=()  # prints describe()
          run "ompi.np$np.$place.laplace.$v" ompi $np "${place%.given}" "$lap" "${args[@]}" "${extra[@]}"
          got=$(grep '^error=' "$RUN_LOG")
          if [ "$RUN_RC" = 0 ] && [ -n "$ref" ] && [ "$got" = "$ref" ]; then
            if [ $place = rr ] && [ $v = kernel ] && ! grep -q '^rank_order=node (renumbered)' "$RUN_LOG"; then
              verdict "ompi.np$np.$place.laplace.$v" 0 "no 'rank_order=node (renumbered)' line"
            else
              verdict "ompi.np$np.$place.laplace.$v" 1 "$got (1 host: same)"
            fi
          else
            verdict "ompi.np$np.$place.laplace.$v" 0 "2 hosts: '${got}' 1 host: '${ref}'"
          fi
        done
      done
    done
    # MPICH (the tree's laplace, when MPICH_BUILD_DIR has one): np=2 and np=4 block, the
    # 4-rank runs with the tree's yield module preloaded (see the mpich suite)
    mlap=${mpich_build:+$mpich_build/apps/laplace/laplace}
    if [ -n "$mlap" ] && [ -x "$mlap" ] && command -v mpiexec.mpich >/dev/null; then
      yield_so=$mpich_build/tests/libgarray_mpich_yield.so
      for np in 2 4; do
        pre=()
        [ $np = 4 ] && [ -f "$yield_so" ] && pre=(-genv LD_PRELOAD "$yield_so")
        for v in kernel fused numpy; do
          args=(--nx 200 --ny 200 --iters 50 --init hash --variant "$v" --quiet)
          ref=$(timeout -k 5 "$SIM_TIMEOUT" mpiexec.mpich "${pre[@]}" -n $np "$mlap" "${args[@]}" 2>&1 | grep '^error=')
          SIM_MPICH_EXTRA="${pre[*]}" RUN_DONE_MARK="error=" run "mpich.np$np.block.laplace.$v" mpich $np block "$mlap" "${args[@]}"
          got=$(grep '^error=' "$RUN_LOG")
          if { [ "$RUN_RC" = 0 ] || [ "$RUN_RC" = 124 ]; } && [ -n "$ref" ] && [ "$got" = "$ref" ]; then
            verdict "mpich.np$np.block.laplace.$v" 1 "$got (1 host: same)$([ "$RUN_RC" = 124 ] && echo '; then hung in MPI_Finalize: openucx/ucx#8738')"
          else
            verdict "mpich.np$np.block.laplace.$v" 0 "2 hosts: '${got}' 1 host: '${ref}'"
          fi
        done
      done
    else
      echo "cluster_test: NOTE: no MPICH laplace at '${mlap:-<no MPICH tree>}': MPICH laplace runs left out"
    fi
    ;;
  defaults)
    # Debian's Open MPI defaults cannot create a window spanning hosts over TCP (osc/rdma
    # needs an RDMA BTL): garray must exit with an actionable message, on every rank, not hang.
    lap=$build/apps/laplace/laplace
    SIM_OMPI_ARGS="${CLUSTER_OMPI_ARGS:-}" "$SIM" run-ompi 4 "$lap" --nx 64 --ny 64 --iters 5 --quiet \
      >"$logs/defaults.np4.log" 2>&1
    RUN_RC=$? RUN_LOG=$logs/defaults.np4.log RUN_SECS=-
    if [ "$RUN_RC" != 0 ] && [ "$RUN_RC" != 124 ] && [ "$RUN_RC" != 137 ] && grep -q -- "--mca osc pt2pt" "$RUN_LOG"; then
      verdict "ompi.np4.block.defaults" 1 "(exit $RUN_RC: $(grep -m1 -o 'MPI_Win_allocate[^.]*' "$RUN_LOG"))"
    else
      verdict "ompi.np4.block.defaults" 0 "(expected a non-zero exit naming --mca osc pt2pt, not a hang)"
    fi
    # GARRAY_PROGRESS=thread asks for MPI_THREAD_MULTIPLE, which osc/pt2pt refuses: the same
    # rule (every rank exits, no hang) and a message that does not suggest pt2pt again
    SIM_OMPI_ARGS="--mca osc ^ucx -x GARRAY_PROGRESS=thread" "$SIM" run-ompi 2 "$lap" --nx 64 --ny 64 --iters 5 \
      --quiet >"$logs/defaults.np2.progress.log" 2>&1
    RUN_RC=$? RUN_LOG=$logs/defaults.np2.progress.log RUN_SECS=-
    if [ "$RUN_RC" != 0 ] && [ "$RUN_RC" != 124 ] && [ "$RUN_RC" != 137 ] && grep -q "unset GARRAY_PROGRESS" "$RUN_LOG" &&
      grep -q -- "--mca osc ucx" "$RUN_LOG" && grep -q "or MPICH" "$RUN_LOG" && ! grep -q -- "--mca osc pt2pt" "$RUN_LOG"; then
      verdict "ompi.np2.progress_thread.pt2pt" 1 "(exit $RUN_RC: the window error names GARRAY_PROGRESS, UCX and MPICH)"
    else
      verdict "ompi.np2.progress_thread.pt2pt" 0 "(expected a non-zero exit naming GARRAY_PROGRESS, UCX and MPICH, not pt2pt; not a hang)"
    fi
    ;;
esac

echo "cluster_test: $suite: $((runs - fails))/$runs passed in $(($(date +%s) - t_start)) s (logs: $logs)"
[ "$fails" = 0 ]

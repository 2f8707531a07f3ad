#!/bin/bash
# fail_fast.sh MPIEXEC PROBE NP
#
# The doctest main's fail-fast rule (mpi_main.cpp): a rank that leaves a test case early (an
# exception, a failed REQUIRE, also before a further subcase) aborts the job promptly, naming itself
# and the test case, instead of leaving the other ranks in a collective until ctest's
# timeout. A failed CHECK does not abort: the run ends normally and rank 0's summary names
# the failing rank. A passing run exits 0.
set -u
mpiexec=${1:?usage: fail_fast.sh MPIEXEC PROBE NP}
probe=${2:?}
np=${3:?}
last=$((np - 1))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
bad=0
# run CASE WANT_RC(0 or nonzero) PATTERN...: every pattern must appear in the output, and
# none prefixed with "!"
run() {
  local tc=$1 want=$2
  shift 2
  local out rc
  out=$(timeout -k 5 60 "$mpiexec" -n "$np" "$probe" "-tc=$tc" --no-skip 2>&1)
  rc=$?
  local why=""
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    why="hung (killed after 60 s)"
  elif [ "$want" = 0 ] && [ "$rc" != 0 ]; then
    why="exit $rc, wanted 0"
  elif [ "$want" != 0 ] && [ "$rc" = 0 ]; then
    why="exit 0, wanted a failure"
  fi
  for p in "$@"; do
    [ -n "$why" ] && break
    if [ "${p:0:1}" = "!" ]; then
      echo "$out" | grep -Eq -- "${p:1}" && why="a line matches /${p:1}/"
    else
      echo "$out" | grep -Eq -- "$p" || why="no line matches /$p/"
    fi
  done
  if [ -n "$why" ]; then
    echo "fail_fast: FAIL: np=$np \"$tc\": $why"
    echo "$out" | sed 's/^/    /'
    bad=1
  else
    echo "fail_fast: np=$np \"$tc\": ok (exit $rc)"
  fi
}
left="\\[mpi\\] rank $last left test case"
run "probe: an exception escapes on the last rank" 1 \
  "$left \"probe: an exception escapes on the last rank\" early \\(an exception escaped it" \
  "probe exception on rank $last"
run "probe: a REQUIRE fails on the last rank" 1 "$left \"probe: a REQUIRE fails on the last rank\" early \\(a REQUIRE failed"
run "probe: a REQUIRE fails after the first subcase on the last rank" 1 "$left .* early \\(a REQUIRE failed" \
  "!subcase b entered on rank $last"
run "probe: a CHECK fails on the last rank" 1 "\\[mpi\\] $np ranks: FAILED on ranks $last\$"
run "probe: every check passes" 0 "\\[mpi\\] $np ranks: all passed"
[ "$bad" = 0 ] && echo "fail_fast: all cases pass"
exit "$bad"

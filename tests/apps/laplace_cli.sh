#!/bin/bash
# laplace_cli.sh MPIEXEC LAPLACE WORKDIR
#
# laplace's command line when ranks fail or disagree: every case must end on every rank
# with the documented exit code and message within the time limit (a hang fails the test).
#   1. rank 0 cannot write --output (.npy, no such directory): exit 1 everywhere, the file named
#   2. ranks given different options (MPMD: --iters 10 on one, 11 on the other): exit 2
#   3. a bad option on one rank only (MPMD): exit 2, the option named
#   4. --check with --restart: exit 2 before anything runs
#   5. every value checked before anything runs (README: a bad option ends every rank with exit
#      code 2): an unknown --variant, a malformed --grid or one needing more ranks than the job
#      has, --nx < 2, a stray positional word, --cache-depth below -1, an empty file name,
#      --checkpoint-every without --checkpoint (these exited 1 after the agreement, or ran)
#   6. a bad value's line names its rank once (a garray parser's message carried its own
#      " [rank r/p]" and the app added another)
set -u
mpiexec=${1:?usage: laplace_cli.sh MPIEXEC LAPLACE WORKDIR}
lap=${2:?}
work=${3:?}
mkdir -p "$work" && cd "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
small=(--nx 8 --ny 8 --quiet)
fails=0
case_run() { # NAME WANT_RC WANT_TEXT -- MPIEXEC ARGS...
  local name=$1 want=$2 text=$3; shift 4
  local out rc
  out=$(timeout -k 5 60 "$@" 2>&1)
  rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "laplace_cli: FAIL $name: did not end within 60 s (a hang)"; fails=$((fails + 1))
  elif [ "$rc" = 0 ] || { [ "$want" != any ] && [ "$rc" != "$want" ]; }; then
    echo "laplace_cli: FAIL $name: exit $rc, wanted $want"; echo "$out" | tail -15; fails=$((fails + 1))
  elif ! grep -q -- "$text" <<<"$out"; then
    echo "laplace_cli: FAIL $name: no '$text' in the output"; echo "$out" | tail -15; fails=$((fails + 1))
  else
    echo "laplace_cli: pass $name (exit $rc)"
  fi
}
# (hydra, MPICH's mpiexec, may report a rank's exit code differently: 'any' accepts any non-zero)
code() { case $mpiexec in *mpich*) echo any ;; *) echo "$1" ;; esac; }
case_run output.np2 "$(code 1)" "no_such_dir/u.npy" -- \
  "$mpiexec" -n 2 "$lap" "${small[@]}" --iters 3 --output no_such_dir/u.npy
case_run options_differ "$(code 2)" "different options" -- \
  "$mpiexec" -n 1 "$lap" "${small[@]}" --iters 10 : -n 1 "$lap" "${small[@]}" --iters 11
case_run bad_option_one_rank "$(code 2)" "bogus" -- \
  "$mpiexec" -n 1 "$lap" "${small[@]}" : -n 1 "$lap" "${small[@]}" --bogus 1
case_run check_restart "$(code 2)" "cannot be combined" -- \
  "$mpiexec" -n 2 "$lap" "${small[@]}" --check --restart none.h5
bad() { # NAME TEXT ARGS...: exit 2 on both ranks, TEXT in the output
  local name=$1 text=$2; shift 2
  case_run "$name" "$(code 2)" "$text" -- "$mpiexec" -n 2 "$lap" "${small[@]}" --iters 2 "$@"
}
bad variant "unknown variant 'foo'" --variant foo
bad grid_text "bad process grid '3'" --grid 3
bad grid_zero "bad process grid '0x2'" --grid 0x2
bad grid_too_big "needs 4 ranks; the job has 2" --grid 2x2
case_run nx "$(code 2)" "must be >= 2" -- "$mpiexec" -n 2 "$lap" --nx 1 --ny 8 --iters 2 --quiet
bad positional "positional" 2000
bad cache_depth "cache-depth must be >= -1" --cache-depth -7
bad empty_output "--output needs a file name" --output ''
bad every_alone "--checkpoint-every needs --checkpoint" --checkpoint-every 5
bad rank_order "'nodes'.*--rank-order.*invalid" --rank-order nodes  # read by the library's >>
case_run huge_grid "$(code 2)" "--nx 4000000000 x --ny 4000000000 is too large" -- \
  "$mpiexec" -n 2 "$lap" --nx 4000000000 --ny 4000000000 --iters 2 --quiet
stamps=$(timeout -k 5 60 "$mpiexec" -n 2 "$lap" "${small[@]}" --grid 3 2>&1 | grep "bad process grid")
if [ "$(grep -c "rank [01]/2" <<<"$stamps")" != 2 ] || grep -q "rank.*rank" <<<"$stamps"; then
  echo "laplace_cli: FAIL rank_named_once: wanted one '[rank r/2]' on each rank's line:"; echo "$stamps"
  fails=$((fails + 1))
else
  echo "laplace_cli: pass rank_named_once"
fi
if [ "$fails" = 0 ]; then echo "laplace_cli: all cases pass"; exit 0; fi
exit 1

#!/bin/bash
# bench_cli_bad_option.sh MPIEXEC BENCH_DIR
#
# Every bench_* binary given an unknown option ends with a message naming it and a non-zero
# exit code, not a crash: six of them (halo, indexing, io, numeric, progress, redistribute)
# parsed outside any try, so Boost's exception reached std::terminate (SIGABRT, exit 134).
set -u
mpiexec=${1:?usage: bench_cli_bad_option.sh MPIEXEC BENCH_DIR}
dir=${2:?}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fails=0
count=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# all at once (each is an MPI start-up and a parse: the time is the launcher's)
for b in "$dir"/bench_*; do
  [ -f "$b" ] && [ -x "$b" ] || continue
  n=$(basename "$b")
  count=$((count + 1))
  ( ulimit -c 0; timeout -k 5 60 "$mpiexec" -n 1 "$b" --bogus-option 1 >"$tmp/$n.out" 2>&1; echo $? >"$tmp/$n.rc" ) &
done
wait
for f in "$tmp"/*.rc; do
  [ -f "$f" ] || continue
  n=$(basename "$f" .rc)
  rc=$(cat "$f")
  out=$(cat "$tmp/$n.out")
  if [ "$rc" = 0 ] || [ "$rc" -ge 124 ] || grep -q "terminate called" <<<"$out"; then
    echo "bench_cli_bad_option: FAIL $n: exit $rc"; grep -m1 "terminate called" <<<"$out"; fails=$((fails + 1))
  elif ! grep -q -- "bogus-option" <<<"$out"; then
    echo "bench_cli_bad_option: FAIL $n: the option is not named"; echo "$out" | tail -3; fails=$((fails + 1))
  else
    echo "bench_cli_bad_option: pass $n (exit $rc)"
  fi
done
# A value the library refuses (an array of 4e9 x 4e9 doubles): a message and a non-zero exit,
# not std::terminate. bench_halo checks it while parsing (exit 2); bench_redistribute meets it
# when it creates the array (guarded_main: exit 1).
for spec in "bench_halo 2" "bench_redistribute 1"; do
  set -- $spec
  [ -x "$dir/$1" ] || continue
  out=$(ulimit -c 0; timeout -k 5 60 "$mpiexec" -n 1 "$dir/$1" --n 4000000000 2>&1)
  rc=$?
  if [ "$rc" != "$2" ] || grep -q "terminate called" <<<"$out" || ! grep -q "^$1: " <<<"$out"; then
    echo "bench_cli_bad_option: FAIL $1 --n 4000000000: exit $rc (wanted $2 and a '$1: ' message)"
    echo "$out" | tail -3
    fails=$((fails + 1))
  else
    echo "bench_cli_bad_option: pass $1 --n 4000000000 (exit $rc)"
  fi
done
# ... at np 2 the job is aborted after the message (another rank might not have thrown):
# a non-zero exit, no hang, no std::terminate
if [ -x "$dir/bench_redistribute" ]; then
  out=$(ulimit -c 0; timeout -k 5 60 "$mpiexec" -n 2 "$dir/bench_redistribute" --n 4000000000 2>&1)
  rc=$?
  if [ "$rc" = 0 ] || [ "$rc" -ge 124 ] || grep -q "terminate called" <<<"$out" || ! grep -q "bench_redistribute: " <<<"$out"; then
    # (not anchored: two ranks write the message at once, and the abort's banner interleaves)
    echo "bench_cli_bad_option: FAIL bench_redistribute --n 4000000000 at np 2: exit $rc"; echo "$out" | tail -3
    fails=$((fails + 1))
  else
    echo "bench_cli_bad_option: pass bench_redistribute --n 4000000000 at np 2 (exit $rc)"
  fi
fi
# refused_at_parse BENCH WANT ARGS...: exit 2 (the option check) with WANT in the output
refused_at_parse() {
  local bench=$1 want=$2 out rc
  shift 2
  [ -x "$dir/$bench" ] || return 0
  out=$(ulimit -c 0; timeout -k 5 60 "$mpiexec" -n 1 "$dir/$bench" "$@" 2>&1)
  rc=$?
  if [ "$rc" != 2 ] || ! grep -q -- "$want" <<<"$out"; then
    echo "bench_cli_bad_option: FAIL $bench $*: exit $rc"; echo "$out" | tail -3; fails=$((fails + 1))
  else
    echo "bench_cli_bad_option: pass $bench $*"
  fi
}
# sizes beyond what the size parser takes: the option and the value named
for v in 99999999999999999999 17179869184G; do
  refused_at_parse bench_rma "--sizes: size '$v' is too large" --sizes "$v"
done
# bench_cache's part 3 options are checked with the others, before parts 1-2 run (a bad
# --shapes used to surface after minutes of them; --shapes-depth -2 ran as the default)
refused_at_parse bench_cache "--shapes-depth: at least 0" --shapes-depth -2
refused_at_parse bench_cache "--shapes: at most" --shapes 999999999
if [ "$count" -lt 5 ]; then echo "bench_cli_bad_option: FAIL only $count bench binaries in $dir"; exit 1; fi
if [ "$fails" = 0 ]; then echo "bench_cli_bad_option: all pass"; exit 0; fi
exit 1

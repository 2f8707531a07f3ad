#!/usr/bin/env bash
# Compile time and peak memory of what a user's translation unit pays for libgarray
# (issue 17's measurement), medians of REPS runs, interleaved:
#   floor   a TU that only includes <mpi.h> and <boost/multi_array.hpp>
#   readme  README.md's "What you get" example (extracted from README.md)
#   laplace apps/laplace/main.cpp (also includes Boost.Program_options and the app's header)
#   oneget  one get on a GlobalArray<double, 2> (bench/compile/oneget.cpp)
# Every TU is compiled with the flags CMake gives a garray::garray consumer (taken from
# BUILD's laplace target), so the floor gets the same definitions and optimisation level.
#
#   bench/compile/compile_time.sh SOURCE_DIR BUILD_DIR [REPS=5] [CSV]
#
# CSV rows: tu,lines,median_s,x_floor_time,peak_mb,x_floor_mem (the header written when the
# file is new).
set -euo pipefail
SRC=$(cd "$1" && pwd) BUILD=$(cd "$2" && pwd) REPS=${3:-5} CSV=${4:-}
if ! [[ $REPS =~ ^[0-9]+$ ]] || ((REPS < 1)); then
  echo "compile_time.sh: REPS must be at least 1 (got '$REPS')" >&2
  exit 2
fi
flags_file=$BUILD/apps/laplace/CMakeFiles/laplace.dir/flags.make
[[ -f $flags_file ]] || { echo "compile_time.sh: $flags_file not found (configure BUILD with apps)" >&2; exit 2; }
get() { sed -n "s/^$1 = //p" "$flags_file"; }
CXX=$(sed -n 's/^# compile CXX with //p' "$flags_file")
read -r -a FLAGS <<< "$(get CXX_FLAGS) $(get CXX_DEFINES) $(get CXX_INCLUDES)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^```cpp/{n++; next} n==1 && /^```/{exit} n==1{print}' "$SRC/README.md" > "$tmp/readme.cpp"
declare -A TU=([floor]=$SRC/bench/compile/floor.cpp [readme]=$tmp/readme.cpp
               [laplace]=$SRC/apps/laplace/main.cpp [oneget]=$SRC/bench/compile/oneget.cpp)
order=(floor readme laplace oneget)
for ((r = 0; r < REPS; ++r)); do
  for k in "${order[@]}"; do
    /usr/bin/time -f "%e %M" -o "$tmp/t" "$CXX" "${FLAGS[@]}" -c "${TU[$k]}" -o "$tmp/$k.o"
    echo "$k $(cat "$tmp/t")" >> "$tmp/all"
  done
done
for k in "${order[@]}"; do
  echo "$k $("$CXX" "${FLAGS[@]}" -E "${TU[$k]}" | wc -l)" >> "$tmp/lines"
done
/usr/bin/python3 - "$tmp/all" "$tmp/lines" "$CSV" <<'PY'
import statistics, sys, collections
t, m = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, s, kb = line.split()
    t[k].append(float(s)); m[k].append(int(kb))
lines = dict(l.split() for l in open(sys.argv[2]))
f = statistics.median(t["floor"]); fm = statistics.median(m["floor"])
print(f"{'TU':8s} {'lines':>8s} {'median s':>9s} {'x floor':>8s} {'peak MB':>8s} {'x floor':>8s}")
rows = []
for k in ["floor", "readme", "laplace", "oneget"]:
    s, kb = statistics.median(t[k]), statistics.median(m[k])
    rows.append((k, lines[k], s, s / f, kb / 1024, kb / fm))
    print(f"{k:8s} {lines[k]:>8s} {s:9.2f} {s / f:8.2f} {kb / 1024:8.0f} {kb / fm:8.2f}")
if sys.argv[3]:
    import os
    fresh = not os.path.exists(sys.argv[3]) or os.path.getsize(sys.argv[3]) == 0
    with open(sys.argv[3], "a") as out:
        if fresh:
            out.write("tu,lines,median_s,x_floor_time,peak_mb,x_floor_mem\n")
        for r in rows: out.write("%s,%s,%.3f,%.3f,%.0f,%.3f\n" % r)
PY

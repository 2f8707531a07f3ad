#!/usr/bin/env bash
# Runtime benchmarks of two builds side by side, interleaved (A B A B ...), on 2 ranks:
# bench_rma small and large ops (garray column), bench_numeric's fused expression,
# bench_laplace's kernel/fused/numpy variants. Prints each metric's median per build and
# the ratio B/A (above 1 = B slower). For "did this change make anything slower".
#
#   bench/compare/before_after.sh BUILD_A BUILD_B [ROUNDS=5]
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-5}
MPIEXEC=${MPIEXEC:-mpiexec}
run() { "$MPIEXEC" --allow-run-as-root --oversubscribe -n 2 "$@" > /dev/null 2>&1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < ROUNDS; ++r)); do
  for side in A B; do
    dir=${!side}
    run "$dir/bench/bench_rma" --sizes 8,1K,1M --no-strided --reps 11 --csv "$tmp/rma_$side.csv"
    run "$dir/bench/bench_numeric" --n 2000 --reps 3 --no-serial --no-eager --csv "$tmp/num_$side.csv"
    run "$dir/bench/bench_laplace" --sizes 1000 --iters 10 --repeat 3 --contenders kernel,fused,numpy \
      --csv "$tmp/lap_$side.csv"
  done
done
/usr/bin/python3 - "$tmp" <<'PY'
import csv, statistics, sys, collections
d = sys.argv[1]
vals = collections.defaultdict(lambda: {"A": [], "B": []})
def rows(path):  # each run appends its own header line: skip repeats
    return [r for r in csv.DictReader(open(path)) if not any(k == v for k, v in r.items())]
for side in "AB":
    for row in rows(f"{d}/rma_{side}.csv"):
        if row["variant"] == "garray":
            vals[f"rma {row['op']} {row['size_bytes']} B (us)"][side].append(float(row["median_us"]))
    for row in rows(f"{d}/num_{side}.csv"):
        vals["numeric fused 2000^2 (s)"][side].append(float(row["fused_s"]))
    for row in rows(f"{d}/lap_{side}.csv"):
        vals[f"laplace {row['contender']} 1000^2 (ms/iter)"][side].append(float(row["ms_per_iter"]))
print(f"{'metric':38s} {'A median':>12s} {'B median':>12s} {'B/A':>6s}")
for k, v in vals.items():
    a, b = statistics.median(v["A"]), statistics.median(v["B"])
    print(f"{k:38s} {a:12.4g} {b:12.4g} {b / a:6.2f}")
PY

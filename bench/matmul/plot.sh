#!/usr/bin/env bash
# Plots bench_matmul's CSV: GFLOP/s by contender and rank count, one panel per matrix order
# (pdgemm: its best block size per point). Needs gnuplot (Debian: apt-get install gnuplot-nox).
#
#   rm -f matmul.csv
#   for np in 1 2 4; do OPENBLAS_NUM_THREADS=1 mpiexec -n $np build/bench/bench_matmul --csv matmul.csv; done
#   bench/matmul/plot.sh matmul.csv docs/img/matmul.png 'OpenBLAS 1 thread per rank, 2 cores'
#
# The optional third argument describes the run (threads, cores, machine) in the title; the
# CSV does not record it.
set -euo pipefail
csv=${1:?usage: plot.sh results.csv [out.png] [setup]}
out=${2:-docs/img/matmul.png}
setup=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sizes=$(awk -F, 'NR > 1 && $1 == "matmul" { print $2 }' "$csv" | sort -nu)
for n in $sizes; do
  # np garray pdgemm(best) GA_Dgemm blas
  awk -F, -v n="$n" '
    NR > 1 && $1 == "matmul" && $2 == n {
      v = $4; sub(/ nb=.*/, "", v)
      key = $3 SUBSEP v
      if (!(key in g) || $6 > g[key]) g[key] = $6
      nps[$3] = 1
    }
    END {
      for (p in nps) {
        printf "%s", p
        split("garray pdgemm GA_Dgemm blas dgemm", dummy, " ")
        printf " %s", ((p SUBSEP "garray") in g) ? g[p SUBSEP "garray"] : "NaN"
        printf " %s", ((p SUBSEP "pdgemm") in g) ? g[p SUBSEP "pdgemm"] : "NaN"
        printf " %s", ((p SUBSEP "GA_Dgemm") in g) ? g[p SUBSEP "GA_Dgemm"] : "NaN"
        printf " %s\n", ((p SUBSEP "blas dgemm") in g) ? g[p SUBSEP "blas dgemm"] : "NaN"
      }
    }' "$csv" | sort -n > "$tmp/n$n.dat"
done
count=$(echo "$sizes" | wc -w)
{
  echo "set terminal pngcairo size $((520 * count)),460 font ',10'"
  echo "set output '$out'"
  echo "set multiplot layout 1,$count title 'C = A B, n x n doubles${setup:+ ($setup)}'"
  echo "set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1"
  echo "set ylabel 'GFLOP/s (median)'; set xlabel 'ranks'; set key below; set grid ytics; set yrange [0:*]"
  for n in $sizes; do
    echo "set title 'n = $n'"
    echo "plot '$tmp/n$n.dat' using 2:xtic(1) title 'garray gemm', '' using 3 title 'ScaLAPACK pdgemm (best nb)', '' using 4 title 'GA\\_Dgemm', '' using 5 title 'BLAS dgemm (1 rank)'"
  done
  echo "unset multiplot"
} | gnuplot
echo "wrote $out"

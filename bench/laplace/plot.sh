#!/usr/bin/env bash
# Plots bench_laplace's CSV: ms per iteration by contender and rank count, one panel per grid
# size, log scale. Needs gnuplot (Debian: apt-get install gnuplot-nox).
#
#   rm -f laplace.csv
#   mpiexec -n 1 build/bench/bench_laplace --csv laplace.csv
#   mpiexec -n 2 build/bench/bench_laplace --csv laplace.csv
#   bench/laplace/plot.sh laplace.csv docs/img/laplace.png
#
# When the CSV holds several rows for one (n, np, contender), the last one wins.
set -euo pipefail
csv=${1:?usage: plot.sh results.csv [out.png]}
out=${2:-docs/img/laplace.png}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# n,np,contender,ms_per_iter,... -> one table per n: contender ms(np=1) ms(np=2)
sizes=$(awk -F, 'NR > 1 { print $1 }' "$csv" | sort -nu)
for n in $sizes; do
  awk -F, -v n="$n" '
    NR > 1 && $1 == n { ms[$3 "," $2] = $4; if (!($3 in seen)) { seen[$3] = 1; order[++k] = $3 } }
    END {
      for (i = 1; i <= k; ++i) {
        c = order[i]
        a = ((c ",1") in ms) ? ms[c ",1"] : "NaN"
        b = ((c ",2") in ms) ? ms[c ",2"] : "NaN"
        print c, a, b
      }
    }' "$csv" > "$tmp/n$n.dat"
done

npanels=$(echo "$sizes" | wc -w)
{
  echo "set terminal pngcairo size $((520 * npanels)),420 font 'sans,10'"
  echo "set output '$out'"
  echo "set multiplot layout 1,$npanels title 'Laplace (Jacobi) step: ms per iteration, median (lower is better)'"
  echo "set style data histogram; set style histogram clustered gap 1"
  echo "set style fill solid 0.85 border -1; set boxwidth 0.9"
  echo "set logscale y; set grid ytics; set yrange [1:*]; set key top left"
  echo "set ylabel 'ms per iteration'"
  for n in $sizes; do
    echo "set title 'n = $n ($n x $n doubles)'"
    echo "plot '$tmp/n$n.dat' using 2:xtic(1) title 'np=1' lc rgb '#4477aa', '' using 3 title 'np=2' lc rgb '#ee6677'"
  done
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "wrote $out"

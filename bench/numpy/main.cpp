// bench_numpy (issue 15): garray::argmax, garray::mean and garray::max (one fused
// owner-computes pass each) and two broadcasting assignments (out = a + row, a row of n broadcast down the
// rows; out = a * col, an (n, 1) column broadcast along the rows) against a serial loop over plain
// std::vectors, on an n x n double array. The bar: at np=1 the fused pass runs at >= 0.9x
// the serial loop's speed. Afterwards (untimed) garray's results are compared with the serial
// loop's: argmax and max exactly, the mean within the rounding of a sum in another order,
// each broadcast's whole output exactly (one addition or multiplication per element); exit
// code 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <garray/garray.hpp>
#include <iostream>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "bench_util.hpp"

using garray::bench::median;

using garray::bench::Side;

// The serial max loops, compiled on their own: inlined into the timing template, their code
// depended on what else that function held (a garray header change once made them 5x slower).
[[gnu::noinline]] double serial_max_nan(const double* p, std::size_t count) {
  double v = -HUGE_VAL;
  for (std::size_t i = 0; i < count; ++i) {
    const double x = p[i];
    v = x != x ? x : (v < x ? x : v);
  }
  return v;
}
[[gnu::noinline]] double serial_max_plain_loop(const double* p, std::size_t count) {
  double v = -HUGE_VAL;
  for (std::size_t i = 0; i < count; ++i) v = v < p[i] ? p[i] : v;
  return v;
}

static int bench_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  long long n_arg = 3000;
  int reps = 7;
  if (const auto stop = garray::bench::parse_size_reps(argc, argv, "bench_numpy", "array extent (n x n doubles)", n_arg, reps)) {
    MPI_Finalize();
    return *stop;
  }
  {
    garray::Context ctx;
    const garray::Index n = n_arg;
    const bool root = ctx.rank() == 0;
    if (root) garray::bench::print_run_info(std::cout, "bench_numpy", ctx.size());
    const auto nn = static_cast<std::size_t>(n);
    const auto m = nn * nn;
    // The serial side: plain std::vectors on rank 0.
    std::vector<double> sa, srow, scol, sout;
    if (root) {
      sa.resize(m);
      for (std::size_t i = 0; i < m; ++i) sa[i] = std::sin(static_cast<double>(i));
      srow.resize(nn);
      scol.resize(nn);
      sout.resize(m);
      for (std::size_t j = 0; j < nn; ++j) {
        srow[j] = std::cos(static_cast<double>(j));
        scol[j] = 1.0 + static_cast<double>(j) / static_cast<double>(nn);
      }
    }
    auto a = garray::empty<double>(ctx, garray::Shape<2>{n, n});
    garray::generate(a, [n](const garray::Shape<2>& i) { return std::sin(static_cast<double>(i[0] * n + i[1])); });
    auto row = garray::empty<double>(ctx, garray::Shape<1>{n});
    auto col = garray::empty<double>(ctx, garray::Shape<2>{n, 1});
    garray::generate(row, [](const garray::Shape<1>& j) { return std::cos(static_cast<double>(j[0])); });
    garray::generate(col, [n](const garray::Shape<2>& i) { return 1.0 + static_cast<double>(i[0]) / static_cast<double>(n); });
    auto out = garray::empty<double>(ctx, garray::Shape<2>{n, n});

    garray::Index serial_arg = -1, arg = -1;
    double serial_mean = 0, mean = 0;
    const Side t_arg = garray::bench::side_by_side(
        ctx.comm(), reps,
        [&] {
          std::size_t best = 0;
          double bv = sa[0];
          for (std::size_t i = 1; i < m; ++i)
            if (bv < sa[i]) {
              bv = sa[i];
              best = i;
            }
          serial_arg = static_cast<garray::Index>(best);
        },
        [&] { arg = garray::argmax(a); });
    const Side t_mean = garray::bench::side_by_side(
        ctx.comm(), reps,
        [&] {
          double s = 0;
          for (std::size_t i = 0; i < m; ++i) s += sa[i];
          serial_mean = s / static_cast<double>(m);
        },
        [&] { mean = garray::mean(a); });
    // max: garray propagates NaN as NumPy (one more compare per element); against a serial
    // loop that does the same, and one that ignores NaN (what garray's max did before)
    double serial_max = 0, serial_max_plain = 0, gmax = 0;
    const Side t_max = garray::bench::side_by_side(
        ctx.comm(), reps,
        [&] { serial_max = serial_max_nan(sa.data(), m); },
        [&] { gmax = garray::max(a); });
    const Side t_max_plain = garray::bench::side_by_side(
        ctx.comm(), reps,
        [&] { serial_max_plain = serial_max_plain_loop(sa.data(), m); },
        [&] { gmax = garray::max(a); });
    const Side t_row = garray::bench::side_by_side(
        ctx.comm(), reps,
        [&] {
          for (std::size_t i = 0; i < nn; ++i)
            for (std::size_t j = 0; j < nn; ++j) sout[i * nn + j] = sa[i * nn + j] + srow[j];
        },
        [&] { out = a + row; });
    // Collective. garray's whole output against the serial loop's (rank 0 compares).
    std::vector<double> gout(root ? m : 0);
    const auto same_out = [&](const char* what) {
      bool same = true;
      if (root) {
        out.get_section(garray::Section<2>::full(out.shape()), std::span<double>(gout));
        for (std::size_t k = 0; k < m && same; ++k)
          if (gout[k] != sout[k]) {
            garray::bench::report_failure("bench_numpy", what,
                                          "element " + std::to_string(k) + " is " + std::to_string(gout[k]) +
                                              ", the serial loop's " + std::to_string(sout[k]));
            same = false;
          }
      }
      ctx.barrier();
      return same;
    };
    const bool row_same = same_out("garray a + row");
    const Side t_col = garray::bench::side_by_side(
        ctx.comm(), reps,
        [&] {
          for (std::size_t i = 0; i < nn; ++i)
            for (std::size_t j = 0; j < nn; ++j) sout[i * nn + j] = sa[i * nn + j] * scol[i];
        },
        [&] { out = a * col; });
    const bool col_same = same_out("garray a * col");
    // The mean: the two sums of the m elements, in different orders, each lie within
    // (m - 1) * eps / 2 * sum|a| of the exact sum, so after the division by m the means differ
    // by at most eps * sum|a| (absolute: the mean itself is tiny, as sin's sum stays bounded,
    // so a bound relative to it would fail on rounding alone).
    double abs_sum = 0;
    for (double x : sa) abs_sum += std::abs(x);
    const double mean_tol = std::numeric_limits<double>::epsilon() * abs_sum;
    bool ok = row_same && col_same;
    if (root) {
      const auto fail = [&](const char* what, const std::string& detail) {
        garray::bench::report_failure("bench_numpy", what, detail);
        ok = false;
      };
      if (arg != serial_arg)
        fail("garray argmax",
             "index " + std::to_string(arg) + ", the serial loop's " + std::to_string(serial_arg));
      if (!(std::abs(mean - serial_mean) <= mean_tol))
        fail("garray mean", std::to_string(mean) + ", the serial loop's " + std::to_string(serial_mean) +
                                " (tolerance " + std::to_string(mean_tol) + ")");
      if (gmax != serial_max)
        fail("garray max", std::to_string(gmax) + ", the serial loop's " + std::to_string(serial_max));
      if (serial_max_plain != serial_max)  // (no NaN in a: both serial loops agree)
        fail("serial max ignoring NaN",
             std::to_string(serial_max_plain) + ", the NaN-propagating loop's " + std::to_string(serial_max));
    }
    ok = garray::bench::all_ranks_ok(ctx.comm(), ok);
    if (!ok) rc = 1;
    if (root) {
      std::printf("n=%lld ranks=%d reps=%d (serial and garray alternate; ratio: median of the per-rep ratios)\n",
                  static_cast<long long>(n), ctx.size(), reps);
      const auto line = [](const char* what, const Side& t, const std::string& check) {
        std::printf("%s serial %.4f s, garray %.4f s, speed ratio %.2fx (%s)\n", what, t.serial, t.garray, t.ratio,
                    check.c_str());
      };
      line("argmax:", t_arg, std::string("same index: ") + (arg == serial_arg ? "yes" : "no"));
      line("mean:  ", t_mean, "|diff| " + std::to_string(std::abs(mean - serial_mean)));
      line("max (serial loop propagating NaN):", t_max, std::string("same value: ") + (gmax == serial_max ? "yes" : "no"));
      line("max (serial loop ignoring NaN):   ", t_max_plain,
           std::string("same value: ") + (gmax == serial_max_plain ? "yes" : "no"));
      line("a + row (broadcast):", t_row, std::string("same values: ") + (row_same ? "yes" : "no"));
      line("a * col (broadcast):", t_col, std::string("same values: ") + (col_same ? "yes" : "no"));
      std::printf("check=%s\n", ok ? "pass" : "FAIL");
    }
  }
  MPI_Finalize();
  return rc;
}

int main(int argc, char** argv) { return garray::bench::guarded_main("bench_numpy", argc, argv, bench_main); }

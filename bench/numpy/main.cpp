// bench_numpy (issue 15): garray::argmax and garray::mean (one fused owner-computes pass
// each) and two broadcasting assignments (out = a + row, a row of n broadcast down the rows;
// out = a * col, an (n, 1) column broadcast along the rows) against a serial loop over plain
// std::vectors, on an n x n double array. The bar: at np=1 the fused pass runs at >= 0.9x
// the serial loop's speed.
#include "bench_util.hpp"

#include <garray/garray.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

using garray::bench::median;
using garray::bench::time_reps;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    garray::Context ctx;
    const garray::Index n = argc > 1 ? std::atoll(argv[1]) : 3000;
    const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
    const bool root = ctx.rank() == 0;
    if (root) garray::bench::print_run_info(std::cout, "bench_numpy", ctx.size());
    double t_serial_arg = 0, t_serial_mean = 0, t_serial_row = 0, t_serial_col = 0;
    double serial_row_check = 0, serial_col_check = 0;
    garray::Index serial_arg = -1;
    double serial_mean = 0;
    if (root) {
      const auto m = static_cast<std::size_t>(n * n);
      std::vector<double> a(m);
      for (std::size_t i = 0; i < m; ++i) a[i] = std::sin(static_cast<double>(i));
      t_serial_arg = median(time_reps(reps, 1, [&] {
        std::size_t best = 0;
        double bv = a[0];
        for (std::size_t i = 1; i < m; ++i)
          if (bv < a[i]) {
            bv = a[i];
            best = i;
          }
        serial_arg = static_cast<garray::Index>(best);
      }));
      t_serial_mean = median(time_reps(reps, 1, [&] {
        double s = 0;
        for (std::size_t i = 0; i < m; ++i) s += a[i];
        serial_mean = s / static_cast<double>(m);
      }));
      const auto nn = static_cast<std::size_t>(n);
      std::vector<double> row(nn), col(nn), out(m);
      for (std::size_t j = 0; j < nn; ++j) {
        row[j] = std::cos(static_cast<double>(j));
        col[j] = 1.0 + static_cast<double>(j) / static_cast<double>(nn);
      }
      t_serial_row = median(time_reps(reps, 1, [&] {
        for (std::size_t i = 0; i < nn; ++i)
          for (std::size_t j = 0; j < nn; ++j) out[i * nn + j] = a[i * nn + j] + row[j];
      }));
      serial_row_check = out[m - 1];
      t_serial_col = median(time_reps(reps, 1, [&] {
        for (std::size_t i = 0; i < nn; ++i)
          for (std::size_t j = 0; j < nn; ++j) out[i * nn + j] = a[i * nn + j] * col[i];
      }));
      serial_col_check = out[m - 1];
    }
    ctx.barrier();
    auto a = garray::empty<double>(ctx, garray::Shape<2>{n, n});
    garray::generate(a, [n](const garray::Shape<2>& i) { return std::sin(static_cast<double>(i[0] * n + i[1])); });
    garray::Index arg = -1;
    double mean = 0;
    const double t_arg = median(time_reps(reps, 1, [&] { arg = garray::argmax(a); }));
    const double t_mean = median(time_reps(reps, 1, [&] { mean = garray::mean(a); }));
    auto row = garray::empty<double>(ctx, garray::Shape<1>{n});
    auto col = garray::empty<double>(ctx, garray::Shape<2>{n, 1});
    garray::generate(row, [](const garray::Shape<1>& j) { return std::cos(static_cast<double>(j[0])); });
    garray::generate(col, [n](const garray::Shape<2>& i) { return 1.0 + static_cast<double>(i[0]) / static_cast<double>(n); });
    auto out = garray::empty<double>(ctx, garray::Shape<2>{n, n});
    const double t_row = median(time_reps(reps, 1, [&] { out = a + row; }));
    const double row_check = out.get(garray::idx[n - 1][n - 1]);
    const double t_col = median(time_reps(reps, 1, [&] { out = a * col; }));
    const double col_check = out.get(garray::idx[n - 1][n - 1]);
    if (root) {
      std::printf("n=%lld ranks=%d\n", static_cast<long long>(n), ctx.size());
      std::printf("argmax: serial %.4f s, garray %.4f s, speed ratio %.2fx (same index: %s)\n", t_serial_arg, t_arg,
                  t_serial_arg / t_arg, arg == serial_arg ? "yes" : "no");
      std::printf("mean:   serial %.4f s, garray %.4f s, speed ratio %.2fx (|diff| %.3g)\n", t_serial_mean, t_mean,
                  t_serial_mean / t_mean, std::abs(mean - serial_mean));
      std::printf("a + row (broadcast): serial %.4f s, garray %.4f s, speed ratio %.2fx (same value: %s)\n",
                  t_serial_row, t_row, t_serial_row / t_row, row_check == serial_row_check ? "yes" : "no");
      std::printf("a * col (broadcast): serial %.4f s, garray %.4f s, speed ratio %.2fx (same value: %s)\n",
                  t_serial_col, t_col, t_serial_col / t_col, col_check == serial_col_check ? "yes" : "no");
    }
  }
  MPI_Finalize();
  return 0;
}

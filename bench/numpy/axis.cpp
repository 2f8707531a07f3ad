// bench_numpy_axis (issue 15): argmax along an axis and cumsum (along an axis and flattened)
// against serial loops over a plain std::vector, on an n x n double array, side by side in
// one run. Every garray call is one fused owner-computes pass plus its exchange (argmax: the
// per-rank partials and their rank-order combination; cumsum: the evaluation into the new
// array, the local scan, the block totals and the fix-up). The serial loops write into
// preallocated vectors. The bar: at np=1 the fused pass runs at >= 0.9x the serial loop.
//
//   bench_numpy_axis [n] [reps]       medians of `reps` rounds (after one warm-up), serial and
//                                     garray alternating
#include "bench_util.hpp"

#include <garray/garray.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

using garray::Index;
using garray::bench::median;
using garray::bench::Side;
using garray::bench::side_by_side;
using garray::bench::time_reps;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long long n_arg = 3000;
  int reps = 7;
  if (const auto stop = garray::bench::parse_size_reps(argc, argv, "bench_numpy_axis", "array extent (n x n doubles)", n_arg, reps)) {
    MPI_Finalize();
    return *stop;
  }
  {
    garray::Context ctx;
    const garray::Index n = n_arg;
    const bool root = ctx.rank() == 0;
    if (root) garray::bench::print_run_info(std::cout, "bench_numpy_axis", ctx.size());
    const auto m = static_cast<std::size_t>(n * n);
    const auto un = static_cast<std::size_t>(n);
    // The serial side: a plain std::vector on rank 0, results in preallocated vectors.
    std::vector<double> sa, bv, s_c0, s_c1, s_cf;
    std::vector<Index> s_arg0(un), s_arg1(un);
    if (root) {
      sa.resize(m);
      for (std::size_t i = 0; i < m; ++i) sa[i] = std::sin(static_cast<double>(i));
      bv.resize(un);
      s_c0.resize(m);
      s_c1.resize(m);
      s_cf.resize(m);
    }
    const auto serial_argmax0 = [&] {  // along axis 0: a running best per column
      for (std::size_t j = 0; j < un; ++j) {
        bv[j] = sa[j];
        s_arg0[j] = 0;
      }
      for (std::size_t i = 1; i < un; ++i) {
        const double* r = sa.data() + i * un;
        for (std::size_t j = 0; j < un; ++j)
          if (bv[j] < r[j]) {
            bv[j] = r[j];
            s_arg0[j] = static_cast<Index>(i);
          }
      }
      garray::bench::do_not_optimize(s_arg0.data());
    };
    const auto serial_argmax1 = [&] {  // along axis 1: one best per row
      for (std::size_t i = 0; i < un; ++i) {
        const double* r = sa.data() + i * un;
        std::size_t best = 0;
        double b = r[0];
        for (std::size_t j = 1; j < un; ++j)
          if (b < r[j]) {
            b = r[j];
            best = j;
          }
        s_arg1[i] = static_cast<Index>(best);
      }
      garray::bench::do_not_optimize(s_arg1.data());
    };
    const auto serial_cumsum0 = [&] {
      double* __restrict o = s_c0.data();
      for (std::size_t j = 0; j < un; ++j) o[j] = sa[j];
      for (std::size_t i = 1; i < un; ++i)
        for (std::size_t j = 0; j < un; ++j) o[i * un + j] = o[(i - 1) * un + j] + sa[i * un + j];
      garray::bench::do_not_optimize(o);
    };
    const auto serial_cumsum1 = [&] {
      double* __restrict o = s_c1.data();
      for (std::size_t i = 0; i < un; ++i) {
        double s = 0;
        for (std::size_t j = 0; j < un; ++j) o[i * un + j] = s += sa[i * un + j];
      }
      garray::bench::do_not_optimize(o);
    };
    const auto serial_cumsum_flat = [&] {
      double* __restrict o = s_cf.data();
      double s = 0;
      for (std::size_t i = 0; i < m; ++i) o[i] = s += sa[i];
      garray::bench::do_not_optimize(o);
    };

    auto a = garray::empty<double>(ctx, garray::Shape<2>{n, n});
    garray::generate(a, [n](const garray::Shape<2>& i) { return std::sin(static_cast<double>(i[0] * n + i[1])); });
    Side t[5];
    bool same[5] = {true, true, true, true, true};
    std::vector<Index> g_arg(un);
    std::vector<double> g_c(m);
    using garray::Axis;
    t[0] = side_by_side(ctx.comm(), reps, serial_argmax0, [&] { (void)garray::argmax(a, Axis{0}); });
    t[1] = side_by_side(ctx.comm(), reps, serial_argmax1, [&] { (void)garray::argmax(a, Axis{1}); });
    t[2] = side_by_side(ctx.comm(), reps, serial_cumsum0, [&] { (void)garray::cumsum(a, Axis{0}); });
    t[3] = side_by_side(ctx.comm(), reps, serial_cumsum1, [&] { (void)garray::cumsum(a, Axis{1}); });
    t[4] = side_by_side(ctx.comm(), reps, serial_cumsum_flat, [&] { (void)garray::cumsum(a); });
    for (std::size_t ax = 0; ax < 2; ++ax) {
      const double tsum = median(time_reps(reps, 1, [&] { (void)garray::sum(a, Axis{ax}); }));
      if (root) std::printf("(reference: garray::sum(a, Axis{%zu}) %.4f s)\n", ax, tsum);
      auto r = garray::argmax(a, Axis{ax});
      if (root) {
        r.get_section(garray::Section<1>::full(r.shape()), g_arg);
        same[ax] = g_arg == (ax == 0 ? s_arg0 : s_arg1);
      }
      auto c = garray::cumsum(a, Axis{ax});
      if (root) {
        c.get_section(garray::Section<2>::full(c.shape()), g_c);
        same[2 + ax] = g_c == (ax == 0 ? s_c0 : s_c1);
      }
    }
    {
      auto c = garray::cumsum(a);
      if (root) {
        c.get_section(garray::Section<1>::full(c.shape()), g_c);
        same[4] = g_c == s_cf;
      }
    }
    if (root) {
      const char* names[5] = {"argmax(a, Axis{0})", "argmax(a, Axis{1})", "cumsum(a, Axis{0})", "cumsum(a, Axis{1})",
                              "cumsum(a) (flat)  "};
      std::printf("n=%lld ranks=%d reps=%d (serial and garray alternate; ratio: median of the per-rep ratios)\n",
                  static_cast<long long>(n), ctx.size(), reps);
      for (int k = 0; k < 5; ++k)
        std::printf("%s: serial %.4f s, garray %.4f s, speed ratio %.2fx (same result bitwise: %s)\n", names[k],
                    t[k].serial, t[k].garray, t[k].ratio, same[k] ? "yes" : "no");
    }
  }
  MPI_Finalize();
  return 0;
}

// bench_numpy_axis (issue 15): argmax along an axis and cumsum (along an axis and flattened)
// against serial loops over a plain std::vector, on an n x n double array, side by side in
// one run. Every garray call is one fused owner-computes pass plus its exchange (argmax: the
// per-rank partials and their rank-order combination; cumsum: the evaluation into the new
// array, the local scan, the block totals and the fix-up). The serial loops write into
// preallocated vectors. The bar: at np=1 the fused pass runs at >= 0.9x the serial loop.
//
//   bench_numpy_axis [n] [reps]       medians of `reps` rounds (after one warm-up), serial and
//                                     garray alternating
//
// Afterwards (untimed) every garray result is compared with the serial loop's on rank 0:
// argmax exactly; cumsum bitwise at np=1 (docs/semantics.md: NumPy's bits when the axis is
// not split) and otherwise within the rounding of a prefix sum (see cumsum_close()); exit
// code 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <garray/garray.hpp>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "bench_util.hpp"

using garray::Index;
using garray::bench::median;
using garray::bench::Side;
using garray::bench::side_by_side;
using garray::bench::time_reps;

namespace {

// The prefix sums `got` and `want` of the same terms, `x[first + k * stride]` for the k-th
// sum: a split axis adds the blocks before this rank's (summed on their own) to the local
// prefix, another order of the same additions. Each order's k-th sum lies within
// k * eps / 2 * (|x_0| + ... + |x_k|) of the exact one, so the two differ by at most
// (k + 1) * eps times that running sum. Reports the first element beyond it.
bool cumsum_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::vector<double>& x, std::size_t lines, std::size_t len, std::size_t line_stride,
                  std::size_t stride, const char* what) {
  for (std::size_t l = 0; l < lines; ++l) {
    double abs_sum = 0;
    for (std::size_t k = 0; k < len; ++k) {
      const std::size_t at = l * line_stride + k * stride;
      abs_sum += std::abs(x[at]);
      const double tol = static_cast<double>(k + 1) * std::numeric_limits<double>::epsilon() * abs_sum;
      if (!(std::abs(got[at] - want[at]) <= tol)) {
        garray::bench::report_failure("bench_numpy_axis", what,
                                      "element " + std::to_string(at) + " is " + std::to_string(got[at]) +
                                          ", the serial loop's " + std::to_string(want[at]) + " (tolerance " +
                                          std::to_string(tol) + ")");
        return false;
      }
    }
  }
  return true;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
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
    const bool bitwise = ctx.size() == 1;
    const char* names[5] = {"argmax(a, Axis{0})", "argmax(a, Axis{1})", "cumsum(a, Axis{0})",
                            "cumsum(a, Axis{1})", "cumsum(a) (flat)  "};
    // cumsum k's garray result against the serial one (rank 0): bitwise at np=1, else within
    // the rounding of its prefix sums, which run along lines of `len` elements
    const auto cumsum_same = [&](int k, const std::vector<double>& want, std::size_t lines, std::size_t len,
                                 std::size_t line_stride, std::size_t stride) {
      if (bitwise) {
        for (std::size_t i = 0; i < m; ++i)
          if (!(g_c[i] == want[i])) {
            garray::bench::report_failure("bench_numpy_axis", std::string("garray ") + names[k],
                                          "element " + std::to_string(i) + " is " + std::to_string(g_c[i]) +
                                              ", the serial loop's " + std::to_string(want[i]) +
                                              " (bitwise at np=1)");
            return false;
          }
        return true;
      }
      return cumsum_close(g_c, want, sa, lines, len, line_stride, stride,
                          (std::string("garray ") + names[k]).c_str());
    };
    for (std::size_t ax = 0; ax < 2; ++ax) {
      const double tsum = median(time_reps(reps, 1, [&] { (void)garray::sum(a, Axis{ax}); }));
      if (root) std::printf("(reference: garray::sum(a, Axis{%zu}) %.4f s)\n", ax, tsum);
      auto r = garray::argmax(a, Axis{ax});
      if (root) {
        r.get_section(garray::Section<1>::full(r.shape()), g_arg);
        same[ax] = g_arg == (ax == 0 ? s_arg0 : s_arg1);
        if (!same[ax])
          garray::bench::report_failure("bench_numpy_axis", std::string("garray ") + names[ax],
                                        "differs from the serial loop's indices");
      }
      auto c = garray::cumsum(a, Axis{ax});
      if (root) {
        c.get_section(garray::Section<2>::full(c.shape()), g_c);
        // along axis 0: line j is column j (stride n); along axis 1: line i is row i
        same[2 + ax] = ax == 0 ? cumsum_same(2, s_c0, un, un, 1, un) : cumsum_same(3, s_c1, un, un, un, 1);
      }
    }
    {
      auto c = garray::cumsum(a);
      if (root) {
        c.get_section(garray::Section<1>::full(c.shape()), g_c);
        same[4] = cumsum_same(4, s_cf, 1, m, 0, 1);
      }
    }
    bool ok = true;
    for (bool x : same) ok = ok && x;
    ok = garray::bench::all_ranks_ok(ctx.comm(), ok);
    if (!ok) rc = 1;
    if (root) {
      std::printf("n=%lld ranks=%d reps=%d (serial and garray alternate; ratio: median of the per-rep ratios)\n",
                  static_cast<long long>(n), ctx.size(), reps);
      for (int k = 0; k < 5; ++k)
        std::printf("%s: serial %.4f s, garray %.4f s, speed ratio %.2fx (same result%s: %s)\n", names[k],
                    t[k].serial, t[k].garray, t[k].ratio, k < 2 || bitwise ? " bitwise" : " within rounding",
                    same[k] ? "yes" : "no");
      std::printf("check=%s\n", ok ? "pass" : "FAIL");
    }
  }
  MPI_Finalize();
  return rc;
}

int main(int argc, char** argv) {
  return garray::bench::guarded_main("bench_numpy_axis", argc, argv, bench_main);
}

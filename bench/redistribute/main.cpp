// bench_redistribute - an n x n double array from row slabs to column slabs.
//
// Variants, in one run on the same data:
//   garray      b = garray::redistribute(a, slab(1)): a new array (window from the array
//               cache after the first rep), every rank gets its column block straight into
//               its window, one get per old owner
//   alltoallv   hand-written MPI: pack the row block into per-destination column pieces,
//               MPI_Alltoallv, unpack into the (preallocated, reused) column block
// --warmup untimed reps, then --reps timed reps; in every rep each variant runs once, in an
// order that alternates from rep to rep (a slow spell of the shared machine hits both); each
// run starts after a barrier and its time is the slowest rank's. Prints medians, the ratio
// garray/alltoallv of the medians and the median of the per-rep ratios ("paired"), optionally
// appends CSV rows. Both results are checked against the expected values (exactly: they are
// copies), untimed; exit code 1 when one is wrong.
#include "bench_util.hpp"

#include <garray/garray.hpp>

#include <mpi.h>

#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace gb = garray::bench;
namespace po = boost::program_options;

using garray::Index;

namespace {

double value(Index i, Index j, Index n) { return static_cast<double>(i * n + j); }

// Runs body() reps times after warmups; returns the slowest rank's seconds per rep.
template <class Body>
std::vector<double> timed(MPI_Comm comm, int reps, int warmup, Body&& body) {
  std::vector<double> out;
  for (int r = 0; r < warmup + reps; ++r) {
    MPI_Barrier(comm);
    const gb::Timer t;
    body();
    double s = t.seconds(), m = 0;
    MPI_Allreduce(&s, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (r >= warmup) out.push_back(m);
  }
  return out;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    Index n = 4000;
    int reps = 10, warmup = 2;
    std::string csv;
    po::options_description opts("bench_redistribute options");
    opts.add_options()("help", "show this help")("n", po::value(&n)->default_value(4000), "array extent (n x n doubles)")(
        "reps", po::value(&reps)->default_value(10), "timed repetitions")(
        "warmup", po::value(&warmup)->default_value(2), "untimed repetitions first")(
        "csv", po::value(&csv)->default_value(""), "append results to this CSV file");
    po::variables_map vm;
    const auto check = [&] {
      gb::require(n >= 1, "--n must be at least 1");
      gb::require(reps >= 1 && warmup >= 0, "--reps must be at least 1 and --warmup at least 0");
    };
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_redistribute", check)) {
      MPI_Finalize();
      return 2;
    }
    garray::Context ctx;
    const int p = ctx.size(), me = ctx.rank();
    if (vm.count("help")) {
      if (me == 0) std::cout << opts << '\n';
      MPI_Finalize();
      return 0;
    }
    using D = garray::Distribution<2>;
    if (me == 0) {
      gb::print_run_info(std::cout, "bench_redistribute", p);
      std::cout << "# " << ctx.describe();
      std::cout << "# " << n << " x " << n << " doubles, row slabs -> column slabs\n";
    }

    // ---- garray -----------------------------------------------------------------------
    garray::GlobalArray<double, 2> a(ctx, {n, n}, D::slab(0));
    garray::for_each_owned(a, [&](const garray::Shape<2>&, const garray::Shape<2>& g, double& v) {
      v = value(g[0], g[1], n);
    });
    a.sync();
    auto garray_redistribute = [&] { auto b = garray::redistribute(a, D::slab(1)); };

    // ---- hand-written MPI_Alltoallv ---------------------------------------------------
    const auto rows = D::balanced_bounds(n, p), cols = D::balanced_bounds(n, p);
    const Index r0 = rows[static_cast<std::size_t>(me)], r1 = rows[static_cast<std::size_t>(me) + 1];
    const Index c0 = cols[static_cast<std::size_t>(me)], c1 = cols[static_cast<std::size_t>(me) + 1];
    std::vector<double> src(static_cast<std::size_t>((r1 - r0) * n)), dst(static_cast<std::size_t>(n * (c1 - c0)));
    for (Index i = r0; i < r1; ++i)
      for (Index j = 0; j < n; ++j) src[static_cast<std::size_t>((i - r0) * n + j)] = value(i, j, n);
    std::vector<double> sendbuf(src.size()), recvbuf(dst.size());
    std::vector<int> scount(static_cast<std::size_t>(p)), sdisp(static_cast<std::size_t>(p)),
        rcount(static_cast<std::size_t>(p)), rdisp(static_cast<std::size_t>(p));
    for (int q = 0, so = 0, ro = 0; q < p; ++q) {
      const auto uq = static_cast<std::size_t>(q);
      scount[uq] = static_cast<int>((r1 - r0) * (cols[uq + 1] - cols[uq]));
      rcount[uq] = static_cast<int>((rows[uq + 1] - rows[uq]) * (c1 - c0));
      sdisp[uq] = so;
      rdisp[uq] = ro;
      so += scount[uq];
      ro += rcount[uq];
    }
    // Pointers by data() + offset: with more ranks than rows a rank's vectors are empty, and
    // &v[k] of an empty vector (or one past its end) is undefined.
    auto alltoallv = [&] {
      std::size_t k = 0;  // pack: for each destination, my rows x its columns
      for (int q = 0; q < p; ++q) {
        const auto uq = static_cast<std::size_t>(q);
        for (Index i = 0; i < r1 - r0; ++i) {
          const double* row = src.data() + static_cast<std::size_t>(i * n + cols[uq]);
          std::copy(row, row + (cols[uq + 1] - cols[uq]), sendbuf.data() + k);
          k += static_cast<std::size_t>(cols[uq + 1] - cols[uq]);
        }
      }
      MPI_Alltoallv(sendbuf.data(), scount.data(), sdisp.data(), MPI_DOUBLE, recvbuf.data(), rcount.data(),
                    rdisp.data(), MPI_DOUBLE, ctx.comm());
      k = 0;  // unpack: from each source, its rows x my columns
      const Index w = c1 - c0;
      for (int q = 0; q < p; ++q) {
        const auto uq = static_cast<std::size_t>(q);
        const std::size_t nrows = static_cast<std::size_t>(rows[uq + 1] - rows[uq]);
        std::copy(recvbuf.data() + k, recvbuf.data() + k + nrows * static_cast<std::size_t>(w),
                  dst.data() + static_cast<std::size_t>(rows[uq] * w));
        k += nrows * static_cast<std::size_t>(w);
      }
    };

    // ---- side by side -----------------------------------------------------------------
    std::vector<double> t_garray, t_mpi;
    for (int r = 0; r < warmup + reps; ++r)
      for (int k = 0; k < 2; ++k) {
        const bool garray_turn = (k == 0) == (r % 2 == 0);
        const double t = garray_turn ? timed(ctx.comm(), 1, 0, garray_redistribute)[0]
                                     : timed(ctx.comm(), 1, 0, alltoallv)[0];
        if (r >= warmup) (garray_turn ? t_garray : t_mpi).push_back(t);
      }

    // ---- both results against the values (untimed) -----------------------------------
    bool ok_garray = true, ok_mpi = true;
    {
      auto b = garray::redistribute(a, D::slab(1));
      garray::for_each_owned(b, [&](const garray::Shape<2>&, const garray::Shape<2>& g, double& v) {
        if (ok_garray && v != value(g[0], g[1], n)) {
          gb::report_failure("bench_redistribute", "garray",
                             "element (" + std::to_string(g[0]) + ", " + std::to_string(g[1]) + ") is " +
                                 std::to_string(v) + ", want " + std::to_string(value(g[0], g[1], n)));
          ok_garray = false;
        }
      });
    }
    for (Index i = 0; i < n && ok_mpi; ++i)
      for (Index j = c0; j < c1; ++j)
        if (const double v = dst[static_cast<std::size_t>(i * (c1 - c0) + j - c0)]; v != value(i, j, n)) {
          gb::report_failure("bench_redistribute", "alltoallv",
                             "element (" + std::to_string(i) + ", " + std::to_string(j) + ") is " +
                                 std::to_string(v) + ", want " + std::to_string(value(i, j, n)));
          ok_mpi = false;
          break;
        }
    const bool ok = gb::all_ranks_ok(ctx.comm(), ok_garray && ok_mpi);

    const double g = gb::median(t_garray), m = gb::median(t_mpi);
    if (me == 0) {
      std::printf("variant      median_ms\n");
      std::printf("garray       %9.3f\n", g * 1e3);
      std::printf("alltoallv    %9.3f\n", m * 1e3);
      std::printf("ratio garray/alltoallv = %.3f, paired %.3f  (bar: <= 1.2)   results %s\n", g / m,
                  gb::paired_ratio(t_garray, t_mpi), ok ? "verified" : "WRONG");
      gb::CsvWriter out(csv, "bench,n,ranks,variant,median_s");
      out.row("redistribute", n, p, "garray", g);
      out.row("redistribute", n, p, "alltoallv", m);
    }
    if (!ok) rc = 1;
  }
  MPI_Finalize();
  return rc;
}

int main(int argc, char** argv) {
  return garray::bench::guarded_main("bench_redistribute", argc, argv, bench_main);
}

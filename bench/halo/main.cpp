// bench_halo - ghost-cell exchange of width --width on an n x n double array.
//
// Variants, in one run on the same decomposition (garray's blocked() grid, so row slabs at
// 2 ranks and 2 x 2 blocks at 4):
//   garray     garray::update_ghosts(u) on a GlobalArray with ghost {w, w} (non-periodic):
//              one strided get per neighbour region straight into the frame, corners included
//   sendrecv   hand-written MPI: a padded local block, MPI_Sendrecv of rows with the up/down
//              neighbours, then of columns (MPI_Type_vector, ghost rows included, so corners
//              arrive too) with the left/right neighbours; MPI_PROC_NULL at the edges
// --warmup untimed reps, then --reps timed reps; in every rep each variant runs once, in an
// order that alternates from rep to rep (a slow spell of the shared machine hits both), after
// a barrier and timed as the slowest rank; an inner loop of --inner exchanges per rep keeps
// reps long enough to time. Prints medians per exchange, the ratio garray/sendrecv of the
// medians and the median of the per-rep ratios ("paired"). Before the last rep (untimed)
// every owned value changes, so the frames checked afterwards (against the values, exactly:
// ghosts are copies) must come from that rep's exchanges: a ghost update that works only once
// fails. Exit code 1 when a frame is wrong; 2 for a bad option, e.g. a --width wider than a
// block (the Sendrecv copies only the neighbour's own block; garray's frame may span several).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <garray/garray.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "bench_util.hpp"

namespace gb = garray::bench;
namespace po = boost::program_options;

using garray::Index;

namespace {

double value(Index i, Index j, Index n) { return static_cast<double>(i * n + j + 1); }

template <class Body>
std::vector<double> timed(MPI_Comm comm, int reps, int warmup, int inner, Body&& body) {
  std::vector<double> out;
  for (int r = 0; r < warmup + reps; ++r) {
    MPI_Barrier(comm);
    const gb::Timer t;
    for (int k = 0; k < inner; ++k) body();
    double s = t.seconds() / inner, m = 0;
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
    Index n = 4000, w = 1;
    int reps = 15, warmup = 3, inner = 20;
    std::string csv;
    po::options_description opts("bench_halo options");
    opts.add_options()("help", "show this help")("n", po::value(&n)->default_value(4000), "array extent (n x n doubles)")(
        "width", po::value(&w)->default_value(1), "ghost width")("reps", po::value(&reps)->default_value(15),
                                                                 "timed repetitions")(
        "warmup", po::value(&warmup)->default_value(3), "untimed repetitions first")(
        "inner", po::value(&inner)->default_value(20), "exchanges per repetition")(
        "csv", po::value(&csv)->default_value(""), "append results to this CSV file");
    po::variables_map vm;
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const auto check = [&] {
      gb::require(n >= 1, "--n must be at least 1");
      gb::require(w >= 1, "--width must be at least 1");
      gb::require(reps >= 1 && warmup >= 0 && inner >= 1,
                  "--reps and --inner must be at least 1, --warmup at least 0");
      const auto d = garray::Distribution<2>::blocked().resolve({n, n}, nranks, "bench_halo");
      Index narrowest = n;
      for (int r = 0; r < d.nblocks(); ++r)
        if (const auto b = d.block(r); !b.empty())
          narrowest = std::min({narrowest, b.extent(0), b.extent(1)});
      gb::require(w <= narrowest, "--width " + std::to_string(w) + " is wider than the narrowest block (" +
                                      std::to_string(narrowest) + " at " + std::to_string(nranks) +
                                      " ranks): the hand-written exchange reads only its neighbours' blocks");
    };
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_halo", check)) {
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
    garray::GlobalArray<double, 2> u(ctx, {n, n}, D::blocked(), {w, w});
    const auto& dist = u.distribution();
    if (me == 0) {
      gb::print_run_info(std::cout, "bench_halo", p);
      std::cout << "# " << ctx.describe();
      std::cout << "# " << n << " x " << n << " doubles, ghost width " << w << ", " << dist.describe() << "\n";
    }
    garray::for_each_owned(u, [&](const garray::Shape<2>&, const garray::Shape<2>& g, double& v) {
      v = value(g[0], g[1], n);
    });
    u.sync();

    // ---- garray -----------------------------------------------------------------------
    auto garray_exchange = [&] { garray::update_ghosts(u); };

    // ---- hand-written MPI_Sendrecv ----------------------------------------------------
    const auto box = u.local_box();
    const bool mine = me < dist.nblocks() && !box.empty();
    const Index rows = box.extent(0), cols = box.extent(1), ld = cols + 2 * w;
    std::vector<double> blk(mine ? static_cast<std::size_t>((rows + 2 * w) * ld) : 0, 0.0);
    auto at = [&](Index i, Index j) -> double& {  // block-local padded indices, i, j in [-w, extent + w)
      return blk[static_cast<std::size_t>((i + w) * ld + (j + w))];
    };
    if (mine)
      for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < cols; ++j) at(i, j) = value(box.lo[0] + i, box.lo[1] + j, n);
    int up = MPI_PROC_NULL, down = MPI_PROC_NULL, left = MPI_PROC_NULL, right = MPI_PROC_NULL;
    if (mine) {
      const auto c = dist.coords(me);
      // A neighbour that owns nothing (n smaller than the grid) takes no part in the exchange:
      // MPI_PROC_NULL, as at the edges, or this rank would wait for it forever. Balanced
      // bounds put empty blocks last, so no owner lies beyond one.
      auto nb = [&](int d0, int d1) {
        auto cc = c;
        cc[0] += d0;
        cc[1] += d1;
        if (cc[0] < 0 || cc[0] >= dist.procs()[0] || cc[1] < 0 || cc[1] >= dist.procs()[1]) return MPI_PROC_NULL;
        const int r = dist.rank_of(cc);
        return dist.block(r).empty() ? MPI_PROC_NULL : r;
      };
      up = nb(-1, 0);
      down = nb(1, 0);
      left = nb(0, -1);
      right = nb(0, 1);
    }
    MPI_Datatype rowblock, colblock;  // w interior rows; w columns over all padded rows
    MPI_Type_vector(static_cast<int>(w), static_cast<int>(cols), static_cast<int>(ld), MPI_DOUBLE, &rowblock);
    MPI_Type_commit(&rowblock);
    MPI_Type_vector(static_cast<int>(rows + 2 * w), static_cast<int>(w), static_cast<int>(ld), MPI_DOUBLE, &colblock);
    MPI_Type_commit(&colblock);
    auto sendrecv = [&] {
      if (!mine) return;
      // rows: my first w rows go up, the rows below me arrive in my bottom frame; and back
      MPI_Sendrecv(&at(0, 0), 1, rowblock, up, 0, &at(rows, 0), 1, rowblock, down, 0, ctx.comm(), MPI_STATUS_IGNORE);
      MPI_Sendrecv(&at(rows - w, 0), 1, rowblock, down, 1, &at(-w, 0), 1, rowblock, up, 1, ctx.comm(),
                   MPI_STATUS_IGNORE);
      // columns over all padded rows (corners ride along)
      MPI_Sendrecv(&at(-w, 0), 1, colblock, left, 2, &at(-w, cols), 1, colblock, right, 2, ctx.comm(),
                   MPI_STATUS_IGNORE);
      MPI_Sendrecv(&at(-w, cols - w), 1, colblock, right, 3, &at(-w, -w), 1, colblock, left, 3, ctx.comm(),
                   MPI_STATUS_IGNORE);
    };

    // ---- side by side -----------------------------------------------------------------
    const auto bytes0 = ctx.stats()[garray::Op::get].remote_bytes + ctx.stats()[garray::Op::get].local_bytes;
    std::vector<double> t_garray, t_mpi;
    double shift = 0;  // added to every owned value before the last rep
    for (int r = 0; r < warmup + reps; ++r) {
      if (r == warmup + reps - 1) {
        shift = 0.5 * (r + 1);  // a multiple of 0.5: value + shift is exact in double
        garray::for_each_owned(
            u, [&](const garray::Shape<2>&, const garray::Shape<2>&, double& v) { v += shift; });
        u.sync();
        if (mine)
          for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < cols; ++j) at(i, j) += shift;
      }
      for (int k = 0; k < 2; ++k) {
        const bool garray_turn = (k == 0) == (r % 2 == 0);
        const double t = garray_turn ? timed(ctx.comm(), 1, 0, inner, garray_exchange)[0]
                                     : timed(ctx.comm(), 1, 0, inner, sendrecv)[0];
        if (r >= warmup) (garray_turn ? t_garray : t_mpi).push_back(t);
      }
    }
    const double fetched = static_cast<double>(ctx.stats()[garray::Op::get].remote_bytes +
                                               ctx.stats()[garray::Op::get].local_bytes - bytes0) /
                           ((reps + warmup) * inner);
    MPI_Type_free(&rowblock);
    MPI_Type_free(&colblock);

    // ---- both frames against the current values (untimed) --------------------------------
    bool ok_garray = true, ok_mpi = true;
    if (mine) {
      auto b = u.access();
      for (Index i = -w; i < rows + w; ++i)
        for (Index j = -w; j < cols + w; ++j) {
          const Index gi = box.lo[0] + i, gj = box.lo[1] + j;
          if (gi < 0 || gi >= n || gj < 0 || gj >= n) continue;
          const double want = value(gi, gj, n) + shift;
          const char* where = i < 0 || i >= rows || j < 0 || j >= cols ? "ghost" : "owned";
          if (ok_garray && b.view()[gi][gj] != want) {
            gb::report_failure("bench_halo", "garray",
                               std::string(where) + " cell (" + std::to_string(gi) + ", " +
                                   std::to_string(gj) + ") is " + std::to_string(b.view()[gi][gj]) +
                                   ", want " + std::to_string(want));
            ok_garray = false;
          }
          if (ok_mpi && at(i, j) != want) {
            gb::report_failure("bench_halo", "sendrecv",
                               std::string(where) + " cell (" + std::to_string(gi) + ", " +
                                   std::to_string(gj) + ") is " + std::to_string(at(i, j)) + ", want " +
                                   std::to_string(want));
            ok_mpi = false;
          }
        }
    }
    const bool ok = gb::all_ranks_ok(ctx.comm(), ok_garray && ok_mpi);
    const double g = gb::median(t_garray), m = gb::median(t_mpi), paired = gb::paired_ratio(t_garray, t_mpi);
    if (me == 0) {
      std::printf("variant      median_us_per_exchange\n");
      std::printf("garray       %9.2f   (rank 0 fetched %.0f bytes per exchange)\n", g * 1e6, fetched);
      std::printf("sendrecv     %9.2f\n", m * 1e6);
      std::printf("ratio garray/sendrecv = %.3f, paired %.3f  (bar: <= 1.2)   frames %s\n", g / m, paired,
                  ok ? "verified" : "WRONG");
      gb::CsvWriter out(csv, "bench,n,width,ranks,variant,median_s");
      out.row("halo", n, w, p, "garray", g);
      out.row("halo", n, w, p, "sendrecv", m);
    }
    if (!ok) rc = 1;
  }
  MPI_Finalize();
  return rc;
}

int main(int argc, char** argv) { return garray::bench::guarded_main("bench_halo", argc, argv, bench_main); }

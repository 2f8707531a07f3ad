// bench_halo - ghost-cell exchange of width --width on an n x n double array.
//
// Variants, in one run on the same decomposition (garray's blocked() grid, so row slabs at
// 2 ranks and 2 x 2 blocks at 4):
//   garray     garray::update_ghosts(u) on a GlobalArray with ghost {w, w} (non-periodic):
//              one strided get per neighbour region straight into the frame, corners included
//   sendrecv   hand-written MPI: a padded local block, MPI_Sendrecv of rows with the up/down
//              neighbours, then of columns (MPI_Type_vector, ghost rows included, so corners
//              arrive too) with the left/right neighbours; MPI_PROC_NULL at the edges
// Per variant: --warmup untimed reps, then --reps timed reps, each after a barrier and timed
// as the slowest rank; an inner loop of --inner exchanges per rep keeps reps long enough to
// time. Prints medians per exchange and the ratio garray/sendrecv; the frames of both are
// compared once.
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

int main(int argc, char** argv) {
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
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_halo")) {
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
    const auto bytes0 = ctx.stats()[garray::Op::get].remote_bytes + ctx.stats()[garray::Op::get].local_bytes;
    const auto t_garray = timed(ctx.comm(), reps, warmup, inner, [&] { garray::update_ghosts(u); });
    const double fetched = static_cast<double>(ctx.stats()[garray::Op::get].remote_bytes +
                                               ctx.stats()[garray::Op::get].local_bytes - bytes0) /
                           ((reps + warmup) * inner);

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
      auto nb = [&](int d0, int d1) {
        auto cc = c;
        cc[0] += d0;
        cc[1] += d1;
        if (cc[0] < 0 || cc[0] >= dist.procs()[0] || cc[1] < 0 || cc[1] >= dist.procs()[1]) return MPI_PROC_NULL;
        return dist.rank_of(cc);
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
    const auto t_mpi = timed(ctx.comm(), reps, warmup, inner, sendrecv);
    MPI_Type_free(&rowblock);
    MPI_Type_free(&colblock);

    // ---- both frames must agree ----------------------------------------------------------
    bool ok = true;
    if (mine) {
      auto b = u.access();
      for (Index i = -w; i < rows + w; ++i)
        for (Index j = -w; j < cols + w; ++j) {
          const Index gi = box.lo[0] + i, gj = box.lo[1] + j;
          if (gi < 0 || gi >= n || gj < 0 || gj >= n) continue;
          ok = ok && b.view()[gi][gj] == at(i, j) && at(i, j) == value(gi, gj, n);
        }
    }
    {
      int in = ok ? 1 : 0, all = 0;
      MPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, ctx.comm());
      ok = all == 1;
    }
    const double g = gb::median(t_garray), m = gb::median(t_mpi);
    if (me == 0) {
      std::printf("variant      median_us_per_exchange\n");
      std::printf("garray       %9.2f   (rank 0 fetched %.0f bytes per exchange)\n", g * 1e6, fetched);
      std::printf("sendrecv     %9.2f\n", m * 1e6);
      std::printf("ratio garray/sendrecv = %.3f  (bar: <= 1.2)   frames %s\n", g / m, ok ? "verified" : "WRONG");
      gb::CsvWriter out(csv, "bench,n,width,ranks,variant,median_s");
      out.row("halo", n, w, p, "garray", g);
      out.row("halo", n, w, p, "sendrecv", m);
    }
    if (!ok) rc = 1;
  }
  MPI_Finalize();
  return rc;
}

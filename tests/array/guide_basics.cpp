// The user guide's "Basics" section, compiled and checked (docs/user-guide.md).
#include "support/test_support.hpp"

#include <algorithm>
#include <sstream>

using garray::idx, garray::range, garray::all, garray::_;

TEST_CASE("user guide basics: one-sided operations, local loops, statistics") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {1000, 1000});
  std::vector<double> buf(100);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(i);
  if (ctx.rank() == 0) {
    a.put(idx[range(0, 10)][range(0, 10)], std::span<const double>(buf));
    a.fence();
    a.accumulate(idx[range(0, 10)][range(_, _, -100)], std::span<const double>(buf), 0.5);  // 10x10
  }
  a.sync();
  std::vector<double> got(100);
  a.get(idx[3][range(0, 100)], std::span(got));
  CHECK(got[5] == 35.0);
  CHECK(a.get(idx[0][999]) == 0.5 * 0.0);
  CHECK(a.get(idx[9][99]) == 0.5 * 99.0);
  boost::multi_array<double, 2> patch = a.get(idx[range(0, 10)][range(0, 10)]);
  CHECK(patch[9][9] == 99.0);
  std::vector<double> row(1000);
  auto r = a.get_nb(idx[5], std::span(row));
  r.wait();
  CHECK(row[2] == 52.0);
  a.sync();
  std::vector<garray::Shape<2>> where{{0, 0}, {999, 3}, {-1, -1}};
  std::vector<double> vals(3);
  a.gather(where, vals);
  CHECK(vals[0] == 0.0);
  a.sync();
  a.scatter_acc(where, std::vector<double>{1.0, 1.0, 1.0}, 2.0);
  a.sync();
  CHECK(a.get(idx[-1][-1]) == 2.0 * ctx.size());
  garray::GlobalArray<std::int64_t, 1> counter(ctx, {1});
  const std::int64_t ticket = counter.read_inc({0}, 1);
  CHECK(ticket >= 0);
  CHECK(ticket < ctx.size());
  {
    auto blk = a.access();
    auto& v = blk.view();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) v[i][j] *= 2;
  }
  a.sync();
  CHECK(a.get(idx[3][5]) == 70.0);
  std::ostringstream os;
  garray::print_stats(ctx, os);
  if (ctx.rank() == 0) CHECK(os.str().find("get.calls") != std::string::npos);
}

TEST_CASE("user guide basics: ctx.agree and throw_error (Errors)") {
  garray::Context ctx;
  const std::vector<double> mine = ctx.rank() == 0 ? std::vector<double>{} : std::vector<double>{1.0, 3.0 + ctx.rank()};
  const auto step = [&] {
    return ctx.agree("app: read input", [&] {
      if (mine.empty()) garray::throw_error<garray::InvalidArgument>("app: no input rows");
      return *std::max_element(mine.begin(), mine.end());
    });
  };
  if (ctx.size() == 1) {
    CHECK_THROWS_AS(step(), garray::InvalidArgument);  // rank 0 has no rows
  } else if (ctx.rank() == 0) {
    CHECK_THROWS_WITH_AS(step(), doctest::Contains("app: no input rows [rank 0/"), garray::InvalidArgument);
  } else {
    try {
      step();
      FAIL("expected CollectiveFailure");
    } catch (const garray::CollectiveFailure& e) {
      CHECK(e.failed_rank() == 0);
      CHECK(test::contains(e.what(), "app: no input rows"));
    }
  }
  // The context still works, and a step that succeeds everywhere returns its value.
  CHECK(ctx.agree("app: ok", [&] { return ctx.rank() * 2; }) == ctx.rank() * 2);
  CHECK(ctx.agree(true));
  CHECK(ctx.agree(ctx.rank() != ctx.size() - 1) == false);
  CHECK_THROWS_AS(garray::check_mpi(MPI_ERR_ARG, "MPI_Fake"), garray::MpiError);
}


TEST_CASE("user guide: a context numbered node by node") {
  // Run on the real nodes, and with round-robin "nodes" (GARRAY_NODE_RANKS=2,cyclic: world
  // 0,2 | 1,3), where it renumbers from 3 ranks on.
  const char* nodes = std::getenv("GARRAY_NODE_RANKS");
  const std::string real = nodes ? nodes : "";
  for (const char* setting : {nodes ? real.c_str() : nullptr, "2,cyclic"}) {
    CAPTURE(setting ? setting : "unset");
    const test::ScopedEnv env("GARRAY_NODE_RANKS", setting);
    // The guide's snippet ("Distributions").
    garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::node);
    garray::GlobalArray<double, 2> u(ctx, {64, 64});  // blocked: consecutive blocks share a node
    int world_rank = 0, in_ctx = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);  // equal to ctx.rank() unless ctx.renumbered()
    MPI_Comm_rank(ctx.comm(), &in_ctx);          // always ctx.rank(): use ctx.comm() with ctx's ranks
    // Checked: this rank's block is its rank's, the numbering is the context's, and the ranks
    // of this node hold consecutive numbers (so consecutive grid positions).
    CHECK(in_ctx == ctx.rank());
    CHECK(u.box_of(ctx.rank()) == u.local_box());
    if (!ctx.renumbered()) CHECK(world_rank == ctx.rank());
    if (world_rank == 0) CHECK(ctx.rank() == 0);
    int node_size = 0, node_rank = 0, lowest = 0;
    MPI_Comm_size(ctx.node_comm(), &node_size);
    MPI_Comm_rank(ctx.node_comm(), &node_rank);
    const int mine = ctx.rank();
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, ctx.node_comm());
    CHECK(ctx.rank() == lowest + node_rank);
    if (setting && std::string_view(setting) == "2,cyclic" && ctx.size() >= 3) CHECK(ctx.renumbered());
  }
}

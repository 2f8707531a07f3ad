// The user guide's examples of the array layer (docs/user-guide.md: "Basics", "Data
// movement", "Array cache"), compiled and checked. The code between `// guide-example: <name>`
// and `// end guide-example` is the guide's, verbatim (tests/docs/check_examples.py checks
// it); the setup it needs comes before, the checks against a serial expectation after.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>

#include "support/cout_to.hpp"
#include "support/test_support.hpp"

using garray::idx, garray::range, garray::all, garray::_;

TEST_CASE("user guide basics: one-sided operations, local loops, statistics") {
  garray::Context ctx;
  const double p = ctx.size();
  garray::GlobalArray<double, 2> a(ctx, {1000, 1000});  // as in "A program"
  const auto at = [](garray::Index i, garray::Index j) { return static_cast<double>(1000 * i + j); };
  {  // a[i, j] = 1000 i + j (exact in double)
    auto blk = a.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = at(i, j);
  }
  a.sync();
  // clang-format off
  // guide-example: one-sided operations
  std::vector<double> buf(100);
  a.get(idx[3][range(0, 100)], std::span(buf));          // complete on return
  if (ctx.rank() == 0)                                    // one writer: puts from several ranks conflict
    a.put(idx[range(10, 20)][range(10, 20)], std::span<const double>(buf));  // buf reusable
  a.accumulate(idx[range(20, 30)][range(_, _, -100)], std::span<const double>(buf), 0.5);  // 10x10, reversed columns
  a.fence();                                              // my writes complete remotely
  a.sync();                                               // everyone's writes visible everywhere
  boost::multi_array<double, 2> patch = a.get(idx[range(10, 20)][range(10, 20)]);  // holds buf
  double v = a.get(idx[-1][-1]);                          // one element

  std::vector<double> row(1000);
  auto r = a.get_nb(idx[5], std::span(row));              // nonblocking
  r.wait();

  std::vector<garray::Shape<2>> where{{0, 0}, {999, 3}, {-1, -1}};
  std::vector<double> vals(3);
  a.gather(where, vals);                                  // NGA_Gather
  a.sync();                                               // every rank has read before anyone adds
  a.scatter_acc(where, vals, 2.0);                        // NGA_Scatter_acc (atomic)

  garray::GlobalArray<std::int64_t, 1> counter(ctx, {1});
  std::int64_t ticket = counter.read_inc({0}, 1);         // shared task counter
  // end guide-example
  // clang-format on
  bool ok = true;
  for (garray::Index k = 0; k < 100; ++k) ok = ok && buf[static_cast<std::size_t>(k)] == at(3, k);
  CHECK(ok);
  REQUIRE(patch.shape()[0] == 10);
  REQUIRE(patch.shape()[1] == 10);
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t j = 0; j < 10; ++j) ok = ok && patch[i][j] == buf[10 * i + j];  // rank 0's put
  CHECK(ok);
  CHECK(v == at(999, 999));
  for (garray::Index k = 0; k < 1000; ++k) ok = ok && row[static_cast<std::size_t>(k)] == at(5, k);
  CHECK(ok);
  CHECK(vals == std::vector<double>{at(0, 0), at(999, 3), at(999, 999)});
  CHECK(ticket >= 0);
  CHECK(ticket < ctx.size());
  a.sync();  // every rank's scatter_acc is complete
  // the accumulate: a[20 + i, 999 - 100 j] += 0.5 buf[10 i + j] from every rank
  const auto acc = a.get(idx[range(20, 30)][range(_, _, -100)]);
  for (garray::Index i = 0; i < 10; ++i)
    for (garray::Index j = 0; j < 10; ++j)
      ok = ok && acc[i][j] == at(20 + i, 999 - 100 * j) + p * 0.5 * buf[static_cast<std::size_t>(10 * i + j)];
  CHECK(ok);
  CHECK(a.get(idx[20][998]) == at(20, 998));  // between the accumulated columns
  CHECK(a.get(idx[10][9]) == at(10, 9));      // next to the put patch
  // the scatter_acc: every rank added 2 * the gathered values
  CHECK(a.get(idx[0][0]) == 0.0);
  CHECK(a.get(idx[999][3]) == at(999, 3) * (1.0 + 2.0 * p));
  CHECK(a.get(idx[999][999]) == at(999, 999) * (1.0 + 2.0 * p));
  a.sync();  // every rank has read before the local loop writes

  // clang-format off
  // guide-example: owner-computes loop on the local block
  {
    auto blk = a.access();                 // MPI_Win_sync on entry and exit
    auto& v = blk.view();                  // boost::multi_array_ref, GLOBAL index bases
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) v[i][j] *= 2;
  }
  a.sync();                                // now visible to remote gets
  // end guide-example
  // clang-format on
  CHECK(a.get(idx[3][5]) == 2.0 * at(3, 5));
  CHECK(a.get(idx[15][17]) == 2.0 * buf[57]);
  CHECK(a.get(idx[999][3]) == 2.0 * at(999, 3) * (1.0 + 2.0 * p));
  CHECK(a.get(idx[20][999]) == 2.0 * (at(20, 999) + p * 0.5 * buf[0]));
  std::ostringstream os;
  garray::print_stats(ctx, os);
  if (ctx.rank() == 0) CHECK(os.str().find("get.calls") != std::string::npos);
}

TEST_CASE("user guide basics: ctx.agree and throw_error (Errors)") {
  garray::Context ctx;
  const double tol = 1e-8;
  // One step of the guide's application: this rank's input rows and its residual.
  const auto step = [&](const std::vector<double>& mine, double residual) {
    // clang-format off
    // guide-example: errors, ctx.agree
    // Every rank runs the lambda; if it throws on rank r, rank r rethrows its exception and
    // every other rank throws garray::CollectiveFailure carrying r's message.
    const double local_max = ctx.agree("app: read input", [&] {
      if (mine.empty()) garray::throw_error<garray::InvalidArgument>("app: no input rows");
      return *std::max_element(mine.begin(), mine.end());
    });
    const bool all_converged = ctx.agree(residual < tol);  // true on every rank iff true on all
    // end guide-example
    // clang-format on
    return std::make_pair(local_max, all_converged);
  };
  const std::vector<double> rows{1.0, 3.0 + ctx.rank()};
  const auto converged = step(rows, 0.0);  // input everywhere, every rank converged
  CHECK(converged.first == 3.0 + ctx.rank());
  CHECK(converged.second);
  const auto one_behind = step(rows, ctx.rank() == ctx.size() - 1 ? 1.0 : 0.0);  // the last rank did not
  CHECK(one_behind.first == 3.0 + ctx.rank());
  CHECK_FALSE(one_behind.second);
  // Rank 0 has no input rows: it rethrows its error, every other rank CollectiveFailure.
  const std::vector<double> some = ctx.rank() == 0 ? std::vector<double>{} : rows;
  if (ctx.size() == 1) {
    CHECK_THROWS_AS((void)step(some, 0.0), garray::InvalidArgument);
  } else if (ctx.rank() == 0) {
    CHECK_THROWS_WITH_AS((void)step(some, 0.0), doctest::Contains("app: no input rows [rank 0/"),
                         garray::InvalidArgument);
  } else {
    try {
      (void)step(some, 0.0);
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
    // clang-format off
    // guide-example: distributions, a context numbered node by node
    garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::node);
    garray::GlobalArray<double, 2> u(ctx, {64, 64});  // blocked: consecutive blocks share a node
    int world_rank = 0, in_ctx = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);  // equal to ctx.rank() unless ctx.renumbered()
    MPI_Comm_rank(ctx.comm(), &in_ctx);          // always ctx.rank(): use ctx.comm() with ctx's ranks
    // end guide-example
    // clang-format on
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

TEST_CASE("user guide: data movement (scatter_from, gather, from_local, redistribute, transpose)") {
  // clang-format off
  // guide-example: data movement, scatter_from
  using D = garray::Distribution<2>;
  garray::Context ctx;

  // One rank holds the whole array: each rank receives only its block, put one-sidedly
  // by the root straight into its window. Other ranks pass an empty array.
  boost::multi_array<double, 2> full, none;
  if (ctx.rank() == 0) full.resize(boost::extents[1000][800]);   // ... fill it ...
  // end guide-example
  // clang-format on
  const auto value = [](garray::Index i, garray::Index j) { return static_cast<double>(800 * i + j); };
  if (ctx.rank() == 0)
    for (garray::Index i = 0; i < 1000; ++i)
      for (garray::Index j = 0; j < 800; ++j) full[i][j] = value(i, j);
  // clang-format off
  // guide-example: data movement, gather and from_local
  auto a = garray::scatter_from(ctx, 0, ctx.rank() == 0 ? full : none, {1000, 800}, D::slab(0));

  auto on_root  = garray::gather(a, 0);      // boost::multi_array on rank 0, empty elsewhere
  auto everyone = garray::allgather(a);      // on every rank

  // Each rank brings its own array; they are stacked along axis 0 in rank order. Sizes along
  // the axis may differ (0 is fine); the other extents must agree. One copy into the window.
  boost::multi_array<double, 2> mine(boost::extents[3 + ctx.rank()][800]);
  // end guide-example
  // clang-format on
  const auto local_value = [](int r, garray::Index i, garray::Index j) {
    return static_cast<double>(1000000 * r + 800 * i + j);
  };
  for (garray::Index i = 0; i < 3 + ctx.rank(); ++i)
    for (garray::Index j = 0; j < 800; ++j) mine[i][j] = local_value(ctx.rank(), i, j);
  // clang-format off
  // guide-example: data movement, redistribute and transpose
  auto w = garray::from_local(ctx, mine, 0);  // irregular slab distribution along axis 0

  // Change the distribution (caput's redistribute(axis), PencilArrays' transposes):
  // every rank fetches its new block from the old owners straight into its new window.
  auto cols = garray::redistribute(a, D::slab(1));
  auto blocks = garray::redistribute(a, D::blocked(), {1, 1});  // 2-d blocks, with ghost cells
  // Permute dimensions (numpy transpose(axes)): t[j][i] == a[i][j].
  auto t = garray::transpose(a, {1, 0}, D::slab(0));
  // end guide-example
  // clang-format on
  const int p = ctx.size();
  // scatter_from: slab(0), every element where the root had it
  CHECK(a.distribution().procs() == std::array<int, 2>{p, 1});
  const std::vector<double> want = test::whole_array(a);
  bool ok = want.size() == 800000;
  for (garray::Index i = 0; ok && i < 1000; ++i)
    for (garray::Index j = 0; j < 800; ++j)
      ok = ok && want[static_cast<std::size_t>(800 * i + j)] == value(i, j);
  CHECK(test::all_ranks(ok));
  // gather / allgather
  if (ctx.rank() == 0) {
    CHECK(on_root.num_elements() == 800000);
    CHECK(std::equal(on_root.data(), on_root.data() + on_root.num_elements(), want.begin()));
  } else {
    CHECK(on_root.num_elements() == 0);
  }
  CHECK(everyone.num_elements() == 800000);
  CHECK(std::equal(everyone.data(), everyone.data() + everyone.num_elements(), want.begin()));
  // from_local: the ranks' arrays stacked in rank order
  const garray::Index rows = 3 * p + p * (p - 1) / 2;
  CHECK(w.shape() == garray::Shape<2>{rows, 800});
  const std::vector<double> stacked = test::whole_array(w);
  ok = true;
  garray::Index row0 = 0;
  for (int r = 0; r < p; ++r) {
    CHECK(w.box_of(r) == garray::Box<2>{{row0, 0}, {row0 + 3 + r, 800}});
    for (garray::Index i = 0; i < 3 + r; ++i)
      for (garray::Index j = 0; j < 800; ++j)
        ok = ok && stacked[static_cast<std::size_t>(800 * (row0 + i) + j)] == local_value(r, i, j);
    row0 += 3 + r;
  }
  CHECK(ok);
  // redistribute: the same elements in the new distributions (and ghost width)
  CHECK(cols.distribution().procs() == std::array<int, 2>{1, p});
  CHECK(test::whole_array(cols) == want);
  CHECK(blocks.distribution().procs() == D::balanced_grid({1000, 800}, p));
  CHECK(blocks.ghost() == garray::Shape<2>{1, 1});
  CHECK(test::whole_array(blocks) == want);
  // transpose: t[j][i] == a[i][j]
  CHECK(t.shape() == garray::Shape<2>{800, 1000});
  CHECK(t.distribution().procs() == std::array<int, 2>{p, 1});
  const std::vector<double> tt = test::whole_array(t);
  ok = true;
  for (garray::Index i = 0; ok && i < 1000; ++i)
    for (garray::Index j = 0; j < 800; ++j)
      ok = ok && tt[static_cast<std::size_t>(1000 * j + i)] == value(i, j);
  CHECK(test::all_ranks(ok));
}

TEST_CASE("user guide: ghost cells (a stencil sweep reading the frame, periodic along dim 0)") {
  using D = garray::Distribution<2>;
  garray::Context ctx;
  const garray::Index n = 10;
  boost::multi_array<double, 2> unew(boost::extents[n][n]);  // each rank fills its block
  // clang-format off
  // guide-example: ghost cells, the array
  garray::GlobalArray<double, 2> u(ctx, {n, n}, D::blocked(), {1, 1});  // ghost width 1
  // end guide-example
  // clang-format on
  const auto val = [n](garray::Index i, garray::Index j) { return static_cast<double>(1 + i * n + j); };
  {  // written locally, not synced: update_ghosts completes local writes first
    auto blk = u.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = val(i, j);
  }
  // clang-format off
  // guide-example: ghost cells, update and sweep
  garray::update_ghosts(u);                   // faces, edges and corners from the neighbours
  garray::update_ghosts(u, {true, false});    // periodic along dim 0
  {
    auto blk = u.access();                     // view spans [lo - 1, hi + 1) per dimension
    auto& v = blk.view();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j)
        unew[i][j] = 0.25 * (v[i - 1][j] + v[i + 1][j] + v[i][j - 1] + v[i][j + 1]);
  }
  // end guide-example
  // clang-format on
  // Serially: rows wrap around (periodic dim 0); outside dim 1 the frame stays 0 (as created).
  const auto ref = [&](garray::Index i, garray::Index j) {
    const auto at = [&](garray::Index r, garray::Index c) {
      return c < 0 || c >= n ? 0.0 : val((r + n) % n, c);
    };
    return 0.25 * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1));
  };
  const auto box = u.local_box();
  CHECK(!box.empty());
  bool ok = true;
  for (auto i = box.lo[0]; i < box.hi[0]; ++i)
    for (auto j = box.lo[1]; j < box.hi[1]; ++j) ok = ok && unew[i][j] == ref(i, j);
  CHECK(test::all_ranks(ok));
}

TEST_CASE("user guide: replicated arrays") {
  using D = garray::Distribution<2>;
  garray::Context ctx;
  std::vector<double> row(100), out(100, -1.0);
  for (std::size_t k = 0; k < row.size(); ++k)
    row[k] = 0.5 + static_cast<double>(k);  // the same on every rank
  // clang-format off
  // guide-example: replicated arrays
  garray::GlobalArray<double, 2> r(ctx, {100, 100}, D::replicated());
  r.put(garray::idx[3], row);     // writes every copy (one piece per rank)
  r.get(garray::idx[3], out);     // reads this rank's own copy: no communication
  r.sync();                       // after it every copy is identical
  // end guide-example
  // clang-format on
  CHECK(out == row);
  CHECK(r.local_box() == garray::Box<2>{{0, 0}, {100, 100}});
  CHECK(r.owner({50, 60}) == ctx.rank());
  bool ok = true;
  {
    auto blk = r.access();  // this rank's copy: row 3 written, its neighbours not
    for (garray::Index j = 0; j < 100; ++j)
      ok = ok && blk.view()[3][j] == row[static_cast<std::size_t>(j)] && blk.view()[2][j] == 0.0 &&
           blk.view()[4][j] == 0.0;
  }
  CHECK(test::all_ranks(ok));
}

TEST_CASE("user guide: iterating over owned elements") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {12, 9});
  // clang-format off
  // guide-example: iterating over owned elements
  std::map<garray::Index, garray::Index> global_row;
  for (auto [l, g] : garray::enumerate(a, 0)) global_row[l] = g;  // local row l is global row g
  garray::for_each_owned(a, [](const garray::Shape<2>& /*local*/, const garray::Shape<2>& global, double& v) {
    v = global[0] * 10 + global[1];
  });
  auto who = garray::owners(a, garray::Box<2>{{0, 0}, {10, 10}});  // (rank, intersection) pairs
  bool mine = garray::is_local(a, {4, 2});
  // end guide-example
  // clang-format on
  a.sync();
  const std::vector<double> all_a = test::whole_array(a);
  bool ok = true;
  for (garray::Index i = 0; i < 12; ++i)
    for (garray::Index j = 0; j < 9; ++j)
      ok = ok && all_a[static_cast<std::size_t>(9 * i + j)] == static_cast<double>(10 * i + j);
  CHECK(ok);
  garray::Index k = 0;
  for (auto [l, g] : garray::enumerate(a, 0)) {
    CHECK(l == k);
    CHECK(g == a.local_box().lo[0] + k);
    ++k;
  }
  CHECK(k == (a.local_box().empty() ? 0 : a.local_box().extent(0)));
  CHECK(global_row.size() == static_cast<std::size_t>(k));
  for (const auto& [l, g] : global_row) CHECK(g == a.local_box().lo[0] + l);
  garray::Index covered = 0;  // the box clipped to the array: [0, 10) x [0, 9)
  for (const auto& [rank, part] : who) {
    CHECK(part == garray::intersect(a.box_of(rank), garray::Box<2>{{0, 0}, {10, 9}}));
    covered += part.volume();
  }
  CHECK(covered == 90);
  CHECK(mine == (a.owner({4, 2}) == ctx.rank()));
}

TEST_CASE("user guide: the array cache reuses one window for a loop of temporaries") {
  std::ostringstream printed;
  std::int64_t allocated = -1, hits = -1;
  bool root = false;
  {
    const test::CoutTo capture(printed);
    // clang-format off
    // guide-example: array cache
    garray::Context ctx;
    for (int it = 0; it < 100; ++it) {
      garray::GlobalArray<double, 2> t(ctx, {2000, 2000});   // first: new window; then: reused
      // ... use t ...
    }                                                          // destroy: window back to the cache
    garray::print_stats(ctx, std::cout);   // per rank: windows_allocated 1, cache_hits 99
    // end guide-example
    // clang-format on
    allocated = ctx.stats().windows_allocated;
    hits = ctx.stats().cache_hits;
    root = ctx.rank() == 0;
  }
  CHECK(allocated == 1);
  CHECK(hits == 99);
  if (root) {
    CHECK(test::contains(printed.str(), "windows_allocated"));
    CHECK(test::contains(printed.str(), "cache_hits"));
  } else {
    CHECK(printed.str().empty());
  }
}

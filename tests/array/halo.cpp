// Ghost cells: after update_ghosts() every cell of every rank's frame holds the value of the
// element it mirrors (wrapped along periodic dimensions; cells outside a non-periodic
// dimension keep their old value), for random shapes, every kind of distribution (empty
// blocks included), ghost widths 1 and 2 (also wider than neighbours' blocks), corners.
#include <chrono>
#include <functional>
#include <garray/runtime/fault.hpp>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "array/movement_support.hpp"

using garray::Shape;

namespace {

constexpr double sentinel = -12345.0;

/// Checks every cell of this rank's padded frame against the reference (Local).
template <std::size_t N>
bool frame_ok(garray::GlobalArray<double, N>& a, test::Reference<double, N>& ref, const std::array<bool, N>& periodic,
              std::string& why) {
  auto blk = a.access();
  const auto b = blk.box();
  if (b.empty()) return true;
  const auto g = a.ghost();
  const auto shape = a.shape();
  std::array<std::vector<garray::Index>, N> ids;
  for (std::size_t d = 0; d < N; ++d)
    for (garray::Index i = b.lo[d] - g[d]; i < b.hi[d] + g[d]; ++i) ids[d].push_back(i);
  bool ok = true;
  test::for_each_selected<N>(ids, [&](const Shape<N>& i, garray::Index) {
    Shape<N> src = i;
    bool outside = false;
    for (std::size_t d = 0; d < N; ++d) {
      if (src[d] >= 0 && src[d] < shape[d]) continue;
      if (!periodic[d]) {
        outside = true;
        continue;
      }
      src[d] = ((src[d] % shape[d]) + shape[d]) % shape[d];
    }
    const double want = outside ? sentinel : ref.at(src);
    if (blk.view()(i) != want && ok) {
      ok = false;
      why = "cell " + test::str(garray::detail::seq(i)) + " of block " + test::str(b) + " holds " +
            std::to_string(blk.view()(i)) + ", want " + std::to_string(want);
    }
  });
  return ok;
}

template <std::size_t N>
void ghost_case(const garray::Context& ctx, test::Rng& g, garray::Index max_extent, garray::Index width) {
  const auto shape = test::random_shape<N>(g, max_extent);
  for (const auto& dist : test::every_distribution<N>(g, shape, ctx.size())) {
    Shape<N> ghost{};
    for (auto& x : ghost) x = test::uniform(g, 0, width);
    ghost[static_cast<std::size_t>(test::uniform(g, 0, N - 1))] = width;
    std::array<bool, N> periodic{};
    for (auto& b : periodic) b = test::uniform(g, 0, 1) == 1;
    INFO("shape " << garray::detail::seq(shape) << " " << dist.describe() << " ghost " << garray::detail::seq(ghost)
                  << " periodic " << garray::detail::seq(periodic));
    garray::GlobalArray<double, N> a(ctx, shape, dist, ghost);
    a.fill(sentinel);  // frames too
    auto ref = test::filled_reference<double, N>(shape);
    if (ctx.rank() == 0) a.put_section(garray::Section<N>::full(shape), std::span<const double>(ref.a.data(), ref.a.num_elements()));
    auto& st = ctx.stats();
    st.temp_bytes_peak = 0;
    const auto before = st[garray::Op::get];
    garray::update_ghosts(a, periodic);
    // straight into the frame: no temporaries, one get per (frame piece, owner)
    CHECK(st.temp_bytes_peak == 0);
    std::int64_t pieces = 0;
    garray::detail::for_each_ghost_piece(a.local_box(), a.ghost(), shape, periodic,
                                         [&](const garray::Box<N>& src, const Shape<N>&) {
                                           if (dist.is_replicated()) ++pieces;  // the own copy
                                           else a.distribution().for_each_block(src, [&](int, const auto&) { ++pieces; });
                                         });
    const auto& after = st[garray::Op::get];
    CHECK(after.local_pieces + after.remote_pieces - before.local_pieces - before.remote_pieces == pieces);
    std::string why;
    CHECK_MESSAGE(test::all_ranks(frame_ok(a, ref, periodic, why)), why);
    // change the interior through access() (local writes), update again: frames follow
    auto ref2 = test::filled_reference<double, N>(shape, 1000);
    garray::for_each_owned(a, [&](const Shape<N>&, const Shape<N>& gi, double& v) { v = ref2.at(gi); });
    garray::update_ghosts(a, periodic);
    CHECK_MESSAGE(test::all_ranks(frame_ok(a, ref2, periodic, why)), why);
    CHECK(test::equal_on_all_ranks(a, ref2));
  }
}

}  // namespace

TEST_CASE("update_ghosts fills frames (faces, edges, corners) for every distribution, widths 1 and 2") {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  for (garray::Index w : {1, 2}) {
    for (int c = 0; c < 3; ++c) ghost_case<1>(ctx, g, 3 * ctx.size() + 4, w);
    for (int c = 0; c < 3; ++c) ghost_case<2>(ctx, g, ctx.size() + 6, w);
    for (int c = 0; c < 2; ++c) ghost_case<3>(ctx, g, 6, w);
  }
}

namespace {
// The test hook below makes one rank slow inside update_ghosts, just before it fetches.
void (*saved_hook)(std::string_view) = nullptr;
bool slow_here = false;
void slow_fetch_hook(std::string_view point) {
  if (slow_here && point == "update_ghosts.fetch")
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (saved_hook) saved_hook(point);
}
}  // namespace

// semantics.md: "a rank may overwrite its interior on return". The last rank is slow to
// fetch; the others return and at once overwrite their interiors with -1 (no collective in
// between: the library alone must order the two). The slow rank's frame must hold the old
// values: no rank returns before every neighbour has read what it needs.
TEST_CASE(
    "update_ghosts: a rank may overwrite its interior on return, a slow neighbour still reads the old "
    "values") {
  garray::Context ctx;
  const int p = ctx.size(), slow = p - 1;
  const Shape<2> shape{4 * p + 1, 5};
  garray::GlobalArray<double, 2> a(ctx, shape, garray::Distribution<2>::slab(0), {1, 1});
  a.fill(sentinel);
  auto ref = test::filled_reference<double, 2>(shape);
  garray::for_each_owned(a, [&](const Shape<2>&, const Shape<2>& gi, double& v) { v = ref.at(gi); });
  a.sync();
  saved_hook = garray::detail::fault_hook;
  slow_here = ctx.rank() == slow;
  garray::detail::fault_hook = slow_fetch_hook;
  garray::update_ghosts(a);
  garray::detail::fault_hook = saved_hook;
  slow_here = false;
  if (ctx.rank() != slow)
    garray::for_each_owned(a, [&](const Shape<2>&, const Shape<2>&, double& v) { v = -1.0; });
  std::string why;
  const bool ok = ctx.rank() != slow || frame_ok(a, ref, {false, false}, why);
  CHECK_MESSAGE(test::all_ranks(ok), why);
  a.sync();
}

TEST_CASE("update_ghosts: empty blocks, ghosts wider than neighbours and than the array") {
  garray::Context ctx;
  using D1 = garray::Distribution<1>;
  // one element: every rank but 0 owns nothing; the periodic frame of width 3 wraps 3 times
  for (bool per : {false, true}) {
    garray::GlobalArray<double, 1> a(ctx, {1}, D1::blocked(), {3});
    a.fill(sentinel);
    auto ref = test::filled_reference<double, 1>({1});
    if (ctx.rank() == 0) a.put_section(garray::Section<1>::full({1}), std::span<const double>(ref.a.data(), 1));
    garray::update_ghosts(a, {per});
    std::string why;
    CHECK_MESSAGE(test::all_ranks(frame_ok(a, ref, {per}, why)), why);
    CHECK(a.access().view().num_elements() == (ctx.rank() == 0 ? 7u : 0u));
  }
  // blocks of 1 with ghost 2: each frame spans two neighbours on each side
  const garray::Index n = 2 * ctx.size() + 1;
  std::vector<garray::Index> starts{0};
  for (int r = 1; r < ctx.size(); ++r) starts.push_back(r);  // rank r owns [r, r+1), the last owns the rest
  garray::GlobalArray<double, 1> b(ctx, {n}, D1::irregular({starts}), {2});
  b.fill(sentinel);
  auto ref = test::filled_reference<double, 1>({n});
  if (ctx.rank() == ctx.size() - 1) b.put_section(garray::Section<1>::full({n}), std::span<const double>(ref.a.data(), ref.a.num_elements()));
  garray::update_ghosts(b, {true});
  std::string why;
  CHECK_MESSAGE(test::all_ranks(frame_ok(b, ref, {true}, why)), why);
}

TEST_CASE("update_ghosts on a replicated array wraps the own copy") {
  garray::Context ctx;
  const Shape<2> shape{4, 5};
  garray::GlobalArray<double, 2> a(ctx, shape, garray::Distribution<2>::replicated(), {1, 2});
  a.fill(sentinel);
  auto ref = test::filled_reference<double, 2>(shape);
  if (ctx.rank() == 0) a.put_section(garray::Section<2>::full(shape), std::span<const double>(ref.a.data(), ref.a.num_elements()));
  const auto rma_before = ctx.stats().mpi_rma_calls;
  garray::update_ghosts(a, {true, false});
  CHECK(ctx.stats().mpi_rma_calls == rma_before);  // nothing read remotely
  std::string why;
  CHECK_MESSAGE(test::all_ranks(frame_ok(a, ref, {true, false}, why)), why);
}

TEST_CASE("update_ghosts misuse: different periodic flags throw on every rank, nothing changes") {
  garray::Context ctx;
  if (ctx.size() < 2) return;  // needs ranks that disagree (no collectives before this point)
  garray::GlobalArray<double, 2> a(ctx, {6, 6}, garray::Distribution<2>::blocked(), {1, 1});
  a.fill(sentinel);
  auto ref = test::filled_reference<double, 2>({6, 6});
  if (ctx.rank() == 0) a.put_section(garray::Section<2>::full({6, 6}), std::span<const double>(ref.a.data(), ref.a.num_elements()));
  a.sync();
  std::string msg = "NO THROW";
  try {
    garray::update_ghosts(a, {ctx.rank() == 0, false});
  } catch (const garray::CollectiveMismatch& e) {
    msg = e.what();
  }
  CHECK(msg.find("update_ghosts") != std::string::npos);
  // frames still hold the sentinel: the failed call moved nothing
  std::string why;
  test::Reference<double, 2> none(Shape<2>{6, 6});
  bool untouched = true;
  {
    auto blk = a.access();
    const auto b = blk.box();
    for (garray::Index i = b.lo[0] - 1; i < b.hi[0] + 1 && !b.empty(); ++i)
      for (garray::Index j = b.lo[1] - 1; j < b.hi[1] + 1; ++j) {
        const bool ghost_cell = i < b.lo[0] || i >= b.hi[0] || j < b.lo[1] || j >= b.hi[1];
        if (ghost_cell) untouched = untouched && blk.view()[i][j] == sentinel;
      }
  }
  CHECK(test::all_ranks(untouched));
  CHECK(test::equal_on_all_ranks(a, ref));
}

TEST_CASE("every spelling of a whole-array fill sets the ghosts too; a partial fill leaves them to update_ghosts") {
  // One fill semantics (docs/semantics.md): filling the whole array, however spelled, sets
  // every ghost cell as well (every element holds the value, so every cell mirrors it on
  // any boundary); filling part of it writes the selected elements only, like put, copy
  // and assign, and update_ghosts brings the frames up to date.
  garray::Context ctx;
  const Shape<2> shape{7, 5};
  garray::GlobalArray<double, 2> a(ctx, shape, garray::Distribution<2>::blocked(), {1, 2});
  // Every cell of this rank's padded frame, outside its own block, holds want(global index).
  const auto frame_is = [&](auto want) {
    auto blk = a.access();
    const auto b = blk.box();
    bool ok = true;
    if (b.empty()) return true;
    for (garray::Index i = b.lo[0] - 1; i < b.hi[0] + 1; ++i)
      for (garray::Index j = b.lo[1] - 2; j < b.hi[1] + 2; ++j) {
        const bool own = i >= b.lo[0] && i < b.hi[0] && j >= b.lo[1] && j < b.hi[1];
        if (!own && blk.view()[i][j] != want(i, j)) ok = false;
      }
    return ok;
  };
  const std::vector<std::pair<const char*, std::function<void(double)>>> spellings = {
      {"a.fill(v)", [&](double v) { a.fill(v); }},
      {"garray::fill(a, v)", [&](double v) { garray::fill(a, v); }},
      {"a.view().fill(v)", [&](double v) { a.view().fill(v); }},
      {"garray::fill(a.view(), v)", [&](double v) { garray::fill(a.view(), v); }},
      {"a = v", [&](double v) { a = v; }},
      {"a.view() = v", [&](double v) { a.view() = v; }},
      {"a[idx[range(0, 7)]] = v", [&](double v) { a[garray::idx[garray::range(0, 7)]] = v; }},
      // every element, backwards (semantics.md: a view selecting the whole array)
      {"a[idx[range(_, _, -1)][range(_, _, -1)]].fill(v)",
       [&](double v) { a[garray::idx[garray::range(garray::_, garray::_, -1)][garray::range(garray::_, garray::_, -1)]].fill(v); }},
  };
  for (const auto& [name, fill] : spellings) {
    INFO("name := " << std::string(name));
    a.fill(sentinel);
    fill(2.5);
    CHECK(test::all_ranks(frame_is([](garray::Index, garray::Index) { return 2.5; })));
    CHECK(garray::sum(a) == 2.5 * 35);
  }
  // A view that drops a dimension of extent 1 still selects every element.
  {
    garray::GlobalArray<double, 2> row(ctx, {1, 6}, garray::Distribution<2>::blocked(), {1, 1});
    row.fill(sentinel);
    row[garray::idx[0]].fill(4.0);
    auto blk = row.access();
    const auto b = blk.box();
    bool ok = true;
    for (garray::Index i = b.lo[0] - 1; i < b.hi[0] + 1 && !b.empty(); ++i)
      for (garray::Index j = b.lo[1] - 1; j < b.hi[1] + 1; ++j) ok = ok && blk.view()[i][j] == 4.0;
    CHECK(test::all_ranks(ok));
  }
  // A partial fill: rows 0-2 only. Ghosts keep their old value until update_ghosts.
  a.fill(sentinel);
  a[garray::idx[garray::range(0, 3)]].fill(1.0);
  CHECK(test::all_ranks(frame_is([](garray::Index, garray::Index) { return sentinel; })));
  garray::update_ghosts(a);
  CHECK(test::all_ranks(frame_is([&](garray::Index i, garray::Index j) {
    const bool inside = i >= 0 && i < shape[0] && j >= 0 && j < shape[1];
    return inside && i < 3 ? 1.0 : sentinel;
  })));
}

// update_ghosts in 4-d, frames wrapping several times in 2-d and 3-d, and on a sub-context
// whose ranks differ from the world's (halo audit).
namespace halo_more {
TEST_CASE("update_ghosts: 4-d, and frames wider than every extent") {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  for (int c = 0; c < 2; ++c) ghost_case<4>(ctx, g, 3, 3);  // widths up to 3 > extents <= 3
  for (int c = 0; c < 2; ++c) ghost_case<2>(ctx, g, 2, 5);  // wraps 2-3 times per side
  for (int c = 0; c < 2; ++c) ghost_case<3>(ctx, g, 2, 4);
}

TEST_CASE("update_ghosts on a sub-context of the odd world ranks (context ranks differ from world ranks)") {
  garray::Context world;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  const bool in = world.rank() % 2 == 1 || world.size() == 1;
  auto sub = world.split(in ? 0 : MPI_UNDEFINED);
  if (in) {
    for (int c = 0; c < 4; ++c) {
      const auto shape = test::random_shape<2>(g, sub.size() + 4);
      for (const auto& dist : test::every_distribution<2>(g, shape, sub.size())) {
        const Shape<2> ghost{test::uniform(g, 0, 3), test::uniform(g, 1, 3)};
        const std::array<bool, 2> periodic{test::uniform(g, 0, 1) == 1, test::uniform(g, 0, 1) == 1};
        INFO("shape " << garray::detail::seq(shape) << " " << dist.describe() << " ghost "
                      << garray::detail::seq(ghost));
        garray::GlobalArray<double, 2> a(sub, shape, dist, ghost);
        a.fill(sentinel);
        auto ref = test::filled_reference<double, 2>(shape);
        if (sub.rank() == sub.size() - 1)
          a.put_section(garray::Section<2>::full(shape),
                        std::span<const double>(ref.a.data(), ref.a.num_elements()));
        garray::update_ghosts(a, periodic);
        std::string why;
        CHECK_MESSAGE(test::all_ranks(frame_ok(a, ref, periodic, why), sub.comm()), why);
        auto b = garray::redistribute(a, test::random_distribution<2>(g, shape, sub.size()), {1, 1});
        garray::update_ghosts(b, periodic);
        b.fill(sentinel);  // frames too
        garray::copy(b, a);
        garray::update_ghosts(b, periodic);
        CHECK_MESSAGE(test::all_ranks(frame_ok(b, ref, periodic, why), sub.comm()), why);
      }
    }
  }
  world.barrier();
}
}  // namespace halo_more

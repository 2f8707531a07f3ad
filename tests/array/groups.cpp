// Arrays on process groups, and ranks that own nothing.
#include "support/test_support.hpp"

using garray::all;
using garray::idx;
using garray::range;

TEST_CASE("an array on a subgroup works while the other ranks do something else") {
  garray::Context world;
  const bool in_group = world.rank() % 2 == 1 || world.size() == 1;
  auto sub = world.split(in_group ? 0 : MPI_UNDEFINED);
  if (in_group) {
    garray::GlobalArray<double, 1> a(sub, {5 * static_cast<garray::Index>(sub.size()) + 1});
    if (sub.rank() == 0) {
      std::vector<double> v(static_cast<std::size_t>(a.size()));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) * 0.5;
      a.put(idx[all], v);
    }
    a.sync();
    std::vector<double> got(static_cast<std::size_t>(a.size()));
    a.get(idx[range(garray::_, garray::_, -1)], got);
    bool ok = true;
    for (std::size_t i = 0; i < got.size(); ++i) ok = ok && got[i] == static_cast<double>(got.size() - 1 - i) * 0.5;
    CHECK(ok);
    CHECK(a.context().size() == sub.size());
  }
  world.barrier();
}

TEST_CASE("ranks that own nothing take part in every operation") {
  garray::Context ctx;
  // A 2x3 array on a 1x1 grid: only rank 0 owns anything; and a 1-d array shorter than the
  // rank count under the default distribution.
  garray::GlobalArray<std::int32_t, 2> a(ctx, {2, 3}, garray::Distribution<2>::grid({1, 1}));
  garray::GlobalArray<std::int32_t, 1> b(ctx, {2});
  CHECK((ctx.rank() == 0) != a.local_box().empty());
  if (ctx.size() > 2) CHECK(b.local_box().empty() == (ctx.rank() >= 2));
  {
    auto blk = a.access();
    CHECK(blk.empty() == (ctx.rank() != 0));
  }
  std::vector<std::int32_t> one{1, 1, 1};
  a.accumulate(idx[1], std::span<const std::int32_t>(one));
  b.accumulate(idx[all], std::span<const std::int32_t>(one.data(), 2));
  a.sync();
  b.sync();
  CHECK(a.get(idx[1][2]) == ctx.size());
  CHECK(a.get(idx[0][2]) == 0);
  CHECK(b.get(idx[-1]) == ctx.size());
  std::vector<garray::Shape<1>> list{{0}, {1}, {0}};
  std::vector<std::int32_t> out(3);
  b.gather(list, out);
  CHECK(out == std::vector<std::int32_t>{ctx.size(), ctx.size(), ctx.size()});
  b.fill(9);
  CHECK(b.get(idx[0]) == 9);
}

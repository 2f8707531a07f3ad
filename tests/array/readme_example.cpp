// The README's "What you get" example, compiled and checked, so the README stays true.
#include "support/test_support.hpp"

using garray::idx, garray::range, garray::all, garray::_;

TEST_CASE("the README example runs and does what it says") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {1000, 1000});
  {
    auto blk = a.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = static_cast<double>(i) + 0.001 * static_cast<double>(j);
  }
  a.sync();

  std::vector<double> row(1000);
  a.get(idx[7][all], std::span(row));
  CHECK(row[999] == 7 + 0.001 * 999);
  auto corner = a.get(idx[range(_, 3)][range(-3, _)]);
  CHECK(corner.shape()[0] == 3);
  CHECK(corner[2][0] == 2 + 0.001 * 997);
  double x = a.get(idx[-1][-1]);
  CHECK(x == 999 + 0.001 * 999);
  a.sync();
  if (ctx.rank() == 0)
    a.accumulate(idx[range(0, 10)][range(_, _, -100)], std::span<const double>(row.data(), 100), 2.0);
  auto inner = a[idx[range(1, -1)][range(1, -1)]];
  CHECK(inner.shape() == garray::Shape<2>{998, 998});
  a.sync();
  // a[0, 999] += 2 * row[0]; a[9, 99] += 2 * row[99] (row 9, column 999 - 9*100)
  CHECK(a.get(idx[0][999]) == 0 + 0.001 * 999 + 2.0 * row[0]);
  CHECK(a.get(idx[9][99]) == 9 + 0.001 * 99 + 2.0 * row[99]);
}

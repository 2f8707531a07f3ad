// -DGARRAY_ENABLE_BOUNDS_CHECK=ON: Boost.MultiArray's per-element checks in access() views run
// in every build type (this binary is built like a consumer of that option: Release, so
// NDEBUG, with BOOST_ENABLE_ASSERT_HANDLER and array/src/bounds_check.cpp), and an index
// outside the block (ghosts included) throws garray::BoundsError naming the rank.
#include <string>

#include "support/test_support.hpp"

#if !defined(NDEBUG) || !defined(BOOST_ENABLE_ASSERT_HANDLER)
#error "test_bounds_check must be built with NDEBUG and BOOST_ENABLE_ASSERT_HANDLER"
#endif

using garray::BoundsError;
using garray::Context;
using garray::GlobalArray;
using garray::Index;

TEST_CASE("bounds check: an index outside the local block throws BoundsError, inside works") {
  Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  GlobalArray<double, 2> a(ctx, {Index(2 * p + 1), 5}, garray::Distribution<2>::blocked(), {1, 1});
  {
    auto blk = a.access();
    auto& v = blk.view();
    if (!blk.empty()) {
      const Index lo0 = blk.lo(0), hi0 = blk.hi(0), lo1 = blk.lo(1), hi1 = blk.hi(1);
      // the owned corners and the ghost frame are inside the view
      v[lo0][lo1] = 1.0;
      v[hi0 - 1][hi1 - 1] = 2.0;
      v[lo0 - 1][lo1 - 1] = 3.0;
      v[hi0][hi1] = 4.0;
      CHECK(v[lo0][lo1] == 1.0);
      CHECK(v[hi0][hi1] == 4.0);
      std::string m = test::message_of<BoundsError>([&] { v[hi0 + 1][lo1] = 5.0; });
      CHECK(m.find("bounds check failed") != std::string::npos);
      CHECK(m.find("[rank " + std::to_string(me) + "/") != std::string::npos);
      m = test::message_of<BoundsError>([&] { (void)v[lo0][lo1 - 2]; });
      CHECK(m.find("bounds check failed") != std::string::npos);
      m = test::message_of<BoundsError>([&] { (void)v[lo0 - 2][lo1]; });
      CHECK(m.find("bounds check failed") != std::string::npos);
    }
  }
  a.sync();
  CHECK(test::all_ranks(true));
}

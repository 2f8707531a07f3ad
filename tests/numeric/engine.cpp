// The owner-computes engine's split by input owner: a stencil whose leaves reach into the
// neighbours' blocks reads its own block in place and fetches only the halo (statistics),
// and still equals the serial Jacobi bitwise (assignment and row-major reductions).
#include "numeric/support.hpp"

#include <garray/garray.hpp>

#include <cmath>
#include <vector>

using gidx = garray::Index;

TEST_CASE("stencil through the engine: own block in place, only the halo fetched, bitwise serial") {
  garray::Context ctx;
  const garray::Shape<2> shapes[] = {{37, 23}, {9, 41}, {64, 17}};
  for (const auto& sh : shapes)
    for (int dk = 0; dk < 3; ++dk) {
      const auto dist = dk == 0 ? garray::Distribution<2>::slab(0)
                                : dk == 1 ? garray::Distribution<2>::blocked() : garray::Distribution<2>::slab(1);
      const gidx n = sh[0], m = sh[1];
      garray::GlobalArray<double, 2> u(ctx, sh, dist), v(ctx, sh, dist);
      std::vector<double> ref(static_cast<std::size_t>(n * m)), nxt;
      for (gidx i = 0; i < n; ++i)
        for (gidx j = 0; j < m; ++j) ref[static_cast<std::size_t>(i * m + j)] = std::sin(static_cast<double>(i * 131 + j * 7));
      garray::generate(u, [&](const garray::Shape<2>& i) { return ref[static_cast<std::size_t>(i[0] * m + i[1])]; });
      v.fill(-1.0);
      using garray::idx, garray::range;
      const auto in = idx[range(1, -1)][range(1, -1)];
      const auto J = ((u[idx[range(0, -2)][range(1, -1)]] + u[idx[range(2, garray::_)][range(1, -1)]]) * 0.3 +
                      (u[idx[range(1, -1)][range(0, -2)]] + u[idx[range(1, -1)][range(2, garray::_)]]) * 0.2) * 0.7;
      auto& st = ctx.stats();
      const auto before = st[garray::Op::get];
      const double err = garray::norm2(u[in] - J);
      garray::assign(v[in], J);
      const auto after = st[garray::Op::get];
      INFO("shape " << n << "x" << m << " dist " << dk << " rank " << ctx.rank());
      // Own data is never copied; remote data is at most the halo (2 rows + 2 columns per
      // leaf group and sweep), where fetching the bounding region would move the whole block.
      CHECK(after.local_bytes == before.local_bytes);
      CHECK(after.remote_bytes - before.remote_bytes <= 2 * 2 * (n + m) * static_cast<gidx>(sizeof(double)));
      // Serial Jacobi with the same operations in the same order; error row-major.
      nxt = ref;
      double s = 0;
      for (gidx i = 1; i + 1 < n; ++i)
        for (gidx j = 1; j + 1 < m; ++j) {
          const auto at = [&](gidx a, gidx b) { return ref[static_cast<std::size_t>(a * m + b)]; };
          const double x = ((at(i - 1, j) + at(i + 1, j)) * 0.3 + (at(i, j - 1) + at(i, j + 1)) * 0.2) * 0.7;
          nxt[static_cast<std::size_t>(i * m + j)] = x;
          const double d = at(i, j) - x;
          s += d * d;
        }
      bool same = true;
      auto blk = v.access();
      auto bv = blk.view();
      const auto box = v.local_box();
      for (gidx i = box.lo[0]; i < box.hi[0]; ++i)
        for (gidx j = box.lo[1]; j < box.hi[1]; ++j) {
          const bool edge = i == 0 || j == 0 || i == n - 1 || j == m - 1;
          const double want = edge ? -1.0 : nxt[static_cast<std::size_t>(i * m + j)];
          same = same && bv[i][j] == want;
        }
      CHECK(same);
      // One rank: the very same sequence of additions. More: per-rank partials, rank order.
      if (ctx.size() == 1) CHECK(err == std::sqrt(s));
      else CHECK(std::abs(err - std::sqrt(s)) <= 1e-12 * std::sqrt(s));
    }
}

// Reductions against a serial evaluation: integers exact, floating point within the
// documented bound (2 (n-1) eps sum|x|), identical bytes on every rank; axis reductions.
#include "numeric/support.hpp"

#include <garray/garray.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

using gidx = garray::Index;

TEST_CASE("full reductions equal the serial result and are identical on every rank") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  for (int round = 0; round < 10; ++round) {
    const garray::Shape<2> sh = test::random_shape<2>(rng, 14);
    garray::GlobalArray<std::int64_t, 2> ia(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
    garray::GlobalArray<double, 2> da(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()), {1, 0});
    test::Reference<std::int64_t, 2> ri(sh);
    test::Reference<double, 2> rd(sh);
    ntest::randomize(rng, ri, -3, 3);
    for (std::size_t k = 0; k < rd.a.num_elements(); ++k)
      rd.a.data()[k] = std::sin(static_cast<double>(test::uniform(rng, 0, 1000000))) * 1e3;
    ntest::load(ia, ri);
    ntest::load(da, rd);
    const garray::Shape<2> vs = {test::uniform(rng, 1, sh[0]), test::uniform(rng, 1, sh[1])};
    const auto si = ntest::random_section(rng, sh, vs), sd = ntest::random_section(rng, sh, vs);
    garray::View<std::int64_t, 2, 2> vi(ia, si);
    garray::View<double, 2, 2> vd(da, sd);
    INFO("round " << round << " " << si << " " << sd);
    std::int64_t s = 0, pr = 1, mn = std::numeric_limits<std::int64_t>::max(), mx = std::numeric_limits<std::int64_t>::lowest();
    gidx nz = 0;
    bool an = false, al = true;
    double ds = 0, dabs = 0, dot = 0, dotabs = 0, sq = 0, dmin = INFINITY, dmax = -INFINITY;
    for (gidx i = 0; i < vs[0]; ++i)
      for (gidx j = 0; j < vs[1]; ++j) {
        const std::int64_t x = ri.at(ntest::at(si, i, j));
        const double y = rd.at(ntest::at(sd, i, j));
        s += x;
        pr *= (x == 2 ? -1 : 1);
        mn = std::min(mn, x);
        mx = std::max(mx, x);
        nz += x != 0;
        an = an || x != 0;
        al = al && x != 0;
        ds += y;
        dabs += std::abs(y);
        dot += y * static_cast<double>(x);
        dotabs += std::abs(y * static_cast<double>(x));
        sq += y * y;
        dmin = std::min(dmin, y);
        dmax = std::max(dmax, y);
      }
    const double n = static_cast<double>(vs[0] * vs[1]);
    const double eps = std::numeric_limits<double>::epsilon();
    const auto gs = garray::sum(vi);
    const auto gp = garray::prod(garray::where(vi == 2, std::int64_t{-1}, std::int64_t{1}));
    CHECK(gs == s);
    CHECK(gp == pr);
    CHECK(garray::min(vi) == mn);
    CHECK(garray::max(vi) == mx);
    CHECK(garray::count_nonzero(vi) == nz);
    CHECK(garray::any_of(vi) == an);
    CHECK(garray::all_of(vi) == al);
    const double gds = garray::sum(vd), gdot = garray::dot(vd, garray::cast<double>(vi)), gn = garray::norm2(vd);
    CHECK(std::abs(gds - ds) <= 2 * (n - 1) * eps * dabs);
    CHECK(std::abs(gdot - dot) <= 2 * n * eps * dotabs);
    CHECK(std::abs(gn * gn - sq) <= 2 * n * eps * sq + 1e-300);
    CHECK(garray::min(vd) == dmin);
    CHECK(garray::max(vd) == dmax);
    CHECK(ntest::same_on_all_ranks(gds));
    CHECK(ntest::same_on_all_ranks(gdot));
    CHECK(ntest::same_on_all_ranks(gn));
    CHECK(ntest::same_on_all_ranks(gs));
    // deterministic: the same call gives the same bits again
    CHECK(ntest::same_bits(garray::sum(vd), gds));
    // fused with an expression: no temporaries, same bound
    const double gm = garray::sum(vd - 1.0);
    CHECK(std::abs(gm - (ds - n)) <= 2 * n * eps * (dabs + n) + 1e-9);
  }
}

TEST_CASE("reductions along one axis equal the serial result") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  for (int round = 0; round < 6; ++round) {
    const garray::Shape<3> sh = test::random_shape<3>(rng, 7);
    garray::GlobalArray<std::int64_t, 3> a(ctx, sh, test::random_distribution<3>(rng, sh, ctx.size()));
    test::Reference<std::int64_t, 3> ra(sh);
    ntest::randomize(rng, ra, -9, 9);
    ntest::load(a, ra);
    for (std::size_t ax = 0; ax < 3; ++ax) {
      INFO("round " << round << " axis " << ax);
      auto s = garray::sum(a * 2, garray::Axis{ax});
      auto m = garray::max(a, garray::Axis{ax});
      garray::Shape<2> rs{};
      for (std::size_t d = 0, j = 0; d < 3; ++d)
        if (d != ax) rs[j++] = sh[d];
      CHECK(s.shape() == rs);
      std::vector<std::int64_t> gs(static_cast<std::size_t>(s.size())), gm(gs.size());
      s.get_section(garray::Section<2>::full(rs), gs);
      m.get_section(garray::Section<2>::full(rs), gm);
      bool ok = true;
      for (gidx i = 0; i < rs[0]; ++i)
        for (gidx j = 0; j < rs[1]; ++j) {
          std::int64_t acc = 0, mx = std::numeric_limits<std::int64_t>::lowest();
          for (gidx k = 0; k < sh[ax]; ++k) {
            garray::Shape<3> g{};
            g[ax] = k;
            g[ax == 0 ? 1 : 0] = i;
            g[ax == 2 ? 1 : 2] = j;
            acc += ra.at(g) * 2;
            mx = std::max(mx, ra.at(g));
          }
          ok = ok && gs[static_cast<std::size_t>(i * rs[1] + j)] == acc && gm[static_cast<std::size_t>(i * rs[1] + j)] == mx;
        }
      CHECK(test::all_ranks(ok));
    }
  }
  using I3 = garray::GlobalArray<std::int64_t, 3>;
  I3 a(ctx, {2, 3, 4});
  CHECK_THROWS_AS(garray::sum(a, garray::Axis{3}), garray::InvalidArgument);
}

TEST_CASE("reductions combine in the context's rank order: a renumbered context gives the given order's bits") {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 3) return;  // round robin over 1 or 2 ranks is already node by node
  // Values over 30 orders of magnitude: a different combination order changes the bits.
  const garray::Shape<2> sh = {5 * static_cast<gidx>(p) + 3, 7};
  auto value = [](gidx i, gidx j) {
    const double x = std::sin(static_cast<double>(i * 131 + j * 17 + 1));
    return x * std::pow(10.0, static_cast<double>((i * 7 + j * 3) % 31) - 15.0);
  };
  auto reduce = [&](garray::RankOrder order) {
    garray::Context ctx(MPI_COMM_WORLD, order);
    garray::GlobalArray<double, 2> a(ctx, sh, garray::Distribution<2>::slab(0));
    {
      auto blk = a.access();
      for (gidx i = blk.lo(0); i < blk.hi(0); ++i)
        for (gidx j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = value(i, j);
    }
    a.sync();
    return std::array<double, 3>{garray::sum(a), garray::norm2(a), garray::dot(a, a * 0.5)};
  };
  // GARRAY_NODE_RANKS=2,cyclic: "nodes" {0,2}, {1,3}, ...; node order renumbers them.
  const test::ScopedEnv nodes("GARRAY_NODE_RANKS", "2,cyclic");
  const auto given = reduce(garray::RankOrder::given);
  const auto node = reduce(garray::RankOrder::node);
  for (std::size_t k = 0; k < given.size(); ++k) {
    CAPTURE(k);
    CHECK(ntest::same_bits(node[k], given[k]));
  }
}

TEST_CASE("a replicated first operand is counted once (rank 0's copy), alone, in expressions and views") {
  garray::Context ctx;
  const gidx n = 5 * ctx.size() + 3;
  garray::GlobalArray<std::int64_t, 1> r(ctx, {n}, garray::Distribution<1>::replicated());
  garray::GlobalArray<std::int64_t, 1> b(ctx, {n});  // blocked: p pieces
  garray::GlobalArray<double, 1> rd(ctx, {n}, garray::Distribution<1>::replicated());
  garray::iota(r, std::int64_t{1}, std::int64_t{1});  // 1 .. n
  garray::iota(b, std::int64_t{2}, std::int64_t{0});  // all 2
  garray::iota(rd, 0.5, 1.0);
  std::int64_t s = 0, s2 = 0, dot = 0;
  double ds = 0;
  for (gidx i = 0; i < n; ++i) {
    s += i + 1;
    dot += (i + 1) * 2;
    ds += 0.5 + static_cast<double>(i);
    if (i >= 2 && i < n - 1 && (i - 2) % 3 == 0) s2 += i + 1;
  }
  CHECK(garray::sum(r) == s);  // p copies counted once, not p times
  CHECK(garray::count_nonzero(r) == n);
  CHECK(garray::dot(r, b) == dot);
  CHECK(garray::sum(r * b) == dot);
  CHECK(garray::sum(r[garray::idx[garray::range(2, n - 1, 3)]]) == s2);
  CHECK(garray::mean(rd) == ds / static_cast<double>(n));
  CHECK(garray::sum(rd, garray::reproducible) == ds);  // exact: small integers and halves
  CHECK(garray::max(r) == n);
  // rank 0's copy is the one counted: another copy made to differ does not count
  if (ctx.size() > 1) {
    {
      auto blk = r.access();  // a local store to rank 1's copy only (keeping copies equal is the program's job)
      if (ctx.rank() == 1) blk.data()[0] = 1000;
    }
    r.sync();
    CHECK(garray::sum(r) == s);
  }
}

namespace edge_red {
using garray::Index;

/// True if `a` is distributed as Distribution<N>::blocked() distributes its shape (every
/// rank's box equal). Collective (creates a reference array).
template <class T, std::size_t N>
bool is_blocked(const garray::GlobalArray<T, N>& a) {
  garray::GlobalArray<T, N> ref(a.context(), a.shape(), garray::Distribution<N>::blocked());
  bool ok = true;
  for (int q = 0; q < a.context().size(); ++q) ok = ok && a.box_of(q) == ref.box_of(q);
  return ok;
}

/// Rank 0 writes `v` (row-major) over the whole of `a`, then a sync. Collective.
template <class T, std::size_t N>
void load_all(garray::GlobalArray<T, N>& a, const std::vector<T>& v) {
  if (a.context().rank() == 0) a.put(garray::idx[garray::range()], std::span<const T>(v));
  a.sync();
}

inline bool all_nan(const std::vector<double>& v, std::size_t n) {
  bool ok = v.size() == n;
  for (double d : v) ok = ok && std::isnan(d);
  return ok;
}
}  // namespace edge_red

// semantics.md, Operations table: "`sum(x)`, `prod(x)` of integers: accumulated in int64,
// wrapping modulo 2^64 as NumPy"; "mean ... NumPy's result type (double for integers)";
// axis reductions: "a new (M-1)-d array (blocked distribution)". The existing tests sum
// int32 values within +-1000 and multiply only +-1: an int32 accumulator (converted to
// int64 at the end) would pass them.
TEST_CASE("int32 sum/prod/mean accumulate in int64 (double for mean): past 2^31, products wrapping mod 2^64, full and along an axis") {
  using namespace edge_red;
  garray::Context ctx;
  const int p = ctx.size();
  constexpr std::int32_t big = std::numeric_limits<std::int32_t>::max();
  // Full: every element 2^31 - 1, the last rank owning nothing.
  const Index n = 2 * p + 3;
  auto x = garray::full<std::int32_t>(ctx, garray::Shape<1>{n}, big, test::last_rank_owns_nothing(n, p));
  static_assert(std::is_same_v<decltype(garray::sum(x)), std::int64_t>);
  static_assert(std::is_same_v<decltype(garray::prod(x)), std::int64_t>);
  static_assert(std::is_same_v<decltype(garray::mean(x)), double>);
  CHECK(garray::sum(x) == n * std::int64_t{big});  // np.sum(np.full(n, 2**31 - 1, np.int32)): n * (2**31 - 1)
  CHECK(garray::mean(x) == static_cast<double>(big));
  // 3 ** 41 modulo 2^64 (serial loop in uint64); NumPy: np.prod(np.full(41, 3, np.int32)) == -420491770248316829
  std::uint64_t w = 1;
  for (int k = 0; k < 41; ++k) w *= 3u;
  const auto want = static_cast<std::int64_t>(w);
  CHECK(want == -420491770248316829LL);
  auto t = garray::full<std::int32_t>(ctx, garray::Shape<1>{41}, 3, test::last_rank_owns_nothing(41, p));
  CHECK(garray::prod(t) == want);
  // 65536 ** 4 == 2^64: 0 (np.prod(np.full(4, 65536, np.int32)) == 0); 65536 ** 2 fits int64
  auto q = garray::full<std::int32_t>(ctx, garray::Shape<1>{4}, 65536);
  CHECK(garray::prod(q) == 0);
  CHECK(garray::prod(q[garray::idx[garray::range(0, 2)]]) == std::int64_t{1} << 32);
  // Along an axis, rows on all ranks but the last.
  auto s2 = garray::full<std::int32_t>(ctx, garray::Shape<2>{3, 5}, big, test::last_rank_owns_no_rows(3, p));
  auto c0 = garray::sum(s2, garray::Axis{0});
  auto c1 = garray::sum(s2, garray::Axis{-1});
  static_assert(std::is_same_v<decltype(c0), garray::GlobalArray<std::int64_t, 1>>);
  CHECK(test::whole_array(c0) == std::vector<std::int64_t>(5, 3 * std::int64_t{big}));
  CHECK(test::whole_array(c1) == std::vector<std::int64_t>(3, 5 * std::int64_t{big}));
  auto m0 = garray::mean(s2, garray::Axis{0});
  static_assert(std::is_same_v<decltype(m0), garray::GlobalArray<double, 1>>);
  CHECK(test::whole_array(m0) == std::vector<double>(5, static_cast<double>(big)));
  auto t2 = garray::full<std::int32_t>(ctx, garray::Shape<2>{2, 41}, 3);
  auto pr1 = garray::prod(t2, garray::Axis{1});
  static_assert(std::is_same_v<decltype(pr1), garray::GlobalArray<std::int64_t, 1>>);
  CHECK(test::whole_array(pr1) == std::vector<std::int64_t>(2, want));
  CHECK(test::whole_array(garray::prod(t2, garray::Axis{0})) == std::vector<std::int64_t>(41, 9));
  // The axis results are blocked.
  CHECK(is_blocked(c0));
  CHECK(is_blocked(c1));
  CHECK(is_blocked(pr1));
}

// semantics.md: min/max/argmax/argmin "an empty selection throws InvalidArgument everywhere";
// "along an axis of length 0: InvalidArgument on every rank"; "mean ... NumPy's result"
// (np.mean of nothing is nan); "`ddof >= n` gives inf (NaN if every element equals the
// mean), as NumPy"; reductions.hpp: "Empty selections give the reducer's identity". Only
// max(e, Axis{1}) of a (0, 3) array, min/argmax along its empty axis and the full argmax/min/max
// of an empty array are tested today; empty means, variances, the other identities and
// the (0, 0) case (an empty axis AND an empty result: NumPy still raises) are not.
TEST_CASE("empty selections and empty axes: NumPy's identities, NaN means and variances, errors where NumPy raises") {
  using namespace edge_red;
  garray::Context ctx;
  auto e = garray::zeros<double>(ctx, garray::Shape<2>{0, 3});
  // Full: np.sum -> 0.0, np.prod -> 1.0, np.mean/var/std -> nan, np.var(ddof=-1) -> 0.0,
  // np.any -> False, np.all -> True, np.count_nonzero -> 0.
  const double s = garray::sum(e);
  CHECK(s == 0.0);
  CHECK(!std::signbit(s));
  CHECK(garray::prod(e) == 1.0);
  CHECK(std::isnan(garray::mean(e)));
  CHECK(std::isnan(garray::var(e)));
  CHECK(std::isnan(garray::std_dev(e)));
  CHECK(garray::var(e, Index{-1}) == 0.0);
  CHECK(garray::std_dev(e, Index{-1}) == 0.0);
  CHECK(!garray::any_of(e));
  CHECK(garray::all_of(e));
  CHECK(garray::count_nonzero(e) == 0);
  auto ei = garray::zeros<std::int32_t>(ctx, garray::Shape<1>{0});
  CHECK(garray::sum(ei) == 0);
  CHECK(garray::prod(ei) == 1);
  CHECK(std::isnan(garray::mean(ei)));  // np.mean(np.zeros(0, np.int32)): nan (float64)
  // Along the empty axis 0 of (0, 3): np.sum -> [0, 0, 0], np.prod -> [1, 1, 1],
  // np.mean/var/std -> [nan]*3, np.var(ddof=-1) -> [0, 0, 0], np.any -> False,
  // np.all -> True, np.count_nonzero -> 0.
  const garray::Axis a0{0};
  CHECK(test::whole_array(garray::sum(e, a0)) == std::vector<double>(3, 0.0));
  CHECK(test::whole_array(garray::prod(e, a0)) == std::vector<double>(3, 1.0));
  CHECK(all_nan(test::whole_array(garray::mean(e, a0)), 3));
  CHECK(all_nan(test::whole_array(garray::var(e, a0)), 3));
  CHECK(all_nan(test::whole_array(garray::std_dev(e, a0)), 3));
  CHECK(test::whole_array(garray::var(e, a0, -1)) == std::vector<double>(3, 0.0));
  CHECK(test::whole_array(garray::any_of(e, a0)) == std::vector<std::int32_t>(3, 0));
  CHECK(test::whole_array(garray::all_of(e, a0)) == std::vector<std::int32_t>(3, 1));
  CHECK(test::whole_array(garray::count_nonzero(e, a0)) == std::vector<Index>(3, 0));
  auto ei2 = garray::zeros<std::int32_t>(ctx, garray::Shape<2>{0, 3});
  CHECK(all_nan(test::whole_array(garray::mean(ei2, a0)), 3));  // np.mean(np.zeros((0, 3), np.int32), axis=0)
  CHECK(test::whole_array(garray::sum(ei2, a0)) == std::vector<std::int64_t>(3, 0));
  CHECK(test::whole_array(garray::prod(ei2, a0)) == std::vector<std::int64_t>(3, 1));
  // A non-empty axis with an empty result: no error (np.max(np.zeros((3, 0)), axis=0) and
  // np.argmin(..., axis=0) are empty arrays; np.var(np.zeros((0, 3)), axis=1) too).
  auto f = garray::zeros<double>(ctx, garray::Shape<2>{3, 0});
  CHECK(garray::max(f, a0).size() == 0);
  CHECK(garray::min(f, a0).size() == 0);
  CHECK(garray::argmin(f, a0).size() == 0);
  CHECK(garray::argmax(f, a0).size() == 0);
  CHECK(garray::var(e, garray::Axis{1}).size() == 0);
  // An axis of length 0 with an empty result: NumPy still raises ValueError
  // (np.max(np.zeros((0, 0)), axis=0), axis=1; np.argmax(np.zeros((0, 0)), axis=1); np.argmin(..., axis=0)).
  auto z = garray::zeros<double>(ctx, garray::Shape<2>{0, 0});
  for (std::ptrdiff_t ax : {0, 1, -1}) {
    CAPTURE(ax);
    CHECK_THROWS_AS(garray::max(z, garray::Axis{ax}), garray::InvalidArgument);
    CHECK_THROWS_AS(garray::min(z, garray::Axis{ax}), garray::InvalidArgument);
    CHECK_THROWS_AS(garray::argmax(z, garray::Axis{ax}), garray::InvalidArgument);
    CHECK_THROWS_AS(garray::argmin(z, garray::Axis{ax}), garray::InvalidArgument);
  }
  // ... and every rank can go on.
  CHECK(garray::sum(garray::full<double>(ctx, garray::Shape<1>{3}, 2.0)) == 6.0);
}

// semantics.md: var/std "`ddof >= n` gives inf (NaN if every element equals the mean), as
// NumPy"; along an axis "n - ddof <= 0 gives inf/NaN as NumPy". Tested today: full inf for
// ddof >= n, full NaN for a constant array, axis inf. Not tested: the axis NaN for constant
// lines, negative ddof (NumPy divides by n - ddof > n), ddof == n exactly along an axis.
TEST_CASE("var/std with ddof >= n (inf; NaN for constant lines) and negative ddof (n - ddof), along an axis and full") {
  using namespace edge_red;
  garray::Context ctx;
  const double inf = std::numeric_limits<double>::infinity();
  garray::GlobalArray<double, 2> x(ctx, {2, 3}, test::last_rank_owns_no_rows(2, ctx.size()));
  load_all(x, {1, 2, 4, 2, 2, 2});
  // np.var([[1., 2., 4.], [2., 2., 2.]], axis=1, ddof=3) and ddof=5: [inf, nan]; np.std likewise
  for (Index ddof : {3, 5}) {
    CAPTURE(ddof);
    const auto v = test::whole_array(garray::var(x, garray::Axis{1}, ddof));
    const auto sd = test::whole_array(garray::std_dev(x, garray::Axis{-1}, ddof));
    CHECK(v[0] == inf);
    CHECK(std::isnan(v[1]));
    CHECK(sd[0] == inf);
    CHECK(std::isnan(sd[1]));
  }
  // np.var(..., axis=0, ddof=2): columns [1, 2], [2, 2], [4, 2] -> [inf, nan, inf]
  const auto v0 = test::whole_array(garray::var(x, garray::Axis{0}, 2));
  CHECK(v0[0] == inf);
  CHECK(std::isnan(v0[1]));
  CHECK(v0[2] == inf);
  // Negative ddof divides by n - ddof: np.var([1., 2., 4.], ddof=-2) == (14/3) / 5 == 0.9333...
  const double ss = 14.0 / 3.0;  // squared deviations of [1, 2, 4] from 7/3
  const auto vn = test::whole_array(garray::var(x, garray::Axis{1}, -2));
  CHECK(vn[0] == doctest::Approx(ss / 5).epsilon(1e-14));
  CHECK(vn[1] == 0.0);
  auto row0 = x[garray::idx[0]];
  CHECK(garray::var(row0, Index{-2}) == doctest::Approx(ss / 5).epsilon(1e-14));
  CHECK(garray::std_dev(row0, Index{-2}) == doctest::Approx(std::sqrt(ss / 5)).epsilon(1e-14));
  CHECK(garray::var(row0, Index{3}) == inf);
  CHECK(std::isnan(garray::var(x[garray::idx[1]], Index{3})));  // constant row, ddof == n: 0 / 0
}

// NumPy: np.count_nonzero([-0.0, nan, 0.0]) == 1, np.any([-0.0]) is False, np.all([nan]) is True.
TEST_CASE("-0.0 is zero and NaN nonzero in count_nonzero, any_of, all_of, full and along an axis") {
  using namespace edge_red;
  garray::Context ctx;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  garray::GlobalArray<double, 2> x(ctx, {2, 3}, test::last_rank_owns_no_rows(2, ctx.size()));
  load_all(x, {-0.0, nan, 0.0, -0.0, -0.0, 1.0});
  CHECK(garray::count_nonzero(x) == 2);
  CHECK(!garray::all_of(x));
  CHECK(!garray::any_of(x[garray::idx[garray::all][0]]));  // [-0.0, -0.0]
  CHECK(garray::all_of(x[garray::idx[0][garray::range(1, 2)]]));  // [nan]
  CHECK(test::whole_array(garray::count_nonzero(x, garray::Axis{1})) == std::vector<Index>{1, 1});
  CHECK(test::whole_array(garray::count_nonzero(x, garray::Axis{0})) == std::vector<Index>{0, 1, 1});
  CHECK(test::whole_array(garray::any_of(x, garray::Axis{0})) == std::vector<std::int32_t>{0, 1, 1});
  CHECK(test::whole_array(garray::all_of(x, garray::Axis{1})) == std::vector<std::int32_t>{0, 0});
}

// semantics.md Reductions: max_reducer/min_reducer and assign_max_abs_change propagate NaN
// wherever it sits and on any rank count (docs audit).
namespace nan_reducers {
namespace {
using garray::idx;
using garray::Index;
using garray::range;
using D1 = garray::Distribution<1>;
}  // namespace

TEST_CASE(
    "max_reducer, min_reducer and assign_max_abs_change give NaN for a NaN anywhere, identically on every "
    "rank") {
  garray::Context ctx;
  const int p = ctx.size();
  const Index n = 5 * static_cast<Index>(p) + 2;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto take_new = [](double nv, double) { return nv; };
  const auto take_old = [](double, double ov) { return ov; };
  for (const D1& dist : {D1::blocked(), test::last_rank_owns_nothing(n, p), D1::replicated()}) {
    // the NaN first, in the middle, last (on the last owner: its partial is combined last)
    for (const Index where : {Index{0}, n / 2, n - 1}) {
      INFO("distribution " << dist.describe() << ", NaN at " << where);
      garray::GlobalArray<double, 1> x(ctx, {n}, dist), out(ctx, {n}, D1::slab(0)), two(ctx, {n});
      two.fill(2.0);  // finite new values (x * 0.0 + 2.0 would carry the NaN)
      garray::iota(x, 1.0, 1.0);
      if (ctx.rank() == 0) x[idx[where]].put(nan);
      x.sync();
      const auto is_nan_everywhere = [&](double r) {
        return test::all_ranks(std::isnan(r)) && ntest::same_on_all_ranks(std::isnan(r) ? 1 : 0);
      };
      // NaN among the new values
      CHECK(is_nan_everywhere(garray::assign_reduce(out, x, garray::max_reducer{}, take_new)));
      CHECK(is_nan_everywhere(garray::assign_reduce(out, x, garray::min_reducer{}, take_new)));
      // NaN among the old values (out holds x's NaN now), new values finite
      garray::assign(out, x);
      CHECK(is_nan_everywhere(garray::assign_reduce(out, two, garray::max_reducer{}, take_old)));
      garray::assign(out, x);
      CHECK(is_nan_everywhere(garray::assign_max_abs_change(out, two)));  // |2 - NaN|
      garray::fill(out, 0.0);
      CHECK(is_nan_everywhere(garray::assign_max_abs_change(out, x)));  // |NaN - 0|
      // the reference form, through a reversed view of the output
      garray::fill(out, 0.0);
      CHECK(is_nan_everywhere(garray::assign_reduce(
          out[idx[range(garray::_, garray::_, -1)]], two, x[idx[range(garray::_, garray::_, -1)]],
          garray::max_reducer{}, [](double, double rv) { return rv; })));
      // control: without the NaN the same calls give the finite extreme
      garray::iota(x, 1.0, 1.0);
      const double mx = garray::assign_reduce(out, x, garray::max_reducer{}, take_new);
      CHECK(mx == static_cast<double>(n));
      CHECK(ntest::same_on_all_ranks(mx));
    }
  }
}
}  // namespace nan_reducers

// semantics.md: mean/var/std_dev/prod/argmax/argmin identical on every rank; argmax/argmin
// the first extreme against a serial scan (docs audit).
namespace identical_reductions {
namespace {
using garray::Index;
}  // namespace

TEST_CASE(
    "mean, var, std_dev, prod, argmax and argmin: the same bytes on every rank; argmax/argmin the first "
    "extreme") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  for (int round = 0; round < 16; ++round) {
    const garray::Shape<2> sh = test::random_shape<2>(rng, 23);
    garray::GlobalArray<double, 2> x(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
    const int kind = round % 4;  // 0 wide magnitudes, 1 ties, 2 a NaN somewhere, 3 reversed view
    const Index salt = test::uniform(rng, 0, 1000);
    garray::generate(x, [kind, salt](const garray::Shape<2>& i) {
      const Index k = i[0] * 131 + i[1] * 17 + salt;
      if (kind == 1) return static_cast<double>(k % 5);  // many equal extremes
      return std::ldexp(std::sin(static_cast<double>(k)), static_cast<int>(k % 61) - 30);
    });
    if (kind == 2) {
      const garray::Shape<2> at{test::uniform(rng, 0, sh[0] - 1), test::uniform(rng, 0, sh[1] - 1)};
      if (ctx.rank() == 0) x[garray::idx[at[0]][at[1]]].put(std::numeric_limits<double>::quiet_NaN());
      x.sync();
    }
    INFO("round " << round << " shape " << sh[0] << "x" << sh[1] << " " << x.distribution().describe());
    auto v = kind == 3 ? x[garray::idx[garray::range(garray::_, garray::_, -1)]] : x.view();
    const double m = garray::mean(v), v0 = garray::var(v, 0), v1 = garray::var(v, 1), s = garray::std_dev(v);
    const double pr = garray::prod(1.0 + v * 1e-3);
    const Index amax = garray::argmax(v), amin = garray::argmin(v);
    // bitwise; a NaN result compared as "NaN" (which NaN bits an operation returns is not the point)
    const auto same = [](double r) {
      return ntest::same_on_all_ranks(std::isnan(r) ? std::numeric_limits<double>::quiet_NaN() : r);
    };
    CHECK(same(m));
    CHECK(same(v0));
    CHECK(same(v1));
    CHECK(same(s));
    CHECK(same(pr));
    CHECK(ntest::same_on_all_ranks(amax));
    CHECK(ntest::same_on_all_ranks(amin));
    // argmax/argmin against a serial scan of the view's elements (first extreme; NaN wins)
    const auto all = v.get();
    const double* d = all.data();
    const Index n = static_cast<Index>(all.num_elements());
    Index want_max = 0, want_min = 0;
    for (Index k = 1; k < n; ++k) {
      if (std::isnan(d[want_max])) break;
      if (std::isnan(d[k]) || d[k] > d[want_max]) want_max = k;
    }
    for (Index k = 1; k < n; ++k) {
      if (std::isnan(d[want_min])) break;
      if (std::isnan(d[k]) || d[k] < d[want_min]) want_min = k;
    }
    CHECK(amax == want_max);
    CHECK(amin == want_min);
  }
}
}  // namespace identical_reductions

// Accuracy of float32 sums (NumPy audit): sum, mean, var/std and the axis forms of float
// used to accumulate in float, one running sum per rank: 2^20 x 0.1f gave 105891.84 at np 1
// (1 % off; NumPy's pairwise sum gives 104857.7). They accumulate in double now and round
// once. The result types stay NumPy's (float, complex<float>).
TEST_CASE(
    "float32 sum, mean, var/std and sum/mean along an axis are accurate (double accumulator), types as "
    "NumPy") {
  garray::Context ctx;
  const garray::Index n = garray::Index{1} << 20;
  auto x = garray::full<float>(ctx, garray::Shape<1>{n}, 0.1f);
  static_assert(std::is_same_v<decltype(garray::sum(x)), float>);
  static_assert(std::is_same_v<decltype(garray::mean(x)), float>);
  static_assert(std::is_same_v<decltype(garray::var(x)), float>);
  const double exact = static_cast<double>(0.1f) * static_cast<double>(n);  // 104857.601...
  CHECK(garray::sum(x) == static_cast<float>(exact));                       // np.sum(x): 104857.7
  CHECK(garray::mean(x) == 0.1f);                                           // np.mean(x): 0.1000001
  CHECK(garray::std_dev(x) < 1e-6f);                                        // np.std(x): 9.7e-08
  CHECK(garray::sum(x) == garray::sum(x, garray::reproducible));
  auto y = garray::full<float>(ctx, garray::Shape<2>{2, n / 2}, 0.1f);
  const auto r = test::whole_array(garray::sum(y, garray::Axis{1}));
  static_assert(std::is_same_v<decltype(garray::sum(y, garray::Axis{1})), garray::GlobalArray<float, 1>>);
  CHECK(r == std::vector<float>(2, static_cast<float>(exact / 2)));
  CHECK(test::whole_array(garray::mean(y, garray::Axis{1})) == std::vector<float>(2, 0.1f));
  auto z = garray::full<std::complex<float>>(ctx, garray::Shape<1>{n}, std::complex<float>(0.1f, -0.1f));
  static_assert(std::is_same_v<decltype(garray::sum(z)), std::complex<float>>);
  CHECK(garray::sum(z) == std::complex<float>(static_cast<float>(exact), -static_cast<float>(exact)));
  CHECK(garray::dot(x, x) == static_cast<float>(static_cast<double>(0.1f * 0.1f) * static_cast<double>(n)));
}

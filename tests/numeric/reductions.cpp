// Reductions against a serial evaluation: integers exact, floating point within the
// documented bound (2 (n-1) eps sum|x|), identical bytes on every rank; axis reductions.
#include "numeric/support.hpp"

#include <garray/garray.hpp>

#include <cmath>
#include <limits>

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

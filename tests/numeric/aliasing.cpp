// Aliasing and overlap (semantics.md: "aliasing as NumPy"; an operand that overlaps the
// output is read before anything is written; user guide: copy fetches into a temporary,
// waits for every rank, then writes). NumPy buffers on overlap, so every form below is
// checked against a serial reference that reads every input before it writes:
//  - the NumPy spellings that reach the engine through other entry points: ufuncs with an
//    overlapping out=, a reversed self-assignment, a compound with a reversed strided
//    operand, reductions of the output inside its own assignment, the reproducible
//    assign_norm2_change in place;
//  - the agreement between the read and the write phase, for the engine and for copy: rank 0
//    owns almost all of 2^21 elements and reads the one element rank 1 owns last, after a
//    16 MiB copy of its own; rank 1 would otherwise write that element at once. (Which
//    interleaving the MPI library allows decides whether a missing agreement shows: on one
//    node with shared windows only by timing, under osc/pt2pt always.)
#include <algorithm>
#include <array>
#include <cmath>
#include <garray/garray.hpp>
#include <vector>

#include "numeric/support.hpp"

using garray::_;
using garray::idx;
using garray::range;
using gidx = garray::Index;

namespace {
using A1 = garray::GlobalArray<double, 1>;

void load1(A1& a, const std::vector<double>& v) {
  {
    auto blk = a.access();
    for (gidx i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = v[static_cast<std::size_t>(i)];
  }
  a.sync();
}
bool holds(A1& a, const std::vector<double>& v) {
  return test::all_ranks(test::whole_array(a) == v, a.context().comm());
}
}  // namespace

TEST_CASE("NumPy aliasing forms: ufunc out=, reversed self-assignment, compound, reductions of the output") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  for (int round = 0; round < 8; ++round) {
    const gidx n = test::uniform(rng, 2, 40);
    INFO("round " << round << " n " << n);
    A1 a(ctx, {n}, test::random_distribution<1>(rng, {n}, p));
    std::vector<double> r(static_cast<std::size_t>(n));
    for (auto& x : r) x = static_cast<double>(test::uniform(rng, -9, 9));
    load1(a, r);
    const auto at = [&](gidx i) -> double& { return r[static_cast<std::size_t>(i)]; };

    // np.add(a[1:], a[:-1], out=a[:-1])
    garray::add(a[idx[range(1, _)]], a[idx[range(_, -1)]], a[idx[range(_, -1)]]);
    {
      const auto old = r;
      for (gidx i = 0; i + 1 < n; ++i)
        at(i) = old[static_cast<std::size_t>(i + 1)] + old[static_cast<std::size_t>(i)];
    }
    CHECK(holds(a, r));

    // np.subtract(a[:-1], a[1:], out=a[1:])
    garray::subtract(a[idx[range(_, -1)]], a[idx[range(1, _)]], a[idx[range(1, _)]]);
    {
      const auto old = r;
      for (gidx i = 1; i < n; ++i)
        at(i) = old[static_cast<std::size_t>(i - 1)] - old[static_cast<std::size_t>(i)];
    }
    CHECK(holds(a, r));

    // np.negative(a[::-1], out=a)
    garray::negative(a[idx[range(_, _, -1)]], a);
    {
      const auto old = r;
      for (gidx i = 0; i < n; ++i) at(i) = -old[static_cast<std::size_t>(n - 1 - i)];
    }
    CHECK(holds(a, r));

    // a[::-1] = a (View = GlobalArray: garray::assign, not copy)
    a[idx[range(_, _, -1)]] = a;
    std::reverse(r.begin(), r.end());
    CHECK(holds(a, r));

    // a[::2] += a[::-1][::2]
    a[idx[range(_, _, 2)]] += a[idx[range(_, _, -1)]][idx[range(_, _, 2)]];
    {
      const auto old = r;
      for (gidx k = 0; 2 * k < n; ++k)
        at(2 * k) = old[static_cast<std::size_t>(2 * k)] + old[static_cast<std::size_t>(n - 1 - 2 * k)];
    }
    CHECK(holds(a, r));

    // a = a - a.mean()  (exact mean: integer sum, reproducible form, so the reference has its bits)
    {
      double s = 0;
      for (double x : r) s += x;  // integers: exact
      const double m = s / static_cast<double>(n);
      a = a - garray::mean(a, garray::reproducible);
      for (auto& x : r) x = x - m;
    }
    CHECK(holds(a, r));

    // a[1:] -= a[:-1].max()
    {
      const double mx = *std::max_element(r.begin(), r.end() - 1);
      a[idx[range(1, _)]] -= garray::max(a[idx[range(_, -1)]]);
      for (gidx i = 1; i < n; ++i) at(i) = at(i) - mx;
    }
    CHECK(holds(a, r));
  }
}

TEST_CASE("reproducible assign_norm2_change in place (Jacobi on its own array) equals the two-buffer step") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  for (int round = 0; round < 4; ++round) {
    const garray::Shape<2> sh = {test::uniform(rng, 3, 30), test::uniform(rng, 3, 30)};
    ntest::A2 u(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()), {round % 2, round % 2});
    test::Reference<double, 2> ru(sh);
    ntest::randomize(rng, ru, -9, 9);
    ntest::load(u, ru);
    const double dx2 = 0.25, dy2 = 0.5, dnr_inv = 0.5;  // dyadic
    auto inner = u[idx[range(1, -1)][range(1, -1)]];
    auto up = u[idx[range(_, -2)][range(1, -1)]], down = u[idx[range(2, _)][range(1, -1)]];
    auto left = u[idx[range(1, -1)][range(_, -2)]], right = u[idx[range(1, -1)][range(2, _)]];
    // serial two-buffer step: every input read before any output is written
    test::Reference<double, 2> nu = ru;
    garray::detail::ExactSum es;
    for (gidx i = 1; i + 1 < sh[0]; ++i)
      for (gidx j = 1; j + 1 < sh[1]; ++j) {
        const double v =
            ((ru.at({i - 1, j}) + ru.at({i + 1, j})) * dy2 + (ru.at({i, j - 1}) + ru.at({i, j + 1})) * dx2) *
            dnr_inv;
        nu.at({i, j}) = v;
        const double d = v - ru.at({i, j});
        es.add(d * d);
      }
    const double got = garray::assign_norm2_change(
        inner, ((up + down) * dy2 + (left + right) * dx2) * dnr_inv, garray::reproducible);
    CHECK(ntest::same_on_all_ranks(got));
    CHECK(got == std::sqrt(es.round<double>()));
    CHECK(ntest::equal_bits(u, nu));
  }
}

namespace {
/// True on every rank when this rank's block of `a` holds want(i).
template <class F>
bool own_block_is(garray::GlobalArray<double, 1>& a, F&& want) {
  bool ok = true;
  {
    auto blk = a.access();
    for (gidx i = blk.lo(0); i < blk.hi(0); ++i) ok = ok && blk.view()[i] == want(i);
  }
  return test::all_ranks(ok, a.context().comm());
}
}  // namespace

TEST_CASE("aliasing assignment: no rank writes before a slow rank's snapshot is complete") {
  garray::Context ctx;
  if (ctx.size() < 2) return;  // the hazard needs a remote reader
  const gidx n = gidx{1} << 21;
  std::array<std::vector<gidx>, 1> starts{std::vector<gidx>{0, n - 2}};  // ranks >= 2 own nothing
  garray::GlobalArray<double, 1> a(ctx, {n}, garray::Distribution<1>::irregular(starts));
  const auto shifted = [n](gidx i) { return static_cast<double>(i + 1 < n ? i + 1 : i); };
  for (int rep = 0; rep < 3; ++rep) {
    INFO("rep " << rep);
    // a[:-1] = a[1:] * 1.0 (an expression: View = View would go to garray::copy)
    garray::iota(a);
    a[idx[range(_, -1)]] = a[idx[range(1, _)]] * 1.0;
    CHECK(own_block_is(a, shifted));

    // compound: a[:-1] += a[1:]  ->  a[i] = i + (i + 1), a[n-1] = n-1
    garray::iota(a);
    a[idx[range(_, -1)]] += a[idx[range(1, _)]];
    CHECK(own_block_is(a, [n](gidx i) { return static_cast<double>(i + 1 < n ? 2 * i + 1 : i); }));

    // the fused sweep: every change is exactly 1, so the norm is sqrt(n - 1) exactly as
    // summed (integers), and the array is shifted
    garray::iota(a);
    const double change = garray::assign_norm2_change(a[idx[range(_, -1)]], a[idx[range(1, _)]] * 1.0);
    CHECK(change == std::sqrt(static_cast<double>(n - 1)));
    CHECK(own_block_is(a, shifted));

    // the same with the output reversed (rank 0 writes a[n-3] first, right after its snapshot)
    garray::iota(a);
    a[idx[range(n - 2, _, -1)]] = a[idx[range(n - 1, 0, -1)]] * 1.0;
    CHECK(own_block_is(a, shifted));
  }
}

TEST_CASE("overlapping copy within one array: no rank writes before a slow rank fetched its source") {
  garray::Context ctx;
  if (ctx.size() < 2) return;
  const gidx n = gidx{1} << 21;
  std::array<std::vector<gidx>, 1> starts{std::vector<gidx>{0, n - 2}};
  garray::GlobalArray<double, 1> a(ctx, {n}, garray::Distribution<1>::irregular(starts));
  const auto shifted = [n](gidx i) { return static_cast<double>(i + 1 < n ? i + 1 : i); };
  for (int rep = 0; rep < 3; ++rep) {
    INFO("rep " << rep);
    garray::iota(a);
    garray::copy(a[idx[range(_, -1)]], a[idx[range(1, _)]]);  // a[:-1] = a[1:]
    CHECK(own_block_is(a, shifted));

    garray::iota(a);
    a[idx[range(_, -1)]] = a[idx[range(1, _)]];  // View = View: the same copy
    CHECK(own_block_is(a, shifted));

    garray::iota(a);
    garray::copy(a[idx[range(n - 2, _, -1)]], a[idx[range(n - 1, 0, -1)]]);  // a[n-2::-1] = a[n-1:0:-1]
    CHECK(own_block_is(a, shifted));
  }
}

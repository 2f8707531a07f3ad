// Bad input: the documented exception on every rank, nothing written.
#include <cmath>
#include <functional>
#include <garray/garray.hpp>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "numeric/support.hpp"
#include "support/outcome.hpp"

using garray::idx;
using garray::range;
using ntest::A2;
using gidx = garray::Index;

namespace {
using test::message_of;
using test::contains;
}  // namespace

TEST_CASE("shape mismatches throw SizeMismatch on every rank and change nothing") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  A2 a(ctx, {6, 7}), b(ctx, {6, 7}, garray::Distribution<2>::slab(1));
  test::Reference<double, 2> ra(a.shape()), rb(b.shape());
  ntest::randomize(rng, ra, 0, 9);
  ntest::randomize(rng, rb, 0, 9);
  ntest::load(a, ra);
  ntest::load(b, rb);
  auto m = message_of<garray::SizeMismatch>([&] { a[idx[range(0, 3)]] = b[idx[range(0, 4)]] + 1.0; });
  CHECK(contains(m, "garray::assign"));
  CHECK(contains(m, "[4, 7]"));
  CHECK(contains(m, "[3, 7]"));
  m = message_of<garray::SizeMismatch>([&] { (void)garray::sum(a[idx[range(0, 3)]] * b); });
  CHECK(contains(m, "garray::sum"));
  m = message_of<garray::SizeMismatch>([&] { (void)garray::eval(a + b[idx[range(1, 6)]]); });
  CHECK(contains(m, "garray::eval"));
  boost::multi_array<double, 2> loc(boost::extents[6][6]);
  m = message_of<garray::SizeMismatch>([&] { a.view() = b + garray::local(loc); });
  CHECK(contains(m, "local operand"));
  m = message_of<garray::SizeMismatch>([&] { (void)garray::assign_norm2_change(a, b[idx[range(1, 6)]]); });
  CHECK(contains(m, "garray::assign_reduce"));
  m = message_of<garray::SizeMismatch>([&] { (void)garray::assign_norm2_diff(a, b * 2.0, b[idx[range(1, 6)]]); });
  CHECK(contains(m, "garray::assign_reduce"));  // the reference's shape is checked too
  CHECK(ntest::equal_bits(a, ra));
  CHECK(ntest::equal_bits(b, rb));
}

TEST_CASE("operands on different contexts throw InvalidArgument on every rank") {
  garray::Context ctx;
  garray::Context other(MPI_COMM_WORLD);  // the same ranks, another group handle
  A2 a(ctx, {5, 5}), b(other, {5, 5});
  garray::fill(a, 1.0);
  garray::fill(b, 2.0);
  const auto m = message_of<garray::InvalidArgument>([&] { a.view() = b * 2.0; });
  CHECK(contains(m, "different context"));
  CHECK(contains(message_of<garray::InvalidArgument>([&] { (void)garray::dot(a, b); }), "garray::sum"));
  CHECK(garray::sum(a) == 25.0);
  CHECK(garray::sum(b) == 50.0);
}

TEST_CASE("ranks passing different arguments throw CollectiveMismatch on every rank") {
  garray::Context ctx;
  A2 a(ctx, {8, 8}), b(ctx, {8, 8});
  garray::fill(a, 1.0);
  garray::fill(b, 3.0);
  if (ctx.size() > 1) {
    const gidx s = ctx.rank() == 0 ? 0 : 1;  // rank 0 reads another window of b
    CHECK_THROWS_AS(a[idx[range(0, 4)]] = b[idx[range(s, s + 4)]], garray::CollectiveMismatch);
    CHECK_THROWS_AS((void)garray::sum(b[idx[range(s, s + 4)]]), garray::CollectiveMismatch);
    // different expressions (types) over the same views
    if (ctx.rank() == 0) CHECK_THROWS_AS(a.view() = b + 1.0, garray::CollectiveMismatch);
    else CHECK_THROWS_AS(a.view() = b * 1.0, garray::CollectiveMismatch);
    // Broadcast operands of different shapes per rank (a row on rank 0, a column elsewhere):
    // same expression type, each broadcasts on its own, so only the handshake can tell.
    const auto bcast = [&] {
      garray::Section<2> s = garray::Section<2>::full({8, 8});
      if (ctx.rank() == 0) s.count[0] = 1;
      else s.count[1] = 1;
      return garray::View<double, 2, 2>(b, s);
    }();
    CHECK_THROWS_AS(a = a + bcast, garray::CollectiveMismatch);
    CHECK_THROWS_AS((void)garray::sum(a * bcast), garray::CollectiveMismatch);
    CHECK_THROWS_AS(garray::copy(a, bcast), garray::CollectiveMismatch);
    // Different reductions whose passes look alike: var starts with a mean, std_dev is
    // sqrt(var), an integer reproducible sum is the plain sum. Each is its own call.
    if (ctx.rank() == 0) CHECK_THROWS_AS((void)garray::std_dev(b), garray::CollectiveMismatch);
    else CHECK_THROWS_AS((void)garray::var(b), garray::CollectiveMismatch);
    if (ctx.rank() == 0) CHECK_THROWS_AS((void)garray::var(b), garray::CollectiveMismatch);
    else CHECK_THROWS_AS((void)garray::mean(b), garray::CollectiveMismatch);
    garray::GlobalArray<std::int64_t, 1> iv(ctx, {5});
    if (ctx.rank() == 0) CHECK_THROWS_AS((void)garray::sum(iv, garray::reproducible), garray::CollectiveMismatch);
    else CHECK_THROWS_AS((void)garray::sum(iv), garray::CollectiveMismatch);
    // detected, untested until the audit of stop 43: eval's result type, the reproducible
    // tag of assign_norm2_change (out a: unchanged, checked below), mean vs sum and argmax vs
    // argmin along an axis
    if (ctx.rank() == 0)
      CHECK_THROWS_AS((void)garray::eval<float>(b * 1.0), garray::CollectiveMismatch);
    else
      CHECK_THROWS_AS((void)garray::eval<double>(b * 1.0), garray::CollectiveMismatch);
    if (ctx.rank() == 0)
      CHECK_THROWS_AS((void)garray::assign_norm2_change(a, b * 2.0, garray::reproducible),
                      garray::CollectiveMismatch);
    else
      CHECK_THROWS_AS((void)garray::assign_norm2_change(a, b * 2.0), garray::CollectiveMismatch);
    if (ctx.rank() == 0)
      CHECK_THROWS_AS((void)garray::mean(b, garray::Axis{0}), garray::CollectiveMismatch);
    else
      CHECK_THROWS_AS((void)garray::sum(b, garray::Axis{0}), garray::CollectiveMismatch);
    if (ctx.rank() == 0)
      CHECK_THROWS_AS((void)garray::argmax(b, garray::Axis{1}), garray::CollectiveMismatch);
    else
      CHECK_THROWS_AS((void)garray::argmin(b, garray::Axis{1}), garray::CollectiveMismatch);
  }
  CHECK(garray::sum(a) == 64.0);
  CHECK(garray::sum(b) == 192.0);
}

TEST_CASE("a stale view on one rank only: every rank throws, nobody waits, nothing written") {
  // Rank 0 moves its array away (a local operation), so its view dangles while the other
  // ranks' views are fine. Every collective through the view must reach the handshake on
  // rank 0 too: rank 0 throws InvalidArgument, the others CollectiveMismatch.
  garray::Context ctx;
  A2 a(ctx, {5, 6}), b(ctx, {5, 6});
  garray::fill(b, 2.0);
  auto v = a[idx[range(1, 4)]];
  std::optional<A2> moved;
  if (ctx.rank() == 0) moved.emplace(std::move(a));
  // rank 0 its InvalidArgument; the others CollectiveMismatch with rank 0's reason ("invalid
  // call on rank 0": its message was broadcast, so every rank took part)
  const auto expect = [&](auto&& f) {
    test::expect_one_rank_error<garray::InvalidArgument>(ctx.rank(), 0, "destroyed, moved from or assigned to", f);
  };
  expect([&] { v = b[idx[range(0, 3)]]; });         // copy (array layer)
  expect([&] { v = b[idx[range(0, 3)]] * 3.0; });   // assign (numeric)
  expect([&] { (void)garray::sum(v); });            // a reduction driven by the view
  expect([&] { (void)garray::sum(b[idx[range(2, 5)]] + v); });  // a stale operand
  expect([&] { v.fill(1.0); });                     // fill (array layer)
  expect([&] { garray::fill(v, 1.0); });
  expect([&] { v = 1.0; });                         // a scalar assignment is a fill
  expect([&] { garray::copy(b[idx[range(0, 3)]], v); });  // a stale copy source
  expect([&] { (void)garray::array_str(v); });      // printing
  expect([&] {
    std::ostringstream os;
    os << v;
  });
  expect([&] { (void)garray::sum(v, garray::Axis{1}); });  // axis reduction, scan
  expect([&] { (void)garray::cumsum(v, garray::Axis{0}); });
  garray::GlobalArray<double, 2> sq(ctx, {6, 6}), c3(ctx, {3, 6});
  garray::fill(sq, 1.0);
  expect([&] { garray::gemm(1.0, v, sq, 0.0, c3); });  // matrix products: a stale A, a stale C
  expect([&] { garray::gemm(1.0, b[idx[range(0, 3)]], sq[idx[range(0, 6)][range(0, 6)]], 0.0, v); });
  expect([&] { (void)garray::matmul(v, sq); });
  garray::GlobalArray<std::int64_t, 1> ix(ctx, {4});
  garray::iota(ix, std::int64_t{0}, std::int64_t{2});
  expect([&] { (void)garray::take(v, ix); });       // indexing: take, put, masked_select, place
  expect([&] { garray::put(v, ix, 5.0); });
  expect([&] { (void)garray::masked_select(v, b[idx[range(0, 3)]] > 1.0); });
  expect([&] { garray::place(v, b[idx[range(0, 3)]] > 1.0, b[idx[range(0, 3)]]); });
  expect([&] { garray::place(b[idx[range(0, 3)]], b[idx[range(0, 3)]] > 1.0, v); });
  expect([&] { garray::put(b[idx[range(0, 3)]], ix, v); });  // stale values
  // integer fill_random checks its bounds; the stale view must still reach the handshake
  garray::GlobalArray<std::int64_t, 2> ia(ctx, {5, 6});
  auto iv = ia[idx[range(1, 4)]];
  std::optional<garray::GlobalArray<std::int64_t, 2>> imoved;
  if (ctx.rank() == 0) imoved.emplace(std::move(ia));
  expect([&] { garray::fill_random(iv, 3, std::int64_t{0}, std::int64_t{9}); });
  // Nothing was written, and the context still works.
  A2& live = ctx.rank() == 0 ? *moved : a;
  CHECK(garray::sum(live) == 0.0);
  CHECK(garray::sum(b) == 60.0);
  CHECK(garray::sum(c3) == 0.0);
}

TEST_CASE("an argument bad on one rank only (gemm, arange, linspace, eye): that rank its error, the others its message") {
  garray::Context ctx;
  if (ctx.size() < 2) return;
  const bool odd = ctx.rank() == ctx.size() - 1;
  const auto check = [&](const char* what, const char* part, auto&& f) {
    INFO("what := " << std::string(what));
    test::expect_one_rank_error<garray::Error>(ctx.rank(), ctx.size() - 1, part, f);
  };
  A2 a(ctx, {4, 3}), b(ctx, {3, 5}), c(ctx, {4, 5}), wrong(ctx, {5, 4});
  garray::fill(a, 1.0);
  garray::fill(b, 2.0);
  check("gemm", "C has shape", [&] { garray::gemm(1.0, a, b, 0.0, odd ? wrong : c); });
  CHECK(garray::sum(c) == 0.0);  // nothing written
  check("arange", "step 0 (start 0, stop 10, step 0)",
        [&] { (void)garray::arange<int>(ctx, 0, 10, odd ? 0 : 1); });
  check("arange", "(start 0, stop inf, step 1)",
        [&] { (void)garray::arange<double>(ctx, 0.0, odd ? HUGE_VAL : 5.0, 1.0); });
  check("linspace", "negative number of samples", [&] { (void)garray::linspace<double>(ctx, 0.0, 1.0, odd ? -1 : 5); });
  check("eye", "negative extent", [&] { (void)garray::eye<double>(ctx, odd ? -2 : 2, 2); });
  CHECK(garray::sum(garray::eye<double>(ctx, 3, 3)) == 3.0);  // the context still works
  garray::GlobalArray<std::int32_t, 1> ri(ctx, {10});
  ri.fill(3);
  check("fill_random", "lo < hi",
        [&] { garray::fill_random(ri, 1, std::int32_t{odd ? 5 : 0}, std::int32_t{5}); });
  CHECK(garray::sum(ri) == 30);  // nothing written
}

TEST_CASE("fill_random of integers: lo >= hi is NumPy's ValueError, the full int64 range works") {
  garray::Context ctx;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {1000});
  a.fill(7);
  for (const auto& [lo, hi] : {std::pair<std::int64_t, std::int64_t>{5, 5}, {10, 0}}) {
    std::string msg;
    CHECK(test::outcome([&] { garray::fill_random(a, 1, lo, hi); }, &msg) == test::Got::invalid);
    CHECK(msg.find("lo < hi") != std::string::npos);
  }
  // floating bounds for integer elements: the integers they convert to (0 and 0 here), and
  // values beyond int64 or not finite, are refused too
  for (const auto& [lo, hi] :
       {std::pair<double, double>{0.2, 0.9}, {0.0, 1e19}, {0.0, HUGE_VAL}, {NAN, 3.0}}) {
    CAPTURE(lo);
    CAPTURE(hi);
    CHECK(test::outcome([&] { garray::fill_random(a, 1, lo, hi); }) == test::Got::invalid);
  }
  CHECK(garray::sum(a) == 7000);  // nothing written
  {  // int32 elements: bounds beyond int32 wrapped the values drawn (NumPy raises ValueError)
    garray::GlobalArray<std::int32_t, 1> b(ctx, {100});
    b.fill(7);
    std::string msg;
    CHECK(test::outcome([&] { garray::fill_random(b, 1, std::int64_t{0}, std::int64_t{5000000000}); },
                        &msg) == test::Got::invalid);
    CHECK(msg.find("within int32") != std::string::npos);
    CHECK(test::outcome([&] { garray::fill_random(b, 1, std::int64_t{-3000000000}, std::int64_t{0}); }) ==
          test::Got::invalid);
    CHECK(garray::sum(b) == 700);
    const auto top = std::int64_t{std::numeric_limits<std::int32_t>::max()};
    garray::fill_random(b, 2, top - 1, top + 1);  // hi is exclusive: INT32_MAX is the last value
    CHECK(garray::min(b) >= top - 1);
    CHECK(garray::max(b) == top);
  }
  // hi - lo does not fit in int64: computed modulo 2^64, not overflowed (UBSan checks)
  const auto lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  garray::fill_random(a, 3, lo, hi);
  CHECK(garray::min(a) < -(std::int64_t{1} << 60));  // 1000 draws over the whole range
  CHECK(garray::max(a) > (std::int64_t{1} << 60));
  garray::fill_random(a, 4, std::int64_t{-2}, std::int64_t{1});  // small ranges unchanged: -2..0
  CHECK(garray::min(a) == -2);
  CHECK(garray::max(a) == 0);
}

TEST_CASE("an array moved from on one rank only: every collective taking it throws everywhere, nobody waits") {
  // The moved-from shell keeps its context: array collectives join their handshake with the
  // reason (the moved-from rank throws InvalidArgument, the others CollectiveMismatch with
  // its message), and an array passed where a view is taken becomes a stale view.
  garray::Context ctx;
  if (ctx.size() < 2) return;
  const int bad = ctx.size() - 1;
  A2 a(ctx, {6, 6}, garray::Distribution<2>::blocked(), garray::Shape<2>{1, 1}), b(ctx, {6, 6});
  garray::fill(a, 1.0);
  garray::fill(b, 2.0);
  std::optional<A2> moved;
  if (ctx.rank() == bad) moved.emplace(std::move(a));
  const auto expect = [&](const char* what, auto&& f) {
    INFO("what := " << std::string(what));
    test::expect_one_rank_error<garray::InvalidArgument>(ctx.rank(), bad, "moved from", f);
  };
  expect("sync", [&] { a.sync(); });
  expect("fill", [&] { a.fill(3.0); });
  expect("garray::fill", [&] { garray::fill(a, 3.0); });
  expect("sum", [&] { (void)garray::sum(a); });
  expect("sum of an expression", [&] { (void)garray::sum(b * a); });
  expect("max along an axis", [&] { (void)garray::max(a, garray::Axis{0}); });
  expect("cumsum", [&] { (void)garray::cumsum(a, garray::Axis{1}); });
  expect("eval", [&] { (void)garray::eval(a + 1.0); });
  expect("assign into", [&] { a = b * 2.0; });
  expect("assign from", [&] { b = a * 2.0; });
  expect("copy into", [&] { garray::copy(a, b); });
  expect("copy from", [&] { garray::copy(b, a); });
  expect("zeros_like", [&] { (void)garray::zeros_like(a); });
  expect("array_str", [&] { (void)garray::array_str(a); });
  expect("gather", [&] { (void)garray::gather(a, 0); });
  expect("allgather", [&] { (void)garray::allgather(a); });
  expect("update_ghosts", [&] { garray::update_ghosts(a); });
  expect("redistribute", [&] { (void)garray::redistribute(a, garray::Distribution<2>::slab(1)); });
  expect("transpose", [&] { (void)garray::transpose(a, {1, 0}); });
  expect("matmul", [&] { (void)garray::matmul(a, b); });
  expect("gemm", [&] { garray::gemm(1.0, b, b, 0.0, a); });
  {  // batched matmul, also with no batches (nothing after its handshake would notice)
    for (const gidx nb : {gidx(2), gidx(0)}) {
      CAPTURE(nb);
      garray::GlobalArray<double, 3> x(ctx, {nb, 3, 3}), y(ctx, {nb, 3, 3});
      std::optional<garray::GlobalArray<double, 3>> gone;
      if (ctx.rank() == bad) gone.emplace(std::move(nb == 0 ? y : x));
      const auto before = ctx.stats().arrays_created;
      expect("matmul 3-d", [&] { (void)garray::matmul(x, y); });
      CHECK(ctx.stats().arrays_created == before);  // the result was never created
      // moved back, so that every rank destroys the windows in one order (the cache's next
      // create compares its pool)
      if (gone) (nb == 0 ? y : x) = std::move(*gone);
    }
  }
  // nothing written, and the context still works
  const A2& live = ctx.rank() == bad ? *moved : a;
  CHECK(garray::sum(const_cast<A2&>(live)) == 36.0);
  CHECK(garray::sum(b) == 72.0);
}

TEST_CASE("a local operand whose shape differs across ranks: CollectiveMismatch everywhere") {
  // local() asks for the same array on every rank. Shapes that each broadcast but differ
  // would plan differently per rank under one handshake: the shape is in the signature.
  garray::Context ctx;
  if (ctx.size() < 2) return;
  A2 a(ctx, {4, 5});
  garray::fill(a, 1.0);
  const bool odd = ctx.rank() == ctx.size() - 1;
  boost::multi_array<double, 2> row(boost::extents[1][5]), full(boost::extents[4][5]);
  std::fill_n(row.data(), row.num_elements(), 2.0);
  std::fill_n(full.data(), full.num_elements(), 2.0);
  CHECK_THROWS_AS((void)garray::sum(a * garray::local(odd ? row : full)), garray::CollectiveMismatch);
  CHECK_THROWS_AS(a = a + garray::local(odd ? row : full), garray::CollectiveMismatch);
  CHECK(garray::sum(a) == 20.0);  // nothing written
  CHECK(garray::sum(a * garray::local(full)) == 40.0);  // the same shape everywhere: fine
}

TEST_CASE("an expression without an array or view operand throws InvalidArgument (no context to run on)") {
  boost::multi_array<double, 1> m(boost::extents[4]);
  std::fill_n(m.data(), 4, 1.0);
  const auto msg = message_of<garray::InvalidArgument>([&] { (void)garray::sum(garray::local(m)); });
  CHECK(contains(msg, "garray::sum"));
  CHECK(contains(msg, "no array or view operand"));
  CHECK(contains(message_of<garray::InvalidArgument>([&] { (void)garray::cumsum(garray::local(m), garray::Axis{0}); }),
                 "no array or view operand"));
}

// A negative integer exponent is found while evaluating, after the handshake. The writing
// calls evaluate such an expression into a temporary first, so the output (also when it is
// an operand) is unchanged on every rank: before, every element before the bad one was
// stored (from the strong-guarantee audit). Blocked: every rank owns two elements, the bad
// one is the last rank's second.
TEST_CASE("a negative integer exponent in an assigned expression throws before anything is written") {
  garray::Context ctx;
  const int p = ctx.size();
  const gidx n = 2 * p;
  garray::GlobalArray<std::int32_t, 1> base(ctx, {n}), e(ctx, {n}), out(ctx, {n});
  base.fill(3);
  e.fill(2);
  e[idx[range(n - 1, n)]].fill(-1);
  out.fill(7);
  const auto out_before = test::whole_array(out);
  const auto base_before = test::whole_array(base);
  const auto expect_error = [&](const char* what, const std::function<void()>& f) {
    std::string msg;
    const test::Got g = test::outcome(f, &msg);
    INFO("what := " << what);
    CAPTURE(msg);
    CHECK(contains(msg, "negative integer power"));
    CHECK((ctx.rank() == p - 1 ? g == test::Got::invalid : g == test::Got::failure));
    CHECK(test::all_ranks(test::whole_array(out) == out_before));
    CHECK(test::all_ranks(test::whole_array(base) == base_before));
  };
  expect_error("assign", [&] { out = garray::pow(base, e); });
  expect_error("in place", [&] { base = garray::pow(base, e); });
  expect_error("compound", [&] { out += garray::pow(base, e) * 2; });
  expect_error("view", [&] { out[idx[range(0, n)]] = garray::where(e < 5, garray::pow(base, e), 0); });
  expect_error("assign_norm2_change", [&] { (void)garray::assign_norm2_change(out, garray::pow(base, e)); });
  expect_error("assign_norm2_diff", [&] {
    (void)garray::assign_norm2_diff(out, garray::pow(base, e), base, garray::reproducible);
  });
  // ... also when the throwing pow is in the reference operand (evaluated first as well)
  expect_error("assign_norm2_diff, pow in ref",
               [&] { (void)garray::assign_norm2_diff(out, base + 1, garray::pow(base, e)); });
  expect_error("assign_norm2_diff(reproducible), pow in ref", [&] {
    (void)garray::assign_norm2_diff(out, base + 1, garray::pow(base, e), garray::reproducible);
  });
  expect_error("assign_reduce, pow in ref", [&] {
    (void)garray::assign_reduce(out, base + 1, garray::pow(base, e) * 2, garray::max_reducer{},
                                [](auto nv, auto rv) { return static_cast<double>(nv - rv); });
  });
  // The same expressions without a negative exponent still write (the detour is transparent).
  e.fill(2);
  out = garray::pow(base, e);
  CHECK(test::all_ranks(test::whole_array(out) == std::vector<std::int32_t>(static_cast<std::size_t>(n), 9)));
  CHECK(garray::assign_norm2_change(out, garray::pow(base, e) + 1) == doctest::Approx(std::sqrt(double(n))));
  // out = 10 everywhere now; |(base + 1) - pow(base, e)| = |4 - 9| = 5 per element
  CHECK(garray::assign_norm2_diff(out, base + 1, garray::pow(base, e)) ==
        doctest::Approx(5 * std::sqrt(double(n))));
  CHECK(test::all_ranks(test::whole_array(out) == std::vector<std::int32_t>(static_cast<std::size_t>(n), 4)));
}

// Integer overflow and large counts, numeric layer. Each case needs a few KiB (the broadcast
// one 2 MiB).
#include <cstdint>
#include <garray/garray.hpp>
#include <limits>
#include <vector>

#include "support/outcome.hpp"
#include "support/test_support.hpp"

using garray::Axis;
using garray::Index;
using garray::Shape;

namespace {
using test::contains;
using test::message_of;
}  // namespace

// ---- Axis from an unsigned 64-bit value -------------------------------------------------------
// semantics.md (axis reductions): an axis outside [-M, M) throws InvalidArgument naming the axis
// as given. Axis{k} with an unsigned k beyond PTRDIFF_MAX saturates, so Axis{SIZE_MAX} (e.g.
// `x.ndim() - 2` computed in size_t for a 1-d operand) is an invalid axis for sum, cumsum and
// argmax, not the last one. NumPy: np.sum(x, axis=2**64-1) raises AxisError. (A regression test:
// the value wrapped to -1 and sum reduced along the last axis.)
TEST_CASE("Axis{size_t} beyond PTRDIFF_MAX is an invalid axis, not a negative one") {
  garray::Context ctx;
  auto x = garray::zeros<double>(ctx, Shape<2>{3, 4});
  const std::size_t bad = std::numeric_limits<std::size_t>::max();
  std::string m;
  const test::Got g = test::outcome([&] { (void)garray::sum(x, Axis{bad}); }, &m);
  CAPTURE(m);
  CHECK(g == test::Got::invalid);  // not a [3] array (the sum along axis 1)
  CHECK(contains(m, "axis"));
  CHECK_FALSE(contains(m, "axis -"));  // the axis as given is not negative
  // the same for the other axis-taking calls (they share detail::axis_index)
  CHECK(test::outcome([&] { (void)garray::cumsum(x, Axis{bad}); }) == test::Got::invalid);
  CHECK(test::outcome([&] { (void)garray::argmax(x, Axis{std::uint64_t{1} << 63}); }) ==
        test::Got::invalid);  // 2^63: one past PTRDIFF_MAX
}

// ---- arange's length for integer arguments beyond 2^53 ----------------------------------------
// semantics.md: the 1-d / 2-d array holds NumPy's values bitwise (same formulas in the same type).
// NumPy subtracts the Python ints exactly: np.arange(2**53, 2**53 + 3) has 3 elements, stop
// excluded. arange with integer arguments computes its length exactly, without double rounding;
// checked at 2^53, at INT64_MIN and with a step of 2 just below INT64_MAX. (A regression test:
// the length came from doubles, so arange(2^53, 2^53 + 1) was empty and arange(2^53, 2^53 + 3)
// ended at stop.)
TEST_CASE("arange with int64 arguments beyond 2^53: NumPy's length, stop excluded") {
  garray::Context ctx;
  const std::int64_t b = std::int64_t{1} << 53;
  auto values = [](const garray::GlobalArray<std::int64_t, 1>& a) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(a.size()));
    if (!v.empty()) a.get(garray::idx[garray::range(0, a.size())], std::span<std::int64_t>(v));
    return v;
  };
  {
    auto a = garray::arange<std::int64_t>(ctx, b, b + 1);  // np.arange(2**53, 2**53 + 1)
    CHECK(a.size() == 1);                                  // not 0
    CHECK(values(a) == std::vector<std::int64_t>{b});
  }
  {
    auto a = garray::arange<std::int64_t>(ctx, b, b + 3);  // np.arange(2**53, 2**53 + 3)
    CHECK(a.size() == 3);                                  // not 4, ending at stop
    CHECK(values(a) == std::vector<std::int64_t>{b, b + 1, b + 2});
  }
  {
    const std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    auto a = garray::arange<std::int64_t>(ctx, lo, lo + 3);  // np.arange(-2**63, -2**63 + 3)
    CHECK(a.size() == 3);                                    // not 0
    CHECK(values(a) == std::vector<std::int64_t>{lo, lo + 1, lo + 2});
  }
  {
    const std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    auto a =
        garray::arange<std::int64_t>(ctx, hi - 5, hi, std::int64_t{2});  // np.arange(2**63-6, 2**63-1, 2)
    CHECK(a.size() == 3);                                                // not 0
    CHECK(values(a) == std::vector<std::int64_t>{hi - 5, hi - 3, hi - 1});
  }
}

// ---- a broadcast shape whose element count overflows int64 -----------------------------------
// semantics.md "Errors": a shape whose element count overflows int64 throws InvalidArgument.
// Four operands of 2^16 elements along different axes broadcast to {2^16, 2^16, 2^16, 2^16},
// 2^64 elements: sum, count_nonzero, eval, an axis sum and cumsum of their product throw
// InvalidArgument naming int64 on every rank (set_free_driver checks the broadcast shape before
// the handshake) and create no array. Without the check the element count would wrap to 0 and
// sum() would return 0.
TEST_CASE("an expression whose broadcast shape overflows int64: InvalidArgument on every rank") {
  garray::Context ctx;
  const Index k = Index{1} << 16;
  auto a = garray::ones<double>(ctx, Shape<4>{k, 1, 1, 1});
  auto b = garray::ones<double>(ctx, Shape<4>{1, k, 1, 1});
  auto c = garray::ones<double>(ctx, Shape<4>{1, 1, k, 1});
  auto d = garray::ones<double>(ctx, Shape<4>{1, 1, 1, k});
  const auto created = ctx.stats().arrays_created;
  std::string m;
  CHECK(test::outcome([&] { (void)garray::sum(a * b * c * d); }, &m) == test::Got::invalid);
  CAPTURE(m);
  CHECK(contains(m, "int64"));
  CHECK(test::outcome([&] { (void)garray::count_nonzero(a * b * c * d); }) == test::Got::invalid);
  CHECK(test::outcome([&] { (void)garray::eval(a * b * c * d); }) == test::Got::invalid);
  CHECK(test::outcome([&] { (void)garray::sum(a * b * c * d, Axis{0}); }) == test::Got::invalid);
  CHECK(test::outcome([&] { (void)garray::cumsum(a * b * c * d); }) == test::Got::invalid);
  CHECK(ctx.stats().arrays_created == created);
}

// Bad input: every case throws the documented error on the rank that erred, leaves the
// array unchanged, and the program continues. Collective misuse throws on every rank.
#include "support/test_support.hpp"

using garray::_;
using garray::all;
using garray::idx;
using garray::range;
using A2 = garray::GlobalArray<double, 2>;

namespace {

// Fills with a known pattern (i*100+j) and returns the reference.
test::Reference<double, 2> pattern(A2& a) {
  test::Reference<double, 2> ref(a.shape());
  for (garray::Index i = 0; i < a.shape()[0]; ++i)
    for (garray::Index j = 0; j < a.shape()[1]; ++j) ref.at({i, j}) = static_cast<double>(i * 100 + j);
  {
    auto blk = a.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = ref.at({i, j});
  }
  a.sync();
  return ref;
}

using test::message_of;

using test::contains;

}  // namespace

TEST_CASE("one-sided calls with bad input throw on the erring rank and change nothing") {
  garray::Context ctx;
  A2 a(ctx, {6, 10});
  auto ref = pattern(a);
  const int culprit = ctx.size() - 1;  // only this rank errs; the others carry on
  if (ctx.rank() == culprit) {
    std::vector<double> buf(10, -7.0);
    std::string m = message_of<garray::BoundsError>([&] { a.put(idx[6], std::span<const double>(buf)); });
    CHECK(contains(m, "GlobalArray<double,2>::put"));
    CHECK(contains(m, "index 6 out of range for extent 6 in dim 0"));
    CHECK(contains(m, "[rank " + std::to_string(ctx.rank())));
    m = message_of<garray::BoundsError>([&] { a.get(idx[all][-11], std::span<double>(buf.data(), 6)); });
    CHECK(contains(m, "index -11"));
    m = message_of<garray::InvalidSlice>([&] { a.accumulate(idx[range(0, 6, 0)], std::span<const double>(buf)); });
    CHECK(contains(m, "step cannot be zero"));
    m = message_of<garray::SizeMismatch>([&] { a.put(idx[1], std::span<const double>(buf.data(), 9)); });
    CHECK(contains(m, "buffer has 9 elements"));
    CHECK(contains(m, "has 10"));
    boost::multi_array<double, 2> wrong(boost::extents[3][4]);
    m = message_of<garray::SizeMismatch>([&] { a.put(idx[range(0, 4)][range(0, 3)], wrong); });
    CHECK(contains(m, "buffer of shape [3, 4]"));
    CHECK(contains(m, "selection of shape [4, 3]"));
    m = message_of<garray::SizeMismatch>([&] { a.accumulate(idx[range(0, 4)][range(0, 3)], wrong); });
    CHECK(contains(m, "accumulate"));
    std::vector<garray::Shape<2>> list{{0, 0}, {5, 9}, {6, 0}};
    std::vector<double> vals(3, -1.0);
    m = message_of<garray::BoundsError>([&] { a.scatter(list, vals); });
    CHECK(contains(m, "index list entry 2 [6, 0]"));
    m = message_of<garray::BoundsError>([&] { a.scatter_acc(list, vals); });
    CHECK(contains(m, "scatter_acc"));
    m = message_of<garray::SizeMismatch>([&] { a.gather(list, std::span<double>(vals.data(), 2)); });
    CHECK(contains(m, "3 indices but 2 values"));
    m = message_of<garray::BoundsError>([&] { (void)a.owner({0, 10}); });
    CHECK(contains(m, "owner"));
    // Nonblocking calls validate before starting anything too.
    m = message_of<garray::BoundsError>([&] { (void)a.put_nb(idx[7], std::span<const double>(buf)); });
    CHECK(contains(m, "index 7"));
  }
  a.sync();
  CHECK(test::equal_on_all_ranks(a, ref));
  // and the array keeps working
  if (ctx.rank() == culprit) a.put(idx[0][0], std::span<const double>(std::vector<double>{42.0}));
  a.sync();
  CHECK(a.get(idx[0][0]) == 42.0);
}

TEST_CASE("read_inc bad index throws BoundsError") {
  garray::Context ctx;
  garray::GlobalArray<std::int32_t, 1> c(ctx, {4});
  if (ctx.rank() == 0) CHECK_THROWS_AS(c.read_inc({4}, 1), garray::BoundsError);
  c.sync();
  CHECK(c.get(idx[all])[0] == 0);
}

TEST_CASE("collective create with disagreeing arguments throws CollectiveMismatch on every rank") {
  garray::Context ctx;
  if (ctx.size() == 1) return;  // nothing to disagree with
  // shapes differ
  std::string m = message_of<garray::CollectiveMismatch>([&] { A2 a(ctx, {4, 4 + (ctx.rank() == 1 ? 1 : 0)}); });
  CHECK(contains(m, "GlobalArray<double,2>::create"));
  CHECK(contains(m, "shape [4, "));
  // distributions differ
  m = message_of<garray::CollectiveMismatch>([&] {
    A2 a(ctx, {8, 8}, ctx.rank() == 0 ? garray::Distribution<2>::slab(0) : garray::Distribution<2>::slab(1));
  });
  CHECK(contains(m, "create"));
  // element types differ: rank 0 creates float, the others double
  if (ctx.rank() == 0) {
    m = message_of<garray::CollectiveMismatch>([&] { garray::GlobalArray<float, 2> a(ctx, {8, 8}); });
  } else {
    m = message_of<garray::CollectiveMismatch>([&] { A2 a(ctx, {8, 8}); });
  }
  CHECK(contains(m, "different collectives or passed different arguments"));
  // one rank passes an invalid distribution: it reports its own reason, the others a mismatch
  if (ctx.rank() == 0) {
    m = message_of<garray::InvalidArgument>([&] { A2 a(ctx, {8, 8}, garray::Distribution<2>::grid({100, 1})); });
    CHECK(contains(m, "needs 100 ranks"));
  } else {
    m = message_of<garray::CollectiveMismatch>([&] { A2 a(ctx, {8, 8}); });
    CHECK(contains(m, "create"));
  }
  // every rank passes the same invalid distribution: everyone gets InvalidArgument
  m = message_of<garray::InvalidArgument>([&] { A2 a(ctx, {8, 8}, garray::Distribution<2>::slab(5)); });
  CHECK(contains(m, "slab axis 5"));
  // after all that, collectives still line up
  A2 ok(ctx, {8, 8});
  ok.fill(1.0);
  CHECK(ok.get(idx[7][7]) == 1.0);
  CHECK(ctx.stats().leaked_windows == 0);
}

TEST_CASE("sync on different arrays is detected on every rank") {
  garray::Context ctx;
  if (ctx.size() == 1) return;
  A2 a(ctx, {4, 4}), b(ctx, {4, 4});
  const std::string m = message_of<garray::CollectiveMismatch>([&] {
    if (ctx.rank() == 0) a.sync();
    else b.sync();
  });
  CHECK(contains(m, "sync"));
  a.sync();
  b.sync();
}

// A get, get_nb or gather that throws on bad input leaves the caller's buffer untouched, also
// when the bad list entry comes after entries other ranks own (strong-guarantee audit).
namespace untouched_buffer {
TEST_CASE("a get, get_nb or gather that throws leaves the caller's buffer untouched") {
  garray::Context ctx;
  A2 a(ctx, {6, 10});
  auto ref = pattern(a);
  const std::vector<double> sentinel(10, -7.0);
  std::vector<double> buf = sentinel;
  CHECK_THROWS_AS(a.get(idx[6], std::span<double>(buf)), garray::BoundsError);
  CHECK(buf == sentinel);
  CHECK_THROWS_AS(a.get(idx[1], std::span<double>(buf.data(), 9)), garray::SizeMismatch);
  CHECK(buf == sentinel);
  CHECK_THROWS_AS((void)a.get_nb(idx[all][10], std::span<double>(buf.data(), 6)), garray::BoundsError);
  CHECK(buf == sentinel);
  {
    boost::multi_array<double, 2> wrong(boost::extents[3][4]);
    std::fill_n(wrong.data(), wrong.num_elements(), -7.0);
    CHECK_THROWS_AS(a.get(idx[range(0, 4)][range(0, 3)], wrong), garray::SizeMismatch);
    CHECK(std::all_of(wrong.data(), wrong.data() + wrong.num_elements(), [](double x) { return x == -7.0; }));
  }
  // entries owned by rank 0 and the last rank first, the bad one last
  const std::vector<garray::Shape<2>> list{{0, 0}, {5, 9}, {3, 4}, {6, 0}};
  std::vector<double> vals(4, -7.0);
  CHECK_THROWS_AS(a.gather(list, vals), garray::BoundsError);
  CHECK(vals == std::vector<double>(4, -7.0));
  auto col = a[idx[all][9]];  // a view: view coordinates
  const std::vector<garray::Shape<1>> ks{{0}, {5}, {-7}};
  std::vector<double> three(3, -7.0);
  CHECK_THROWS_AS(col.gather(ks, three), garray::BoundsError);
  CHECK(three == std::vector<double>(3, -7.0));
  CHECK_THROWS_AS(col.scatter_acc(ks, std::vector<double>(3, 1.0)), garray::BoundsError);
  CHECK_THROWS_AS((void)col.get_nb(std::span<double>(buf.data(), 5)), garray::SizeMismatch);
  CHECK(buf == sentinel);
  a.sync();
  CHECK(test::equal_on_all_ranks(a, ref));
}
}  // namespace untouched_buffer

// Integer overflow and large counts, array layer. None of these tests allocates more than a
// few elements: huge extents own nothing, or are only index math.
#include <cstdint>
#include <limits>

#include "support/outcome.hpp"
#include "support/test_support.hpp"

using garray::_;
using garray::idx;
using garray::Index;
using garray::range;
using garray::Shape;

namespace {
using test::contains;
using test::message_of;
}  // namespace

// ---- slice items from unsigned 64-bit integers ------------------------------------------------
// semantics.md "Slices": an integer index must be in [-len, len) or BoundsError is thrown;
// out-of-range start/stop are clamped exactly as slice.indices(len) does. An unsigned index,
// bound or step beyond INT64_MAX saturates to INT64_MAX, so it is out of range, never a negative
// value counting from the end. NumPy: a[2**64 - 1] raises IndexError, a[2**63:] is empty,
// a[0:2**64 - 1] is the whole array. The usual source of such a value is an unsigned underflow
// (`v.size() - 1` with v empty). (A regression test: the value wrapped to a negative index.)
TEST_CASE("slice items from size_t values >= 2^63 are out of range, not negative indices") {
  garray::Context ctx;
  garray::GlobalArray<double, 1> a(ctx, {10});
  garray::iota(a, 0.0, 1.0);
  const std::size_t max = std::numeric_limits<std::size_t>::max();  // 2^64 - 1, i.e. "0 - 1"
  const std::uint64_t half = std::uint64_t{1} << 63;                // 2^63

  // an integer index: BoundsError (not a read of a[-1] == a[9])
  double got = -1.0;
  const std::string m = message_of<garray::BoundsError>([&] { got = a.get(idx[max]); });
  CAPTURE(m);
  CAPTURE(got);
  CHECK(contains(m, "out of range"));
  // the same through a view, and for a 2^63 index: the message names no negative index
  auto v = a.view();
  CHECK_THROWS_AS((void)v[idx[max]], garray::BoundsError);
  const std::string m2 = message_of<garray::BoundsError>([&] { (void)a.get(idx[half]); });
  CAPTURE(m2);
  CHECK_FALSE(contains(m2, "index -"));  // the value is not negative

  // range bounds: clamped as slice.indices does (a start of 2^63 selects nothing, not the whole
  // array; a stop of 2^64 - 1 keeps the last element)
  CHECK(a.section(idx[range(half, _)]).size() == 0);
  CHECK(a.section(idx[range(max, _)]).size() == 0);
  CHECK(a.section(idx[range(0, max)]).size() == 10);
  CHECK(a.section(idx[range(std::size_t{3}, max)]).size() == 7);
  CHECK(a.section(idx[range(half, _, -1)]).size() == 10);  // numpy a[2**63::-1]: everything, reversed
  // an unsigned step of 2^64 - 1 is a huge positive step, not -1: numpy a[0:10:2**64-1] is [a[0]]
  CHECK(a.section(idx[range(0, 10, max)]).size() == 1);
}

// ---- from_local: the sum of the local extents along the axis --------------------------------
// semantics.md "Errors": sizes are overflow-checked (a shape that overflows int64 throws
// InvalidArgument) and messages name the call and the values. Ranks 0 and 1 contribute 2^62 rows
// each; every local array has extents {2^62, 0}, so no memory is behind the huge extent.
// from_local must throw InvalidArgument naming from_local and the overflow. (A regression test:
// the sum wrapped, and create reported a "negative extent" the caller never passed.)
TEST_CASE(
    "from_local: extents along the axis whose sum overflows int64 are InvalidArgument naming from_local") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  if (p < 2) return;  // one rank cannot overflow
  double dummy = 0;
  // ranks 0 and 1 contribute 2^62 rows each (2^63 > INT64_MAX), the others none
  const Index rows = me < 2 ? Index{1} << 62 : 0;
  boost::multi_array_ref<double, 2> loc(&dummy, boost::extents[rows][0]);
  std::string m;
  const test::Got g = test::outcome([&] { (void)garray::from_local(ctx, loc, 0); }, &m);
  CAPTURE(m);
  CHECK(g == test::Got::invalid);
  CHECK(contains(m, "from_local"));  // not GlobalArray's create
  CHECK_FALSE(contains(m, "negative"));
  CHECK(contains(m, "more than an Index holds"));
}

// A valid create near the limit: a zero-element array whose first extent is INT64_MAX (its
// element count, 0, fits) is created, with every rank along the long dimension. The blocked
// grid's block-size estimate n/p + (n%p != 0) must not overflow; an overflow is undefined
// behaviour that tests/long/sanitizers.sh (UBSan) catches. (A regression test: the estimate
// was (n + p - 1) / p.)
TEST_CASE("a zero-element array with an extent of INT64_MAX is created without overflow (UBSan)") {
  garray::Context ctx;
  const Index big = std::numeric_limits<Index>::max();
  garray::GlobalArray<double, 2> z(ctx, {big, 0});
  CHECK(z.size() == 0);
  CHECK(z.local_box().empty());
  CHECK(z.distribution().procs()[0] == ctx.size());  // all ranks along the long dimension
}

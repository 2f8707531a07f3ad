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

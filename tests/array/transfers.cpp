// Differential tests: random put/get/accumulate (blocking and nonblocking) on random strided
// slices of random shapes and distributions, against a serial reference on every rank.
//
// Every rank draws every rank's operations from the same seeded generator, so each can apply
// all of them to its reference; each rank executes only its own. Puts come from one writer
// per round (overlapping puts from different ranks have no defined winner); accumulates come
// from everyone (integer-valued, so any order gives the exact same sum).
#include <algorithm>
#include <complex>
#include <functional>

#include "support/outcome.hpp"
#include "support/test_support.hpp"

using garray::_;
using garray::all;
using garray::idx;
using garray::range;

namespace {

template <class T, std::size_t N>
std::vector<T> random_values(test::Rng& g, garray::Index n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = test::make_value<T>(test::uniform(g, -40, 40));
  return v;
}

template <class T, std::size_t N>
void differential_case(const garray::Context& ctx, test::Rng& g, garray::Index max_extent, int rounds) {
  const int p = ctx.size(), me = ctx.rank();
  const auto shape = test::random_shape<N>(g, max_extent);
  const auto dist = test::random_distribution_or_replicated<N>(g, shape, p);  // every copy written
  garray::GlobalArray<T, N> a(ctx, shape, dist);
  test::Reference<T, N> ref(shape);
  INFO("shape " << garray::detail::seq(shape) << " " << a.distribution().describe());
  bool ok = true;
  for (int round = 0; round < rounds; ++round) {
    // -- puts, one writer; each put read back at once (read-your-writes), then fenced
    const int writer = round % p;
    const int nputs = static_cast<int>(test::uniform(g, 1, 3));
    for (int k = 0; k < nputs; ++k) {
      const auto rs = test::random_slice<N>(g, shape);
      const auto sec = garray::compose(garray::Section<N>::full(shape), rs.slice);
      const auto vals = random_values<T, N>(g, sec.size());
      const bool nb = test::uniform(g, 0, 1) == 1;
      test::for_each_selected<N>(rs.ref, [&](const garray::Shape<N>& i, garray::Index pos) {
        ref.at(i) = vals[static_cast<std::size_t>(pos)];
      });
      if (me == writer) {
        if (nb) {
          auto r = a.put_section_nb(sec, vals);
          r.wait();
        } else {
          a.put_section(sec, vals);
        }
        std::vector<T> back(vals.size());
        a.get_section(sec, back);
        ok = ok && back == vals;
        a.fence();
      }
    }
    a.sync();
    // -- accumulates from every rank
    for (int r = 0; r < p; ++r) {
      const auto rs = test::random_slice<N>(g, shape);
      const auto sec = garray::compose(garray::Section<N>::full(shape), rs.slice);
      const auto vals = random_values<T, N>(g, sec.size());
      const T alpha = test::make_value<T>(test::uniform(g, -2, 3));
      const bool nb = test::uniform(g, 0, 1) == 1;
      test::for_each_selected<N>(rs.ref, [&](const garray::Shape<N>& i, garray::Index pos) {
        ref.at(i) += alpha * vals[static_cast<std::size_t>(pos)];
      });
      if (me == r) {
        if (nb) {
          auto req = a.acc_section_nb(sec, vals, alpha);
          req.wait();
        } else {
          a.acc_section(sec, vals, alpha);
        }
      }
    }
    a.sync();
    // -- gets by everyone, checked against the reference
    for (int r = 0; r < p; ++r) {
      const auto rs = test::random_slice<N>(g, shape);
      const auto sec = garray::compose(garray::Section<N>::full(shape), rs.slice);
      const bool nb = test::uniform(g, 0, 1) == 1;
      if (me != r) continue;
      std::vector<T> got(static_cast<std::size_t>(sec.size()));
      if (nb) {
        auto req = a.get_section_nb(sec, got);
        req.wait();
      } else {
        a.get_section(sec, got);
      }
      test::for_each_selected<N>(rs.ref, [&](const garray::Shape<N>& i, garray::Index pos) {
        ok = ok && got[static_cast<std::size_t>(pos)] == ref.at(i);
      });
    }
    ok = test::equal_on_all_ranks(a, ref) && ok;
  }
  CHECK(test::all_ranks(ok));
}

}  // namespace

TEST_CASE_TEMPLATE("random put/get/acc on random slices match the serial reference", T, double, std::int32_t,
                   std::complex<double>) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  const garray::Index big = ctx.size() + 6;
  for (int c = 0; c < 6; ++c) differential_case<T, 1>(ctx, g, 3 * big, 6);
  for (int c = 0; c < 6; ++c) differential_case<T, 2>(ctx, g, big, 6);
  for (int c = 0; c < 5; ++c) differential_case<T, 3>(ctx, g, 7, 5);
  for (int c = 0; c < 4; ++c) differential_case<T, 4>(ctx, g, 5, 4);
}

TEST_CASE_TEMPLATE("the same with MPI's int counts lowered to a few elements: chunked runs, split pieces", T, double,
                   std::complex<float>) {
  // Every run longer than the limit goes through the paths garray takes beyond INT_MAX
  // elements (tests/array/count_limit.cpp checks that they are taken).
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  for (const garray::Index limit : {3, 4, 7}) {
    CAPTURE(limit);
    const test::CountLimit lowered(limit);
    const garray::Index big = ctx.size() + 6;
    for (int c = 0; c < 3; ++c) differential_case<T, 1>(ctx, g, 3 * big, 4);
    for (int c = 0; c < 3; ++c) differential_case<T, 2>(ctx, g, big, 4);
    for (int c = 0; c < 2; ++c) differential_case<T, 3>(ctx, g, 7, 3);
  }
}

TEST_CASE("typed slice API: numpy spellings, multi_array buffers, scalar get") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {7, 9});
  // every rank fills its own block with 100*i + j through access()
  {
    auto blk = a.access();
    auto& v = blk.view();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) v[i][j] = 100.0 * static_cast<double>(i) + static_cast<double>(j);
  }
  a.sync();
  auto val = [](garray::Index i, garray::Index j) { return 100.0 * static_cast<double>(i) + static_cast<double>(j); };
  CHECK(a.get(idx[3][4]) == val(3, 4));
  CHECK(a.get(idx[-1][-1]) == val(6, 8));
  auto row = a.get(idx[2]);  // trailing dims whole: a[2] -> shape {9}
  REQUIRE(row.shape()[0] == 9);
  for (garray::Index j = 0; j < 9; ++j) CHECK(row[j] == val(2, j));
  auto rev = a.get(idx[range(_, _, -2)][range(1, -1)]);  // a[::-2, 1:-1] -> {4, 7}
  CHECK(rev.shape()[0] == 4);
  CHECK(rev.shape()[1] == 7);
  CHECK(rev[0][0] == val(6, 1));
  CHECK(rev[3][6] == val(0, 7));
  auto col = a.get(idx[all][-3]);
  CHECK(col.shape()[0] == 7);
  CHECK(col[5] == val(5, 6));
  auto c0 = a.get(idx[garray::ellipsis][0]);  // a[..., 0] -> column 0, a 1-d array
  static_assert(std::is_same_v<decltype(c0), boost::multi_array<double, 1>>);
  CHECK(c0.shape()[0] == 7);
  CHECK(c0[4] == val(4, 0));
  auto empty = a.get(idx[range(5, 2)][all]);
  CHECK(empty.num_elements() == 0);
  a.sync();
  // put through a multi_array and a span on a strided selection, then read back
  if (ctx.rank() == ctx.size() - 1) {
    boost::multi_array<double, 2> blk(boost::extents[2][3]);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) blk[i][j] = -1.0 - i * 3 - j;
    a.put(idx[range(1, 5, 2)][range(8, 0, -3)], blk);  // rows 1,3; cols 8,5,2
    std::vector<double> ones(9, 1.0);
    a.accumulate(idx[6], std::span<const double>(ones), 0.5);
  }
  a.sync();
  CHECK(a.get(idx[1][8]) == -1.0);
  CHECK(a.get(idx[3][2]) == -6.0);
  CHECK(a.get(idx[6][0]) == val(6, 0) + 0.5);
  a.fill(2.5);
  CHECK(a.get(idx[4][4]) == 2.5);
}

TEST_CASE("get_nb/put_nb/acc_nb complete at wait() and test()") {
  garray::Context ctx;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {static_cast<garray::Index>(ctx.size()) * 50});
  const auto n = a.size();
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (garray::Index i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  if (ctx.rank() == 0) {
    auto r1 = a.put_nb(idx[range(_, _, -1)], v);  // reversed: a[i] = n-1-i
    r1.wait();
    CHECK(r1.done());
  }
  a.sync();
  std::vector<std::int64_t> got(static_cast<std::size_t>(n));
  auto r2 = a.get_nb(idx[all], got);
  while (!r2.test()) {
  }
  bool ok = true;
  for (garray::Index i = 0; i < n; ++i) ok = ok && got[static_cast<std::size_t>(i)] == n - 1 - i;
  CHECK(ok);
  a.sync();
  {
    auto r3 = a.acc_nb(idx[all], v, std::int64_t{2});
  }  // destructor waits
  a.sync();
  a.get(idx[all], got);
  ok = true;
  for (garray::Index i = 0; i < n; ++i) ok = ok && got[static_cast<std::size_t>(i)] == n - 1 - i + 2 * i * ctx.size();
  CHECK(ok);
}

TEST_CASE("a Request destroyed or move-assigned over without wait() completes its get first") {
  // Reversed gets land through a temporary that only a finisher unpacks (rma and mixed
  // windows): destroying or overwriting the Request must run it.
  garray::Context ctx;
  const garray::Index n = 16 * ctx.size() + 3;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {n});
  {
    auto blk = a.access();
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = i;
  }
  a.sync();
  auto reversed = [&](const std::vector<std::int64_t>& v) {
    bool ok = true;
    for (garray::Index i = 0; i < n; ++i) ok = ok && v[static_cast<std::size_t>(i)] == n - 1 - i;
    return ok;
  };
  std::vector<std::int64_t> g0(static_cast<std::size_t>(n), -1), g1(g0), g2(g0);
  { auto r = a.get_nb(idx[range(_, _, -1)], g0); }  // the destructor waits
  CHECK(reversed(g0));
  {
    auto r = a.get_nb(idx[range(_, _, -1)], g1);
    r = a.get_nb(idx[all], g2);  // waits for the first get before taking over the second
    CHECK(reversed(g1));
    r.wait();
    bool ok = true;
    for (garray::Index i = 0; i < n; ++i) ok = ok && g2[static_cast<std::size_t>(i)] == i;
    CHECK(ok);
  }
}

TEST_CASE("a finisher that throws in wait() does not keep the others from running") {
  // A reversed get across every owner lands through one temporary per owner, each unpacked
  // by its own finisher (rma and mixed windows; under MPICH the finishers also flush the
  // targets). The first finisher is made to throw once it has run: wait() throws that, but
  // every other finisher has run, so the buffer is complete and the request done. (Two
  // remote owners or more are needed for a second finisher: np >= 3 on rma windows.)
  garray::Context ctx;
  const garray::Index n = 8 * ctx.size() + 5;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {n});
  {
    auto blk = a.access();
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = i;
  }
  a.sync();
  std::vector<std::int64_t> got(static_cast<std::size_t>(n), -1);
  auto r = a.get_nb(idx[range(_, _, -1)], got);
  const bool finishers = !r.done();
  // rma windows (np >= 2: remote pieces) always land a reversed get through finishers: a
  // request complete on return there would make this test vacuous
  if (ctx.window_kind() == garray::WindowKind::rma && ctx.size() >= 2) CHECK(finishers);
  garray::testing::arm_fault("request.finisher");
  if (finishers)
    CHECK_THROWS_AS(r.wait(), garray::testing::InjectedFault);
  else
    r.wait();  // shared windows: complete on return, no finisher
  CHECK(garray::testing::fault_armed() != finishers);
  garray::testing::disarm_fault();
  CHECK(r.done());
  bool ok = true;
  for (garray::Index i = 0; i < n; ++i) ok = ok && got[static_cast<std::size_t>(i)] == n - 1 - i;
  CHECK(ok);
  a.sync();
}

TEST_CASE("sync() and fill() complete an unwaited get_nb: it reads what was there before them") {
  // semantics.md: sync() (and every collective on the array) completes every operation of
  // every rank, an unwaited get included. Each rank reads its right neighbour's whole block
  // (large: on rma windows the get may still be moving when the collective is entered), does
  // not wait, and the neighbour then overwrites the block (by the collective fill, or by
  // local stores right after a sync). The collective completes the request; its buffer
  // must hold the values from before.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = 1 << 18;  // 2 MiB of int64 per rank
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per * p});
  for (int round = 0; round < 6; ++round) {
    const bool by_fill = round % 2 == 0;
    {
      auto blk = a.access();
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = i + round;
    }
    a.sync();
    const int nb = (me + 1) % p;
    std::vector<std::int64_t> got(static_cast<std::size_t>(per), -1);
    auto sec = garray::Section<1>{{nb * per}, {1}, {per}};
    if (round >= 4) sec = garray::Section<1>{{nb * per + per - 1}, {-1}, {per}};  // reversed: a temporary
    auto r = a.get_section_nb(sec, got);
    if (by_fill) {
      a.fill(-7);
    } else {
      a.sync();
      auto blk = a.access();
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = -7;
    }
    CHECK(r.done());  // the collective completed it
    r.wait();
    bool ok = true;
    for (garray::Index k = 0; k < per; ++k) {
      const garray::Index i = sec.start[0] + k * sec.step[0];
      ok = ok && got[static_cast<std::size_t>(k)] == i + round;
    }
    INFO("round " << round << std::string(by_fill ? " (fill)" : " (sync, then local stores)"));
    CHECK(ok);
    a.sync();
  }
}

TEST_CASE("destroying an array completes its outstanding requests; they are then done") {
  // A Request that outlives its array (here: declared before it) is completed, as by its
  // wait(), when the array is destroyed or another array is moved over it; its buffer then
  // holds the data and wait() has nothing left to do. The registration follows the Request
  // through moves (assignment, a growing vector). Each rank's block is two halves: the gets
  // read the first half of the right neighbour's, the accumulates add to the second.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = 1000, n = 2 * per * p;
  auto fill_index = [&](garray::GlobalArray<double, 1>& a, double off) {
    auto blk = a.access();
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = static_cast<double>(i) + off;
  };
  const garray::Index lo = 2 * per * ((me + 1) % p);  // the neighbour's block
  std::vector<double> fwd(static_cast<std::size_t>(per), -1), rev(fwd);
  std::vector<double> ones(static_cast<std::size_t>(per), 1.0);
  auto expected = [&](double off) {
    bool ok = true;
    for (garray::Index k = 0; k < per; ++k) {
      ok = ok && fwd[static_cast<std::size_t>(k)] == static_cast<double>(lo + k) + off;
      ok = ok &&
           (off != 0.5 || rev[static_cast<std::size_t>(k)] == static_cast<double>(lo + per - 1 - k) + off);
    }
    return ok;
  };
  garray::Request r0;
  std::vector<garray::Request> rs;
  {
    garray::GlobalArray<double, 1> a(ctx, {n});
    fill_index(a, 0.5);
    a.sync();
    r0 = a.get_nb(idx[range(lo, lo + per)], fwd);
    for (int k = 0; k < 5; ++k) {  // the vector reallocates: every Request moves
      if (k == 2)
        rs.push_back(a.get_section_nb(garray::Section<1>{{lo + per - 1}, {-1}, {per}}, rev));
      else
        rs.push_back(a.acc_nb(idx[range(lo + per, lo + 2 * per)], ones));
    }
  }  // ~GlobalArray completes r0 and rs
  CHECK(r0.done());
  bool all_done = true;
  for (auto& r : rs) all_done = all_done && r.done();
  CHECK(all_done);
  CHECK(expected(0.5));
  r0.wait();  // nothing left to do
  // Moving another array over one with a request outstanding completes it the same way; the
  // window may then be reused (the cache) without the old get seeing the new contents.
  garray::GlobalArray<double, 1> b(ctx, {n});
  fill_index(b, 0.25);
  b.sync();
  std::fill(fwd.begin(), fwd.end(), -1.0);
  garray::Request r1 = b.get_nb(idx[range(lo, lo + per)], fwd);
  b = garray::GlobalArray<double, 1>(ctx, {n});
  CHECK(r1.done());
  CHECK(expected(0.25));
  b.sync();
}

TEST_CASE(
    "read your own writes: a get or gather right after this rank's accumulate sees it, no fence between") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index n = 4 * p;
  garray::GlobalArray<double, 1> a(ctx, {n});  // zeroed
  // this rank's elements: one in every rank's block (blocked: 4 per rank), none shared
  std::vector<garray::Shape<1>> mine;
  for (int r = 0; r < p; ++r) mine.push_back(garray::Shape<1>{4 * r + (me % 4)});
  const bool writer = me < 4;  // ranks 4.. would share elements with ranks 0..
  bool ok = true;
  for (int it = 1; it <= 40 && writer; ++it) {
    for (const auto& e : mine) {
      const double one = 1.0;
      if (it % 2)
        a.accumulate(idx[range(e[0], e[0] + 1)], std::span<const double>(&one, 1));
      else
        a.scatter_acc(std::span<const garray::Shape<1>>(&e, 1), std::span<const double>(&one, 1));
      double got = -1.0;
      a.get(idx[range(e[0], e[0] + 1)], std::span<double>(&got, 1));
      ok = ok && got == it;
    }
    std::vector<double> all(mine.size(), -1.0);
    a.gather(std::span<const garray::Shape<1>>(mine), std::span<double>(all));
    for (double v : all) ok = ok && v == it;
  }
  CHECK(ok);
  a.sync();
}

TEST_CASE_TEMPLATE(
    "read your own writes, nonblocking: after put_nb().wait(), acc_nb().wait() or scatter_acc a get_nb, get "
    "or gather of the element sees it, no fence between, node-local and remote owners alike",
    T, std::int32_t, std::complex<float>) {
  // semantics.md, Visibility rule 1: "A get (or gather) from the same rank sees that rank's
  // earlier completed-locally puts and accumulates to the same elements, without a fence()",
  // and get_nb/put_nb/acc_nb: "Request::wait() ... gives the blocking call's guarantee".
  // The existing read-your-writes test uses blocking accumulate/scatter_acc and blocking
  // get/gather of doubles only. On rma/mixed windows put_nb and acc_nb travel as
  // MPI_Rput/MPI_Raccumulate (Open MPI): wait() is local completion only, so the get must
  // still flush its target first (Window::complete_writes_to), also before a node-local
  // memory-copy get of a mixed window. Fails if a nonblocking write did not mark its target
  // as written, or if a get path skipped the flush.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index n = 4 * p;
  garray::GlobalArray<T, 1> a(ctx, {n});  // zeroed, blocked: 4 elements per rank
  // this rank's elements: one in every rank's block, never another writer's
  std::vector<garray::Shape<1>> mine;
  for (int r = 0; r < p; ++r) mine.push_back(garray::Shape<1>{4 * r + (me % 4)});
  const bool writer = me < 4;
  const std::uint64_t seed = test::shared_seed();
  INFO("seed " << seed << ", window kind " << garray::to_string(a.window_kind()));
  test::Rng g(seed + 1000003ULL * static_cast<std::uint64_t>(me));
  std::vector<T> want(mine.size(), T{});
  bool ok = true;
  for (int it = 0; it < 30 && writer; ++it) {
    for (std::size_t q = 0; q < mine.size(); ++q) {
      const garray::Index e = mine[q][0];
      // Visibility rule 4: a put and an accumulate to one element need a fence() between
      // them. It comes before the write; nothing orders the write and the read below.
      a.fence();
      const T v = test::make_value<T>(test::uniform(g, -9, 9));
      const T alpha = test::make_value<T>(test::uniform(g, 1, 3));
      switch (test::uniform(g, 0, 2)) {
        case 0:
          a.put_nb(idx[range(e, e + 1)], std::span<const T>(&v, 1)).wait();
          want[q] = v;
          break;
        case 1:
          a.acc_nb(idx[range(e, e + 1)], std::span<const T>(&v, 1), alpha).wait();
          want[q] += alpha * v;
          break;
        default:
          a.scatter_acc(std::span<const garray::Shape<1>>(&mine[q], 1), std::span<const T>(&v, 1), alpha);
          want[q] += alpha * v;
      }
      T got = test::make_value<T>(-12345);
      switch (test::uniform(g, 0, 2)) {
        case 0:
          a.get_nb(idx[range(e, e + 1)], std::span<T>(&got, 1)).wait();
          break;
        case 1:
          a.get(idx[range(e, e + 1)], std::span<T>(&got, 1));
          break;
        default:
          a.gather(std::span<const garray::Shape<1>>(&mine[q], 1), std::span<T>(&got, 1));
      }
      ok = ok && got == want[q];
    }
    // and all of them at once, from every owner in one call
    std::vector<T> every(mine.size(), test::make_value<T>(-12345));
    a.gather(std::span<const garray::Shape<1>>(mine), std::span<T>(every));
    ok = ok && every == want;
  }
  CHECK(test::all_ranks(ok));
  a.sync();
}

TEST_CASE("a blocking get or gather from several owners holds all their data on return (large)") {
  // Completion of a transfer with several targets: one MPI_Win_flush_local per target.
  // MPICH 4.0.2's MPI_Win_flush_local_all returned before large gets from several owners had
  // landed (a loop of such gets at np 3 over rma windows failed in two of three runs).
  garray::Context ctx;
  const int me = ctx.rank();
  const garray::Index n0 = 600, n1 = 400;
  garray::GlobalArray<double, 2> a(ctx, {n0, n1}, garray::Distribution<2>::blocked());
  auto value = [&](garray::Index i, garray::Index j, int it) { return static_cast<double>((i * n1 + j) * 3 + it); };
  std::vector<garray::Shape<2>> list;
  for (garray::Index i = 0; i < n0; i += 3)
    for (garray::Index j = (i + me) % 5; j < n1; j += 5) list.push_back({i, j});
  bool ok = true;
  for (int it = 0; it < 8; ++it) {
    {
      auto blk = a.access();
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i)
        for (garray::Index j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = value(i, j, it);
    }
    a.sync();
    for (int rep = 0; rep < 6; ++rep) {  // back to back, as the failing runs did
      std::vector<double> v(static_cast<std::size_t>(n0 * n1), -1.0);
      a.get_section(garray::Section<2>::full(a.shape()), std::span<double>(v));
      for (garray::Index i = 0; i < n0; ++i)
        for (garray::Index j = 0; j < n1; ++j) ok = ok && v[static_cast<std::size_t>(i * n1 + j)] == value(i, j, it);
    }
    std::vector<double> g(list.size(), -1.0);
    a.gather(std::span<const garray::Shape<2>>(list), std::span<double>(g));
    for (std::size_t k = 0; k < list.size(); ++k) ok = ok && g[k] == value(list[k][0], list[k][1], it);
    a.sync();
  }
  CHECK(ok);
}

TEST_CASE("large contiguous and strided transfers of floats and int64 across owners") {
  garray::Context ctx;
  garray::GlobalArray<float, 2> a(ctx, {300, 257}, garray::Distribution<2>::slab(1));
  std::vector<float> v(300 * 257);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000);
  if (ctx.rank() == 0) a.put(idx[all][all], v);
  a.sync();
  std::vector<float> back(v.size());
  a.get(idx[all][all], back);
  CHECK(back == v);
  std::vector<float> strided(150 * 129);
  a.get(idx[range(_, _, 2)][range(_, _, 2)], strided);
  bool ok = true;
  for (int i = 0; i < 150; ++i)
    for (int j = 0; j < 129; ++j) ok = ok && strided[static_cast<std::size_t>(i * 129 + j)] == v[static_cast<std::size_t>(2 * i * 257 + 2 * j)];
  CHECK(ok);
}

TEST_CASE("views: a[...] composes without copying and moves data like the array") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> u(ctx, {8, 6});
  {
    auto blk = u.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = static_cast<double>(10 * i + j);
  }
  u.sync();
  auto inner = u[idx[range(1, -1)][range(1, -1)]];  // 6x4
  CHECK(inner.shape() == garray::Shape<2>{6, 4});
  auto rev = inner[idx[range(_, _, -2)]];  // rows 6,4,2 of u; cols 1..4
  CHECK(rev.shape() == garray::Shape<2>{3, 4});
  CHECK(rev[idx[0][0]].get() == 61.0);
  auto col = u[idx[all][3]];
  CHECK(col.shape() == garray::Shape<1>{8});
  CHECK(col[idx[-1]].get() == 73.0);
  const auto m = rev.get();
  CHECK(m[2][3] == 24.0);
  u.sync();
}

namespace {
// a[i] = 3 i + off in this rank's block (global indexing of access(), as the tests above)
void fill_affine(garray::GlobalArray<std::int64_t, 1>& a, std::int64_t off) {
  auto blk = a.access();
  for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = 3 * i + off;
}
}  // namespace

TEST_CASE(
    "fence() completes this rank's unwaited get_nb as wait() would: done on return, the owner may then "
    "write") {
  // semantics.md, the table, fence(): "this rank's outstanding nonblocking requests on the
  // array are completed (as by wait())". No existing test calls fence() with a request
  // outstanding (transfers.cpp checks sync() and fill(); every fence() in the suite follows a
  // waited request). Each rank reads its right neighbour's block (reversed in odd rounds: on
  // rma/mixed windows through a temporary that only a finisher unpacks), calls fence(), and
  // after a barrier the neighbour overwrites its block by local stores. Fails if fence() left
  // the request outstanding (done() false, or the unpack not run: the buffer still -1, or a
  // late get read -7).
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = garray::Index{1} << 14;  // 128 KiB of int64 per rank
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per * p});
  const int nb = (me + 1) % p;
  bool done = true, ok = true;
  for (int round = 0; round < 4; ++round) {
    fill_affine(a, round);
    a.sync();
    const garray::Section<1> sec = round % 2 ? garray::Section<1>{{nb * per + per - 1}, {-1}, {per}}
                                             : garray::Section<1>{{nb * per}, {1}, {per}};
    std::vector<std::int64_t> got(static_cast<std::size_t>(per), -1);
    auto r = a.get_section_nb(sec, got);
    a.fence();
    done = done && r.done();
    MPI_Barrier(ctx.comm());  // every rank's fence() has returned
    {
      auto blk = a.access();  // the owner overwrites what its left neighbour read
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = -7;
    }
    for (garray::Index k = 0; k < per; ++k)  // checked before any wait()
      ok = ok && got[static_cast<std::size_t>(k)] == 3 * (sec.start[0] + k * sec.step[0]) + round;
    r.wait();  // nothing left to do
    a.sync();
  }
  INFO("window kind " << garray::to_string(a.window_kind()));
  CHECK(test::all_ranks(done));
  CHECK(test::all_ranks(ok));
}

TEST_CASE("test() returning true has unpacked a reversed, strided 2-d get_nb from every owner") {
  // semantics.md, the table, get_nb: "Request::wait() (or test() returning true) gives the
  // blocking call's guarantee". The existing test() test reads idx[all] (no temporary); a
  // reversed get lands through one temporary per owner on rma/mixed windows, unpacked by a
  // finisher (and, under MPICH, completed by per-target flush finishers). Fails if test()
  // reported true before the finishers ran.
  garray::Context ctx;
  const garray::Index n0 = 4 * ctx.size() + 3, n1 = 9;
  garray::GlobalArray<double, 2> a(ctx, {n0, n1});
  {
    auto blk = a.access();
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i)
      for (garray::Index j = blk.lo(1); j < blk.hi(1); ++j)
        blk.view()[i][j] = 100.0 * static_cast<double>(i) + static_cast<double>(j);
  }
  a.sync();
  const garray::Index m1 = (n1 + 1) / 2;  // columns 8, 6, 4, 2, 0
  bool ok = true, done = true;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> got(static_cast<std::size_t>(n0 * m1), -1.0);
    auto r = a.get_nb(idx[range(_, _, -1)][range(_, _, -2)], got);
    while (!r.test()) {
    }
    done = done && r.done();
    for (garray::Index k0 = 0; k0 < n0; ++k0)
      for (garray::Index k1 = 0; k1 < m1; ++k1)
        ok = ok && got[static_cast<std::size_t>(k0 * m1 + k1)] ==
                       100.0 * static_cast<double>(n0 - 1 - k0) + static_cast<double>(n1 - 1 - 2 * k1);
  }
  INFO("window kind " << garray::to_string(a.window_kind()));
  CHECK(test::all_ranks(done));
  CHECK(test::all_ranks(ok));
  a.sync();
}

TEST_CASE(
    "requests follow their array through the move constructor and a move assignment: the new holder's "
    "fill() completes them with the data from before; destroying the moved-from shells does not lose them") {
  // semantics.md, the table, get_nb: "Requests belong to the array's window: moving the array
  // moves them with it", and "A collective on the array ... first completes this rank's
  // outstanding requests on it ... an unwaited get holds the data from before the
  // collective". transfers.cpp only moves *another* array over one with requests; nothing
  // moves the array that holds them. Fails if a move left the requests with the moved-from
  // object (the new holder's fill() would not complete them: done() false, buffers -1 or -7).
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = garray::Index{1} << 13, n = per * p;
  const int nb = (me + 1) % p;
  const garray::Section<1> fwd_sec{{nb * per}, {1}, {per}}, rev_sec{{nb * per + per - 1}, {-1}, {per}};
  std::vector<std::int64_t> fwd(static_cast<std::size_t>(per), -1), rev(fwd);
  garray::GlobalArray<std::int64_t, 1> a(ctx, {n});
  fill_affine(a, 5);
  a.sync();
  garray::Request rf = a.get_section_nb(fwd_sec, fwd);
  garray::Request rr = a.get_section_nb(rev_sec, rev);
  std::optional<garray::GlobalArray<std::int64_t, 1>> moved;
  moved.emplace(std::move(a));  // move constructor
  garray::GlobalArray<std::int64_t, 1> c(ctx, {n});
  c = std::move(*moved);  // move assignment: c's own window goes to the cache
  moved.reset();          // the moved-from shell: nothing of its own
  c.fill(-7);             // the holder's collective completes rf and rr first
  const bool done = rf.done() && rr.done();
  bool ok = true;
  for (garray::Index k = 0; k < per; ++k) {
    ok = ok && fwd[static_cast<std::size_t>(k)] == 3 * (fwd_sec.start[0] + k) + 5;
    ok = ok && rev[static_cast<std::size_t>(k)] == 3 * (rev_sec.start[0] - k) + 5;
  }
  INFO("window kind " << garray::to_string(c.window_kind()));
  CHECK(test::all_ranks(done));
  CHECK(test::all_ranks(ok));
  rf.wait();  // nothing left to do
  rr.wait();
  c.sync();
}

TEST_CASE(
    "a Request move-assigned a request of another array belongs to that array's window: its collective "
    "completes it, destroying the first array does not lose it") {
  // semantics.md: "Requests belong to the array's window"; request.hpp: operator= "waits for
  // this request's own operation first (as the destructor), then takes over o's". The
  // existing move-assignment test uses one array. Here r holds a's get, is assigned b's get
  // (a's must be complete at once), a is destroyed, and b's fill() must complete r with
  // b's data from before the fill.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = garray::Index{1} << 13, n = per * p;
  const int nb = (me + 1) % p;
  const garray::Section<1> rev_sec{{nb * per + per - 1}, {-1}, {per}};
  std::vector<std::int64_t> ga(static_cast<std::size_t>(per), -1), gb(ga);
  garray::GlobalArray<std::int64_t, 1> b(ctx, {n});
  fill_affine(b, 40);
  b.sync();
  garray::Request r;
  bool a_ok = true;
  {
    garray::GlobalArray<std::int64_t, 1> a(ctx, {n});
    fill_affine(a, 11);
    a.sync();
    r = a.get_section_nb(rev_sec, ga);
    garray::Request s = b.get_section_nb(rev_sec, gb);
    r = std::move(s);  // a's get completes here; r now holds b's
    for (garray::Index k = 0; k < per; ++k)
      a_ok = a_ok && ga[static_cast<std::size_t>(k)] == 3 * (rev_sec.start[0] - k) + 11;
    CHECK(s.done());
  }            // ~a
  b.fill(-7);  // completes r (b's get) as wait() would
  const bool done = r.done();
  bool b_ok = true;
  for (garray::Index k = 0; k < per; ++k)
    b_ok = b_ok && gb[static_cast<std::size_t>(k)] == 3 * (rev_sec.start[0] - k) + 40;
  CHECK(test::all_ranks(a_ok));
  CHECK(test::all_ranks(done));
  CHECK(test::all_ranks(b_ok));
  r.wait();
  b.sync();
}

// semantics.md fill / copy: "earlier operations of every rank completed first". Unfenced puts,
// unwaited put_nb and acc_nb from every rank into the same elements cannot land after the
// collective's own stores (docs audit).
namespace collective_writes {
namespace {
using garray::Index;
using garray::range;
}  // namespace

TEST_CASE(
    "fill, view fill, scalar assignment and copy overwrite every rank's earlier unfenced writes to the same "
    "elements") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const Index per = Index{3} << 14, n = per * p;  // 49152 doubles per rank
  garray::GlobalArray<double, 1> a(ctx, {n}, garray::Distribution<1>::slab(0));
  garray::GlobalArray<double, 1> src(ctx, {n}, garray::Distribution<1>::blocked());
  garray::iota(src, 0.5, 1.0);
  const auto src_all = test::whole_array(src);
  const std::vector<std::pair<const char*, std::function<std::vector<double>()>>> collectives = {
      {"a.fill(7)",
       [&] {
         a.fill(7.0);
         return std::vector<double>(static_cast<std::size_t>(n), 7.0);
       }},
      {"a[::-1].fill(8)",
       [&] {
         a[garray::idx[range(garray::_, garray::_, -1)]].fill(8.0);
         return std::vector<double>(static_cast<std::size_t>(n), 8.0);
       }},
      {"a = 9",
       [&] {
         a = 9.0;
         return std::vector<double>(static_cast<std::size_t>(n), 9.0);
       }},
      {"copy(a, src)",
       [&] {
         garray::copy(a, src);
         return src_all;
       }},
  };
  const int nb = (me + 1) % p;  // every rank writes into its right neighbour's block
  const Index lo = nb * per, third = per / 3;
  std::vector<double> junk1(static_cast<std::size_t>(third), -1.0), junk2(junk1.size(), -2.0),
      ones(junk1.size(), 1.0);
  for (const auto& [name, collective] : collectives) {
    INFO("collective := " << std::string(name));
    a.fill(0.0);
    // Three disjoint thirds (a put and an accumulate to one element without a sync in between
    // would be undefined): a blocking put (locally complete only), an unwaited put_nb and an
    // unwaited acc_nb.
    a.put(garray::idx[range(lo, lo + third)], std::span<const double>(junk1));
    garray::Request r1 =
        a.put_nb(garray::idx[range(lo + third, lo + 2 * third)], std::span<const double>(junk2));
    garray::Request r2 =
        a.acc_nb(garray::idx[range(lo + 2 * third, lo + per)], std::span<const double>(ones));
    const std::vector<double> want = collective();
    CHECK(r1.done());
    CHECK(r2.done());
    // No sync: the collective promises its values visible to every rank on return.
    CHECK(test::all_ranks(test::whole_array(a) == want));
    // ... and they stay after a sync (a write that landed late would show here on rma windows).
    a.sync();
    CHECK(test::all_ranks(test::whole_array(a) == want));
  }
}
}  // namespace collective_writes

// semantics.md Errors: "garray's communicator and windows use MPI_ERRORS_RETURN" (the
// communicator is checked in tests/runtime/context.cpp; docs audit).
namespace window_errhandler {
namespace {
bool returns_errors(MPI_Win w) {
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  if (MPI_Win_get_errhandler(w, &eh) != MPI_SUCCESS) return false;
  const bool ok = eh == MPI_ERRORS_RETURN;
  MPI_Errhandler_free(&eh);
  return ok;
}
}  // namespace

TEST_CASE(
    "windows use MPI_ERRORS_RETURN, as the communicator does: raw, array, cached and every window kind") {
  garray::Context ctx;
  {
    garray::detail::Window w(ctx, static_cast<std::size_t>(8 * (ctx.rank() + 1)));
    CHECK(returns_errors(w.win()));
  }
  {
    garray::GlobalArray<double, 2> a(ctx, {6, 5});
    CHECK(returns_errors(garray::detail::ArrayAccess::window(a).win()));
  }
  garray::GlobalArray<double, 2> b(ctx, {6, 5});  // a cache hit: the pooled window
  CHECK(returns_errors(garray::detail::ArrayAccess::window(b).win()));
  garray::GlobalArray<double, 1> r(ctx, {7}, garray::Distribution<1>::replicated());
  CHECK(returns_errors(garray::detail::ArrayAccess::window(r).win()));
  INFO("window kind " << garray::to_string(ctx.window_kind()));
  CHECK(test::all_ranks(true));
}
}  // namespace window_errhandler

// semantics.md "Errors": a one-sided transfer that fails part way may have moved some pieces,
// but each piece it issued is complete before it throws (RmaTransport::abandon: one target
// flush_local, several targets flush_local_all, or per target under MPICH and osc/pt2pt,
// where the wrong call hangs or returns before a get landed). The test-only fault point
// `transfer.issued` fails rank 0's transfer after its k-th MPI piece (k = 2 where there are
// two: the several-targets branch). Checked at once, before any other MPI call: a get's
// buffer holds exactly k whole pieces (none when reversed: those went to temporaries), none
// half, and nothing lands there after the throw; after sync() an
// accumulate changed exactly k whole blocks. Forward and reversed (a temporary per piece,
// freed right after the throw). rma windows only: shared windows issue no MPI piece, and on
// mixed ones the node-local pieces are copies.
TEST_CASE("a one-sided transfer failing after some pieces were issued completes them before it throws") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = 701;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per * p});
  if (a.window_kind() != garray::WindowKind::rma || p < 2) {
    MESSAGE("needs rma windows and two ranks (GARRAY_WINDOW=rma)");
    return;
  }
  enum class Mode { acc, acc_nb, get, get_nb };
  for (const Mode m : {Mode::acc, Mode::acc_nb, Mode::get, Mode::get_nb})
    for (const bool reversed : {false, true}) {
      CAPTURE(static_cast<int>(m));
      CAPTURE(reversed);
      {
        auto blk = a.access();
        for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = 3 * i;
      }
      a.sync();
      const bool is_get = m == Mode::get || m == Mode::get_nb;
      const int pieces = is_get ? p - 1 : p;  // a get of the own block is a memory copy
      const int k = std::min(2, pieces);
      const std::int64_t alpha = m == Mode::acc_nb ? 2 : 1;
      std::vector<std::int64_t> ones(static_cast<std::size_t>(per * p), 1), got(ones.size(), -1);
      const auto run = [&](const auto& sec) {
        switch (m) {
          case Mode::acc:
            a.accumulate(sec, std::span<const std::int64_t>(ones));
            break;
          case Mode::acc_nb:
            a.acc_nb(sec, std::span<const std::int64_t>(ones), alpha).wait();
            break;
          case Mode::get:
            a.get(sec, std::span<std::int64_t>(got));
            break;
          case Mode::get_nb:
            a.get_nb(sec, std::span<std::int64_t>(got)).wait();
            break;
        }
      };
      bool threw = true, whole = true;
      int complete = 0;
      std::vector<std::int64_t> snapshot;
      if (me == 0) {
        garray::testing::arm_fault("transfer.issued", k - 1);
        threw = false;
        try {
          if (reversed)
            run(idx[range(_, _, -1)]);
          else
            run(idx[all]);
        } catch (const garray::testing::InjectedFault&) {
          threw = true;
        }
        garray::testing::disarm_fault();
        if (is_get)  // at once: every owner's part of the buffer whole or untouched
          snapshot = got;
        if (is_get)
          for (int r = 1; r < p; ++r) {
            int right = 0;
            for (garray::Index j = 0; j < per; ++j) {
              const garray::Index pos = r * per + j;  // buffer position
              const garray::Index elem = reversed ? per * p - 1 - pos : pos;
              right += got[static_cast<std::size_t>(pos)] == 3 * elem ? 1 : 0;
            }
            const garray::Index owner_first = reversed ? per * p - 1 - (r * per + per - 1) : r * per;
            whole = whole && (right == 0 || right == per);
            complete += right == per && owner_first / per != 0 ? 1 : 0;
          }
      }
      a.sync();
      if (!is_get) {  // every block whole: +alpha everywhere or unchanged
        auto blk = a.access();
        garray::Index plus = 0;
        for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) plus += blk.view()[i] == 3 * i + alpha ? 1 : 0;
        whole = plus == 0 || plus == per;
        complete = plus == per ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &complete, 1, MPI_INT, MPI_SUM, ctx.comm());
      }
      CHECK(test::all_ranks(threw));
      CHECK(test::all_ranks(whole));
      // A reversed get lands in per-piece temporaries, unpacked only when the transfer
      // finishes: after the throw its buffer is untouched. Forward: the k issued pieces.
      if (me == 0) CHECK(complete == (is_get && reversed ? 0 : k));
      if (me == 0 && is_get) CHECK(got == snapshot);  // nothing landed after the throw
      a.sync();  // the array works on: a whole get reads what the blocks hold
      std::vector<std::int64_t> all_of(static_cast<std::size_t>(per * p));
      a.get(idx[all], std::span<std::int64_t>(all_of));
      a.sync();
    }
}

// The same promise for index lists (gather, scatter, scatter_acc): one MPI call per owner,
// with an indexed target type and the values packed into a temporary that finish() unpacks
// (gather) or that MPI reads (scatter, scatter_acc). The test-only fault point `list.issued`
// fails rank 0's call after its k-th owner's MPI call (k = 2 where there are two: abandon()'s
// several-targets branch). A gather's buffer holds only rank 0's own entries when it throws
// (read directly; the others are unpacked only when the call finishes) and stays so; a scatter or scatter_acc
// changed exactly the blocks whose call was issued (rank 0's own block first: stored directly by a scatter,
// an MPI call for scatter_acc), each whole. The list is a random permutation of every element, so each
// owner's call carries its entries out of order. rma windows only.
TEST_CASE("an index-list operation failing after some pieces were issued completes them before it throws") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = 613;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per * p});
  if (a.window_kind() != garray::WindowKind::rma || p < 2) {
    MESSAGE("needs rma windows and two ranks (GARRAY_WINDOW=rma)");
    return;
  }
  test::Rng g(test::shared_seed());
  std::vector<garray::Shape<1>> list(static_cast<std::size_t>(per * p));
  for (std::size_t j = 0; j < list.size(); ++j) list[j] = {static_cast<garray::Index>(j)};
  std::shuffle(list.begin(), list.end(), g);
  enum class Mode { gather, scatter, scatter_acc };
  for (const Mode m : {Mode::gather, Mode::scatter, Mode::scatter_acc}) {
    CAPTURE(static_cast<int>(m));
    {
      auto blk = a.access();
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = 3 * i;
    }
    a.sync();
    const int mpi_owners = m == Mode::scatter_acc ? p : p - 1;  // the own block is direct for the others
    const int k = std::min(2, mpi_owners);
    // values[j] for list[j]: scatter stores -(element) - 1, scatter_acc adds 2 * 5
    std::vector<std::int64_t> values(list.size()), got(list.size(), -1);
    for (std::size_t j = 0; j < list.size(); ++j) values[j] = m == Mode::scatter ? -list[j][0] - 1 : 5;
    bool threw = true;
    std::vector<std::int64_t> snapshot;
    if (me == 0) {
      garray::testing::arm_fault("list.issued", k - 1);
      threw = false;
      try {
        switch (m) {
          case Mode::gather:
            a.gather(list, std::span<std::int64_t>(got));
            break;
          case Mode::scatter:
            a.scatter(list, std::span<const std::int64_t>(values));
            break;
          case Mode::scatter_acc:
            a.scatter_acc(list, std::span<const std::int64_t>(values), 2);
            break;
        }
      } catch (const garray::testing::InjectedFault&) {
        threw = true;
      }
      garray::testing::disarm_fault();
      snapshot = got;  // at once, before any other MPI call
    }
    a.sync();
    CHECK(test::all_ranks(threw));
    if (m == Mode::gather) {
      if (me == 0) {
        bool untouched = true;  // but rank 0's own entries, read directly (first, in rank order)
        for (std::size_t j = 0; j < list.size(); ++j) {
          const garray::Index e = list[j][0];
          untouched = untouched && snapshot[j] == (e < per ? 3 * e : -1);
        }
        CHECK(untouched);
        CHECK(got == snapshot);  // nothing landed after the throw
      }
    } else {
      bool whole = true;
      int changed = 0;
      {
        auto blk = a.access();
        garray::Index hit = 0;
        for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i)
          hit += blk.view()[i] == (m == Mode::scatter ? -i - 1 : 3 * i + 10) ? 1 : 0;
        whole = hit == 0 || hit == per;
        changed = hit == per ? 1 : 0;
        // the blocks changed are the first ones in rank order
        const int first_unchanged = m == Mode::scatter ? k + 1 : k;
        whole = whole && changed == (me < first_unchanged ? 1 : 0);
      }
      MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_INT, MPI_SUM, ctx.comm());
      CHECK(test::all_ranks(whole));
      CHECK(changed == (m == Mode::scatter ? std::min(k + 1, p) : k));
    }
    a.sync();  // the array works on: a gather reads what the blocks hold
    std::vector<std::int64_t> all_of(list.size());
    a.gather(list, std::span<std::int64_t>(all_of));
    bool same = true;
    for (std::size_t j = 0; j < list.size(); ++j) {
      const garray::Index e = list[j][0];
      const bool hit =
          m == Mode::scatter ? all_of[j] == -e - 1 : m == Mode::scatter_acc && all_of[j] == 3 * e + 10;
      same = same && (hit || all_of[j] == 3 * e);
    }
    CHECK(test::all_ranks(same));
    a.sync();
  }
}

// MPICH completes a get_nb by a flush_local finisher (no request-based RMA there); other
// calls of this rank flush the same target before the request's wait(): a put read back
// (MPI_Win_flush), read_inc (MPI_Win_flush), a blocking get (MPI_Win_flush_local), another
// request waited first. MPICH 4.0.2 once returned from flush_all before a 2 MiB get had
// landed (design.md, step 4): at wait() the buffer must hold the owner's values, and nothing
// may land after it (the owner then overwrites its block).
TEST_CASE("an unwaited get_nb is complete at wait() although other calls flushed its target in between") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = garray::Index{1} << 18, half = per / 2;  // 2 MiB of int64 per rank
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per * p});
  const int nb = (me + 1) % p;
  bool ok = true, at_wait = true, later = true;
  for (int round = 0; round < 8; ++round) {
    CAPTURE(round);
    {
      auto blk = a.access();
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = 3 * i + round;
    }
    a.sync();
    // The first half of the right neighbour's block: only this rank reads it. The second
    // half: only this rank writes it (put / read_inc). Odd rounds reversed (a temporary).
    const garray::Index first = round % 2 ? nb * per + half - 1 : nb * per, step = round % 2 ? -1 : 1;
    garray::Section<1> sec;
    sec.start = {first};
    sec.step = {step};
    sec.count = {half};
    std::vector<std::int64_t> got(static_cast<std::size_t>(half), -1);
    auto r = a.get_section_nb(sec, std::span<std::int64_t>(got));
    const garray::Index e_put = nb * per + half + 1, e_inc = nb * per + half + 2, e_get = nb * per + half + 3;
    switch (round % 4) {
      case 0: {  // put, then read it back: MPI_Win_flush(nb)
        const std::int64_t v = -1000 - round;
        a.put(idx[range(e_put, e_put + 1)], std::span<const std::int64_t>(&v, 1));
        std::int64_t back = 0;
        a.get(idx[range(e_put, e_put + 1)], std::span<std::int64_t>(&back, 1));
        ok = ok && back == v;
        break;
      }
      case 1: {  // read_inc: MPI_Fetch_and_op + MPI_Win_flush(nb)
        const std::int64_t old = a.read_inc(garray::Shape<1>{e_inc}, std::int64_t{5});
        ok = ok && old == 3 * e_inc + round;
        break;
      }
      case 2: {  // a blocking get from the same target: MPI_Win_flush_local(nb)
        std::int64_t x = 0;
        a.get(idx[range(e_get, e_get + 1)], std::span<std::int64_t>(&x, 1));
        ok = ok && x == 3 * e_get + round;
        break;
      }
      default: {  // a second request on the same target, waited first
        std::int64_t x = 0;
        auto r2 = a.get_nb(idx[range(e_get, e_get + 1)], std::span<std::int64_t>(&x, 1));
        r2.wait();
        ok = ok && x == 3 * e_get + round;
      }
    }
    r.wait();
    const auto expected = [&](garray::Index k) { return 3 * (first + k * step) + round; };
    for (garray::Index k = 0; k < half; ++k)
      at_wait = at_wait && got[static_cast<std::size_t>(k)] == expected(k);
    a.fence();                // this rank's put / read_inc complete at the target
    MPI_Barrier(ctx.comm());  // every rank's wait() has returned
    {
      auto blk = a.access();  // the owner overwrites what its left neighbour read
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = -7;
    }
    MPI_Barrier(ctx.comm());
    for (int s = 0; s < 100; ++s) ctx.progress();  // a late get would land now
    for (garray::Index k = 0; k < half; ++k) later = later && got[static_cast<std::size_t>(k)] == expected(k);
    a.sync();
  }
  CHECK(test::all_ranks(ok));
  CHECK(test::all_ranks(at_wait));  // false: wait() returned before the get had landed
  CHECK(test::all_ranks(later));    // false: the get landed after wait()
}

// semantics.md, get_nb: when another call (a collective, fence(), a replicated write) completes
// a request and that completion fails, the call throws, and the request's own wait() or test()
// throws the same error once more, so code that waits on it learns that its buffer may be
// incomplete. A reversed get_nb (a finisher per owner unpacks a temporary; rma and mixed windows
// only) is completed by fence() with the fault point "request.finisher" armed: fence() throws,
// the request is done(), its first wait() throws the fault, the second returns, every finisher
// ran and the data is complete; a request whose failure fence() met is destroyed without
// throwing. (A regression test: wait() returned normally after the failure.)
#include <garray/runtime/fault.hpp>

#include "support/outcome.hpp"
#include "support/test_support.hpp"

using garray::_;
using garray::idx;
using garray::range;

TEST_CASE("a get_nb whose completion failed inside fence() reports that failure at its own wait()") {
  garray::Context ctx;
  const garray::Index n = 8 * ctx.size() + 5;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {n});
  {
    auto blk = a.access();
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = i;
  }
  a.sync();
  std::vector<std::int64_t> got(static_cast<std::size_t>(n), -1);
  // Reversed: lands through a temporary per owner that a finisher unpacks (rma and mixed
  // windows; under MPICH a flush_local finisher per target comes first).
  auto r = a.get_nb(idx[range(_, _, -1)], std::span<std::int64_t>(got));
  const bool finishers = !r.done();
  if (ctx.window_kind() == garray::WindowKind::rma && ctx.size() >= 2) CHECK(finishers);  // else vacuous
  if (!finishers) {
    MESSAGE("shared windows: the get is complete on return, no finisher to fail");
    r.wait();
    a.sync();
    return;
  }
  garray::testing::arm_fault("request.finisher");              // after the first finisher ran
  CHECK_THROWS_AS(a.fence(), garray::testing::InjectedFault);  // fence completed r, and failed
  CHECK(!garray::testing::fault_armed());
  garray::testing::disarm_fault();
  CHECK(r.done());  // nothing outstanding any more (as semantics.md says for a completing call)
  // The request's own completion call must not claim success after its completion failed.
  CHECK_THROWS_AS(r.wait(), garray::testing::InjectedFault);  // remembered from fence()
  CHECK_NOTHROW(r.wait());                                    // reported once
  // Every finisher ran (the fault fires after a finisher, not instead of it): data complete.
  bool ok = true;
  for (garray::Index i = 0; i < n; ++i) ok = ok && got[static_cast<std::size_t>(i)] == n - 1 - i;
  CHECK(ok);
  // A request whose failure was already reported by another call does not abort in its
  // destructor (the failure is remembered for wait(), never rethrown from ~Request).
  {
    std::vector<std::int64_t> g2(static_cast<std::size_t>(n), -1);
    auto r2 = a.get_nb(idx[range(_, _, -1)], std::span<std::int64_t>(g2));
    garray::testing::arm_fault("request.finisher");
    CHECK_THROWS_AS(a.fence(), garray::testing::InjectedFault);
    garray::testing::disarm_fault();
  }  // ~Request: must neither throw nor abort
  a.sync();
}

// semantics.md (get_nb): a collective on the array first completes this rank's outstanding
// requests on it; if that completion fails, the collective throws on every rank (the rank
// that failed its own error, the others CollectiveFailure naming it), and the request's own
// test() (or wait()) throws the same error once more.
TEST_CASE(
    "a get_nb whose completion fails inside sync() or fill(): every rank throws, test() reports it once") {
  garray::Context ctx;
  const int p = ctx.size(), victim = p - 1;
  const garray::Index n = 8 * p + 5;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {n});
  for (const bool use_fill : {false, true}) {
    CAPTURE(use_fill);
    {
      auto blk = a.access();
      for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = i;
    }
    a.sync();
    std::vector<std::int64_t> got(static_cast<std::size_t>(n), -1);
    garray::Request r;
    if (ctx.rank() == victim) r = a.get_nb(idx[range(_, _, -1)], std::span<std::int64_t>(got));
    // finishers exist on rma and mixed windows (a reversed get lands through temporaries)
    const bool finishers = test::all_ranks(ctx.rank() != victim || !r.done());
    if (!finishers) {
      MESSAGE("shared windows: the get is complete on return, no finisher to fail");
      r.wait();
      continue;
    }
    if (ctx.rank() == victim) garray::testing::arm_fault("request.finisher");
    std::string msg;
    const test::Got g = test::outcome([&] { use_fill ? a.fill(3) : a.sync(); }, &msg);
    garray::testing::disarm_fault();
    CAPTURE(msg);
    if (ctx.rank() == victim) {
      CHECK(g == test::Got::injected);
      CHECK(r.done());
      CHECK_THROWS_AS((void)r.test(), garray::testing::InjectedFault);  // remembered, reported once more
      CHECK(r.test());
    } else {
      CHECK(g == test::Got::failure);
      CHECK(msg.find("rank " + std::to_string(victim)) != std::string::npos);
    }
    a.sync();  // the context and the array work afterwards
  }
}

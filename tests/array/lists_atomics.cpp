// Index-list operations (gather/scatter/scatter_acc) against the reference, and
// contention tests for accumulate atomicity and read_inc tickets.
#include "support/test_support.hpp"

#include <numeric>

using garray::all;
using garray::idx;
using garray::range;

namespace {

template <class T, std::size_t N>
void list_case(const garray::Context& ctx, test::Rng& g) {
  const int p = ctx.size(), me = ctx.rank();
  const auto shape = test::random_shape<N>(g, p + 5);
  garray::GlobalArray<T, N> a(ctx, shape, test::random_distribution_or_replicated<N>(g, shape, p));
  test::Reference<T, N> ref(shape);
  bool ok = true;
  auto random_list = [&](std::size_t n) {
    std::vector<garray::Shape<N>> l(n);
    for (auto& i : l)
      for (std::size_t d = 0; d < N; ++d) i[d] = test::uniform(g, -shape[d], shape[d] - 1);  // negatives count from the end
    return l;
  };
  auto norm = [&](garray::Shape<N> i) {
    for (std::size_t d = 0; d < N; ++d)
      if (i[d] < 0) i[d] += shape[d];
    return i;
  };
  for (int round = 0; round < 5; ++round) {
    // scatter by one writer (duplicates: with a single writer the last one wins in the reference
    // too, because the library keeps the last value of a repeated index)
    const int writer = round % p;
    const auto l = random_list(static_cast<std::size_t>(test::uniform(g, 0, 40)));
    std::vector<T> vals(l.size());
    for (auto& v : vals) v = test::make_value<T>(test::uniform(g, -9, 9));
    for (std::size_t j = 0; j < l.size(); ++j) ref.at(norm(l[j])) = vals[j];
    if (me == writer) a.scatter(l, vals);
    a.sync();
    // scatter_acc from everyone, repeated indices all count
    for (int r = 0; r < p; ++r) {
      const auto la = random_list(static_cast<std::size_t>(test::uniform(g, 0, 40)));
      std::vector<T> va(la.size());
      for (auto& v : va) v = test::make_value<T>(test::uniform(g, -9, 9));
      const T alpha = test::make_value<T>(test::uniform(g, 1, 3));
      for (std::size_t j = 0; j < la.size(); ++j) ref.at(norm(la[j])) += alpha * va[j];
      if (me == r) a.scatter_acc(la, va, alpha);
    }
    a.sync();
    // gather by everyone
    for (int r = 0; r < p; ++r) {
      const auto lg = random_list(static_cast<std::size_t>(test::uniform(g, 0, 60)));
      if (me != r) continue;
      std::vector<T> got(lg.size());
      a.gather(lg, got);
      for (std::size_t j = 0; j < lg.size(); ++j) ok = ok && got[j] == ref.at(norm(lg[j]));
    }
    ok = test::equal_on_all_ranks(a, ref) && ok;
  }
  CHECK(test::all_ranks(ok));
}

}  // namespace

TEST_CASE_TEMPLATE("gather/scatter/scatter_acc match the serial reference", T, double, std::int64_t) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  for (int c = 0; c < 8; ++c) list_case<T, 1>(ctx, g);
  for (int c = 0; c < 8; ++c) list_case<T, 2>(ctx, g);
  for (int c = 0; c < 4; ++c) list_case<T, 3>(ctx, g);
}

TEST_CASE_TEMPLATE("the same with MPI's int counts lowered to a few elements: several calls per owner", T, double,
                   std::int64_t) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  for (const garray::Index limit : {3, 5}) {
    CAPTURE(limit);
    const test::CountLimit lowered(limit);
    for (int c = 0; c < 4; ++c) list_case<T, 1>(ctx, g);
    for (int c = 0; c < 4; ++c) list_case<T, 2>(ctx, g);
  }
}

// semantics.md, replicated arrays: "get/gather read the calling rank's copy; a write through
// access() changes only that copy", and sync() does not reconcile the copies.
TEST_CASE("replicated array: get and gather read the calling rank's copy; access() writes only that copy") {
  garray::Context ctx;
  const int me = ctx.rank();
  garray::GlobalArray<std::int64_t, 1> a(ctx, {10}, garray::Distribution<1>::replicated());
  a.fill(5);
  {
    auto blk = a.access();
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = 100 * me + i;
  }
  const std::vector<garray::Shape<1>> l{{3}, {7}, {3}, {9}};
  const std::vector<std::int64_t> want{100 * me + 3, 100 * me + 7, 100 * me + 3, 100 * me + 9};
  for (int pass = 0; pass < 2; ++pass) {
    CAPTURE(pass);
    std::vector<std::int64_t> got(l.size()), all(10);
    a.gather(l, got);
    CHECK(got == want);
    a.get(garray::idx[garray::range()], std::span<std::int64_t>(all));
    bool own = true;
    for (garray::Index i = 0; i < 10; ++i) own = own && all[static_cast<std::size_t>(i)] == 100 * me + i;
    CHECK(own);
    a.sync();  // does not reconcile: the second pass reads the same
  }
  a.fill(1);  // a collective write: every copy
  std::vector<std::int64_t> got(l.size());
  a.gather(l, got);
  CHECK(got == std::vector<std::int64_t>(l.size(), 1));
}

// semantics.md: a one-sided write is read back by its own rank at once (read your own
// writes) and complete at its target at fence(). Index lists take their own path (one MPI
// call per owner with an indexed datatype, or chunks of it): every rank scatters a reversed
// list into its right neighbour's block, the first index again at the end (the last value
// wins), gathers it back without a fence, then fences; after a barrier (no sync) the owner
// reads its block through access(). Remote on rma and mixed windows (test_array.rma, .mixed).
TEST_CASE("scatter: read your own writes without fence(); complete at its target at fence()") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = 48;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per * p});
  a.fill(0);
  const int to = (me + 1) % p, from = (me - 1 + p) % p;
  const auto value = [&](int writer, garray::Index i) { return std::int64_t{1000} * (writer + 1) + i; };
  const garray::Box<1> tb = a.box_of(to);
  std::vector<garray::Shape<1>> list;
  std::vector<std::int64_t> vals;
  for (garray::Index i = tb.hi[0] - 1; i >= tb.lo[0]; --i) {
    list.push_back({i});
    vals.push_back(value(me, i));
  }
  list.push_back({tb.hi[0] - 1});
  vals.push_back(-(me + 1));  // the repeated index: this value is the one kept
  a.scatter(list, vals);
  std::vector<std::int64_t> back(list.size());
  a.gather(list, back);  // no fence in between
  bool ok = back.back() == -(me + 1) && back.front() == -(me + 1);
  for (std::size_t k = 1; k + 1 < list.size(); ++k) ok = ok && back[k] == vals[k];
  CHECK(ok);
  a.fence();
  ctx.barrier();  // orders every rank's fence() before the reads below; completes nothing itself
  {
    auto blk = a.access();
    bool mine_ok = true;
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i)
      mine_ok = mine_ok && blk.view()[i] == (i == blk.hi(0) - 1 ? -(from + 1) : value(from, i));
    CHECK(mine_ok);
  }
  a.sync();
}

TEST_CASE_TEMPLATE("accumulate is atomic: every rank adds into one overlapping region", T, std::int64_t, double,
                   std::complex<float>) {
  garray::Context ctx;
  const int p = ctx.size();
  garray::GlobalArray<T, 2> a(ctx, {13, 11});
  const int reps = 150;
  // The region overlaps every block; each rank adds ones many times with alpha = rank + 1.
  std::vector<T> ones(9 * 7, test::make_value<T>(1));
  const T alpha = test::make_value<T>(ctx.rank() + 1);
  for (int k = 0; k < reps; ++k) {
    if (k % 2 == 0) a.accumulate(idx[range(2, 11)][range(2, 9)], std::span<const T>(ones), alpha);
    else a.accumulate(idx[range(10, 1, -1)][range(8, 1, -1)], std::span<const T>(ones), alpha);
  }
  a.sync();
  T want{};
  for (int r = 0; r < p; ++r)
    for (int k = 0; k < reps; ++k) want += test::make_value<T>(1) * test::make_value<T>(r + 1);
  auto all_vals = a.get(idx[all][all]);
  bool ok = true;
  for (garray::Index i = 0; i < 13; ++i)
    for (garray::Index j = 0; j < 11; ++j) {
      const bool inside = i >= 2 && i < 11 && j >= 2 && j < 9;
      ok = ok && all_vals[i][j] == (inside ? want : T{});
    }
  CHECK(ok);
}

TEST_CASE_TEMPLATE("scatter_acc and accumulate are atomic with respect to each other", T, std::int64_t, double) {
  // Every rank hits the same few elements of every block, alternating scatter_acc (with
  // repeated indices) and accumulate, so the two paths contend for the same targets.
  garray::Context ctx;
  const int p = ctx.size();
  garray::GlobalArray<T, 1> a(ctx, {std::max(2 * p, 5)});
  const garray::Index n = a.shape()[0];
  std::vector<garray::Shape<1>> list;
  for (garray::Index i = 0; i < n; ++i) list.push_back({i}), list.push_back({i});  // each twice
  const std::vector<T> twos(list.size(), T(2));
  const std::vector<T> ones(static_cast<std::size_t>(n), T(1));
  const int reps = 200;
  const T alpha = T(ctx.rank() + 1);
  for (int k = 0; k < reps; ++k) {
    if ((k + ctx.rank()) % 2 == 0) a.scatter_acc(std::span<const garray::Shape<1>>(list), std::span<const T>(twos), alpha);
    else a.accumulate(idx[all], std::span<const T>(ones), alpha);
  }
  a.sync();
  // Per rank r: reps/2 scatter_acc adding 2 * 2 * (r + 1) per element, reps/2 accumulates adding r + 1.
  T want{};
  for (int r = 0; r < p; ++r) want += T(reps / 2) * T(4 * (r + 1)) + T(reps / 2) * T(r + 1);
  const auto got = a.get(idx[all]);
  bool ok = true;
  for (garray::Index i = 0; i < n; ++i) ok = ok && got[i] == want;
  CHECK_MESSAGE(ok, "expected every element == ", want);
}

TEST_CASE_TEMPLATE("read_inc hands out every ticket exactly once", T, std::int32_t, std::int64_t) {
  garray::Context ctx;
  const int p = ctx.size();
  garray::GlobalArray<T, 1> counter(ctx, {3});
  const T limit = 600;
  std::vector<T> mine;
  while (true) {
    const T t = counter.read_inc({1}, T{1});
    if (t >= limit) break;
    mine.push_back(t);
  }
  counter.sync();
  // Each rank drew exactly one ticket past the limit.
  CHECK(counter.get(idx[1]) == limit + p);
  CHECK(counter.get(idx[0]) == T{0});
  // Collect all tickets on every rank: 0..limit-1, each exactly once.
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  std::vector<T> all_t(static_cast<std::size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(mine.data(), n, garray::mpi_type<T>(), all_t.data(), counts.data(), displs.data(),
                 garray::mpi_type<T>(), MPI_COMM_WORLD);
  std::sort(all_t.begin(), all_t.end());
  std::vector<T> want(static_cast<std::size_t>(limit));
  std::iota(want.begin(), want.end(), T{0});
  CHECK(all_t == want);
  // statistics counted every call
  CHECK(ctx.stats()[garray::Op::read_inc].calls == static_cast<std::int64_t>(mine.size()) + 1);
}

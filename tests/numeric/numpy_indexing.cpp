// Advanced indexing (issue 15): take, put, masked_select/compress, place, assign_where and
// where, checked against NumPy itself. Rank 0 writes every case (the base array, the view
// taken of it, index array, mask, values, garray's result) as a JSON line;
// tests/numeric/numpy_indexing_check.py (run with /usr/bin/python3) recomputes each with
// NumPy (np.take, np.put, x[mask], np.place, np.where) and compares dtype, shape and values
// exactly. Random shapes, distributions (including ranks owning nothing), views with
// negative steps, index arrays with repeats and negative values, the six element types.
#include <set>

#include "numeric/numpy_cases.hpp"
#include "support/test_support.hpp"

namespace {
using namespace nptest;
using garray::Index;

/// A random view of a: the whole array, or reversed along a random subset of dimensions
/// (negative steps), as NumPy index items ([start, stop, step], null = omitted).
template <class T, std::size_t N>
std::pair<garray::View<T, N, N>, std::string> random_view(garray::GlobalArray<T, N>& a, test::Rng& rng) {
  garray::Section<N> s = garray::Section<N>::full(a.shape());
  std::string items = "[";
  for (std::size_t d = 0; d < N; ++d) {
    const bool rev = test::uniform(rng, 0, 1) == 1;
    if (rev) {
      s.start[d] = a.shape()[d] - 1;
      s.step[d] = -1;
    }
    items += std::string(d ? ", " : "") + (rev ? "[null, null, -1]" : "[null, null, 1]");
  }
  return {garray::View<T, N, N>(a, s), items + "]"};
}

template <class I, std::size_t K>
garray::GlobalArray<I, K> random_indices(const garray::Context& ctx, test::Rng& rng, Index n) {
  const auto sh = test::random_shape<K>(rng, K == 1 ? 12 : 5);
  garray::GlobalArray<I, K> idx(ctx, sh, test::random_distribution<K>(rng, sh, ctx.size()));
  garray::fill_random(idx, rng(), I(-n), I(n));  // repeats and negatives: -n .. n-1
  return idx;
}

template <class T, std::size_t N, class I, std::size_t K>
void cases_of(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  const auto sh = test::random_shape<N>(rng, 6);
  garray::GlobalArray<T, N> a(ctx, sh, test::random_distribution<N>(rng, sh, ctx.size()));
  randomize(a, rng(), test::uniform(rng, 0, 1) == 1);
  auto [av, items] = random_view(a, rng);
  const std::string xs = "\"x\": " + dump(a) + ", \"args\": {\"view\": " + items + "}";
  const Index n = av.size();
  auto idx = random_indices<I, K>(ctx, rng, n);
  const std::string is = "\"idx\": " + dump(idx);

  // take (of the view, and of a view of the index array)
  cs.add("\"op\": \"take\", \"exact\": true, " + xs + ", " + is + ", \"got\": " + dump(garray::take(av, idx)));
  cs.add("\"op\": \"take\", \"exact\": true, \"x\": " + dump(a) + ", " + is + ", \"got\": " + dump(garray::take(a, idx)));
  // take with a reversed view of the index array (result blocked)
  {
    garray::Section<K> rs = garray::Section<K>::full(idx.shape());
    rs.start[0] = idx.shape()[0] - 1;
    rs.step[0] = -1;
    garray::View<I, K, K> ir(idx, rs);
    std::string it = "[[null, null, -1]";
    for (std::size_t d = 1; d < K; ++d) it += ", [null, null, 1]";
    cs.add("\"op\": \"take\", \"exact\": true, " + xs + ", " + is + ", \"idx_view\": " + it + "]" +
           ", \"got\": " + dump(garray::take(av, ir)));
  }
  // take along an axis with a 1-d index array (indices in range of that extent)
  {
    const auto ax = static_cast<std::size_t>(test::uniform(rng, 0, N - 1));
    auto i1 = random_indices<I, 1>(ctx, rng, av.shape()[ax]);
    // half the time NumPy's negative spelling of the same axis
    const auto given = static_cast<std::ptrdiff_t>(ax) - (test::uniform(rng, 0, 1) ? static_cast<std::ptrdiff_t>(N) : 0);
    cs.add("\"op\": \"take_axis\", \"exact\": true, \"x\": " + dump(a) + ", \"args\": {\"view\": " + items +
           ", \"axis\": " + std::to_string(given) + "}, \"idx\": " + dump(i1) +
           ", \"got\": " + dump(garray::take(av, i1, garray::Axis{given})));
  }

  // put: values shorter (cyclic) or longer than idx; a scalar
  {
    garray::GlobalArray<T, N> b(ctx, sh, test::random_distribution<N>(rng, sh, ctx.size()));
    b = a;
    auto [bv, bitems] = random_view(b, rng);
    garray::GlobalArray<T, 1> vals(ctx, garray::Shape<1>{test::uniform(rng, 1, 2 * idx.size())});
    randomize(vals, rng(), false);
    const std::string before = dump(b);
    garray::put(bv, idx, vals);
    cs.add("\"op\": \"put\", \"exact\": true, \"x\": " + before + ", \"args\": {\"view\": " + bitems + "}, " + is +
           ", \"y\": " + dump(vals) + ", \"got\": " + dump(b));
    const std::string before2 = dump(b);
    garray::put(b, idx, T{7});
    cs.add("\"op\": \"put\", \"exact\": true, \"x\": " + before2 + ", " + is + ", \"args\": {\"s\": " + js(T{7}) +
           "}, \"got\": " + dump(b));
  }

  // masks: an int32 0/1 array (random distribution) and, for real types, a > 0
  garray::GlobalArray<std::int32_t, N> m(ctx, av.shape(), test::random_distribution<N>(rng, av.shape(), ctx.size()));
  garray::fill_random(m, rng(), std::int32_t{0}, std::int32_t{2});
  const std::string ms = "\"mask\": " + dump(m);
  cs.add("\"op\": \"masked_select\", \"exact\": true, " + xs + ", " + ms + ", \"got\": " + dump(garray::masked_select(av, m)));
  cs.add("\"op\": \"masked_select\", \"exact\": true, " + xs + ", " + ms + ", \"got\": " + dump(garray::compress(m, av)));
  if constexpr (!garray::detail::is_complex<T>::value) {
    cs.add("\"op\": \"select_positive\", \"exact\": true, " + xs + ", \"got\": " +
           dump(garray::masked_select(av, av > T{0})));
    // np.where(c, 1, -1) is int64 (Python ints), and so is garray's with int literals
    auto w = garray::eval(garray::where(av > T{0}, 1, -1));
    using W = typename decltype(w)::value_type;
    cs.add(std::string("\"op\": \"where_int\", \"exact\": true, ") + xs + ", \"got\": " + dump(w) +
           ", \"got_dtype\": \"" + dtype_name<W>() + "\"");
    auto w2 = garray::eval(garray::where(av > T{0}, av, T{0} - av));
    cs.add("\"op\": \"where_abs\", \"exact\": true, " + xs + ", \"got\": " + dump(w2));
  }
  {
    garray::GlobalArray<T, N> b(ctx, sh, a.distribution());
    b = a;
    const std::string before = dump(b);
    garray::Section<N> s = av.section();  // the same view of b
    garray::View<T, N, N> bv(b, s);
    garray::GlobalArray<T, 1> vals(ctx, garray::Shape<1>{test::uniform(rng, 1, 2 * n)});
    randomize(vals, rng(), false);
    garray::place(bv, m, vals);
    cs.add("\"op\": \"place\", \"exact\": true, \"x\": " + before + ", \"args\": {\"view\": " + items + "}, " + ms +
           ", \"y\": " + dump(vals) + ", \"got\": " + dump(b));
    const std::string before2 = dump(b);
    garray::assign_where(bv, m, T{3});
    cs.add("\"op\": \"assign_where\", \"exact\": true, \"x\": " + before2 + ", \"args\": {\"view\": " + items +
           ", \"s\": " + js(T{3}) + "}, " + ms + ", \"got\": " + dump(b));
  }
}

template <class T>
void all_dims(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  cases_of<T, 1, std::int64_t, 1>(cs, ctx, rng);
  cases_of<T, 2, std::int32_t, 1>(cs, ctx, rng);
  cases_of<T, 2, std::int64_t, 2>(cs, ctx, rng);
  cases_of<T, 3, std::int32_t, 2>(cs, ctx, rng);
  cases_of<T, 1, std::int32_t, 1>(cs, ctx, rng);
}

template <class T, std::size_t N>
bool same(const boost::multi_array<T, N>& x, const boost::multi_array<T, N>& y) {
  return x == y;
}
}  // namespace

TEST_CASE("take, put, masked_select, place, assign_where and where agree with NumPy") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  Cases cs(ctx, "indexing");
  for (int rep = 0; rep < 3; ++rep) {
    nptest::for_each_type([&](auto t) { all_dims<typename decltype(t)::type>(cs, ctx, rng); });
  }
  CHECK(cs.check(ctx));
}

TEST_CASE("put with repeated indices: the highest position wins, for any distribution") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed() + 1);
  Cases cs(ctx, "indexing_repeats");
  for (int rep = 0; rep < 20; ++rep) {
#ifdef GARRAY_FAULT_INJECTION
    // every other put takes the rank-order path (the one beyond 62 ranks, where the 2^rank
    // marks do not fit): armed on every rank, see numeric/src/indexing.cpp
    const bool rank_order = rep % 2 == 1 && ctx.size() > 1;
    if (rank_order) garray::testing::arm_fault("put.marks");
#endif
    garray::GlobalArray<std::int64_t, 1> a(ctx, garray::Shape<1>{test::uniform(rng, 1, 4)});
    const Index len = test::uniform(rng, 1, 40);
    garray::GlobalArray<std::int64_t, 1> idx(ctx, garray::Shape<1>{len},
                                             test::random_distribution<1>(rng, garray::Shape<1>{len}, ctx.size()));
    garray::fill_random(idx, rng(), std::int64_t{-a.size()}, std::int64_t{a.size()});
    auto pos = garray::arange<std::int64_t>(ctx, Index{0}, len);  // value = position in idx
    const std::string before = dump(a);
    garray::put(a, idx, pos);
#ifdef GARRAY_FAULT_INJECTION
    if (rank_order) CHECK_FALSE(garray::testing::fault_armed());  // the path was taken
    garray::testing::disarm_fault();
#endif
    cs.add("\"op\": \"put\", \"exact\": true, \"x\": " + before + ", \"idx\": " + dump(idx) + ", \"y\": " + dump(pos) +
           ", \"got\": " + dump(a));
  }
  CHECK(cs.check(ctx));
}

TEST_CASE("take and put: one index-list call per owner (statistics)") {
  garray::Context ctx;
  const Index n = 40;
  auto a = garray::arange<double>(ctx, 0.0, static_cast<double>(n));
  garray::GlobalArray<std::int64_t, 1> idx(ctx, garray::Shape<1>{100});
  garray::fill_random(idx, 17, std::int64_t{-n}, std::int64_t{n});
  auto owners_of = [&](std::span<const std::int64_t> v) {
    std::set<int> o;
    for (auto x : v) o.insert(a.owner({x < 0 ? x + n : x}));
    return static_cast<Index>(o.size());
  };
  std::vector<std::int64_t> mine(static_cast<std::size_t>(idx.local_box().extent(0)));
  if (!mine.empty()) idx.get_section(garray::detail::box_section(idx.view(), idx.local_box()), mine);
  auto& oc = ctx.stats()[garray::Op::gather];
  const auto calls0 = oc.calls, pieces0 = oc.local_pieces + oc.remote_pieces;
  auto t = garray::take(a, idx);
  CHECK(oc.calls - calls0 == (mine.empty() ? 0 : 1));
  CHECK(oc.local_pieces + oc.remote_pieces - pieces0 == owners_of(mine));
  // the values: t[k] = k-th index normalised (a holds 0..n-1)
  auto tv = garray::allgather(t);
  auto iv = garray::allgather(idx);
  for (Index k = 0; k < 100; ++k) CHECK(tv[k] == static_cast<double>(iv[k] < 0 ? iv[k] + n : iv[k]));
  // put: one scatter per owner of the targets this rank writes
  auto& sc = ctx.stats()[garray::Op::scatter];
  const auto s0 = sc.calls;
  garray::put(a, idx, 1.0);
  CHECK(sc.calls - s0 <= 1);
}

TEST_CASE("indexing bad input throws on every rank and changes nothing") {
  garray::Context ctx;
  auto a = garray::arange<double>(ctx, 0, 10);
  auto a0 = garray::allgather(a);
  auto idx = garray::arange<std::int64_t>(ctx, -10, 10);  // all in range
  // one index out of range, in the last rank's block only
  auto bad = garray::arange<std::int64_t>(ctx, -10, 11);
  CHECK_THROWS_AS(garray::take(a, bad), garray::BoundsError);
  // the message names the value and its position in idx (20, whichever rank reads it), and
  // in put too; a 2-d idx: the row-major position
  for (int op = 0; op < 2; ++op) {
    const std::string m = test::message_of<garray::BoundsError>([&] {
      if (op == 0) (void)garray::take(a, bad);
      else garray::put(a, bad, 5.0);
    });
    CAPTURE(m);
    CHECK(test::contains(m, "index 10 at position 20 "));
  }
  {
    garray::GlobalArray<std::int64_t, 2> bad2(ctx, garray::Shape<2>{4, 5});
    bad2.fill(1);
    {
      auto blk = bad2.access();
      if (blk.lo(0) <= 3 && 3 < blk.hi(0) && blk.lo(1) <= 2 && 2 < blk.hi(1)) blk.view()[3][2] = -11;
    }
    bad2.sync();
    const std::string m = test::message_of<garray::BoundsError>([&] { (void)garray::take(a, bad2); });
    CAPTURE(m);
    CHECK(test::contains(m, "index -11 at position 17 "));  // [3][2] of a 4 x 5 idx
  }
  garray::GlobalArray<std::int64_t, 1> low(ctx, garray::Shape<1>{5});
  low.fill(-11);
  CHECK_THROWS_AS(garray::take(a, low), garray::BoundsError);
  {
    garray::GlobalArray<double, 2> a2(ctx, garray::Shape<2>{3, 4});
    garray::GlobalArray<std::int64_t, 1> i4(ctx, garray::Shape<1>{2});
    i4.fill(3);  // in range for axis 1 (4), out of range for axis 0 (3)
    CHECK_THROWS_AS(garray::take(a2, i4, garray::Axis{0}), garray::BoundsError);
    CHECK_THROWS_AS(garray::take(a2, i4, garray::Axis{2}), garray::InvalidArgument);
    CHECK_THROWS_AS(garray::take(a2, i4, garray::Axis{-3}), garray::InvalidArgument);
    CHECK(garray::take(a2, i4, garray::Axis{1}).shape() == garray::Shape<2>{3, 2});
  }
  {
    // An empty result still checks its indices, as NumPy: np.take(zeros((5, 0)), [10],
    // axis=0) raises IndexError; so does a non-empty take from an empty axis. The bad index
    // sits at the end, where only the last rank's share of idx holds it.
    garray::GlobalArray<double, 2> e(ctx, garray::Shape<2>{5, 0});
    garray::GlobalArray<double, 2> e0(ctx, garray::Shape<2>{0, 3});
    const garray::Index m = 2 * ctx.size() + 1;
    garray::GlobalArray<std::int64_t, 1> ok_idx(ctx, garray::Shape<1>{m});
    ok_idx.fill(-5);
    CHECK(garray::take(e, ok_idx, garray::Axis{0}).shape() == garray::Shape<2>{m, 0});
    garray::GlobalArray<std::int64_t, 1> bad_idx(ctx, garray::Shape<1>{m});
    bad_idx.fill(4);
    const std::int64_t bad = 5 + m;  // out of range for axis 0 (5)
    if (ctx.rank() == 0) bad_idx.put(garray::idx[garray::range(m - 1, m)], std::span<const std::int64_t>(&bad, 1));
    bad_idx.sync();
    const std::string msg = test::message_of<garray::BoundsError>([&] { (void)garray::take(e, bad_idx, garray::Axis{0}); });
    CAPTURE(msg);
    CHECK(test::contains(msg, "index " + std::to_string(bad) + " at position " + std::to_string(m - 1)));
    CHECK_THROWS_AS(garray::take(e0, ok_idx, garray::Axis{0}), garray::BoundsError);
    garray::GlobalArray<std::int64_t, 1> none(ctx, garray::Shape<1>{0});
    CHECK(garray::take(e0, none, garray::Axis{0}).shape() == garray::Shape<2>{0, 3});
  }
  CHECK_THROWS_AS(garray::put(a, bad, 5.0), garray::BoundsError);
  auto v = garray::full<double>(ctx, garray::Shape<1>{3}, 9.0);
  CHECK_THROWS_AS(garray::put(a, bad, v), garray::BoundsError);
  CHECK(same(garray::allgather(a), a0));
  // a mask of the wrong shape
  auto m = garray::ones<std::int32_t>(ctx, garray::Shape<1>{9});
  CHECK_THROWS_AS(garray::masked_select(a, m), garray::SizeMismatch);
  CHECK_THROWS_AS(garray::place(a, m, v), garray::SizeMismatch);
  CHECK_THROWS_AS(garray::assign_where(a, m, 1.0), garray::SizeMismatch);
  CHECK(same(garray::allgather(a), a0));
  // empty values with a non-empty selection (NumPy: ValueError)
  auto ok = garray::ones<std::int32_t>(ctx, garray::Shape<1>{10});
  auto e = garray::zeros<double>(ctx, garray::Shape<1>{0});
  CHECK_THROWS_AS(garray::place(a, ok, e), garray::InvalidArgument);
  CHECK(same(garray::allgather(a), a0));
  // ranks passing different index views: CollectiveMismatch everywhere, nothing written
  if (ctx.size() > 1) {
    auto part = idx[garray::idx[garray::range(0, ctx.rank() + 1)]];
    CHECK_THROWS_AS(garray::take(a, part), garray::CollectiveMismatch);
    CHECK_THROWS_AS(garray::put(a, part, 1.0), garray::CollectiveMismatch);
    CHECK(same(garray::allgather(a), a0));
  }
  // empty index arrays and selections
  auto none = garray::zeros<std::int64_t>(ctx, garray::Shape<1>{0});
  CHECK(garray::take(a, none).size() == 0);
  garray::put(a, none, v);
  garray::put(a, idx, e);  // empty values: nothing written (np.put)
  CHECK(garray::masked_select(a, a > 100.0).size() == 0);
  garray::place(a, a > 100.0, e);
  CHECK(same(garray::allgather(a), a0));
  // the context still works
  auto t = garray::take(a, idx);
  CHECK(garray::sum(t) == 2 * 45.0);
}

// NumPy gives np.where(c, 1, -1) the dtype int64 (Python ints): so does garray (two integer
// scalars promote as Python ints), while an integer array keeps its type.
TEST_CASE("where(c, 1, -1) has NumPy's dtype int64") {
  garray::Context ctx;
  auto a = garray::arange<double>(ctx, -2.0, 3.0);
  using W = typename decltype(garray::where(a > 0.0, 1, -1))::value_type;
  CHECK(std::is_same_v<W, std::int64_t>);
  auto w = garray::eval(garray::where(a > 0.0, 1, -1));
  CHECK(garray::sum(w) == 2 - 3);
  auto i32 = garray::arange<std::int32_t>(ctx, 0, 5);
  using W2 = typename decltype(garray::where(a > 0.0, i32, -1))::value_type;
  CHECK(std::is_same_v<W2, std::int32_t>);  // np.where(c, int32_array, -1) is int32
}

// Every indexing row of docs/user-guide.md's "Coming from NumPy" table, as written there,
// checked against NumPy by numpy_indexing_check.py.
TEST_CASE("Coming from NumPy: the indexing rows of the user guide") {
  garray::Context ctx;
  Cases cs(ctx, "indexing_rows");
  auto a = garray::arange<double>(ctx, -3.0, 5.0);                              // np.arange(-3, 5.)
  auto idx = garray::arange<std::int64_t>(ctx, std::int64_t{-1}, std::int64_t{-4}, std::int64_t{-1});  // [-1, -2, -3]
  auto vals = garray::full<double>(ctx, garray::Shape<1>{2}, 9.0);
  const std::string xs = "\"x\": " + dump(a) + ", ";
  // np.take(a, idx)
  cs.add("\"op\": \"take\", \"exact\": true, " + xs + "\"idx\": " + dump(idx) + ", \"got\": " + dump(garray::take(a, idx)));
  // a[a > 0]
  cs.add("\"op\": \"select_positive\", \"exact\": true, " + xs + "\"got\": " + dump(garray::masked_select(a, a > 0.0)));
  // np.compress(a < 0, a)
  cs.add("\"op\": \"compress_negative\", \"exact\": true, " + xs + "\"got\": " + dump(garray::compress(a < 0.0, a)));
  // np.where(a > 0, a, 0)
  cs.add("\"op\": \"where_positive\", \"exact\": true, " + xs + "\"got\": " + dump(garray::eval(garray::where(a > 0.0, a, 0.0))));
  // a[a < 0] = 0
  auto b = garray::eval(a);
  garray::assign_where(b, b < 0.0, 0.0);
  cs.add("\"op\": \"zero_negative\", \"exact\": true, " + xs + "\"got\": " + dump(b));
  // np.put(a, idx, vals)
  std::string before = dump(b);
  garray::put(b, idx, vals);
  cs.add("\"op\": \"put\", \"exact\": true, \"x\": " + before + ", \"idx\": " + dump(idx) + ", \"y\": " + dump(vals) +
         ", \"got\": " + dump(b));
  // np.place(a, a > 5, vals)
  before = dump(b);
  garray::place(b, b > 5.0, garray::arange<double>(ctx, 1.0, 3.0));
  cs.add("\"op\": \"place_above5\", \"exact\": true, \"x\": " + before + ", \"y\": " +
         dump(garray::arange<double>(ctx, 1.0, 3.0)) + ", \"got\": " + dump(b));
  CHECK(cs.check(ctx));
}

TEST_CASE("indexing: a mask of another shape on one rank only, and a fault at the handshake") {
  garray::Context ctx;
  auto a = garray::arange<double>(ctx, 0.0, 10.0);
  auto a0 = garray::allgather(a);
  auto v = garray::full<double>(ctx, garray::Shape<1>{3}, 9.0);
  if (ctx.size() > 1) {  // rank 0's mask has another shape: every rank throws, nothing written
    auto m = garray::ones<std::int32_t>(ctx, garray::Shape<1>{10});
    auto m9 = garray::ones<std::int32_t>(ctx, garray::Shape<1>{9});
    bool right = false;
    try {
      if (ctx.rank() == 0) garray::place(a, m9, v);
      else garray::place(a, m, v);
    } catch (const garray::CollectiveMismatch&) {
      right = true;  // the mask's evaluation already sees different arrays on the ranks
    } catch (const garray::SizeMismatch&) {
      right = ctx.rank() == 0;
    }
    CHECK(test::all_ranks(right));
    CHECK(same(garray::allgather(a), a0));
  }
#ifdef GARRAY_FAULT_INJECTION
  auto idx = garray::arange<std::int64_t>(ctx, std::int64_t{0}, std::int64_t{10});
  auto idx5 = garray::arange<std::int64_t>(ctx, std::int64_t{0}, std::int64_t{2});
  garray::GlobalArray<double, 2> a25(ctx, garray::Shape<2>{2, 5});
  const int victim = ctx.size() - 1;
  // `point` armed on the victim, call() on every rank: true everywhere iff every rank threw,
  // the victim its own error, the others CollectiveFailure naming it (failure rule)
  const auto fails_everywhere = [&](const char* point, auto&& call) {
    if (ctx.rank() == victim) garray::testing::arm_fault(point);
    bool threw = false, right_type = false;
    try {
      call();
    } catch (const garray::testing::InjectedFault&) {
      threw = true;
      right_type = ctx.rank() == victim;
    } catch (const garray::CollectiveFailure& e) {
      threw = true;
      right_type = ctx.rank() != victim && e.failed_rank() == victim;
    }
    garray::testing::disarm_fault();
    return test::all_ranks(threw && right_type);
  };
  // collective.complete: in the handshake; indexing.read: after the handshake, while a
  // rank reads and checks its share of idx (the others get CollectiveFailure, not BoundsError)
  for (int which = 0; which < 6; ++which) {
    CHECK(fails_everywhere(which < 2 ? "collective.complete" : "indexing.read", [&] {
      if (which % 2 == 0 && which < 4)
        garray::put(a, idx, v);
      else if (which < 4)
        (void)garray::take(a, idx);
      else
        (void)garray::take(a25, idx5, garray::Axis{which == 4 ? 1 : 0});
    }));
    CHECK(same(garray::allgather(a), a0));
  }
  // A fault while the results are written, or while place reads its values (audit, stop 42:
  // those phases had no fault point): every rank throws, the victim its own error, the
  // others CollectiveFailure naming it; the inputs are unchanged, and the same calls
  // afterwards give NumPy's results.
  const auto mask = a > 4.0;  // an expression: evaluated by each call
  auto a1 = garray::arange<double>(ctx, 1.0, 3.0);
  garray::GlobalArray<double, 1> w(ctx, garray::Shape<1>{10});
  for (const char* point : {"indexing.read", "indexing.write"}) {
    INFO("fault point := " << std::string(point));
    garray::copy(w, a);
    if (std::string(point) == "indexing.write") {
      CHECK(fails_everywhere(point, [&] { (void)garray::take(a, idx); }));
      CHECK(fails_everywhere(point, [&] { (void)garray::take(a25, idx5, garray::Axis{1}); }));
      CHECK(fails_everywhere(point, [&] { (void)garray::masked_select(a, mask); }));
      CHECK(fails_everywhere(point, [&] { garray::put(w, idx5, a1); }));
    }
    CHECK(fails_everywhere(point, [&] { garray::place(w, mask, a1); }));
    CHECK(same(garray::allgather(a), a0));  // the inputs are unchanged
    // the context works: place and put give NumPy's results now
    garray::copy(w, a);
    garray::place(w, mask, a1);  // a > 4: elements 5..9 become 1, 2, 1, 2, 1
    garray::put(w, idx5, a1);    // elements 0 and 1 become 1 and 2
    const auto got = garray::allgather(w);
    bool right = true;
    for (garray::Index k = 0; k < 10; ++k) {
      const double want = k < 2 ? static_cast<double>(k + 1)
                                : (k > 4 ? static_cast<double>(1 + (k - 5) % 2) : static_cast<double>(k));
      right = right && got.data()[k] == want;
    }
    CHECK(test::all_ranks(right));
    auto taken = garray::take(a, idx);
    CHECK(same(garray::allgather(taken), a0));
    CHECK(garray::masked_select(a, mask).size() == 5);
  }
#endif
}

// semantics.md take: "the handshake completes every rank's earlier writes to a and idx first"
// (docs audit).
namespace take_completes {
namespace {
using garray::Index;
using garray::range;
}  // namespace

TEST_CASE(
    "take sees every rank's unfenced puts and unwaited put_nb to a and idx, and completes the requests") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank(), last = p - 1;
  const Index n = Index{1} << 15;  // large: on rma windows the puts are still moving at the call
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    garray::GlobalArray<double, 1> a(ctx, {n});  // zeros
    garray::GlobalArray<std::int64_t, 1> ix(ctx, {n},
                                            garray::Distribution<1>::slab(0));  // zeros: a[0] everywhere
    std::vector<double> va(static_cast<std::size_t>(n));
    std::vector<std::int64_t> vi(static_cast<std::size_t>(n));
    for (Index k = 0; k < n; ++k) {
      va[static_cast<std::size_t>(k)] = 1.0 + static_cast<double>(k) + round;
      vi[static_cast<std::size_t>(k)] = (k % 2 == 0) ? n - 1 - k : -(k + 1);  // reversed, half negative
    }
    std::optional<garray::Request> ra, ri;
    if (me == last) {  // one writer, every owner's block; no fence, no sync
      if (round % 2 == 0) {
        a.put(garray::idx[range()], std::span<const double>(va));
        ix.put(garray::idx[range()], std::span<const std::int64_t>(vi));
      } else {
        ra.emplace(a.put_nb(garray::idx[range()], std::span<const double>(va)));
        ri.emplace(ix.put_nb(garray::idx[range()], std::span<const std::int64_t>(vi)));
      }
    }
    auto t = garray::take(a, ix);  // a collective on a and ix: completes the writes first
    if (ra) CHECK((ra->done() && ri->done()));
    const auto got = test::whole_array(t);
    bool ok = got.size() == static_cast<std::size_t>(n);
    for (Index k = 0; ok && k < n; ++k) {
      const std::int64_t j = vi[static_cast<std::size_t>(k)];
      const Index flat = j < 0 ? j + n : j;
      ok = got[static_cast<std::size_t>(k)] == va[static_cast<std::size_t>(flat)];
    }
    CHECK(test::all_ranks(ok));
    if (ra) ra->wait();
    if (ri) ri->wait();
  }
}
}  // namespace take_completes

// Broadcasting (issue 15), checked against NumPy itself: operands of fewer dimensions and
// of extent-1 dimensions stretch as NumPy's rules say, in eval, assignments (also into
// reversed views and from a view of the output itself), compound assignment, where(),
// full and axis reductions and argmax. Rank 0 writes every case as a JSON line with the
// NumPy statements that compute it; tests/numeric/numpy_check.py runs them with
// /usr/bin/python3 and compares dtype, shape and values. Random shapes, distributions
// (ranks that own nothing included), reversed operand views and dtype pairs.
#include <boost/multi_array.hpp>

#include "numeric/numpy_cases.hpp"

namespace {
using namespace nptest;
using garray::Index;

/// An operand of shape `sh` (K dims): a random array, read through a view reversed along
/// random dimensions. `rev` gets the NumPy index of that view.
template <class T, std::size_t K>
struct Operand {
  garray::GlobalArray<T, K> base;
  garray::View<T, K, K> view;
  std::string js;  // the operand's values (the view's elements) as JSON
  // (The view is bound in the initializer: assigning a View copies elements into the view
  // it is assigned to, it never rebinds it.)
  Operand(const garray::Context& ctx, const garray::Shape<K>& sh, test::Rng& rng)
      : base(ctx, sh, test::random_distribution<K>(rng, sh, ctx.size())), view(base, reversals(sh, rng)) {
    randomize(base, rng(), test::uniform(rng, 0, 2) == 0);
    js = dump(garray::eval(view));
  }
  /// The whole shape, each dimension reversed with probability 1/2.
  static garray::Section<K> reversals(const garray::Shape<K>& sh, test::Rng& rng) {
    garray::Section<K> s = garray::Section<K>::full(sh);
    for (std::size_t d = 0; d < K; ++d)
      if (test::uniform(rng, 0, 1) == 1 && sh[d] > 0) {
        s.start[d] = sh[d] - 1;
        s.step[d] = -1;
      }
    return s;
  }
};

/// `full`'s last K extents, each replaced by 1 with probability 1/3 (a shape that
/// broadcasts to `full`).
template <std::size_t K, std::size_t N>
garray::Shape<K> stretchable(const garray::Shape<N>& full, test::Rng& rng) {
  garray::Shape<K> s{};
  for (std::size_t k = 0; k < K; ++k) s[k] = test::uniform(rng, 0, 2) == 0 ? 1 : full[k + N - K];
  return s;
}

template <class T, std::size_t N>
std::string reversed_index() {
  std::string r = "(";
  for (std::size_t d = 0; d < N; ++d) r += "slice(None, None, -1), ";
  return r + ")";
}

template <class T, class U, std::size_t N, std::size_t KX, std::size_t KY>
void cases(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  auto full = test::random_shape<N>(rng, 6);
  // one case in four has an empty dimension (NumPy: extent 1 stretches to 0 as to any other)
  if (test::uniform(rng, 0, 3) == 0) full[static_cast<std::size_t>(test::uniform(rng, 0, N - 1))] = 0;
  Operand<T, KX> x(ctx, stretchable<KX>(full, rng), rng);
  Operand<U, KY> y(ctx, stretchable<KY>(full, rng), rng);
  const std::string xy = "\"x\": " + x.js + ", \"y\": " + y.js;
  const auto py = [&](const std::string& code, const std::string& got, const std::string& extra = "") {
    cs.add("\"op\": \"py\", \"args\": {\"code\": \"" + code + "\"}, " + xy + extra + ", \"got\": " + got);
  };
  // eval of a broadcast expression: its shape is the broadcast of both (full or smaller).
  py("r = x + y", dump(garray::eval(x.view + y.view)));
  py("r = x * y - x", dump(garray::eval(x.view * y.view - x.view)));
  py("r = np.where(x.real > 0, x, y)",
     dump(garray::eval(garray::where(garray::cast<double>(x.view) > 0.0, x.view, y.view))));
  // Assignment into an array of the full shape, and into its reversed view.
  using V = typename decltype(x.view + y.view)::value_type;
  garray::GlobalArray<V, N> out(ctx, full, test::random_distribution<N>(rng, full, ctx.size()));
  out = x.view + y.view;
  const std::string sh = shape_js<T, N>(full);
  const std::string dt = std::string("np.") + dtype_name<V>();
  py("r = np.empty(" + sh + ", dtype=" + dt + "); r[...] = x + y", dump(out));
  garray::View<V, N, N> rev(out, [&] {
    garray::Section<N> s = garray::Section<N>::full(full);
    for (std::size_t d = 0; d < N; ++d) {
      s.start[d] = full[d] > 0 ? full[d] - 1 : 0;
      s.step[d] = -1;
    }
    return s;
  }());
  rev = x.view - y.view;
  py("r = np.empty(" + sh + ", dtype=" + dt + "); r[" + reversed_index<T, N>() + "] = x - y", dump(out));
  // Compound assignment with a broadcast operand of the output's type.
  garray::GlobalArray<T, N> o2(ctx, full, test::random_distribution<N>(rng, full, ctx.size()));
  randomize(o2, rng(), false);
  const std::string before = dump(o2);
  o2 += x.view;
  cs.add("\"op\": \"py\", \"args\": {\"code\": \"r = z.copy(); r += x\"}, \"x\": " + x.js +
         ", \"z\": " + before + ", \"got\": " + dump(o2));
  // A view of the output broadcast into the output (aliasing: NumPy reads first).
  if constexpr (N >= 2) {
    if (full[0] > 0) {  // (an empty first dimension has no first row to broadcast)
      const std::string b2 = dump(o2);
      garray::Section<N> first = garray::Section<N>::full(full);
      first.count[0] = 1;
      o2 = garray::View<T, N, N>(o2, first) * T{2};  // a[...] = a[0:1] * 2
      cs.add(
          "\"op\": \"py\", \"args\": {\"code\": \"r = z.copy(); r[...] = r[0:1] * r.dtype.type(2)\"}, "
          "\"z\": " +
          b2 + ", \"got\": " + dump(o2));
      const std::string b3 = dump(o2);
      first.step[0] = -1;
      first.start[0] = full[0] - 1;
      first.dropped[0] = true;
      o2 -= garray::View<T, N, N - 1>(o2, first);  // a -= a[-1]
      cs.add("\"op\": \"py\", \"args\": {\"code\": \"r = z.copy(); r -= r[-1].copy()\"}, \"z\": " + b3 +
             ", \"got\": " + dump(o2));
    }
  }
  // A replicated local operand (boost::multi_array) broadcast along the leading dimensions.
  {
    boost::multi_array<double, 1> m(boost::extents[static_cast<std::ptrdiff_t>(full[N - 1])]);
    for (Index i = 0; i < full[N - 1]; ++i) m[i] = 0.5 * static_cast<double>(i) - 1;
    garray::GlobalArray<double, N> o3(ctx, full, test::random_distribution<N>(rng, full, ctx.size()));
    o3 = garray::cast<double>(x.view) * garray::local(m);
    std::string ms = "{\"dtype\": \"float64\", \"shape\": [" + std::to_string(full[N - 1]) + "], \"data\": [";
    for (Index i = 0; i < full[N - 1]; ++i) ms += (i ? ", " : "") + js(m[i]);
    ms += "]}";
    cs.add("\"op\": \"py\", \"args\": {\"code\": \"r = np.empty(" + sh +
           "); r[...] = x.real.astype(np.float64) * y\"}, \"x\": " + x.js + ", \"y\": " + ms +
           ", \"got\": " + dump(o3));
  }
  // Reductions of broadcast expressions (the driver is the full-shape operand if there is
  // one, else the broadcast shape partitioned over the ranks).
  using S = decltype(garray::sum(x.view * y.view));
  py("r = np.sum(x * y)", js(garray::sum(x.view * y.view)),
     std::string(", \"got_dtype\": \"") + dtype_name<S>() + "\"");
  if constexpr (!garray::detail::is_complex<V>::value) {
    if (garray::volume(garray::eval(x.view + y.view).shape()) > 0)
      py("r = np.argmax(x + y)", js(garray::argmax(x.view + y.view)));
  }
  if constexpr (N >= 2) {
    const auto ax = static_cast<std::size_t>(test::uniform(rng, 0, N - 1));
    if constexpr (KX == N || KY == N) {
      py("r = np.sum(x + y, axis=" + std::to_string(ax) + ")",
         dump(garray::sum(x.view + y.view, garray::Axis{ax})));
    }
  }
}

template <class T, class U>
void all_ranks(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  cases<T, U, 1, 1, 1>(cs, ctx, rng);
  cases<T, U, 2, 2, 1>(cs, ctx, rng);
  cases<T, U, 2, 1, 2>(cs, ctx, rng);
  cases<T, U, 3, 3, 1>(cs, ctx, rng);
  cases<T, U, 3, 2, 3>(cs, ctx, rng);
}
}  // namespace

TEST_CASE("broadcasting agrees with NumPy: shapes, dtypes, assignments, reductions") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  Cases cs(ctx, "broadcast");
  // Three dtype pairs cover the promotion kinds (same type, int with float, int with
  // complex); numpy_promotion.cpp covers every pair without broadcasting. Each combination
  // is a separate instantiation of the whole engine: this list is what the TU costs to build.
  // Reps 2 and 3 cut rows into runs of 1 and 2 elements where an operand is broadcast along
  // the row (its per-row buffer is reused by the row's runs; the default run is longer than
  // these shapes).
  const garray::Index default_chunk = garray::detail::broadcast_chunk;
  for (int rep = 0; rep < 4; ++rep) {
    garray::detail::broadcast_chunk = rep < 2 ? default_chunk : rep - 1;
    all_ranks<double, double>(cs, ctx, rng);
    all_ranks<float, std::int32_t>(cs, ctx, rng);
    all_ranks<std::int64_t, c128>(cs, ctx, rng);
  }
  garray::detail::broadcast_chunk = default_chunk;
  CHECK(cs.check(ctx));
}

TEST_CASE("a broadcast operand is fetched once per rank, not once per element") {
  garray::Context ctx;
  const Index m = 7 * ctx.size() + 1, n = 5 * ctx.size() + 3;
  garray::GlobalArray<double, 2> big(ctx, garray::Shape<2>{m, n}, garray::Distribution<2>::slab(0));
  garray::GlobalArray<double, 1> row(ctx, garray::Shape<1>{n});
  garray::iota(big);
  garray::iota(row, 1.0);
  garray::GlobalArray<double, 2> out(ctx, garray::Shape<2>{m, n}, garray::Distribution<2>::slab(0));
  auto& st = ctx.stats()[garray::Op::get];
  const std::int64_t before = st.local_bytes + st.remote_bytes;
  out = big * row;
  const std::int64_t moved = st.local_bytes + st.remote_bytes - before;
  const Index own_row = row.local_box().empty() ? 0 : row.local_box().volume();
  const bool computes = !out.local_box().empty();
  CHECK(moved == (computes ? (n - own_row) * static_cast<Index>(sizeof(double)) : 0));
  // And the values: out[i, j] = (i n + j) * (j + 1).
  auto acc = out.access();
  const auto b = out.local_box();
  bool ok = true;
  for (Index i = b.lo[0]; i < b.hi[0]; ++i)
    for (Index j = b.lo[1]; j < b.hi[1]; ++j)
      ok = ok && acc.view()[i][j] == static_cast<double>(i * n + j) * static_cast<double>(j + 1);
  CHECK(test::all_ranks(ok));
}

TEST_CASE("shapes that do not broadcast throw SizeMismatch on every rank, nothing written") {
  garray::Context ctx;
  auto a = garray::ones<double>(ctx, garray::Shape<2>{3, 4});
  auto b = garray::arange<double>(ctx, 0, 3);  // (3,) does not broadcast to (3, 4)
  auto c = garray::zeros<double>(ctx, garray::Shape<2>{2, 4});
  auto out = garray::full<double>(ctx, garray::Shape<2>{1, 4}, 7.0);
  const std::string msg = test::message_of<garray::SizeMismatch>([&] { (void)garray::eval(a + b); });
  CHECK(test::contains(msg, "operand 2 (array #"));
  CHECK(test::contains(msg, "has shape [3], which does not broadcast to the expression's shape [3, 4]"));
  CHECK_THROWS_AS(a = c, garray::SizeMismatch);
  CHECK_THROWS_AS(a += b, garray::SizeMismatch);
  CHECK_THROWS_AS(out = a, garray::SizeMismatch);  // NumPy: non-broadcastable output operand
  // ... an expression into it: the shape named is the output's
  const std::string out_msg = test::message_of<garray::SizeMismatch>([&] { out = a * 2.0; });
  CHECK(test::contains(out_msg, "has shape [3, 4], which does not broadcast to the output's shape [1, 4]"));
  CHECK_THROWS_AS((void)garray::sum(a * c), garray::SizeMismatch);
  CHECK(garray::sum(a) == 12.0);
  CHECK(garray::sum(out) == 28.0);
  CHECK(garray::sum(c) == 0.0);
  // Broadcasting the other way is fine: (1, 4) into (3, 4).
  a = out;
  CHECK(garray::sum(a) == 84.0);
}

TEST_CASE("user guide rows: broadcasting a row, a column, and a view of the output itself") {
  using garray::idx, garray::range;
  garray::Context ctx;
  const Index m = 5, n = 4;
  auto a = garray::empty<double>(ctx, garray::Shape<2>{m, n});
  garray::iota(a);                                      // a[i, j] = i n + j
  auto row = garray::arange<double>(ctx, Index{0}, n);  // (n,)
  auto col = garray::empty<double>(ctx, garray::Shape<2>{m, 1});
  garray::iota(col, 1.0);  // col[i, 0] = i + 1
  const auto at = [](const garray::GlobalArray<double, 2>& x, Index i, Index j) { return x.get(idx[i][j]); };
  auto r = garray::eval(a + row);
  auto c = garray::eval(a * col);
  bool ok = true;
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j) {
      ok = ok && at(r, i, j) == static_cast<double>(i * n + j + j);
      ok = ok && at(c, i, j) == static_cast<double>((i * n + j) * (i + 1));
    }
  a = a[idx[range(0, 1)]] * 2.0;  // every row is 2 * the old first row
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j) ok = ok && at(a, i, j) == static_cast<double>(2 * j);
  a += col;
  a -= a[idx[-1]];  // the last row, read before any row is written: the last row becomes 0
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j) ok = ok && at(a, i, j) == static_cast<double>(i - (m - 1));
  CHECK(test::all_ranks(ok));
}

// Scans (cumsum, cumprod) and the axis reductions argmin/argmax, var/std, any/all and
// count_nonzero along an axis (issue 15), checked against NumPy itself: rank 0 writes every
// case (the operand's values as NumPy sees them, the arguments, garray's result) as a JSON
// line and tests/numeric/numpy_check.py recomputes it with NumPy (integers bitwise, floating
// point within the dtype's tolerance). Random shapes (1-4 dims, length-1 and empty
// extents), every axis, random distributions and process grids, the six element types, bool
// operands (comparisons), views with negative steps and dropped dimensions, expressions,
// ties and NaN (real and complex) for argmax. Bad axes throw on every rank with nothing changed.
#include "numeric/numpy_cases.hpp"
#include "support/outcome.hpp"

#include <limits>

namespace {
using namespace nptest;
using garray::Axis;
using garray::Index;

std::string axis_args(std::ptrdiff_t ax) { return "\"args\": {\"axis\": " + std::to_string(ax) + "}, "; }

/// Axis ax of an M-d operand as given to garray and NumPy: half the time NumPy's negative
/// spelling (ax - M).
template <std::size_t M>
std::ptrdiff_t spelled(std::size_t ax, test::Rng& rng) {
  return static_cast<std::ptrdiff_t>(ax) - (test::uniform(rng, 0, 1) ? static_cast<std::ptrdiff_t>(M) : 0);
}

/// A random section of shape-`sh` array with steps in +-1, +-2 (negative steps often) and,
/// for N >= 2 when `drop`, dimension 0 dropped at a random index.
template <std::size_t N>
garray::Section<N> random_view(test::Rng& rng, const garray::Shape<N>& sh, bool drop) {
  garray::Section<N> s;
  for (std::size_t d = 0; d < N; ++d) {
    Index step = test::uniform(rng, 0, 1) ? -1 : 1;
    if (sh[d] >= 3 && test::uniform(rng, 0, 2) == 0) step *= 2;
    const Index a = step > 0 ? step : -step;
    const Index cnt = sh[d] == 0 ? 0 : test::uniform(rng, 1, (sh[d] - 1) / a + 1);
    const Index span = cnt > 0 ? (cnt - 1) * a : 0;
    const Index lo = sh[d] == 0 ? 0 : test::uniform(rng, 0, sh[d] - 1 - span);
    s.start[d] = step > 0 ? lo : lo + span;
    s.step[d] = step;
    s.count[d] = cnt;
  }
  if (drop && N >= 2 && sh[0] > 0) {
    s.dropped[0] = true;
    s.count[0] = 1;
    s.step[0] = 1;
    s.start[0] = test::uniform(rng, 0, sh[0] - 1);
  }
  return s;
}

/// A shape with extents in [1, max], sometimes one extent 0.
template <std::size_t N>
garray::Shape<N> shape_of(test::Rng& rng, Index max, bool allow_empty) {
  auto sh = test::random_shape<N>(rng, max);
  if (allow_empty && test::uniform(rng, 0, 7) == 0) sh[static_cast<std::size_t>(test::uniform(rng, 0, N - 1))] = 0;
  return sh;
}

/// Every scan and axis reduction of operand `x` (an array, a view or an expression of
/// rank M), whose values NumPy sees as `xs`.
template <class X>
void ops_of(Cases& cs, const X& x, const std::string& xs, test::Rng& rng) {
  using V = garray::detail::value_t<X>;
  constexpr std::size_t M = static_cast<std::size_t>(garray::expr_t<X>::rank);
  for (std::size_t k = 0; k < M; ++k) {
    const std::ptrdiff_t ax = spelled<M>(k, rng);
    const std::string as = axis_args(ax);
    cs.add("\"op\": \"cumsum\", " + as + xs + ", \"got\": " + dump(garray::cumsum(x, Axis{ax})));
    cs.add("\"op\": \"cumprod\", " + as + xs + ", \"got\": " + dump(garray::cumprod(x, Axis{ax})));
    if constexpr (M >= 2) {
      Index len = 0;
      garray::detail::with_first_view(garray::as_expr(x), [&](const auto& v) { len = v.shape()[k]; });
      if (len > 0) {
        cs.add("\"op\": \"argmax_axis\", " + as + xs + ", \"got\": " + dump(garray::argmax(x, Axis{ax})));
        cs.add("\"op\": \"argmin_axis\", " + as + xs + ", \"got\": " + dump(garray::argmin(x, Axis{ax})));
      }
      const Index ddof = test::uniform(rng, 0, 1);
      const std::string vs = "\"args\": {\"axis\": " + std::to_string(ax) + ", \"ddof\": " + std::to_string(ddof) + "}, ";
      if constexpr (!std::is_same_v<V, bool>) {
        cs.add("\"op\": \"var_axis\", " + vs + xs + ", \"got\": " + dump(garray::var(x, Axis{ax}, ddof)));
        cs.add("\"op\": \"std_axis\", " + vs + xs + ", \"got\": " + dump(garray::std_dev(x, Axis{ax}, ddof)));
      }
      cs.add("\"op\": \"count_nonzero_axis\", " + as + xs + ", \"got\": " + dump(garray::count_nonzero(x, Axis{ax})));
      cs.add("\"op\": \"any_axis\", " + as + xs + ", \"got\": " + dump(garray::any(x, Axis{ax})));
      cs.add("\"op\": \"all_axis\", " + as + xs + ", \"got\": " + dump(garray::all_of(x, Axis{ax})));
    }
  }
}

template <class T, std::size_t N>
void cases_of(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  const auto sh = shape_of<N>(rng, 6, true);
  garray::GlobalArray<T, N> x(ctx, sh, test::random_distribution<N>(rng, sh, ctx.size()));
  const bool small = test::uniform(rng, 0, 1) == 1;  // small integers / many zeros: ties
  randomize(x, rng(), small);
  // NaN for argmax/argmin (the first NaN wins; complex: NaN in either part)
  if (test::uniform(rng, 0, 2) == 0) sprinkle_nan(x, rng(), 5);
  const std::string xs = "\"x\": " + dump(x);
  // the whole array, on its own distribution and on a random other one
  ops_of(cs, x, xs, rng);
  for (std::size_t ax = 0; ax < N; ++ax) {
    const auto d = test::random_distribution<N>(rng, sh, ctx.size());
    cs.add("\"op\": \"cumsum\", " + axis_args(ax) + xs + ", \"got\": " + dump(garray::cumsum(x, Axis{ax}, d)));
    cs.add("\"op\": \"cumprod\", " + axis_args(ax) + xs + ", \"got\": " + dump(garray::cumprod(x, Axis{ax}, d)));
  }
  // Operand kinds other than the whole array exercise the engine's paths (strided and
  // reversed reads, dropped dimensions, fused expressions), which do not depend on the
  // element type: each kind runs for half of the types, so that every kind meets a real,
  // an integer and a complex type (each kind and type is a separate instantiation of every
  // scan and axis reduction: this is what the TU costs to build).
  constexpr bool views = std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, c64>;
  // a view with negative steps (and a dropped dimension)
  if constexpr (views) {
    const auto s = random_view<N>(rng, sh, false);
    garray::View<T, N, N> v(x, s);
    ops_of(cs, v, "\"x\": " + dump(garray::eval(v)), rng);
  }
  if constexpr (N >= 2 && views) {
    if (sh[0] > 0) {
      const auto s = random_view<N>(rng, sh, true);
      garray::View<T, N, N - 1> v(x, s);
      ops_of(cs, v, "\"x\": " + dump(garray::eval(v)), rng);
    }
  }
  // an expression, and a bool operand (a comparison: NumPy's bool array)
  if constexpr (!views) ops_of(cs, x * T{2} - T{1}, "\"x\": " + dump(garray::eval(x * T{2} - T{1})), rng);
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::int64_t>)
    ops_of(cs, x > T{0}, "\"x\": " + dump(garray::eval<std::int32_t>(x > T{0})) + ", \"as_bool\": true", rng);
  // the axis-less forms: the flattened array (small, so float32 sums stay within tolerance)
  {
    const auto fs = shape_of<N>(rng, 4, true);
    garray::GlobalArray<T, N> y(ctx, fs, test::random_distribution<N>(rng, fs, ctx.size()));
    randomize(y, rng(), true);
    if constexpr (!std::is_integral_v<T>) y = y * T{0.125};
    const std::string ys = "\"x\": " + dump(y);
    cs.add("\"op\": \"cumsum\", " + ys + ", \"got\": " + dump(garray::cumsum(y)));
    cs.add("\"op\": \"cumprod\", " + ys + ", \"got\": " + dump(garray::cumprod(y)));
    const auto s = random_view<N>(rng, fs, false);
    garray::View<T, N, N> v(y, s);
    cs.add("\"op\": \"cumsum\", \"x\": " + dump(garray::eval(v)) + ", \"got\": " + dump(garray::cumsum(v)));
  }
}

template <class T>
void all_dims(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  cases_of<T, 1>(cs, ctx, rng);
  cases_of<T, 2>(cs, ctx, rng);
  cases_of<T, 3>(cs, ctx, rng);
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::int32_t>) cases_of<T, 4>(cs, ctx, rng);
}
}  // namespace

TEST_CASE("cumsum, cumprod and the axis reductions agree with NumPy") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  Cases cs(ctx, "scans");
  nptest::for_each_type([&](auto t) { all_dims<typename decltype(t)::type>(cs, ctx, rng); });
  CHECK(cs.check(ctx));
}

TEST_CASE("integer cumsum/cumprod wrap exactly as NumPy's int64") {
  garray::Context ctx;
  Cases cs(ctx, "scans_wrap");
  const garray::Shape<2> sh{3, 40};
  garray::GlobalArray<std::int64_t, 2> x(ctx, sh, garray::Distribution<2>::grid({1, ctx.size()}));
  garray::fill_random(x, 7, std::int64_t{-1000000}, std::int64_t{1000000});
  cs.add("\"op\": \"cumprod\", " + axis_args(1) + "\"x\": " + dump(x) + ", \"got\": " + dump(garray::cumprod(x, Axis{1})));
  x = x * std::int64_t{1} + std::numeric_limits<std::int64_t>::max() / 4;
  cs.add("\"op\": \"cumsum\", " + axis_args(1) + "\"x\": " + dump(x) + ", \"got\": " + dump(garray::cumsum(x, Axis{1})));
  CHECK(cs.check(ctx));
}

TEST_CASE("scans and axis reductions: a bad axis throws on every rank, nothing changed") {
  garray::Context ctx;
  auto a = garray::arange<double>(ctx, 0, 12);
  garray::GlobalArray<std::int32_t, 3> b(ctx, {2, 3, 2});
  b.fill(5);
  const auto msg = [](auto&& f) {
    try {
      f();
    } catch (const garray::InvalidArgument& e) {
      return std::string(e.what());
    } catch (...) {
      return std::string("other exception");
    }
    return std::string("no exception");
  };
  CHECK(test::contains(msg([&] { (void)garray::cumsum(a, Axis{1}); }), "axis 1"));
  CHECK(test::contains(msg([&] { (void)garray::cumprod(b, Axis{3}); }), "axis 3"));
  CHECK(test::contains(msg([&] { (void)garray::argmax(b, Axis{5}); }), "axis 5"));
  CHECK(test::contains(msg([&] { (void)garray::argmin(b, Axis{3}); }), "axis 3"));
  CHECK(test::contains(msg([&] { (void)garray::var(b, Axis{3}, 1); }), "axis 3"));
  CHECK(test::contains(msg([&] { (void)garray::std_dev(b, Axis{4}); }), "axis 4"));
  CHECK(test::contains(msg([&] { (void)garray::any(b, Axis{3}); }), "axis 3"));
  CHECK(test::contains(msg([&] { (void)garray::all_of(b, Axis{3}); }), "axis 3"));
  CHECK(test::contains(msg([&] { (void)garray::count_nonzero(b, Axis{7}); }), "axis 7"));
  CHECK(test::contains(msg([&] { (void)garray::sum(b, Axis{-4}); }), "axis -4"));
  CHECK(test::contains(msg([&] { (void)garray::cumsum(b, Axis{-4}); }), "axis -4"));
  CHECK(test::contains(msg([&] { (void)garray::argmax(b, Axis{-4}); }), "axis -4"));
  // argmax along an axis of length 0: NumPy's error, on every rank
  auto e = garray::zeros<double>(ctx, garray::Shape<2>{0, 3});
  CHECK(test::contains(msg([&] { (void)garray::argmax(e, Axis{0}); }), "empty"));
  // different axes on different ranks: no hang, every rank throws
  if (ctx.size() > 1) {
    CHECK_THROWS_AS(garray::cumsum(b, Axis{ctx.rank() == 0 ? std::size_t{0} : std::size_t{1}}),
                    garray::CollectiveMismatch);
    CHECK_THROWS_AS(garray::argmax(b, Axis{ctx.rank() == 0 ? std::size_t{0} : std::size_t{1}}),
                    garray::CollectiveMismatch);
    // an axis bad on rank 0 only: InvalidArgument there, CollectiveMismatch with its message elsewhere
    std::string m;
    const test::Got got =
        test::outcome([&] { (void)garray::cumsum(b, Axis{ctx.rank() == 0 ? std::size_t{9} : std::size_t{1}}); }, &m);
    CAPTURE(m);
    CHECK(got == (ctx.rank() == 0 ? test::Got::invalid : test::Got::mismatch));
    CHECK(test::contains(m, "axis 9"));
    CHECK_THROWS_AS(garray::var(b, Axis{0}, ctx.rank() == 0 ? 0 : 1), garray::CollectiveMismatch);
    // Axis{-1} on one rank and Axis{M - 1} on the others name the same axis: no mismatch
    const auto s1 = garray::sum(b, Axis{ctx.rank() == 0 ? -1 : 2});
    const auto s2 = garray::sum(b, Axis{2});
    CHECK(garray::all_of(s1 == s2));
  }
  // the operands are unchanged and the context still works
  CHECK(garray::sum(a) == 66.0);
  CHECK(garray::sum(b) == 60);
  auto c = garray::cumsum(a, Axis{0});
  CHECK(garray::max(c) == 66.0);
}

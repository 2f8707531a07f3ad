// "Coming from NumPy" (issue 15): creation, assignment to whole arrays, astype and the
// NumPy-style reductions, checked against NumPy itself. Rank 0 writes every case (inputs,
// arguments, garray's result) as a JSON line; tests/numeric/numpy_check.py (run with
// /usr/bin/python3, which has NumPy) recomputes each with NumPy and compares dtype, shape
// and values (integers and creation routines exactly, floating point within 1e-10, float32
// within 1e-4). Random shapes, distributions, dtypes and axes; the same on every rank.
#include <complex>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "numeric/numpy_cases.hpp"
#include "numeric/support.hpp"
#include "support/outcome.hpp"

namespace {
using namespace nptest;
using garray::Index;
template <class T, std::size_t N>
void reductions_of(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  const auto sh = test::random_shape<N>(rng, 7);
  garray::GlobalArray<T, N> x(ctx, sh, test::random_distribution<N>(rng, sh, ctx.size()));
  randomize(x, rng(), test::uniform(rng, 0, 1) == 1);
  // NaN in a third of the cases (NumPy: min/max/minimum/maximum propagate it, argmax/argmin
  // take the first NaN, complex: NaN in either part)
  if (test::uniform(rng, 0, 2) == 0) sprinkle_nan(x, rng(), 5);
  const std::string xs = "\"x\": " + dump(x);
  using S = decltype(garray::sum(x));
  cs.add("\"op\": \"sum\", " + xs + ", \"got\": " + js(garray::sum(x)) + ", \"got_dtype\": \"" + dtype_name<S>() + "\"");
  if constexpr (!garray::detail::is_complex<T>::value) {
    // Products of small values only (no overflow / inf differences).
    garray::GlobalArray<T, N> y(ctx, sh);
    y = garray::where(x > T{0}, T{1}, T{-1});
    cs.add("\"op\": \"prod\", \"x\": " + dump(y) + ", \"got\": " + js(garray::prod(y)) + ", \"got_dtype\": \"" +
           dtype_name<S>() + "\"");
    cs.add("\"op\": \"min\", " + xs + ", \"got\": " + js(garray::min(x)) + ", \"got_dtype\": \"" + dtype_name<T>() + "\"");
    cs.add("\"op\": \"max\", " + xs + ", \"got\": " + js(garray::max(x)) + ", \"got_dtype\": \"" + dtype_name<T>() + "\"");
    // elementwise minimum/maximum against another array (NaN in either operand)
    garray::GlobalArray<T, N> z(ctx, sh, test::random_distribution<N>(rng, sh, ctx.size()));
    randomize(z, rng(), true);
    if (test::uniform(rng, 0, 1) == 0) sprinkle_nan(z, rng(), 4);
    const std::string zs = "\"y\": " + dump(z);
    cs.add("\"op\": \"minimum\", " + xs + ", " + zs + ", \"got\": " + dump(garray::eval(garray::min(x, z))));
    cs.add("\"op\": \"maximum\", " + xs + ", " + zs + ", \"got\": " + dump(garray::eval(garray::max(x, z))));
    if constexpr (N >= 2) {
      const auto ax = static_cast<std::ptrdiff_t>(test::uniform(rng, 0, N - 1));
      const std::string as = "\"args\": {\"axis\": " + std::to_string(ax) + "}, ";
      cs.add("\"op\": \"min_axis\", " + as + xs + ", \"got\": " + dump(garray::min(x, garray::Axis{ax})));
      cs.add("\"op\": \"max_axis\", " + as + xs + ", \"got\": " + dump(garray::max(x, garray::Axis{ax})));
    }
  }
  using Mn = decltype(garray::mean(x));
  cs.add("\"op\": \"mean\", " + xs + ", \"got\": " + js(garray::mean(x)) + ", \"got_dtype\": \"" + dtype_name<Mn>() + "\"");
  for (Index ddof = 0; ddof < 2; ++ddof) {
    using Vr = decltype(garray::var(x, ddof));
    if (garray::volume(sh) <= ddof) continue;
    cs.add("\"op\": \"var\", \"args\": {\"ddof\": " + std::to_string(ddof) + "}, " + xs + ", \"got\": " +
           js(garray::var(x, ddof)) + ", \"got_dtype\": \"" + dtype_name<Vr>() + "\"");
    cs.add("\"op\": \"std\", \"args\": {\"ddof\": " + std::to_string(ddof) + "}, " + xs + ", \"got\": " +
           js(garray::std_dev(x, ddof)) + ", \"got_dtype\": \"" + dtype_name<Vr>() + "\"");
  }
  cs.add("\"op\": \"argmax\", " + xs + ", \"got\": " + js(garray::argmax(x)));
  cs.add("\"op\": \"argmin\", " + xs + ", \"got\": " + js(garray::argmin(x)));
  cs.add("\"op\": \"any\", " + xs + ", \"got\": " + js(garray::any(x)));
  cs.add("\"op\": \"all\", " + xs + ", \"got\": " + js(garray::all_of(x)));
  cs.add("\"op\": \"count_nonzero\", " + xs + ", \"got\": " + js(garray::count_nonzero(x)));
  if constexpr (N >= 2) {
    // an axis in [-N, N): NumPy's negative spelling counts from the end
    const auto ax = static_cast<std::ptrdiff_t>(test::uniform(rng, 0, 2 * N - 1)) - static_cast<std::ptrdiff_t>(N);
    const std::string as = "\"args\": {\"axis\": " + std::to_string(ax) + "}, ";
    cs.add("\"op\": \"sum_axis\", " + as + xs + ", \"got\": " + dump(garray::sum(x, garray::Axis{ax})));
    cs.add("\"op\": \"mean_axis\", " + as + xs + ", \"got\": " + dump(garray::mean(x, garray::Axis{ax})));
  }
}

template <class T, std::size_t N>
void creation_of(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  const auto sh = test::random_shape<N>(rng, 6);
  const auto dist = test::random_distribution<N>(rng, sh, ctx.size());
  const std::string a = std::string("\"args\": {\"dtype\": \"") + dtype_name<T>() + "\", \"shape\": " + shape_js<T>(sh);
  cs.add("\"op\": \"zeros\", " + a + "}, \"got\": " + dump(garray::zeros<T>(ctx, sh, dist)));
  cs.add("\"op\": \"ones\", " + a + "}, \"got\": " + dump(garray::ones<T>(ctx, sh, dist)));
  cs.add("\"op\": \"full\", " + a + ", \"value\": 3}, \"got\": " + dump(garray::full<T>(ctx, sh, 3, dist)));
  cs.add("\"op\": \"empty\", " + a + "}, \"got\": " + dump(garray::empty<T>(ctx, sh, dist)));
  garray::GlobalArray<T, N> x(ctx, sh, dist);
  randomize(x, rng(), false);
  const std::string xs = "\"x\": " + dump(x);
  auto zl = garray::zeros_like(x);
  CHECK(zl.distribution().signature() == x.distribution().signature());
  cs.add("\"op\": \"zeros_like\", " + xs + ", \"got\": " + dump(zl));
  cs.add("\"op\": \"ones_like\", " + xs + ", \"got\": " + dump(garray::ones_like(x)));
  cs.add("\"op\": \"full_like\", \"args\": {\"value\": 2}, " + xs + ", \"got\": " + dump(garray::full_like(x, 2)));
  cs.add("\"op\": \"empty_like\", " + xs + ", \"got\": " + dump(garray::empty_like(x)));
  // astype to every other type
  const auto to = [&]<class U>(U*) {
    if constexpr (!(garray::detail::is_complex<T>::value && std::is_integral_v<U>)) {
      cs.add(std::string("\"op\": \"astype\", \"args\": {\"dtype\": \"") + dtype_name<U>() + "\"}, " + xs +
             ", \"got\": " + dump(x.template astype<U>()));
    }
  };
  to(static_cast<float*>(nullptr));
  to(static_cast<double*>(nullptr));
  to(static_cast<std::int32_t*>(nullptr));
  to(static_cast<std::int64_t*>(nullptr));
  to(static_cast<c64*>(nullptr));
  to(static_cast<c128*>(nullptr));
  // Whole-array assignment: expression, view, copy (another array), aliasing (reversed self).
  garray::GlobalArray<T, N> y(ctx, sh, test::random_distribution<N>(rng, sh, ctx.size()));
  randomize(y, rng(), false);
  const std::string ys = "\"y\": " + dump(y);
  const std::string da = std::string("\"args\": {\"dtype\": \"") + dtype_name<T>() + "\"}, ";
  garray::GlobalArray<T, N> r(ctx, sh, test::random_distribution<N>(rng, sh, ctx.size()));
  r = x * T{2} + y;
  cs.add("\"op\": \"assign_expr\", " + da + xs + ", " + ys + ", \"got\": " + dump(r));
  garray::Section<N> rev;
  for (std::size_t d = 0; d < N; ++d) {
    rev.start[d] = sh[d] - 1;
    rev.step[d] = -1;
    rev.count[d] = sh[d];
  }
  r = garray::View<T, N, N>(x, rev);
  cs.add("\"op\": \"assign_view\", " + da + xs + ", \"got\": " + dump(r));
  r = y;
  cs.add("\"op\": \"assign_copy\", " + da + ys + ", \"got\": " + dump(r));
  if constexpr (N == 1) {
    const std::string before = dump(r);
    r = garray::View<T, N, N>(r, rev);
    cs.add("\"op\": \"assign_alias\", " + da + "\"x\": " + before + ", \"got\": " + dump(r));
  }
}

template <class T>
void ranges_of(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  const std::string dt = std::string("\"dtype\": \"") + dtype_name<T>() + "\"";
  if constexpr (std::is_floating_point_v<T>) {  // a start not exact in T (NumPy stores start + step itself)
    cs.add("\"op\": \"arange\", \"exact\": true, \"args\": {" + dt + ", \"start\": " + js(-4.0 / 3) +
           ", \"stop\": 8, \"step\": 1}, \"got\": " + dump(garray::arange<T>(ctx, -4.0 / 3, 8.0, 1.0)));
  }
  for (int k = 0; k < 3; ++k) {
    const Index start = test::uniform(rng, -20, 20), stop = test::uniform(rng, -20, 40);
    Index step = test::uniform(rng, -4, 4);
    if (step == 0) step = 3;
    cs.add("\"op\": \"arange\", \"exact\": true, \"args\": {" + dt + ", \"start\": " + std::to_string(start) +
           ", \"stop\": " + std::to_string(stop) + ", \"step\": " + std::to_string(step) +
           "}, \"got\": " + dump(garray::arange<T>(ctx, start, stop, step)));
    const double fs = static_cast<double>(start) / 3, fe = static_cast<double>(stop) / 7;
    const Index num = test::uniform(rng, 0, 30);
    const bool ep = test::uniform(rng, 0, 1) == 1;
    cs.add("\"op\": \"linspace\", \"exact\": true, \"args\": {" + dt + ", \"start\": " + js(fs) + ", \"stop\": " + js(fe) +
           ", \"num\": " + std::to_string(num) + ", \"endpoint\": " + (ep ? "true" : "false") +
           "}, \"got\": " + dump(garray::linspace<T>(ctx, fs, fe, num, ep)));
    if constexpr (std::is_floating_point_v<T>) {
      const double fstep = static_cast<double>(step) / 3.0;
      cs.add("\"op\": \"arange\", \"exact\": true, \"args\": {" + dt + ", \"start\": " + js(fs) + ", \"stop\": " +
             js(static_cast<double>(stop)) + ", \"step\": " + js(fstep) +
             "}, \"got\": " + dump(garray::arange<T>(ctx, fs, static_cast<double>(stop), fstep)));
    }
    const Index n = test::uniform(rng, 1, 8), m = test::uniform(rng, 1, 8), kk = test::uniform(rng, -3, 3);
    cs.add("\"op\": \"eye\", \"args\": {" + dt + ", \"n\": " + std::to_string(n) + ", \"m\": " + std::to_string(m) +
           ", \"k\": " + std::to_string(kk) + "}, \"got\": " + dump(garray::eye<T>(ctx, n, m, kk)));
  }
}

template <class T>
void all_dims(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  creation_of<T, 1>(cs, ctx, rng);
  creation_of<T, 2>(cs, ctx, rng);
  creation_of<T, 3>(cs, ctx, rng);
  for (int k = 0; k < 2; ++k) {
    reductions_of<T, 1>(cs, ctx, rng);
    reductions_of<T, 2>(cs, ctx, rng);
    reductions_of<T, 3>(cs, ctx, rng);
  }
}
}  // namespace

namespace {
/// Float -> integer conversions of NaN, infinities and values outside the integer's range
/// (undefined behaviour in C++): astype and assignment give what NumPy gives on x86.
template <class T>
void casts_out_of_range(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> special{inf,         -inf,        std::numeric_limits<T>::quiet_NaN(),
                               T(3e9),      T(-3e9),     T(2.7),
                               T(-2.7),     T(-0.0),     T(2147483647.0),
                               T(-2147483648.0), T(2147483648.0), T(9.3e18),
                               T(-9.3e18),  T(9.2e18),   T(-9.2e18)};
  const Index n = 2 * static_cast<Index>(special.size()) + test::uniform(rng, 0, 6);
  const garray::Shape<1> sh{n};
  garray::GlobalArray<T, 1> x(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  garray::GlobalArray<T, 1> zero(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  zero.fill(T{0});
  const auto shift = static_cast<std::size_t>(test::uniform(rng, 0, 100));
  if (ctx.rank() == 0) {
    std::vector<T> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = special[(i + shift) % special.size()];
    x.put(garray::idx[garray::range()], std::span<const T>(v));
  }
  x.sync();
  const std::string xs = "\"x\": " + dump(x), ys = "\"y\": " + dump(zero);
  const auto to = [&]<class U>(U*) {
    cs.add(std::string("\"op\": \"astype\", \"args\": {\"dtype\": \"") + dtype_name<U>() + "\"}, " + xs +
           ", \"got\": " + dump(x.template astype<U>()));
    garray::GlobalArray<U, 1> r(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
    r = x * T{2} + zero;  // the engine's store into an integer array
    cs.add(std::string("\"op\": \"assign_expr\", \"args\": {\"dtype\": \"") + dtype_name<U>() + "\"}, " +
           xs + ", " + ys + ", \"got\": " + dump(r));
  };
  to(static_cast<std::int32_t*>(nullptr));
  to(static_cast<std::int64_t*>(nullptr));
}
}  // namespace

namespace {
/// cast<bool> and cast<unsigned> of floating point and complex values (audit of stop 43:
/// every value became 0 / false), through astype<int64>: NumPy's x.astype(via). Values in
/// the unsigned types' range only (NumPy leaves the others platform-dependent).
template <class T>
void casts_to_bool_and_unsigned(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  constexpr bool cplx = garray::detail::is_complex<T>::value;
  using R = decltype(std::real(T{}));
  const std::vector<R> special{R(0.5),  R(2.0),   R(7.9),      R(0.0),          R(-0.0),
                               R(-0.5), R(0.999), R(65535.75), R(4294967040.0), R(1e9)};
  const Index n = static_cast<Index>(special.size()) + test::uniform(rng, 0, 9);
  const garray::Shape<1> sh{n};
  garray::GlobalArray<T, 1> x(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  const auto shift = static_cast<std::size_t>(test::uniform(rng, 0, 100));
  if (ctx.rank() == 0) {
    std::vector<T> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) {
      const R re = special[(i + shift) % special.size()];
      if constexpr (cplx)  // complex to bool: true if either part is nonzero
        v[i] = i % 3 == 0 ? T(R(0), re) : T(re, R(0));
      else
        v[i] = re;
    }
    x.put(garray::idx[garray::range()], std::span<const T>(v));
  }
  x.sync();
  const std::string xs = "\"x\": " + dump(x);
  const auto to = [&]<class U>(U*, const char* via) {
    cs.add(std::string("\"op\": \"cast_to_int64\", \"args\": {\"via\": \"") + via + "\"}, " + xs +
           ", \"got\": " + dump(garray::astype<std::int64_t>(garray::cast<U>(x))));
  };
  to(static_cast<bool*>(nullptr), "bool");
  if constexpr (!cplx) {
    to(static_cast<std::uint32_t*>(nullptr), "uint32");
    to(static_cast<std::uint64_t*>(nullptr), "uint64");
  }
}
}  // namespace

TEST_CASE("creation, whole-array assignment, astype and reductions agree with NumPy") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  Cases cs(ctx, "compat");
  nptest::for_each_type([&](auto t) { all_dims<typename decltype(t)::type>(cs, ctx, rng); });
  ranges_of<float>(cs, ctx, rng);
  ranges_of<double>(cs, ctx, rng);
  ranges_of<std::int32_t>(cs, ctx, rng);
  ranges_of<std::int64_t>(cs, ctx, rng);
  casts_out_of_range<float>(cs, ctx, rng);
  casts_out_of_range<double>(cs, ctx, rng);
  casts_to_bool_and_unsigned<float>(cs, ctx, rng);
  casts_to_bool_and_unsigned<double>(cs, ctx, rng);
  casts_to_bool_and_unsigned<std::complex<double>>(cs, ctx, rng);
  CHECK(cs.check(ctx));
}

TEST_CASE("bad input to the NumPy-style functions throws on every rank, nothing changed") {
  garray::Context ctx;
  CHECK_THROWS_AS(garray::arange<int>(ctx, 0, 10, 0), garray::InvalidArgument);
  CHECK_THROWS_AS(garray::linspace<double>(ctx, 0.0, 1.0, -1), garray::InvalidArgument);
  CHECK_THROWS_AS(garray::eye<double>(ctx, -1), garray::InvalidArgument);
  auto e = garray::zeros<double>(ctx, garray::Shape<2>{0, 3});
  CHECK_THROWS_AS(garray::argmax(e), garray::InvalidArgument);
  // min and max have no identity: NumPy raises ValueError for a zero-size selection
  CHECK_THROWS_WITH_AS(garray::min(e), doctest::Contains("has no minimum"), garray::InvalidArgument);
  CHECK_THROWS_WITH_AS(garray::max(e), doctest::Contains("has no maximum"), garray::InvalidArgument);
  CHECK_THROWS_AS(garray::min(e, garray::Axis{0}), garray::InvalidArgument);  // along the axis of length 0
  CHECK(garray::max(e, garray::Axis{1}).size() == 0);                         // an empty result is fine
  auto a = garray::arange<double>(ctx, 0, 6);
  auto b = garray::zeros<double>(ctx, garray::Shape<1>{5});
  CHECK_THROWS_AS(b = a, garray::SizeMismatch);
  CHECK_THROWS_AS(garray::mean(garray::eye<double>(ctx, 3), garray::Axis{2}), garray::InvalidArgument);
  CHECK_THROWS_AS(garray::mean(garray::eye<double>(ctx, 3), garray::Axis{-3}), garray::InvalidArgument);
  CHECK(garray::sum(b) == 0.0);
  // Scalars are arguments: ranks passing different values fail everywhere.
  if (ctx.size() > 1) {
    CHECK_THROWS_AS(garray::full<double>(ctx, garray::Shape<1>{4}, ctx.rank()), garray::CollectiveMismatch);
    CHECK_THROWS_AS(garray::var(a, ctx.rank() == 0 ? 0 : 1), garray::CollectiveMismatch);
  }
  // Moving a new array in still rebinds (move assignment untouched).
  b = garray::ones<double>(ctx, garray::Shape<1>{7});
  CHECK(b.shape()[0] == 7);
  CHECK(garray::sum(b) == 7.0);
}

TEST_CASE("var and std_dev: huge finite values give 0, ddof >= n gives inf (NumPy), never NaN or negative") {
  garray::Context ctx;
  const double inf = std::numeric_limits<double>::infinity();
  // Along an axis the squares of the elements themselves were formed once (1e200^2 = inf,
  // times 0 = NaN); the variance of equal values is 0 at any magnitude.
  auto big = garray::full<double>(ctx, garray::Shape<2>{2, 3}, 1e200);
  for (std::ptrdiff_t ax : {0, 1}) {
    CAPTURE(ax);
    auto v = garray::var(big, garray::Axis{ax});
    CHECK(garray::max(v) == 0.0);
    CHECK(garray::min(v) == 0.0);
    auto s = garray::std_dev(big, garray::Axis{ax});
    CHECK(garray::max(s) == 0.0);
  }
  auto bigc = garray::full<std::complex<double>>(ctx, garray::Shape<2>{3, 2}, std::complex<double>(1e200, -1e200));
  auto vc = garray::var(bigc, garray::Axis{1});
  CHECK(garray::max(vc) == 0.0);
  // (The full var of the same array is inf in NumPy as here: the mean 6e200 / 6 is not
  // exactly 1e200, and the deviations' squares overflow.)
  // np.var([1, 2, 3], ddof=d) for d >= 3: inf (a zero denominator), not a negative number
  auto x = garray::arange<double>(ctx, 1, 4);
  for (garray::Index ddof : {3, 4, 5}) {
    CAPTURE(ddof);
    CHECK(garray::var(x, ddof) == inf);
    CHECK(garray::std_dev(x, ddof) == inf);
  }
  garray::GlobalArray<double, 2> xx(ctx, {3, 2});  // [[1, 2], [3, 4], [5, 6]]
  garray::iota(xx, 1.0, 1.0);
  auto v1 = garray::var(xx, garray::Axis{0}, 5);  // the axis version agrees
  CHECK(garray::min(v1) == inf);
  CHECK(std::isnan(garray::var(garray::full<double>(ctx, garray::Shape<1>{3}, 2.0), 3)));  // 0 / 0
}

TEST_CASE("integer arithmetic as NumPy: exact powers, wrapping + * and sums, a negative integer exponent throws") {
  garray::Context ctx;
  const int p = ctx.size();
  // int64 3 ** 36..39: beyond 2^53, where a power through double loses the last digits
  auto three = garray::full<std::int64_t>(ctx, garray::Shape<1>{4}, 3);
  garray::GlobalArray<std::int64_t, 1> e(ctx, {4});
  garray::iota(e, std::int64_t{36}, std::int64_t{1});
  auto r = garray::eval(garray::pow(three, e));
  std::vector<std::int64_t> got(4);
  r.get(garray::idx[garray::range()], std::span<std::int64_t>(got));
  CHECK(got == std::vector<std::int64_t>{150094635296999121, 450283905890997363, 1350851717672992089,
                                         4052555153018976267});  // np.int64(3) ** np.arange(36, 40)
  // int32 wraps modulo 2^32: np.int32(3) ** 21 == 1870418611, np.int32(2) ** 40 == 0
  auto base = garray::full<std::int32_t>(ctx, garray::Shape<1>{2}, 3);
  garray::GlobalArray<std::int32_t, 1> ex(ctx, {2});
  ex.fill(21);
  base[garray::idx[garray::range(1, 2)]].fill(2);
  ex[garray::idx[garray::range(1, 2)]].fill(40);
  auto r32 = garray::eval(garray::pow(base, ex));
  CHECK(r32.get(garray::idx[0]) == 1870418611);
  CHECK(r32.get(garray::idx[1]) == 0);
  // + and * and sums wrap: np.int64(2**62) * 2 + 2**63 - 1 and a sum past INT64_MAX
  const std::int64_t big = std::int64_t{1} << 62;
  auto b = garray::full<std::int64_t>(ctx, garray::Shape<1>{3}, big);
  auto w = garray::eval(b * std::int64_t{2} + b);
  CHECK(w.get(garray::idx[2]) == -big);  // 3 * 2^62 mod 2^64, as a signed value
  CHECK(garray::sum(b) == -big);         // 3 * 2^62 again, through the reduction
  // unary minus and abs wrap too (never signed overflow): -np.int32(-2**31) and
  // np.abs(np.int64(-2**63)) are the minimum again
  auto m32 = garray::full<std::int32_t>(ctx, garray::Shape<1>{2}, std::numeric_limits<std::int32_t>::min());
  auto m64 = garray::full<std::int64_t>(ctx, garray::Shape<1>{2}, std::numeric_limits<std::int64_t>::min());
  CHECK(garray::eval(-m32).get(garray::idx[1]) == std::numeric_limits<std::int32_t>::min());
  CHECK(garray::eval(garray::abs(m32)).get(garray::idx[0]) == std::numeric_limits<std::int32_t>::min());
  CHECK(garray::eval(-m64).get(garray::idx[0]) == std::numeric_limits<std::int64_t>::min());
  CHECK(garray::eval(garray::abs(m64)).get(garray::idx[1]) == std::numeric_limits<std::int64_t>::min());
  CHECK(garray::eval(garray::abs(-b)).get(garray::idx[0]) == big);
  // A negative integer exponent: the rank owning it throws InvalidArgument, the others
  // CollectiveFailure with its message (NumPy: ValueError).
  garray::GlobalArray<std::int32_t, 1> neg(ctx, {static_cast<garray::Index>(2 * p)});
  neg.fill(2);
  neg[garray::idx[garray::range(2 * p - 1, 2 * p)]].fill(-1);  // the last element, on the last rank
  const std::vector<std::pair<const char*, std::function<void()>>> uses = {
      {"eval", [&] { (void)garray::eval(garray::pow(neg, neg)); }},
      {"sum", [&] { (void)garray::sum(garray::pow(neg, neg)); }},
      {"where", [&] { (void)garray::eval(garray::where(neg > 0, neg, garray::pow(neg, neg))); }},
  };
  for (const auto& [name, use] : uses) {
    INFO("name := " << std::string(name));
    std::string msg;
    const test::Got g = test::outcome(use, &msg);
    CAPTURE(msg);
    CHECK(test::contains(msg, "negative integer power"));
    if (ctx.rank() == p - 1) CHECK(g == test::Got::invalid);
    else CHECK(g == test::Got::failure);
  }
  CHECK(garray::sum(neg) == 2 * (2 * p - 1) - 1);  // neg is unchanged, the context works
}

TEST_CASE("cumsum keeps the sign of zero at any distribution; arange rejects NaN and infinite arguments") {
  garray::Context ctx;
  const int p = ctx.size();
  // np.cumsum([-0.0, -0.0]) is [-0.0, -0.0]: also when empty blocks precede the data
  std::vector<garray::Index> starts(static_cast<std::size_t>(p), 0);  // every element on the last rank
  garray::GlobalArray<double, 1> z(ctx, {2}, garray::Distribution<1>::irregular({starts}));
  garray::GlobalArray<double, 1> zb(ctx, {static_cast<garray::Index>(2 * p)});
  for (auto* a : {&z, &zb}) {
    a->fill(-0.0);
    auto c = garray::cumsum(*a, garray::Axis{0});
    std::vector<double> got(static_cast<std::size_t>(a->size()));
    c.get(garray::idx[garray::range()], std::span<double>(got));
    bool negative = true;
    for (double v : got) negative = negative && v == 0.0 && std::signbit(v);
    CHECK(negative);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(garray::arange<double>(ctx, 0.0, nan), doctest::Contains("NaN, infinite"),
                       garray::InvalidArgument);
  CHECK_THROWS_AS(garray::arange<double>(ctx, 0.0, inf), garray::InvalidArgument);
  CHECK_THROWS_AS(garray::arange<double>(ctx, 0.0, 1.0, nan), garray::InvalidArgument);
  CHECK_THROWS_AS(garray::arange<double>(ctx, 0.0, -inf, 1.0), garray::InvalidArgument);
}

// semantics.md: *_like and astype keep the model's distribution; a = b never rebinds (docs audit).
namespace like_astype {
namespace {
using garray::Index;
using D2 = garray::Distribution<2>;
MPI_Win win_of(const garray::GlobalArray<double, 2>& a) {
  return garray::detail::ArrayAccess::window(a).win();
}
}  // namespace

TEST_CASE("*_like and astype keep the model's distribution; a = b copies elements and never rebinds") {
  garray::Context ctx;
  const int p = ctx.size();
  const garray::Shape<2> sh{7, 2 * p + 1};
  std::vector<D2> dists{D2::slab(1), D2::replicated()};
  if (p >= 2) dists.push_back(D2::irregular({std::vector<Index>{0, 3}, std::vector<Index>{0}}));  // 2 blocks
  for (const D2& dist : dists) {
    INFO("distribution " << dist.describe());
    garray::GlobalArray<double, 2> x(ctx, sh, dist);
    garray::iota(x, 1.0, 0.5);
    const auto sig = x.distribution().signature();
    CHECK(garray::ones_like(x).distribution().signature() == sig);
    CHECK(garray::full_like(x, 3.0).distribution().signature() == sig);
    CHECK(garray::empty_like(x).distribution().signature() == sig);
    auto zf = garray::zeros_like<float>(x);  // the user guide's "zeros_like<float>(a) for another type"
    static_assert(std::is_same_v<decltype(zf), garray::GlobalArray<float, 2>>);
    CHECK(zf.distribution().signature() == sig);
    CHECK(garray::sum(zf) == 0.0f);
    auto xf = x.astype<float>();
    CHECK(xf.distribution().signature() == sig);
    auto xi = garray::astype<std::int32_t>(x * 0.7 - 3.0);  // the free form over an expression
    CHECK(xi.distribution().signature() == sig);
    // fractional values of both signs: NumPy's astype truncates toward zero (not rounding,
    // not flooring), computed here without the library
    std::int64_t want = 0;
    for (Index k = 0; k < sh[0] * sh[1]; ++k)
      want += static_cast<std::int32_t>((1.0 + 0.5 * static_cast<double>(k)) * 0.7 - 3.0);
    CHECK(garray::sum(xi) == want);
  }
  // a = b (lvalue, same shape, another distribution): elements copied, a keeps its own window
  // and distribution, and later writes to b do not show in a.
  garray::GlobalArray<double, 2> a(ctx, sh, D2::slab(0)), b(ctx, sh, D2::slab(1));
  garray::iota(b, 10.0, 1.0);
  const MPI_Win aw = win_of(a);
  const auto asig = a.distribution().signature();
  const auto before = ctx.stats().windows_allocated;
  a = b;
  CHECK(win_of(a) == aw);
  CHECK(a.distribution().signature() == asig);
  CHECK(test::all_ranks(test::whole_array(a) == test::whole_array(b)));
  b.fill(-1.0);
  CHECK(garray::min(a) == 10.0);  // no aliasing: a holds its copy
  garray::GlobalArray<double, 2> c(ctx, sh, D2::slab(1));
  c = a;  // a view assignment too (a.view() = ...), never a rebind
  CHECK(c.distribution().signature() == b.distribution().signature());
  CHECK(ctx.stats().windows_allocated - before <= 1);  // only c's window (or a cache hit)
}
}  // namespace like_astype

namespace numpy_audit {
template <class T>
void load_all(garray::GlobalArray<T, 1>& a, const std::vector<T>& v) {
  if (a.context().rank() == 0) a.put(garray::idx[garray::range()], std::span<const T>(v));
  a.sync();
}
}  // namespace numpy_audit

// Complex powers as NumPy (audit): pow(z, k) went through std::pow(complex, complex)
// (exp(k log z)): 0 ** 0 was NaN and 2 ** 3 was 7.999999999999998. NumPy multiplies for
// small integer exponents. Values from NumPy 1.24: z = [0, 2, 1j, 3+4j].
TEST_CASE(
    "pow of complex arrays as NumPy: z ** 0 is 1 (0 ** 0 too), small integer powers exact, 0 ** -1 NaN") {
  using c128 = std::complex<double>;
  using c64 = std::complex<float>;
  garray::Context ctx;
  garray::GlobalArray<c128, 1> z(ctx, {4}, test::last_rank_owns_nothing(4, ctx.size()));
  numpy_audit::load_all(z, {c128(0, 0), c128(2, 0), c128(0, 1), c128(3, 4)});
  CHECK(test::whole_array(garray::eval(garray::pow(z, 0))) == std::vector<c128>(4, c128(1, 0)));
  CHECK(test::whole_array(garray::eval(garray::pow(z, 2))) ==
        std::vector<c128>{c128(0, 0), c128(4, 0), c128(-1, 0), c128(-7, 24)});
  CHECK(test::whole_array(garray::eval(garray::pow(z, 3))) ==
        std::vector<c128>{c128(0, 0), c128(8, 0), c128(0, -1), c128(-117, 44)});
  CHECK(test::whole_array(garray::eval(garray::pow(z, c128(2, 0)))) ==
        std::vector<c128>{c128(0, 0), c128(4, 0), c128(-1, 0), c128(-7, 24)});
  const auto inv = test::whole_array(garray::eval(garray::pow(z, -1)));  // [nan, 0.5, -1j, 0.12-0.16j]
  CHECK(std::isnan(inv[0].real()));
  CHECK(inv[1] == c128(0.5, 0));
  CHECK(inv[2] == c128(0, -1));
  CHECK(std::abs(inv[3] - c128(0.12, -0.16)) < 1e-15);
  // a non-integer exponent: exp(b log a), as NumPy (1.5+0.5j) ** 2.5 = 2.18026577+2.26463217j
  garray::GlobalArray<c128, 1> w(ctx, {1});
  numpy_audit::load_all(w, {c128(1.5, 0.5)});
  CHECK(std::abs(test::whole_array(garray::eval(garray::pow(w, 2.5)))[0] - c128(2.18026577, 2.26463217)) <
        1e-8);
  // complex<float> as NumPy's complex64: (1+2j) ** 5 = 41-38j exactly
  garray::GlobalArray<c64, 1> f(ctx, {1});
  numpy_audit::load_all(f, {c64(1, 2)});
  CHECK(test::whole_array(garray::eval(garray::pow(f, 5))) == std::vector<c64>{c64(41, -38)});
}

// user-guide "Coming from NumPy": NaN and out-of-range values to an integer type become the
// type's minimum "in astype, cast<U> and every assignment". full, fill, put of a scalar and
// linspace<int> used a plain static_cast (undefined behaviour; GCC may fold it to 0 or INT_MAX).
TEST_CASE(
    "full, fill, put and linspace of NaN / out-of-range doubles into int32 give INT32_MIN, as assignment "
    "does") {
  garray::Context ctx;
  constexpr std::int32_t mn = std::numeric_limits<std::int32_t>::min();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::int32_t> want(3, mn);
  CHECK(test::whole_array(garray::full<std::int32_t>(ctx, garray::Shape<1>{3}, nan)) == want);
  CHECK(test::whole_array(garray::full<std::int32_t>(ctx, garray::Shape<1>{3}, 3e9)) == want);
  garray::GlobalArray<std::int32_t, 1> a(ctx, {3}), b(ctx, {3});
  a = nan;
  garray::fill(b, nan);
  CHECK(test::whole_array(a) == want);
  CHECK(test::whole_array(b) == want);
  garray::fill(b, 1e10);
  CHECK(test::whole_array(b) == want);
  garray::fill(b, 7);
  garray::GlobalArray<std::int64_t, 1> where(ctx, {2});
  numpy_audit::load_all(where, {0, 2});
  garray::put(b, where, -std::numeric_limits<double>::infinity());  // (NumPy raises OverflowError here)
  CHECK(test::whole_array(b) == std::vector<std::int32_t>{mn, 7, mn});
  CHECK(test::whole_array(garray::linspace<std::int32_t>(ctx, 0.0, nan, 2)) ==
        std::vector<std::int32_t>{mn, mn});  // NumPy too
}

// semantics.md, cumsum/cumprod: "the sign of a zero never depends on the distribution" and
// NumPy's bits when one block holds the axis. Empty blocks before the data along the axis
// entered the fix-up as the identity 1 + 0i, which IEEE complex multiplication does not
// keep: (1, 0) * (-0, -1) is (+0, -1), (1, 0) * (inf, 1) is (inf, NaN). They are left out now.
TEST_CASE("complex cumprod: empty blocks before the data change no bit (1+0i is not an exact identity)") {
  garray::Context ctx;
  const int p = ctx.size();
  using C = std::complex<double>;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<garray::Index> starts(static_cast<std::size_t>(p), 0);  // the only row on the last grid row
  garray::GlobalArray<C, 2> x(ctx, {1, 3},
                              garray::Distribution<2>::irregular({starts, std::vector<garray::Index>{0}}));
  const std::vector<C> v{C(2.0, -0.0), C(-0.0, -1.0), C(inf, 1.0)};
  if (ctx.rank() == 0) x.put_section(garray::Section<2>::full(x.shape()), std::span<const C>(v));
  x.sync();
  auto c = garray::cumprod(x, garray::Axis{0});  // np.cumprod(x, axis=0) == x bitwise
  std::vector<C> got(3);
  c.get_section(garray::Section<2>::full(c.shape()), std::span<C>(got));
  bool same = true;
  for (std::size_t i = 0; i < 3; ++i) {
    const bool bits = std::memcmp(&got[i], &v[i], sizeof(C)) == 0;
    INFO("element " << i << ": got (" << got[i].real() << ", " << got[i].imag() << ")");
    CHECK(bits);  // before: (2, +0), (+0, -1), (inf, nan)
    same = same && bits;
  }
  CHECK(test::all_ranks(same));
}

// docs/user-guide.md "Porting NumPy": an integer scalar that the integer type an operation
// computes in cannot hold is an error (NumPy 2 raises OverflowError: "Python integer
// 3000000000 out of bounds for int32"); C++'s conversion would wrap it silently. Comparisons
// with such a scalar are exact (NumPy 2 too), true division converts it to double. The check
// runs inside the call's handshake: every rank throws, nothing is written, also when only one
// rank's scalar is out of range (a mismatch there).
TEST_CASE("an integer scalar out of the operation's integer type throws; comparisons with it are exact") {
  garray::Context ctx;
  const int me = ctx.rank();
  const Index n = 7;
  garray::GlobalArray<std::int32_t, 1> a(ctx, {n}), out(ctx, {n});
  garray::iota(a, std::int32_t{-3}, std::int32_t{1});  // -3..3
  out.fill(11);
  const long big = 3000000000L, limit = std::numeric_limits<std::int32_t>::max();
  const auto unchanged = [&] { return garray::sum(out) == 11 * n; };
  std::string m;
  // each names the scalar and the type (pow would throw for the wrapped, negative exponent
  // too: the message tells the two apart)
  const auto refused = [&](const char* what, const char* part, auto&& f) {
    INFO("what := " << std::string(what));
    CHECK(test::outcome(f, &m) == test::Got::invalid);
    CHECK(test::contains(m, part));
  };
  const char* msg2 = "scalar operand 2 (3000000000) is out of range for int32";
  refused("a + big", msg2, [&] { out = a + big; });
  CHECK(unchanged());
  refused("big * a", "scalar operand 1 (3000000000) is out of range for int32", [&] { out = big * a; });
  refused("pow", msg2, [&] { out = garray::pow(a, big); });
  refused("max", msg2, [&] { out = garray::max(a, big); });
  refused("where", "scalar operand 4 (3000000000) is out of range for int32",
          [&] { out = garray::where(a > 0, a, big); });
  refused("+=", msg2, [&] { out += big; });
  refused("view -=", msg2, [&] { out[garray::idx[garray::range(1, 3)]] -= big; });
  refused("sum", msg2, [&] { (void)garray::sum(a - big); });
  refused("eval", msg2, [&] { (void)garray::eval(a + big); });
  refused("nested", "scalar operand 3 (-3000000000) is out of range for int32",
          [&] { out = (a + 1) * -big; });
  // an unsigned 64-bit scalar beyond int64 against an int64 array
  garray::GlobalArray<std::int64_t, 1> a64(ctx, {n});
  a64.fill(1);
  CHECK(test::outcome([&] { (void)garray::sum(a64 + std::numeric_limits<std::uint64_t>::max()); }, &m) ==
        test::Got::invalid);
  CHECK(test::contains(m, "out of range for int64"));
  CHECK(unchanged());
  // a char scalar is an integer too (it fits)
  out = a + 'a';
  CHECK(out.get(garray::idx[0]) == 'a' - 3);
  // in range: the edge of int32, and any int64 scalar with an int64 array
  out = a + (limit - 3);  // -3 + limit - 3 .. limit: no wrap
  CHECK(out.get(garray::idx[n - 1]) == limit);
  CHECK(garray::sum(a64 + big) == n * (big + 1));
  // comparisons are exact, true division converts to double
  const auto count = [](const auto& cond) { return garray::sum(garray::cast<std::int64_t>(cond)); };
  CHECK(count(a < big) == n);  // NumPy 1.24 and 2: all True (a wrapped scalar: all False)
  CHECK(count(a > -big) == n);
  CHECK(count(a == big) == 0);
  CHECK(count(a != -big) == n);
  CHECK(count(big > a) == n);
  CHECK(count(a >= 2) == 2);  // in range: as before
  CHECK(count(a == 'a') == 0);  // a char scalar compares by value too
  // unsigned 64-bit values compare by value, also above INT64_MAX: -3..3 as uint64 is
  // 2^64-3, 2^64-2, 2^64-1, 0, 1, 2, 3
  const auto u64max = std::numeric_limits<std::uint64_t>::max();
  CHECK(count(garray::cast<std::uint64_t>(a) > 5) == 3);
  CHECK(count(garray::cast<std::uint64_t>(a) == u64max) == 1);
  CHECK(count(a < u64max) == n);
  auto q = garray::eval(a / big);  // true division: the scalar as a double
  CHECK(q.get(garray::idx[n - 1]) == 3.0 / 3000000000.0);
  // out of range on one rank only: a mismatch, every rank throws, nothing written
  if (ctx.size() > 1) {
    out.fill(11);
    const long mine = me == 0 ? big : 5;
    const test::Got g = test::outcome([&] { out = a + mine; }, &m);
    CHECK(test::all_ranks(g == (me == 0 ? test::Got::invalid : test::Got::mismatch)));
    CHECK(unchanged());
  }
}

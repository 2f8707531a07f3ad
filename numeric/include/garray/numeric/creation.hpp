#pragma once
// Array creation as in NumPy: zeros, ones, full, empty, *_like, arange, linspace, eye, astype.
//
//   auto a = garray::zeros<double>(ctx, {4, 5});            // np.zeros((4, 5))
//   auto b = garray::full<int>(ctx, {3}, 7);                // np.full(3, 7)
//   auto c = garray::empty<float>(ctx, {8, 8});             // np.empty: unspecified contents
//   auto d = garray::zeros_like(a);  ones_like  full_like(a, v)  empty_like
//   auto r = garray::arange<std::int64_t>(ctx, 0, 10, 3);   // np.arange(0, 10, 3)
//   auto l = garray::linspace<double>(ctx, 0.0, 1.0, 11);   // np.linspace(0, 1, 11)
//   auto e = garray::eye<double>(ctx, 3, 4, 1);             // np.eye(3, 4, k=1)
//   auto f = garray::astype<float>(a);  a.astype<float>()   // a.astype(np.float32)
//
// Every function is **Collective over ctx** (or the model array's context): it creates a
// GlobalArray (the create handshake compares shape, distribution and element type), then
// fills it with one collective (GlobalArray::fill, which handshakes the value, or an
// owner-computes generate whose salt carries every scalar argument), so ranks that pass
// different scalars throw CollectiveMismatch on every rank. A bad argument (arange with
// step 0, negative counts) throws InvalidArgument on every rank before anything is created.
// The distribution defaults to blocked; *_like copy the model's distribution.
// Values: arange and linspace compute every element as NumPy does (arange: start, start +
// step, then start + i * delta with delta = (start + step) - start in the element type; linspace: i * step + start
// with step = (stop - start) / div in double, the last element exactly `stop`, floored for
// integer types), so the results are bitwise equal to NumPy's for the same element type.

#include <cmath>
#include <concepts>
#include <cstdint>
#include <garray/numeric/elementwise.hpp>
#include <garray/numeric/expr.hpp>
#include <type_traits>

namespace garray {

namespace detail {
/// The handshake of a creation whose arguments are checked before the array's own (the
/// values themselves are then compared by that handshake and the fill): where `bad` holds,
/// InvalidArgument; on the other ranks CollectiveMismatch with its message. A handshake like
/// every collective's first step, so another collective on some rank meets it as a mismatch.
template <class... Args>
void check_creation(const Context& ctx, bool bad, std::string_view what, const Args&... msg) {
  ctx.check_valid(what);
  const std::exception_ptr err = bad ? std::make_exception_ptr(InvalidArgument(message(what, msg...))) : nullptr;
  agree_signature(ctx.comm(), hash_string(what), what, what, err);
}
}  // namespace detail

/// np.zeros(shape, dtype=T). **Collective over ctx**, as the GlobalArray constructor: returns
/// a new array whose elements are zero and visible to every rank.
template <Element T, std::size_t N>
GlobalArray<T, N> zeros(const Context& ctx, const Shape<N>& shape, const Distribution<N>& dist = Distribution<N>::blocked()) {
  return GlobalArray<T, N>(ctx, shape, dist);
}
/// np.empty(shape, dtype=T): unspecified contents (garray::uninitialized). **Collective over
/// ctx**, as the GlobalArray constructor: returns the new array.
template <Element T, std::size_t N>
GlobalArray<T, N> empty(const Context& ctx, const Shape<N>& shape, const Distribution<N>& dist = Distribution<N>::blocked()) {
  return GlobalArray<T, N>(ctx, shape, dist, Shape<N>{}, uninitialized);
}
/// np.full(shape, value, dtype=T). **Collective over ctx** (the value is handshaked by the
/// fill): returns a new array whose elements are T(value) and visible to every rank.
template <Element T, std::size_t N, ScalarOperand S>
GlobalArray<T, N> full(const Context& ctx, const Shape<N>& shape, const S& value,
                       const Distribution<N>& dist = Distribution<N>::blocked()) {
  GlobalArray<T, N> a(ctx, shape, dist, Shape<N>{}, uninitialized);
  a.fill(detail::store_cast<T>(value));  // NaN / out of range to an integer: T's minimum, as NumPy
  return a;
}
/// np.ones(shape, dtype=T). **Collective over ctx**, as full().
template <Element T, std::size_t N>
GlobalArray<T, N> ones(const Context& ctx, const Shape<N>& shape, const Distribution<N>& dist = Distribution<N>::blocked()) {
  return full<T>(ctx, shape, T{1}, dist);
}

namespace detail {
template <class T, std::size_t N>
Distribution<N> like_distribution(GlobalArray<T, N>& a) {
  const auto v = a.view();
  join_if_stale("garray::*_like", v);  // a moved from on this rank only: every rank throws
  return derived_distribution(v);
}
}  // namespace detail

/// np.zeros_like(a) (element type U, default a's): a's context, shape and distribution.
/// **Collective over a's context**, as zeros(). (An irregular distribution is copied as its
/// block starts.)
template <class U = void, class T, std::size_t N>
auto zeros_like(const GlobalArray<T, N>& a) {
  using R = std::conditional_t<std::is_void_v<U>, T, U>;
  auto& m = const_cast<GlobalArray<T, N>&>(a);
  return zeros<R>(m.context(), m.shape(), detail::like_distribution(m));
}
/// np.empty_like(a) (element type U, default a's): a's context, shape and distribution,
/// unspecified contents. **Collective over a's context**, as empty().
template <class U = void, class T, std::size_t N>
auto empty_like(const GlobalArray<T, N>& a) {
  using R = std::conditional_t<std::is_void_v<U>, T, U>;
  auto& m = const_cast<GlobalArray<T, N>&>(a);
  return empty<R>(m.context(), m.shape(), detail::like_distribution(m));
}
/// np.full_like(a, value) (element type U, default a's): a's context, shape and
/// distribution, every element `value`. **Collective over a's context**, as full().
template <class U = void, class T, std::size_t N, ScalarOperand S>
auto full_like(const GlobalArray<T, N>& a, const S& value) {
  using R = std::conditional_t<std::is_void_v<U>, T, U>;
  auto& m = const_cast<GlobalArray<T, N>&>(a);
  return full<R>(m.context(), m.shape(), value, detail::like_distribution(m));
}
/// np.ones_like(a) (element type U, default a's): a's context, shape and distribution,
/// every element 1. **Collective over a's context**, as full().
template <class U = void, class T, std::size_t N>
auto ones_like(const GlobalArray<T, N>& a) {
  using R = std::conditional_t<std::is_void_v<U>, T, U>;
  return full_like<R>(a, R{1});
}

namespace detail {
/// ceil((stop - start) / step), 0 when negative, for integer arguments and step != 0:
/// exact (NumPy subtracts its Python integers exactly; through double, arange(2^53, 2^53 + 3)
/// would have 4 elements).
template <std::integral S>
constexpr std::uint64_t arange_count(S start, S stop, S step) noexcept {
  using U = std::uint64_t;
  bool up = true;
  U s = static_cast<U>(step);
  if constexpr (std::is_signed_v<S>) {
    up = step > 0;
    if (!up) s = U{0} - static_cast<U>(step);  // |step|, also for the minimum
  }
  if (up ? !(stop > start) : !(stop < start)) return 0;
  // the difference modulo 2^64 is exact: it lies in (0, 2^64)
  const U d =
      up ? static_cast<U>(stop) - static_cast<U>(start) : static_cast<U>(start) - static_cast<U>(stop);
  return d / s + (d % s != 0 ? 1 : 0);
}
}  // namespace detail

/// np.arange(start, stop, step, dtype=T): a 1-d array of ceil((stop - start) / step)
/// elements (0 when that is negative): T(start), T(start + step), then element i = T(start)
/// + i * delta with delta = T(start + step) - T(start) (NumPy's fill rule), blocked. Throws
/// InvalidArgument for step 0 on every rank. **Collective over ctx**: returns the new array,
/// complete and visible to every rank.
template <Element T, class S>
GlobalArray<T, 1> arange(const Context& ctx, S start, S stop, S step = S{1}) {
  Index n = 0;
  bool bad_len = false;
  if constexpr (std::is_integral_v<S>) {
    const std::uint64_t len = step == S{0} ? 0 : detail::arange_count(start, stop, step);
    bad_len = len > (std::uint64_t{1} << 62);
    n = bad_len ? 0 : static_cast<Index>(len);
  } else {
    const double len =
        step == S{0}
            ? 0.0
            : std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
    // NaN or infinite arguments (or a length beyond any index): NumPy raises too
    bad_len = !(std::abs(len) <= 0x1p62);
    n = !bad_len && len > 0 ? static_cast<Index>(len) : 0;
  }
  detail::check_creation(ctx, step == S{0} || bad_len, "garray::arange",
                         step == S{0} ? ": step 0"
                                      : ": the length ceil((stop - start) / step) is NaN, infinite or beyond "
                                        "2^62 (start, stop and step must be finite)",
                         " (start ", start, ", stop ", stop, ", step ", step, ")");
  GlobalArray<T, 1> a(ctx, Shape<1>{n}, Distribution<1>::blocked(), Shape<1>{}, uninitialized);
  const T t0 = static_cast<T>(start);
  const T t1 = n >= 2 ? static_cast<T>(start + step) : t0;  // start + step < stop when n >= 2: no overflow
  const T delta = static_cast<T>(t1 - t0);
  const std::uint64_t salt =
      detail::value_hash(detail::value_hash(detail::value_hash(detail::hash_string("arange"), start), stop), step);
  detail::generate_salted(a, [t0, t1, delta](const Shape<1>& i) {
    if (i[0] == 0) return t0;
    if (i[0] == 1) return t1;  // NumPy stores start + step itself, then fills from 2 on
    return static_cast<T>(t0 + static_cast<T>(i[0]) * delta);
  }, salt);
  return a;
}
/// np.arange(stop, dtype=T): arange(ctx, 0, stop, 1). **Collective over ctx**, as above.
template <Element T, class S>
GlobalArray<T, 1> arange(const Context& ctx, S stop) {
  return arange<T>(ctx, S{0}, stop, S{1});
}

/// np.linspace(start, stop, num, endpoint, dtype=T): element i = i * step + start (double),
/// step = (stop - start) / (endpoint ? num - 1 : num), the last one exactly `stop` when
/// endpoint; floored for integer T (NumPy >= 1.20); blocked. Throws InvalidArgument for
/// num < 0 on every rank. **Collective over ctx**: returns the new array, complete and
/// visible to every rank.
template <Element T = double>
GlobalArray<T, 1> linspace(const Context& ctx, double start, double stop, Index num, bool endpoint = true) {
  detail::check_creation(ctx, num < 0, "garray::linspace", ": negative number of samples ", num);
  GlobalArray<T, 1> a(ctx, Shape<1>{num}, Distribution<1>::blocked(), Shape<1>{}, uninitialized);
  const double div = endpoint ? static_cast<double>(num - 1) : static_cast<double>(num);
  const double delta = stop - start;
  const double step = div > 0 ? delta / div : std::nan("");
  const bool step_zero = step == 0;
  const std::uint64_t salt = detail::value_hash(
      detail::value_hash(detail::value_hash(detail::value_hash(detail::hash_string("linspace"), start), stop), num),
      endpoint);
  detail::generate_salted(a, [=](const Shape<1>& i) {
    double y;
    if (endpoint && num > 1 && i[0] == num - 1) y = stop;
    else if (div > 0) y = (step_zero ? static_cast<double>(i[0]) / div * delta : static_cast<double>(i[0]) * step) + start;
    else y = static_cast<double>(i[0]) * delta + start;  // num == 1 (or div == 0): start
    if constexpr (std::is_integral_v<T>) y = std::floor(y);
    return detail::store_cast<T>(y);
  }, salt);
  return a;
}

/// np.eye(n, m, k, dtype=T): ones on the k-th diagonal (element (i, j) is 1 where j - i ==
/// k; m = -1 means m = n), distributed as `dist`. Throws InvalidArgument for negative n or
/// m on every rank. **Collective over ctx**: returns the new array, complete and visible to
/// every rank.
template <Element T = double>
GlobalArray<T, 2> eye(const Context& ctx, Index n, Index m = -1, Index k = 0,
                      const Distribution<2>& dist = Distribution<2>::blocked()) {
  if (m == -1) m = n;
  detail::check_creation(ctx, n < 0 || m < 0, "garray::eye", ": negative extent ", n, " x ", m);
  GlobalArray<T, 2> a(ctx, Shape<2>{n, m}, dist, Shape<2>{}, uninitialized);
  const std::uint64_t salt = detail::value_hash(detail::hash_string("eye"), k);
  detail::generate_salted(a, [k](const Shape<2>& i) { return i[1] - i[0] == k ? T{1} : T{0}; }, salt);
  return a;
}

/// a.astype(U): a new array of element type U with a's distribution (element conversion as
/// static_cast; complex -> real keeps the real part, as NumPy). **Collective over x's
/// context**, as eval: returns the new array, complete and visible to every rank.
template <Element U, ArrayOperand X>
auto astype(const X& x) {
  return eval<U>(cast<U>(x));
}

}  // namespace garray

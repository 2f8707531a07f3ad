#pragma once
// Lazy elementwise expressions over views, scalars and local (replicated) arrays.
//
// ---- API summary (numeric layer; everything is in namespace garray) ---------------------
//
//   #include <garray/garray.hpp>            // or <garray/numeric/elementwise.hpp> etc.
//
// Operands of an expression: a View<T,N,M> (`u[idx[...]]`, `u.view()`), a GlobalArray<T,N>
// (taken as its whole view, by reference), an arithmetic scalar, `garray::local(m)` for a
// boost::multi_array / multi_array_ref replicated on every rank, and other expressions.
// Building an expression moves no data and is Local; it holds views (pointers to arrays),
// so it must not outlive its arrays.
//
//   a + b, a - b, a * b, a / b, -a                      arithmetic (NumPy's type promotion:
//                                                         int32 + float32 -> double, int +
//                                                         complex<float> -> complex<double>,
//                                                         scalars weak: float array * 2.0 ->
//                                                         float; int / int -> double)
//   abs sqrt exp log sin cos (a)      pow min max (a, b)    elementwise functions
//   a < b, <=, >, >=, ==, !=                              comparisons -> bool expression
//   where(cond, a, b)                                     cond ? a : b per element
//   cast<U>(a)                                            element conversion
//
// Broadcasting (NumPy's rules): operand shapes are aligned at their last dimension; a
// missing leading dimension or an extent 1 stretches to the other operands' extent
// (`a2d + row1d`, `a(m,1) * b(1,n)`); an output takes any expression that broadcasts to its
// shape. A broadcast operand is read, or fetched, once per rank and piece, never per element.
//
// Evaluation (all Collective over the arrays' context, owner-computes, one fused pass;
// misuse throws on every rank before any data moves):
//   view = expr;  view += expr;  -= *= /=                 write into a view (numpy semantics
//                                                         when the view overlaps an input)
//   assign(view, expr)                                    same as view = expr
//   auto t = eval(expr)            -> GlobalArray<V, M>   new array (distribution of the first
//   auto t = eval(expr, dist)                             array operand, or `dist`)
//   eval<double>(expr)                                    ... with a chosen element type
//   add(a, b, out)  subtract  multiply  divide  minimum  maximum  power
//   negative(a, out) absolute(a, out) sqrt(a, out) exp(a, out) log(a, out) sin cos
//                                                         numpy's ufuncs with an explicit output
//   add(a, b) ...                  -> GlobalArray         eager: one new array per call
//
// Reductions (Collective; the same value on every rank, deterministic for a given rank
// count and distribution: local partials combined in rank order):
//   sum prod min max (expr)  dot(a, b)  norm2(expr)  any_of all_of (expr)  count_nonzero(expr)
//   (`all` is the slicing placeholder, hence any_of/all_of; `any` works too)
//   sum(expr, Axis{k}) prod min max (expr, Axis{k})  -> GlobalArray<V, M-1>
//
// Fused assignment + reduction (one sweep: writes the view, returns a reduction of the
// change new - old, identical on every rank):
//   double d = assign_norm2_change(u[inner], expr);     // sqrt(sum((new-old)^2))
//   double m = assign_max_abs_change(u[inner], expr);   // max |new-old|
//   auto r = assign_reduce(view, expr, reducer, [](new_v, old_v) { return ...; });
//            reducer: garray::sum_reducer / max_reducer / min_reducer
//
// Collective basic ops on views (or whole arrays):
//   fill(array or view, value)   iota(view, start = 0, step = 1)   (value = start + step *
//   the element's row-major position in the view)   generate(view, f(Shape<M> view index))
//   dst = src  (or copy(dst, src) from array/copy.hpp)   scale(view, alpha)
//   axpy(alpha, x, y)  (y = y + alpha * x)
//   fill_random(view, seed, lo = 0, hi = 1)   uniform in [lo, hi); depends only on seed and
//                                             the element's position, not the rank count
// Local kernel helper:
//   for_each_local(view, f)   f(T& x) or f(T& x, const Shape<M>& view_index) on every element
//                             this rank owns (Local; other ranks see writes after a sync()).
//
// Errors: SizeMismatch (shapes do not broadcast), InvalidArgument (arrays of different contexts, bad
// axis), CollectiveMismatch (ranks passed different arguments); thrown on every rank, nothing
// written.
// -----------------------------------------------------------------------------------------
//
// How evaluation works (numeric/include/garray/numeric/detail/engine.hpp): an expression is
// a tree of small value types. Evaluating it binds every view leaf to a raw pointer plus
// strides (the rank's own block in place, or a buffer filled by one get per owner), then
// runs one loop per contiguous run with the whole tree inlined (`at<Unit>(i)`), so the hot
// loop is the same as a hand-written one over plain arrays.

#include <garray/array/global_array.hpp>
#include <garray/array/view.hpp>

#include <boost/multi_array.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace garray {

namespace detail {

/// Base of every expression node (a tag: nodes are plain values, no virtual calls).
struct ExprTag {};

/// Expression rank of a scalar: it broadcasts to any shape.
inline constexpr int scalar_rank = -1;

template <class X>
struct is_complex : std::false_type {};
template <class X>
struct is_complex<std::complex<X>> : std::true_type {};

/// x, rounded to double where it stands: the compiler may not fuse the operation that made
/// x with the one that uses it (GCC contracts `a * b + c` into one fused multiply-add,
/// rounded once, whenever the target has FMA: -march=native, aarch64). An empty asm that
/// claims to change x in its register; no instruction is emitted.
[[gnu::always_inline]] inline double rounded(double x) noexcept {
#if defined(__GNUC__) && (defined(__x86_64__) || (defined(__i386__) && defined(__SSE2_MATH__)))
  __asm__("" : "+x"(x));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(x));
#elif defined(__GNUC__)
  __asm__("" : "+m"(x));
#else
  volatile double v = x;
  x = v;
#endif
  return x;
}

/// |v|^2 as double (norm2 and the norm of an update): the parts widened to double first, so
/// a complex<float> square is neither rounded nor overflowed in float (as for real float).
/// `exact_terms`: complex re*re + im*im with each square rounded, never one fused
/// multiply-add (the reproducible forms promise these terms, Python's, on every build); the
/// plain forms let the compiler fuse and vectorise.
template <bool exact_terms = false>
struct AbsSquareOf {
  template <class V>
  double operator()(const V& v) const {
    if constexpr (is_complex<V>::value) {
      const double re = static_cast<double>(v.real()), im = static_cast<double>(v.imag());
      if constexpr (exact_terms)
        return rounded(re * re) + rounded(im * im);
      else
        return re * re + im * im;  // std::norm's formula, in double
    } else {
      return static_cast<double>(v) * static_cast<double>(v);
    }
  }
};
using AbsSquare = AbsSquareOf<false>;      ///< |v|^2, plain forms
using ExactAbsSquare = AbsSquareOf<true>;  ///< |v|^2, the reproducible forms' terms

/// Where the evaluation loop is on the current row: `nd` iteration dimensions, `k` the
/// row's coordinates in them (outer dims only are used), `abs` the run's absolute
/// coordinates in the expression's index space (valid when the iteration is not collapsed),
/// `off` where the run starts within its row (a row is cut into runs of at most
/// broadcast_chunk elements when an operand is broadcast along it; else 0).
struct RowPos {
  int nd = 0;
  const Index* k = nullptr;
  const Index* abs = nullptr;
  int rank = 0;  // number of entries in abs
  Index off = 0;
};

/// Longest run evaluated at once when an operand is broadcast along the row (its per-run
/// buffer, BoundPtr::fill, holds this many elements: filled once per row, reused by the
/// row's runs). A variable so that tests can make runs short.
inline Index broadcast_chunk = 256;

/// A leaf bound to memory: element k of the iteration space is base[sum_d k[d] * str[d]].
/// An operand broadcast along the run (innermost stride 0: the same element for the whole
/// run) is bound with `fill`: seek() at the start of a row copies that element into
/// `fill[0, fill_n)` (fill_n <= broadcast_chunk) and the row's runs read from there with
/// stride 1, so `Unit` runs stay contiguous for every operand (a small copy per row instead
/// of a strided loop).
template <class T, std::size_t M>
struct BoundPtr {
  const T* base = nullptr;
  std::array<Index, (M > 0 ? M : 1)> str{};
  Index inner = 1;
  const T* p = nullptr;
  T* fill = nullptr;  // a broadcast operand's per-row buffer (null: read in place)
  Index fill_n = 0;
  void seek(const RowPos& r) noexcept {
    const T* q = base;
    for (int d = 0; d + 1 < r.nd; ++d) q += r.k[d] * str[static_cast<std::size_t>(d)];
    if (fill) {
      if (r.off == 0) std::fill_n(fill, fill_n, *q);  // later runs of the row: same element
      p = fill;
    } else {
      p = r.nd > 0 ? q + r.off * str[static_cast<std::size_t>(r.nd - 1)] : q;
    }
  }
  template <bool Unit>
  T at(Index i) const noexcept {
    if constexpr (Unit) return p[i];
    else return p[i * inner];
  }
};

template <class S>
struct BoundScalar {
  S s;
  void seek(const RowPos&) noexcept {}
  template <bool Unit>
  S at(Index) const noexcept {
    return s;
  }
};

template <class Op, class A>
struct BoundUnary {
  A a;
  void seek(const RowPos& r) noexcept { a.seek(r); }
  template <bool Unit>
  auto at(Index i) const {  // may throw (integer pow): the engine's failure rule catches it
    return Op{}(a.template at<Unit>(i));
  }
};

template <class Op, class A, class B>
struct BoundBinary {
  A a;
  B b;
  void seek(const RowPos& r) noexcept {
    a.seek(r);
    b.seek(r);
  }
  template <bool Unit>
  auto at(Index i) const {  // may throw (integer pow): the engine's failure rule catches it
    return Op{}(a.template at<Unit>(i), b.template at<Unit>(i));
  }
};

template <class C, class A, class B, class V>
struct BoundWhere {
  C c;
  A a;
  B b;
  void seek(const RowPos& r) noexcept {
    c.seek(r);
    a.seek(r);
    b.seek(r);
  }
  template <bool Unit>
  V at(Index i) const {
    return c.template at<Unit>(i) ? static_cast<V>(a.template at<Unit>(i)) : static_cast<V>(b.template at<Unit>(i));
  }
};

/// A leaf computed from the element's absolute index (generate/iota/fill_random).
template <std::size_t M, class F>
struct BoundIndex {
  F f;
  Shape<M> idx{};
  void seek(const RowPos& r) noexcept {
    for (std::size_t d = 0; d < M; ++d) idx[d] = r.abs[d];
  }
  template <bool Unit>
  auto at(Index i) const {
    if constexpr (M == 0) {
      return f(idx);
    } else {
      Shape<M> j = idx;
      j[M - 1] += i;
      return f(j);
    }
  }
};

/// op(a, b) for + - * as NumPy computes them on integers: modulo 2^bits (in the unsigned
/// type, where wrapping is defined, not signed overflow); other types unchanged.
template <class Op, class V>
constexpr V wrapping(const V& a, const V& b) {
  if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) {
    using U = std::make_unsigned_t<V>;
    return static_cast<V>(Op{}(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return static_cast<V>(Op{}(a, b));
  }
}
}  // namespace detail

/// Anything that is an expression node.
template <class E>
concept Expression = std::derived_from<std::remove_cvref_t<E>, detail::ExprTag>;

// ---- operations ----------------------------------------------------------------------------
// The elementwise operations of expression nodes (`UnaryExpr<ops::Neg, A>`, ...): stateless
// functors Add Sub Mul Div Lt Le Gt Ge Eq Ne Pow Min Max, Neg Abs Sqrt Exp Log Sin Cos,
// `Cast<U>` and `Promoted<Op, P>`; pure functions of their arguments. Users write the
// operators and functions below instead, so the API reference leaves this namespace out.
namespace detail {
/// The value stored into an element of type T (assignment, compound assignment, astype,
/// cast<T>): static_cast, except
/// - to bool: `x != 0` (NumPy's truth: 0.5 is true; a complex value is true if either part
///   is nonzero);
/// - from floating point to a signed integer type: NaN and values outside T's range
///   (undefined behaviour in C++) give T's minimum, as NumPy's cast does on x86
///   (np.array([inf, nan, 3e9]).astype(np.int32) is INT32_MIN three times);
/// - from floating point to an unsigned type: truncated toward zero when in (-1, 2^bits); NaN
///   and values outside give 0 (NumPy leaves those platform-dependent).
template <class T, class X>
constexpr T store_cast(const X& x) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    return x != X{};
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && std::is_floating_point_v<X>) {
    constexpr X lo = static_cast<X>(std::numeric_limits<T>::min());  // -2^31 or -2^63: exact
    return x >= lo && x < -lo ? static_cast<T>(x) : std::numeric_limits<T>::min();
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<X>) {
    constexpr X hi = X{2} * static_cast<X>(T{1} << (std::numeric_limits<T>::digits - 1));  // 2^bits: exact
    return x > X{-1} && x < hi ? static_cast<T>(x) : T{0};
  } else {
    return static_cast<T>(x);
  }
}
}  // namespace detail

namespace ops {
#define GARRAY_DETAIL_BINOP(Name, expr)                         \
  struct Name {                                                 \
    template <class A, class B>                                 \
    constexpr auto operator()(const A& a, const B& b) const {   \
      return expr;                                              \
    }                                                           \
  };
GARRAY_DETAIL_BINOP(Add, a + b)
GARRAY_DETAIL_BINOP(Sub, a - b)
GARRAY_DETAIL_BINOP(Mul, a * b)
GARRAY_DETAIL_BINOP(Div, a / b)
GARRAY_DETAIL_BINOP(Lt, a < b)
GARRAY_DETAIL_BINOP(Le, a <= b)
GARRAY_DETAIL_BINOP(Gt, a > b)
GARRAY_DETAIL_BINOP(Ge, a >= b)
GARRAY_DETAIL_BINOP(Eq, a == b)
GARRAY_DETAIL_BINOP(Ne, a != b)
GARRAY_DETAIL_BINOP(Pow, std::pow(a, b))
#undef GARRAY_DETAIL_BINOP
/// numpy.minimum (Larger = false) / numpy.maximum (true): NaN if either operand is NaN (a NaN
/// `a` stays because the comparison is false; a NaN `b` is returned explicitly).
template <bool Larger>
struct Extreme {
  template <class A, class B>
  constexpr auto operator()(const A& a, const B& b) const {
    using C = std::common_type_t<A, B>;
    if constexpr (std::is_floating_point_v<C>)
      if (b != b) return static_cast<C>(b);
    return (Larger ? a < b : b < a) ? static_cast<C>(b) : static_cast<C>(a);
  }
};
using Min = Extreme<false>;
using Max = Extreme<true>;
#define GARRAY_DETAIL_UNOP(Name, expr)          \
  struct Name {                                 \
    template <class A>                          \
    constexpr auto operator()(const A& a) const { \
      return expr;                              \
    }                                           \
  };
/// -a; for integers 0 - a wrapping modulo 2^bits as NumPy (-INT_MIN is INT_MIN), never
/// signed overflow.
struct Neg {
  template <class A>
  constexpr auto operator()(const A& a) const {
    if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>)
      return detail::wrapping<Sub>(A{0}, a);
    else
      return -a;
  }
};
/// |a|; for signed integers as NumPy: abs(INT_MIN) wraps to INT_MIN; of a bool the bool.
struct Abs {
  template <class A>
  constexpr auto operator()(const A& a) const {
    if constexpr (std::is_same_v<A, bool>)
      return a;
    else if constexpr (std::is_integral_v<A> && std::is_signed_v<A>)
      return a < 0 ? Neg{}(a) : a;
    else
      return std::abs(a);
  }
};
GARRAY_DETAIL_UNOP(Sqrt, std::sqrt(a))
GARRAY_DETAIL_UNOP(Exp, std::exp(a))
GARRAY_DETAIL_UNOP(Log, std::log(a))
GARRAY_DETAIL_UNOP(Sin, std::sin(a))
GARRAY_DETAIL_UNOP(Cos, std::cos(a))
#undef GARRAY_DETAIL_UNOP
/// Conversion to U as detail::store_cast; complex to real keeps the real part, complex to
/// bool is true if either part is nonzero (as NumPy).
template <class U>
struct Cast {
  /// Local. `a` converted to U (detail::store_cast).
  template <class A>
  constexpr U operator()(const A& a) const {
    if constexpr (detail::is_complex<A>::value && std::is_same_v<U, bool>)
      return a != A{};  // NumPy: true if either part is nonzero
    else if constexpr (detail::is_complex<A>::value && !detail::is_complex<U>::value)
      return detail::store_cast<U>(a.real());
    else
      return detail::store_cast<U>(a);
  }
};
}  // namespace ops

// ---- type promotion as NumPy ---------------------------------------------------------------
namespace detail {
/// NumPy's kinds: 0 bool, 1 integer, 2 floating, 3 complex (-1: another type, C++ rules).
template <class T>
constexpr int kind_of() {
  if constexpr (std::is_same_v<T, bool>) return 0;
  else if constexpr (std::is_integral_v<T>) return 1;
  else if constexpr (std::is_floating_point_v<T>) return 2;
  else if constexpr (is_complex<T>::value) return 3;
  else return -1;
}
/// np.result_type of two arrays (int32 + float32 -> float64, int + complex64 -> complex128,
/// float32 + complex64 -> complex64, ...).
template <class A, class B>
constexpr auto strong_promote() {
  constexpr int ka = kind_of<A>(), kb = kind_of<B>();
  if constexpr (std::is_same_v<A, B>) return std::type_identity<A>{};
  else if constexpr (ka < 0 || kb < 0) return std::type_identity<std::common_type_t<A, B>>{};
  else if constexpr (ka > kb) return strong_promote<B, A>();
  else if constexpr (ka == 0) return std::type_identity<B>{};
  else if constexpr (ka == 1 && kb == 1) return std::type_identity<std::common_type_t<A, B>>{};
  else if constexpr (ka == 1 && kb == 2)
    return std::type_identity<std::conditional_t<(sizeof(B) < 8 && sizeof(A) >= 4), double, B>>{};
  else if constexpr (ka == 2 && kb == 2) return std::type_identity<std::common_type_t<A, B>>{};
  else if constexpr (kb == 3 && ka < 3)
    return std::type_identity<std::complex<typename decltype(strong_promote<A, typename B::value_type>())::type>>{};
  else return std::type_identity<std::complex<std::common_type_t<typename A::value_type, typename B::value_type>>>{};
}
/// The smallest type of a scalar's kind (NumPy treats a scalar as "weak": it does not widen
/// an array of its kind or a higher one).
template <class S, class A>
using weak_type = std::conditional_t<
    kind_of<A>() == 0, std::conditional_t<kind_of<S>() == 1, std::int64_t, std::conditional_t<kind_of<S>() == 2, double, S>>,
    std::conditional_t<kind_of<S>() == 2, float, std::conditional_t<kind_of<S>() == 3, std::complex<float>, S>>>;
/// The type both operands of a binary operation are converted to. `AW`/`BW`: the operand is
/// a scalar (weak), as NumPy's value-based casting for Python scalars.
template <class A, class B, bool AW, bool BW>
constexpr auto promote() {
  if constexpr (AW && !BW) {
    if constexpr (kind_of<A>() >= 0 && kind_of<B>() >= 0 && kind_of<A>() <= kind_of<B>()) return std::type_identity<B>{};
    else if constexpr (kind_of<A>() >= 0 && kind_of<B>() >= 0) return strong_promote<B, weak_type<A, B>>();
    else return strong_promote<A, B>();
  } else if constexpr (BW && !AW) {
    return promote<B, A, true, false>();
  } else {
    return strong_promote<A, B>();
  }
}
template <class A, class B, bool AW, bool BW>
using promote_t = typename decltype(promote<A, B, AW, BW>())::type;
/// The element type of where(c, a, b): promote_t, except that two integer scalars give
/// int64 (NumPy: `np.where(c, 1, -1)` holds Python ints, int64), as C++ literals are int.
template <class A, class B, bool AW, bool BW>
using where_t = std::conditional_t<AW && BW && kind_of<promote_t<A, B, AW, BW>>() == 1, std::int64_t,
                                   promote_t<A, B, AW, BW>>;
}  // namespace detail

namespace detail {
/// a ** b for integers, as NumPy: exact, modulo 2^bits (squaring in the unsigned type);
/// a negative exponent throws InvalidArgument, as NumPy raises ValueError.
template <class P>
constexpr P integer_power(P a, P b) {
  if constexpr (std::is_same_v<P, bool>) {
    return b ? a : true;
  } else {
    if (b < 0)
      raise<InvalidArgument>("garray::pow: an integer raised to a negative integer power (", a, " ** ", b,
                             "; as NumPy, integer powers stay integers: convert to a floating-point type)");
    using U = std::make_unsigned_t<P>;
    U r = 1, x = static_cast<U>(a);
    for (auto e = static_cast<U>(b); e != 0; e >>= 1) {
      if (e & 1U) r = static_cast<U>(r * x);
      x = static_cast<U>(x * x);
    }
    return static_cast<P>(r);
  }
}

/// a - b of two elements as NumPy computes it: integers of one type wrap modulo 2^bits (no
/// signed overflow); everything else as C++ (the norms and max-abs of an update).
template <class A, class B>
constexpr auto difference(const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_same_v<A, B> && !std::is_same_v<A, bool>)
    return wrapping<ops::Sub>(a, b);
  else
    return a - b;
}

/// a ** b for complex P, as NumPy: b == 0 gives 1 (0 ** 0 too); a real integer exponent
/// with |b| < 100 is computed by repeated squaring (exact where the products are: z ** 2 of
/// Gaussian integers, 2 ** 3 is 8), a negative one as 1 / a ** -b; 0 ** b is 0 for a real
/// b > 0 and NaN otherwise; every other case is std::pow (exp(b log a)).
template <class P>
P complex_power(const P& a, const P& b) {
  using R = typename P::value_type;
  if (b.real() == R(0) && b.imag() == R(0)) return P(1, 0);
  if (a.real() == R(0) && a.imag() == R(0)) {
    if (b.imag() == R(0) && b.real() > R(0)) return P(0, 0);
    return P(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN());
  }
  const R br = b.real();
  if (b.imag() == R(0) && br > R(-100) && br < R(100) && br == std::trunc(br)) {
    auto e = static_cast<int>(br < R(0) ? -br : br);
    P r(1, 0), x = a;
    bool first = true;
    for (; e != 0; e >>= 1) {
      if (e & 1) {
        r = first ? x : r * x;  // no needless 1 * x (keeps -0.0 and exact results)
        first = false;
      }
      if (e > 1) x = x * x;
    }
    return br < R(0) ? P(1, 0) / r : r;
  }
  return std::pow(a, b);
}
}  // namespace detail

namespace detail {
/// Promoted's P for a comparison of integer operands with an integer scalar: both compared
/// by value, exactly, whatever their widths and signedness (compute_t).
struct ExactInteger {};
/// An integer value widened to the 64-bit type of its signedness (char types included,
/// which std::cmp_less and std::in_range refuse).
template <class X>
constexpr auto widen(X x) noexcept {
  if constexpr (std::is_signed_v<X>)
    return static_cast<long long>(x);
  else
    return static_cast<unsigned long long>(x);
}
}  // namespace detail

namespace ops {
/// Op applied to both operands converted to P (NumPy's promotion); integer + - * wrap,
/// integer powers stay integers (exact; a negative exponent throws InvalidArgument),
/// integer division is true division (double), as NumPy.
template <class Op, class P>
struct Promoted {
  /// Local. Op applied to `a` and `b` converted to P (integer division: double).
  template <class A, class B>
  constexpr auto operator()(const A& a, const B& b) const {
    if constexpr (std::is_same_v<P, detail::ExactInteger>) {
      const auto x = detail::widen(a);
      const auto y = detail::widen(b);
      if constexpr (std::is_same_v<Op, Lt>)
        return std::cmp_less(x, y);
      else if constexpr (std::is_same_v<Op, Le>)
        return std::cmp_less_equal(x, y);
      else if constexpr (std::is_same_v<Op, Gt>)
        return std::cmp_greater(x, y);
      else if constexpr (std::is_same_v<Op, Ge>)
        return std::cmp_greater_equal(x, y);
      else if constexpr (std::is_same_v<Op, Eq>)
        return std::cmp_equal(x, y);
      else
        return std::cmp_not_equal(x, y);
    } else if constexpr (std::is_same_v<Op, Div> && std::is_integral_v<P>)
      return static_cast<double>(a) / static_cast<double>(b);
    else if constexpr (std::is_same_v<Op, Pow> && std::is_integral_v<P>)
      return detail::integer_power<P>(static_cast<P>(a), static_cast<P>(b));
    else if constexpr (std::is_same_v<Op, Pow> && detail::is_complex<P>::value)
      return detail::complex_power<P>(static_cast<P>(a), static_cast<P>(b));
    else if constexpr (std::is_same_v<Op, Add> || std::is_same_v<Op, Sub> || std::is_same_v<Op, Mul>)
      return detail::wrapping<Op, P>(static_cast<P>(a), static_cast<P>(b));
    else return Op{}(static_cast<P>(a), static_cast<P>(b));
  }
};
}  // namespace ops

// ---- leaves --------------------------------------------------------------------------------

/// A view of a distributed array inside an expression.
template <Element T, std::size_t N, std::size_t M>
struct ViewLeaf : detail::ExprTag {
  using value_type = T;                         ///< element type of the node
  static constexpr int rank = static_cast<int>(M);  ///< dimensions of the node's index space
  static constexpr bool needs_coords = false;   ///< no leaf below needs element indices
  View<T, N, M> v;                              ///< the view (refers to its array, no copy)
  /// Local. A leaf reading `view` (no data moves).
  explicit ViewLeaf(const View<T, N, M>& view) : v(view) {}
  /// Local. Calls f(leaf) for every leaf of the tree, left to right: here f(*this).
  template <class F>
  void for_each_leaf(F&& f) const {
    f(*this);
  }
};

/// A scalar broadcast to every element.
template <class S>
struct ScalarLeaf : detail::ExprTag {
  using value_type = S;                            ///< the scalar's type
  static constexpr int rank = detail::scalar_rank;  ///< -1: broadcasts to any shape
  static constexpr bool needs_coords = false;      ///< no leaf below needs element indices
  S s;                                             ///< the value
  /// The integer type an operation converts this integer scalar to and that cannot hold it
  /// ("int32" for `int32_array + 3000000000`), else null: validate() throws InvalidArgument.
  const char* overflows = nullptr;
  /// Local. A leaf holding `value`.
  explicit ScalarLeaf(S value) : s(value) {}
  /// Local. Calls f(leaf) for every leaf of the tree, left to right: here f(*this).
  template <class F>
  void for_each_leaf(F&& f) const {
    f(*this);
  }
};

/// A local array replicated on every rank (the caller keeps it alive and identical on every
/// rank); element k of the expression reads data[sum_d k[d] * strides[d]].
template <class T, std::size_t M>
struct LocalLeaf : detail::ExprTag {
  using value_type = T;                             ///< element type of the local array
  static constexpr int rank = static_cast<int>(M);  ///< dimensions of the node's index space
  static constexpr bool needs_coords = false;       ///< no leaf below needs element indices
  const T* data = nullptr;                          ///< the local array's first element
  Shape<M> shape{};                                 ///< its extents
  Shape<M> strides{};                               ///< its strides, in elements
  /// Local. Calls f(leaf) for every leaf of the tree, left to right: here f(*this).
  template <class F>
  void for_each_leaf(F&& f) const {
    f(*this);
  }
};

/// A leaf whose value is f(index) for the element's index in the expression's index space.
template <std::size_t M, class F>
struct IndexLeaf : detail::ExprTag {
  using value_type = std::invoke_result_t<const F&, const Shape<M>&>;  ///< what f returns
  static constexpr int rank = static_cast<int>(M);  ///< dimensions of the node's index space
  static constexpr bool needs_coords = true;        ///< evaluation tracks element indices for f
  F f;                                              ///< the function of the element's index
  /// Local. A leaf computing fn(index).
  explicit IndexLeaf(F fn) : f(std::move(fn)) {}
  /// Local. Calls g(leaf) for every leaf of the tree, left to right: here g(*this).
  template <class G>
  void for_each_leaf(G&& g) const {
    g(*this);
  }
};

namespace detail {
/// The rank of an operation's result: the larger operand rank (NumPy broadcasting prepends
/// length-1 dimensions to the smaller one; a scalar, rank -1, broadcasts to any shape).
template <int A, int B>
constexpr int join_rank() {
  return A > B ? A : B;
}
}  // namespace detail

// ---- interior nodes ------------------------------------------------------------------------

namespace detail {
/// The type operation node Op converts its operands to: P for ops::Promoted<Op, P> (double
/// for an integer division: true division), void for the others.
template <class Op>
struct converts_to {
  using type = void;
};
template <class Op, class P>
struct converts_to<ops::Promoted<Op, P>> {
  using type = std::conditional_t<std::is_same_v<Op, ops::Div> && std::is_integral_v<P>, double, P>;
};
/// Marks operand node `x` when it is an integer scalar that the integer type P, which the
/// node above converts it to, cannot hold (NumPy 2 raises OverflowError for a Python int
/// out of the array type's bounds; a C++ conversion would wrap). validate() reports it
/// inside the call's handshake. Other operands and types: nothing.
template <class P, class L>
constexpr void note_scalar_range(L& x) noexcept {
  if constexpr (requires { x.overflows; }) {  // a ScalarLeaf
    using S = std::remove_cvref_t<decltype(x.s)>;
    if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool> && std::is_integral_v<P> &&
                  !std::is_same_v<P, bool>)
      if (!std::in_range<P>(widen(x.s)))
        x.overflows = std::is_signed_v<P> ? (sizeof(P) == 4   ? "int32"
                                             : sizeof(P) == 8 ? "int64"
                                                              : "its integer type")
                                          : (sizeof(P) == 4   ? "uint32"
                                             : sizeof(P) == 8 ? "uint64"
                                                              : "its integer type");
  }
}
}  // namespace detail

/// Op applied to every element of the operand node `A` (-a, abs(a), cast<U>(a), ...).
/// Built by the operators and functions below; a plain value, evaluated only when assigned.
template <class Op, class A>
struct UnaryExpr : detail::ExprTag {
  using value_type = std::invoke_result_t<Op, typename A::value_type>;  ///< Op's result type
  static constexpr int rank = A::rank;                    ///< the operand's rank
  static constexpr bool needs_coords = A::needs_coords;   ///< the operand needs element indices
  A a;                                                    ///< the operand node
  /// Local. The node over operand `x` (no data moves).
  explicit UnaryExpr(A x) : a(std::move(x)) {}
  /// Local. Calls f(leaf) for every leaf of the tree, left to right.
  template <class F>
  void for_each_leaf(F&& f) const {
    a.for_each_leaf(f);
  }
};

/// Op applied elementwise to the operand nodes `A` and `B` (a + b, a < b, pow(a, b), ...);
/// the operands' shapes broadcast as NumPy's (trailing alignment, length-1 dimensions
/// stretch), a scalar to any shape. Built by the operators and functions
/// below; a plain value, evaluated only when assigned.
template <class Op, class A, class B>
struct BinaryExpr : detail::ExprTag {
  /// Op's result type
  using value_type = std::invoke_result_t<Op, typename A::value_type, typename B::value_type>;
  static constexpr int rank = detail::join_rank<A::rank, B::rank>();  ///< the larger operand rank
  static constexpr bool needs_coords = A::needs_coords || B::needs_coords;  ///< an operand needs element indices
  A a;  ///< the left operand node
  B b;  ///< the right operand node
  /// Local. The node over operands `x` and `y` (no data moves). An integer scalar operand
  /// out of the range of the integer type Op computes in is marked (validate() throws).
  BinaryExpr(A x, B y) : a(std::move(x)), b(std::move(y)) {
    using P = typename detail::converts_to<Op>::type;
    detail::note_scalar_range<P>(a);
    detail::note_scalar_range<P>(b);
  }
  /// Local. Calls f(leaf) for every leaf of the tree, left to right.
  template <class F>
  void for_each_leaf(F&& f) const {
    a.for_each_leaf(f);
    b.for_each_leaf(f);
  }
};

/// c ? a : b elementwise over the nodes `C`, `A`, `B` (where()); the result type is a's and
/// b's promoted type (NumPy's). A plain value, evaluated only when assigned.
template <class C, class A, class B>
struct WhereExpr : detail::ExprTag {
  /// a's and b's type promoted as NumPy does (two integer scalars, as Python ints: int64)
  using value_type = detail::where_t<typename A::value_type, typename B::value_type, A::rank == detail::scalar_rank,
                                     B::rank == detail::scalar_rank>;
  /// the largest operand rank
  static constexpr int rank = detail::join_rank<C::rank, detail::join_rank<A::rank, B::rank>()>();
  /// an operand needs element indices
  static constexpr bool needs_coords = C::needs_coords || A::needs_coords || B::needs_coords;
  C c;  ///< the condition node
  A a;  ///< the node chosen where c is true
  B b;  ///< the node chosen where c is false
  /// Local. The node over `x` ? `y` : `z` (no data moves). An integer scalar `y` or `z`
  /// out of value_type's range is marked (validate() throws).
  WhereExpr(C x, A y, B z) : c(std::move(x)), a(std::move(y)), b(std::move(z)) {
    detail::note_scalar_range<value_type>(a);
    detail::note_scalar_range<value_type>(b);
  }
  /// Local. Calls f(leaf) for every leaf of the tree, left to right.
  template <class F>
  void for_each_leaf(F&& f) const {
    c.for_each_leaf(f);
    a.for_each_leaf(f);
    b.for_each_leaf(f);
  }
};

namespace detail {
/// True when evaluating an element of the expression node type E can throw for some input
/// values: an integer pow (a negative exponent). assign() and assign_reduce() evaluate such
/// an expression into a temporary first, so a throw leaves the output unchanged.
template <class Op>
inline constexpr bool op_can_throw = false;
template <class P>
inline constexpr bool op_can_throw<ops::Promoted<ops::Pow, P>> =
    std::is_integral_v<P> && !std::is_same_v<P, bool>;
template <class E>
inline constexpr bool can_throw_in_eval = false;
template <class Op, class A>
inline constexpr bool can_throw_in_eval<UnaryExpr<Op, A>> = op_can_throw<Op> || can_throw_in_eval<A>;
template <class Op, class A, class B>
inline constexpr bool can_throw_in_eval<BinaryExpr<Op, A, B>> =
    op_can_throw<Op> || can_throw_in_eval<A> || can_throw_in_eval<B>;
template <class C, class A, class B>
inline constexpr bool can_throw_in_eval<WhereExpr<C, A, B>> =
    can_throw_in_eval<C> || can_throw_in_eval<A> || can_throw_in_eval<B>;
}  // namespace detail

// ---- operands ------------------------------------------------------------------------------
namespace detail {
template <class X>
struct is_view : std::false_type {};
template <class T, std::size_t N, std::size_t M>
struct is_view<View<T, N, M>> : std::true_type {};
template <class X>
struct is_global_array : std::false_type {};
template <class T, std::size_t N>
struct is_global_array<GlobalArray<T, N>> : std::true_type {};
}  // namespace detail

/// A scalar operand: arithmetic or std::complex.
template <class X>
concept ScalarOperand = std::is_arithmetic_v<std::remove_cvref_t<X>> || detail::is_complex<std::remove_cvref_t<X>>::value;
/// An operand with a shape: an expression, a view or a whole array.
template <class X>
concept ArrayOperand = Expression<X> || detail::is_view<std::remove_cvref_t<X>>::value ||
                       detail::is_global_array<std::remove_cvref_t<X>>::value;
/// Anything an expression takes: a scalar or an operand with a shape.
template <class X>
concept Operand = ScalarOperand<X> || ArrayOperand<X>;

/// The expression node for an operand (views and arrays are referenced, not copied). Local.
template <Operand X>
auto as_expr(const X& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (Expression<D>) return x;
  else if constexpr (ScalarOperand<D>) return ScalarLeaf<D>(x);
  else if constexpr (detail::is_view<D>::value)
    return ViewLeaf<typename D::value_type, D::array_type::dims, D::dims>(x);
  else return ViewLeaf<typename D::value_type, D::dims, D::dims>(const_cast<D&>(x).view());
}
/// The expression node type of operand type X (what as_expr returns).
template <class X>
using expr_t = decltype(as_expr(std::declval<const X&>()));
namespace detail {
/// The promoted type of `a op b` (NumPy's promotion, scalars weak).
template <class A, class B>
using operands_promote_t = promote_t<typename expr_t<A>::value_type, typename expr_t<B>::value_type,
                                     expr_t<A>::rank == scalar_rank, expr_t<B>::rank == scalar_rank>;
/// Op is a comparison (bool result).
template <class Op>
inline constexpr bool is_comparison =
    std::is_same_v<Op, ops::Lt> || std::is_same_v<Op, ops::Le> || std::is_same_v<Op, ops::Gt> ||
    std::is_same_v<Op, ops::Ge> || std::is_same_v<Op, ops::Eq> || std::is_same_v<Op, ops::Ne>;
/// A comparison of an integer operand of type X with an integer scalar of type S must compare
/// by value (ExactInteger): X cannot hold every value of S. False for other kinds.
template <class S, class X>
constexpr bool exact_compare() {
  if constexpr (kind_of<S>() != 1 || kind_of<X>() != 1)
    return false;
  else
    return std::cmp_less(widen(std::numeric_limits<S>::min()), widen(std::numeric_limits<X>::min())) ||
           std::cmp_greater(widen(std::numeric_limits<S>::max()), widen(std::numeric_limits<X>::max()));
}
/// The type `a op b` computes in: NumPy's promotion, except that a comparison of an integer
/// operand with an integer scalar whose type the operand's cannot hold compares their values
/// exactly (ExactInteger; NumPy 2: `int32_array < 3000000000` is true everywhere; converting
/// the scalar to int32 would wrap). `int32_array < 5` stays an int32 comparison.
template <class Op, class A, class B>
using compute_t = std::conditional_t<
    is_comparison<Op> &&
        (expr_t<A>::rank == scalar_rank
             ? exact_compare<typename expr_t<A>::value_type, typename expr_t<B>::value_type>()
             : expr_t<B>::rank == scalar_rank &&
                   exact_compare<typename expr_t<B>::value_type, typename expr_t<A>::value_type>()),
    ExactInteger, operands_promote_t<A, B>>;
/// The node operation of `a op b`: op on both operands converted to compute_t.
template <class Op, class A, class B>
using promoted_op = ops::Promoted<Op, compute_t<Op, A, B>>;
/// `a op b` computes in bool (both operands bool): NumPy refuses `-` there.
template <class A, class B>
concept bool_op = (std::is_same_v<operands_promote_t<A, B>, bool>);
/// `a - b` is defined: an array operand, and not both bool.
template <class A, class B>
concept subtractable = !bool_op<A, B> && (ArrayOperand<A> || ArrayOperand<B>);
}  // namespace detail

/// Wraps a boost::multi_array (or _ref) replicated on every rank as an expression operand.
/// Local. The array must outlive the expression; it must use ascending storage. Its element
/// type is one of garray's six or bool: NumPy's promotion, which the operators follow, is
/// defined for those (an unsigned or 8/16-bit array would follow C++'s rules instead).
template <class T, std::size_t M, class P>
requires(Element<T> ||
         std::is_same_v<T, bool>) LocalLeaf<T, M> local(const boost::const_multi_array_ref<T, M, P>& m) {
  LocalLeaf<T, M> l;
  for (std::size_t d = 0; d < M; ++d) {
    if (!m.storage_order().ascending(d))
      detail::raise<InvalidArgument>("garray::local: descending storage order is not supported (dim ", d, ")");
    l.shape[d] = static_cast<Index>(m.shape()[d]);
    l.strides[d] = static_cast<Index>(m.strides()[d]);
  }
  l.data = m.data();
  return l;
}

/// An expression whose element at index i (of the expression's index space, Shape<M>) is
/// f(i). Local. Used by generate/iota/fill_random; usable in any expression.
template <std::size_t M, class F>
IndexLeaf<M, F> index_expr(F f) {
  return IndexLeaf<M, F>(std::move(f));
}

// ---- building expressions: all Local, no data moves ------------------------------------------
#define GARRAY_DETAIL_BINARY_OPERATOR(sym, Op)                                       \
  template <Operand A, Operand B>                                                    \
    requires(ArrayOperand<A> || ArrayOperand<B>)                                     \
  auto operator sym(const A& a, const B& b) {                                        \
    return BinaryExpr<detail::promoted_op<ops::Op, A, B>, expr_t<A>, expr_t<B>>(as_expr(a), as_expr(b)); \
  }
/// Elementwise a + b: a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(+, Add)
/// Elementwise a - b: a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar. Not for two
/// bool operands (NumPy raises TypeError for a boolean subtract: use `a != b`).
template <Operand A, Operand B>
requires(detail::subtractable<A, B>) auto operator-(const A& a, const B& b) {
  return BinaryExpr<detail::promoted_op<ops::Sub, A, B>, expr_t<A>, expr_t<B>>(as_expr(a), as_expr(b));
}
/// Elementwise a * b: a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(*, Mul)
/// Elementwise a / b (integer / integer is true division in double, as NumPy): a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(/, Div)
/// Elementwise a < b (a bool expression): a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(<, Lt)
/// Elementwise a <= b (a bool expression): a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(<=, Le)
/// Elementwise a > b (a bool expression): a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(>, Gt)
/// Elementwise a >= b (a bool expression): a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(>=, Ge)
/// Elementwise a == b (a bool expression): a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(==, Eq)
/// Elementwise a != b (a bool expression): a lazy BinaryExpr, operands converted to NumPy's promoted type.
/// Local: builds the expression, moves no data. One operand may be a scalar.
GARRAY_DETAIL_BINARY_OPERATOR(!=, Ne)
#undef GARRAY_DETAIL_BINARY_OPERATOR

/// Elementwise negation. Local (lazy). Not for a bool operand (NumPy raises TypeError for a
/// boolean negative: use `!=`/`==` against false, or where()).
template <ArrayOperand A>
requires(!std::is_same_v<typename expr_t<A>::value_type, bool>) auto operator-(const A& a) {
  return UnaryExpr<ops::Neg, expr_t<A>>(as_expr(a));
}

#define GARRAY_DETAIL_UNARY_FUNCTION(name, Op)            \
  template <ArrayOperand A>                               \
  auto name(const A& a) {                                 \
    return UnaryExpr<ops::Op, expr_t<A>>(as_expr(a));     \
  }
/// Elementwise |a| (std::abs): a lazy UnaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_UNARY_FUNCTION(abs, Abs)
/// Elementwise sqrt(a): a lazy UnaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_UNARY_FUNCTION(sqrt, Sqrt)
/// Elementwise exp(a): a lazy UnaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_UNARY_FUNCTION(exp, Exp)
/// Elementwise log(a) (natural): a lazy UnaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_UNARY_FUNCTION(log, Log)
/// Elementwise sin(a): a lazy UnaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_UNARY_FUNCTION(sin, Sin)
/// Elementwise cos(a): a lazy UnaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_UNARY_FUNCTION(cos, Cos)
#undef GARRAY_DETAIL_UNARY_FUNCTION

// Elementwise pow / min / max of two operands (one may be a scalar). Local (lazy).
// `min(a, b)` with two operands is elementwise; `min(a)` is the reduction.
#define GARRAY_DETAIL_BINARY_FUNCTION(name, Op)                                      \
  template <Operand A, Operand B>                                                    \
    requires(ArrayOperand<A> || ArrayOperand<B>)                                     \
  auto name(const A& a, const B& b) {                                                \
    return BinaryExpr<detail::promoted_op<ops::Op, A, B>, expr_t<A>, expr_t<B>>(as_expr(a), as_expr(b)); \
  }
/// Elementwise pow(a, b) (integer operands stay integers, as NumPy): a lazy BinaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_BINARY_FUNCTION(pow, Pow)
/// Elementwise minimum of a and b; `min(a)` with one operand is the reduction: a lazy BinaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_BINARY_FUNCTION(min, Min)
/// Elementwise maximum of a and b; `max(a)` with one operand is the reduction: a lazy BinaryExpr. Local: builds the expression, moves no data.
GARRAY_DETAIL_BINARY_FUNCTION(max, Max)
#undef GARRAY_DETAIL_BINARY_FUNCTION

/// cond ? a : b elementwise. Local (lazy).
template <Operand C, Operand A, Operand B>
  requires(ArrayOperand<C> || ArrayOperand<A> || ArrayOperand<B>)
auto where(const C& c, const A& a, const B& b) {
  return WhereExpr<expr_t<C>, expr_t<A>, expr_t<B>>(as_expr(c), as_expr(a), as_expr(b));
}

/// Elementwise conversion to U. Local (lazy).
template <class U, ArrayOperand A>
auto cast(const A& a) {
  return UnaryExpr<ops::Cast<U>, expr_t<A>>(as_expr(a));
}

}  // namespace garray

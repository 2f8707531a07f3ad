#pragma once
// Reductions over views and expressions, owner-computes.
//
//   double s = garray::sum(a[idx[range(1, -1)]]);      // the same value on every rank
//   double e = garray::norm2(u - old_u);               // fused: no temporary array
//   auto col_sums = garray::sum(a, garray::Axis{0});   // a new (M-1)-d array
//
// Participation: **Collective over the operands' context.** The driver is the first view
// operand: each rank reduces, in row-major order, the elements of it that it owns (with
// every other operand fetched as in assignments), then the per-rank partials are gathered
// and combined in rank order. The result is therefore identical (bitwise) on every rank and
// deterministic for a given rank count and distributions.
// Accuracy (floating point): sums (sum, mean, dot, var's mean; full and along an axis) of
// float and complex<float> are accumulated in double and rounded once to the result type,
// so |result - exact| <= (n - 1) eps_double sum |x_i| + half an ulp of float: far inside
// NumPy's pairwise float32 sum. double sums are recursive: |result - exact| <= (n - 1) eps
// sum |x_i|. prod is bounded alike in relative terms (float in float, as NumPy). min, max,
// any, all, count_nonzero and integer sums are exact.
// Empty selections give the reducer's identity (sum 0, prod 1, any false, all true); min,
// max, argmin and argmax of an empty selection throw InvalidArgument (NumPy's ValueError).
// Throws as assignments: SizeMismatch, InvalidArgument, CollectiveMismatch, on every rank.

#include <algorithm>
#include <cmath>
#include <complex>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <garray/numeric/detail/exact_sum.hpp>
#include <garray/numeric/elementwise.hpp>
#include <garray/numeric/expr.hpp>
#include <limits>
#include <type_traits>
#include <vector>

namespace garray {

/// Selects the axis of a reduction, scan or take along one dimension: sum(x, Axis{1}).
/// Negative values count from the last dimension as NumPy's (Axis{-1}: the last).
struct Axis {
  std::ptrdiff_t value = 0;  ///< the dimension (0-based; -M <= value < M for an M-d operand)
  constexpr Axis() = default;
  /// Axis{k} for any integer k (an unsigned k beyond ptrdiff_t's range, such as size_t(-1),
  /// saturates: an invalid axis, not a negative one counting from the end).
  template <std::integral I>
  constexpr explicit Axis(I k) : value(static_cast<std::ptrdiff_t>(detail::to_index(k))) {}
};

namespace detail {
/// The dimension an Axis names in an M-d operand (negative: from the end), or M when it
/// names none (the caller raises InvalidArgument with the axis as given).
template <std::size_t M>
constexpr std::size_t axis_index(Axis a) noexcept {
  const auto m = static_cast<std::ptrdiff_t>(M);
  const std::ptrdiff_t k = a.value < 0 ? a.value + m : a.value;
  return k < 0 || k >= m ? M : static_cast<std::size_t>(k);
}

/// The accumulator of sum and prod, as NumPy: bool and signed integers in int64, unsigned
/// integers in uint64, floating point and complex in their own type.
template <class V>
using sum_t = std::conditional_t<
    std::is_same_v<V, bool>, Index,
    std::conditional_t<std::is_integral_v<V>,
                       std::conditional_t<std::is_signed_v<V>, std::int64_t, std::uint64_t>, V>>;
/// The type of mean (NumPy): double for bool and integers, the element type otherwise.
template <class V>
using mean_t = std::conditional_t<std::is_integral_v<V>, double, V>;
/// The accumulator of a sum whose result is R: float and complex<float> in double precision
/// (rounded once to R at the end), every other type in R itself.
template <class R>
using sum_acc_t =
    std::conditional_t<std::is_same_v<R, float>, double,
                       std::conditional_t<std::is_same_v<R, std::complex<float>>, std::complex<double>, R>>;
template <class V>
struct real_of {
  using type = V;
};
template <class X>
struct real_of<std::complex<X>> {
  using type = X;
};
/// mean(x) from the sum S (accumulated as sum_acc_t) of n elements: divided in the
/// accumulator's precision, rounded once to R. Shared by mean and var, so var's mean is
/// mean(x) bit for bit.
template <class R, class S>
R mean_of(const S& s, Index n) {
  using RS = typename real_of<S>::type;
  return static_cast<R>(s / static_cast<RS>(n));
}

/// The per-rank partial of red(map(x)) over the driver's owned elements.
template <class Acc, class E, class Red, class Map>
Acc local_reduce(Plan<static_cast<std::size_t>(E::rank)>& p, const E& e, Red red, Map map) {
  Acc acc = Red::template identity<Acc>();
  run_plan(p, e, [&] {
    execute(p, e, true, false, [&](auto& bt, const RowPos&, Index n) {
      const auto run = [&](auto unit) {
        constexpr bool U = decltype(unit)::value;
        const auto bb = bt;
        Acc a = acc;
        for (Index i = 0; i < n; ++i) a = red(a, map(bb.template at<U>(i)));
        acc = a;
      };
      if (p.unit) run(std::true_type{});
      else run(std::false_type{});
    });
  });
  return acc;
}

/// A full reduction of an expression: red over map(x), identical on every rank.
template <class Acc, ArrayOperand X, class Red, class Map>
Acc reduce_all(const X& x, Red red, Map map, std::string_view what, std::uint64_t salt = 0) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank >= 0, "garray: a reduction needs a view or array operand");
  constexpr std::size_t M = static_cast<std::size_t>(E::rank);
  Plan<M> p;
  p.salt = salt;
  prepare_free(p, e, what);
  const Acc mine = local_reduce<Acc>(p, e, red, map);
  return combine_partials(*p.ctx, mine, red, Red::template identity<Acc>());
}

/// map(v) or, when the map takes it, map(v, k) with k the element's index along the axis.
template <class Map, class V>
decltype(auto) map_at(const Map& map, const V& v, Index k) {
  if constexpr (std::is_invocable_v<const Map&, const V&, Index>) return map(v, k);
  else return map(v);
}
/// red(a, map(v, k)), or red.step(a, v, k) when the reducer has a cheaper per-element update
/// with the same result (argmax: compare and keep).
template <class Red, class Map, class Acc, class V>
Acc reduce_step(const Red& red, const Map& map, const Acc& a, const V& v, Index k) {
  if constexpr (requires { red.step(a, v, k); }) return red.step(a, v, k);
  else return red(a, map_at(map, v, k));
}

/// Reduction along one axis into a new (M-1)-d array (blocked distribution) holding
/// fin(partial) for every other index. Per-rank partials go to a [P, result...] scratch array
/// (one row per rank); each rank then combines the rows of its own result block in rank
/// order. `map` may take the element's index along the axis as a second argument (argmax);
/// an accumulator that is not an Element (a struct: argmax's (value, index), var's
/// (n, mean, m2)) travels packed in int64 words. `salt`: arguments outside the expression
/// (ddof), compared by the handshake.
template <class Acc, ArrayOperand X, class Red, class Map, class Fin, class Local = std::nullptr_t>
auto reduce_axis_with(const X& x, Axis axis, Red red, Map map, Fin fin, std::string_view what,
                      std::uint64_t salt = 0, Local local = nullptr) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank >= 2, "garray: a reduction along an axis needs at least 2 dimensions (use the full reduction)");
  constexpr std::size_t M = static_cast<std::size_t>(E::rank);
  constexpr std::size_t R = M - 1;
  using Out = std::remove_cvref_t<std::invoke_result_t<const Fin&, const Acc&>>;
  static_assert(Element<Out>, "garray: the result of an axis reduction must be an element type");
  static_assert(std::is_trivially_copyable_v<Acc>, "garray: an axis reduction's partial must be trivially copyable");
  constexpr bool packed = !Element<Acc>;
  using Word = std::conditional_t<packed, std::int64_t, Acc>;
  constexpr Index W = packed ? static_cast<Index>((sizeof(Acc) + sizeof(std::int64_t) - 1) / sizeof(std::int64_t)) : 1;
  Plan<M> p;
  p.what = what;
  p.salt = salt;
  set_free_driver(p, e);
  std::exception_ptr bad;
  const std::size_t ax = axis_index<M>(axis);  // Axis{-1} and Axis{M - 1} agree
  if (ax >= M) bad = std::make_exception_ptr(InvalidArgument(message(what, ": axis ", axis.value, " for a ", M, "-d expression")));
  p.sig = hash_mix(p.sig, ax);
  // A bad axis is this rank's invalid argument at the handshake: it throws it, the others
  // CollectiveMismatch carrying its message.
  prepare(p, e, std::string("expression ") + typeid(E).name() + ", axis " + std::to_string(ax), bad);
  const Context ctx = *p.ctx;
  Shape<R> rshape{};
  for (std::size_t d = 0, j = 0; d < M; ++d)
    if (d != ax) rshape[j++] = p.shape[d];
  Shape<M> pshape{};
  pshape[0] = ctx.size();
  for (std::size_t d = 0; d < R; ++d) pshape[d + 1] = rshape[d];

  // Local partial over my piece, laid out over my piece's extents with the axis dropped.
  Shape<R> pk0{}, pext{};
  for (std::size_t d = 0, j = 0; d < M; ++d)
    if (d != ax) {
      pk0[j] = p.k0[d];
      pext[j++] = p.empty ? 0 : p.k1[d] - p.k0[d];
    }
  // (allocated inside the failure rule: its size is this rank's)
  std::vector<Acc> part;
  const auto alloc_part = [&] { part.assign(static_cast<std::size_t>(volume(pext)), Red::template identity<Acc>()); };
  const Shape<R> pstr = row_major_strides(pext);
  if constexpr (!std::is_same_v<Local, std::nullptr_t>) {
    // A specialised local pass (argmax: values and indices in separate arrays).
    run_plan(p, e, [&] {
      alloc_part();
      local(p, e, part, pstr, ax);
    });
  } else {
  run_plan(p, e, [&] {
  alloc_part();
  execute(p, e, true, true, [&](auto& bt, const RowPos& pos, Index n) {
    // The run's first partial: every dimension but the axis, the last one included (a
    // run starts at its sub-box's column, not the piece's, when other operands' owner
    // boundaries split the piece along the last dimension).
    Index base = 0;
    for (std::size_t d = 0, j = 0; d < M; ++d)
      if (d != ax) base += (pos.abs[d] - p.k0[d]) * pstr[j++];
    const auto run = [&](auto unit) {
      constexpr bool U = decltype(unit)::value;
      const auto bb = bt;
      if (ax == M - 1) {
        Acc a = part[static_cast<std::size_t>(base)];
        const Index k0 = pos.abs[M - 1];
        for (Index i = 0; i < n; ++i) a = reduce_step(red, map, a, bb.template at<U>(i), k0 + i);
        part[static_cast<std::size_t>(base)] = a;
      } else {
        Acc* q = part.data() + base;
        const Index k = pos.abs[ax];
        for (Index i = 0; i < n; ++i) q[i] = reduce_step(red, map, q[i], bb.template at<U>(i), k);
      }
    };
    if (p.unit) run(std::true_type{});
    else run(std::false_type{});
  });
  });
  }

  pshape[M - 1] *= W;
  GlobalArray<Word, M> scratch(ctx, pshape, Distribution<M>::slab(0));
  if constexpr (!packed) scratch.fill(Red::template identity<Acc>());
  if constexpr (packed) {  // the identity in this rank's block of the scratch, then a barrier
    run_concluded(ctx.comm(), p.what, [&] {
      auto blk = scratch.access();
      const Acc id = Red::template identity<Acc>();
      Word* w = blk.data();
      for (Index i = 0; i < blk.size(); i += W) std::memcpy(w + i, &id, sizeof(Acc));
    });
  }
  run_concluded(ctx.comm(), p.what, [&] {
  if (!p.empty && !part.empty()) {
    Section<M> s;
    s.start[0] = ctx.rank();
    s.step[0] = 1;
    s.count[0] = 1;
    for (std::size_t d = 0; d < R; ++d) {
      s.start[d + 1] = pk0[d];
      s.step[d + 1] = 1;
      s.count[d + 1] = pext[d];
    }
    s.start[M - 1] *= W;
    s.count[M - 1] *= W;
    if constexpr (packed) {
      std::vector<Word> words(part.size() * static_cast<std::size_t>(W));
      for (std::size_t i = 0; i < part.size(); ++i) std::memcpy(words.data() + i * W, &part[i], sizeof(Acc));
      scratch.put_section(s, words);
    } else {
      scratch.put_section(s, part);
    }
  }
  scratch.fence();
  });

  GlobalArray<Out, R> out(ctx, rshape);
  const Box<R> mine = out.local_box();
  run_concluded(ctx.comm(), p.what, [&] {
  fault_point("reduce_axis.combine");
  if (!mine.empty()) {
    Section<M> s;
    s.start[0] = 0;
    s.step[0] = 1;
    s.count[0] = ctx.size();
    for (std::size_t d = 0; d < R; ++d) {
      s.start[d + 1] = mine.lo[d];
      s.step[d + 1] = 1;
      s.count[d + 1] = mine.extent(d);
    }
    s.start[M - 1] *= W;
    s.count[M - 1] *= W;
    std::vector<Word> rows(static_cast<std::size_t>(s.size()));
    scratch.get_section(s, rows);
    const auto per = static_cast<std::size_t>(mine.volume());
    std::vector<Acc> acc(per, Red::template identity<Acc>());
    for (std::size_t r = 0; r < static_cast<std::size_t>(ctx.size()); ++r)
      for (std::size_t i = 0; i < per; ++i) {
        if constexpr (packed) {
          Acc v;
          std::memcpy(static_cast<void*>(&v), rows.data() + (r * per + i) * W, sizeof(Acc));
          acc[i] = red(acc[i], v);
        } else {
          acc[i] = red(acc[i], rows[r * per + i]);
        }
      }
    std::vector<Out> res(per);
    for (std::size_t i = 0; i < per; ++i) res[i] = fin(acc[i]);
    Section<R> o;
    for (std::size_t d = 0; d < R; ++d) {
      o.start[d] = mine.lo[d];
      o.step[d] = 1;
      o.count[d] = mine.extent(d);
    }
    out.put_section(o, res);
  }
  out.fence();
  });
  return out;
}

/// reduce_axis_with with the partial itself as the result (sum, prod, min, max, mean).
template <class Acc, ArrayOperand X, class Red, class Map>
auto reduce_axis(const X& x, Axis axis, Red red, Map map, std::string_view what) {
  return reduce_axis_with<Acc>(x, axis, red, map, [](const Acc& a) { return a; }, what);
}

template <class X>
using value_t = typename expr_t<X>::value_type;

struct Identity {
  template <class V>
  constexpr V operator()(const V& v) const {
    return v;
  }
};
template <class Acc>
struct To {
  template <class V>
  constexpr Acc operator()(const V& v) const {
    return static_cast<Acc>(v);
  }
};
struct NonZero {
  template <class V>
  constexpr bool operator()(const V& v) const {
    return v != V{};
  }
};
struct CountNonZero {
  template <class V>
  constexpr Index operator()(const V& v) const {
    return v != V{} ? 1 : 0;
  }
};
struct or_reducer {
  template <class V>
  static constexpr V identity() { return false; }
  constexpr bool operator()(bool a, bool b) const { return a || b; }
};
struct and_reducer {
  template <class V>
  static constexpr V identity() { return true; }
  constexpr bool operator()(bool a, bool b) const { return a && b; }
};

}  // namespace detail

/// Sum of the elements (bool counts as 0/1 in an index). **Collective**; identical on
/// every rank. Throws SizeMismatch, InvalidArgument, CollectiveMismatch.
template <ArrayOperand X>
auto sum(const X& x) {
  using R = detail::sum_t<detail::value_t<X>>;
  using Acc = detail::sum_acc_t<R>;  // float: in double, rounded once
  return static_cast<R>(detail::reduce_all<Acc>(x, sum_reducer{}, detail::To<Acc>{}, "garray::sum"));
}
/// Product of the elements. **Collective**; identical on every rank.
template <ArrayOperand X>
auto prod(const X& x) {
  using Acc = detail::sum_t<detail::value_t<X>>;
  return detail::reduce_all<Acc>(x, prod_reducer{}, detail::To<Acc>{}, "garray::prod");
}
namespace detail {
/// The axis' extent of an expression's driver (the same on every rank once its handshake
/// passed).
template <class E>
Index axis_extent(const E& e, Axis axis) {
  const auto full = expr_shape(e);
  const std::size_t k = axis_index<std::tuple_size_v<decltype(full)>>(axis);
  return k < full.size() ? full[k] : 0;
}

/// min and max have no identity: an empty selection throws InvalidArgument on every rank
/// (after the handshake, which compared the shapes), as NumPy raises ValueError.
inline void require_elements(Index n, std::string_view what) {
  if (n == 0)
    raise<InvalidArgument>(what, ": a zero-size selection has no ", what.find("min") != std::string_view::npos ? "minimum" : "maximum",
                           " (as NumPy: the reduction has no identity)");
}
}  // namespace detail

/// Smallest element; NaN if any element is NaN. **Collective**; identical on every rank.
/// Throws InvalidArgument on every rank for an empty selection (NumPy's ValueError).
template <ArrayOperand X>
auto min(const X& x) {
  using Acc = detail::value_t<X>;
  const Acc r = detail::reduce_all<Acc>(x, min_reducer{}, detail::Identity{}, "garray::min");
  detail::require_elements(volume(detail::expr_shape(as_expr(x))), "garray::min");
  return r;
}
/// Largest element; NaN if any element is NaN. **Collective**; identical on every rank.
/// Throws InvalidArgument on every rank for an empty selection (NumPy's ValueError).
template <ArrayOperand X>
auto max(const X& x) {
  using Acc = detail::value_t<X>;
  const Acc r = detail::reduce_all<Acc>(x, max_reducer{}, detail::Identity{}, "garray::max");
  detail::require_elements(volume(detail::expr_shape(as_expr(x))), "garray::max");
  return r;
}
/// sum(a * b) (no complex conjugation), fused. **Collective**; identical on every rank.
template <Operand A, Operand B>
  requires(ArrayOperand<A> || ArrayOperand<B>)
auto dot(const A& a, const B& b) {
  return sum(a * b);
}
/// sqrt(sum |x|^2) as a double, fused. **Collective**; identical on every rank.
template <ArrayOperand X>
double norm2(const X& x) {
  return std::sqrt(detail::reduce_all<double>(x, sum_reducer{}, detail::AbsSquare{}, "garray::norm2"));
}
/// True if any element is nonzero (numpy's any; `garray::all` is the slicing placeholder,
/// so the pair is any_of / all_of; false for an empty selection). **Collective**; identical
/// on every rank.
template <ArrayOperand X>
bool any_of(const X& x) {
  return detail::reduce_all<bool>(x, detail::or_reducer{}, detail::NonZero{}, "garray::any");
}
/// True if every element is nonzero (true for an empty selection). **Collective**;
/// identical on every rank.
template <ArrayOperand X>
bool all_of(const X& x) {
  return detail::reduce_all<bool>(x, detail::and_reducer{}, detail::NonZero{}, "garray::all");
}
/// Same as any_of. **Collective**; identical on every rank.
template <ArrayOperand X>
bool any(const X& x) {
  return any_of(x);
}
/// Number of nonzero elements. **Collective**; identical on every rank.
template <ArrayOperand X>
Index count_nonzero(const X& x) {
  return detail::reduce_all<Index>(x, sum_reducer{}, detail::CountNonZero{}, "garray::count_nonzero");
}

///@{
/// Reductions along one axis (sum, prod, min, max): a new (M-1)-d array (blocked
/// distribution) holding, for every other index, the reduction over the axis. **Collective**;
/// on return the new array is complete and visible to every rank; deterministic for a given
/// rank count and distribution. Throws InvalidArgument for a bad axis (on every rank).
template <ArrayOperand X>
auto sum(const X& x, Axis axis) {
  using R = detail::sum_t<detail::value_t<X>>;
  using Acc = detail::sum_acc_t<R>;  // float: in double, rounded once
  return detail::reduce_axis_with<Acc>(
      x, axis, sum_reducer{}, detail::To<Acc>{}, [](const Acc& a) { return static_cast<R>(a); },
      "garray::sum(axis)");
}
template <ArrayOperand X>
auto prod(const X& x, Axis axis) {
  using Acc = detail::sum_t<detail::value_t<X>>;
  return detail::reduce_axis<Acc>(x, axis, prod_reducer{}, detail::To<Acc>{}, "garray::prod(axis)");
}
template <ArrayOperand X>
auto min(const X& x, Axis axis) {
  using Acc = detail::value_t<X>;
  auto r = detail::reduce_axis<Acc>(x, axis, min_reducer{}, detail::Identity{}, "garray::min(axis)");
  detail::require_elements(detail::axis_extent(as_expr(x), axis), "garray::min(axis)");  // an axis of length 0
  return r;
}
template <ArrayOperand X>
auto max(const X& x, Axis axis) {
  using Acc = detail::value_t<X>;
  auto r = detail::reduce_axis<Acc>(x, axis, max_reducer{}, detail::Identity{}, "garray::max(axis)");
  detail::require_elements(detail::axis_extent(as_expr(x), axis), "garray::max(axis)");
  return r;
}
///@}


// ---- NumPy-style statistics and arg reductions -------------------------------------------

namespace detail {
/// Number of elements of an expression (of its broadcast shape; identical on every rank once
/// the reduction's handshake passed).
template <class E>
Index expr_size(const E& e) {
  return volume(expr_shape(e));
}

/// NumPy's ordering for argmax/argmin: NaN beats everything (the first NaN wins), complex
/// numbers compare lexicographically (real, then imaginary part).
template <bool Max, class V>
bool arg_better(const V& x, const V& y) {
  if constexpr (is_complex<V>::value) {
    // NaN in either part counts as NaN (NumPy's complex argmax/argmin)
    const bool xn = x.real() != x.real() || x.imag() != x.imag();
    const bool yn = y.real() != y.real() || y.imag() != y.imag();
    if (xn) return !yn;
    if (yn) return false;
    if (x.real() != y.real()) return Max ? y.real() < x.real() : x.real() < y.real();
    return Max ? y.imag() < x.imag() : x.imag() < y.imag();
  } else if constexpr (std::is_floating_point_v<V>) {
    if (x != x) return y == y;
    if (y != y) return false;
    return Max ? y < x : x < y;
  } else {
    return Max ? y < x : x < y;
  }
}

template <class V>
struct ArgAcc {
  V v{};
  Index i = -1;  // -1: no element yet
};
template <bool Max>
struct arg_reducer {
  template <class A>
  static constexpr A identity() { return A{}; }
  template <class A>
  A operator()(const A& a, const A& b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (arg_better<Max>(b.v, a.v)) return b;
    if (arg_better<Max>(a.v, b.v)) return a;
    return b.i < a.i ? b : a;  // ties (and NaN vs NaN): the first, as NumPy
  }
  /// a combined with the element v at index k, visited in increasing k (owner-computes
  /// order along the axis): the same as operator()(a, {v, k}), cheaper.
  template <class A, class V>
  A step(const A& a, const V& v, Index k) const {
    if (a.i < 0 || arg_better<Max>(v, a.v)) return A{v, k};
    return a;
  }
};

/// argmax / argmin: the row-major position (in the expression's index space) of the first
/// extreme element. One ordered owner-computes pass, then the rank-order combination.
template <bool Max, ArrayOperand X>
Index arg_extreme(const X& x, std::string_view what) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank >= 1, "garray: argmax/argmin need a view or array operand with at least one dimension");
  constexpr std::size_t M = static_cast<std::size_t>(E::rank);
  using V = typename E::value_type;
  using Acc = ArgAcc<V>;
  Plan<M> p;
  prepare_free(p, e, what);
  if (volume(p.shape) == 0) raise<InvalidArgument>(what, ": attempt to get the arg extreme of an empty sequence");
  const Shape<M> rs = row_major_strides(p.shape);
  Acc acc;
  run_plan(p, e, [&] {
    execute(p, e, true, true, [&](auto& bt, const RowPos& pos, Index n) {
      Index base = 0;
      for (std::size_t d = 0; d < M; ++d) base += pos.abs[d] * rs[d];
      const auto run = [&](auto unit) {
        constexpr bool U = decltype(unit)::value;
        const auto bb = bt;
        Acc a = acc;
        for (Index i = 0; i < n; ++i) {
          const V v = bb.template at<U>(i);
          if (a.i < 0 || arg_better<Max>(v, a.v)) {
            a.v = v;
            a.i = base + i;
          }
        }
        acc = a;
      };
      if (p.unit) run(std::true_type{});
      else run(std::false_type{});
    });
  });
  return combine_partials(*p.ctx, acc, arg_reducer<Max>{}, Acc{}).i;
}
}  // namespace detail

/// np.argmax(x): the flat (row-major) index of the first largest element; NaN counts as the
/// largest (the first NaN), complex numbers compare lexicographically. **Collective**;
/// identical on every rank. Throws InvalidArgument (every rank) for an empty selection.
template <ArrayOperand X>
Index argmax(const X& x) {
  return detail::arg_extreme<true>(x, "garray::argmax");
}
/// np.argmin(x), as argmax (NaN counts as the smallest). **Collective**; identical on every
/// rank. Throws InvalidArgument (every rank) for an empty selection.
template <ArrayOperand X>
Index argmin(const X& x) {
  return detail::arg_extreme<false>(x, "garray::argmin");
}
/// np.unravel_index(flat, shape): the index of row-major position `flat` in `shape`. Local
/// (pure index math).
template <std::size_t M>
Shape<M> unravel_index(Index flat, const Shape<M>& shape) {
  Shape<M> r{};
  for (std::size_t d = M; d-- > 0;) {
    r[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return r;
}

/// np.mean(x): the sum (accumulated in double for integers and float, complex<double> for
/// complex) divided by the number of elements, rounded once to mean's type; NaN for an empty
/// selection. **Collective**; identical on every rank.
template <ArrayOperand X>
auto mean(const X& x) {
  using R = detail::mean_t<detail::value_t<X>>;
  using Acc = detail::sum_acc_t<R>;
  const Index n = detail::expr_size(as_expr(x));
  return detail::mean_of<R>(detail::reduce_all<Acc>(x, sum_reducer{}, detail::To<Acc>{}, "garray::mean"), n);
}

namespace detail {
/// var(x, ddof) as the collective `what` (var or std_dev): both passes (the mean, then the
/// squares) carry `what` and ddof in their handshakes, so ranks calling mean, var and std_dev
/// on the same operand throw CollectiveMismatch instead of pairing their passes.
template <ArrayOperand X>
auto variance(const X& x, Index ddof, std::string_view what) {
  using M = mean_t<value_t<X>>;
  using Acc = sum_acc_t<M>;
  using R = typename real_of<M>::type;
  const std::uint64_t salt = value_hash(hash_string("ddof"), ddof);
  const Index n = expr_size(as_expr(x));
  const M m =
      mean_of<M>(reduce_all<Acc>(x, sum_reducer{}, To<Acc>{}, what, salt), n);  // mean(x), bit for bit
  const double ss = reduce_all<double>(x - m, sum_reducer{}, AbsSquare{}, what, hash_mix(salt, 2));
  // ddof >= n: a zero denominator, inf (NaN if every element is the mean), as NumPy
  // (n - ddof in double, as the axis form: no integer overflow for an extreme ddof)
  return static_cast<R>(ss / std::max(static_cast<double>(n) - static_cast<double>(ddof), 0.0));
}
}  // namespace detail

/// np.var(x, ddof=ddof): mean(|x - mean(x)|^2) with n - ddof in the denominator (two passes;
/// the squares accumulated in double; inf when ddof >= n). Real for complex input.
/// **Collective** (ddof is part of the handshake); identical on every rank.
template <ArrayOperand X>
auto var(const X& x, Index ddof = 0) {
  return detail::variance(x, ddof, "garray::var");
}
/// np.std(x, ddof=ddof) = sqrt(var). **Collective** (its own call: a rank calling var
/// meanwhile makes every rank throw CollectiveMismatch); identical on every rank.
template <ArrayOperand X>
auto std_dev(const X& x, Index ddof = 0) {
  using R = decltype(var(x, ddof));
  return static_cast<R>(std::sqrt(static_cast<double>(detail::variance(x, ddof, "garray::std_dev"))));
}
/// np.all(x) (same as all_of). **Collective**; identical on every rank.
template <ArrayOperand X>
bool all_nonzero(const X& x) {
  return all_of(x);
}

/// np.mean(x, axis=k): a new (M-1)-d array (blocked). **Collective**: on return the new
/// array is complete and visible to every rank.
template <ArrayOperand X>
auto mean(const X& x, Axis axis) {
  using R = detail::mean_t<detail::value_t<X>>;
  using Acc = detail::sum_acc_t<R>;
  const auto full = detail::expr_shape(as_expr(x));
  constexpr std::size_t M = std::tuple_size_v<decltype(full)>;
  const std::size_t k = detail::axis_index<M>(axis);  // M for a bad axis: reduce_axis_with throws
  const Index n = k < M ? full[k] : 0;
  return detail::reduce_axis_with<Acc>(
      x, axis, sum_reducer{}, detail::To<Acc>{}, [n](const Acc& a) { return detail::mean_of<R>(a, n); },
      "garray::mean(axis)");
}

// ---- reproducible reductions ---------------------------------------------------------------
//
//   double s = garray::sum(x, garray::reproducible);       // same bits at any np / grid / view
//   double d = garray::dot(a, b, garray::reproducible);
//   double r = garray::norm2(u - v, garray::reproducible);
//
// Each rank adds the terms it owns (one owner-computes pass, any order) into an exact
// fixed-point accumulator (detail/exact_sum.hpp); one MPI_Allreduce sums the accumulators as
// integers and the exact total is rounded once, to nearest (ties to even). The result is the
// correctly rounded sum of the terms, so it does not depend on the rank count, the process
// grid, the distribution, the view's steps or the evaluation order. Terms are rounded per
// element exactly as in the plain reductions (a * b in dot, |x|^2 in double in norm2), which
// is deterministic. See docs/semantics.md, "Reductions".

namespace detail {

/// The per-rank exact accumulation of map(x) over the driver's owned elements, then the
/// allreduce: every rank returns the exact total. Collective.
template <class V, ArrayOperand X, class Map>
ExactAcc<V> reduce_exact(const X& x, Map map, std::string_view what) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank >= 0, "garray: a reduction needs a view or array operand");
  constexpr std::size_t M = static_cast<std::size_t>(E::rank);
  Plan<M> p;
  prepare_free(p, e, what);
  ExactAcc<V> acc;
  run_plan(p, e, [&] {
    execute(p, e, false, false, [&](auto& bt, const RowPos&, Index n) {
      const auto run = [&](auto unit) {
        constexpr bool U = decltype(unit)::value;
        const auto bb = bt;
        acc.add_n(n, [&](Index i) { return map(bb.template at<U>(i)); });
      };
      if (p.unit) run(std::true_type{});
      else run(std::false_type{});
    });
  });
  acc.allreduce(p.ctx->comm());
  return acc;
}

/// The exact accumulator's value type for a sum of V: V for float, double and complex.
template <class V>
inline constexpr bool exact_summable_v = std::is_floating_point_v<V> || is_complex<V>::value;
/// V widened to double precision (mean's intermediate).
template <class V>
using wide_t = std::conditional_t<is_complex<V>::value, std::complex<double>, double>;

}  // namespace detail

/// Reproducible sum: the exact sum of the elements rounded once to the element type (to
/// nearest, ties to even; bitwise equal to Python's math.fsum for double). Any NaN, or
/// +inf with -inf, gives NaN; an infinity gives that infinity; an exact zero gives +0.0.
/// Integer and bool operands give sum(x) (already exact). **Collective**; on return every
/// rank holds the same value, identical for every rank count, process grid, distribution
/// and view of the same values. Throws as sum(x).
template <ArrayOperand X>
auto sum(const X& x, reproducible_t) {
  using V = detail::value_t<X>;
  if constexpr (!detail::exact_summable_v<V>) {  // sum(x), under this call's own name
    using Acc = detail::sum_t<V>;
    return detail::reduce_all<Acc>(x, sum_reducer{}, detail::To<Acc>{}, "garray::sum(reproducible)");
  } else
    return detail::reduce_exact<V>(x, detail::Identity{}, "garray::sum(reproducible)").value();
}
/// Reproducible dot product: the exact sum of the products a_i * b_i (each rounded as the
/// expression a * b rounds it), rounded once. **Collective**; bitwise identical on every
/// rank and for every rank count and distribution, as sum(x, reproducible).
template <Operand A, Operand B>
  requires(ArrayOperand<A> || ArrayOperand<B>)
auto dot(const A& a, const B& b, reproducible_t) {
  return sum(a * b, reproducible);
}
/// Reproducible 2-norm: sqrt of the exact sum of |x_i|^2 (each square computed in double),
/// rounded once before the square root. **Collective**; bitwise identical on every rank and
/// for every rank count and distribution.
template <ArrayOperand X>
double norm2(const X& x, reproducible_t) {
  return std::sqrt(
      detail::reduce_exact<double>(x, detail::ExactAbsSquare{}, "garray::norm2(reproducible)").value());
}
/// Reproducible mean: the exact sum rounded once to double (complex: per component), divided
/// by the number of elements, converted to mean's type (NaN for an empty selection).
/// **Collective**; bitwise identical on every rank and for every rank count and
/// distribution (integers are summed exactly too).
template <ArrayOperand X>
auto mean(const X& x, reproducible_t) {
  using Acc = detail::mean_t<detail::value_t<X>>;
  using W = detail::wide_t<Acc>;
  const Index n = detail::expr_size(as_expr(x));
  const W s = detail::reduce_exact<W>(x, detail::Identity{}, "garray::mean(reproducible)").value();
  return static_cast<Acc>(s / static_cast<double>(n));
}

// ---- More reductions along one axis (issue 15) -----------------------------------------
// Each is one owner-computes pass into per-rank partials and the rank-order combination of
// reduce_axis_with: **Collective** over the operand's context; the result is a new
// (M-1)-d array with the blocked distribution, complete and visible to every rank on return,
// deterministic for a given rank count and distributions. An axis >= M throws
// InvalidArgument on the calling rank (CollectiveMismatch on ranks that passed a valid one;
// every rank throws when all passed it) before anything is created; the operands are never
// written. Operands: arrays, views (negative steps, dropped dimensions) and expressions.

namespace detail {
/// Welford / Chan accumulator of var and std along an axis: count, mean, sum of squared
/// deviations (in double or complex<double>).
template <class V>
struct MomentAcc {
  using M = std::conditional_t<is_complex<V>::value, std::complex<double>, double>;
  double n = 0;
  M mean{};
  double m2 = 0;
};
struct moment_reducer {
  template <class A>
  static constexpr A identity() { return A{}; }
  template <class A>
  A operator()(const A& a, const A& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    A r;
    r.n = a.n + b.n;
    const auto d = b.mean - a.mean;
    r.mean = a.mean + d * (b.n / r.n);
    double dd;
    if constexpr (is_complex<std::remove_cv_t<decltype(d)>>::value) dd = std::norm(d);
    else dd = d * d;
    r.m2 = a.m2 + b.m2 + dd * (a.n * b.n / r.n);
    return r;
  }
};
template <class V>
struct ToMoment {
  MomentAcc<V> operator()(const V& v) const {
    MomentAcc<V> a;
    a.n = 1;
    a.mean = static_cast<typename MomentAcc<V>::M>(v);
    a.m2 = AbsSquare{}(v - v);  // 0, or NaN for a NaN or infinite element, as NumPy's var (no overflow)
    return a;
  }
};
template <class V>
struct ToArg {
  ArgAcc<V> operator()(const V& v, Index k) const { return ArgAcc<V>{v, k}; }
};

/// arg_better<Max>(v, q) with one comparison on the common path (NaN handled after it).
template <bool Max, class V>
inline bool arg_better_fast(const V& v, const V& q) {
  if constexpr (std::is_arithmetic_v<V>) {
    if (Max ? (q < v) : (v < q)) return true;
    return v != v && q == q;  // v is NaN and q is not (always false for integers)
  } else {
    return arg_better<Max>(v, q);
  }
}

/// The local pass of argmax/argmin along an axis: this rank's piece visited in row-major
/// order (increasing index along the axis for every line), the running extreme kept in
/// separate value and index arrays (the first element of a line is taken without a
/// comparison), then packed into the partials.
template <bool Max>
struct ArgLocal {
  template <std::size_t M, class E, class V, std::size_t R>
  void operator()(Plan<M>& p, const E& e, std::vector<ArgAcc<V>>& part, const Shape<R>& pstr, std::size_t ax) const {
    using S = std::conditional_t<std::is_same_v<V, bool>, unsigned char, V>;  // no vector<bool>
    std::vector<S> pv(part.size());
    std::vector<Index> pi(part.size(), -1);
    execute(p, e, true, true, [&](auto& bt, const RowPos& pos, Index n) {
      Index base = 0;  // every dimension but the axis (a run may start mid-row: see reduce_axis_with)
      for (std::size_t d = 0, j = 0; d < M; ++d)
        if (d != ax) base += (pos.abs[d] - p.k0[d]) * pstr[j++];
      const auto run = [&](auto unit) {
        constexpr bool U = decltype(unit)::value;
        const auto bb = bt;
        if (ax == M - 1) {
          const auto b = static_cast<std::size_t>(base);
          const Index k0 = pos.abs[M - 1];
          V bv = static_cast<V>(pv[b]);
          Index bi = pi[b];
          Index i = 0;
          if (bi < 0 && n > 0) {
            bv = bb.template at<U>(0);
            bi = k0;
            i = 1;
          }
          for (; i < n; ++i) {
            const V v = bb.template at<U>(i);
            if (arg_better_fast<Max>(v, bv)) {
              bv = v;
              bi = k0 + i;
            }
          }
          pv[b] = bv;
          pi[b] = bi;
        } else {
          S* qv = pv.data() + base;
          Index* qi = pi.data() + base;
          const Index k = pos.abs[ax];
          if (k == p.k0[ax]) {
            for (Index i = 0; i < n; ++i) {
              qv[i] = bb.template at<U>(i);
              qi[i] = k;
            }
          } else if constexpr (std::is_arithmetic_v<V>) {
            // Branch-free (both stores unconditional): the compiler vectorises the line.
            for (Index i = 0; i < n; ++i) {
              const V v = bb.template at<U>(i);
              const V q = static_cast<V>(qv[i]);
              // v beats q, or v is NaN and q is not; a NaN q is never beaten (the first NaN wins)
              bool better = !(Max ? (v <= q) : (q <= v));
              if constexpr (std::is_floating_point_v<V>) better = better & (q == q);
              qv[i] = better ? static_cast<S>(v) : qv[i];
              qi[i] = better ? k : qi[i];
            }
          } else {
            for (Index i = 0; i < n; ++i) {
              const V v = bb.template at<U>(i);
              if (arg_better_fast<Max>(v, static_cast<V>(qv[i]))) {
                qv[i] = v;
                qi[i] = k;
              }
            }
          }
        }
      };
      if (p.unit) run(std::true_type{});
      else run(std::false_type{});
    });
    for (std::size_t i = 0; i < part.size(); ++i)
      if (pi[i] >= 0) part[i] = ArgAcc<V>{static_cast<V>(pv[i]), pi[i]};
  }
};

template <bool Max, ArrayOperand X>
auto arg_extreme_axis(const X& x, Axis axis, std::string_view what) {
  using V = value_t<X>;
  auto r = reduce_axis_with<ArgAcc<V>>(x, axis, arg_reducer<Max>{}, ToArg<V>{},
                                       [](const ArgAcc<V>& a) -> Index { return a.i; }, what, 0, ArgLocal<Max>{});
  // After the handshake every rank knows the same shape: an empty axis throws everywhere.
  if (axis_extent(as_expr(x), axis) == 0)
    raise<InvalidArgument>(what, ": attempt to get the arg extreme of an empty sequence (axis ", axis.value,
                           " has length 0)");
  return r;
}

template <bool Sqrt, ArrayOperand X>
auto moments_axis(const X& x, Axis axis, Index ddof, std::string_view what) {
  using V = value_t<X>;
  using R = typename real_of<mean_t<V>>::type;
  return reduce_axis_with<MomentAcc<V>>(
      x, axis, moment_reducer{}, ToMoment<V>{},
      [ddof](const MomentAcc<V>& a) -> R {
        const double den = std::max(a.n - static_cast<double>(ddof), 0.0);
        const double v = a.m2 / den;
        return static_cast<R>(Sqrt ? std::sqrt(v) : v);
      },
      what, value_hash(hash_string("ddof"), ddof));
}
}  // namespace detail

/// np.argmax(x, axis=k): a new int64 (M-1)-d array holding, for every other index, the
/// position along axis k of the first largest element (NaN counts as the largest, complex
/// numbers compare lexicographically, ties: the first, as NumPy). **Collective**; see the
/// section comment. An axis of length 0 throws InvalidArgument on every rank (after the
/// handshake; nothing written).
template <ArrayOperand X>
auto argmax(const X& x, Axis axis) {
  return detail::arg_extreme_axis<true>(x, axis, "garray::argmax(axis)");
}
/// np.argmin(x, axis=k), as argmax(x, axis) (NaN counts as the smallest). **Collective**.
template <ArrayOperand X>
auto argmin(const X& x, Axis axis) {
  return detail::arg_extreme_axis<false>(x, axis, "garray::argmin(axis)");
}
/// np.var(x, axis=k, ddof=ddof): a new (M-1)-d array of the variances along axis k (real:
/// float for float and complex<float>, double otherwise, as NumPy), n - ddof in the
/// denominator (<= 0: inf or NaN, as NumPy). One pass (Welford's update, partials combined by
/// Chan's formula, in double). **Collective**; ddof is part of the handshake.
template <ArrayOperand X>
auto var(const X& x, Axis axis, Index ddof = 0) {
  return detail::moments_axis<false>(x, axis, ddof, "garray::var(axis)");
}
/// np.std(x, axis=k, ddof=ddof) = sqrt(var(x, axis, ddof)). **Collective**, as var(x, axis).
template <ArrayOperand X>
auto std_dev(const X& x, Axis axis, Index ddof = 0) {
  return detail::moments_axis<true>(x, axis, ddof, "garray::std(axis)");
}
/// np.count_nonzero(x, axis=k): a new int64 (M-1)-d array. **Collective**.
template <ArrayOperand X>
auto count_nonzero(const X& x, Axis axis) {
  return detail::reduce_axis<Index>(x, axis, sum_reducer{}, detail::CountNonZero{}, "garray::count_nonzero(axis)");
}
/// np.any(x, axis=k): a new (M-1)-d array of 0/1 (int32: garray has no bool element type)
/// telling whether any element along axis k is nonzero (0 for an empty axis).
/// **Collective**.
template <ArrayOperand X>
auto any_of(const X& x, Axis axis) {
  return detail::reduce_axis<std::int32_t>(x, axis, detail::or_reducer{}, detail::NonZero{}, "garray::any(axis)");
}
/// np.all(x, axis=k): a new (M-1)-d array of 0/1 (int32) telling whether every element
/// along axis k is nonzero (1 for an empty axis). **Collective**.
template <ArrayOperand X>
auto all_of(const X& x, Axis axis) {
  return detail::reduce_axis<std::int32_t>(x, axis, detail::and_reducer{}, detail::NonZero{}, "garray::all(axis)");
}
/// Same as any_of(x, axis). **Collective**.
template <ArrayOperand X>
auto any(const X& x, Axis axis) {
  return any_of(x, axis);
}

}  // namespace garray

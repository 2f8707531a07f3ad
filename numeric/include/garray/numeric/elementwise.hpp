#pragma once
// Owner-computes evaluation of expressions into views: assignment, compound assignment,
// eager eval, numpy-style ufuncs with explicit outputs, basic collective ops (fill, iota,
// copy, scale, axpy, random fill), assignment fused with a reduction, for_each_local.
//
//   u[inner] = ((u[up] + u[down]) * dy2 + (u[left] + u[right]) * dx2) * dnr_inv;
//   auto t = garray::eval(a * 2.0 + b);            // new array, a's distribution
//   garray::add(a, b, c);                          // c = a + b
//   double d = garray::assign_norm2_change(u[inner], expr);  // one sweep: write + |change|
//   double e = garray::assign_norm2_diff(v[inner], expr, u[inner]);  // write v, |v - u|
//
// Every function here except for_each_local is **collective over the context of the
// output** (or of the first array operand): every rank calls it with the same arguments.
// Completion: on return the output is written on every rank and visible to every rank
// (the call ends with MPI_Win_sync and a barrier). Validation happens before any data moves:
// SizeMismatch (shapes differ), InvalidArgument (operands on different contexts) and
// CollectiveMismatch (ranks passed different views or expressions) are thrown on every rank
// and nothing is written.
//
// Semantics of `out = expr` when out overlaps an operand (the same array): the result is
// the one numpy gives, as if the right side were evaluated completely first. Operands that
// are the output itself element for element (x += y) need no copy; other overlapping ones
// are fetched into a buffer and a barrier separates every rank's reads from the writes.
// Without overlap there is no extra synchronisation.
//
// Bitwise reproducibility: each element is computed by exactly the operations the
// expression spells, in that order, with no reassociation, so the result is bitwise equal
// to a serial loop evaluating the same expression (for + - * /; the math functions are the
// C library's) with each binary operation's operands first converted to NumPy's promoted
// type (expr.hpp: int32 + float32 in double, float array * 2.0 in float).

#include <cstdint>
#include <garray/numeric/detail/engine.hpp>
#include <garray/numeric/detail/exact_sum.hpp>
#include <garray/numeric/expr.hpp>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace garray {

namespace detail {

template <class T, class B>
void run_unit_restrict(B b, T* __restrict o, Index n) {
  for (Index i = 0; i < n; ++i) o[i] = store_cast<T>(b.template at<true>(i));
}
template <class T, class B>
void run_unit(B b, T* o, Index n) {
  for (Index i = 0; i < n; ++i) o[i] = store_cast<T>(b.template at<true>(i));
}
template <class T, class B>
void run_strided(B b, T* o, Index n, Index os) {
  for (Index i = 0; i < n; ++i) o[i * os] = store_cast<T>(b.template at<false>(i));
}

/// The output view as a view (arrays become their whole view).
template <class O>
auto out_view(O&& o) {
  using D = std::remove_cvref_t<O>;
  if constexpr (is_view<D>::value)
    return D(o);
  else {
    static_assert(is_global_array<D>::value, "garray: the output must be a View or a GlobalArray");
    return o.view();
  }
}

/// Points p.out_slot at this rank's piece of `out` in its own block.
template <class T, std::size_t N, std::size_t M>
T* bind_output(Plan<M>& p, const View<T, N, M>& out) {
  auto& a = out.array();
  if (p.empty) return nullptr;
  const auto piece = piece_section(out.section(), p.k0, p.k1);
  const auto lay = a.layout_of(a.context().rank());
  T* base = reinterpret_cast<T*>(detail::ArrayAccess::window(a).base()) + lay.offset(piece.start);
  p.out_piece.ptr = base;
  p.out_elem = sizeof(T);
  std::size_t j = 0;
  for (std::size_t d = 0; d < N; ++d)
    if (!piece.dropped[d]) p.out_piece.str[j++] = piece.step[d] * lay.strides[d];
  return base;
}

template <class E>
std::string describe_expr(std::uint64_t out_id, const E&) {
  return "output " + detail::array_label(out_id) + ", expression " + typeid(E).name();
}

/// Steps 1-2 of an assignment (validation, handshake); the rest runs in run_assign.
/// `invalid`: an error the caller's own argument checks found on this rank, carried by the
/// handshake (prepare).
template <class T, std::size_t N, std::size_t M, class E>
void setup_assign(Plan<M>& p, const View<T, N, M>& out, const E& e, std::exception_ptr invalid = nullptr) {
  static_assert(E::rank <= static_cast<int>(M),
                "garray: the expression has more dimensions than the output view (it cannot broadcast to it)");
  set_driver(p, out, true);
  prepare(p, e, describe_expr(out.array_id(), e), std::move(invalid));
}

/// Steps 3-7: plan, fetch, bind the output, `body()` (execute), then the closing agreement
/// (MPI_Win_sync of the output first): on return the output is visible everywhere, or every
/// rank threw.
template <class T, std::size_t N, std::size_t M, class E, class Body>
void run_assign(Plan<M>& p, const View<T, N, M>& out, const E& e, Body&& body) {
  run_plan(p, e, [&] {
    bind_output(p, out);
    body();
    detail::ArrayAccess::window(out.array()).memory_sync();
  });
}

/// One-sided rank-order combination of one partial per rank: identical on every rank.
template <class Acc, class Red>
Acc combine_partials(const Context& ctx, const Acc& mine, Red red, Acc init) {
  static_assert(std::is_trivially_copyable_v<Acc>);
  const auto all = std::make_unique<Acc[]>(static_cast<std::size_t>(ctx.size()));
  check_mpi(MPI_Allgather(&mine, static_cast<int>(sizeof(Acc)), MPI_BYTE, all.get(),
                          static_cast<int>(sizeof(Acc)), MPI_BYTE, ctx.comm()),
            "MPI_Allgather");
  Acc r = init;
  for (int q = 0; q < ctx.size(); ++q) r = red(r, all[static_cast<std::size_t>(q)]);
  return r;
}

}  // namespace detail

// ---- reducers (also used by reductions.hpp) ----------------------------------------------
/// Combines partial results by addition: `identity<V>()` and `operator()(a, b)`. A reducer
/// for assign_reduce and the reductions; all members Local.
struct sum_reducer {
  /// Local. V{} (zero).
  template <class V>
  static constexpr V identity() {
    return V{};
  }
  /// Local. a + b (integers wrap, as NumPy).
  template <class V>
  constexpr V operator()(const V& a, const V& b) const {
    return detail::wrapping<ops::Add, V>(a, b);
  }
};
/// Combines partial results by multiplication (a reducer; all members Local).
struct prod_reducer {
  /// Local. V{1}.
  template <class V>
  static constexpr V identity() {
    return V{1};
  }
  /// Local. a * b (integers wrap, as NumPy).
  template <class V>
  constexpr V operator()(const V& a, const V& b) const {
    return detail::wrapping<ops::Mul, V>(a, b);
  }
};
/// Keeps the smaller of two partial results (a reducer; all members Local).
struct min_reducer {
  /// Local. +infinity, or the type's max for types without infinity.
  template <class V>
  static constexpr V identity() {
    if constexpr (std::numeric_limits<V>::has_infinity)
      return std::numeric_limits<V>::infinity();
    else
      return std::numeric_limits<V>::max();
  }
  /// Local. The smaller of a and b; NaN if either is NaN (NumPy's min propagates NaN, and
  /// so the result does not depend on where the NaN is, on the rank count or on the order).
  template <class V>
  constexpr V operator()(const V& a, const V& b) const {
    if constexpr (std::is_floating_point_v<V>)
      if (b != b) return b;
    return b < a ? b : a;  // a NaN a stays: b < NaN is false
  }
};
/// Keeps the larger of two partial results (a reducer; all members Local).
struct max_reducer {
  /// Local. -infinity, or the type's lowest for types without infinity.
  template <class V>
  static constexpr V identity() {
    if constexpr (std::numeric_limits<V>::has_infinity)
      return -std::numeric_limits<V>::infinity();
    else
      return std::numeric_limits<V>::lowest();
  }
  /// Local. The larger of a and b; NaN if either is NaN (as min_reducer).
  template <class V>
  constexpr V operator()(const V& a, const V& b) const {
    if constexpr (std::is_floating_point_v<V>)
      if (b != b) return b;
    return a < b ? b : a;  // a NaN a stays: NaN < b is false
  }
};

// ---- assignment ------------------------------------------------------------------------------

namespace detail {
/// An operand whose evaluation can throw for some values (an integer pow): the writing calls
/// evaluate it into a temporary (eval, found by ADL) first and assign that, so a throw, on
/// every rank by the failure rule, leaves the output unchanged ("a call that threw changed
/// nothing"). One more pass and one more array, for these expressions only.
template <class X>
inline constexpr bool evaluate_first = can_throw_in_eval<expr_t<X>> && (expr_t<X>::rank >= 1);

template <class O, Operand X>
void assign_salted(O&& out_, const X& x, std::uint64_t salt, std::exception_ptr invalid = nullptr);
template <class O, Operand X>
void assign_fused(O&& out_, const X& x, std::uint64_t salt, std::exception_ptr invalid = nullptr);
template <class O, class F>
void generate_salted(O&& out_, F f, std::uint64_t salt, std::exception_ptr invalid = nullptr);
}  // namespace detail

/// out = expr, owner-computes, one fused pass. **Collective over out's context.** Complete on
/// return everywhere. Throws SizeMismatch, InvalidArgument, CollectiveMismatch on every rank
/// before anything is written. `out` is a View or a GlobalArray; `expr` any operand. A
/// scalar is a fill (View::fill: the whole array's ghost cells are set too, as
/// GlobalArray::fill; one fill semantics).
template <class O, Operand X>
void assign(O&& out_, const X& x) {
  using T = typename std::remove_cvref_t<decltype(detail::out_view(out_))>::value_type;
  if constexpr (ScalarOperand<X> && requires { static_cast<T>(x); }) {
    detail::out_view(out_).fill(detail::store_cast<T>(x));
  } else {
    detail::assign_salted(std::forward<O>(out_), x, 0);
  }
}

namespace detail {
/// assign() with `salt` (arguments that are not part of the expression: iota's start and
/// step, fill_random's seed) folded into the collective signature, and `invalid` (the
/// caller's own argument check failed on this rank) carried by its handshake.
template <class O, Operand X>
void assign_salted(O&& out_, const X& x, std::uint64_t salt, std::exception_ptr invalid) {
  if constexpr (evaluate_first<X>)
    assign_fused(std::forward<O>(out_), eval(x), salt, std::move(invalid));
  else
    assign_fused(std::forward<O>(out_), x, salt, std::move(invalid));
}

/// assign_salted's one fused pass (eval's too: no detour through a temporary).
template <class O, Operand X>
void assign_fused(O&& out_, const X& x, std::uint64_t salt, std::exception_ptr invalid) {
  const auto out = out_view(out_);
  using V = std::remove_cvref_t<decltype(out)>;
  using T = typename V::value_type;
  constexpr std::size_t M = V::dims;
  const auto e = as_expr(x);
  Plan<M> p;
  p.what = "garray::assign";
  p.salt = salt;
  setup_assign(p, out, e, std::move(invalid));
  run_assign(p, out, e, [&] {
    const bool restrict_ok = !p.pointwise;
    execute(p, e, false, false, [&](auto& bt, const RowPos& pos, Index n) {
      T* o = static_cast<T*>(const_cast<void*>(p.out_slot.ptr)) + run_offset(p.out_slot, pos);
      if (p.unit) {
        if (restrict_ok)
          run_unit_restrict(bt, o, n);
        else
          run_unit(bt, o, n);
      } else {
        run_strided(bt, o, n, p.nd > 0 ? p.out_slot.str[static_cast<std::size_t>(p.nd - 1)] : 1);
      }
    });
  });
}
}  // namespace detail

namespace detail {
/// Evaluates two operands side by side in one sweep (assign_reduce with a reference).
struct PairOp {
  template <class A, class B>
  constexpr std::pair<A, B> operator()(const A& a, const B& b) const {
    return {a, b};
  }
};

/// The sweep behind assign_reduce: writes the first value of each element of `e` and
/// reduces f(new, second), where second is the element's old value (WithRef false) or the
/// second member of a PairOp node (WithRef true).
template <bool WithRef, class O, class E, class Red, class F>
auto assign_reduce_sweep(O&& out_, const E& e, Red red, F f, const char* what) {
  const auto out = out_view(out_);
  using V = std::remove_cvref_t<decltype(out)>;
  using T = typename V::value_type;
  using Second = std::conditional_t<WithRef, typename E::value_type, std::pair<T, T>>;
  using R = typename Second::second_type;
  using Acc = std::invoke_result_t<F, T, R>;
  constexpr std::size_t M = V::dims;
  Plan<M> p;
  p.what = what;
  // The reducer and the functor are arguments outside the expression: ranks passing
  // different ones would combine different partials (or partials of different sizes).
  p.salt = hash_mix(hash_string(typeid(Red).name()), hash_string(typeid(F).name()));
  setup_assign(p, out, e);
  Acc acc = Red::template identity<Acc>();
  run_assign(p, out, e, [&] {
    execute(p, e, true, false, [&](auto& bt, const RowPos& pos, Index n) {
      const Index os = p.nd > 0 ? p.out_slot.str[static_cast<std::size_t>(p.nd - 1)] : 1;
      T* o = static_cast<T*>(const_cast<void*>(p.out_slot.ptr)) + run_offset(p.out_slot, pos);
      const auto run = [&](auto unit) {
        constexpr bool U = decltype(unit)::value;
        const auto bb = bt;
        Acc a = acc;
        for (Index i = 0; i < n; ++i) {
          T& slot = U ? o[i] : o[i * os];
          if constexpr (WithRef) {
            const auto v = bb.template at<U>(i);
            const T nv = store_cast<T>(v.first);
            a = red(a, f(nv, v.second));
            slot = nv;
          } else {
            const T nv = store_cast<T>(bb.template at<U>(i));
            a = red(a, f(nv, slot));
            slot = nv;
          }
        }
        acc = a;
      };
      if (p.unit)
        run(std::true_type{});
      else
        run(std::false_type{});
    });
  });
  // A replicated output is written on every rank, but its elements are counted once (rank 0's).
  if (holds_everything(out.array()) && out.array().context().rank() != 0) acc = Red::template identity<Acc>();
  return combine_partials(out.array().context(), acc, red, Red::template identity<Acc>());
}
}  // namespace detail

/// out = expr in one sweep that also reduces f(new_value, old_value) over the written
/// elements with `red` (sum_reducer, max_reducer, min_reducer, ...), e.g. the size of an
/// iterative solver's update. **Collective**, as assign; the returned value is identical on
/// every rank (rank-order combination of per-rank partials; deterministic for a given rank
/// count and distribution).
template <class O, Operand X, class Red, class F>
auto assign_reduce(O&& out, const X& x, Red red, F f) {
  if constexpr (detail::evaluate_first<X>)
    return assign_reduce(std::forward<O>(out), eval(x), red, f);
  else
    return detail::assign_reduce_sweep<false>(std::forward<O>(out), as_expr(x), red, f,
                                              "garray::assign_reduce");
}

/// out = expr in one sweep that also reduces f(new_value, ref_value) with `red`, where
/// ref_value is the element of `ref` (an operand of out's shape, typically the previous
/// iterate in another array) at the same position. The one-sweep step of a two-buffer
/// solver: `assign_reduce(v[inner], J(u), u[inner], sum_reducer{}, f)` writes v and
/// measures the change against u without a second pass. `ref` may overlap `out`; it is
/// then read as numpy would, before any element is written. **Collective**, as assign_reduce.
template <class O, Operand X, ArrayOperand Ref, class Red, class F>
auto assign_reduce(O&& out, const X& x, const Ref& ref, Red red, F f) {
  if constexpr (detail::evaluate_first<X>) {
    return assign_reduce(std::forward<O>(out), eval(x), ref, red, f);
  } else if constexpr (detail::evaluate_first<Ref>) {  // ref can throw too: before out is written
    return assign_reduce(std::forward<O>(out), x, eval(ref), red, f);
  } else {
    const auto e = BinaryExpr<detail::PairOp, expr_t<X>, expr_t<Ref>>(as_expr(x), as_expr(ref));
    return detail::assign_reduce_sweep<true>(std::forward<O>(out), e, red, f, "garray::assign_reduce");
  }
}

/// out = expr; returns sqrt(sum over out of |expr - ref|^2), in one sweep (the change of a
/// two-buffer iteration: out and ref are the new and the old iterate). **Collective**, as
/// assign_reduce: the value is identical on every rank.
template <class O, Operand X, ArrayOperand Ref>
double assign_norm2_diff(O&& out, const X& x, const Ref& ref) {
  return std::sqrt(assign_reduce(
      std::forward<O>(out), x, ref, sum_reducer{},
      [](const auto& nv, const auto& rv) { return detail::AbsSquare{}(detail::difference(nv, rv)); }));
}

/// out = expr; returns sqrt(sum over out of |new - old|^2) (the 2-norm of the update), in
/// one sweep. **Collective**, as assign_reduce.
template <class O, Operand X>
double assign_norm2_change(O&& out, const X& x) {
  const double s = assign_reduce(std::forward<O>(out), x, sum_reducer{}, [](const auto& nv, const auto& ov) {
    return detail::AbsSquare{}(detail::difference(nv, ov));
  });
  return std::sqrt(s);
}

/// out = expr; returns max over out of |new - old|, in one sweep. **Collective**, as
/// assign_reduce: the value is identical on every rank.
template <class O, Operand X>
double assign_max_abs_change(O&& out, const X& x) {
  return assign_reduce(std::forward<O>(out), x, max_reducer{}, [](const auto& nv, const auto& ov) {
    return static_cast<double>(ops::Abs{}(detail::difference(nv, ov)));  // wraps as NumPy
  });
}

namespace detail {
/// The sweep of the reproducible assign_norm2_change / assign_norm2_diff: as
/// assign_reduce_sweep, but |new - second|^2 (in double) goes into an exact accumulator in
/// any order, then one allreduce and one rounding. Returns the exact sum of squares, rounded.
template <bool WithRef, class O, class E>
double assign_norm2_exact_sweep(O&& out_, const E& e, const char* what) {
  const auto out = out_view(out_);
  using V = std::remove_cvref_t<decltype(out)>;
  using T = typename V::value_type;
  constexpr std::size_t M = V::dims;
  Plan<M> p;
  p.what = what;
  setup_assign(p, out, e);
  ExactAcc<double> acc;
  run_assign(p, out, e, [&] {
    execute(p, e, false, false, [&](auto& bt, const RowPos& pos, Index n) {
      const Index os = p.nd > 0 ? p.out_slot.str[static_cast<std::size_t>(p.nd - 1)] : 1;
      T* o = static_cast<T*>(const_cast<void*>(p.out_slot.ptr)) + run_offset(p.out_slot, pos);
      const auto run = [&](auto unit) {
        constexpr bool U = decltype(unit)::value;
        const auto bb = bt;
        acc.add_n(n, [&](Index i) {  // called once per i, in order
          T& slot = U ? o[i] : o[i * os];
          if constexpr (WithRef) {
            const auto v = bb.template at<U>(i);
            const T nv = store_cast<T>(v.first);
            slot = nv;
            return ExactAbsSquare{}(difference(nv, v.second));
          } else {
            const T nv = store_cast<T>(bb.template at<U>(i));
            const double d = ExactAbsSquare{}(difference(nv, slot));
            slot = nv;
            return d;
          }
        });
      };
      if (p.unit)
        run(std::true_type{});
      else
        run(std::false_type{});
    });
  });
  // A replicated output is written on every rank, but its elements are counted once (rank 0's).
  if (holds_everything(out.array()) && out.array().context().rank() != 0) acc = ExactAcc<double>{};
  acc.allreduce(out.array().context().comm());
  return acc.value();
}
}  // namespace detail

/// Reproducible assign_norm2_change: out = expr, and sqrt of the exact sum of |new - old|^2
/// (each square in double) rounded once. **Collective**, as assign; on return out is written
/// and visible everywhere and every rank holds the same value, bitwise identical for every
/// rank count, process grid and distribution of out (see garray::reproducible).
template <class O, Operand X>
double assign_norm2_change(O&& out, const X& x, reproducible_t) {
  if constexpr (detail::evaluate_first<X>)
    return assign_norm2_change(std::forward<O>(out), eval(x), reproducible);
  return std::sqrt(detail::assign_norm2_exact_sweep<false>(std::forward<O>(out), as_expr(x),
                                                            "garray::assign_norm2_change(reproducible)"));
}

/// Reproducible assign_norm2_diff: out = expr, and sqrt of the exact sum of |expr - ref|^2
/// rounded once. **Collective**, as assign_norm2_diff; on return out is written and visible
/// everywhere and every rank holds the same value, bitwise identical for every rank count,
/// process grid and distribution.
template <class O, Operand X, ArrayOperand Ref>
double assign_norm2_diff(O&& out, const X& x, const Ref& ref, reproducible_t) {
  if constexpr (detail::evaluate_first<X>)
    return assign_norm2_diff(std::forward<O>(out), eval(x), ref, reproducible);
  if constexpr (detail::evaluate_first<Ref>)  // ref can throw too: before out is written
    return assign_norm2_diff(std::forward<O>(out), x, eval(ref), reproducible);
  const auto e = BinaryExpr<detail::PairOp, expr_t<X>, expr_t<Ref>>(as_expr(x), as_expr(ref));
  return std::sqrt(detail::assign_norm2_exact_sweep<true>(std::forward<O>(out), e,
                                                           "garray::assign_norm2_diff(reproducible)"));
}

// ---- compound assignment: out op= expr is out = out op expr (same rounding as the serial) ----
// NumPy refuses an in-place operation whose result cannot be cast to the output's type under
// its "same_kind" rule (int_array /= 2, int_array *= 2.5, real_array *= 1j: UFuncTypeError);
// here that does not compile. Casts within a kind are allowed (int32 += int64, float32 *=
// 2.0), as in NumPy.
namespace detail {
template <class R, class T>
inline constexpr bool same_kind_castable = kind_of<R>() <= kind_of<T>();
}  // namespace detail
// The same_kind check of `out sym x`, `out` an expression of element type T.
#define GARRAY_DETAIL_SAME_KIND(out, sym, op)                                                     \
  static_assert(detail::same_kind_castable<typename expr_t<decltype(out op x)>::value_type, T>,   \
                "garray: out " #sym                                                               \
                " x: the result's kind (integer < floating < complex) is "                        \
                "above out's element type, which NumPy's same_kind rule refuses (int_array /= x " \
                "is true division); write assign(out, cast<T>(out " #op " x)) to convert")
#define GARRAY_DETAIL_COMPOUND(sym, op)                               \
  template <class T, std::size_t N, std::size_t M, Operand X>         \
  View<T, N, M> operator sym(View<T, N, M> v, const X& x) {           \
    GARRAY_DETAIL_SAME_KIND(v, sym, op);                              \
    assign(v, v op x);                                                \
    return v;                                                         \
  }                                                                   \
  template <class T, std::size_t N, Operand X>                        \
  GlobalArray<T, N>& operator sym(GlobalArray<T, N>& a, const X& x) { \
    GARRAY_DETAIL_SAME_KIND(a, sym, op);                              \
    assign(a, a op x);                                                \
    return a;                                                         \
  }
///@{
/// out += x is out = out + x (a view, or a whole array), evaluated as assign(): the
/// same rounding as the serial loop. **Collective** over out's context, as assign; on
/// return out is written and visible everywhere. Returns out.
GARRAY_DETAIL_COMPOUND(+=, +)
///@}
///@{
/// out -= x is out = out - x (a view, or a whole array), evaluated as assign(): the
/// same rounding as the serial loop. **Collective** over out's context, as assign; on
/// return out is written and visible everywhere. Returns out.
GARRAY_DETAIL_COMPOUND(-=, -)
///@}
///@{
/// out *= x is out = out * x (a view, or a whole array), evaluated as assign(): the
/// same rounding as the serial loop. **Collective** over out's context, as assign; on
/// return out is written and visible everywhere. Returns out.
GARRAY_DETAIL_COMPOUND(*=, *)
///@}
///@{
/// out /= x is out = out / x (a view, or a whole array), evaluated as assign(): the
/// same rounding as the serial loop. **Collective** over out's context, as assign; on
/// return out is written and visible everywhere. Returns out.
GARRAY_DETAIL_COMPOUND(/=, /)
///@}
#undef GARRAY_DETAIL_COMPOUND
#undef GARRAY_DETAIL_SAME_KIND

// ---- eager evaluation into new arrays ------------------------------------------------------

namespace detail {
/// The distribution eval() gives its result: the first operand's exact map when that operand
/// is a whole array, blocked otherwise.
template <std::size_t M, class T, std::size_t N>
Distribution<M> derived_distribution(const View<T, N, M>& v) {
  if constexpr (M == N) {
    const auto& a = v.array();
    if (v.section() == Section<N>::full(a.shape())) return a.distribution();
  }
  return Distribution<M>::blocked();
}

/// Collective validation of an expression without an output (eval, reductions).
template <std::size_t M, class E>
void prepare_free(Plan<M>& p, const E& e, std::string_view what) {
  p.what = what;
  set_free_driver(p, e);
  prepare(p, e, std::string("expression ") + typeid(E).name());
}
}  // namespace detail

/// A new array holding expr's values (element type V, default the expression's). Its
/// distribution is `dist`, or the first view operand's when that is a whole array, else
/// blocked. **Collective over the operands' context**; throws as assign (before creating
/// anything). The expression needs at least one view or array operand. On return the array
/// is complete and visible everywhere.
template <class V = void, ArrayOperand X>
auto eval(const X& x) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank >= 1,
                "garray::eval: the expression needs a view or array operand with at least one dimension");
  constexpr std::size_t M = static_cast<std::size_t>(E::rank);
  using T = std::conditional_t<std::is_void_v<V>, typename E::value_type, V>;
  detail::Plan<M> p;
  detail::prepare_free(p, e, "garray::eval");
  Distribution<M> dist = Distribution<M>::blocked();
  detail::with_driver_view(e, [&](const auto& v) { dist = detail::derived_distribution(v); });
  GlobalArray<T, M> out(*p.ctx, p.shape, dist);
  detail::assign_fused(out, e, 0);
  return out;
}
/// A new array holding expr's values (element type V, default the expression's),
/// distributed as `dist`. **Collective over the operands' context**, as eval(x); on return
/// the array is complete and visible everywhere.
template <class V = void, ArrayOperand X, std::size_t M>
auto eval(const X& x, const Distribution<M>& dist) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank == static_cast<int>(M),
                "garray::eval: the distribution's rank differs from the expression's");
  using T = std::conditional_t<std::is_void_v<V>, typename E::value_type, V>;
  detail::Plan<M> p;
  detail::prepare_free(p, e, "garray::eval");
  GlobalArray<T, M> out(*p.ctx, p.shape, dist);
  detail::assign_fused(out, e, 0);
  return out;
}

// ---- numpy ufuncs with an explicit output (operator-by-operator codes) -----------------------
// f(a, b, out) evaluates into out (Collective, as assign); f(a, b) returns a new array (eval).
#define GARRAY_DETAIL_UFUNC2(name, expr)                                                    \
  template <Operand A, Operand B, class O>                                                  \
  requires(ArrayOperand<A> || ArrayOperand<B>) void name(const A& a, const B& b, O&& out) { \
    assign(std::forward<O>(out), expr);                                                     \
  }                                                                                         \
  template <Operand A, Operand B>                                                           \
  requires(ArrayOperand<A> || ArrayOperand<B>) auto name(const A& a, const B& b) { return eval(expr); }
///@{
/// numpy.add: `add(a, b, out)` assigns a + b to out (a view or array; **Collective**, as
/// assign: on return out is written and visible everywhere); `add(a, b)` returns a new
/// array (**Collective**, as eval).
GARRAY_DETAIL_UFUNC2(add, a + b)
///@}
///@{
/// numpy.subtract: `subtract(a, b, out)` assigns a - b to out (a view or array; **Collective**, as
/// assign: on return out is written and visible everywhere); `subtract(a, b)` returns a new
/// array (**Collective**, as eval).
GARRAY_DETAIL_UFUNC2(subtract, a - b)
///@}
///@{
/// numpy.multiply: `multiply(a, b, out)` assigns a * b to out (a view or array; **Collective**, as
/// assign: on return out is written and visible everywhere); `multiply(a, b)` returns a new
/// array (**Collective**, as eval).
GARRAY_DETAIL_UFUNC2(multiply, a* b)
///@}
///@{
/// numpy.divide: `divide(a, b, out)` assigns a / b to out (a view or array; **Collective**, as
/// assign: on return out is written and visible everywhere); `divide(a, b)` returns a new
/// array (**Collective**, as eval).
GARRAY_DETAIL_UFUNC2(divide, a / b)
///@}
///@{
/// numpy.minimum: `minimum(a, b, out)` assigns min(a, b) to out (a view or array; **Collective**, as
/// assign: on return out is written and visible everywhere); `minimum(a, b)` returns a new
/// array (**Collective**, as eval).
GARRAY_DETAIL_UFUNC2(minimum, min(a, b))
///@}
///@{
/// numpy.maximum: `maximum(a, b, out)` assigns max(a, b) to out (a view or array; **Collective**, as
/// assign: on return out is written and visible everywhere); `maximum(a, b)` returns a new
/// array (**Collective**, as eval).
GARRAY_DETAIL_UFUNC2(maximum, max(a, b))
///@}
///@{
/// numpy.power: `power(a, b, out)` assigns pow(a, b) to out (a view or array; **Collective**, as
/// assign: on return out is written and visible everywhere); `power(a, b)` returns a new
/// array (**Collective**, as eval).
GARRAY_DETAIL_UFUNC2(power, pow(a, b))
///@}
#undef GARRAY_DETAIL_UFUNC2
#define GARRAY_DETAIL_UFUNC1(name, ...) \
  template <ArrayOperand A, class O>    \
  requires(ArrayOperand<O>) void name(const A& a, O&& out) { assign(std::forward<O>(out), __VA_ARGS__); }
/// numpy.negative with an output: out = -a elementwise. **Collective**, as assign: on
/// return out is written and visible everywhere.
GARRAY_DETAIL_UFUNC1(negative, -a)
/// numpy.absolute with an output: out = abs(a) elementwise. **Collective**, as assign: on
/// return out is written and visible everywhere.
GARRAY_DETAIL_UFUNC1(absolute, abs(a))
/// numpy.sqrt with an output: out = sqrt(a) elementwise. **Collective**, as assign: on
/// return out is written and visible everywhere.
GARRAY_DETAIL_UFUNC1(sqrt, UnaryExpr<ops::Sqrt, expr_t<A>>(as_expr(a)))
/// numpy.exp with an output: out = exp(a) elementwise. **Collective**, as assign: on
/// return out is written and visible everywhere.
GARRAY_DETAIL_UFUNC1(exp, UnaryExpr<ops::Exp, expr_t<A>>(as_expr(a)))
/// numpy.log with an output: out = log(a) elementwise. **Collective**, as assign: on
/// return out is written and visible everywhere.
GARRAY_DETAIL_UFUNC1(log, UnaryExpr<ops::Log, expr_t<A>>(as_expr(a)))
/// numpy.sin with an output: out = sin(a) elementwise. **Collective**, as assign: on
/// return out is written and visible everywhere.
GARRAY_DETAIL_UFUNC1(sin, UnaryExpr<ops::Sin, expr_t<A>>(as_expr(a)))
/// numpy.cos with an output: out = cos(a) elementwise. **Collective**, as assign: on
/// return out is written and visible everywhere.
GARRAY_DETAIL_UFUNC1(cos, UnaryExpr<ops::Cos, expr_t<A>>(as_expr(a)))
#undef GARRAY_DETAIL_UFUNC1
/// Eager negation into a new array: eval(-a). **Collective**, as eval.
template <ArrayOperand A>
auto negative(const A& a) {
  return eval(-a);
}
/// Eager absolute value into a new array: eval(abs(a)). **Collective**, as eval.
template <ArrayOperand A>
auto absolute(const A& a) {
  return eval(abs(a));
}

// ---- basic collective operations -------------------------------------------------------------

/// Sets every element of the array to `value` (views: garray::fill / View::fill in
/// array/view.hpp, or `view = value`). **Collective**, as GlobalArray::fill.
template <class T, std::size_t N, ScalarOperand S>
void fill(GlobalArray<T, N>& a, const S& value) {
  a.fill(detail::store_cast<T>(value));  // converted as an assignment converts
}

/// out[i] = f(i) where i is the element's index in the view (Shape<M>). **Collective**, as
/// assign: on return out is written and visible everywhere.
/// Every rank must pass the same function: its type is part of the collective signature;
/// its captured state is not checked (captures by reference hold rank-local addresses).
template <class O, class F>
void generate(O&& out_, F f) {
  detail::generate_salted(std::forward<O>(out_), std::move(f), 0);
}

namespace detail {
template <class O, class F>
void generate_salted(O&& out_, F f, std::uint64_t salt, std::exception_ptr invalid) {
  const auto out = out_view(out_);
  constexpr std::size_t M = std::remove_cvref_t<decltype(out)>::dims;
  assign_salted(out, index_expr<M>(std::move(f)), salt, std::move(invalid));
}
}  // namespace detail

/// out[i] = start + step * (row-major position of i in the view). **Collective**, as assign
/// (every rank passes the same start and step): on return out is written and visible
/// everywhere.
template <class O, class S = int>
void iota(O&& out_, S start = 0, S step = 1) {
  const auto out = detail::out_view(out_);
  using V = std::remove_cvref_t<decltype(out)>;
  using T = typename V::value_type;
  constexpr std::size_t M = V::dims;
  const Shape<M> rs = row_major_strides(out.shape());
  const std::uint64_t salt = detail::value_hash(detail::value_hash(detail::hash_string("iota"), start), step);
  const T s0 = detail::store_cast<T>(start), st = detail::store_cast<T>(step);
  detail::generate_salted(
      out,
      [rs, s0, st](const Shape<M>& i) {
        Index pos = 0;
        for (std::size_t d = 0; d < M; ++d) pos += i[d] * rs[d];
        // integers wrap as NumPy's (no signed overflow); other types unchanged
        return detail::wrapping<ops::Add, T>(s0, detail::wrapping<ops::Mul, T>(st, static_cast<T>(pos)));
      },
      salt);
}

/// out *= alpha. **Collective**, as assign: on return out is written and visible everywhere.
template <class O, ScalarOperand S>
void scale(O&& out, const S& alpha) {
  auto v = detail::out_view(out);
  assign(v, v * alpha);
}

/// y = y + alpha * x. **Collective**, as assign: on return y is written and visible
/// everywhere.
template <ScalarOperand S, ArrayOperand X, class O>
void axpy(const S& alpha, const X& x, O&& y) {
  auto v = detail::out_view(y);
  assign(v, v + alpha * x);
}

namespace detail {
/// splitmix64: a counter-based generator step (the same value for the same input anywhere).
constexpr std::uint64_t splitmix64(std::uint64_t z) noexcept {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace detail

/// Fills the view with pseudo-random numbers uniform in [lo, hi) (integers: lo..hi-1) that
/// depend only on `seed` and the element's row-major position in the view: the same numbers
/// for any rank count and distribution. **Collective**, as assign (every rank passes the same
/// seed, lo, hi): on return out is written and visible everywhere. Integer elements draw from
/// the integers lo and hi convert to, which must be finite values within int64 with
/// lo < hi (NumPy's "low >= high"): else InvalidArgument on the ranks that passed such
/// bounds, CollectiveMismatch on the others, carried by the assignment's own handshake;
/// nothing written.
template <class O, class S = double>
void fill_random(O&& out_, std::uint64_t seed, S lo = S{0}, S hi = S{1}) {
  const auto out = detail::out_view(out_);
  using V = std::remove_cvref_t<decltype(out)>;
  using T = typename V::value_type;
  const std::uint64_t salt = detail::value_hash(
      detail::value_hash(detail::hash_mix(detail::hash_string("fill_random"), seed), lo), hi);
  std::int64_t ilo = 0, ihi = 0;
  std::exception_ptr invalid;
  if constexpr (std::is_integral_v<T>) {
    // the bounds as the integers drawn from (a double beyond int64 does not convert)
    const auto to_int = [](S v, std::int64_t& out) {
      if constexpr (std::is_floating_point_v<S>) {
        if (!(v >= -0x1p63 && v < 0x1p63)) return false;
      } else if constexpr (std::is_unsigned_v<S>) {
        if (v > static_cast<S>(std::numeric_limits<std::int64_t>::max())) return false;
      }
      out = static_cast<std::int64_t>(v);
      return true;
    };
    // ... and every value drawn, lo to hi - 1, fits T (NumPy: "high is out of bounds for int32")
    if (!to_int(lo, ilo) || !to_int(hi, ihi) || !(ilo < ihi) || ilo < std::numeric_limits<T>::min() ||
        ihi - 1 > std::numeric_limits<T>::max())
      invalid = std::make_exception_ptr(InvalidArgument(detail::message(
          "garray::fill_random", ": integer elements need integer bounds lo < hi with lo and hi - 1 within ",
          type_name<T>(), " (lo ", lo, ", hi ", hi, ")")));
  }
  detail::generate_salted(
      out,
      [rs = row_major_strides(out.shape()), key = detail::splitmix64(seed), lo, hi, ilo,
       ihi](const Shape<V::dims>& i) {
        Index pos = 0;
        for (std::size_t d = 0; d < V::dims; ++d) pos += i[d] * rs[d];
        const std::uint64_t h = detail::splitmix64(key ^ detail::splitmix64(static_cast<std::uint64_t>(pos)));
        if constexpr (std::is_integral_v<T>) {
          // modulo 2^64: no overflow for any ilo < ihi (INT64_MIN, INT64_MAX included)
          const std::uint64_t span = static_cast<std::uint64_t>(ihi) - static_cast<std::uint64_t>(ilo);
          return static_cast<T>(
              static_cast<std::int64_t>(static_cast<std::uint64_t>(ilo) + (span ? h % span : 0)));
        } else {
          (void)ilo;
          (void)ihi;
          using R = decltype(std::real(T{}));  // float for float and complex<float>
          const double u = static_cast<double>(h >> 11) * 0x1.0p-53, dlo = static_cast<double>(lo),
                       dhi = static_cast<double>(hi);
          R r = static_cast<R>(dlo + (dhi - dlo) * u);
          // lo + (hi - lo) * u can round to hi (in R, or in double when lo != 0; NumPy's
          // uniform allows that): the largest R below hi instead, so the values stay in [lo, hi)
          while (dlo < dhi && !(static_cast<double>(r) < dhi) && static_cast<double>(r) > dlo)
            r = std::nextafter(r, static_cast<R>(dlo));
          // ... and a draw just above a lo that R cannot represent can round below it: the
          // smallest R above lo instead (if it is below hi: else no R lies in [lo, hi))
          if (static_cast<double>(r) < dlo) {
            const R up = std::nextafter(r, std::numeric_limits<R>::infinity());
            if (static_cast<double>(up) < dhi) r = up;
          }
          return static_cast<T>(r);
        }
      },
      salt, std::move(invalid));
}

/// Calls f(x) or f(x, i) for every element x (a T&) of the view that this rank owns, with i
/// its index in the view (Shape<M>), in row-major order. **Local**: no communication; other
/// ranks see the writes after the next sync() (or any collective numeric call).
template <class O, class F>
void for_each_local(O&& view_, F&& f) {
  const auto v = detail::out_view(view_);
  using V = std::remove_cvref_t<decltype(v)>;
  using T = typename V::value_type;
  constexpr std::size_t N = V::array_type::dims;
  constexpr std::size_t M = V::dims;
  auto& a = v.array();
  Shape<M> k0{}, k1{};
  auto blk = a.access();  // MPI_Win_sync on entry and exit
  if (!detail::owned_piece<N, M>(v.section(), a.local_box(), k0, k1)) return;
  const auto piece = detail::piece_section(v.section(), k0, k1);
  const auto lay = a.layout_of(a.context().rank());
  T* base = reinterpret_cast<T*>(detail::ArrayAccess::window(a).base()) + lay.offset(piece.start);
  Shape<M> str{};
  {
    std::size_t j = 0;
    for (std::size_t d = 0; d < N; ++d)
      if (!piece.dropped[d]) str[j++] = piece.step[d] * lay.strides[d];
  }
  Shape<M> i = k0;
  while (true) {
    Index off = 0;
    for (std::size_t d = 0; d < M; ++d) off += (i[d] - k0[d]) * str[d];
    if constexpr (std::is_invocable_v<F&, T&, const Shape<M>&>)
      f(base[off], static_cast<const Shape<M>&>(i));
    else
      f(base[off]);
    std::size_t d = M;
    while (d > 0) {
      --d;
      if (++i[d] < k1[d]) break;
      i[d] = k0[d];
      if (d == 0) return;
    }
    if constexpr (M == 0) return;
  }
}

}  // namespace garray

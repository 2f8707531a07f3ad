#pragma once
// Cumulative sums and products (NumPy's cumsum / cumprod; GA's scan), issue 15.
//
//   auto c = garray::cumsum(a, garray::Axis{1});        // np.cumsum(a, axis=1): same shape
//   auto p = garray::cumprod(a[idx[range(_, _, -1)]], garray::Axis{0});
//   auto f = garray::cumsum(a);                          // np.cumsum(a): 1-d, row-major order
//
// Participation: **Collective over the operand's context.** The result is a new array of
// NumPy's type (bool and signed integers: int64, unsigned: uint64, floating point and
// complex: their own type), complete and visible to every rank on return.
// How: the operand (an array, a view with any steps and dropped dimensions, or an
// expression) is first evaluated owner-computes into the result array (its distribution:
// `dist`, or the operand's when it is a whole array, else blocked). Each rank then scans its
// own block along the axis in place, sequentially; when the operand's first array is a whole
// array distributed as the result, evaluation and local scan are one fused pass (each
// element read once, written once). When the axis is split among
// ranks, each rank puts its block totals (one value per line) into row c of a small
// [procs along the axis, other extents...] array (c: its grid coordinate along the axis), and
// after a barrier gets rows 0..c-1 for its lines, combines them in order into an offset per
// line and applies it to its block (the fix-up pass). Only block totals move, never the data.
// Values: integers exactly as NumPy (bitwise, wrapping on overflow as NumPy's int64 does);
// floating point and complex: the same operations in a different association (offset +
// local prefix), so |result - numpy| is within the recursive-summation bound; when no rank
// boundary splits the axis (one block along it, at any np) the result is NumPy's bitwise
// (tests/numeric/promises.cpp).
// Errors (failure rule): an axis >= M throws InvalidArgument on the calling rank (every rank
// when all passed it; CollectiveMismatch on ranks that passed a valid one) at the handshake,
// before anything is created; other handshake failures as assign (SizeMismatch,
// CollectiveMismatch); a failure after it throws on every rank (CollectiveFailure on the
// others). The operand is never written.

#include <garray/numeric/elementwise.hpp>
#include <garray/numeric/expr.hpp>
#include <garray/numeric/reductions.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace garray {

namespace detail {

/// a + b or a * b, wrapping for integers (NumPy's behaviour; no signed overflow in C++).
template <bool Prod, class A>
A scan_op(const A& a, const A& b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(Prod ? static_cast<U>(static_cast<U>(a) * static_cast<U>(b))
                               : static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return Prod ? a * b : a + b;
  }
}

/// In-place distributed prefix of `out` along axis `ax` (see the file comment).
/// **Collective over out's context**; on return out holds the scan, visible to every rank.
template <bool Prod, class Acc, std::size_t M>
void scan_in_place(GlobalArray<Acc, M>& out, std::size_t ax, std::string_view what, bool scanned = false) {
  const Context ctx = out.context();
  const MPI_Comm comm = ctx.comm();
  const auto& dist = out.distribution();
  const Box<M> box = out.local_box();
  const bool have = !box.empty();
  Index outer = 1, len = 0, inner = 1;
  if (have) {
    for (std::size_t d = 0; d < ax; ++d) outer *= box.extent(d);
    len = box.extent(ax);
    for (std::size_t d = ax + 1; d < M; ++d) inner *= box.extent(d);
  }
  const int nb = dist.procs()[ax];
  std::vector<Acc> tot;
  // 1. Each rank scans its own block along the axis, line by line (inner index fastest).
  run_concluded(comm, what, [&] {
    fault_point("scan.local");
    if (!have || len == 0) return;
    auto blk = out.access();
    Acc* a = blk.data();
    if (!scanned) {
      for (Index o = 0; o < outer; ++o) {
        Acc* base = a + o * len * inner;
        if (inner == 1) {
          Acc r = base[0];
          for (Index k = 1; k < len; ++k) base[k] = r = scan_op<Prod>(r, base[k]);
          continue;
        }
        for (Index k = 1; k < len; ++k) {
          const Acc* prev = base + (k - 1) * inner;
          Acc* cur = base + k * inner;
          for (Index i = 0; i < inner; ++i) cur[i] = scan_op<Prod>(prev[i], cur[i]);
        }
      }
    }
    if (nb > 1) {
      tot.resize(static_cast<std::size_t>(outer * inner));
      for (Index o = 0; o < outer; ++o)
        for (Index i = 0; i < inner; ++i)
          tot[static_cast<std::size_t>(o * inner + i)] = a[(o * len + len - 1) * inner + i];
    }
  });
  if (nb > 1) {
    // 2. Block totals: row c of [nb, other extents...] holds the totals of the blocks at grid
    //    coordinate c along the axis (cells of empty blocks keep the identity).
    Shape<M> tshape = out.shape();
    tshape[ax] = nb;
    // Empty blocks' cells keep the identity: 1, or for sums -0.0 where there is one (the
    // exact additive identity, -0.0 + x == x bitwise; +0.0 would turn a -0.0 into +0.0, so
    // the sign of a zero would depend on the distribution).
    GlobalArray<Acc, M> totals(ctx, tshape, Distribution<M>::blocked(), Shape<M>{}, uninitialized);
    if constexpr (Prod)
      totals.fill(Acc{1});
    else if constexpr (std::is_floating_point_v<Acc>)
      totals.fill(Acc{-0.0});
    else if constexpr (is_complex<Acc>::value)
      totals.fill(Acc{-0.0, -0.0});
    else
      totals.fill(Acc{});
    const int c = ctx.rank() < dist.nblocks() ? dist.coords(ctx.rank())[ax] : 0;
    Section<M> s;
    for (std::size_t d = 0; d < M; ++d) {
      s.start[d] = have ? box.lo[d] : 0;
      s.step[d] = 1;
      s.count[d] = have ? box.extent(d) : 0;
    }
    s.start[ax] = c;
    s.count[ax] = 1;
    run_concluded(comm, what, [&] {
      if (have && len > 0) totals.put_section(s, tot);
      totals.fence();
    });
    // 3. Fix-up: offset = totals of the non-empty blocks before mine along the axis (rows
    //    0..c-1 whose block has extent > 0), combined in order, applied to every element.
    //    Empty blocks are left out rather than combined as an identity: 1 + 0i is no
    //    identity of IEEE complex multiplication ((1, 0) * (-0, -1) is (+0, -1), and
    //    (1, 0) * (inf, 1) is (inf, NaN)), so a block after empty ones would change its values.
    //    No block before mine holds data: nothing to apply, NumPy's bits.
    const std::vector<Index>& starts = dist.bounds(ax);
    std::vector<Index> used;  // the rows to combine
    for (int r = 0; r < c; ++r)
      if (starts[static_cast<std::size_t>(r) + 1] > starts[static_cast<std::size_t>(r)]) used.push_back(r);
    run_concluded(comm, what, [&] {
      if (!have || len == 0 || used.empty()) return;
      s.start[ax] = 0;
      s.count[ax] = c;
      std::vector<Acc> rows(static_cast<std::size_t>(s.size()));
      totals.get_section(s, rows);
      std::vector<Acc> off(static_cast<std::size_t>(outer * inner));
      for (Index o = 0; o < outer; ++o)
        for (Index i = 0; i < inner; ++i) {
          Acc v = rows[static_cast<std::size_t>((o * c + used[0]) * inner + i)];
          for (std::size_t u = 1; u < used.size(); ++u)
            v = scan_op<Prod>(v, rows[static_cast<std::size_t>((o * c + used[u]) * inner + i)]);
          off[static_cast<std::size_t>(o * inner + i)] = v;
        }
      auto blk = out.access();
      Acc* a = blk.data();
      for (Index o = 0; o < outer; ++o)
        for (Index k = 0; k < len; ++k) {
          Acc* cur = a + (o * len + k) * inner;
          const Acc* f = off.data() + o * inner;
          for (Index i = 0; i < inner; ++i) cur[i] = scan_op<Prod>(f[i], cur[i]);
        }
    });
  }
  out.sync();
}

/// The handshake of a scan: the operand, the axis (or `flat`: the axis-less form, which
/// makes other collective calls after it) and the kind; a bad axis throws InvalidArgument on
/// this rank (every rank where it is bad; CollectiveMismatch elsewhere).
template <std::size_t M, class E>
void scan_prepare(Plan<M>& p, const E& e, Axis given, std::string_view what, bool flat = false) {
  p.what = what;
  set_free_driver(p, e);
  std::exception_ptr bad;
  const std::size_t axis = axis_index<M>(given);  // Axis{-1} and Axis{M - 1} agree
  if (axis >= M) bad = std::make_exception_ptr(InvalidArgument(message(what, ": axis ", given.value, " for a ", M, "-d operand")));
  p.sig = hash_mix(p.sig, flat ? ~std::uint64_t{0} : static_cast<std::uint64_t>(axis));
  // A bad axis is this rank's invalid argument at the handshake (see prepare).
  prepare(p, e,
          std::string("expression ") + typeid(E).name() + (flat ? ", flattened" : ", axis " + std::to_string(axis)),
          bad);
}

template <bool Prod, ArrayOperand X, std::size_t M>
auto scan_axis(const X& x, Axis axis, const std::optional<Distribution<M>>& dist, std::string_view what,
               bool flat = false) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank == static_cast<int>(M), "garray: the distribution's rank differs from the operand's");
  using Acc = sum_t<typename E::value_type>;
  Plan<M> p;
  scan_prepare(p, e, axis, what, flat);
  Distribution<M> d = Distribution<M>::blocked();
  if (dist) d = *dist;
  else
    with_driver_view(e, [&](const auto& v) { d = derived_distribution(v); });
  GlobalArray<Acc, M> out(*p.ctx, p.shape, d, Shape<M>{}, uninitialized);
  // Fused (one pass: read x, write the local scan) when the driver is a whole array
  // distributed as the result, so this rank's piece of x is its block of the result. The
  // test uses global facts only (sections, resolved distributions): the same on every rank.
  bool fused = false;
  with_driver_view(e, [&](const auto& v) {
    using VV = std::remove_cvref_t<decltype(v)>;
    using AA = std::remove_cvref_t<decltype(v.array())>;
    if constexpr (VV::dims == M && AA::dims == M) {
      const auto& a = v.array();
      fused = v.section() == Section<M>::full(a.shape()) && !a.distribution().is_replicated() &&
              a.distribution().signature() == out.distribution().signature();
    }
  });
  if (!fused) {
    assign(out, cast<Acc>(e));
    scan_in_place<Prod>(out, axis_index<M>(axis), what);
    return out;
  }
  const std::size_t ax = axis_index<M>(axis);
  run_plan(p, e, [&] {
    if (p.empty) return;
    auto blk = out.access();
    Acc* base = blk.data();
    const Box<M>& b = blk.box();
    Shape<M> ext{};
    for (std::size_t d = 0; d < M; ++d) ext[d] = b.extent(d);
    const Shape<M> bstr = row_major_strides(ext);
    const Index S = bstr[ax];
    execute(p, e, true, true, [&](auto& bt, const RowPos& pos, Index n) {
      Index off = 0;
      for (std::size_t d = 0; d < M; ++d) off += (pos.abs[d] - b.lo[d]) * bstr[d];
      Acc* o = base + off;
      const auto run = [&](auto unit) {
        constexpr bool U = decltype(unit)::value;
        const auto bb = bt;
        if (ax == M - 1) {
          Index i = 0;
          Acc r;
          if (pos.abs[M - 1] == b.lo[M - 1]) {
            r = static_cast<Acc>(bb.template at<U>(0));
            o[0] = r;
            i = 1;
          } else {
            r = o[-1];
          }
          for (; i < n; ++i) o[i] = r = scan_op<Prod>(r, static_cast<Acc>(bb.template at<U>(i)));
        } else if (pos.abs[ax] == b.lo[ax]) {
          for (Index i = 0; i < n; ++i) o[i] = static_cast<Acc>(bb.template at<U>(i));
        } else {
          const Acc* prev = o - S;
          for (Index i = 0; i < n; ++i) o[i] = scan_op<Prod>(prev[i], static_cast<Acc>(bb.template at<U>(i)));
        }
      };
      if (p.unit) run(std::true_type{});
      else run(std::false_type{});
    });
  });
  scan_in_place<Prod>(out, ax, what, true);
  return out;
}

/// Calls f(section, flat start) for at most 2M - 1 sections of `sh` that together cover the
/// row-major positions [a, b) in order.
template <std::size_t M, class F>
void flat_sections(const Shape<M>& sh, const Shape<M>& below, Shape<M>& fixed, std::size_t d, Index a, Index b,
                   F& f) {
  if (a >= b) return;
  const Index I = below[d];
  const auto emit = [&](Index i0, Index i1) {
    Section<M> s;
    Index flat = 0;
    for (std::size_t j = 0; j < M; ++j) {
      s.step[j] = 1;
      if (j < d) {
        s.start[j] = fixed[j];
        s.count[j] = 1;
        flat += fixed[j] * below[j];
      } else if (j == d) {
        s.start[j] = i0;
        s.count[j] = i1 - i0;
        flat += i0 * below[j];
      } else {
        s.start[j] = 0;
        s.count[j] = sh[j];
      }
    }
    f(s, flat);
  };
  const Index i0 = a / I, i1 = b / I, ra = a % I, rb = b % I;
  if (i0 == i1) {
    fixed[d] = i0;
    flat_sections(sh, below, fixed, d + 1, ra, rb, f);
    return;
  }
  Index full0 = i0;
  if (ra != 0) {
    fixed[d] = i0;
    flat_sections(sh, below, fixed, d + 1, ra, I, f);
    full0 = i0 + 1;
  }
  if (i1 > full0) emit(full0, i1);
  if (rb != 0) {
    fixed[d] = i1;
    flat_sections(sh, below, fixed, d + 1, 0, rb, f);
  }
}

/// The axis-less form: the operand flattened in row-major order into a new 1-d (blocked)
/// array, then scanned.
template <bool Prod, ArrayOperand X>
auto scan_flat(const X& x, std::string_view what) {
  const auto e = as_expr(x);
  using E = decltype(e);
  static_assert(E::rank >= 1, "garray: a scan needs a view or array operand with at least one dimension");
  constexpr std::size_t M = static_cast<std::size_t>(E::rank);
  using Acc = sum_t<typename E::value_type>;
  if constexpr (M == 1) {
    // (flat: the handshake tells it from cumsum(x, Axis{0}), whose result is distributed like x)
    return scan_axis<Prod>(x, Axis{0}, std::optional<Distribution<1>>(Distribution<1>::blocked()), what,
                           true);
  } else {
    Plan<M> p;
    scan_prepare(p, e, Axis{0}, what, true);
    GlobalArray<Acc, M> t(*p.ctx, p.shape, Distribution<M>::blocked(), Shape<M>{}, uninitialized);
    assign(t, cast<Acc>(e));
    GlobalArray<Acc, 1> flat(*p.ctx, Shape<1>{volume(p.shape)}, Distribution<1>::blocked(), Shape<1>{}, uninitialized);
    run_concluded(p.ctx->comm(), what, [&] {
      const Box<1> b = flat.local_box();
      if (b.empty()) return;
      auto blk = flat.access();
      Acc* dst = blk.data();
      Shape<M> below{}, fixed{};
      Index v = 1;
      for (std::size_t d = M; d-- > 0;) {
        below[d] = v;
        v *= p.shape[d];
      }
      auto f = [&](const Section<M>& s, Index start) {
        t.get_section(s, std::span<Acc>(dst + (start - b.lo[0]), static_cast<std::size_t>(s.size())));
      };
      flat_sections(p.shape, below, fixed, 0, b.lo[0], b.hi[0], f);
    });
    scan_in_place<Prod>(flat, 0, what);
    return flat;
  }
}
}  // namespace detail

/// np.cumsum(x, axis=k): a new array of x's shape whose element i is the sum of x's elements
/// 0..i[k] along axis k (the other indices fixed); result type as NumPy (int64 for bool and
/// signed integers, the element type for floating point and complex). Distributed as x when
/// x is a whole array, else blocked. **Collective**; on return the result is complete and
/// visible to every rank; x is unchanged. Throws InvalidArgument for an axis >= M (see the
/// file comment).
template <ArrayOperand X>
auto cumsum(const X& x, Axis axis) {
  constexpr std::size_t M = static_cast<std::size_t>(expr_t<X>::rank);
  return detail::scan_axis<false>(x, axis, std::optional<Distribution<M>>{}, "garray::cumsum");
}
/// np.cumsum(x, axis=k) into a new array distributed as `dist`. **Collective**, as
/// cumsum(x, axis); `dist` is part of the create handshake.
template <ArrayOperand X, std::size_t M>
auto cumsum(const X& x, Axis axis, const Distribution<M>& dist) {
  return detail::scan_axis<false>(x, axis, std::optional<Distribution<M>>(dist), "garray::cumsum");
}
/// np.cumprod(x, axis=k): as cumsum with products (integers wrap as NumPy's int64).
/// **Collective**, as cumsum(x, axis).
template <ArrayOperand X>
auto cumprod(const X& x, Axis axis) {
  constexpr std::size_t M = static_cast<std::size_t>(expr_t<X>::rank);
  return detail::scan_axis<true>(x, axis, std::optional<Distribution<M>>{}, "garray::cumprod");
}
/// np.cumprod(x, axis=k) into a new array distributed as `dist`. **Collective**, as
/// cumsum(x, axis).
template <ArrayOperand X, std::size_t M>
auto cumprod(const X& x, Axis axis, const Distribution<M>& dist) {
  return detail::scan_axis<true>(x, axis, std::optional<Distribution<M>>(dist), "garray::cumprod");
}
/// np.cumsum(x) without an axis: x flattened in row-major order, scanned, as a new 1-d
/// blocked array of volume(shape) elements. **Collective**, as cumsum(x, axis).
template <ArrayOperand X>
auto cumsum(const X& x) {
  return detail::scan_flat<false>(x, "garray::cumsum");
}
/// np.cumprod(x) without an axis: as cumsum(x) with products. **Collective**.
template <ArrayOperand X>
auto cumprod(const X& x) {
  return detail::scan_flat<true>(x, "garray::cumprod");
}

}  // namespace garray

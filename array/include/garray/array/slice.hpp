#pragma once
// Slices with numpy semantics, and their canonical form over a base array (Section).
//
//   using garray::idx, garray::range, garray::all, garray::_;
//   idx[range(1, -1)][all][3]     // numpy a[1:-1, :, 3]       -> Slice<3, 2>
//   idx[range(_, _, -2)]          // numpy a[::-2]             -> Slice<1, 1>
//   idx[range(2, _)]              // numpy a[2:]
//   idx[ellipsis][0]              // numpy a[..., 0]
//
// A Slice<K, M> holds K per-dimension items (ranges or integers); M of them are ranges and
// keep their dimension. Dimensions past K are taken whole, as in numpy. Normalising a slice
// against a shape gives a Section: per base dimension (start, step, count) and whether an
// integer dropped it. count = len(range(start, stop, step)) after numpy's clamping of
// out-of-range starts/stops; integer indices (negative ones count from the end) must be in
// range or BoundsError is thrown; step 0 throws InvalidSlice.
//
// Slice arithmetic: applying a slice to a section (`compose`) gives the section of the base
// array that numpy would select by applying the slices one after another. Pure index math,
// no MPI.

#include <array>
#include <concepts>
#include <cstddef>
#include <garray/array/box.hpp>
#include <garray/runtime/error.hpp>
#include <limits>
#include <ostream>
#include <string_view>
#include <type_traits>

namespace garray {

/// Placeholder for an omitted bound: range(_, _, -1) is numpy's [::-1].
struct Omitted {};
/// The omitted bound: `range(_, 3)` is numpy's `[:3]`.
inline constexpr Omitted _{};

/// Selects a whole dimension: numpy's `:`.
struct All {};
/// The whole dimension: `idx[all][3]` is numpy's `[:, 3]`.
inline constexpr All all{};

namespace detail {
/// An integer as an Index: an unsigned value beyond Index's range (`v.size() - 1` of an empty
/// v) saturates to Index's maximum, out of range like the value given, instead of wrapping
/// to a negative index that counts from the end.
template <std::integral I>
constexpr Index to_index(I v) noexcept {
  if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(Index))
    return v > static_cast<I>(std::numeric_limits<Index>::max()) ? std::numeric_limits<Index>::max()
                                                                 : static_cast<Index>(v);
  else
    return static_cast<Index>(v);
}
}  // namespace detail

/// A bound of a range: an index or omitted. Every member function is Local.
class Bound {
 public:
  /// Local. An omitted bound (`_`): the start or end of the dimension, by the step's sign.
  constexpr Bound(Omitted) noexcept {}
  /// Local. The index `v` (negative counts from the end; out-of-range bounds are clamped
  /// when the slice is normalised).
  template <std::integral I>
  constexpr Bound(I v) noexcept : value_(detail::to_index(v)), set_(true) {}
  /// Local. False for an omitted bound.
  constexpr bool set() const noexcept { return set_; }
  /// Local. The index as given (0 when omitted).
  constexpr Index value() const noexcept { return value_; }

 private:
  Index value_ = 0;
  bool set_ = false;
};

/// numpy's start:stop:step. `range(a, b)`, `range(a, b, s)`, `range(_, _, -1)`, `range()`.
struct range {
  Bound start = _;  ///< first index (omitted: the first in the step's direction)
  Bound stop = _;   ///< index where the range stops, excluded (omitted: past the last)
  Index step = 1;   ///< distance between selected indices; negative walks backwards, 0 is invalid
  /// Local. The whole dimension: numpy's `:`.
  constexpr range() noexcept = default;
  /// Local. numpy's `start_:stop_:step_`; nothing is checked until the slice is applied
  /// (InvalidSlice for a zero step then). An unsigned step beyond Index's range saturates
  /// (it selects the first index only, as numpy's).
  template <std::integral S = Index>
  constexpr range(Bound start_, Bound stop_, S step_ = 1) noexcept
      : start(start_), stop(stop_), step(detail::to_index(step_)) {}
};

/// numpy's `...`: as many whole dimensions as the other items leave. At most one per slice.
struct Ellipsis {};
/// numpy's `...`: `idx[ellipsis][0]` is `a[..., 0]`.
inline constexpr Ellipsis ellipsis{};

/// One item of a slice: a range (keeps the dimension) or an integer (drops it).
struct SliceItem {
  bool is_index = false;  ///< an integer index (drops the dimension), not a range
  Index value = 0;        ///< the integer when is_index
  range r{};              ///< the range when !is_index
};

/// K slice items, M of them ranges, plus optionally one ellipsis. Build with
/// `idx[...][...]`. An ellipsis is not an item: it stands for the dimensions the items leave
/// (all kept), so the result rank is M + (rank - K) with or without it; only where the
/// untouched dimensions sit changes (`ellipsis_at` = number of items before it).
template <std::size_t K, std::size_t M>
struct Slice {
  static constexpr std::size_t items_count = K;  ///< number of items (K)
  static constexpr std::size_t kept = M;         ///< number of items that keep their dimension (M)
  std::array<SliceItem, K> items{};              ///< the items, first dimension first
  int ellipsis_at = -1;         ///< items before the ellipsis; -1 = none (same as at the end)
  bool ellipsis_twice = false;  ///< a second ellipsis was given (InvalidSlice when applied)

  /// Local. This slice followed by the range `r` (keeps its dimension).
  constexpr Slice<K + 1, M + 1> operator[](range r) const noexcept { return extend<M + 1>({false, 0, r}); }
  /// Local. This slice followed by a whole dimension (keeps it).
  constexpr Slice<K + 1, M + 1> operator[](All) const noexcept { return extend<M + 1>({false, 0, range{}}); }
  /// Local. This slice followed by the integer index `i` (drops its dimension; negative
  /// counts from the end; checked when the slice is applied: BoundsError).
  template <std::integral I>
  constexpr Slice<K + 1, M> operator[](I i) const noexcept {
    return extend<M>({true, detail::to_index(i), range{}});
  }
  /// Local. This slice with an ellipsis after its items so far (a second one makes applying
  /// the slice throw InvalidSlice).
  constexpr Slice operator[](Ellipsis) const noexcept {
    Slice s = *this;
    if (s.ellipsis_at >= 0) s.ellipsis_twice = true;
    else s.ellipsis_at = static_cast<int>(K);
    return s;
  }

 private:
  template <std::size_t M2>
  constexpr Slice<K + 1, M2> extend(SliceItem it) const noexcept {
    Slice<K + 1, M2> s;
    for (std::size_t k = 0; k < K; ++k) s.items[k] = items[k];
    s.items[K] = it;
    s.ellipsis_at = ellipsis_at;
    s.ellipsis_twice = ellipsis_twice;
    return s;
  }
};

/// The empty slice: start of every `idx[...]` chain; on its own it selects everything.
inline constexpr Slice<0, 0> idx{};

/// Canonical selection over a base array of rank N: element k (0 <= k < count[d]) of
/// dimension d is base index start[d] + k * step[d]. Dropped dimensions have count 1.
template <std::size_t N>
struct Section {
  Shape<N> start{};               ///< base index of the first selected element, per dimension
  Shape<N> step{};                ///< base-index distance between selected elements (may be negative)
  Shape<N> count{};               ///< number of selected elements per dimension (1 if dropped)
  std::array<bool, N> dropped{};  ///< the dimension was selected by an integer and is dropped

  /// Local. The section selecting the whole array of shape `shape`.
  static constexpr Section full(const Shape<N>& shape) noexcept {
    Section s;
    for (std::size_t d = 0; d < N; ++d) {
      s.start[d] = 0;
      s.step[d] = 1;
      s.count[d] = shape[d];
    }
    return s;
  }
  /// Local. Number of selected elements.
  constexpr Index size() const noexcept { return volume(count); }
  /// Local. Number of dimensions not dropped.
  constexpr std::size_t rank() const noexcept {
    std::size_t r = 0;
    for (bool b : dropped) r += b ? 0 : 1;
    return r;
  }
  /// Local. Extents of the kept dimensions, in order (the shape of the selection as an
  /// array); the first `R` of them if there are more.
  template <std::size_t R>
  constexpr Shape<R> kept_shape() const noexcept {
    Shape<R> s{};
    std::size_t j = 0;
    for (std::size_t d = 0; d < N; ++d)
      if (!dropped[d] && j < R) s[j++] = count[d];
    return s;
  }
  /// Local. Smallest box of base indices containing the selection (empty if nothing
  /// selected).
  constexpr Box<N> bounding_box() const noexcept {
    Box<N> b;
    for (std::size_t d = 0; d < N; ++d) {
      if (count[d] == 0) {
        b.lo[d] = b.hi[d] = 0;
        continue;
      }
      const Index last = start[d] + (count[d] - 1) * step[d];
      b.lo[d] = std::min(start[d], last);
      b.hi[d] = std::max(start[d], last) + 1;
    }
    return b;
  }
  /// Local. Equal field by field.
  friend constexpr bool operator==(const Section&, const Section&) = default;
};

/// Local. Writes `s` as "[start:stepxcount, ...]" (a dropped dimension as its index), for
/// messages; returns `os`.
template <std::size_t N>
std::ostream& operator<<(std::ostream& os, const Section<N>& s) {
  os << '[';
  for (std::size_t d = 0; d < N; ++d) {
    os << (d ? ", " : "");
    if (s.dropped[d]) os << s.start[d];
    else os << s.start[d] << ':' << s.step[d] << 'x' << s.count[d];
  }
  return os << ']';
}

namespace detail {

// The error paths of slice normalisation, compiled once into libgarray_array
// (array/src/slice.cpp): InvalidSlice / BoundsError with the call's name, values and rank.
[[noreturn]] void slice_step_zero(std::string_view what, std::size_t dim);
[[noreturn]] void index_out_of_range(std::string_view what, Index i, Index len, std::size_t dim);
[[noreturn]] void slice_two_ellipses(std::string_view what);
[[noreturn]] void slice_too_many_indices(std::string_view what, std::size_t k, std::size_t kept);
[[noreturn]] void slice_step_overflow(std::string_view what, Index step, std::size_t dim);

/// Ceiling division for b > 0.
constexpr Index ceil_div(Index a, Index b) noexcept { return a >= 0 ? a / b + (a % b != 0 ? 1 : 0) : -((-a) / b); }
/// Floor division for b > 0.
constexpr Index floor_div(Index a, Index b) noexcept { return a >= 0 ? a / b : -((-a) / b + ((-a) % b != 0 ? 1 : 0)); }

/// numpy's slice(start, stop, step).indices(len) followed by len(range(...)).
/// Returns {start, count}. Throws InvalidSlice for step 0.
GARRAY_DETAIL_INLINE std::array<Index, 2> normalize_range(const range& r, Index len, std::size_t dim,
                                            std::string_view what) {
  const Index step = r.step;
  if (step == 0) slice_step_zero(what, dim);
  const Index lower = step < 0 ? -1 : 0;
  const Index upper = step < 0 ? len - 1 : len;
  auto clamp = [&](const Bound& b, Index dflt) {
    if (!b.set()) return dflt;
    Index v = b.value();
    if (v < 0) {
      v += len;
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  const Index start = clamp(r.start, step < 0 ? upper : lower);
  const Index stop = clamp(r.stop, step < 0 ? lower : upper);
  Index count = 0;
  if (step == 1) count = stop > start ? stop - start : 0;  // common case: no division
  else if (step > 0 && stop > start) count = ceil_div(stop - start, step);
  else if (step < 0 && start > stop)
    count = ceil_div(start - stop, step == std::numeric_limits<Index>::min() ? std::numeric_limits<Index>::max() : -step);
  return {start, count};
}

/// An integer index (negative counts from the end) checked against [0, len).
inline Index normalize_index(Index i, Index len, std::size_t dim, std::string_view what) {
  const Index v = i < 0 ? i + len : i;
  if (v < 0 || v >= len)
    index_out_of_range(what, i, len, dim);
  return v;
}

}  // namespace detail

namespace detail {

/// A slice with its item count moved from the type into a value: what the compiled
/// library reads (GlobalArray's out-of-line select), so a user translation unit does not
/// instantiate the normalisation for every slice type it writes.
struct SliceRef {
  const SliceItem* items = nullptr;  ///< `k` items, first dimension first
  std::size_t k = 0;                 ///< number of items (the slice's K)
  int ellipsis_at = -1;              ///< as Slice::ellipsis_at
  bool ellipsis_twice = false;       ///< as Slice::ellipsis_twice
};
template <std::size_t K, std::size_t M>
constexpr SliceRef slice_ref(const Slice<K, M>& s) noexcept {
  return {s.items.data(), K, s.ellipsis_at, s.ellipsis_twice};
}

/// compose() over a SliceRef: the one implementation of slice arithmetic.
template <std::size_t N>
GARRAY_DETAIL_INLINE Section<N> compose_ref(const Section<N>& base, const SliceRef& s, std::string_view what) {
  // Every field of `out` is written exactly once with a scalar store: copying `base` as a
  // whole first would read freshly written scalars back with vector loads, a store-forwarding
  // stall that doubled the cost of a small get.
  const std::size_t K = s.k;
  Section<N> out;
  std::size_t kept = 0;  // dimensions the base selection keeps
  for (std::size_t d = 0; d < N; ++d) kept += base.dropped[d] ? 0 : 1;
  if (s.ellipsis_twice) slice_two_ellipses(what);
  if (K > kept) slice_too_many_indices(what, K, kept);
  // Kept dimension j takes item j before the ellipsis, item j - (kept - K) after it, and is
  // left whole in between (no ellipsis = an ellipsis after the last item).
  const std::size_t e = s.ellipsis_at < 0 ? K : static_cast<std::size_t>(s.ellipsis_at);
  const std::size_t tail_from = kept - (K - e);
  std::size_t j = 0;  // kept-dimension number
  for (std::size_t d = 0; d < N; ++d) {
    const Index b_start = base.start[d], b_step = base.step[d], len = base.count[d];
    const bool whole = base.dropped[d] || (j >= e && j < tail_from);
    if (whole) {
      out.start[d] = b_start;
      out.step[d] = b_step;
      out.count[d] = len;
      out.dropped[d] = base.dropped[d];
      if (!base.dropped[d]) ++j;
      continue;
    }
    const SliceItem& it = s.items[j < e ? j : j - (kept - K)];
    if (it.is_index) {
      const Index i = normalize_index(it.value, len, j, what);
      out.start[d] = b_start + i * b_step;
      out.step[d] = b_step;
      out.count[d] = 1;
      out.dropped[d] = true;
    } else {
      const auto [st, cnt] = normalize_range(it.r, len, j, what);
      out.start[d] = cnt == 0 ? b_start : b_start + st * b_step;  // canonical empty: start stays in range
      // The composed step only matters when two or more elements are selected, and then it
      // fits (|step| < extent). With fewer it is canonically +-1, so no later step
      // arithmetic can overflow (a huge step that selects one element is fine in numpy).
      if (cnt <= 1) out.step[d] = (b_step < 0) == (it.r.step < 0) ? 1 : -1;
      else if (__builtin_mul_overflow(b_step, it.r.step, &out.step[d]))
        slice_step_overflow(what, it.r.step, j);
      out.count[d] = cnt;
      out.dropped[d] = false;
    }
    ++j;
  }
  return out;
}

}  // namespace detail

/// Local (pure index math). Returns the section of the base array that applying slice `s`
/// to the kept dimensions of `base` selects (slice arithmetic). Kept dimensions without an
/// item (beyond K, or at the ellipsis) are selected whole. `what` names the calling operation in error messages.
/// Throws InvalidSlice (step 0) or BoundsError (integer out of range); `base` is unchanged.
template <std::size_t N, std::size_t K, std::size_t M>
GARRAY_DETAIL_INLINE Section<N> compose(const Section<N>& base, const Slice<K, M>& s,
                                        std::string_view what = "slice") {
  return detail::compose_ref(base, detail::slice_ref(s), what);
}

/// Local (pure index math). Returns the section slice `s` selects from an array of shape
/// `shape` (compose() over the whole array); throws as compose().
template <std::size_t N, std::size_t K, std::size_t M>
GARRAY_DETAIL_INLINE Section<N> normalize(const Shape<N>& shape, const Slice<K, M>& s, std::string_view what = "slice") {
  static_assert(K <= N, "garray: too many indices for the array's number of dimensions");
  return compose(Section<N>::full(shape), s, what);
}

}  // namespace garray

#pragma once
// Box<N>: a half-open N-d index box [lo, hi). Pure index math, no MPI.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>

/// Forces inlining of the few small functions on the one-sided transfer path, where a call
/// boundary costs a store-forwarding stall or more than the work itself.
#if defined(__GNUC__)
#define GARRAY_DETAIL_INLINE [[gnu::always_inline]] inline
#else
#define GARRAY_DETAIL_INLINE inline
#endif

namespace garray {

/// Signed 64-bit index used for every extent, index and stride.
using Index = std::int64_t;

/// Extents (or an index, or strides) in N dimensions.
template <std::size_t N>
using Shape = std::array<Index, N>;

/// Local (pure index math). Returns the number of elements of a shape (1 for N == 0).
template <std::size_t N>
constexpr Index volume(const Shape<N>& s) noexcept {
  Index v = 1;
  for (auto e : s) v *= e;
  return v;
}

/// Local (pure index math). Returns the row-major strides (in elements) of a dense array
/// of shape `s`: the last dimension has stride 1.
template <std::size_t N>
constexpr Shape<N> row_major_strides(const Shape<N>& s) noexcept {
  Shape<N> st{};
  Index acc = 1;
  for (std::size_t d = N; d-- > 0;) {
    st[d] = acc;
    acc *= s[d];
  }
  return st;
}

/// Half-open box [lo, hi) in N dimensions. Empty when any hi <= lo. Every member function
/// is Local (pure index math).
template <std::size_t N>
struct Box {
  Shape<N> lo{};  ///< first index in each dimension (inclusive)
  Shape<N> hi{};  ///< one past the last index in each dimension (exclusive)

  /// Local. True if the box holds no index (some hi[d] <= lo[d]).
  constexpr bool empty() const noexcept {
    for (std::size_t d = 0; d < N; ++d)
      if (hi[d] <= lo[d]) return true;
    return false;
  }
  /// Local. Number of indices in dimension `d` (0 if hi[d] <= lo[d]).
  constexpr Index extent(std::size_t d) const noexcept { return std::max<Index>(0, hi[d] - lo[d]); }
  /// Local. extent(d) for every dimension.
  constexpr Shape<N> extents() const noexcept {
    Shape<N> e{};
    for (std::size_t d = 0; d < N; ++d) e[d] = extent(d);
    return e;
  }
  /// Local. Number of indices in the box (0 if empty).
  constexpr Index volume() const noexcept { return garray::volume(extents()); }
  /// Local. True if lo[d] <= i[d] < hi[d] in every dimension.
  constexpr bool contains(const Shape<N>& i) const noexcept {
    for (std::size_t d = 0; d < N; ++d)
      if (i[d] < lo[d] || i[d] >= hi[d]) return false;
    return true;
  }
  /// Local. Equal lo and hi (two empty boxes with different bounds compare unequal).
  friend constexpr bool operator==(const Box&, const Box&) = default;
};

/// Local (pure index math). Returns the intersection of two boxes (possibly empty).
template <std::size_t N>
constexpr Box<N> intersect(const Box<N>& a, const Box<N>& b) noexcept {
  Box<N> r;
  for (std::size_t d = 0; d < N; ++d) {
    r.lo[d] = std::max(a.lo[d], b.lo[d]);
    r.hi[d] = std::max(r.lo[d], std::min(a.hi[d], b.hi[d]));
  }
  return r;
}

/// Local. Writes `b` as "[lo0:hi0, lo1:hi1)" (for messages); returns `os`.
template <std::size_t N>
std::ostream& operator<<(std::ostream& os, const Box<N>& b) {
  os << '[';
  for (std::size_t d = 0; d < N; ++d) os << (d ? ", " : "") << b.lo[d] << ':' << b.hi[d];
  return os << ')';
}

/// Where a rank's block lives in its window memory (GlobalArray::layout_of): the block `box`
/// is stored row-major inside a frame padded by the ghost width on each side of every
/// dimension. Element i of the block is at element offset
/// origin + sum_d (i[d] - box.lo[d]) * strides[d]; `elements` counts the padded frame (0 for
/// an empty block). For kernels that walk window memory directly (apps/laplace).
template <std::size_t N>
struct BlockLayout {
  Box<N> box{};        ///< the owned block, global indices (ghosts excluded)
  Shape<N> strides{};  ///< row-major element strides of the padded frame
  Index origin = 0;    ///< element offset of box.lo in the window memory (past the ghosts)
  Index elements = 0;  ///< elements of window memory, ghosts included (0 for an empty block)

  /// Local (pure index math). The element offset of global index `i` (inside box) in the window memory.
  Index offset(const Shape<N>& i) const noexcept {
    Index off = origin;
    for (std::size_t d = 0; d < N; ++d) off += (i[d] - box.lo[d]) * strides[d];
    return off;
  }
};

}  // namespace garray

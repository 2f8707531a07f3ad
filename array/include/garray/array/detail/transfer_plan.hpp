#pragma once
// Transfer plans: which part of a section each owner holds, and the strided geometry of
// that part on both sides (owner block memory, dense user buffer). Pure index math, no MPI.
//
// A section selects, per base dimension d, base indices start[d] + k*step[d] for
// 0 <= k < count[d]. For an owner whose block is [lo, hi) the selected k form a contiguous
// range [k0, k1) per dimension, so every owner piece is a box in k-space: one piece per
// owner, moved with one MPI call (or one strided memory copy).

#include <array>
#include <complex>
#include <cstddef>
#include <cstring>
#include <garray/array/distribution.hpp>
#include <garray/array/slice.hpp>
#include <garray/runtime/window.hpp>
#include <type_traits>

namespace garray::detail {

/// The k-range [k0, k1) of section dimension (start, step, count) inside block [lo, hi).
GARRAY_DETAIL_INLINE std::array<Index, 2> k_range(Index start, Index step, Index count, Index lo,
                                                  Index hi) noexcept {
  Index k0, k1;
  if (step == 1) {  // the common case, without divisions
    k0 = lo - start;
    k1 = hi - start;
  } else if (step == -1) {
    k0 = start - hi + 1;
    k1 = start - lo + 1;
  } else if (step > 0) {
    k0 = ceil_div(lo - start, step);
    k1 = ceil_div(hi - start, step);
  } else {
    const Index t = -step;
    k0 = floor_div(start - hi, t) + 1;
    k1 = floor_div(start - lo, t) + 1;
  }
  k0 = std::max<Index>(k0, 0);
  k1 = std::min<Index>(k1, count);
  return {k0, std::max(k0, k1)};
}

using garray::BlockLayout;  // box.hpp

template <std::size_t N>
BlockLayout<N> block_layout(const Box<N>& box, const Shape<N>& ghost) noexcept {
  BlockLayout<N> l;
  l.box = box;
  if (box.empty()) return l;
  Shape<N> padded{};
  for (std::size_t d = 0; d < N; ++d) padded[d] = box.extent(d) + 2 * ghost[d];
  l.strides = row_major_strides(padded);
  for (std::size_t d = 0; d < N; ++d) l.origin += ghost[d] * l.strides[d];
  l.elements = volume(padded);
  return l;
}

/// One owner's part of a transfer, already in strided form.
template <std::size_t N>
struct Piece {
  int rank = 0;
  Shape<N> count{};      ///< elements per dimension
  Index block_off = 0;   ///< element offset of the first element in the owner's block
  Shape<N> block_str{};  ///< strides in the owner's block (signed)
  Index buf_off = 0;     ///< element offset of the first element in the dense buffer
  Shape<N> buf_str{};    ///< strides in the dense buffer (row-major over section counts)
  Index size() const noexcept { return volume(count); }
};

/// Calls f(const Piece<N>&) once for every owner holding part of `sec`; blocks are stored
/// with `ghost` cells of padding (all zero for none). Never allocates.
template <std::size_t N, class F>
void for_each_piece(const Distribution<N>& dist, const Section<N>& sec, const Shape<N>& ghost, F&& f) {
  const Box<N> bb = sec.bounding_box();
  if (bb.empty()) return;
  const Shape<N> buf_str = row_major_strides(sec.count);
  dist.for_each_block(bb, [&](int r, const Box<N>& blk) {
    const BlockLayout<N> lay = block_layout(blk, ghost);
    const Shape<N>& bstr = lay.strides;
    Piece<N> p;
    p.rank = r;
    p.block_off = lay.origin;
    for (std::size_t d = 0; d < N; ++d) {
      const auto [k0, k1] = k_range(sec.start[d], sec.step[d], sec.count[d], blk.lo[d], blk.hi[d]);
      if (k1 <= k0) return;  // the stride skips this block entirely
      p.count[d] = k1 - k0;
      p.block_off += (sec.start[d] + k0 * sec.step[d] - blk.lo[d]) * bstr[d];
      p.block_str[d] = sec.step[d] * bstr[d];
      p.buf_off += k0 * buf_str[d];
      p.buf_str[d] = buf_str[d];
    }
    f(p);
  });
}

/// A joint strided iteration space over two regions A and B with the same shape, reduced to
/// as few dimensions as possible: unit dimensions dropped, dimensions merged where both
/// regions are contiguous across them. Dimension 0 is outermost.
template <std::size_t N>
struct Strided2 {
  int nd = 0;
  bool empty = false;
  std::array<Index, N> count{}, sa{}, sb{};
};

template <std::size_t N>
Strided2<N> collapse(const Shape<N>& count, const Shape<N>& sa, const Shape<N>& sb) noexcept {
  Strided2<N> r;
  for (std::size_t d = 0; d < N; ++d) {
    if (count[d] == 0) {
      r.empty = true;
      return r;
    }
    if (count[d] == 1) continue;
    if (r.nd > 0) {
      const int i = r.nd - 1;  // try merging the previous (outer) kept dim with this one
      if (r.sa[i] == sa[d] * count[d] && r.sb[i] == sb[d] * count[d]) {
        r.count[i] *= count[d];
        r.sa[i] = sa[d];
        r.sb[i] = sb[d];
        continue;
      }
    }
    r.count[r.nd] = count[d];
    r.sa[r.nd] = sa[d];
    r.sb[r.nd] = sb[d];
    ++r.nd;
  }
  return r;
}

/// Calls run(a, b, n, sa_inner, sb_inner) for every innermost run of the iteration space,
/// with a/b pointing at the run's first elements.
template <std::size_t N, class TA, class TB, class Run>
GARRAY_DETAIL_INLINE void for_each_run(const Strided2<N>& it, TA* a, TB* b, Run&& run) {
  if (it.empty) return;
  if (it.nd <= 1) {
    run(a, b, it.nd ? it.count[0] : Index{1}, it.nd ? it.sa[0] : 1, it.nd ? it.sb[0] : 1);
    return;
  }
  const int outer = it.nd - 1;
  std::array<Index, N> k{};
  while (true) {
    Index oa = 0, ob = 0;
    for (int d = 0; d < outer; ++d) {
      oa += k[static_cast<std::size_t>(d)] * it.sa[static_cast<std::size_t>(d)];
      ob += k[static_cast<std::size_t>(d)] * it.sb[static_cast<std::size_t>(d)];
    }
    run(a + oa, b + ob, it.count[static_cast<std::size_t>(outer)], it.sa[static_cast<std::size_t>(outer)],
        it.sb[static_cast<std::size_t>(outer)]);
    int d = outer - 1;
    for (; d >= 0; --d) {
      if (++k[static_cast<std::size_t>(d)] < it.count[static_cast<std::size_t>(d)]) break;
      k[static_cast<std::size_t>(d)] = 0;
    }
    if (d < 0) return;
  }
}

/// memcpy in pieces of at most 256 KiB. glibc switches to non-temporal stores for copies
/// beyond a fraction of the cache size, which loses (measured: ~25% at 1-8 MiB) when the
/// destination is about to be used, as it is after a get; chunking keeps regular stores.
inline void chunked_memcpy(void* dst, const void* src, std::size_t bytes) noexcept {
  constexpr std::size_t chunk = std::size_t{1} << 18;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  while (bytes > chunk) {
    std::memcpy(d, s, chunk);
    d += chunk;
    s += chunk;
    bytes -= chunk;
  }
  std::memcpy(d, s, bytes);
}

/// dst[i] = src[i] over a strided region (dst strides sa, src strides sb).
template <std::size_t N, class T>
void strided_copy(const Strided2<N>& it, T* dst, const T* src) {
  if (it.nd == 0 && !it.empty) {  // one element (the smallest get/put): no call, no loop
    *dst = *src;
    return;
  }
  for_each_run(it, dst, src, [](T* a, const T* b, Index n, Index sa, Index sb) {
    if (sa == 1 && sb == 1) {
      chunked_memcpy(a, b, static_cast<std::size_t>(n) * sizeof(T));
    } else {
      for (Index i = 0; i < n; ++i) a[i * sa] = b[i * sb];
    }
  });
}

/// The real type of a complex element type (void for real types).
template <class T>
struct complex_part {
  using type = void;
};
template <class R>
struct complex_part<std::complex<R>> {
  using type = R;
};

/// a[i] += b[i], i < n. The source must not overlap the destination (as for
/// MPI_Accumulate's origin buffer). Runs go to the runtime's ISA-dispatched kernels; a
/// complex run is a real run of twice the length.
template <class T>
void add_run(T* a, const T* b, Index n) noexcept {
  const auto len = static_cast<std::size_t>(n);
  using R = typename complex_part<T>::type;
  if constexpr (!std::is_void_v<R>)
    add_into(reinterpret_cast<R*>(a), reinterpret_cast<const R*>(b), 2 * len);
  else
    add_into(a, b, len);
}

/// dst[i] += src[i] over a strided region (dst strides sa, src strides sb): the body of an
/// accumulate into a shared window, run under the target segment's lock.
template <std::size_t N, class T>
void strided_add(const Strided2<N>& it, T* dst, const T* src) noexcept {
  for_each_run(it, dst, src, [](T* a, const T* b, Index n, Index sa, Index sb) {
    if (sa == 1 && sb == 1) {
      add_run(a, b, n);
    } else {
      for (Index i = 0; i < n; ++i) a[i * sa] += b[i * sb];
    }
  });
}

}  // namespace garray::detail

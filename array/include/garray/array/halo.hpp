#pragma once
// Ghost cells (GA's GA_Update_ghosts, MpiArray's padding).
//
// An array created with a ghost width g (per dimension) stores each non-empty block inside
// a frame of g cells on every side; access() exposes the frame, indexed globally from
// lo - g to hi + g. update_ghosts() fills the frame with the neighbours' current values:
//
//     periodic = {false, true}, g = {1, 1}, 2 x 2 ranks, rank 0's frame:
//          x  x  x  x  x  x          x: outside the array along the non-periodic dim 0,
//          c  .  .  .  .  b             left untouched
//          c  .  r0 .  .  b          b: from rank 1 (right neighbour)
//          c  .  .  .  .  b          c: from rank 1 too, wrapped around dim 1 (periodic)
//          e  d  d  d  d  f          d: from rank 2 (below), e/f: corners from rank 3
//
//   garray::GlobalArray<double, 2> u(ctx, {n, n}, Dist::blocked(), {1, 1});
//   garray::update_ghosts(u);                     // collective; corners included
//   auto blk = u.access();                        // blk.view()[lo0 - 1][j] is a ghost cell
//
// Every ghost region (3^N - 1 of them: faces, edges, corners) is fetched with one strided
// get per owner straight into the frame, no packing and no temporaries. A ghost width larger
// than a neighbour's block is fine: the region then spans several owners, and each is read.
// Along a periodic dimension the frame wraps around (even several times, if g exceeds the
// extent). Ranks with empty blocks have no frame and only take part in the synchronisation.

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <garray/array/box.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/movement.hpp>  // detail::box_section
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <string>
#include <vector>

namespace garray {

namespace detail {

/// floor(a / b) for b > 0.
inline Index floor_div_pos(Index a, Index b) noexcept { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// Calls f(src_box, dst_lo) for every piece of the ghost frame of `box` (width `ghost`) in an
/// array of `shape`: the frame cells whose (unwrapped) global index starts at dst_lo hold the
/// array elements src_box. Pieces outside a non-periodic dimension are skipped; periodic
/// dimensions wrap. Pure index math.
template <std::size_t N, class F>
void for_each_ghost_piece(const Box<N>& box, const Shape<N>& ghost, const Shape<N>& shape,
                          const std::array<bool, N>& periodic, F&& f) {
  if (box.empty()) return;
  struct Seg {
    Index dst, src, len;
  };
  // Per dimension and side (0 low ghost, 1 interior, 2 high ghost): the wrapped segments.
  std::array<std::array<std::vector<Seg>, 3>, N> segs;
  for (std::size_t d = 0; d < N; ++d) {
    const Index n = shape[d], g = ghost[d], lo = box.lo[d], hi = box.hi[d];
    segs[d][1].push_back({lo, lo, hi - lo});
    if (g == 0) continue;
    const Index xs[2][2] = {{lo - g, lo}, {hi, hi + g}};
    for (int side = 0; side < 2; ++side) {
      const Index x = xs[side][0], y = xs[side][1];
      auto& out = segs[d][side == 0 ? 0 : 2];
      if (!periodic[d]) {
        const Index a = std::max<Index>(x, 0), b = std::min<Index>(y, n);
        if (a < b) out.push_back({a, a, b - a});
        continue;
      }
      for (Index k = floor_div_pos(x, n); k <= floor_div_pos(y - 1, n); ++k) {
        const Index a = std::max(x, k * n), b = std::min(y, (k + 1) * n);
        if (a < b) out.push_back({a, a - k * n, b - a});
      }
    }
  }
  std::array<int, N> side{};
  while (true) {
    bool interior = true;
    for (std::size_t d = 0; d < N; ++d) interior = interior && side[d] == 1;
    if (!interior) {
      // Cartesian product of this combination's segments.
      std::array<std::size_t, N> k{};
      bool empty = false;
      for (std::size_t d = 0; d < N; ++d) empty = empty || segs[d][static_cast<std::size_t>(side[d])].empty();
      while (!empty) {
        Box<N> src;
        Shape<N> dst{};
        for (std::size_t d = 0; d < N; ++d) {
          const Seg& s = segs[d][static_cast<std::size_t>(side[d])][k[d]];
          src.lo[d] = s.src;
          src.hi[d] = s.src + s.len;
          dst[d] = s.dst;
        }
        f(src, dst);
        std::size_t d = N;
        bool done = true;
        while (d > 0) {
          --d;
          if (++k[d] < segs[d][static_cast<std::size_t>(side[d])].size()) {
            done = false;
            break;
          }
          k[d] = 0;
        }
        if (done) break;
      }
    }
    std::size_t d = N;
    bool done = true;
    while (d > 0) {
      --d;
      if (++side[d] < 3) {
        done = false;
        break;
      }
      side[d] = 0;
    }
    if (done) return;
  }
}

}  // namespace detail

/// Fills every rank's ghost cells with the current values of the elements they mirror,
/// corners included; along dimension d the frame wraps around if `periodic[d]`, otherwise
/// ghost cells outside the array are left unchanged. **Collective over the array's context.**
/// Completes everyone's outstanding operations and local writes first (as sync()); on return
/// every frame is filled and the array is consistent (as after sync()). Arrays without ghost
/// cells just synchronise. Throws CollectiveMismatch on every rank if ranks pass different
/// arrays or periodic flags (before anything moves).
template <Element T, std::size_t N>
void update_ghosts(GlobalArray<T, N>& a, const std::array<bool, N>& periodic = {}) {
  std::uint64_t sig = detail::hash_mix(detail::hash_string("garray::update_ghosts"), a.id());
  for (std::size_t d = 0; d < N; ++d) sig = detail::hash_mix(sig, periodic[d] ? 1 : 0);
  // As sync(), with our own signature: my writes complete and visible, then the handshake.
  detail::ArrayAccess::begin_collective(a, sig, "garray::update_ghosts", [] {});
  bool any = false;
  for (auto g : a.ghost()) any = any || g > 0;
  // Frames filled everywhere at the closing agreement; nobody changes its block before its
  // neighbours have read it; a failure on one rank reaches every rank (failure rule).
  detail::run_concluded(a.context().comm(), "garray::update_ghosts", [&] {
    detail::fault_point("update_ghosts.fetch");
    if (!any || a.local_box().empty()) return;
    auto blk = a.access();
    T* base = blk.data();
    const auto lay = a.layout_of(a.context().rank());
    std::vector<Request> reqs;
    detail::for_each_ghost_piece(a.local_box(), a.ghost(), a.shape(), periodic,
                                 [&](const Box<N>& src, const Shape<N>& dst) {
                                   reqs.push_back(detail::ArrayAccess::get_section_strided_nb(
                                       a, detail::box_section(src), base + lay.offset(dst), lay.strides));
                                 });
    for (auto& r : reqs) r.wait();
  });
  ++a.context().stats().syncs;
}

// update_ghosts for the six element types at 1-4 dimensions is compiled once into
// libgarray_array (array/src/instantiate.cpp.in).
#ifndef GARRAY_INSTANTIATING
#define GARRAY_DETAIL_HALO(T)                                                               \
  extern template void update_ghosts<T, 1>(GlobalArray<T, 1>&, const std::array<bool, 1>&); \
  extern template void update_ghosts<T, 2>(GlobalArray<T, 2>&, const std::array<bool, 2>&); \
  extern template void update_ghosts<T, 3>(GlobalArray<T, 3>&, const std::array<bool, 3>&); \
  extern template void update_ghosts<T, 4>(GlobalArray<T, 4>&, const std::array<bool, 4>&);
GARRAY_FOR_EACH_ELEMENT_TYPE(GARRAY_DETAIL_HALO)
#undef GARRAY_DETAIL_HALO
#endif

}  // namespace garray

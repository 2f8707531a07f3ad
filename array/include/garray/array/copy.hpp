#pragma once
// copy(dst, src): numpy's `dst[...] = src[...]` between views of any two arrays of one group.
//
//   garray::copy(b[idx[range(1, -1)]], a[idx[range(_, _, -2)]]);   // different distributions
//   garray::copy(u[idx[range(1, _)]], u[idx[range(_, -1)]]);       // overlapping: numpy result
//   garray::copy(b, a);                                             // whole arrays
//   garray::copy(b[idx[range(_, _, -1)]], a);                        // a view and an array
//
// Owner-computes, one-sided:
//
//   dst owners:   rank 0 | rank 1 | rank 2          src owners:  rank 0 | rank 1
//                 [piece]                                        <-get-  <-get-
//
//   1. agree   every rank completes its outstanding operations on both arrays; one
//              allreduce checks that all ranks called copy with the same views
//   2. fetch   each rank takes the part of dst stored in its block, maps it to the
//              matching part of src and fetches it with one get (one MPI call or one
//              strided copy per src owner). Unless src may overlap dst, the data lands
//              directly in block memory (strided), with no temporary.
//   3. [barrier]  only when src and dst are views of the same array whose selections may
//              overlap: nobody writes before everybody has read (numpy semantics: the
//              result is as if src was read completely first)
//   4. write   the fetched piece is stored into the local block (strided copy)
//   5. sync    a sync of dst: on return every rank sees the result
//
// Ghost cells of dst are not updated (call update_ghosts()).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/view.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <memory>
#include <span>
#include <string>

namespace garray {

namespace detail {

/// The sub-section of `sec` selecting view-coordinate box `k` (M kept dimensions).
template <std::size_t N, std::size_t M>
Section<N> sub_section(const Section<N>& sec, const Box<M>& k) noexcept {
  Section<N> s = sec;
  std::size_t j = 0;
  for (std::size_t d = 0; d < N; ++d) {
    if (sec.dropped[d]) continue;
    s.start[d] = sec.start[d] + k.lo[j] * sec.step[d];
    s.count[d] = k.hi[j] - k.lo[j];
    ++j;
  }
  return s;
}

}  // namespace detail

/// numpy's `dst[...] = src[...]`. **Collective over dst's context** (src's array must be on
/// the same group). Views may belong to different arrays with different distributions, or
/// to the same array, overlapping or not: the result is always as if src was read
/// completely before anything was written. Owner-computes: each rank fetches, with one
/// one-sided get, the source of the part of dst in its block, and writes it locally. On
/// return every rank sees the result (the call ends with a sync of dst); operations issued
/// before the call by any rank on either array are complete before it reads.
/// src may also broadcast to dst (NumPy: an extent-1 dimension of src stretches, e.g. a
/// (1, n) row into every row of an (m, n) destination): each rank then fetches the source
/// piece once and replicates it locally (operands of fewer dimensions broadcast through
/// the numeric layer's `view = expr`).
/// Throws before any data moves, on every rank: SizeMismatch (shapes do not broadcast),
/// InvalidArgument (arrays on different groups), CollectiveMismatch (ranks passed
/// different views). Views of different ranks do not compile.
template <Element T, std::size_t N1, std::size_t N2, std::size_t M>
void copy(const View<T, N1, M>& dst, const View<T, N2, M>& src) {
  const std::string what = "garray::copy<" + std::string(type_name<T>()) + "," + std::to_string(N1) + "<-" +
                           std::to_string(N2) + ">";
  detail::join_if_stale(what, dst, src);
  auto& da = dst.array();
  auto& sa = src.array();
  // 1. validate locally, complete earlier operations and agree: a rank that fails reports
  //    its own reason, the others get CollectiveMismatch
  const bool same = static_cast<const void*>(&da) == static_cast<const void*>(&sa);
  std::uint64_t sig = detail::hash_mix(detail::hash_string("garray::copy"), da.id());
  sig = detail::section_hash(sig, dst.section());
  sig = detail::hash_mix(sig, sa.id());
  sig = detail::section_hash(sig, src.section());
  const detail::Window* wins[2] = {&detail::ArrayAccess::window(da), &detail::ArrayAccess::window(sa)};
  detail::begin_collective(
      std::span<const detail::Window* const>(wins, same ? 1 : 2), da.context().comm(), sig, what,
      dst.describe() + " <- " + src.describe(), [&] {
        for (std::size_t j = 0; j < M; ++j)
          if (src.shape()[j] != dst.shape()[j] && src.shape()[j] != 1)
            detail::raise<SizeMismatch>(what, ": source shape ", detail::seq(src.shape()),
                                        " does not broadcast to destination shape ", detail::seq(dst.shape()));
        int cmp = MPI_UNEQUAL;
        detail::check_mpi(MPI_Comm_compare(da.context().comm(), sa.context().comm(), &cmp),
                          "MPI_Comm_compare");
        if (cmp != MPI_IDENT && cmp != MPI_CONGRUENT)
          detail::raise<InvalidArgument>(what, ": source ", detail::array_label(sa.id()), " and destination ",
                                         detail::array_label(da.id()),
                                         cmp == MPI_SIMILAR
                                             ? " live on contexts that number the same ranks differently "
                                               "(a split with another key, or RankOrder::node)"
                                             : " live on different process groups");
      });

  // Same array and intersecting bounding boxes: reading and writing may overlap. A
  // broadcast source goes the same way (fetch the source piece, then replicate it).
  const bool bcast = dst.shape() != src.shape();
  bool overlap = bcast;
  if constexpr (N1 == N2) {
    if (same) {
      const Box<N1> b = intersect(dst.section().bounding_box(), src.section().bounding_box());
      overlap = bcast || (!b.empty() && dst.size() > 0);  // a broadcast source never takes the direct path
    }
  }

  // 2. fetch the source of my piece of dst
  const int me = da.context().rank();
  const auto p = detail::piece_of(da.distribution(), dst.section(), da.ghost(), me);
  std::unique_ptr<T[]> tmp;
  detail::Strided2<N1> wr{};  // block strides (a) x dense temp strides (b)
  const MPI_Comm comm = da.context().comm();
  detail::run_concluded(comm, what, [&] {
    detail::fault_point("copy.fetch");
    if (!p) return;
    const Section<N2> ssub = detail::sub_section(src.section(), dst.box_of(me));
    const Index n = p->size();
    if (!overlap) {
      auto blk = da.access();
      // Straight into block memory: element k of the source piece goes to the block
      // position of view element k (src dims map to dst dims in kept order).
      Shape<N2> out_str{};
      std::array<Index, M == 0 ? 1 : M> kept_str{};
      for (std::size_t d = 0, j = 0; d < N1; ++d)
        if (!dst.section().dropped[d]) kept_str[j++] = p->block_str[d];
      for (std::size_t d = 0, j = 0; d < N2; ++d) out_str[d] = src.section().dropped[d] ? 0 : kept_str[j++];
      detail::ArrayAccess::get_section_strided(sa, ssub, blk.data() + p->block_off, out_str);
    } else if (bcast) {
      // The source piece: dst's piece with stretched dimensions cut to index 0; its dense
      // copy is read with stride 0 along them.
      Box<M> b = dst.box_of(me);
      for (std::size_t j = 0; j < M; ++j)
        if (src.shape()[j] != dst.shape()[j]) {
          b.lo[j] = 0;
          b.hi[j] = 1;
        }
      const Section<N2> bsub = detail::sub_section(src.section(), b);
      const Index bn = bsub.size();
      Shape<M> ext{};
      for (std::size_t j = 0; j < M; ++j) ext[j] = b.hi[j] - b.lo[j];
      const Shape<M> rs = row_major_strides(ext);
      Shape<N1> tstr{};
      for (std::size_t d = 0, j = 0; d < N1; ++d)
        if (!dst.section().dropped[d]) {
          tstr[d] = src.shape()[j] != dst.shape()[j] ? 0 : rs[j];
          ++j;
        }
      wr = detail::collapse(p->count, p->block_str, tstr);
      tmp.reset(new T[static_cast<std::size_t>(bn)]);
      auto& peak = da.context().stats().temp_bytes_peak;
      peak = std::max<std::int64_t>(peak, bn * static_cast<Index>(sizeof(T)));
      sa.get_section(bsub, std::span<T>(tmp.get(), static_cast<std::size_t>(bn)));
    } else {
      wr = detail::collapse(p->count, p->block_str, row_major_strides(p->count));
      tmp.reset(new T[static_cast<std::size_t>(n)]);
      auto& peak = da.context().stats().temp_bytes_peak;
      peak = std::max<std::int64_t>(peak, n * static_cast<Index>(sizeof(T)));
      sa.get_section(ssub, std::span<T>(tmp.get(), static_cast<std::size_t>(n)));
    }
  });  // the agreement doubles as the barrier: with overlap, write only after every rank read
  if (overlap) {
    // 3. write the snapshot (local stores only), then a closing agreement: the result is
    //    visible everywhere on return
    detail::run_concluded(comm, what, [&] {
      detail::fault_point("copy.write");
      if (!p) return;
      auto blk = da.access();
      detail::strided_copy(wr, blk.data() + p->block_off, tmp.get());
    });
  }
  ++da.context().stats().syncs;
}

/// Views of different ranks: a readable compile-time error (never callable, so neither
/// collective nor one-sided).
template <Element T, std::size_t N1, std::size_t N2, std::size_t M1, std::size_t M2>
requires(M1 != M2) void copy(const View<T, N1, M1>&, const View<T, N2, M2>&) {
  static_assert(M1 == M2, "garray::copy: destination and source views have different numbers of dimensions");
}

/// `copy(dst, src.view())`: a view filled from a whole array. **Collective**, as above.
template <Element T, std::size_t N1, std::size_t M, std::size_t N2>
void copy(const View<T, N1, M>& dst, GlobalArray<T, N2>& src) {
  copy(dst, src.view());
}
/// `copy(dst.view(), src)`: a whole array filled from a view. **Collective**, as above.
template <Element T, std::size_t N1, std::size_t N2, std::size_t M>
void copy(GlobalArray<T, N1>& dst, const View<T, N2, M>& src) {
  copy(dst.view(), src);
}

/// Whole-array copy: `copy(dst.view(), src.view())`. **Collective over dst's context.**
/// Distributions may differ; src's shape must equal or broadcast to dst's (SizeMismatch on
/// every rank otherwise).
template <Element T, std::size_t N>
void copy(GlobalArray<T, N>& dst, GlobalArray<T, N>& src) {
  copy(dst.view(), src.view());
}

}  // namespace garray

#pragma once
// Data movement between whole arrays, ranks and distributions.
//
//   auto a = garray::scatter_from(ctx, 0, full, shape, Dist::slab(0));  // root's data, cut up
//   auto b = garray::redistribute(a, Dist::slab(1));                      // rows -> columns
//   auto t = garray::transpose(a, {1, 0});                                // t[j][i] == a[i][j]
//   auto full2 = garray::gather(b, 0);        // boost::multi_array on rank 0 (empty elsewhere)
//   auto every = garray::allgather(b);        // ... on every rank
//   auto w = garray::from_local(ctx, mine, 0);  // ranks' arrays stacked along axis 0
//
// How data moves (why these choices):
//   scatter_from   the root put()s the whole array once: one piece per owner, each a single
//                  strided copy straight into the owner's window memory (a memcpy on shared
//                  windows, one MPI_Put with derived datatypes otherwise). MPI_Scatterv would
//                  need a pack on the root, the message copy and an unpack on every rank.
//   gather         the root get()s the whole array into its result (one copy per owner);
//   allgather      every rank does the same.
//   redistribute   every rank fetches its new block straight into its new window memory with
//   transpose      one get per old owner (a strided destination, so ghost padding and the
//                  transposition cost nothing extra). Nothing is packed, no rank ever holds
//                  more than its own new block, and no temporaries are allocated:
//                  Stats::temp_bytes_peak does not grow.
//   from_local     one copy of each rank's local array into its window memory.
//
//   Row slabs -> column slabs (redistribute, 2 ranks): rank r fetches the quarter it already
//   had by a local copy and the other quarter from the other rank.
//     before: +-------+    after: +---+---+
//             |  r0   |           |   |   |
//             +-------+           |r0 |r1 |
//             |  r1   |           |   |   |
//             +-------+           +---+---+
//
// All functions here are collective over the array's (or given) context and validate before
// anything moves: a call that throws has changed nothing and throws on every rank.

#include <mpi.h>

#include <array>
#include <boost/multi_array.hpp>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <garray/array/box.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <numeric>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace garray {

namespace detail {

/// The common front of movement collectives that do not start from an array: runs the
/// local checks `check` (which throw garray errors), then one handshake. Every rank throws:
/// its own error if its check failed, `E` (with that rank's message) if only another rank's
/// check failed, CollectiveMismatch if ranks passed different arguments (`sig`). E is
/// CollectiveMismatch (the contract's rule) except where one rank holds the collective's
/// data (scatter_from's root: SizeMismatch everywhere, semantics.md "Handshake").
/// **Collective.**
template <class E, class Check>
void collective_check(const Context& ctx, std::uint64_t sig, std::string_view what, const std::string& args,
                      Check&& check) {
  ctx.check_valid(what);
  std::exception_ptr err;
  LocalFault fault = LocalFault::none;
  try {
    check();
  } catch (const Error& e) {
    err = std::current_exception();
    fault = LocalFault::invalid;
    // an E (the data holder's own check) is marked `data` here, to tell it apart from an
    // ordinary invalid argument, which gives the others CollectiveMismatch as everywhere
    if constexpr (!std::is_same_v<E, CollectiveMismatch>)
      if (dynamic_cast<const E*>(&e)) fault = LocalFault::data;
  } catch (...) {  // std::bad_alloc ...: carried like an invalid argument, nobody left waiting
    err = std::current_exception();
    fault = LocalFault::invalid;
  }
  const Agreement a = agree_with_errors(ctx.comm(), sig, fault);
  if (a.failed_rank >= 0 && a.fault == LocalFault::data) {
    // The broadcast of the data holder's message first, on every rank: ranks in another
    // collective (where `data` reads as an invalid call) take part in it too.
    const std::string text = peer_message(ctx.comm(), a.failed_rank, err);
    // Ranks that passed different arguments (a different root) judged different data: the
    // disagreement is the error, on every rank of this call.
    if (!a.signatures_equal) throw_signature_mismatch(what, args);
    if (err) std::rethrow_exception(err);
    raise<E>(what, ": invalid argument on another rank (rank ", a.failed_rank, ": ", text, ")");
  }
  throw_if_disagreed(ctx.comm(), a, err, what, args);  // the standard: "invalid call on rank r (...)"
}

/// The closing step of a movement collective: `work()` is this rank's part; if it throws on
/// any rank, every rank throws (failure rule). Doubles as the barrier after the work.
template <class Work>
void finish_collective(const Context& ctx, std::string_view what, Work&& work) {
  run_concluded(ctx.comm(), what, std::forward<Work>(work));
}

template <Element T, std::size_t N>
std::uint64_t movement_sig(std::string_view what, const Shape<N>& shape) {
  std::uint64_t h = hash_mix(hash_string(what), static_cast<std::uint64_t>(type_code<T>()));
  h = hash_mix(h, N);
  for (auto e : shape) h = hash_mix(h, static_cast<std::uint64_t>(e));
  return h;
}

template <Element T, std::size_t N>
std::string movement_name(std::string_view fn) {
  return "garray::" + std::string(fn) + "<" + std::string(type_name<T>()) + "," + std::to_string(N) + ">";
}

inline void check_root(int root, int nranks, std::string_view what) {
  if (root < 0 || root >= nranks)
    raise<InvalidArgument>(what, ": root ", root, " out of range [0, ", nranks, ")");
}

/// The box `b` as a canonical section (unit steps).
template <std::size_t N>
Section<N> box_section(const Box<N>& b) noexcept {
  Section<N> s;
  for (std::size_t d = 0; d < N; ++d) {
    s.start[d] = b.lo[d];
    s.step[d] = 1;
    s.count[d] = b.extent(d);
  }
  return s;
}

/// A new array that the caller overwrites entirely: without ghost cells no zeroing pass (and
/// no barrier); with ghost cells zeroed, so frames read as 0 until update_ghosts().
template <Element T, std::size_t N>
GlobalArray<T, N> make_overwritten(const Context& ctx, const Shape<N>& shape, const Distribution<N>& dist,
                                   const Shape<N>& ghost) {
  bool frames = false;
  for (auto g : ghost) frames = frames || g > 0;
  if (frames) return GlobalArray<T, N>(ctx, shape, dist, ghost);
  return GlobalArray<T, N>(ctx, shape, dist, ghost, uninitialized);
}

/// Fetches `src`'s elements `sec` into this rank's block memory of `dst` at the strides
/// `dst_str` (already permuted as needed), starting at element `dst_off`. One-sided.
template <Element T, std::size_t N>
void fetch_into_block(const GlobalArray<T, N>& src, const Section<N>& sec, GlobalArray<T, N>& dst,
                      Index dst_off, const Shape<N>& dst_str) {
  auto blk = dst.access();  // Win_sync around our local stores into the window
  if (sec.size() == 0) return;
  T* base = blk.data() + dst_off;
  if (dst_str == row_major_strides(sec.count))
    src.get_section(sec, std::span<T>(base, static_cast<std::size_t>(sec.size())));
  else
    detail::ArrayAccess::get_section_strided(src, sec, base, dst_str);
}

}  // namespace detail

/// Creates an array from a whole `boost::multi_array` (or multi_array_ref) held by `root`:
/// every rank gets only its block, put one-sidedly by the root straight into its window.
/// Other ranks' `data` is ignored (pass an empty array). **Collective over ctx.** On return
/// the array is consistent everywhere (as after sync()). Throws InvalidArgument (root out of
/// range, bad distribution), SizeMismatch (root's data shape differs from `shape` or is not
/// row-major) and CollectiveMismatch (ranks disagree on root, shape, distribution), on every
/// rank and before anything moves.
template <class T, std::size_t N, class TPtr>
requires Element<T> GlobalArray<T, N> scatter_from(const Context& ctx, int root,
                                                   const boost::const_multi_array_ref<T, N, TPtr>& data,
                                                   const Shape<N>& shape,
                                                   const Distribution<N>& dist = Distribution<N>::blocked(),
                                                   const Shape<N>& ghost = {}) {
  const std::string what = detail::movement_name<T, N>("scatter_from");
  const auto sig =
      detail::hash_mix(detail::movement_sig<T, N>(what, shape), static_cast<std::uint64_t>(root));
  detail::collective_check<SizeMismatch>(ctx, sig, what, "root " + std::to_string(root), [&] {
    detail::check_root(root, ctx.size(), what);
    if (ctx.rank() != root) return;
    bool ok = data.storage_order() == boost::c_storage_order();
    for (std::size_t d = 0; d < N; ++d) ok = ok && static_cast<Index>(data.shape()[d]) == shape[d];
    if (!ok) {
      Shape<N> got{};
      for (std::size_t d = 0; d < N; ++d) got[d] = static_cast<Index>(data.shape()[d]);
      detail::raise<SizeMismatch>(what, ": root's data has shape ", detail::seq(got),
                                  " (row-major required) but the array shape is ", detail::seq(shape));
    }
  });
  auto a = detail::make_overwritten<T, N>(ctx, shape, dist, ghost);
  detail::finish_collective(ctx, what, [&] {
    detail::fault_point("scatter_from.put");
    if (ctx.rank() == root) {
      a.put_section(Section<N>::full(shape),
                    std::span<const T>(data.data(), static_cast<std::size_t>(volume(shape))));
      a.fence();  // the root's puts complete before the closing agreement
    }
  });
  return a;
}

/// The whole array as a `boost::multi_array` on `root` (other ranks get an empty array of
/// extents 0). The root reads every block once, one-sidedly. **Collective over the array's
/// context**; completes everyone's outstanding operations first (as sync()). Throws
/// InvalidArgument (root out of range) or CollectiveMismatch on every rank.
template <Element T, std::size_t N>
boost::multi_array<T, N> gather(GlobalArray<T, N>& a, int root) {
  const Context& ctx = a.context();
  const std::string what = detail::movement_name<T, N>("gather");
  const auto sig = detail::hash_mix(detail::hash_mix(detail::hash_string("garray::gather"), a.id()),
                                    static_cast<std::uint64_t>(root));
  detail::ArrayAccess::begin_collective(a, sig, what, [&] { detail::check_root(root, ctx.size(), what); });
  boost::multi_array<T, N> out;
  detail::finish_collective(ctx, what, [&] {  // nobody changes its block before the root has read it
    detail::fault_point("gather.read");
    if (ctx.rank() == root) {
      out.resize(a.shape());
      a.get_section(Section<N>::full(a.shape()), std::span<T>(out.data(), out.num_elements()));
    }
  });
  return out;
}

/// The whole array as a `boost::multi_array` on every rank. **Collective over the array's
/// context**; completes everyone's outstanding operations first. Throws CollectiveMismatch.
template <Element T, std::size_t N>
boost::multi_array<T, N> allgather(GlobalArray<T, N>& a) {
  const std::string what = detail::movement_name<T, N>("allgather");
  detail::ArrayAccess::begin_collective(a, detail::hash_mix(detail::hash_string("garray::allgather"), a.id()),
                                        what, [] {});
  boost::multi_array<T, N> out;
  detail::finish_collective(a.context(), what, [&] {  // nobody changes its block before all have read it
    detail::fault_point("allgather.read");
    out.resize(a.shape());
    a.get_section(Section<N>::full(a.shape()), std::span<T>(out.data(), out.num_elements()));
  });
  return out;
}

/// A global array whose blocks are the ranks' local arrays concatenated along `axis`, in rank
/// order (D2O freeform, caput `wrap`). Extents along `axis` may differ (zero is fine); all
/// other extents must agree. The result has an irregular slab distribution along `axis` and
/// optional ghost cells. Each local array is copied once, into the window. **Collective over
/// ctx.** Throws InvalidArgument (axis >= N, differing extents off the axis, named with the
/// ranks), SizeMismatch (a local array not row-major) or CollectiveMismatch, on every rank.
template <class T, std::size_t N, class TPtr>
requires Element<T> GlobalArray<T, N> from_local(const Context& ctx,
                                                 const boost::const_multi_array_ref<T, N, TPtr>& local,
                                                 std::size_t axis, const Shape<N>& ghost = {}) {
  const std::string what = detail::movement_name<T, N>("from_local");
  Shape<N> mine{};
  for (std::size_t d = 0; d < N; ++d) mine[d] = static_cast<Index>(local.shape()[d]);
  const auto sig = detail::hash_mix(detail::movement_sig<T, N>(what, Shape<N>{}), axis);
  detail::collective_check<CollectiveMismatch>(ctx, sig, what, "axis " + std::to_string(axis), [&] {
    if (axis >= N) detail::raise<InvalidArgument>(what, ": axis ", axis, " for a ", N, "-d array");
    if (local.storage_order() != boost::c_storage_order())
      detail::raise<SizeMismatch>(what, ": local array must be row-major (C storage order)");
  });
  const int p = ctx.size();
  std::vector<Index> all(static_cast<std::size_t>(p) * N);
  detail::check_mpi(MPI_Allgather(mine.data(), static_cast<int>(N), MPI_INT64_T, all.data(),
                                  static_cast<int>(N), MPI_INT64_T, ctx.comm()),
                    "MPI_Allgather");
  // Every rank sees every shape, so this check throws the same error everywhere.
  Shape<N> shape = mine;
  shape[axis] = 0;
  std::array<std::vector<Index>, N> starts;
  for (std::size_t d = 0; d < N; ++d) starts[d] = {0};
  starts[axis].clear();
  for (int r = 0; r < p; ++r) {
    const Index* s = &all[static_cast<std::size_t>(r) * N];
    for (std::size_t d = 0; d < N; ++d)
      if (d != axis && s[d] != all[d])
        detail::raise<InvalidArgument>(what, ": local arrays must agree off axis ", axis,
                                       ": rank 0 has extent ", all[d], " but rank ", r, " has ", s[d],
                                       " in dim ", d);
    starts[axis].push_back(shape[axis]);
    if (__builtin_add_overflow(shape[axis], s[axis], &shape[axis]))
      detail::raise<InvalidArgument>(what, ": the local extents along axis ", axis,
                                     " add up to more than an Index holds (at rank ", r, "'s extent ",
                                     s[axis], ")");
  }
  for (std::size_t d = 0; d < N; ++d)
    if (d != axis) shape[d] = all[d];
  auto a = detail::make_overwritten<T, N>(ctx, shape, Distribution<N>::irregular(starts), ghost);
  detail::finish_collective(ctx, what, [&] {
    detail::fault_point("from_local.copy");
    auto blk = a.access();
    if (!blk.empty()) {
      const auto lay = a.layout_of(ctx.rank());
      const auto it = detail::collapse(mine, lay.strides, row_major_strides(mine));
      detail::strided_copy(it, blk.data() + lay.origin, local.data());
    }
  });
  return a;
}

/// A new array with the same shape and contents as `src`, distributed by `dist` (with `ghost`
/// cells, by default src's). Every rank fetches exactly its new block, one get per old owner,
/// straight into its window: what stays on a rank is copied locally, no rank holds more than
/// its new block, nothing is packed and no temporary is allocated. Works between any two
/// distributions (regular, irregular, replicated: to a replicated array every rank fetches
/// everything; from one, every rank reads its own copy). **Collective over src's context**;
/// completes src's outstanding operations first. Throws InvalidArgument (bad distribution) or
/// CollectiveMismatch on every rank before anything moves.
template <Element T, std::size_t N>
GlobalArray<T, N> redistribute(GlobalArray<T, N>& src, const Distribution<N>& dist, const Shape<N>& ghost) {
  const std::string what = detail::movement_name<T, N>("redistribute");
  std::uint64_t sig = detail::hash_mix(detail::hash_string("garray::redistribute"), src.id());
  for (auto g : ghost) sig = detail::hash_mix(sig, static_cast<std::uint64_t>(g));
  detail::ArrayAccess::begin_collective(src, sig, what,
                                        [] {});  // the new array's creation checks dist and ghost
  auto dst = detail::make_overwritten<T, N>(src.context(), src.shape(), dist, ghost);
  const auto lay = dst.layout_of(dst.context().rank());
  // The closing agreement also keeps src unchanged until every rank has read it.
  detail::finish_collective(src.context(), what, [&] {
    detail::fault_point("redistribute.fetch");
    detail::fetch_into_block(src, detail::box_section(dst.local_box()), dst, lay.origin, lay.strides);
  });
  return dst;
}
/// As above, keeping src's ghost width. **Collective over src's context.** Throws as above.
template <Element T, std::size_t N>
GlobalArray<T, N> redistribute(GlobalArray<T, N>& src, const Distribution<N>& dist) {
  return redistribute(src, dist, src.ghost());
}

/// A new array with permuted dimensions: result.shape()[d] == src.shape()[perm[d]] and
/// result[i] == src[j] with j[perm[d]] == i[d] (numpy's `transpose(axes)`; {1, 0} is the
/// matrix transpose, {N-1, 0, 1, ...} moves the last axis first as MpiArray's scattermovezero).
/// Distributed by `dist` over the new shape. Each rank fetches its new block from the old
/// owners straight into its window, permuting on the way (no temporaries). **Collective over
/// src's context.** Throws InvalidArgument (perm not a permutation of 0..N-1, bad
/// distribution) or CollectiveMismatch on every rank before anything moves.
template <Element T, std::size_t N>
GlobalArray<T, N> transpose(GlobalArray<T, N>& src, const std::array<std::size_t, N>& perm,
                            const Distribution<N>& dist = Distribution<N>::blocked(),
                            const Shape<N>& ghost = {}) {
  const Context& ctx = src.context();
  const std::string what = detail::movement_name<T, N>("transpose");
  std::uint64_t sig = detail::hash_mix(detail::hash_string("garray::transpose"), src.id());
  for (auto p : perm) sig = detail::hash_mix(sig, p);
  for (auto g : ghost) sig = detail::hash_mix(sig, static_cast<std::uint64_t>(g));
  detail::ArrayAccess::begin_collective(src, sig, what, [&] {
    std::array<bool, N> seen{};
    for (auto p : perm) {
      if (p >= N || seen[p])
        detail::raise<InvalidArgument>(what, ": ", detail::seq(perm), " is not a permutation of 0..", N - 1);
      seen[p] = true;
    }
  });
  Shape<N> shape{};
  for (std::size_t d = 0; d < N; ++d) shape[d] = src.shape()[perm[d]];
  auto dst = detail::make_overwritten<T, N>(ctx, shape, dist, ghost);
  const auto lay = dst.layout_of(ctx.rank());
  const Box<N> b = dst.local_box();
  Section<N> sec;  // my new block, in source coordinates
  Shape<N> str{};  // source dimension perm[d] lands at destination stride lay.strides[d]
  for (std::size_t d = 0; d < N; ++d) {
    sec.start[perm[d]] = b.lo[d];
    sec.step[perm[d]] = 1;
    sec.count[perm[d]] = b.extent(d);
    str[perm[d]] = lay.strides[d];
  }
  detail::finish_collective(ctx, what, [&] {
    detail::fault_point("transpose.fetch");
    detail::fetch_into_block(src, sec, dst, lay.origin, str);
  });
  return dst;
}

// ---- iteration over owned elements and layout helpers: all Local -----------------------

/// A (local, global) index pair along one axis of this rank's block.
struct IndexPair {
  Index local;   ///< 0-based position in the block
  Index global;  ///< the global index
};

/// The (local, global) pairs of a run of owned indices: a forward range (enumerate()).
class IndexPairs {
 public:
  /// A forward iterator over the pairs; every member is Local.
  class iterator {
   public:
    using value_type = IndexPair;            ///< what operator* gives
    using difference_type = std::ptrdiff_t;  ///< iterator distance type
    iterator() = default;
    /// Local. At position `k` of the run starting at global index `lo`.
    iterator(Index k, Index lo) : k_(k), lo_(lo) {}
    /// Local. The pair at this position: {k, lo + k}.
    IndexPair operator*() const noexcept { return {k_, lo_ + k_}; }
    /// Local. Advances to the next position; returns this iterator.
    iterator& operator++() noexcept {
      ++k_;
      return *this;
    }
    /// Local. Advances to the next position; returns the iterator before.
    iterator operator++(int) noexcept {
      iterator t = *this;
      ++k_;
      return t;
    }
    /// Local. Same position (iterators of one range).
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.k_ == b.k_; }

   private:
    Index k_ = 0, lo_ = 0;
  };
  /// Local. The `n` pairs {0, lo}, {1, lo + 1}, ... (made by enumerate()).
  IndexPairs(Index lo, Index n) : lo_(lo), n_(n) {}
  iterator begin() const noexcept { return {0, lo_}; }  ///< Local. The first pair.
  iterator end() const noexcept { return {n_, lo_}; }   ///< Local. Past the last pair.
  Index size() const noexcept { return n_; }            ///< Local. Number of pairs.
  bool empty() const noexcept { return n_ == 0; }       ///< Local. True if there are none.

 private:
  Index lo_, n_;
};

/// The owned indices along `axis` as (local, global) pairs (caput's `enumerate(axis)`):
///   for (auto [l, g] : garray::enumerate(a, 0)) ...
/// Empty for an empty block. **Local.** Throws InvalidArgument if axis >= N.
template <Element T, std::size_t N>
IndexPairs enumerate(const GlobalArray<T, N>& a, std::size_t axis) {
  if (axis >= N) detail::raise<InvalidArgument>("garray::enumerate: axis ", axis, " for a ", N, "-d array");
  const Box<N>& b = a.local_box();
  return IndexPairs(b.empty() ? 0 : b.lo[axis], b.empty() ? 0 : b.extent(axis));
}

/// Calls f(local, global, value&) for every element this rank owns, in row-major order, where
/// `local` is the 0-based index in the block and `global` the global index. Ghost cells are
/// not visited. **Local** (inside an access() of the block).
template <Element T, std::size_t N, class F>
void for_each_owned(GlobalArray<T, N>& a, F&& f) {
  auto blk = a.access();
  const Box<N>& b = blk.box();
  if (b.empty()) return;
  const auto lay = a.layout_of(a.context().rank());
  T* base = blk.data();
  Shape<N> k{};
  while (true) {
    Shape<N> g{};
    for (std::size_t d = 0; d < N; ++d) g[d] = b.lo[d] + k[d];
    f(std::as_const(k), std::as_const(g), base[lay.offset(g)]);
    std::size_t d = N;
    while (d > 0) {
      --d;
      if (++k[d] < b.extent(d)) break;
      k[d] = 0;
      if (d == 0) return;
    }
  }
}

/// The ranks whose blocks intersect `box`, with the intersections, in rank-grid order (for a
/// replicated array: this rank and the whole box). **Local.** Throws InvalidArgument on a
/// moved-from array.
template <Element T, std::size_t N>
std::vector<std::pair<int, Box<N>>> owners(const GlobalArray<T, N>& a, const Box<N>& box) {
  if (!a.valid()) detail::moved_from_array("garray::owners", "the array", a.id());
  std::vector<std::pair<int, Box<N>>> out;
  const Box<N> clipped = intersect(box, Box<N>{Shape<N>{}, a.shape()});
  if (a.distribution().is_replicated()) {
    if (!clipped.empty()) out.emplace_back(a.context().rank(), clipped);
    return out;
  }
  a.distribution().for_each_block(clipped, [&](int r, const Box<N>& blk) {
    const Box<N> x = intersect(blk, clipped);
    if (!x.empty()) out.emplace_back(r, x);
  });
  return out;
}

/// True if this rank holds global index `i` (its own block, or any index when replicated).
/// **Local.**
template <Element T, std::size_t N>
bool is_local(const GlobalArray<T, N>& a, const Shape<N>& i) noexcept {
  return a.local_box().contains(i);
}

// The collectives above for the six element types at 1-4 dimensions are compiled once into
// libgarray_array (array/src/instantiate.cpp.in): user translation units do not instantiate
// them again. for_each_owned (a user functor), enumerate, owners and is_local stay here.
#ifndef GARRAY_INSTANTIATING
#define GARRAY_DETAIL_MOVEMENT(T, N)                                                                             \
  extern template GlobalArray<T, N> detail::make_overwritten<T, N>(const Context&, const Shape<N>&,           \
                                                                  const Distribution<N>&, const Shape<N>&); \
  extern template GlobalArray<T, N> scatter_from<T, N, T*>(const Context&, int,                                \
                                                           const boost::const_multi_array_ref<T, N, T*>&,      \
                                                           const Shape<N>&, const Distribution<N>&,           \
                                                           const Shape<N>&);                                   \
  extern template GlobalArray<T, N> from_local<T, N, T*>(const Context&,                                       \
                                                         const boost::const_multi_array_ref<T, N, T*>&,        \
                                                         std::size_t, const Shape<N>&);                        \
  extern template boost::multi_array<T, N> gather<T, N>(GlobalArray<T, N>&, int);                              \
  extern template boost::multi_array<T, N> allgather<T, N>(GlobalArray<T, N>&);                                \
  extern template GlobalArray<T, N> redistribute<T, N>(GlobalArray<T, N>&, const Distribution<N>&,             \
                                                       const Shape<N>&);                                       \
  extern template GlobalArray<T, N> redistribute<T, N>(GlobalArray<T, N>&, const Distribution<N>&);            \
  extern template GlobalArray<T, N> transpose<T, N>(GlobalArray<T, N>&, const std::array<std::size_t, N>&,     \
                                                    const Distribution<N>&, const Shape<N>&);
#define GARRAY_DETAIL_MOVEMENT_TYPE(T) \
  GARRAY_DETAIL_MOVEMENT(T, 1)         \
  GARRAY_DETAIL_MOVEMENT(T, 2)         \
  GARRAY_DETAIL_MOVEMENT(T, 3)         \
  GARRAY_DETAIL_MOVEMENT(T, 4)
GARRAY_FOR_EACH_ELEMENT_TYPE(GARRAY_DETAIL_MOVEMENT_TYPE)
#undef GARRAY_DETAIL_MOVEMENT_TYPE
#undef GARRAY_DETAIL_MOVEMENT
#endif

}  // namespace garray

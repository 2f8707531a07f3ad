// View<T, N, M>: an M-dimensional, non-owning selection of a GlobalArray<T, N>.
//
//   using garray::idx, garray::range, garray::all, garray::_;
//   auto inner = u[idx[range(1, -1)][range(1, -1)]];   // numpy u[1:-1, 1:-1]: a view, no copy
//   auto col   = u[idx[all][3]];                       // u[:, 3]: an integer drops a dim -> 1-d
//   auto rev   = inner[idx[range(_, _, -2)]];           // inner[::-2]: slices compose
//   double x   = u[idx[3][4]].get();                   // a 0-d view reads as a value
//
// A view is the base array plus a canonical Section (per base dimension start, step,
// count, dropped). Slicing a view composes sections (slice arithmetic) and never moves
// data. One-sided operations on a view behave exactly as on the array with the composed
// section; negative steps cost no extra communication (each owner's piece is still one
// MPI call or one strided copy; the reversal happens on the local buffer side).
//
// View coordinates: position k = (k_0, ..., k_{M-1}) of a view, 0 <= k_j < shape()[j],
// is base-array element base_index(k). Index lists (gather/scatter) and access() use view
// coordinates. Collective operations (fill, copy in copy.hpp) are owner-computes: each
// rank touches only the part of the view stored in its own block.
//
// A view does not keep its array alive: it holds the array object's liveness token, and
// every operation through a view whose array object was since destroyed, moved from or
// assigned to throws InvalidArgument (collectives: on every rank; docs/semantics.md "Errors").

// global_array.hpp first, outside the guard: its tail includes copy.hpp, which needs this
// file's body, and then this file. Included first, this file would otherwise be marked seen
// (#pragma once) before copy.hpp asked for it, and copy.hpp would miss View.
#include <garray/array/global_array.hpp>

#ifndef GARRAY_ARRAY_VIEW_HPP
#define GARRAY_ARRAY_VIEW_HPP

#include <array>
#include <boost/multi_array.hpp>
#include <cstddef>
#include <cstring>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/local_block.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace garray {

template <Element T, std::size_t N, std::size_t M>
class ViewBlock;

namespace detail {

/// join_if_stale (below) for a collective whose handshake runs on `comm`, not on the first
/// view's context (io: the file's context, where the others wait when the array lives on
/// another context).
template <class V, class... Vs>
void join_if_stale_on(MPI_Comm comm, std::string_view what, const V& first, const Vs&... rest) {
  if (first.live() && (rest.live() && ...)) [[likely]]
    return;
  begin_collective(std::span<const Window* const>(), comm, hash_string(what), what,
                   "a view of an array that is gone", [&] {
                     (void)first.array(what);
                     ((void)rest.array(what), ...);
                   });
}
/// The prologue of a collective taking views, before any of them is dereferenced: if one
/// is stale on this rank (its array object was destroyed, moved from or assigned to), this
/// rank joins the handshake on the first view's context with that reason, so it throws
/// InvalidArgument and every other rank CollectiveMismatch, instead of throwing alone and
/// leaving the others waiting. No communication when every view is live.
template <class V, class... Vs>
void join_if_stale(std::string_view what, const V& first, const Vs&... rest) {
  join_if_stale_on(first.context().comm(), what, first, rest...);
}

/// The piece of section `sec` stored in `rank`'s block (its geometry as in for_each_piece),
/// or nothing when that rank holds no element of it. Pure index math.
template <std::size_t N>
std::optional<Piece<N>> piece_of(const Distribution<N>& dist, const Section<N>& sec, const Shape<N>& ghost,
                                 int rank) noexcept {
  if (sec.size() == 0) return std::nullopt;
  const Box<N> blk = dist.block(rank);
  if (blk.empty()) return std::nullopt;
  const BlockLayout<N> lay = block_layout(blk, ghost);
  const Shape<N> buf_str = row_major_strides(sec.count);
  Piece<N> p;
  p.rank = rank;
  p.block_off = lay.origin;
  for (std::size_t d = 0; d < N; ++d) {
    const auto [k0, k1] = k_range(sec.start[d], sec.step[d], sec.count[d], blk.lo[d], blk.hi[d]);
    if (k1 <= k0) return std::nullopt;
    p.count[d] = k1 - k0;
    p.block_off += (sec.start[d] + k0 * sec.step[d] - blk.lo[d]) * lay.strides[d];
    p.block_str[d] = sec.step[d] * lay.strides[d];
    p.buf_off += k0 * buf_str[d];
    p.buf_str[d] = buf_str[d];
  }
  return p;
}

/// Signature of a section for collective agreement.
template <std::size_t N>
std::uint64_t section_hash(std::uint64_t h, const Section<N>& s) noexcept {
  h = hash_mix(h, N);
  for (std::size_t d = 0; d < N; ++d) {
    h = hash_mix(h, static_cast<std::uint64_t>(s.start[d]));
    h = hash_mix(h, static_cast<std::uint64_t>(s.step[d]));
    h = hash_mix(h, static_cast<std::uint64_t>(s.count[d]));
    h = hash_mix(h, s.dropped[d] ? 1u : 0u);
  }
  return h;
}

/// boost's strided view type of rank M over a multi_array_ref<T, N> (M >= 1 only).
template <class T, std::size_t N, std::size_t M>
struct BoostViewOf {
  using type = typename boost::multi_array_ref<T, N>::template array_view<M>::type;
};
struct NoBoostView {};

}  // namespace detail

/// An M-dimensional, non-owning selection of a GlobalArray<T, N>: the array plus a canonical
/// Section. Slicing a view composes sections and never moves data; one-sided operations on
/// a view behave exactly as on the array with the composed section (same participation and
/// completion); fill(), assignment and copy are collective and owner-computes. Positions
/// are view coordinates (0 <= k_j < shape()[j]). A view does not keep its array alive:
/// using it after the array was destroyed, moved from or assigned to throws InvalidArgument.
template <Element T, std::size_t N, std::size_t M>
class View {
 public:
  using value_type = T;                   ///< the element type
  using array_type = GlobalArray<T, N>;   ///< the viewed array's type
  using shape_type = Shape<M>;            ///< a view position or extent
  static constexpr std::size_t dims = M;  ///< number of view dimensions

  /// Local. A view of `a` selecting section `s`. Throws InvalidSlice if `s` keeps a number
  /// of dimensions other than M (a hand-built Slice whose items disagree with its type). A
  /// view of a moved-from array is stale from the start (live() is false): every operation
  /// through it throws InvalidArgument, and a collective through it still joins its
  /// handshake, so passing a moved-from array to a collective on one rank only makes that
  /// rank throw InvalidArgument and the others CollectiveMismatch instead of waiting.
  View(array_type& a, const Section<N>& s) : a_(&a), sec_(s), alive_(a.liveness()) {
    if (s.rank() != M) [[unlikely]]
      detail::view_rank_mismatch(detail::ArrayAccess::name<array_type>(detail::Call::slice), s.rank(), M);
  }

  /// Local. Another view of the same selection (views are cheap handles).
  View(const View&) = default;
  /// **Collective** (numeric layer, <garray/garray.hpp>): `view = expr` evaluates an
  /// expression, view, array or scalar into the view, owner-computes (garray::assign).
  /// Assigning a view copies elements (numpy `a[...] = b[...]`); it never rebinds. On return
  /// the view's elements are written and visible to every rank.
  template <class E>
  requires(!std::is_same_v<std::remove_cvref_t<E>, View>) View& operator=(const E& e) {
    assign(*this, e);  // found by ADL in numeric/elementwise.hpp
    return *this;
  }
  /// **Collective**: copies `v`'s elements into this view (garray::copy, copy.hpp: the
  /// same implementation as `copy(*this, v)`; v's shape must equal or broadcast to this
  /// view's). On return the elements
  /// are written and visible to every rank.
  View& operator=(const View& v) {
    copy(*this, v);  // copy.hpp (included by global_array.hpp after this header)
    return *this;
  }

  /// Local. The viewed array. Throws InvalidArgument if that array object was destroyed,
  /// moved from or assigned to since the view was made (the view would dangle).
  array_type& array() const {
    if (!alive_ || !alive_->alive) [[unlikely]]
      detail::view_of_dead_array(detail::ArrayAccess::name<array_type>(detail::Call::get), array_id());
    return *a_;
  }
  /// Local. As array(), the error naming `what` (the call made through the view).
  array_type& array(std::string_view what) const {
    if (!alive_ || !alive_->alive) [[unlikely]]
      detail::view_of_dead_array(what, array_id());
    return *a_;
  }
  /// Local. False if the viewed array object was destroyed, moved from or assigned to since
  /// the view was made (array() would throw).
  bool live() const noexcept { return alive_ && alive_->alive; }
  /// Local. The viewed array's GlobalArray::id(), also for a stale view (errors name it).
  std::uint64_t array_id() const noexcept { return alive_ ? alive_->id : 0; }
  /// Local. The viewed array's context, also for a stale view (collectives reach their
  /// handshake through it, so a stale view on one rank makes every rank throw, not wait).
  const Context& context() const noexcept { return alive_->ctx; }
  /// Local. The canonical selection over the base array.
  const Section<N>& section() const noexcept { return sec_; }
  /// Local. Extents of the view's M dimensions.
  Shape<M> shape() const noexcept { return sec_.template kept_shape<M>(); }
  /// Local. Number of selected elements (1 for a 0-d view).
  Index size() const noexcept { return sec_.size(); }

  /// Local. A view of this view (slice arithmetic): numpy's `v[...]`; no data moves.
  /// Throws InvalidSlice (step 0) or BoundsError (integer out of range), naming the value
  /// and the view dimension. Too many indices fail to compile.
  template <std::size_t K, std::size_t M2>
  View<T, N, M2 + (M - K)> operator[](const Slice<K, M2>& s) const {
    static_assert(K <= M, "garray: too many indices for the view's number of dimensions");
    const std::string_view what = detail::ArrayAccess::name<array_type>(detail::Call::slice);
    return {array(what), compose(sec_, s, what)};
  }

  /// Local. The base-array index of view position `k` (not bounds-checked).
  Shape<N> base_index(const Shape<M>& k) const noexcept {
    Shape<N> g{};
    std::size_t j = 0;
    for (std::size_t d = 0; d < N; ++d) g[d] = sec_.start[d] + (sec_.dropped[d] ? 0 : k[j++] * sec_.step[d]);
    return g;
  }
  /// Local. The part of the view stored in `rank`'s block, as a box of view coordinates.
  /// Empty when that rank holds nothing of the view (for a 0-d view, see local_size()).
  Box<M> box_of(int rank) const { return part_of(rank).first; }
  /// Local. The part of the view this rank owns (view coordinates); see box_of.
  Box<M> local_box() const { return box_of(array().context().rank()); }
  /// Local. Number of view elements this rank owns.
  Index local_size() const { return part_of(array().context().rank()).second; }

  // ---- one-sided transfers (as GlobalArray's over the composed section) ---------------
  /// One-sided. Copies the view into `out` (dense, row-major over shape()). Complete on
  /// return. Throws SizeMismatch before any transfer.
  void get(std::span<T> out) const { array_for(detail::Call::get).get_section(sec_, out); }
  /// One-sided. As get(span) into a row-major boost array of the view's shape.
  void get(boost::multi_array_ref<T, M>& out) const requires(M >= 1) {
    array_type& a = array_for(detail::Call::get);  // a stale view: InvalidArgument before anything else
    check_shape(out.shape(), out.storage_order(), detail::Call::get);
    a.get_section(sec_, std::span<T>(out.data(), out.num_elements()));
  }
  /// One-sided. The view as a new boost::multi_array (a value for a 0-d view).
  auto get() const {
    if constexpr (M == 0) {
      T v{};
      array_for(detail::Call::get).get_section(sec_, std::span<T>(&v, 1));
      return v;
    } else {
      return detail::ArrayAccess::get_array<M>(array_for(detail::Call::get), sec_);
    }
  }
  /// One-sided. Writes `in` (row-major over shape()) into the view. Locally complete on
  /// return; remotely at fence()/sync(). Throws SizeMismatch before any transfer.
  void put(std::span<const T> in) const { array_for(detail::Call::put).put_section(sec_, in); }
  /// One-sided. As put(span) from a row-major boost array of the view's shape.
  void put(const boost::multi_array_ref<T, M>& in) const requires(M >= 1) {
    array_type& a = array_for(detail::Call::put);
    check_shape(in.shape(), in.storage_order(), detail::Call::put);
    a.put_section(sec_, std::span<const T>(in.data(), in.num_elements()));
  }
  /// One-sided. Writes one value into a 0-d view. Completion as put.
  void put(const T& v) const requires(M == 0) {
    array_for(detail::Call::put).put_section(sec_, std::span<const T>(&v, 1));
  }
  /// One-sided. view += alpha * in, atomic per element. Completion as put.
  void accumulate(std::span<const T> in, T alpha = T{1}) const {
    array_for(detail::Call::acc).acc_section(sec_, in, alpha);
  }
  /// One-sided. As accumulate(span) from a row-major boost array of the view's shape.
  void accumulate(const boost::multi_array_ref<T, M>& in, T alpha = T{1}) const requires(M >= 1) {
    array_type& a = array_for(detail::Call::acc);
    check_shape(in.shape(), in.storage_order(), detail::Call::acc);
    a.acc_section(sec_, std::span<const T>(in.data(), in.num_elements()), alpha);
  }
  /// One-sided. Adds alpha * v to the element of a 0-d view, atomically.
  void accumulate(const T& v, T alpha = T{1}) const requires(M == 0) {
    array_for(detail::Call::acc).acc_section(sec_, std::span<const T>(&v, 1), alpha);
  }
  /// One-sided, nonblocking get: the request's wait() (or test() returning true) gives the
  /// blocking get's guarantee; nothing is guaranteed before.
  Request get_nb(std::span<T> out) const { return array_for(detail::Call::get).get_section_nb(sec_, out); }
  /// One-sided, nonblocking put: `in` must stay untouched until the request's wait(), which
  /// gives the blocking put's guarantee.
  Request put_nb(std::span<const T> in) const {
    return array_for(detail::Call::put).put_section_nb(sec_, in);
  }
  /// One-sided, nonblocking accumulate: `in` must stay untouched until the request's
  /// wait(), which gives the blocking accumulate's guarantee.
  Request acc_nb(std::span<const T> in, T alpha = T{1}) const {
    return array_for(detail::Call::acc).acc_section_nb(sec_, in, alpha);
  }

  // ---- index lists in view coordinates --------------------------------------------------
  /// One-sided. out[j] = view[indices[j]]; indices are view positions (negative ones count
  /// from the end of the view's dimension). Complete on return. Throws BoundsError (naming
  /// the list position) or SizeMismatch before any transfer.
  void gather(std::span<const Shape<M>> indices, std::span<T> out) const {
    array_type& a = array_for(detail::Call::gather);
    check_list(indices.size(), out.size(), detail::Call::gather);
    const auto g = to_base(indices, detail::Call::gather);
    a.gather(g, out);
  }
  /// One-sided. view[indices[j]] = values[j]; with repeated positions one value wins.
  /// Completion as put. Throws as gather.
  void scatter(std::span<const Shape<M>> indices, std::span<const T> values) const {
    array_type& a = array_for(detail::Call::scatter);
    check_list(indices.size(), values.size(), detail::Call::scatter);
    const auto g = to_base(indices, detail::Call::scatter);
    a.scatter(g, values);
  }
  /// One-sided. view[indices[j]] += alpha * values[j], atomic per element; repeated
  /// positions all contribute. Completion as put. Throws as gather.
  void scatter_acc(std::span<const Shape<M>> indices, std::span<const T> values, T alpha = T{1}) const {
    array_type& a = array_for(detail::Call::scatter_acc);
    check_list(indices.size(), values.size(), detail::Call::scatter_acc);
    const auto g = to_base(indices, detail::Call::scatter_acc);
    a.scatter_acc(g, values, alpha);
  }

  // ---- owner-computes -------------------------------------------------------------------
  /// **Collective** over the array's context (handshaked). Sets every element of the view to
  /// `value`.
  /// Each rank writes the part of the view stored in its own block (no data is sent), with
  /// a sync before (earlier operations of every rank complete first) and after (on return
  /// every rank sees the new values). One fill semantics: a view selecting every element (in
  /// any order) is GlobalArray::fill (ghost cells set too); a view of part of it leaves ghost cells as
  /// they are (update_ghosts refreshes them). Throws CollectiveMismatch on every rank if
  /// ranks pass different views or values; a view whose array is gone on some rank throws
  /// there (InvalidArgument) and CollectiveMismatch elsewhere.
  void fill(const T& value) const {
    detail::join_if_stale(call_name(detail::Call::fill), *this);
    array_type& a = array_for(detail::Call::fill);
    // Every element selected (either direction, dimensions of extent 1 dropped or not): the
    // whole array, GlobalArray::fill, which sets the ghosts too (one fill semantics).
    bool whole = true;
    for (std::size_t d = 0; d < N; ++d) whole = whole && sec_.count[d] == a.shape()[d];
    if (whole) {
      a.fill(value);
      return;
    }
    std::uint64_t sig = detail::hash_mix(detail::hash_string("View::fill"), a.id());
    sig = detail::value_hash(detail::section_hash(sig, sec_), value);
    const detail::Window* w = &detail::ArrayAccess::window(a);
    detail::begin_collective(std::span<const detail::Window* const>(&w, 1), a.context().comm(), sig,
                             call_name(detail::Call::fill), describe());
    std::exception_ptr err;
    try {
      detail::fault_point("fill.local");
      if (auto p = detail::piece_of(a.distribution(), sec_, a.ghost(), a.context().rank())) {
        auto blk = a.access();
        const auto it = detail::collapse(p->count, p->block_str, p->block_str);
        detail::for_each_run(it, blk.data() + p->block_off, blk.data() + p->block_off,
                             [&](T* x, T*, Index n, Index sx, Index) {
                               for (Index i = 0; i < n; ++i) x[i * sx] = value;
                             });
      }
    } catch (...) {
      err = std::current_exception();
    }
    detail::conclude(a.context().comm(), err, call_name(detail::Call::fill));  // doubles as the barrier
    ++a.context().stats().syncs;
  }

  /// Local. RAII access to the part of the view this rank owns, in view coordinates (see
  /// ViewBlock). Brackets the local accesses with MPI_Win_sync like GlobalArray::access().
  ViewBlock<T, N, M> access() const { return ViewBlock<T, N, M>(*this); }

  /// Local. "view [sec] of array #id", for messages.
  std::string describe() const {
    std::ostringstream os;
    os << "view " << sec_ << " of " << detail::array_label(array().id());
    return os.str();
  }

 private:
  template <Element, std::size_t, std::size_t>
  friend class ViewBlock;

  static std::string call_name(detail::Call c) {
    return std::string(detail::ArrayAccess::name<array_type>(c)) + "(view)";
  }
  /// array(), the error (only) naming the call `c` made through the view.
  array_type& array_for(detail::Call c) const {
    if (!alive_ || !alive_->alive) [[unlikely]]
      detail::view_of_dead_array(call_name(c), array_id());
    return *a_;
  }

  // The part of the view in `rank`'s block: view-coordinate box and element count.
  std::pair<Box<M>, Index> part_of(int rank) const {
    Box<M> b{};
    const Box<N> blk = array().box_of(rank);
    Index n = blk.empty() ? 0 : 1;
    std::size_t j = 0;
    for (std::size_t d = 0; d < N; ++d) {
      const auto [k0, k1] = detail::k_range(sec_.start[d], sec_.step[d], sec_.count[d], blk.lo[d], blk.hi[d]);
      n *= k1 - k0;
      if (!sec_.dropped[d]) {
        b.lo[j] = k0;
        b.hi[j] = k1;
        ++j;
      }
    }
    if (n == 0)
      for (std::size_t q = 0; q < M; ++q) b.hi[q] = b.lo[q];
    return {b, n};
  }

  template <class SizeT>
  void check_shape(const SizeT* shp, const boost::general_storage_order<M>& order, detail::Call c) const {
    const auto want = shape();
    bool ok = order == boost::c_storage_order();
    Shape<M> got{};
    for (std::size_t d = 0; d < M; ++d) {
      got[d] = static_cast<Index>(shp[d]);
      ok = ok && got[d] == want[d];
    }
    if (!ok) [[unlikely]]
      detail::view_buffer_mismatch(call_name(c), got, want);
  }
  void check_list(std::size_t nidx, std::size_t nval, detail::Call c) const {
    if (nidx != nval) detail::raise<SizeMismatch>(call_name(c), ": ", nidx, " indices but ", nval, " values");
  }
  std::vector<Shape<N>> to_base(std::span<const Shape<M>> indices, detail::Call c) const {
    const auto shp = shape();
    std::vector<Shape<N>> g(indices.size());
    for (std::size_t q = 0; q < indices.size(); ++q) {
      Shape<M> k = indices[q];
      for (std::size_t d = 0; d < M; ++d) {
        if (k[d] < 0) k[d] += shp[d];
        if (k[d] < 0 || k[d] >= shp[d])
          detail::raise<BoundsError>(call_name(c), ": index list entry ", q, " ", detail::seq(indices[q]),
                                     " out of range for view shape ", detail::seq(shp), " (dim ", d, ")");
      }
      g[q] = base_index(k);
    }
    return g;
  }

  array_type* a_;
  Section<N> sec_;
  std::shared_ptr<ArrayLiveness> alive_;  // the array object's liveness token (and its context)
};

/// RAII access to the part of a view that this rank owns (see View::access()).
///
///   auto vb = u[idx[range(1, -1)][range(_, _, -2)]].access();
///   auto& v = vb.view();                       // boost strided view, VIEW coordinates
///   for (auto i = vb.lo(0); i < vb.hi(0); ++i)
///     for (auto j = vb.lo(1); j < vb.hi(1); ++j) v[i][j] *= 2;   // view element (i, j)
///
/// Coordinates: `view()` is indexed by view positions, not base-array indices: element
/// (k_0, ..., k_{M-1}) of the view is `view()[k_0]...[k_{M-1}]`, valid for k in box()
/// (index bases are box().lo). View::base_index(k) gives the base-array index. Strides
/// may be negative (reversed views); writes go straight to the block's memory and become
/// visible to other ranks after the next sync(), as with GlobalArray::access().
/// For a 0-d view there is no boost view: element() is the owned element or nullptr.
template <Element T, std::size_t N, std::size_t M>
class ViewBlock {
 public:
  /// The strided boost view of the owned part (M >= 1), indexed by view positions.
  using view_type = typename std::conditional_t<(M >= 1), detail::BoostViewOf<T, N, M>,
                                                std::type_identity<detail::NoBoostView>>::type;

  /// Local. Prefer View::access().
  explicit ViewBlock(const View<T, N, M>& v) : blk_(v.array().access()) {
    const auto [box, n] = v.part_of(v.array().context().rank());
    box_ = box;
    size_ = n;
    const Section<N>& s = v.section();
    if constexpr (M == 0) {
      if (n > 0) element_ = &blk_.view()(s.start);
    } else {
      // Boost index ranges in the block's global coordinates. An empty part is a view of
      // extent 0 into a dummy 1x...x1 array (an empty block has no element to index).
      boost::detail::multi_array::index_gen<N, M> ig;
      using R = boost::multi_array_types::index_range;
      if (n == 0) {
        for (std::size_t d = 0; d < N; ++d) ig.ranges_[d] = s.dropped[d] ? R(0) : R(0, 0, 1);
        Shape<N> ones;
        ones.fill(1);
        boost::multi_array_ref<T, N> dummy(&dummy_, ones);
        make_view(dummy, ig);
        return;
      }
      std::size_t j = 0;
      for (std::size_t d = 0; d < N; ++d) {
        if (s.dropped[d]) {
          ig.ranges_[d] = R(s.start[d]);
        } else {
          // boost wants the open end just past the last element (one below it for a
          // negative step), not first + count * step, which may leave the block.
          const Index first = s.start[d] + box.lo[j] * s.step[d];
          const Index last = first + (box.hi[j] - box.lo[j] - 1) * s.step[d];
          ig.ranges_[d] = R(first, last + (s.step[d] > 0 ? 1 : -1), s.step[d]);
        }
        j += s.dropped[d] ? 0 : 1;
      }
      make_view(blk_.view(), ig);
      Shape<M> bases{};
      for (std::size_t q = 0; q < M; ++q) bases[q] = box.lo[q];
      view_->reindex(bases);
    }
  }
  ViewBlock(const ViewBlock&) = delete;             ///< Not copyable.
  ViewBlock& operator=(const ViewBlock&) = delete;  ///< Not copyable.

  /// Local. The owned part as a strided boost view in view coordinates (M >= 1).
  view_type& view() requires(M >= 1) {
    blk_.check();  // throws once the array is gone, as LocalBlock::view()
    return *view_;
  }
  /// Local. The owned part in view coordinates (empty if this rank owns nothing).
  const Box<M>& box() const noexcept { return box_; }
  Index lo(std::size_t d) const noexcept { return box_.lo[d]; }  ///< Local. box().lo[d].
  Index hi(std::size_t d) const noexcept { return box_.hi[d]; }  ///< Local. box().hi[d].
  /// Local. Number of owned view elements.
  Index size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }  ///< Local. True if this rank owns nothing of the view.
  /// Local. For a 0-d view: the element if this rank owns it, else nullptr.
  T* element() const requires(M == 0) {
    blk_.check();
    return element_;
  }

 private:
  // GCC 12 reports a false -Wmaybe-uninitialized inside boost's generate_array_view (it
  // cannot prove the loop fills every kept extent): keep the construction out of line, in
  // one function where the warning is silenced.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  template <class Gen>
  [[gnu::noinline]] void make_view(boost::multi_array_ref<T, N>& ref, const Gen& ig) {
    view_.emplace(ref[ig]);
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  LocalBlock<T, N> blk_;
  Box<M> box_{};
  Index size_ = 0;
  std::optional<view_type> view_;
  T* element_ = nullptr;
  T dummy_{};
};

/// **Collective over the view's array context.** numpy's `v[...] = value`; see View::fill.
template <Element T, std::size_t N, std::size_t M>
void fill(const View<T, N, M>& v, const std::type_identity_t<T>& value) {
  v.fill(value);
}

template <Element T, std::size_t N>
template <std::size_t K, std::size_t M>
View<T, N, selection_rank<N, K, M>> GlobalArray<T, N>::operator[](const Slice<K, M>& s) {
  return {*this, select(s, detail::Call::slice)};
}

template <Element T, std::size_t N>
View<T, N, N> GlobalArray<T, N>::view() {
  return {*this, Section<N>::full(shape())};
}

}  // namespace garray

#endif  // GARRAY_ARRAY_VIEW_HPP

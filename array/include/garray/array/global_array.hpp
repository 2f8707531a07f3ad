#pragma once
// GlobalArray<T, N>: a distributed N-d array backed by one MPI window, with Global-Arrays
// style one-sided access to any strided section.
//
//   garray::Context ctx;
//   garray::GlobalArray<double, 2> a(ctx, {1000, 1000});          // collective
//   using garray::idx, garray::range, garray::all;
//   std::vector<double> row(1000);
//   a.get(idx[7][all], std::span(row));                             // one-sided, complete on return
//   a.accumulate(idx[range(0, 10)][range(_, _, -1)], span, 2.0);    // atomic per element
//   a.sync();                                                       // collective
//
// Completion (the GA contract, docs/semantics.md):
//   get                      complete on return (the buffer holds the data)
//   put / accumulate         locally complete on return (buffer reusable); remote
//                            completion at fence() (this rank's ops) or sync() (everyone's)
//   *_nb + Request::wait()   as the blocking call, at wait()
//   one rank's writes to the same elements land in the order it issued them (location
//   consistency, as in GA: a flush of that target where a write overlaps one in flight)
//   read_inc                 atomic fetch-and-add, complete on return
//   a get sees this rank's own earlier puts/accumulates to the same place (read your writes)
// Validation happens before any data moves: a call that throws changed nothing.

#include <algorithm>
#include <array>
#include <boost/multi_array.hpp>
#include <cstddef>
#include <exception>
#include <garray/array/box.hpp>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/local_block.hpp>
#include <garray/array/request.hpp>
#include <garray/array/slice.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/stats.hpp>
#include <garray/runtime/window.hpp>
#include <garray/runtime/window_cache.hpp>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace garray {

/// Rank of the selection `Slice<K, M>` makes of an N-d array.
template <std::size_t N, std::size_t K, std::size_t M>
inline constexpr std::size_t selection_rank = M + (N - K);

template <Element T, std::size_t N, std::size_t M>
class View;

namespace detail {
// Error paths of views and buffers, compiled once into libgarray_array
// (array/src/error_paths.cpp) so that user translation units do not build the messages.
[[noreturn]] void view_of_dead_array(std::string_view what, std::uint64_t id);
/// "<what>: <which> is empty (moved from): array #<id> ...": `which` names the operand
/// ("the array", "A", "B").
[[noreturn]] void moved_from_array(std::string_view what, std::string_view which, std::uint64_t id);
[[noreturn]] void view_rank_mismatch(std::string_view what, std::size_t rank, std::size_t m);
[[noreturn]] void view_buffer_mismatch(std::string_view what, std::span<const Index> got,
                                       std::span<const Index> want);
struct ArrayAccess;  // below
enum class Dir;      // detail/transport.hpp
enum class Call {
  create,
  get,
  put,
  acc,
  gather,
  scatter,
  scatter_acc,
  read_inc,
  fill,
  sync,
  owner,
  access,
  fence,
  window_kind,
  box_of,
  layout_of,
  slice,  // operator[]: making a view
  count_
};
}  // namespace detail

namespace detail {
/// The first half of a collective on arrays: completes this rank's outstanding writes on
/// every window in `wins` (flush + MPI_Win_sync), then one allreduce that compares `sig`
/// and carries a failure of that completion (failure rule): every rank throws
/// CollectiveMismatch on disagreement, the failing rank its error and the others
/// CollectiveFailure on a failure. Afterwards every rank's earlier operations on these
/// arrays are complete everywhere. **Collective.**
/// begin_collective (below), running `validate()` (local argument checks that throw garray
/// errors) first:
/// a rank whose check fails throws its error, the others CollectiveMismatch with its message.
template <class Validate>
void begin_collective(std::span<const Window* const> wins, MPI_Comm comm, std::uint64_t sig,
                      std::string_view what, std::string_view describe, Validate&& validate) {
  std::exception_ptr err;
  LocalFault fault = LocalFault::invalid;
  try {
    validate();
    fault = LocalFault::failed;
    fault_point("collective.complete");
    for (const Window* w : wins) w->complete_all();
    fault = LocalFault::none;
  } catch (...) {
    err = std::current_exception();
  }
  throw_if_disagreed(comm, agree_with_errors(comm, sig, fault), err, what, describe);
  // after the agreement: a throw here would reach this rank alone
  for (const Window* w : wins) w->memory_sync_noexcept();
}
inline void begin_collective(std::span<const Window* const> wins, MPI_Comm comm, std::uint64_t sig,
                             std::string_view what, std::string_view describe) {
  begin_collective(wins, comm, sig, what, describe, [] {});
}
}  // namespace detail

/// Tag for creating a GlobalArray whose contents are unspecified (numpy.empty): no zeroing
/// pass, for arrays that are overwritten entirely before being read.
struct Uninitialized {
  explicit constexpr Uninitialized() = default;
};
/// The Uninitialized tag: `GlobalArray<double, 2> t(ctx, shape, garray::uninitialized)`.
inline constexpr Uninitialized uninitialized{};

/// A distributed N-d array of element type T (1 <= N <= 16) on the ranks of a Context, one
/// block per rank as its Distribution says, backed by one MPI window. Any rank reads,
/// writes or accumulates any strided section one-sidedly (get / put / accumulate, index
/// lists, read_inc); sync() and fill() are collective; access() gives this rank's block.
/// Completion (docs/semantics.md): a get is complete on return; a put or accumulate is
/// locally complete on return (the buffer may be reused) and remotely complete at fence()
/// (this rank's operations) or sync() (every rank's); a get sees this rank's own earlier
/// puts and accumulates to the same place. Validation happens before any data moves: a call
/// that throws changed nothing. Not copyable (moves are local); assigning an array, a view
/// or an expression copies elements (collective), it never rebinds.
template <Element T, std::size_t N>
class GlobalArray {
  static_assert(N >= 1 && N <= 16, "garray: GlobalArray needs between 1 and 16 dimensions");

 public:
  using value_type = T;                 ///< the element type
  using shape_type = Shape<N>;          ///< an extent, index or ghost width per dimension
  static constexpr std::size_t dims = N;  ///< number of dimensions

  /// Creates a distributed array of zeros. **Collective over ctx.** Every rank must pass the
  /// same shape, distribution and ghost width: otherwise every rank throws
  /// CollectiveMismatch. A bad shape or distribution throws InvalidArgument (on every rank).
  /// On return the array exists on every rank, all elements (and ghosts) are zero and
  /// visible to every rank.
  /// `ghost[d]` cells of padding surround each block along d (filled by update_ghosts()).
  /// The window comes from ctx's cache when a destroyed array of the same type, shape,
  /// distribution and ghost width left one (see window_cache.hpp): a cache hit costs the
  /// signature allreduce, the zeroing pass and one barrier, no window allocation.
  GlobalArray(const Context& ctx, const shape_type& shape, const Distribution<N>& dist,
              const shape_type& ghost = {})
      : GlobalArray(ctx, shape, dist, ghost, true) {}
  /// As above with the blocked distribution and no ghosts: numpy.zeros(shape).
  /// **Collective over ctx**.
  GlobalArray(const Context& ctx, const shape_type& shape);
  /// Creates a distributed array with unspecified contents (numpy.empty), for arrays that
  /// are overwritten before being read (temporaries). **Collective over ctx**; throws as the
  /// zeroing constructor. Skips the zeroing pass; a cache hit costs the two small allreduces
  /// every create pays (the handshake and the closing agreement). Reading an element before writing it
  /// returns garbage (possibly the data of a destroyed array of this context). On return the array exists on
  /// every rank.
  GlobalArray(const Context& ctx, const shape_type& shape, const Distribution<N>& dist,
              const shape_type& ghost, Uninitialized)
      : GlobalArray(ctx, shape, dist, ghost, false) {}
  /// As above with the blocked distribution and no ghosts: numpy.empty(shape).
  /// **Collective over ctx**.
  GlobalArray(const Context& ctx, const shape_type& shape, Uninitialized u);

 private:
  GlobalArray(const Context& ctx, const shape_type& shape, const Distribution<N>& dist,
              const shape_type& ghost, bool zero);

 public:
  /// Local. Takes over `o`'s array; `o` becomes empty (every operation on it, and on views
  /// made of it before the move, throws InvalidArgument).
  GlobalArray(GlobalArray&& o);
  /// Local (the old contents are released as by the destructor). Views of either array made
  /// before the assignment throw InvalidArgument afterwards.
  GlobalArray& operator=(GlobalArray&& o);
  /// **Collective** (numeric layer, <garray/garray.hpp>): `a = expr`, `a = view`, `a = b`
  /// (another array, any element type) or `a = scalar` evaluates into the whole array,
  /// owner-computes, as `a.view() = ...` (garray::assign; numpy's `a[...] = ...`, aliasing
  /// as numpy). The right side must broadcast to the array's shape (NumPy's rules; else
  /// SizeMismatch on every rank, nothing written). It
  /// never rebinds: only the move assignment above (from an rvalue array, e.g. the result
  /// of garray::eval or zeros) replaces the array.
  template <class E>
  requires(!std::is_same_v<std::remove_cvref_t<E>, GlobalArray>) GlobalArray& operator=(const E& e) {
    assign(*this, e);  // found by ADL in numeric/elementwise.hpp
    return *this;
  }
  /// **Collective** (numeric layer): a new array of element type U holding this array's
  /// elements converted (numpy's a.astype(U)), with this array's distribution; on return it
  /// is complete and visible to every rank.
  template <Element U>
  GlobalArray<U, N> astype() const {
    return eval<U>(cast<U>(const_cast<GlobalArray&>(*this)));  // ADL: numeric/creation.hpp
  }
  /// **Collective**: copies `o`'s elements into this array (o's shape must equal or
  /// broadcast to this one's, else SizeMismatch on every rank, nothing written): garray::copy (copy.hpp), the one
  /// implementation behind `copy`, `a = b` and `view = view`. On return this array holds
  /// o's elements, visible to every rank.
  GlobalArray& operator=(const GlobalArray& o) {
    copy(*this, const_cast<GlobalArray&>(o));  // copy.hpp, included below
    return *this;
  }
  /// Returns the window to the context's cache: **Local** (flush of pending writes, no
  /// communication), whatever the cache depth; the window is freed later at a collective
  /// point every rank reaches (failure rule). Never throws.
  ~GlobalArray();

  /// Local. False for a moved-from array; every other operation on it throws InvalidArgument.
  bool valid() const noexcept { return win_ != nullptr; }
  /// Local. A token whose `alive` turns false when this array object is destroyed, moved
  /// from or assigned to; it also keeps the array's context. Views hold it: an operation
  /// through a stale view throws, never crashes, and a collective through one still joins
  /// its context's handshake (every rank throws; nobody waits).
  const std::shared_ptr<ArrayLiveness>& liveness() const noexcept { return alive_; }

  // ---- layout queries: Local --------------------------------------------------------
  const shape_type& shape() const noexcept { return dist_.shape(); }  ///< Local. The global shape.
  Index size() const noexcept { return volume(shape()); }  ///< Local. Number of elements.
  /// Local. The resolved distribution (process grid and block bounds).
  const Distribution<N>& distribution() const noexcept { return dist_; }
  const Context& context() const noexcept { return ctx_; }  ///< Local. The context it lives on.
  /// Local. This rank's block (may be empty).
  const Box<N>& local_box() const noexcept { return my_box_; }
  /// Local. The block of any rank of the context (empty for a rank outside it). Throws
  /// InvalidArgument on a moved-from array.
  Box<N> box_of(int rank) const {
    check_live(detail::Call::box_of);
    return dist_.block(rank);
  }
  /// Local. The rank owning global index `i` (negative indices count from the end); for a
  /// replicated array, this rank (its own copy). Throws BoundsError; InvalidArgument on a
  /// moved-from array.
  int owner(const shape_type& i) const {
    check_live(detail::Call::owner);
    const auto g = checked_index(i, detail::Call::owner);
    return dist_.is_replicated() ? ctx_.rank() : dist_.owner(g);
  }
  /// Local. Ghost width per dimension.
  const shape_type& ghost() const noexcept { return ghost_; }
  /// Local. Where `rank`'s block lives in its window memory (ghost padding included).
  /// Throws InvalidArgument on a moved-from array.
  BlockLayout<N> layout_of(int rank) const {
    check_live(detail::Call::layout_of);
    return rank == ctx_.rank() ? my_layout_ : detail::block_layout(dist_.block(rank), ghost_);
  }
  /// Local. The element offset of global index `i` in `rank`'s window memory. Throws
  /// InvalidArgument on a moved-from array.
  Index offset_in_block(int rank, const shape_type& i) const { return layout_of(rank).offset(i); }

  /// Local. RAII access to this rank's block, indexed with global coordinates. With ghost
  /// cells the view spans [lo - ghost, hi + ghost) (box() is still the owned block).
  LocalBlock<T, N> access();

  // ---- one-sided transfers over slices ----------------------------------------------
  /// One-sided. Copies the selection into `out` (dense, row-major over the selection's
  /// shape). Complete on return. Throws InvalidSlice, BoundsError, SizeMismatch.
  template <std::size_t K, std::size_t M>
  void get(const Slice<K, M>& s, std::span<T> out) const {
    get_ref(items_of(s), out);
  }
  /// One-sided. As above into a boost::multi_array_ref (or multi_array) whose shape is the
  /// selection's (C storage order). Complete on return. Throws InvalidSlice, BoundsError,
  /// SizeMismatch.
  template <std::size_t K, std::size_t M, std::size_t R>
  void get(const Slice<K, M>& s, boost::multi_array_ref<T, R>& out) const {
    check_live(detail::Call::get);  // a moved-from array: that error first
    const auto sec = select(s, detail::Call::get);
    check_shape<R>(sec, out.shape(), out.storage_order(), detail::Call::get);
    get_section(sec, std::span<T>(out.data(), out.num_elements()));
  }
  /// One-sided. The selection as a new boost::multi_array (or a single value when every
  /// dimension is indexed by an integer). Complete on return.
  template <std::size_t K, std::size_t M>
  auto get(const Slice<K, M>& s) const {
    constexpr std::size_t R = selection_rank<N, K, M>;
    if constexpr (R == 0) {
      T v{};
      get_ref(items_of(s), std::span<T>(&v, 1));
      return v;
    } else {
      check_live(detail::Call::get);
      return get_array<R>(select(s, detail::Call::get));
    }
  }

  /// One-sided. Writes `in` into the selection. Locally complete on return; remotely at
  /// fence()/sync(). Throws InvalidSlice, BoundsError, SizeMismatch.
  template <std::size_t K, std::size_t M>
  void put(const Slice<K, M>& s, std::span<const T> in) {
    put_ref(items_of(s), in);
  }
  /// One-sided. As above from a boost::multi_array_ref whose shape is the selection's.
  /// Locally complete on return; remotely at fence()/sync().
  template <std::size_t K, std::size_t M, std::size_t R>
  void put(const Slice<K, M>& s, const boost::multi_array_ref<T, R>& in) {
    check_live(detail::Call::put);
    const auto sec = select(s, detail::Call::put);
    check_shape<R>(sec, in.shape(), in.storage_order(), detail::Call::put);
    put_section(sec, std::span<const T>(in.data(), in.num_elements()));
  }

  /// One-sided. selection += alpha * in, atomic per element with respect to other
  /// accumulates. Completion as put: `in` reusable on return, remote completion at
  /// fence()/sync().
  template <std::size_t K, std::size_t M>
  void accumulate(const Slice<K, M>& s, std::span<const T> in, T alpha = T{1}) {
    acc_ref(items_of(s), in, alpha);
  }
  /// One-sided. As above from a boost::multi_array_ref whose shape is the selection's.
  template <std::size_t K, std::size_t M, std::size_t R>
  void accumulate(const Slice<K, M>& s, const boost::multi_array_ref<T, R>& in, T alpha = T{1}) {
    check_live(detail::Call::acc);
    const auto sec = select(s, detail::Call::acc);
    check_shape<R>(sec, in.shape(), in.storage_order(), detail::Call::acc);
    acc_section(sec, std::span<const T>(in.data(), in.num_elements()), alpha);
  }

  /// One-sided, nonblocking get: nothing is guaranteed on return; the request's wait() (or
  /// test() returning true) gives the blocking get's guarantee. Unordered with this rank's
  /// later writes to the same elements until it is done. Throws as get, before anything is
  /// issued.
  template <std::size_t K, std::size_t M>
  Request get_nb(const Slice<K, M>& s, std::span<T> out) const {
    check_live(detail::Call::get);
    return get_section_nb(select(s, detail::Call::get), out);
  }
  /// One-sided, nonblocking put: `in` must stay untouched until the request's wait(), which
  /// gives the blocking put's guarantee.
  template <std::size_t K, std::size_t M>
  Request put_nb(const Slice<K, M>& s, std::span<const T> in) {
    check_live(detail::Call::put);
    return put_section_nb(select(s, detail::Call::put), in);
  }
  /// One-sided, nonblocking accumulate: `in` must stay untouched until the request's
  /// wait(), which gives the blocking accumulate's guarantee.
  template <std::size_t K, std::size_t M>
  Request acc_nb(const Slice<K, M>& s, std::span<const T> in, T alpha = T{1}) {
    check_live(detail::Call::acc);
    return acc_section_nb(select(s, detail::Call::acc), in, alpha);
  }

  // ---- the same over canonical sections (used by views) --------------------------------
  /// One-sided. get() of a normalised section (section()). Complete on return.
  void get_section(const Section<N>& sec, std::span<T> out) const;
  /// One-sided. put() of a normalised section. Locally complete on return.
  void put_section(const Section<N>& sec, std::span<const T> in);
  /// One-sided. accumulate() of a normalised section. Locally complete on return.
  void acc_section(const Section<N>& sec, std::span<const T> in, T alpha = T{1});
  /// One-sided. get_nb() of a normalised section: complete at the request's wait().
  Request get_section_nb(const Section<N>& sec, std::span<T> out) const;
  /// One-sided. put_nb() of a normalised section: as put at the request's wait().
  Request put_section_nb(const Section<N>& sec, std::span<const T> in);
  /// One-sided. acc_nb() of a normalised section: as accumulate at the request's wait().
  Request acc_section_nb(const Section<N>& sec, std::span<const T> in, T alpha = T{1});
  /// Local. A view of the selection: no data moves; views compose (see view.hpp). Throws
  /// as get would for a bad slice.
  template <std::size_t K, std::size_t M>
  View<T, N, selection_rank<N, K, M>> operator[](const Slice<K, M>& s);
  /// Local. A view of the whole array.
  View<T, N, N> view();

  /// Local (pure index math). Normalises a slice against this array (throws as get/put
  /// would).
  template <std::size_t K, std::size_t M>
  Section<N> section(const Slice<K, M>& s) const {
    check_live(detail::Call::get);  // a moved-from array has no shape to normalise against
    return select(s, detail::Call::get);
  }

  // ---- index lists (GA's NGA_Gather / NGA_Scatter / NGA_Scatter_acc) -------------------
  /// One-sided. out[j] = a[indices[j]]. One MPI call per owner. Complete on return.
  /// Throws BoundsError (naming the position in the list) or SizeMismatch.
  void gather(std::span<const shape_type> indices, std::span<T> out) const;
  /// One-sided. a[indices[j]] = values[j]; with repeated indices one of the values wins.
  /// Locally complete on return (`values` reusable); remotely at fence()/sync().
  void scatter(std::span<const shape_type> indices, std::span<const T> values);
  /// One-sided. a[indices[j]] += alpha * values[j], atomic per element; repeated indices
  /// all contribute. Completion as scatter.
  void scatter_acc(std::span<const shape_type> indices, std::span<const T> values, T alpha = T{1});

  /// One-sided. Atomically adds `inc` to element `i` and returns its previous value (the
  /// shared counter of dynamic load balancing). Integer element types only. On return the
  /// fetch-and-add is done at the owner (atomic with other read_incs and accumulates).
  template <class I = T>  // a template so that explicit instantiations skip it for non-integers
  T read_inc(const shape_type& i, std::type_identity_t<I> inc = I{1}) {
    static_assert(std::is_integral_v<I> && std::is_same_v<I, T>,
                  "garray: read_inc needs an integer element type (std::int32_t or std::int64_t)");
    return fetch_add(i, inc);
  }

  // ---- synchronisation ----------------------------------------------------------------
  /// Local. Completes this rank's outstanding nonblocking requests on this array (as their
  /// wait()) and its puts/accumulates at their targets, then MPI_Win_sync (its direct stores
  /// are ordered before any synchronisation that follows).
  void fence() {
    check_live(detail::Call::fence);
    win_->complete_all();
    ++ctx_.stats().fences;
  }
  /// **Collective** (handshaked). Completes every rank's outstanding operations on this
  /// array, then a barrier: afterwards local blocks and remote views agree. Throws CollectiveMismatch on
  /// every rank if ranks sync different arrays or call another collective; if completing
  /// fails on one rank, that rank throws its error and the others CollectiveFailure.
  void sync();
  /// **Collective** (handshaked). Sets every element (ghosts included: they mirror
  /// neighbours) to `value` on every rank; every rank must pass the same value (else CollectiveMismatch).
  /// Earlier operations of every rank complete first; on return every rank sees the values.
  void fill(const T& value);

  /// Local. The kind of window behind this array (shared memory or MPI_Win_allocate).
  WindowKind window_kind() const {
    check_live(detail::Call::window_kind);
    return win_->kind();
  }
  /// Local. A number identifying this array within its context (the same on every rank).
  std::uint64_t id() const noexcept { return id_; }

 private:
  // ---- for the layers above (movement, halo, io, print, numeric: detail::ArrayAccess) ----
  friend struct detail::ArrayAccess;
  /// One-sided. As get_section, but into a strided destination: selected element k goes to
  /// out[sum_d k[d] * out_strides[d]] (element strides, any sign). For layers that fetch
  /// straight into window memory (ghost updates, redistribution, transposes). Complete on
  /// return (the _nb variant: at wait()). The caller guarantees the destination is valid.
  void get_section_strided(const Section<N>& sec, T* out, const shape_type& out_strides) const;
  Request get_section_strided_nb(const Section<N>& sec, T* out, const shape_type& out_strides) const;
  /// The first half of every collective on this array: completes this rank's outstanding
  /// writes (flush + MPI_Win_sync), then one allreduce that compares `sig` and carries a
  /// failure of that completion (failure rule). Afterwards every rank's earlier operations
  /// are complete everywhere. Throws on every rank.
  void begin_collective(std::uint64_t sig, detail::Call c) const {
    begin_collective(sig, name(c), [] {});
  }
  /// As above for a collective named `what` (data movement, numeric layer), running the
  /// local argument checks `validate()` first (see detail::begin_collective).
  template <class Validate>
  void begin_collective(std::uint64_t sig, std::string_view what, Validate&& validate) const {
    if (!win_) [[unlikely]] {  // moved from on this rank: join the handshake with the reason
      detail::begin_collective(std::span<const detail::Window* const>(), ctx_.comm(), sig, what,
                               "an empty (moved-from) array", [&] { moved_from(what); });
      return;  // not reached: this rank's call is invalid
    }
    const detail::Window* w = win_.get();
    detail::begin_collective(std::span<const detail::Window* const>(&w, 1), ctx_.comm(), sig, what,
                             detail::array_label(id_), std::forward<Validate>(validate));
  }

  /// "GlobalArray<double,2>::get" etc., for messages.
  static std::string_view name(detail::Call c);

  /// Local. The window.
  const detail::Window& window() const {
    check_live(detail::Call::sync);
    return *win_;
  }

  T* local_data() const noexcept { return reinterpret_cast<T*>(win_->base()); }
  T* block_ptr(int r) const noexcept {
    return reinterpret_cast<T*>(r == ctx_.rank() ? win_->base() : win_->peer(r));
  }

  void release() noexcept;
  T fetch_add(const shape_type& i, T inc);  // read_inc's engine
  void retire() noexcept {
    if (alive_) alive_->alive = false;
  }
  void check_live(detail::Call c) const {
    if (!win_) [[unlikely]]
      moved_from(name(c));
  }
  [[noreturn]] void moved_from(std::string_view what) const {
    detail::moved_from_array(what, "the array", id_);
  }
  /// Runs f(transport) with the transport of this array's window kind.
  template <class F>
  decltype(auto) with_transport(F&& f) const;
  /// Bytes of a block of `box` padded by `ghost`, overflow-checked (InvalidArgument).
  static std::size_t checked_block_bytes(const Box<N>& box, const shape_type& ghost);
  // The cache's charge for a window: the largest block of any rank (ghosts included), in
  // bytes. Identical on every rank, so byte-cap decisions are too.
  static std::size_t max_block_bytes(const Distribution<N>& d, const shape_type& ghost);

  // Slices reach the compiled library as a SliceRef (the item count a value, not a type),
  // so a user translation unit instantiates no normalisation for the slices it writes.
  template <std::size_t K, std::size_t M>
  static detail::SliceRef items_of(const Slice<K, M>& s) noexcept {
    static_assert(K <= N, "garray: too many indices for the array's number of dimensions");
    return detail::slice_ref(s);
  }
  template <std::size_t K, std::size_t M>
  Section<N> select(const Slice<K, M>& s, detail::Call c) const {
    return select_ref(items_of(s), c);
  }
  /// The section `s` selects (normalize() against shape()); errors name the call `c`.
  Section<N> select_ref(const detail::SliceRef& s, detail::Call c) const;
  /// get/put/accumulate over a slice: select_ref, then the transfer, in one library call.
  void get_ref(const detail::SliceRef& s, std::span<T> out) const;
  void put_ref(const detail::SliceRef& s, std::span<const T> in);
  void acc_ref(const detail::SliceRef& s, std::span<const T> in, T alpha);

  void check_size(const Section<N>& sec, std::size_t n, detail::Call c) const;
  template <std::size_t R, class SizeT>
  void check_shape(const Section<N>& sec, const SizeT* shp, const boost::general_storage_order<R>& order,
                   detail::Call c) const {
    Shape<R> got{};
    for (std::size_t d = 0; d < R; ++d) got[d] = static_cast<Index>(shp[d]);
    check_buffer_shape(sec, got, order == boost::c_storage_order(), c);
  }
  /// SizeMismatch unless a row-major (`c_order`) buffer of shape `got` fits the selection.
  void check_buffer_shape(const Section<N>& sec, std::span<const Index> got, bool c_order, detail::Call c) const;
  /// The selection `sec` (of rank R) as a new boost::multi_array (get() of an array).
  template <std::size_t R>
  boost::multi_array<T, R> get_array(const Section<N>& sec) const;
  void check_list(std::size_t nidx, std::size_t nval, detail::Call c) const;
  shape_type checked_index(const shape_type& i, detail::Call c) const;
  void count_piece(OpCounters& oc, int r, std::size_t bytes) const noexcept;
  void note_temp(std::size_t bytes) const noexcept;

  static std::string describe_args(const shape_type& shape, const Distribution<N>& dist);
  template <class X>
  static std::string to_string(const X& x);

  /// The engine of get/put/accumulate: one strided piece per owner (index math), each
  /// moved by this window kind's transport (detail/transport.hpp). A replicated array
  /// reads its own copy and writes every copy. With `buf_strides` the user buffer is
  /// strided (get_section_strided) instead of dense row-major. Everything that can fail is
  /// checked before the first piece moves; if MPI fails mid-way, what was issued completes
  /// before any temporary is freed.
  template <detail::Dir D>
  void transfer(const Section<N>& sec, T* buf, T alpha, Request* req,
                const shape_type* buf_strides = nullptr) const;

  /// If the non-empty section `sec` lies inside one block: that owner's piece, as
  /// for_each_piece would give it, and true.
  bool single_owner_piece(const Section<N>& sec, detail::Piece<N>& p) const noexcept;
  struct LastBlock {  // single_owner_piece's memo: a block and its layout
    int rank = -1;
    Box<N> box{};
    detail::BlockLayout<N> layout{};
  };

  /// gather / scatter / scatter_acc over a list of indices: one transport call per owner.
  template <detail::Call C>
  void list_op(std::span<const shape_type> indices, T* vals, T alpha, int) const;

  Context ctx_;
  Distribution<N> dist_ = Distribution<N>::blocked();
  Box<N> my_box_{};
  shape_type ghost_{};
  detail::BlockLayout<N> my_layout_{};
  std::unique_ptr<detail::Window> win_;
  std::uint64_t id_ = 0;
  WindowCache::Slot slot_{};     // how the window is known to ctx_'s cache
  std::shared_ptr<ArrayLiveness> alive_;  // liveness(): false once this object no longer holds the array
  mutable LastBlock last_{};     // single_owner_piece's memo (the distribution never changes)
};

}  // namespace garray

namespace garray::detail {
/// The layers above GlobalArray (movement, halo, io, print, copy, numeric) reach its
/// internals through here, so that none of them is in GlobalArray's public interface.
struct ArrayAccess {
  template <class A>
  static const Window& window(const A& a) {
    return a.window();
  }
  template <class A>
  static std::string_view name(Call c) {
    return A::name(c);
  }
  template <class A, class... Args>
  static void begin_collective(const A& a, Args&&... args) {
    a.begin_collective(std::forward<Args>(args)...);
  }
  template <class A, class... Args>
  static void get_section_strided(const A& a, Args&&... args) {
    a.get_section_strided(std::forward<Args>(args)...);
  }
  template <class A, class... Args>
  static Request get_section_strided_nb(const A& a, Args&&... args) {
    return a.get_section_strided_nb(std::forward<Args>(args)...);
  }
  template <std::size_t R, class A, class Sec>
  static auto get_array(const A& a, const Sec& sec) {
    return a.template get_array<R>(sec);
  }
};
}  // namespace garray::detail

#include <garray/array/detail/global_array_impl.hpp>

namespace garray {
// The six element types at 1-4 dimensions are compiled once into libgarray_array
// (array/src/instantiate.cpp.in): user translation units do not instantiate them again.
#ifndef GARRAY_INSTANTIATING
#define GARRAY_DETAIL_EXTERN_GET(T, N, R) \
  extern template boost::multi_array<T, R> GlobalArray<T, N>::get_array<R>(const Section<N>&) const;
#define GARRAY_DETAIL_EXTERN(T)            \
  extern template class GlobalArray<T, 1>; \
  extern template class GlobalArray<T, 2>; \
  extern template class GlobalArray<T, 3>; \
  extern template class GlobalArray<T, 4>; \
  GARRAY_DETAIL_EXTERN_GET(T, 1, 1)         \
  GARRAY_DETAIL_EXTERN_GET(T, 2, 1)         \
  GARRAY_DETAIL_EXTERN_GET(T, 2, 2)         \
  GARRAY_DETAIL_EXTERN_GET(T, 3, 1)         \
  GARRAY_DETAIL_EXTERN_GET(T, 3, 2)         \
  GARRAY_DETAIL_EXTERN_GET(T, 3, 3)         \
  GARRAY_DETAIL_EXTERN_GET(T, 4, 1)         \
  GARRAY_DETAIL_EXTERN_GET(T, 4, 2)         \
  GARRAY_DETAIL_EXTERN_GET(T, 4, 3)         \
  GARRAY_DETAIL_EXTERN_GET(T, 4, 4)
GARRAY_FOR_EACH_ELEMENT_TYPE(GARRAY_DETAIL_EXTERN)
#undef GARRAY_DETAIL_EXTERN
#undef GARRAY_DETAIL_EXTERN_GET
#endif
}  // namespace garray

#include <garray/array/copy.hpp>  // operator=(const GlobalArray&)
#include <garray/array/view.hpp>  // View is part of GlobalArray's interface

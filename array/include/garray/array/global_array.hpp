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
//   *_nb + Request::wait()   as the blocking call, at wait(); unordered among themselves
//   read_inc                 atomic fetch-and-add, complete on return
//   a get sees this rank's own earlier puts/accumulates to the same place (read your writes)
// Validation happens before any data moves: a call that throws changed nothing.

#include <garray/array/box.hpp>
#include <garray/array/detail/mpi_region.hpp>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/local_block.hpp>
#include <garray/array/request.hpp>
#include <garray/array/slice.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/stats.hpp>
#include <garray/runtime/window.hpp>
#include <garray/runtime/window_cache.hpp>

#include <boost/multi_array.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <exception>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <span>
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
enum class Dir { get, put, acc };
enum class Call { create, get, put, acc, gather, scatter, scatter_acc, read_inc, fill, sync, owner, count_ };
}  // namespace detail

/// Tag for creating a GlobalArray whose contents are unspecified (numpy.empty): no zeroing
/// pass and no barrier, for arrays that are overwritten entirely before being read.
struct Uninitialized {
  explicit constexpr Uninitialized() = default;
};
inline constexpr Uninitialized uninitialized{};

template <Element T, std::size_t N>
class GlobalArray {
  static_assert(N >= 1 && N <= 16, "garray: GlobalArray needs between 1 and 16 dimensions");

 public:
  using value_type = T;
  using shape_type = Shape<N>;
  static constexpr std::size_t dims = N;

  /// Creates a distributed array of zeros. **Collective over ctx.** Every rank must pass the
  /// same shape, distribution and ghost width: otherwise every rank throws
  /// CollectiveMismatch. A bad shape or distribution throws InvalidArgument (on every rank).
  /// `ghost[d]` cells of padding surround each block along d (filled by update_ghosts()).
  /// The window comes from ctx's cache when a destroyed array of the same type, shape,
  /// distribution and ghost width left one (see window_cache.hpp): a cache hit costs the
  /// signature allreduce, the zeroing pass and one barrier, no window allocation.
  GlobalArray(const Context& ctx, const shape_type& shape,
              const Distribution<N>& dist = Distribution<N>::blocked(), const shape_type& ghost = {})
      : GlobalArray(ctx, shape, dist, ghost, true) {}
  /// Creates a distributed array with unspecified contents (numpy.empty), for arrays that
  /// are overwritten before being read (temporaries). **Collective over ctx**; throws as the
  /// zeroing constructor. Skips the zeroing pass and its barrier, so a cache hit costs one
  /// allreduce. Reading an element before writing it returns garbage (possibly the data of
  /// a destroyed array of this context).
  GlobalArray(const Context& ctx, const shape_type& shape, const Distribution<N>& dist, const shape_type& ghost,
              Uninitialized)
      : GlobalArray(ctx, shape, dist, ghost, false) {}
  GlobalArray(const Context& ctx, const shape_type& shape, Uninitialized u)
      : GlobalArray(ctx, shape, Distribution<N>::blocked(), shape_type{}, u) {}

 private:
  GlobalArray(const Context& ctx, const shape_type& shape, const Distribution<N>& dist, const shape_type& ghost,
              bool zero)
      : ctx_(ctx), ghost_(ghost) {
    std::exception_ptr err;
    std::optional<Distribution<N>> resolved;
    try {
      resolved = dist.resolve(shape, ctx.size(), name(detail::Call::create));
      for (std::size_t d = 0; d < N; ++d)
        if (ghost[d] < 0)
          detail::raise<InvalidArgument>(name(detail::Call::create), ": negative ghost width ", ghost[d], " in dim ", d);
    } catch (const Error&) {
      err = std::current_exception();
    }
    std::uint64_t sig = detail::hash_string("create-invalid");
    WindowCache& cache = ctx.cache();
    std::size_t bytes = 0;
    WindowCache::Plan plan;
    if (resolved) {
      // The cache key: everything that makes two windows interchangeable (the group is the
      // context, whose cache this is). It doubles as the create signature.
      sig = detail::hash_mix(detail::hash_string("create"), static_cast<std::uint64_t>(detail::type_code<T>()));
      sig = detail::hash_mix(sig, N);
      sig = detail::hash_mix(sig, resolved->signature());
      for (auto g : ghost) sig = detail::hash_mix(sig, static_cast<std::uint64_t>(g));
      slot_.key = sig | 1;  // never 0 (reserved by the cache)
      slot_.charge = max_block_bytes(*resolved, ghost);
      bytes = static_cast<std::size_t>(detail::block_layout(resolved->block(ctx.rank()), ghost).elements) * sizeof(T);
      // The cache's decision (hit/miss, evictions, its state, live arrays) is part of the
      // signature: a rank that destroyed an array the others keep fails here, everywhere.
      plan = cache.plan(slot_, bytes);
      sig = detail::hash_mix(sig, plan.signature);
    }
    try {
      detail::agree_signature(ctx.comm(), sig, name(detail::Call::create), [&] {
        return describe_args(shape, dist) + ", " + cache.describe() + (plan.hit ? ", hit" : ", miss");
      });
    } catch (const CollectiveMismatch&) {
      if (err) std::rethrow_exception(err);  // the erring rank reports its own reason
      throw;
    }
    if (err) std::rethrow_exception(err);
    dist_ = std::move(*resolved);
    my_box_ = dist_.block(ctx.rank());
    my_layout_ = detail::block_layout(my_box_, ghost_);
    // After the allreduce above every rank has released the old array of a reused window
    // (flush_all at release), so nobody reads or writes this memory any more.
    win_ = cache.acquire(ctx_, slot_, bytes);
    id_ = ctx_.next_array_id();
    ++ctx_.stats().arrays_created;
    if (zero) {
      // New memory is uninitialised, reused memory holds the old array: zero it, then a
      // barrier so no rank's first put can land before the zeroing.
      std::fill_n(local_data(), my_layout_.elements, T{});
      win_->memory_sync();
      ctx_.barrier();
    }
    win_->memory_sync();
  }

 public:
  GlobalArray(GlobalArray&&) noexcept = default;
  GlobalArray& operator=(GlobalArray&& o) noexcept {
    if (this != &o) {
      release();
      ctx_ = std::move(o.ctx_);
      dist_ = std::move(o.dist_);
      my_box_ = o.my_box_;
      ghost_ = o.ghost_;
      my_layout_ = o.my_layout_;
      win_ = std::move(o.win_);
      id_ = o.id_;
      slot_ = o.slot_;
    }
    return *this;
  }
  /// Returns the window to the context's cache: **Local** (flush_all on the window, no
  /// communication). With the cache off (depth 0) frees it: **Collective** (see
  /// detail::Window for the unwinding rule). Never throws.
  ~GlobalArray() { release(); }

  // ---- layout queries: Local --------------------------------------------------------
  const shape_type& shape() const noexcept { return dist_.shape(); }
  index size() const noexcept { return volume(shape()); }
  const Distribution<N>& distribution() const noexcept { return dist_; }
  const Context& context() const noexcept { return ctx_; }
  /// This rank's block (may be empty).
  const Box<N>& local_box() const noexcept { return my_box_; }
  /// The block of any rank of the context.
  Box<N> box_of(int rank) const noexcept { return dist_.block(rank); }
  /// The rank owning global index `i` (negative indices count from the end); for a
  /// replicated array, this rank (its own copy). Throws BoundsError.
  int owner(const shape_type& i) const {
    const auto g = checked_index(i, detail::Call::owner);
    return dist_.is_replicated() ? ctx_.rank() : dist_.owner(g);
  }
  /// Ghost width per dimension.
  const shape_type& ghost() const noexcept { return ghost_; }
  /// Where `rank`'s block lives in its window memory (ghost padding included).
  detail::BlockLayout<N> layout_of(int rank) const noexcept {
    return rank == ctx_.rank() ? my_layout_ : detail::block_layout(dist_.block(rank), ghost_);
  }
  /// The element offset of global index `i` in `rank`'s window memory.
  index offset_in_block(int rank, const shape_type& i) const noexcept { return layout_of(rank).offset(i); }

  /// Local. RAII access to this rank's block, indexed with global coordinates. With ghost
  /// cells the view spans [lo - ghost, hi + ghost) (box() is still the owned block).
  LocalBlock<T, N> access() { return LocalBlock<T, N>(local_data(), my_box_, ghost_, win_.get()); }

  // ---- one-sided transfers over slices ----------------------------------------------
  /// One-sided. Copies the selection into `out` (dense, row-major over the selection's
  /// shape). Complete on return. Throws InvalidSlice, BoundsError, SizeMismatch.
  template <std::size_t K, std::size_t M>
  void get(const Slice<K, M>& s, std::span<T> out) const {
    get_section(select(s, detail::Call::get), out);
  }
  template <std::size_t K, std::size_t M, std::size_t R>
  void get(const Slice<K, M>& s, boost::multi_array_ref<T, R>& out) const {
    const auto sec = select(s, detail::Call::get);
    check_shape<R>(sec, out.shape(), out.storage_order(), detail::Call::get);
    get_section(sec, std::span<T>(out.data(), out.num_elements()));
  }
  /// One-sided. The selection as a new boost::multi_array (or a single value when every
  /// dimension is indexed by an integer).
  template <std::size_t K, std::size_t M>
  auto get(const Slice<K, M>& s) const {
    constexpr std::size_t R = selection_rank<N, K, M>;
    const auto sec = select(s, detail::Call::get);
    if constexpr (R == 0) {
      T v{};
      get_section(sec, std::span<T>(&v, 1));
      return v;
    } else {
      boost::multi_array<T, R> out(sec.template kept_shape<R>());
      get_section(sec, std::span<T>(out.data(), out.num_elements()));
      return out;
    }
  }

  /// One-sided. Writes `in` into the selection. Locally complete on return; remotely at
  /// fence()/sync(). Throws InvalidSlice, BoundsError, SizeMismatch.
  template <std::size_t K, std::size_t M>
  void put(const Slice<K, M>& s, std::span<const T> in) {
    put_section(select(s, detail::Call::put), in);
  }
  template <std::size_t K, std::size_t M, std::size_t R>
  void put(const Slice<K, M>& s, const boost::multi_array_ref<T, R>& in) {
    const auto sec = select(s, detail::Call::put);
    check_shape<R>(sec, in.shape(), in.storage_order(), detail::Call::put);
    put_section(sec, std::span<const T>(in.data(), in.num_elements()));
  }

  /// One-sided. selection += alpha * in, atomic per element with respect to other
  /// accumulates. Completion as put.
  template <std::size_t K, std::size_t M>
  void accumulate(const Slice<K, M>& s, std::span<const T> in, T alpha = T{1}) {
    acc_section(select(s, detail::Call::acc), in, alpha);
  }
  template <std::size_t K, std::size_t M, std::size_t R>
  void accumulate(const Slice<K, M>& s, const boost::multi_array_ref<T, R>& in, T alpha = T{1}) {
    const auto sec = select(s, detail::Call::acc);
    check_shape<R>(sec, in.shape(), in.storage_order(), detail::Call::acc);
    acc_section(sec, std::span<const T>(in.data(), in.num_elements()), alpha);
  }

  /// Nonblocking variants: the request's wait() completes as the blocking call.
  template <std::size_t K, std::size_t M>
  Request get_nb(const Slice<K, M>& s, std::span<T> out) const {
    return get_section_nb(select(s, detail::Call::get), out);
  }
  template <std::size_t K, std::size_t M>
  Request put_nb(const Slice<K, M>& s, std::span<const T> in) {
    return put_section_nb(select(s, detail::Call::put), in);
  }
  template <std::size_t K, std::size_t M>
  Request acc_nb(const Slice<K, M>& s, std::span<const T> in, T alpha = T{1}) {
    return acc_section_nb(select(s, detail::Call::acc), in, alpha);
  }

  // ---- the same over canonical sections (used by views) --------------------------------
  void get_section(const Section<N>& sec, std::span<T> out) const {
    check_size(sec, out.size(), detail::Call::get);
    transfer<detail::Dir::get>(sec, out.data(), T{1}, nullptr);
  }
  void put_section(const Section<N>& sec, std::span<const T> in) {
    check_size(sec, in.size(), detail::Call::put);
    transfer<detail::Dir::put>(sec, const_cast<T*>(in.data()), T{1}, nullptr);
  }
  void acc_section(const Section<N>& sec, std::span<const T> in, T alpha = T{1}) {
    check_size(sec, in.size(), detail::Call::acc);
    transfer<detail::Dir::acc>(sec, const_cast<T*>(in.data()), alpha, nullptr);
  }
  Request get_section_nb(const Section<N>& sec, std::span<T> out) const {
    check_size(sec, out.size(), detail::Call::get);
    Request r;
    transfer<detail::Dir::get>(sec, out.data(), T{1}, &r);
    return r;
  }
  Request put_section_nb(const Section<N>& sec, std::span<const T> in) {
    check_size(sec, in.size(), detail::Call::put);
    Request r;
    transfer<detail::Dir::put>(sec, const_cast<T*>(in.data()), T{1}, &r);
    return r;
  }
  Request acc_section_nb(const Section<N>& sec, std::span<const T> in, T alpha = T{1}) {
    check_size(sec, in.size(), detail::Call::acc);
    Request r;
    transfer<detail::Dir::acc>(sec, const_cast<T*>(in.data()), alpha, &r);
    return r;
  }
  /// One-sided. As get_section, but into a strided destination: selected element k goes to
  /// out[sum_d k[d] * out_strides[d]] (element strides, any sign). For layers that fetch
  /// straight into window memory (ghost updates, redistribution, transposes). Complete on
  /// return (the _nb variant: at wait()). The caller guarantees the destination is valid.
  void get_section_strided(const Section<N>& sec, T* out, const shape_type& out_strides) const {
    transfer<detail::Dir::get>(sec, out, T{1}, nullptr, &out_strides);
  }
  Request get_section_strided_nb(const Section<N>& sec, T* out, const shape_type& out_strides) const {
    Request r;
    transfer<detail::Dir::get>(sec, out, T{1}, &r, &out_strides);
    return r;
  }
  /// A view of the selection: no data moves; views compose (see view.hpp).
  template <std::size_t K, std::size_t M>
  View<T, N, selection_rank<N, K, M>> operator[](const Slice<K, M>& s);
  /// A view of the whole array.
  View<T, N, N> view();

  /// Normalises a slice against this array (throws as get/put would).
  template <std::size_t K, std::size_t M>
  Section<N> section(const Slice<K, M>& s) const {
    return select(s, detail::Call::get);
  }

  // ---- index lists (GA's NGA_Gather / NGA_Scatter / NGA_Scatter_acc) -------------------
  /// One-sided. out[j] = a[indices[j]]. One MPI call per owner. Complete on return.
  /// Throws BoundsError (naming the position in the list) or SizeMismatch.
  void gather(std::span<const shape_type> indices, std::span<T> out) const {
    check_list(indices.size(), out.size(), detail::Call::gather);
    list_op<detail::Call::gather>(indices, out.data(), T{1}, dist_.is_replicated() ? ctx_.rank() : -1);
  }
  /// One-sided. a[indices[j]] = values[j]; with repeated indices one of the values wins.
  void scatter(std::span<const shape_type> indices, std::span<const T> values) {
    check_list(indices.size(), values.size(), detail::Call::scatter);
    for (int c = dist_.is_replicated() ? 0 : -1; c < (dist_.is_replicated() ? ctx_.size() : 0); ++c)
      list_op<detail::Call::scatter>(indices, const_cast<T*>(values.data()), T{1}, c);  // every copy
  }
  /// One-sided. a[indices[j]] += alpha * values[j], atomic per element; repeated indices
  /// all contribute.
  void scatter_acc(std::span<const shape_type> indices, std::span<const T> values, T alpha = T{1}) {
    check_list(indices.size(), values.size(), detail::Call::scatter_acc);
    for (int c = dist_.is_replicated() ? 0 : -1; c < (dist_.is_replicated() ? ctx_.size() : 0); ++c)
      list_op<detail::Call::scatter_acc>(indices, const_cast<T*>(values.data()), alpha, c);  // every copy
  }

  /// One-sided. Atomically adds `inc` to element `i` and returns its previous value (the
  /// shared counter of dynamic load balancing). Integer element types only.
  T read_inc(const shape_type& i, T inc = T{1}) {
    static_assert(std::is_integral_v<T>,
                  "garray: read_inc needs an integer element type (std::int32_t or std::int64_t)");
    const auto g = checked_index(i, detail::Call::read_inc);
    const int r = dist_.owner(g);
    const auto disp = static_cast<MPI_Aint>(offset_in_block(r, g) * static_cast<index>(sizeof(T)));
    T old{};
    detail::check_mpi(MPI_Fetch_and_op(&inc, &old, mpi_type<T>(), r, disp, MPI_SUM, win_->win()),
                      "MPI_Fetch_and_op");
    win_->flush(r);
    if (dist_.is_replicated()) {  // rank 0's copy is the atomic one; the others get the same increments
      for (int q = 1; q < ctx_.size(); ++q) {
        detail::check_mpi(MPI_Accumulate(&inc, 1, mpi_type<T>(), q, disp, 1, mpi_type<T>(), MPI_SUM, win_->win()),
                          "MPI_Accumulate");
        win_->mark_dirty(q);
      }
      win_->flush_local_all();
    }
    auto& oc = ctx_.stats()[Op::read_inc];
    ++oc.calls;
    count_piece(oc, r, sizeof(T));
    ++ctx_.stats().mpi_rma_calls;
    return old;
  }

  // ---- synchronisation ----------------------------------------------------------------
  /// Local. Completes this rank's outstanding puts/accumulates at their targets.
  void fence() {
    win_->complete_all();
    ++ctx_.stats().fences;
  }
  /// **Collective.** Completes every rank's outstanding operations on this array, then a
  /// barrier: afterwards local blocks and remote views agree. Throws CollectiveMismatch on
  /// every rank if ranks sync different arrays.
  void sync() {
    win_->complete_all();
    win_->memory_sync();
    detail::agree_signature(ctx_.comm(), detail::hash_mix(detail::hash_string("sync"), id_),
                            name(detail::Call::sync), "array #" + std::to_string(id_));
    win_->memory_sync();
    ++ctx_.stats().syncs;
  }
  /// **Collective.** Sets every element to `value` (with a sync before and after).
  void fill(const T& value) {
    sync();
    std::fill_n(local_data(), my_layout_.elements, value);  // ghosts too: they mirror neighbours
    sync();
  }

  /// "GlobalArray<double,2>::get" etc., for messages.
  static std::string_view name(detail::Call c) {
    static const auto names = [] {
      const std::string prefix =
          "GlobalArray<" + std::string(type_name<T>()) + "," + std::to_string(N) + ">::";
      const char* ops[] = {"create",  "get",         "put",      "accumulate", "gather", "scatter",
                           "scatter_acc", "read_inc", "fill",     "sync",       "owner"};
      std::array<std::string, static_cast<std::size_t>(detail::Call::count_)> n;
      for (std::size_t i = 0; i < n.size(); ++i) n[i] = prefix + ops[i];
      return n;
    }();
    return names[static_cast<std::size_t>(c)];
  }

  /// Local. The window (for layers above that need raw access, e.g. the array cache).
  const detail::Window& window() const noexcept { return *win_; }
  std::uint64_t id() const noexcept { return id_; }

 private:
  T* local_data() const noexcept { return reinterpret_cast<T*>(win_->base()); }
  T* block_ptr(int r) const noexcept {
    return reinterpret_cast<T*>(r == ctx_.rank() ? win_->base() : win_->peer(r));
  }

  void release() noexcept {
    if (!win_) return;
    ++ctx_.stats().arrays_destroyed;
    ctx_.cache().release(slot_, std::move(win_));
  }
  // The cache's charge for a window: the largest block of any rank (ghosts included), in
  // bytes. Identical on every rank, so byte-cap decisions are too.
  static std::size_t max_block_bytes(const Distribution<N>& d, const shape_type& ghost) noexcept {
    if (d.nblocks() == 0) return 0;
    std::size_t elems = 1;
    for (std::size_t k = 0; k < N; ++k) {
      const auto& b = d.bounds(k);
      index widest = 0;
      for (std::size_t i = 0; i + 1 < b.size(); ++i) widest = std::max(widest, b[i + 1] - b[i]);
      if (widest == 0) return 0;  // every block is empty (and has no ghosts)
      elems *= static_cast<std::size_t>(widest + 2 * ghost[k]);
    }
    return elems * sizeof(T);
  }

  template <std::size_t K, std::size_t M>
  Section<N> select(const Slice<K, M>& s, detail::Call c) const {
    static_assert(K <= N, "garray: too many indices for the array's number of dimensions");
    return normalize(shape(), s, name(c));
  }

  void check_size(const Section<N>& sec, std::size_t n, detail::Call c) const {
    if (static_cast<index>(n) != sec.size())
      detail::raise<SizeMismatch>(name(c), ": buffer has ", n, " elements but the selection ", sec,
                                  " has ", sec.size());
  }
  template <std::size_t R, class SizeT>
  void check_shape(const Section<N>& sec, const SizeT* shp, const boost::general_storage_order<R>& order,
                   detail::Call c) const {
    const auto want = sec.template kept_shape<R>();
    bool ok = sec.rank() == R && order == boost::c_storage_order();
    for (std::size_t d = 0; d < R; ++d) ok = ok && static_cast<index>(shp[d]) == want[d];
    if (!ok) {
      Shape<R> got{};
      for (std::size_t d = 0; d < R; ++d) got[d] = static_cast<index>(shp[d]);
      detail::raise<SizeMismatch>(name(c), ": buffer of shape ", detail::seq(got),
                                  " (row-major required) for a selection of shape ", detail::seq(want));
    }
  }
  void check_list(std::size_t nidx, std::size_t nval, detail::Call c) const {
    if (nidx != nval)
      detail::raise<SizeMismatch>(name(c), ": ", nidx, " indices but ", nval, " values");
  }
  shape_type checked_index(const shape_type& i, detail::Call c) const {
    shape_type g{};
    for (std::size_t d = 0; d < N; ++d) g[d] = detail::normalize_index(i[d], shape()[d], d, name(c));
    return g;
  }
  void count_piece(OpCounters& oc, int r, std::size_t bytes) const noexcept {
    if (r == ctx_.rank()) {
      ++oc.local_pieces;
      oc.local_bytes += static_cast<std::int64_t>(bytes);
    } else {
      ++oc.remote_pieces;
      oc.remote_bytes += static_cast<std::int64_t>(bytes);
    }
  }
  void note_temp(std::size_t bytes) const noexcept {
    auto& p = ctx_.stats().temp_bytes_peak;
    p = std::max<std::int64_t>(p, static_cast<std::int64_t>(bytes));
  }

  static std::string describe_args(const shape_type& shape, const Distribution<N>& dist) {
    return "type " + std::string(type_name<T>()) + ", shape " + to_string(detail::seq(shape)) + ", " +
           dist.describe();
  }
  template <class X>
  static std::string to_string(const X& x) {
    std::ostringstream os;
    os << x;
    return os.str();
  }

  // A get into a temporary that must be unpacked into the user's buffer once complete.
  struct Unpack {
    std::shared_ptr<T[]> tmp;
    detail::Strided2<N> it;  // sa: user buffer strides, sb: dense temp strides
    T* dst;
    void operator()() const { detail::strided_copy(it, dst, tmp.get()); }
  };

  /// The engine of get/put/accumulate: one piece per owner, each moved by a strided memory
  /// copy (own block, or any block of a shared window) or by one MPI call.
  /// A replicated array reads its own copy and writes every copy. With `buf_strides` the
  /// user buffer is strided (get_section_strided) instead of dense row-major.
  template <detail::Dir D>
  void transfer(const Section<N>& sec, T* buf, T alpha, Request* req, const shape_type* buf_strides = nullptr) const {
    auto& st = ctx_.stats();
    OpCounters& oc = st[D == detail::Dir::get ? Op::get : D == detail::Dir::put ? Op::put : Op::acc];
    ++oc.calls;
    const detail::Window& w = *win_;
    const int me = ctx_.rank();
    const bool shm = w.kind() == WindowKind::shared;
    const MPI_Datatype base = mpi_type<T>();

    std::shared_ptr<T[]> scaled;  // alpha * in, when alpha != 1
    const T* src = buf;
    if constexpr (D == detail::Dir::acc) {
      if (alpha != T{1}) {
        const auto n = static_cast<std::size_t>(sec.size());
        scaled.reset(new T[n]);
        for (std::size_t i = 0; i < n; ++i) scaled[i] = alpha * buf[i];
        src = scaled.get();
        note_temp(n * sizeof(T));
      }
    }

    int ntargets = 0, last_target = -1;
    struct Extras {
      std::vector<Unpack> unpacks;             // gets through temporaries (negative steps)
      std::vector<std::shared_ptr<T[]>> keep;  // put/acc temporaries, alive until completion
    };
    std::unique_ptr<Extras> extra;  // only built on the (rare) temporary path
    auto extras = [&]() -> Extras& {
      if (!extra) extra = std::make_unique<Extras>();
      return *extra;
    };
    auto issue = [&](const detail::Piece<N>& p) {
      const int r = p.rank;
      count_piece(oc, r, static_cast<std::size_t>(p.size()) * sizeof(T));
      if constexpr (D == detail::Dir::acc) {
        if (shm) {  // garray's own accumulate: the target segment's lock around a local add
          T* blk = block_ptr(r);
          const auto it = detail::collapse(p.count, p.block_str, p.buf_str);
          w.lock_segment(r);
          detail::strided_add(it, blk + p.block_off, src + p.buf_off);
          w.unlock_segment(r);
          return;
        }
      }
      if (D != detail::Dir::acc && (r == me || shm)) {
        T* blk = block_ptr(r);
        if constexpr (D == detail::Dir::get) {
          w.complete_writes_to(r);
          detail::strided_copy(detail::collapse(p.count, p.buf_str, p.block_str), buf + p.buf_off, blk + p.block_off);
        } else {
          detail::strided_copy(detail::collapse(p.count, p.block_str, p.buf_str), blk + p.block_off, src + p.buf_off);
        }
        return;
      }
      // MPI path. Target strides must be positive: flip reversed dimensions, which moves
      // the reversal to the user-buffer side.
      Shape<N> ts = p.block_str, bs = p.buf_str;
      index toff = p.block_off, boff = p.buf_off;
      for (std::size_t d = 0; d < N; ++d) {
        if (ts[d] < 0) {
          toff += (p.count[d] - 1) * ts[d];
          ts[d] = -ts[d];
          boff += (p.count[d] - 1) * bs[d];
          bs[d] = -bs[d];
        }
      }
      const auto it = detail::collapse(p.count, ts, bs);
      bool reversed = false;
      for (int d = 0; d < it.nd; ++d) reversed = reversed || it.sb[static_cast<std::size_t>(d)] < 0;
      detail::MpiRegion target(base, sizeof(T), it.nd, it.count.data(), it.sa.data());
      T* origin = (D == detail::Dir::get ? buf : const_cast<T*>(src)) + boff;
      detail::MpiRegion oreg;
      if (!reversed) {
        oreg = detail::MpiRegion(base, sizeof(T), it.nd, it.count.data(), it.sb.data());
      } else {
        // Reversed on the buffer side: go through a dense temporary in target order.
        const index n = p.size();
        std::shared_ptr<T[]> tmp(new T[static_cast<std::size_t>(n)]);
        note_temp(static_cast<std::size_t>(n) * sizeof(T));
        detail::Strided2<N> pk = it;
        index acc = 1;
        for (int d = it.nd - 1; d >= 0; --d) {
          pk.sa[static_cast<std::size_t>(d)] = it.sb[static_cast<std::size_t>(d)];  // user buffer
          pk.sb[static_cast<std::size_t>(d)] = acc;                                  // dense temp
          acc *= it.count[static_cast<std::size_t>(d)];
        }
        if constexpr (D == detail::Dir::get) {
          extras().unpacks.push_back(Unpack{tmp, pk, origin});
        } else {
          std::swap(pk.sa, pk.sb);
          detail::strided_copy(pk, tmp.get(), origin);
          extras().keep.push_back(tmp);
        }
        origin = tmp.get();
        const index one = 1;
        oreg = detail::MpiRegion(base, sizeof(T), 1, &n, &one);
      }
      const auto disp = static_cast<MPI_Aint>(toff * static_cast<index>(sizeof(T)));
      const MPI_Win win = w.win();
      if constexpr (D == detail::Dir::get) {
        w.complete_writes_to(r);
        if (req && detail::request_ops_ok)
          detail::check_mpi(MPI_Rget(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win,
                                     req->add_mpi()),
                            "MPI_Rget");
        else
          detail::check_mpi(MPI_Get(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win),
                            "MPI_Get");
      } else if constexpr (D == detail::Dir::put) {
        if (req && detail::request_ops_ok)
          detail::check_mpi(MPI_Rput(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win,
                                     req->add_mpi()),
                            "MPI_Rput");
        else
          detail::check_mpi(MPI_Put(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win),
                            "MPI_Put");
        const_cast<detail::Window&>(w).mark_dirty(r);
      } else {
        if (req && detail::request_ops_ok)
          detail::check_mpi(MPI_Raccumulate(origin, oreg.count(), oreg.type(), r, disp, target.count(),
                                            target.type(), MPI_SUM, win, req->add_mpi()),
                            "MPI_Raccumulate");
        else
          detail::check_mpi(MPI_Accumulate(origin, oreg.count(), oreg.type(), r, disp, target.count(),
                                           target.type(), MPI_SUM, win),
                            "MPI_Accumulate");
        const_cast<detail::Window&>(w).mark_dirty(r);
      }
      if (req && !detail::request_ops_ok) req->add_finisher([&w, r] { w.flush_local(r); });
      ++st.mpi_rma_calls;
      if (r != last_target) {
        ++ntargets;
        last_target = r;
      }
    };
    const Shape<N> dense = row_major_strides(sec.count);
    detail::for_each_piece(dist_, sec, ghost_, [&](const detail::Piece<N>& piece) {
      if (!buf_strides && !dist_.is_replicated()) return issue(piece);  // hot path: no copy
      detail::Piece<N> p = piece;
      if (buf_strides) {  // re-base the buffer side: k0[d] = (buf_off / dense[d]) % count[d]
        index off = 0;
        for (std::size_t d = 0; d < N; ++d) {
          off += (p.buf_off / dense[d]) % sec.count[d] * (*buf_strides)[d];
          p.buf_str[d] = (*buf_strides)[d];
        }
        p.buf_off = off;
      }
      if (!dist_.is_replicated()) return issue(p);
      if constexpr (D == detail::Dir::get) {
        p.rank = me;
        issue(p);
      } else {
        for (int c = 0; c < ctx_.size(); ++c) {
          p.rank = c;
          issue(p);
        }
      }
    });

    if (req) {
      if (extra)
        for (auto& u : extra->unpacks) req->add_finisher(std::move(u));
      if ((extra && !extra->keep.empty()) || scaled)
        req->add_finisher([k = extra ? std::move(extra->keep) : decltype(Extras::keep){}, s = std::move(scaled)] {});
      return;
    }
    if (ntargets == 1) w.flush_local(last_target);
    else if (ntargets > 1) w.flush_local_all();
    if (extra)
      for (auto& u : extra->unpacks) u();
  }

  /// gather / scatter / scatter_acc over a list of indices.
  template <detail::Call C>
  void list_op(std::span<const shape_type> indices, T* vals, T alpha, int copy = -1) const {
    constexpr Op op = C == detail::Call::gather ? Op::gather : C == detail::Call::scatter ? Op::scatter : Op::scatter_acc;
    const std::size_t n = indices.size();
    // Validate everything first: a call that throws moves nothing.
    std::vector<int> owner(n);
    std::vector<index> off(n);
    for (std::size_t j = 0; j < n; ++j) {
      shape_type g{};
      for (std::size_t d = 0; d < N; ++d) {
        const index v = indices[j][d] < 0 ? indices[j][d] + shape()[d] : indices[j][d];
        if (v < 0 || v >= shape()[d])
          detail::raise<BoundsError>(name(C), ": index list entry ", j, " ", detail::seq(indices[j]),
                                     " out of range for shape ", detail::seq(shape()), " (dim ", d, ")");
        g[d] = v;
      }
      owner[j] = copy >= 0 ? copy : dist_.owner(g);  // copy: a replica's rank
      off[j] = offset_in_block(owner[j], g);
    }
    auto& st = ctx_.stats();
    OpCounters& oc = st[op];
    ++oc.calls;
    const detail::Window& w = *win_;
    const int me = ctx_.rank(), p = ctx_.size();
    const bool direct_ok = C != detail::Call::scatter_acc;
    // Bucket positions by owner (counting sort keeps list order within an owner).
    std::vector<std::size_t> first(static_cast<std::size_t>(p) + 1, 0), order(n);
    for (std::size_t j = 0; j < n; ++j) ++first[static_cast<std::size_t>(owner[j]) + 1];
    std::partial_sum(first.begin(), first.end(), first.begin());
    {
      std::vector<std::size_t> pos(first.begin(), first.end() - 1);
      for (std::size_t j = 0; j < n; ++j) order[pos[static_cast<std::size_t>(owner[j])]++] = j;
    }
    std::vector<std::pair<std::vector<T>, std::pair<std::size_t, std::size_t>>> pending;  // gets to unpack
    int ntargets = 0;
    for (int r = 0; r < p; ++r) {
      const std::size_t b = first[static_cast<std::size_t>(r)], e = first[static_cast<std::size_t>(r) + 1];
      if (b == e) continue;
      count_piece(oc, r, (e - b) * sizeof(T));
      if (C == detail::Call::scatter_acc && w.kind() == WindowKind::shared) {
        // As accumulate on a shared window: the target segment's lock around local adds.
        T* blk = block_ptr(r);
        w.lock_segment(r);
        for (std::size_t q = b; q < e; ++q) {
          const std::size_t j = order[q];
          blk[off[j]] += alpha * vals[j];
        }
        w.unlock_segment(r);
        continue;
      }
      if (direct_ok && (r == me || w.kind() == WindowKind::shared)) {
        T* blk = block_ptr(r);
        if (C == detail::Call::gather) w.complete_writes_to(r);
        for (std::size_t q = b; q < e; ++q) {
          const std::size_t j = order[q];
          if constexpr (C == detail::Call::gather) vals[j] = blk[off[j]];
          else blk[off[j]] = vals[j];
        }
        continue;
      }
      // One MPI call with an indexed target type. Put/acc targets must not repeat:
      // combine duplicates locally (scatter: the last value wins; scatter_acc: sum).
      std::vector<std::size_t> idx(order.begin() + static_cast<std::ptrdiff_t>(b),
                                   order.begin() + static_cast<std::ptrdiff_t>(e));
      std::vector<T> buf;
      std::vector<MPI_Aint> disps;
      if constexpr (C == detail::Call::gather) {
        disps.reserve(idx.size());
        for (auto j : idx) disps.push_back(static_cast<MPI_Aint>(off[j] * static_cast<index>(sizeof(T))));
        buf.resize(idx.size());
      } else {
        std::stable_sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return off[x] < off[y]; });
        for (std::size_t q = 0; q < idx.size(); ++q) {
          const std::size_t j = idx[q];
          const T v = C == detail::Call::scatter_acc ? alpha * vals[j] : vals[j];
          if (!disps.empty() && disps.back() == static_cast<MPI_Aint>(off[j] * static_cast<index>(sizeof(T)))) {
            if constexpr (C == detail::Call::scatter_acc) buf.back() += v;
            else buf.back() = v;
          } else {
            disps.push_back(static_cast<MPI_Aint>(off[j] * static_cast<index>(sizeof(T))));
            buf.push_back(v);
          }
        }
      }
      MPI_Datatype tt;
      detail::check_mpi(MPI_Type_create_hindexed_block(static_cast<int>(disps.size()), 1, disps.data(),
                                                       mpi_type<T>(), &tt),
                        "MPI_Type_create_hindexed_block");
      detail::check_mpi(MPI_Type_commit(&tt), "MPI_Type_commit");
      const int cnt = static_cast<int>(buf.size());
      int rc;
      if constexpr (C == detail::Call::gather) {
        w.complete_writes_to(r);
        rc = MPI_Get(buf.data(), cnt, mpi_type<T>(), r, 0, 1, tt, w.win());
      } else if constexpr (C == detail::Call::scatter) {
        rc = MPI_Put(buf.data(), cnt, mpi_type<T>(), r, 0, 1, tt, w.win());
      } else {
        rc = MPI_Accumulate(buf.data(), cnt, mpi_type<T>(), r, 0, 1, tt, MPI_SUM, w.win());
      }
      MPI_Type_free(&tt);
      detail::check_mpi(rc, C == detail::Call::gather ? "MPI_Get" : C == detail::Call::scatter ? "MPI_Put" : "MPI_Accumulate");
      if constexpr (C != detail::Call::gather) const_cast<detail::Window&>(w).mark_dirty(r);
      ++st.mpi_rma_calls;
      ++ntargets;
      if constexpr (C == detail::Call::gather) {
        // keep buf and its positions until the flush
        pending.emplace_back(std::move(buf), std::make_pair(b, e));
      } else {
        pending.emplace_back(std::move(buf), std::make_pair(b, b));  // keep alive only
      }
    }
    if (ntargets > 0) w.flush_local_all();
    if constexpr (C == detail::Call::gather) {
      for (auto& [buf, range] : pending)
        for (std::size_t q = range.first; q < range.second; ++q) vals[order[q]] = buf[q - range.first];
    }
  }

  Context ctx_;
  Distribution<N> dist_ = Distribution<N>::blocked();
  Box<N> my_box_{};
  shape_type ghost_{};
  detail::BlockLayout<N> my_layout_{};
  std::unique_ptr<detail::Window> win_;
  std::uint64_t id_ = 0;
  WindowCache::Slot slot_{};  // how the window is known to ctx_'s cache
};

}  // namespace garray

#include <garray/array/view.hpp>  // View is part of GlobalArray's interface

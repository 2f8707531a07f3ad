#pragma once
// The machinery behind GlobalArray<T, N> (global_array.hpp): creation, the transfer engine
// of get/put/accumulate, index lists, read_inc, sync/fill, validation. Out-of-class member
// definitions, so that the explicit instantiations compiled into libgarray_array (six
// element types x 1-4 dimensions, array/src/instantiate.cpp.in) are used by every user
// translation unit instead of being instantiated again (`extern template` at the end of
// global_array.hpp). Other element types and ranks instantiate from here as usual.

#include <algorithm>
#include <exception>
#include <garray/array/detail/mpi_region.hpp>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/detail/transport.hpp>
#include <garray/runtime/fault.hpp>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace garray {

// Constructors, destructor, moves and access() are compiled too (not inline), so a user
// translation unit does not instantiate the distribution, the liveness token or the block's
// boost view for them.
template <Element T, std::size_t N>
GlobalArray<T, N>::GlobalArray(const Context& ctx, const shape_type& shape)
    : GlobalArray(ctx, shape, Distribution<N>::blocked(), shape_type{}, true) {}

template <Element T, std::size_t N>
GlobalArray<T, N>::GlobalArray(const Context& ctx, const shape_type& shape, Uninitialized u)
    : GlobalArray(ctx, shape, Distribution<N>::blocked(), shape_type{}, u) {}

template <Element T, std::size_t N>
GlobalArray<T, N>::GlobalArray(GlobalArray&& o)
    : ctx_(o.ctx_),
      dist_(o.dist_),  // copied: the moved-from shell keeps a whole map (distribution() stays usable)
      my_box_(o.my_box_),
      ghost_(o.ghost_),
      my_layout_(o.my_layout_),
      id_(o.id_),
      slot_(o.slot_) {
  // Everything that can throw (the copies above, the token) before the window moves: a throw
  // after it would destroy the window in this half-built object, on this rank alone.
  alive_ = std::make_shared<ArrayLiveness>(ArrayLiveness{static_cast<bool>(o.win_), ctx_, o.id_});
  win_ = std::move(o.win_);
  o.retire();
}

template <Element T, std::size_t N>
GlobalArray<T, N>& GlobalArray<T, N>::operator=(GlobalArray&& o) {
  if (this != &o) {
    auto token = std::make_shared<ArrayLiveness>(ArrayLiveness{static_cast<bool>(o.win_), o.ctx_, o.id_});
    release();
    retire();
    ctx_ = o.ctx_;
    dist_ = o.dist_;  // copied, as in the move constructor
    my_box_ = o.my_box_;
    ghost_ = o.ghost_;
    my_layout_ = o.my_layout_;
    win_ = std::move(o.win_);
    id_ = o.id_;
    slot_ = o.slot_;
    alive_ = std::move(token);
    last_ = LastBlock{};
    o.retire();
  }
  return *this;
}

template <Element T, std::size_t N>
GlobalArray<T, N>::~GlobalArray() {
  release();
  retire();
}

template <Element T, std::size_t N>
LocalBlock<T, N> GlobalArray<T, N>::access() {
  check_live(detail::Call::access);
  // this rank's MPI writes to its own block (accumulates on rma and mixed windows) land
  // before its loads and stores through the block (read your writes, location consistency)
  win_->complete_writes_to(win_->rank());
  return LocalBlock<T, N>(local_data(), my_box_, ghost_, win_.get(), alive_);
}

template <Element T, std::size_t N>
GlobalArray<T, N>::GlobalArray(const Context& ctx, const shape_type& shape, const Distribution<N>& dist,
                               const shape_type& ghost, bool zero)
    : ctx_(ctx), ghost_(ghost) {
  ctx.check_valid(name(detail::Call::create));
  std::exception_ptr err;
  std::optional<Distribution<N>> resolved;
  std::size_t bytes = 0, charge = 0;
  try {
    resolved = dist.resolve(shape, ctx.size(), name(detail::Call::create));
    for (std::size_t d = 0; d < N; ++d)
      if (ghost[d] < 0)
        detail::raise<InvalidArgument>(name(detail::Call::create), ": negative ghost width ", ghost[d],
                                       " in dim ", d);
    // Every size derived from the shape and ghost width must fit: elements and bytes of
    // the largest (ghost-padded) block, which the cache charges and MPI allocates.
    charge = max_block_bytes(*resolved, ghost);
    bytes = checked_block_bytes(resolved->block(ctx.rank()), ghost);
    detail::fault_point("create.validate");
  } catch (...) {  // a garray error, or std::bad_alloc from the distribution: carried alike
    err = std::current_exception();
  }
  std::uint64_t sig = detail::hash_string("create-invalid");
  WindowCache& cache = ctx.cache();
  WindowCache::Plan plan;
  if (!err) {
    // The cache key: everything that makes two windows interchangeable (the group is the
    // context, whose cache this is). It doubles as the create signature.
    sig = detail::hash_mix(detail::hash_string("create"), static_cast<std::uint64_t>(detail::type_code<T>()));
    sig = detail::hash_mix(sig, N);
    sig = detail::hash_mix(sig, resolved->signature());
    for (auto g : ghost) sig = detail::hash_mix(sig, static_cast<std::uint64_t>(g));
    slot_.key = sig | 1;  // never 0 (reserved by the cache)
    slot_.charge = charge;
    // The cache's decision (hit/miss, evictions, its state, live arrays) is part of the
    // signature: a rank that destroyed an array the others keep fails here, everywhere.
    plan = cache.plan(slot_, bytes);
    sig = detail::hash_mix(sig, plan.signature);
    // Zeroing or not is an argument like the others (not part of the key: any window serves
    // both): ranks that disagree would leave some blocks stale in an array others see as zeros.
    sig = detail::hash_mix(sig, zero ? 0x7a65726fu : 0x756e696eu);
  }
  // A rank whose arguments are invalid throws its own error, the others CollectiveMismatch.
  detail::agree_signature(
      ctx.comm(), sig, name(detail::Call::create),
      [&] {
        // No communication here: a rank in another collective has already thrown. The cache's
        // state is part of the signature, so the hint covers the case the arguments cannot show.
        return describe_args(shape, dist) + (zero ? ", zeroed, " : ", uninitialized, ") + cache.describe() +
               (plan.hit ? ", hit" : ", miss") +
               "; if every rank passed these arguments, the window caches differ (different cache settings, "
               "an array destroyed on some ranks only, or a window whose completion failed at a destroy): "
               "use the same settings and destroy the same arrays on every rank, or call ctx.cache().clear() "
               "on every rank";
      },
      err);
  dist_ = std::move(*resolved);
  my_box_ = dist_.block(ctx.rank());
  my_layout_ = detail::block_layout(my_box_, ghost_);
  // After the allreduce above every rank has released the old array of a reused window
  // (flush_all at release), so nobody reads or writes this memory any more. acquire()
  // is collective and throws on every rank if the allocation fails anywhere.
  win_ = cache.acquire(ctx_, slot_, bytes);
  // From here on a failure on one rank must not leave the others waiting: the closing
  // agreement below carries it (failure rule), and the window goes back to the cache.
  std::exception_ptr late;
  std::shared_ptr<ArrayLiveness> token;
  try {
    detail::fault_point("create.init");
    if (zero) std::fill_n(local_data(), my_layout_.elements, T{});
    win_->memory_sync();
    token = std::make_shared<ArrayLiveness>(ArrayLiveness{true, ctx_});
  } catch (...) {
    late = std::current_exception();
  }
  // Every create ends with this agreement, also an uninitialised one: a failure above on one
  // rank must reach the others in this call, not pair its allreduce with whatever collective
  // they call next. For a zeroing create it doubles as the barrier that completes the
  // zeroing everywhere before any rank's first put can land.
  try {
    detail::conclude(ctx_.comm(), late, name(detail::Call::create));
  } catch (...) {
    ctx_.cache().release(slot_, std::move(win_));
    throw;
  }
  id_ = ctx_.next_array_id();
  token->id = id_;
  ++ctx_.stats().arrays_created;
  alive_ = std::move(token);
  // store, sync, barrier (the agreement), sync: the others' zeroing is visible to loads. After
  // the agreement a throw would reach this rank alone (and free the window on it alone).
  win_->memory_sync_noexcept();
}

namespace detail {
/// normalize() of a slice against `shape`, errors prefixed with `name(c)`. The call's name
/// is needed only in an error message: prefixed on the (cold) error path, so the hot path
/// builds no name. Inlined into the compiled get/put/accumulate over slices.
template <std::size_t N, class Name>
GARRAY_DETAIL_INLINE Section<N> select_named(const Shape<N>& shape, const SliceRef& s, Name name, Call c) {
  try {
    return compose_ref(Section<N>::full(shape), s, std::string_view{});
  } catch (const InvalidSlice& e) {
    throw InvalidSlice(std::string(name(c)) + e.what());
  } catch (const BoundsError& e) {
    throw BoundsError(std::string(name(c)) + e.what());
  }
}
}  // namespace detail

template <Element T, std::size_t N>
Section<N> GlobalArray<T, N>::select_ref(const detail::SliceRef& s, detail::Call c) const {
  return detail::select_named(shape(), s, &GlobalArray::name, c);
}

// Each checks that the array is live first: on a moved-from array every transfer throws
// InvalidArgument, also one whose slice or buffer is wrong too (semantics.md "Errors").
template <Element T, std::size_t N>
void GlobalArray<T, N>::get_ref(const detail::SliceRef& s, std::span<T> out) const {
  check_live(detail::Call::get);
  get_section(select_ref(s, detail::Call::get), out);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::put_ref(const detail::SliceRef& s, std::span<const T> in) {
  check_live(detail::Call::put);
  put_section(select_ref(s, detail::Call::put), in);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::acc_ref(const detail::SliceRef& s, std::span<const T> in, T alpha) {
  check_live(detail::Call::acc);
  acc_section(select_ref(s, detail::Call::acc), in, alpha);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::get_section(const Section<N>& sec, std::span<T> out) const {
  check_live(detail::Call::get);
  check_size(sec, out.size(), detail::Call::get);
  transfer<detail::Dir::get>(sec, out.data(), T{1}, nullptr);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::put_section(const Section<N>& sec, std::span<const T> in) {
  check_live(detail::Call::put);
  check_size(sec, in.size(), detail::Call::put);
  transfer<detail::Dir::put>(sec, const_cast<T*>(in.data()), T{1}, nullptr);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::acc_section(const Section<N>& sec, std::span<const T> in, T alpha) {
  check_live(detail::Call::acc);
  check_size(sec, in.size(), detail::Call::acc);
  transfer<detail::Dir::acc>(sec, const_cast<T*>(in.data()), alpha, nullptr);
}

template <Element T, std::size_t N>
Request GlobalArray<T, N>::get_section_nb(const Section<N>& sec, std::span<T> out) const {
  check_live(detail::Call::get);
  check_size(sec, out.size(), detail::Call::get);
  Request r;
  transfer<detail::Dir::get>(sec, out.data(), T{1}, &r);
  return r;
}

template <Element T, std::size_t N>
Request GlobalArray<T, N>::put_section_nb(const Section<N>& sec, std::span<const T> in) {
  check_live(detail::Call::put);
  check_size(sec, in.size(), detail::Call::put);
  Request r;
  transfer<detail::Dir::put>(sec, const_cast<T*>(in.data()), T{1}, &r);
  return r;
}

template <Element T, std::size_t N>
Request GlobalArray<T, N>::acc_section_nb(const Section<N>& sec, std::span<const T> in, T alpha) {
  check_live(detail::Call::acc);
  check_size(sec, in.size(), detail::Call::acc);
  Request r;
  transfer<detail::Dir::acc>(sec, const_cast<T*>(in.data()), alpha, &r);
  return r;
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::get_section_strided(const Section<N>& sec, T* out,
                                            const shape_type& out_strides) const {
  check_live(detail::Call::get);
  transfer<detail::Dir::get>(sec, out, T{1}, nullptr, &out_strides);
}

template <Element T, std::size_t N>
Request GlobalArray<T, N>::get_section_strided_nb(const Section<N>& sec, T* out,
                                                  const shape_type& out_strides) const {
  check_live(detail::Call::get);
  Request r;
  transfer<detail::Dir::get>(sec, out, T{1}, &r, &out_strides);
  return r;
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::gather(std::span<const shape_type> indices, std::span<T> out) const {
  check_live(detail::Call::gather);
  check_list(indices.size(), out.size(), detail::Call::gather);
  list_op<detail::Call::gather>(indices, out.data(), T{1}, -1);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::scatter(std::span<const shape_type> indices, std::span<const T> values) {
  check_live(detail::Call::scatter);
  check_list(indices.size(), values.size(), detail::Call::scatter);
  list_op<detail::Call::scatter>(indices, const_cast<T*>(values.data()), T{1}, -1);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::scatter_acc(std::span<const shape_type> indices, std::span<const T> values, T alpha) {
  check_live(detail::Call::scatter_acc);
  check_list(indices.size(), values.size(), detail::Call::scatter_acc);
  list_op<detail::Call::scatter_acc>(indices, const_cast<T*>(values.data()), alpha, -1);
}

template <Element T, std::size_t N>
T GlobalArray<T, N>::fetch_add(const shape_type& i, T inc) {
  check_live(detail::Call::read_inc);
  const auto g = checked_index(i, detail::Call::read_inc);
  // A replicated array: copy 0 is the atomic one; the other copies receive the same
  // increment through the same atomicity domain, so copies agree after sync().
  const bool rep = dist_.is_replicated();
  const int r = rep ? 0 : dist_.owner(g);
  const Index off = offset_in_block(r, g);
  auto& oc = ctx_.stats()[Op::read_inc];
  ++oc.calls;
  count_piece(oc, r, sizeof(T));
  std::optional<detail::ReplicaLock> serial;  // replicated: every copy gets the writes in one order
  if (rep) serial.emplace(*win_);
  const T old = with_transport([&](auto& tp) {
    const T v = tp.fetch_add(r, off, inc);
    if (rep)
      for (int q = 1; q < ctx_.size(); ++q) tp.add_one(q, off, inc);
    ctx_.stats().mpi_rma_calls += tp.mpi_calls();
    return v;
  });
  if (serial) serial->release();  // a failed completion at some copy: MpiError here
  return old;
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::sync() {
  begin_collective(detail::hash_mix(detail::hash_string("GlobalArray::sync"), id_), detail::Call::sync);
  ++ctx_.stats().syncs;
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::fill(const T& value) {
  std::uint64_t sig = detail::hash_mix(detail::hash_string("GlobalArray::fill"), id_);
  sig = detail::value_hash(sig, value);
  begin_collective(sig, detail::Call::fill);
  std::exception_ptr err;
  try {
    detail::fault_point("fill.local");
    std::fill_n(local_data(), my_layout_.elements, value);
    win_->memory_sync();
  } catch (...) {
    err = std::current_exception();
  }
  detail::conclude(ctx_.comm(), err, name(detail::Call::fill));  // doubles as the barrier
  ++ctx_.stats().syncs;
}

template <Element T, std::size_t N>
std::string_view GlobalArray<T, N>::name(detail::Call c) {
  static const auto names = [] {
    const std::string prefix = "GlobalArray<" + std::string(type_name<T>()) + "," + std::to_string(N) + ">::";
    const char* ops[] = {"create",      "get",         "put",    "accumulate", "gather",    "scatter",
                         "scatter_acc", "read_inc",    "fill",   "sync",       "owner",     "access",
                         "fence",       "window_kind", "box_of", "layout_of",  "operator[]"};
    static_assert(std::size(ops) == static_cast<std::size_t>(detail::Call::count_), "a name per Call");
    std::array<std::string, static_cast<std::size_t>(detail::Call::count_)> n;
    for (std::size_t i = 0; i < n.size(); ++i) n[i] = prefix + ops[i];
    return n;
  }();
  return names[static_cast<std::size_t>(c)];
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::release() noexcept {
  if (!win_) return;
  try {
    win_->complete_outstanding();  // requests outliving the array: done before the memory goes
  } catch (const std::exception& e) {
    garray::abort(e.what());  // as a Request's destructor: MPI may still use the buffers
  }
  ++ctx_.stats().arrays_destroyed;
  ctx_.cache().release(slot_, std::move(win_));
}

template <Element T, std::size_t N>
std::size_t GlobalArray<T, N>::checked_block_bytes(const Box<N>& box, const shape_type& ghost) {
  if (box.empty()) return 0;
  Index elems = 1;
  for (std::size_t d = 0; d < N; ++d) {
    Index g2 = 0, ext = 0;
    if (__builtin_mul_overflow(ghost[d], Index{2}, &g2) || __builtin_add_overflow(box.extent(d), g2, &ext) ||
        __builtin_mul_overflow(elems, ext, &elems))
      detail::raise<InvalidArgument>(name(detail::Call::create), ": a block of extents ",
                                     detail::seq(box.extents()), " with ghost width ", detail::seq(ghost),
                                     " has more elements than int64 holds");
  }
  Index b = 0;
  if (__builtin_mul_overflow(elems, static_cast<Index>(sizeof(T)), &b) ||
      static_cast<std::uint64_t>(b) > static_cast<std::uint64_t>(std::numeric_limits<MPI_Aint>::max() / 2))
    detail::raise<InvalidArgument>(name(detail::Call::create), ": a block of ", elems, " elements of ",
                                   sizeof(T), " bytes does not fit a window");
  return static_cast<std::size_t>(b);
}

template <Element T, std::size_t N>
std::size_t GlobalArray<T, N>::max_block_bytes(const Distribution<N>& d, const shape_type& ghost) {
  if (d.nblocks() == 0) return 0;
  Box<N> widest_box{};
  for (std::size_t k = 0; k < N; ++k) {
    const auto& b = d.bounds(k);
    Index widest = 0;
    for (std::size_t i = 0; i + 1 < b.size(); ++i) widest = std::max(widest, b[i + 1] - b[i]);
    if (widest == 0) return 0;  // every block is empty (and has no ghosts)
    widest_box.hi[k] = widest;
  }
  return checked_block_bytes(widest_box, ghost);
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::check_size(const Section<N>& sec, std::size_t n, detail::Call c) const {
  if (static_cast<Index>(n) != sec.size())
    detail::raise<SizeMismatch>(name(c), ": buffer has ", n, " elements but the selection ", sec, " has ",
                                sec.size());
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::check_buffer_shape(const Section<N>& sec, std::span<const Index> got, bool c_order,
                                           detail::Call c) const {
  Shape<N> want{};
  std::size_t r = 0;
  for (std::size_t d = 0; d < N; ++d)
    if (!sec.dropped[d]) want[r++] = sec.count[d];
  bool ok = c_order && r == got.size();
  for (std::size_t d = 0; ok && d < r; ++d) ok = got[d] == want[d];
  if (!ok)
    detail::raise<SizeMismatch>(name(c), ": buffer of shape ", detail::seq(got),
                                " (row-major required) for a selection of shape ",
                                detail::seq(std::span<const Index>(want.data(), r)));
}

template <Element T, std::size_t N>
template <std::size_t R>
boost::multi_array<T, R> GlobalArray<T, N>::get_array(const Section<N>& sec) const {
  boost::multi_array<T, R> out(sec.template kept_shape<R>());
  get_section(sec, std::span<T>(out.data(), out.num_elements()));
  return out;
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::check_list(std::size_t nidx, std::size_t nval, detail::Call c) const {
  if (nidx != nval) detail::raise<SizeMismatch>(name(c), ": ", nidx, " indices but ", nval, " values");
}

template <Element T, std::size_t N>
typename GlobalArray<T, N>::shape_type GlobalArray<T, N>::checked_index(const shape_type& i,
                                                                        detail::Call c) const {
  shape_type g{};
  for (std::size_t d = 0; d < N; ++d) g[d] = detail::normalize_index(i[d], shape()[d], d, name(c));
  return g;
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::count_piece(OpCounters& oc, int r, std::size_t bytes) const noexcept {
  if (r == ctx_.rank()) {
    ++oc.local_pieces;
    oc.local_bytes += static_cast<std::int64_t>(bytes);
  } else {
    ++oc.remote_pieces;
    oc.remote_bytes += static_cast<std::int64_t>(bytes);
  }
}

template <Element T, std::size_t N>
void GlobalArray<T, N>::note_temp(std::size_t bytes) const noexcept {
  auto& p = ctx_.stats().temp_bytes_peak;
  p = std::max<std::int64_t>(p, static_cast<std::int64_t>(bytes));
}

template <Element T, std::size_t N>
std::string GlobalArray<T, N>::describe_args(const shape_type& shape, const Distribution<N>& dist) {
  return "type " + std::string(type_name<T>()) + ", shape " + to_string(detail::seq(shape)) + ", " +
         dist.describe();
}

template <Element T, std::size_t N>
template <class X>
std::string GlobalArray<T, N>::to_string(const X& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

template <Element T, std::size_t N>
template <detail::Dir D>
void GlobalArray<T, N>::transfer(const Section<N>& sec, T* buf, T alpha, Request* req,
                                 const shape_type* buf_strides) const {
  auto& st = ctx_.stats();
  OpCounters& oc = st[D == detail::Dir::get ? Op::get : D == detail::Dir::put ? Op::put : Op::acc];
  ++oc.calls;
  const int me = ctx_.rank();
  const bool rep = dist_.is_replicated();

  std::shared_ptr<T[]> scaled;  // alpha * in, when alpha != 1 (alive until completion)
  T* src = buf;
  if constexpr (D == detail::Dir::acc) {
    if (alpha != T{1}) {
      const auto n = static_cast<std::size_t>(sec.size());
      scaled.reset(new T[n]);
      for (std::size_t i = 0; i < n; ++i) scaled[i] = alpha * buf[i];
      src = scaled.get();
      note_temp(n * sizeof(T));
    }
  }
  // A write to a replicated array holds the replica lock until it is complete at every
  // copy (so it completes before returning, also when nonblocking): every copy receives the
  // writes of all ranks in the same order and the copies stay identical.
  std::optional<detail::ReplicaLock> serial;
  if (rep && D != detail::Dir::get) {
    serial.emplace(*win_);
    req = nullptr;
  }
  // The scaled copy stays alive until the request completes. Handed over before anything
  // is issued, so that no failed allocation can free it while MPI may still read it.
  if (req && scaled) detail::RequestAccess::add_finisher(*req, std::function<void()>([s = scaled] {}));
  with_transport([&](auto& tp) {
    tp.use_request(req);
    if (!buf_strides && !rep) {
      // Fast path: the section lies in one owner's block (every small transfer that does
      // not straddle a boundary): its piece without walking the grid.
      detail::Piece<N> p;
      if (single_owner_piece(sec, p)) {
        count_piece(oc, p.rank, static_cast<std::size_t>(p.size()) * sizeof(T));
        try {
          tp.template move<D>(p, src);
          tp.finish(req);
        } catch (...) {
          tp.abandon();
          if (req)
            detail::RequestAccess::drop_finishers(*req);  // nothing lands in the buffer after the throw
          throw;
        }
        st.mpi_rma_calls += tp.mpi_calls();
        if (tp.temp_bytes()) note_temp(tp.temp_bytes());
        return;
      }
    }
    const auto move = [&](const detail::Piece<N>& p) {
      count_piece(oc, p.rank, static_cast<std::size_t>(p.size()) * sizeof(T));
      tp.template move<D>(p, src);
    };
    try {
      if (!buf_strides && !rep) {  // hot path: no copy of the piece
        detail::for_each_piece(dist_, sec, ghost_, move);
      } else {
        const Shape<N> dense = row_major_strides(sec.count);
        detail::for_each_piece(dist_, sec, ghost_, [&](const detail::Piece<N>& piece) {
          detail::Piece<N> p = piece;
          if (buf_strides) {  // re-base the buffer side: k0[d] = (buf_off / dense[d]) % count[d]
            Index off = 0;
            for (std::size_t d = 0; d < N; ++d) {
              off += (p.buf_off / dense[d]) % sec.count[d] * (*buf_strides)[d];
              p.buf_str[d] = (*buf_strides)[d];
            }
            p.buf_off = off;
          }
          if (!rep) return move(p);
          if constexpr (D == detail::Dir::get) {
            p.rank = me;  // our own copy
            move(p);
          } else {
            for (int c = 0; c < ctx_.size(); ++c) {  // every copy
              p.rank = c;
              move(p);
            }
          }
        });
      }
      tp.finish(req);
    } catch (...) {
      tp.abandon();
      if (req) detail::RequestAccess::drop_finishers(*req);  // nothing lands in the buffer after the throw
      throw;
    }
    st.mpi_rma_calls += tp.mpi_calls();
    if (tp.temp_bytes()) note_temp(tp.temp_bytes());
  });
  if (serial) serial->release();  // replicated write: complete at every copy, or it throws
  if (req) detail::RequestAccess::attach(*req, *win_);
}

template <Element T, std::size_t N>
bool GlobalArray<T, N>::single_owner_piece(const Section<N>& sec, detail::Piece<N>& p) const noexcept {
  Box<N> bb;
  for (std::size_t d = 0; d < N; ++d) {
    if (sec.count[d] == 0) return false;
    const Index last = sec.start[d] + (sec.count[d] - 1) * sec.step[d];
    bb.lo[d] = std::min(sec.start[d], last);
    bb.hi[d] = std::max(sec.start[d], last) + 1;
  }
  // The block of the previous single-owner transfer is the likeliest owner (a loop over
  // one remote block); else find the block holding bb's low corner.
  LastBlock& lb = last_;
  bool inside = lb.rank >= 0;
  for (std::size_t d = 0; d < N && inside; ++d) inside = bb.lo[d] >= lb.box.lo[d] && bb.hi[d] <= lb.box.hi[d];
  if (!inside) {
    int r = 0;
    Box<N> blk;
    for (std::size_t d = 0; d < N; ++d) {
      const int c = dist_.coord_of(d, bb.lo[d]);
      const auto& b = dist_.bounds(d);
      blk.lo[d] = b[static_cast<std::size_t>(c)];
      blk.hi[d] = b[static_cast<std::size_t>(c) + 1];
      if (bb.hi[d] > blk.hi[d]) return false;
      r += c * dist_.grid_stride(d);
    }
    lb.rank = r;
    lb.box = blk;
    lb.layout = r == ctx_.rank() ? my_layout_ : detail::block_layout(blk, ghost_);
  }
  const detail::BlockLayout<N>& lay = lb.layout;
  const Shape<N> buf_str = row_major_strides(sec.count);
  p.rank = lb.rank;
  p.block_off = lay.origin;
  p.buf_off = 0;
  for (std::size_t d = 0; d < N; ++d) {
    p.count[d] = sec.count[d];
    p.block_off += (sec.start[d] - lb.box.lo[d]) * lay.strides[d];
    p.block_str[d] = sec.step[d] * lay.strides[d];
    p.buf_str[d] = buf_str[d];
  }
  return true;
}

template <Element T, std::size_t N>
template <detail::Call C>
void GlobalArray<T, N>::list_op(std::span<const shape_type> indices, T* vals, T alpha, int) const {
  constexpr Op op = C == detail::Call::gather    ? Op::gather
                    : C == detail::Call::scatter ? Op::scatter
                                                 : Op::scatter_acc;
  constexpr detail::ListOp L = C == detail::Call::gather    ? detail::ListOp::gather
                               : C == detail::Call::scatter ? detail::ListOp::scatter
                                                            : detail::ListOp::scatter_acc;
  const std::size_t n = indices.size();
  const bool rep = dist_.is_replicated();
  const int me = ctx_.rank(), p = ctx_.size();
  // Validate everything first: a call that throws moves nothing.
  std::vector<int> owner(n);
  std::vector<Index> off(n);
  for (std::size_t j = 0; j < n; ++j) {
    shape_type g{};
    for (std::size_t d = 0; d < N; ++d) {
      const Index v = indices[j][d] < 0 ? indices[j][d] + shape()[d] : indices[j][d];
      if (v < 0 || v >= shape()[d])
        detail::raise<BoundsError>(name(C), ": index list entry ", j, " ", detail::seq(indices[j]),
                                   " out of range for shape ", detail::seq(shape()), " (dim ", d, ")");
      g[d] = v;
    }
    owner[j] = rep ? me : dist_.owner(g);  // replicated: every copy has the same layout
    off[j] = offset_in_block(owner[j], g);
  }
  auto& st = ctx_.stats();
  OpCounters& oc = st[op];
  ++oc.calls;
  // Bucket positions by owner (counting sort keeps list order within an owner).
  std::vector<std::size_t> first(static_cast<std::size_t>(p) + 1, 0), order(n);
  for (std::size_t j = 0; j < n; ++j) ++first[static_cast<std::size_t>(owner[j]) + 1];
  std::partial_sum(first.begin(), first.end(), first.begin());
  {
    std::vector<std::size_t> pos(first.begin(), first.end() - 1);
    for (std::size_t j = 0; j < n; ++j) order[pos[static_cast<std::size_t>(owner[j])]++] = j;
  }
  std::optional<detail::ReplicaLock> serial;  // as in transfer()
  if (rep && C != detail::Call::gather) serial.emplace(*win_);
  with_transport([&](auto& tp) {
    try {
      for (int r = 0; r < p; ++r) {
        const std::size_t b = first[static_cast<std::size_t>(r)], e = first[static_cast<std::size_t>(r) + 1];
        if (b == e) continue;
        const std::span<const std::size_t> part(order.data() + b, e - b);
        if (!rep || C == detail::Call::gather) {
          count_piece(oc, r, (e - b) * sizeof(T));
          tp.template list<L>(r, part, off.data(), vals, alpha);
        } else {
          for (int c = 0; c < p; ++c) {  // a write to a replicated array goes to every copy
            count_piece(oc, c, (e - b) * sizeof(T));
            tp.template list<L>(c, part, off.data(), vals, alpha);
          }
        }
      }
      tp.finish(nullptr);
    } catch (...) {
      tp.abandon();
      throw;
    }
    st.mpi_rma_calls += tp.mpi_calls();
  });
  if (serial) serial->release();
}

template <Element T, std::size_t N>
template <class F>
decltype(auto) GlobalArray<T, N>::with_transport(F&& f) const {
  if (win_->kind() == WindowKind::shared) {
    detail::ShmTransport<T> tp(*win_);
    return f(tp);
  }
  if (win_->kind() == WindowKind::mixed) {
    detail::MixedTransport<T> tp(*win_);
    return f(tp);
  }
  detail::RmaTransport<T> tp(*win_);
  return f(tp);
}

}  // namespace garray

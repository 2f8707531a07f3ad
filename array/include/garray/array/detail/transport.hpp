#pragma once
// Transports: one class per window kind that executes every primitive which moves data or
// must be atomic. GlobalArray validates and plans (which owner holds which strided piece);
// a transport moves the pieces.
//
//   ShmTransport<T>  MPI_Win_allocate_shared windows: every block is mapped into this
//                    process. get/put are strided memory copies; accumulate, scatter_acc,
//                    fetch_add (read_inc) and replicated writes are plain adds under the
//                    target segment's lock: ONE atomicity domain, the segment lock.
//   RmaTransport<T>  MPI_Win_allocate windows: each remote piece is one MPI_Get/Put/
//                    Accumulate with derived datatypes (a put that must land after this
//                    rank's earlier write in flight to another node: an MPI_REPLACE
//                    accumulate, Window::order_put); fetch_add is MPI_Fetch_and_op; the
//                    caller's own block is copied directly only for get/put and only in the
//                    unified memory model. ONE atomicity domain: MPI accumulate-class calls
//                    (MPI_SUM on the predefined type), atomic with each other by MPI.
//   MixedTransport<T> mixed windows (several nodes): get/put of a node-local block are
//                    ShmTransport's memory copies, everything else (remote blocks, and
//                    every atomic operation, node-local too) is RmaTransport's. ONE
//                    atomicity domain: MPI accumulate-class calls, as on rma windows.
//
// All have the same interface, so the engine is written once and instantiated per kind
// (GlobalArray::with_transport): no virtual call, no per-piece branch on the kind (the
// mixed transport branches per piece on whether the target shares this node).
//
//   move<D>(piece, buf)     one owner's piece (D = get / put / acc), buf = user buffer base
//   finish(req)             local completion of everything moved (or hand it to `req`)
//   abandon()               after an exception mid-transfer: completes what was issued
//                           before temporaries are freed (MPI may still read them)
//   fetch_add(r, off, inc)  atomic fetch-and-add of one element, complete on return
//   list<C>(r, ...)         gather / scatter / scatter_acc of a list of offsets in r's block

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <complex>
#include <functional>
#include <type_traits>
#include <garray/array/detail/mpi_region.hpp>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/request.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/window.hpp>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace garray::detail {

enum class Dir { get, put, acc };
enum class ListOp { gather, scatter, scatter_acc };

/// The MPI datatype accumulates of T travel as: T's predefined type, except
/// std::complex<float>, which goes as a pair of MPI_FLOAT (the same element-wise sum).
/// Open MPI 4.1.4's osc/rdma sums MPI_C_FLOAT_COMPLEX wrongly on MPI_Win_create windows
/// (4 ranks x 100 accumulates of 1+2i gave -1.8e21+1.8e-38i; MPI_C_DOUBLE_COMPLEX and a
/// pair of MPI_FLOAT are right): mixed windows met it on one node (test_array.mixed).
/// Created once and never freed (MPI_Finalize releases it).
template <class T>
MPI_Datatype acc_type() {
  if constexpr (std::is_same_v<T, std::complex<float>>) {
    static const MPI_Datatype pair = [] {
      MPI_Datatype t = MPI_DATATYPE_NULL;
      check_mpi(MPI_Type_contiguous(2, MPI_FLOAT, &t), "MPI_Type_contiguous");
      check_mpi(MPI_Type_commit(&t), "MPI_Type_commit");
      return t;
    }();
    return pair;
  } else {
    return mpi_type<T>();
  }
}

/// Holds a window's replica lock (Window::lock_replicas) for a write to a replicated array.
/// The write's success path calls release(), which rethrows a failure of the completion at
/// every copy (complete_all: also of another request outstanding on the window; the caller
/// must learn that the copies may differ); the destructor, reached
/// only while another exception unwinds, releases and drops it.
struct ReplicaLock {
  const Window& w;
  bool held = true;
  explicit ReplicaLock(const Window& win) : w(win) { w.lock_replicas(); }
  void release() {
    held = false;
    if (std::exception_ptr e = w.unlock_replicas()) std::rethrow_exception(e);
  }
  ~ReplicaLock() {
    if (held) (void)w.unlock_replicas();
  }
  ReplicaLock(const ReplicaLock&) = delete;
  ReplicaLock& operator=(const ReplicaLock&) = delete;
};

/// Shared-memory window transport (see the file comment).
template <class T>
class ShmTransport {
 public:
  explicit ShmTransport(const Window& w) noexcept : w_(w) {}

  template <Dir D, std::size_t N>
  void move(const Piece<N>& p, T* buf) {
    T* blk = block(p.rank) + p.block_off;
    bool one = true;
    for (std::size_t d = 0; d < N; ++d) one = one && p.count[d] == 1;
    if (one && D != Dir::acc) {  // one element: the smallest get/put, no copy machinery
      if constexpr (D == Dir::get) {
        acquire_fence();
        buf[p.buf_off] = *blk;
      } else {
        *blk = buf[p.buf_off];
      }
      return;
    }
    if constexpr (D == Dir::get) {
      // Acquire side of visibility rule 2: loads below see stores another rank ordered
      // before a synchronisation (its fence()'s MPI_Win_sync + a barrier). Free on x86.
      acquire_fence();
      strided_copy(collapse(p.count, p.buf_str, p.block_str), buf + p.buf_off, blk);
    } else if constexpr (D == Dir::put) {
      strided_copy(collapse(p.count, p.block_str, p.buf_str), blk, buf + p.buf_off);
    } else {
      const auto it = collapse(p.count, p.block_str, p.buf_str);
      Locked lk(w_, p.rank);
      strided_add(it, blk, buf + p.buf_off);
    }
  }
  void use_request(Request*) noexcept {}
  void finish(Request*) noexcept {}  // copies and locked adds are complete on return
  void abandon() noexcept {}
  std::size_t temp_bytes() const noexcept { return 0; }
  int mpi_calls() const noexcept { return 0; }

  T fetch_add(int r, Index off, T inc) {
    T* x = block(r) + off;
    Locked lk(w_, r);
    const T old = *x;
    *x = old + inc;
    return old;
  }
  /// Accumulate `inc` into element `off` of r's block (a replica of read_inc's increment).
  void add_one(int r, Index off, T inc) {
    Locked lk(w_, r);
    block(r)[off] += inc;
  }

  /// Index-list operation on rank r's block: positions order[b, e) of vals/off.
  template <ListOp C>
  void list(int r, std::span<const std::size_t> order, const Index* off, T* vals, T alpha) {
    T* blk = block(r);
    if constexpr (C == ListOp::gather) {
      acquire_fence();
      for (std::size_t j : order) vals[j] = blk[off[j]];
    } else if constexpr (C == ListOp::scatter) {
      for (std::size_t j : order) blk[off[j]] = vals[j];
    } else {
      Locked lk(w_, r);
      for (std::size_t j : order) blk[off[j]] += alpha * vals[j];
    }
  }

 private:
  // The target segment's accumulate lock, held around plain loads and stores only.
  struct Locked {
    const Window& w;
    int r;
    Locked(const Window& win, int rank) noexcept : w(win), r(rank) { w.lock_segment(r); }
    ~Locked() { w.unlock_segment(r); }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;
  };
  T* block(int r) const noexcept { return reinterpret_cast<T*>(w_.peer(r)); }
  const Window& w_;
};

/// How a blocking transfer with several targets is completed: one MPI_Win_flush_local per
/// target (MPICH), or one MPI_Win_flush_local_all (others). Each MPI gets the call that
/// works on it:
/// - MPICH 4.0.2: MPI_Win_flush_local_all returned before large gets from several owners
///   had landed (a 600x400 double get at np 3 over rma windows read the remote two thirds
///   as they were before, in two of three runs of a loop); per-target flushes were right.
/// - Open MPI 4.1 osc/pt2pt: MPI_Win_flush_local per target, with gets to two targets
///   outstanding, never returns (a raw MPI program, 2 ranks on one host, hangs in the first
///   iteration); MPI_Win_flush_local_all and per-target MPI_Win_flush do not hang.
#if defined(MPICH_NUMVERSION)
inline constexpr bool flush_each_target = true;
#else
inline constexpr bool flush_each_target = false;
#endif

/// The footprint (Window::Footprint, bytes of the target's block) of a collapsed region
/// with positive target strides `it.sa` starting at element offset `off`: its hull, and a
/// comb (the innermost dimension's span repeated every second-innermost stride) when every
/// outer stride is a multiple of that pitch, as in any section of a row-major block.
template <class T, std::size_t N>
Window::Footprint footprint(Index off, const Strided2<N>& it) noexcept {
  constexpr auto es = static_cast<Index>(sizeof(T));
  const auto at = [](const std::array<Index, N>& v, int d) { return v[static_cast<std::size_t>(d)]; };
  Index last = 0;
  for (int d = 0; d < it.nd; ++d) last += (at(it.count, d) - 1) * at(it.sa, d);
  Window::Footprint f{static_cast<std::ptrdiff_t>(off * es),
                      static_cast<std::ptrdiff_t>((off + last + 1) * es), 0, 0};
  if (it.nd == 0 || (it.nd == 1 && it.sa[0] == 1)) return f;  // one element, or one run
  const int in = it.nd - 1;
  const Index pitch = it.nd >= 2 ? at(it.sa, in - 1) : it.sa[0];
  const Index run = it.nd >= 2 ? (at(it.count, in) - 1) * at(it.sa, in) + 1 : 1;
  bool comb = run <= pitch;
  for (int d = 0; d + 1 < in; ++d) comb = comb && at(it.sa, d) % pitch == 0;
  if (comb) {
    f.pitch = static_cast<std::ptrdiff_t>(pitch * es);
    f.run = static_cast<std::ptrdiff_t>(run * es);
  }
  return f;
}

/// A piece's target side with positive strides: reversed dimensions flipped, the reversal
/// moved to the buffer side (the buffer strides and offset, when given, follow).
template <std::size_t N>
void flip_reversed(const Piece<N>& p, Shape<N>& ts, Index& toff, Shape<N>* bs = nullptr,
                   Index* boff = nullptr) noexcept {
  ts = p.block_str;
  toff = p.block_off;
  if (bs) {
    *bs = p.buf_str;
    *boff = p.buf_off;
  }
  for (std::size_t d = 0; d < N; ++d) {
    if (ts[d] < 0) {
      toff += (p.count[d] - 1) * ts[d];
      ts[d] = -ts[d];
      if (bs) {
        *boff += (p.count[d] - 1) * (*bs)[d];
        (*bs)[d] = -(*bs)[d];
      }
    }
  }
}

/// The footprint of a piece in its owner's block (strides of either sign).
template <class T, std::size_t N>
Window::Footprint piece_footprint(const Piece<N>& p) noexcept {
  Shape<N> s{};
  Index off = 0;
  flip_reversed(p, s, off);
  return footprint<T>(off, collapse(p.count, s, s));
}

/// The elements [first, last] (element offsets) as one hull.
template <class T>
Window::Footprint span_footprint(Index first, Index last) noexcept {
  constexpr auto es = static_cast<Index>(sizeof(T));
  return {static_cast<std::ptrdiff_t>(first * es), static_cast<std::ptrdiff_t>((last + 1) * es), 0, 0};
}

/// Before an index-list scatter stores directly into r's block: Window::order_store over the
/// hull of the offsets it writes (computed only when this rank has writes in flight to r).
template <class T>
void order_list_store(const Window& w, int r, std::span<const std::size_t> order, const Index* off) {
  if (order.empty()) return;
  Window::Footprint f{};  // empty: meets nothing
  if (w.writing_to(r)) {
    Index lo = off[order[0]], hi = lo;
    for (std::size_t j : order) {
      lo = std::min(lo, off[j]);
      hi = std::max(hi, off[j]);
    }
    f = span_footprint<T>(lo, hi);
  }
  w.order_store(r, f);
}

/// MPI RMA window transport (see the file comment).
template <class T>
class RmaTransport {
 public:
  explicit RmaTransport(const Window& w) noexcept : w_(const_cast<Window&>(w)), me_(w.rank()) {}

  template <Dir D, std::size_t N>
  void move(const Piece<N>& p, T* buf) {
    const int r = p.rank;
    if (D != Dir::acc && r == me_ && w_.unified()) {  // own block: a memory copy
      T* blk = reinterpret_cast<T*>(w_.base()) + p.block_off;
      if constexpr (D == Dir::get) {
        w_.complete_writes_to(r);  // flush + MPI_Win_sync if our own RMA writes are pending
        strided_copy(collapse(p.count, p.buf_str, p.block_str), buf + p.buf_off, blk);
      } else {
        w_.order_store(r, piece_footprint<T>(p));  // after this rank's MPI accumulates to its own block
        strided_copy(collapse(p.count, p.block_str, p.buf_str), blk, buf + p.buf_off);
      }
      return;
    }
    // Target strides must be positive: flip reversed dimensions, which moves the reversal
    // to the user-buffer side.
    Shape<N> ts{}, bs{};
    Index toff = 0, boff = 0;
    flip_reversed(p, ts, toff, &bs, &boff);
    const auto it = collapse(p.count, ts, bs);
    bool reversed = false;
    for (int d = 0; d < it.nd; ++d) reversed = reversed || it.sb[static_cast<std::size_t>(d)] < 0;
    if (p.size() > mpi_count_limit && !one_call(it, reversed)) [[unlikely]] {
      split<D>(p, buf);
      return;
    }
    // (puts as accumulates' type: a put may travel as an MPI_REPLACE accumulate, order_put)
    const MPI_Datatype base = D == Dir::get ? mpi_type<T>() : acc_type<T>();
    MpiRegion target(base, sizeof(T), it.nd, it.count.data(), it.sa.data());
    T* origin = buf + boff;
    MpiRegion oreg;
    if (!reversed) {
      oreg = MpiRegion(base, sizeof(T), it.nd, it.count.data(), it.sb.data());
    } else {
      // Reversed on the buffer side: go through a dense temporary in target order.
      const Index n = p.size();
      std::shared_ptr<T[]> tmp(new T[static_cast<std::size_t>(n)]);
      temp_bytes_ = std::max(temp_bytes_, static_cast<std::size_t>(n) * sizeof(T));
      Strided2<N> pk = it;
      Index acc = 1;
      for (int d = it.nd - 1; d >= 0; --d) {
        pk.sa[static_cast<std::size_t>(d)] = it.sb[static_cast<std::size_t>(d)];  // user buffer
        pk.sb[static_cast<std::size_t>(d)] = acc;                                 // dense temp
        acc *= it.count[static_cast<std::size_t>(d)];
      }
      if constexpr (D == Dir::get) {
        temps().unpacks.push_back(Unpack<N>{tmp, pk, origin});
      } else {
        std::swap(pk.sa, pk.sb);
        strided_copy(pk, tmp.get(), origin);
        temps().keep.push_back(tmp);
      }
      origin = tmp.get();
      const Index one = 1;
      oreg = MpiRegion(base, sizeof(T), 1, &n, &one);
    }
    const auto disp = static_cast<MPI_Aint>(toff * static_cast<Index>(sizeof(T)));
    const MPI_Win win = w_.win();
    const bool with_req = req_ && request_ops_ok;
    note_target(r);  // before the call: a failed call may still have issued something (abandon)
    if constexpr (D == Dir::get) {
      w_.complete_writes_to(r);
      if (with_req)
        check_mpi(MPI_Rget(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win,
                           RequestAccess::add_mpi(*req_)),
                  "MPI_Rget");
      else
        check_mpi(MPI_Get(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win),
                  "MPI_Get");
    } else if constexpr (D == Dir::put) {
      // before the call: orders it after this rank's earlier writes to the same elements
      // (location consistency: a flush, or, after an earlier put still in flight to another
      // node, an accumulate with MPI_REPLACE, which MPI orders), and marks r dirty (a failed
      // call may still have issued something)
      if (w_.order_put(r, footprint<T>(toff, it)))
        accumulate(origin, oreg, r, disp, target, MPI_REPLACE, with_req);
      else if (with_req)
        check_mpi(MPI_Rput(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win,
                           RequestAccess::add_mpi(*req_)),
                  "MPI_Rput");
      else
        check_mpi(MPI_Put(origin, oreg.count(), oreg.type(), r, disp, target.count(), target.type(), win),
                  "MPI_Put");
    } else {
      w_.order_acc(r, footprint<T>(toff, it));
      accumulate(origin, oreg, r, disp, target, MPI_SUM, with_req);
    }
    // Tests only: a failure after this piece was issued and before the transfer finishes
    // (abandon() must complete what was issued before temporaries and buffers go)
    detail::fault_point("transfer.issued");
  }

  /// MPI_Accumulate (MPI_Raccumulate into req_ if `with_req`) of one piece's regions.
  void accumulate(const T* origin, const MpiRegion& o, int r, MPI_Aint disp, const MpiRegion& t, MPI_Op op,
                  bool with_req) {
    if (with_req)
      check_mpi(MPI_Raccumulate(origin, o.count(), o.type(), r, disp, t.count(), t.type(), op, w_.win(),
                                RequestAccess::add_mpi(*req_)),
                "MPI_Raccumulate");
    else
      check_mpi(MPI_Accumulate(origin, o.count(), o.type(), r, disp, t.count(), t.type(), op, w_.win()),
                "MPI_Accumulate");
  }

  /// True if one MPI call can describe the collapsed regions `it` (target side a, buffer
  /// side b; a reversed buffer side travels as one dense temporary): every run fits an int
  /// count (mpi_count_limit, INT_MAX), except a contiguous innermost run, which MpiRegion
  /// chunks.
  template <std::size_t N>
  static bool one_call(const Strided2<N>& it, bool reversed) noexcept {
    for (int d = 0; d < it.nd; ++d) {
      const auto k = static_cast<std::size_t>(d);
      const bool chunkable = d == it.nd - 1 && it.sa[k] == 1 && (reversed || it.sb[k] == 1);
      if (it.count[k] > mpi_count_limit && !chunkable) return false;
    }
    return true;
  }
  /// Moves a piece that one MPI call cannot describe (one_call) as two halves along its
  /// outermost dimension of more than one element; move() splits the halves again as needed.
  template <Dir D, std::size_t N>
  void split(const Piece<N>& p, T* buf) {
    std::size_t k = 0;
    while (p.count[k] <= 1) ++k;  // exists: the piece has more than mpi_count_limit >= 3 elements
    Piece<N> lo = p, hi = p;
    const Index h = p.count[k] / 2;
    lo.count[k] = h;
    hi.count[k] = p.count[k] - h;
    hi.block_off += h * p.block_str[k];
    hi.buf_off += h * p.buf_str[k];
    move<D>(lo, buf);
    move<D>(hi, buf);
  }

  /// Nonblocking transfers: issue into `req` (set before the first move()).
  void use_request(Request* req) noexcept { req_ = req; }

  /// Local completion, or hands the completion (and the temporaries) to the request.
  /// Exception-safe: a bad_alloc part way leaves every temporary not yet handed over in
  /// temps_, alive until abandon() (the caller's catch) has completed the operations using it;
  /// the caller then drops what was handed over (RequestAccess::drop_finishers).
  void finish(Request* req) {
    if (req) {
      if (!request_ops_ok)  // MPICH: plain operations, completed by a flush_local per target
        for_each_target([&](int t) { RequestAccess::add_finisher(*req, [w = &w_, t] { w->flush_local(t); }); });
      if (temps_) {
        for (auto& u : temps_->unpacks) RequestAccess::add_finisher(*req, std::move(u));
        if (!temps_->keep.empty()) {
          std::function<void()> k = [k = temps_->keep] {};  // a copy: temps_ keeps its references
          RequestAccess::add_finisher(*req, std::move(k));
        }
      }
      return;
    }
    if (ntargets_ == 1)
      w_.flush_local(last_target_);
    else if constexpr (flush_each_target)
      for_each_target([&](int t) { w_.flush_local(t); });
    else if (ntargets_ > 1)
      w_.flush_local_all();
    if (temps_) {
      for (auto& u : temps_->unpacks) u();
      for (auto& l : temps_->lists)
        for (std::size_t q = 0; q < l.idx.size(); ++q) l.vals[l.idx[q]] = l.buf[q];
    }
  }
  /// After an exception between the first move() and finish(): complete what was issued
  /// so no temporary (or user buffer) is freed while MPI may still use it.
  void abandon() noexcept {
    if (ntargets_ == 1)
      MPI_Win_flush_local(last_target_, w_.win());
    else if constexpr (flush_each_target)
      for_each_target([&](int t) noexcept { MPI_Win_flush_local(t, w_.win()); });
    else if (ntargets_ > 1)
      MPI_Win_flush_local_all(w_.win());
  }

  T fetch_add(int r, Index off, T inc) {
    T old{};
    const auto disp = static_cast<MPI_Aint>(off * static_cast<Index>(sizeof(T)));
    w_.order_acc(r, span_footprint<T>(off, off));  // after an earlier put there
    check_mpi(MPI_Fetch_and_op(&inc, &old, mpi_type<T>(), r, disp, MPI_SUM, w_.win()), "MPI_Fetch_and_op");
    w_.flush(r);
    w_.completed(r);
    // our later loads of the block (our own, or a node-local peer's on a mixed window) see
    // the update, as complete_writes_to does after a flush
    if (r == me_ || w_.peer(r)) w_.memory_sync();
    ++mpi_calls_;
    return old;
  }
  void add_one(int r, Index off, T inc) {
    const auto disp = static_cast<MPI_Aint>(off * static_cast<Index>(sizeof(T)));
    w_.order_acc(r, span_footprint<T>(off, off));
    check_mpi(MPI_Accumulate(&inc, 1, mpi_type<T>(), r, disp, 1, mpi_type<T>(), MPI_SUM, w_.win()),
              "MPI_Accumulate");
    w_.flush_local(r);
    ++mpi_calls_;
  }

  /// Index-list operation on rank r's block: one MPI call with an indexed target type per
  /// INT_MAX entries (gather/scatter of this rank's own block in the unified model: direct).
  /// Complete locally at finish().
  template <ListOp C>
  void list(int r, std::span<const std::size_t> order, const Index* off, T* vals, T alpha) {
    if (C != ListOp::scatter_acc && r == me_ && w_.unified()) {
      T* blk = reinterpret_cast<T*>(w_.base());
      if constexpr (C == ListOp::gather) {
        w_.complete_writes_to(r);
        for (std::size_t j : order) vals[j] = blk[off[j]];
      } else {
        order_list_store<T>(w_, r, order, off);
        for (std::size_t j : order) blk[off[j]] = vals[j];
      }
      return;
    }
    // Put/acc targets must not repeat: combine duplicates locally (scatter: the last value
    // wins; scatter_acc: sum).
    std::vector<std::size_t> idx(order.begin(), order.end());
    std::vector<T> buf;
    std::vector<MPI_Aint> disps;
    const auto bytes_of = [&](std::size_t j) {
      return static_cast<MPI_Aint>(off[j] * static_cast<Index>(sizeof(T)));
    };
    if constexpr (C == ListOp::gather) {
      disps.reserve(idx.size());
      for (auto j : idx) disps.push_back(bytes_of(j));
      buf.resize(idx.size());
    } else {
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return off[x] < off[y]; });
      for (std::size_t j : idx) {
        const T v = C == ListOp::scatter_acc ? alpha * vals[j] : vals[j];
        if (!disps.empty() && disps.back() == bytes_of(j)) {
          if constexpr (C == ListOp::scatter_acc)
            buf.back() += v;
          else
            buf.back() = v;
        } else {
          disps.push_back(bytes_of(j));
          buf.push_back(v);
        }
      }
    }
    // buf lives until finish(): completion (and a gather's unpacking) happens there, after
    // every owner's call was issued; kept there before the first call, so that abandon()
    // can complete the calls issued before one that throws while buf is still alive.
    auto& l = temps().lists.emplace_back();
    l.buf = std::move(buf);
    if constexpr (C == ListOp::gather) {
      l.idx = std::move(idx);
      l.vals = vals;
    }
    T* data = l.buf.data();
    const MPI_Datatype elem = C == ListOp::gather ? mpi_type<T>() : acc_type<T>();
    bool replace = false;  // a scatter as MPI_REPLACE accumulates (Window::order_put)
    if constexpr (C == ListOp::gather)
      w_.complete_writes_to(r);
    else if (!disps.empty()) {  // before the first call (a failed call may still have issued something)
      const Window::Footprint f{disps.front(), disps.back() + static_cast<MPI_Aint>(sizeof(T)), 0, 0};
      if constexpr (C == ListOp::scatter_acc)
        w_.order_acc(r, f);
      else
        replace = w_.order_put(r, f);
    }
    note_target(r);         // from here on, abandon() completes what was issued
    // One MPI call per at most mpi_count_limit (INT_MAX) entries: an int counts them.
    for (std::size_t b = 0; b < disps.size(); b += static_cast<std::size_t>(mpi_count_limit)) {
      if (b > 0) ++mpi_calls_;
      const int cnt = static_cast<int>(std::min(disps.size() - b, static_cast<std::size_t>(mpi_count_limit)));
      MPI_Datatype tt;
      check_mpi(MPI_Type_create_hindexed_block(cnt, 1, disps.data() + b, elem, &tt), "MPI_Type_create_hindexed_block");
      if (const int rc = MPI_Type_commit(&tt); rc != MPI_SUCCESS) {
        MPI_Type_free(&tt);
        throw_mpi_error(rc, "MPI_Type_commit");
      }
      int rc;
      if constexpr (C == ListOp::gather)
        rc = MPI_Get(data + b, cnt, elem, r, 0, 1, tt, w_.win());
      else if (C == ListOp::scatter && !replace)
        rc = MPI_Put(data + b, cnt, elem, r, 0, 1, tt, w_.win());
      else
        rc = MPI_Accumulate(data + b, cnt, elem, r, 0, 1, tt, replace ? MPI_REPLACE : MPI_SUM, w_.win());
      MPI_Type_free(&tt);
      check_mpi(rc, C == ListOp::gather                ? "MPI_Get"
                    : C == ListOp::scatter && !replace ? "MPI_Put"
                                                       : "MPI_Accumulate");
      // Tests only: as transfer.issued, for index lists (abandon() completes this call's
      // operations before buf goes; a gather's values never reach the caller's buffer)
      detail::fault_point("list.issued");
    }
  }

  std::size_t temp_bytes() const noexcept { return temp_bytes_; }
  int mpi_calls() const noexcept { return mpi_calls_; }

 private:
  template <std::size_t N>
  struct Unpack {  // a get through a temporary, unpacked into the user's buffer when complete
    std::shared_ptr<T[]> tmp;
    Strided2<N> it;  // sa: user buffer strides, sb: dense temp strides
    T* dst;
    void operator()() const { strided_copy(it, dst, tmp.get()); }
  };
  struct ListBuf {  // one owner's part of an index-list operation
    std::vector<T> buf;
    std::vector<std::size_t> idx;  // gather: where buf's values go in vals
    T* vals = nullptr;
  };
  struct Temps {
    std::vector<std::function<void()>> unpacks;
    std::vector<std::shared_ptr<T[]>> keep;  // put/acc temporaries, alive until completion
    std::vector<ListBuf> lists;
  };
  Temps& temps() {
    if (!temps_) temps_ = std::make_unique<Temps>();
    return *temps_;
  }
  void note_target(int r) {
    ++mpi_calls_;
    if (r != last_target_) {
      // Several targets, where each is flushed on its own: list them all (a replicated
      // write revisits every copy per piece; for_each_target removes the repeats).
      if (flush_each_target || !request_ops_ok) {
        if (ntargets_ == 1) targets_.push_back(last_target_);
        if (ntargets_ >= 1) targets_.push_back(r);
      }
      ++ntargets_;
      last_target_ = r;
    }
  }
  /// Calls f(t) once for every target an MPI call was issued to (or may have been: a call
  /// is noted before it is made). Sorting ints in place neither allocates nor throws.
  template <class F>
  void for_each_target(F&& f) {
    if (ntargets_ == 1) return f(last_target_);
    if (!sorted_) {
      std::sort(targets_.begin(), targets_.end());
      targets_.erase(std::unique(targets_.begin(), targets_.end()), targets_.end());
      sorted_ = true;
    }
    for (int t : targets_) f(t);
  }

  Window& w_;
  int me_;
  Request* req_ = nullptr;
  std::unique_ptr<Temps> temps_;  // only built on the (rare) temporary path
  int ntargets_ = 0, last_target_ = -1;
  std::vector<int> targets_;  // with two targets or more (MPICH): each, repeats until sorted_
  bool sorted_ = false;
  std::size_t temp_bytes_ = 0;
  int mpi_calls_ = 0;
};

/// Mixed window transport (see the file comment): ShmTransport for get/put/gather/scatter
/// of node-local blocks, RmaTransport for the rest and for every atomic operation.
template <class T>
class MixedTransport {
 public:
  explicit MixedTransport(const Window& w) noexcept : w_(w), shm_(w), rma_(w) {}

  template <Dir D, std::size_t N>
  void move(const Piece<N>& p, T* buf) {
    if (D != Dir::acc && w_.peer(p.rank)) {
      // Read your own writes: a node-local get after this rank's RMA accumulates to that
      // block completes them first (flush + MPI_Win_sync), as RmaTransport does.
      if constexpr (D == Dir::get) {
        w_.complete_writes_to(p.rank);
      } else {
        // location consistency: after this rank's MPI accumulates to that block
        w_.order_store(p.rank, piece_footprint<T>(p));
      }
      shm_.template move<D>(p, buf);
    } else {
      rma_.template move<D>(p, buf);
    }
  }
  void use_request(Request* req) noexcept { rma_.use_request(req); }
  void finish(Request* req) { rma_.finish(req); }  // memory copies are complete on return
  void abandon() noexcept { rma_.abandon(); }
  std::size_t temp_bytes() const noexcept { return rma_.temp_bytes(); }
  int mpi_calls() const noexcept { return rma_.mpi_calls(); }
  T fetch_add(int r, Index off, T inc) { return rma_.fetch_add(r, off, inc); }
  void add_one(int r, Index off, T inc) { rma_.add_one(r, off, inc); }
  template <ListOp C>
  void list(int r, std::span<const std::size_t> order, const Index* off, T* vals, T alpha) {
    if (C != ListOp::scatter_acc && w_.peer(r)) {
      if constexpr (C == ListOp::gather) w_.complete_writes_to(r);
      else
        order_list_store<T>(w_, r, order, off);
      shm_.template list<C>(r, order, off, vals, alpha);
    } else {
      rma_.template list<C>(r, order, off, vals, alpha);
    }
  }

 private:
  const Window& w_;
  ShmTransport<T> shm_;
  RmaTransport<T> rma_;
};

}  // namespace garray::detail

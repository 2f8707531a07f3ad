#pragma once
// Window: one MPI window exposing one block of memory per rank, locked for its whole life.
// It is the runtime half of the transport (array/detail/transport.hpp is the other half):
// every MPI window call garray makes goes through here.
//
// Created collectively with MPI_Win_allocate_shared (WindowKind::shared) or MPI_Win_allocate
// (WindowKind::rma), or, for WindowKind::mixed (several nodes), MPI_Win_allocate_shared over
// the node's ranks and MPI_Win_create of that memory over the whole context (DART-MPI's
// design: node-local blocks by load/store through the shared window, every block by RMA
// through the created one). Then MPI_Win_lock_all(MPI_MODE_NOCHECK) once on each: a
// passive-target epoch to every rank that lasts until destruction. Completion is by flush /
// flush_local, never by per-operation lock/unlock (the pattern of ARMCI-MPI and GA on MPI-3).
//
// Memory model: MPI_WIN_MODEL is queried at creation. Shared and mixed windows must be
// MPI_WIN_UNIFIED (creation throws otherwise, suggesting GARRAY_WINDOW=rma); on an rma
// window in the separate model the array layer never loads or stores the public copy
// directly.
//
// Atomicity domain (docs/semantics.md, "Atomicity"): on a shared window every atomic
// operation (accumulate, scatter_acc, read_inc, replicated-array writes) takes the target
// segment's lock (a word in a cache line after each rank's segment, `lock_segment`) and
// adds with plain loads and stores; on an rma window every one of them is an MPI
// accumulate-class call (MPI_Accumulate / MPI_Fetch_and_op, MPI_SUM), atomic with respect
// to each other by the MPI standard; a mixed window is an rma window for atomics (also to
// node-local targets). The two mechanisms are never mixed on one window.
//
// Destruction frees the window (MPI_Win_free, collective): only the WindowCache destroys
// windows, at collective points every rank has agreed to reach (failure rule).
//
// Replicated arrays' writes hold the window's replica lock (`lock_replicas`) across their
// updates of every copy, so that every copy receives the writes in the same order.
//
//   shared segment of rank r:    [ block: bytes, padded to 64 ][ lock word | replica word | unused ]
//   rma/mixed segment of rank r: [ block: bytes, padded to 64 ][ next ticket | now serving (int64) | unused ]
//   (the replica words of rank 0 are the lock; the others are unused)

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/outstanding.hpp>
#include <utility>
#include <vector>

namespace garray::detail {

/// dst[i] += src[i] for i < n; dst and src must not overlap. The body of an accumulate into
/// a shared window (run under the target segment's lock). Compiled for the CPU found at run
/// time (AVX-512 / AVX2 / baseline on x86-64), as MPI libraries' MPI_SUM kernels are.
void add_into(float* dst, const float* src, std::size_t n) noexcept;
void add_into(double* dst, const double* src, std::size_t n) noexcept;
void add_into(std::int32_t* dst, const std::int32_t* src, std::size_t n) noexcept;
void add_into(std::int64_t* dst, const std::int64_t* src, std::size_t n) noexcept;

// Atomic access to the segment lock words and the acquire fence of shared-memory loads,
// with the compiler's atomic builtins (GCC, Clang; the same instructions as std::atomic_ref
// and std::atomic_thread_fence): <atomic> would cost every translation unit that includes
// a garray header ~0.02 s and 4 MB to parse.
/// Acquire fence: later loads see what another rank stored before a synchronisation.
inline void acquire_fence() noexcept { __atomic_thread_fence(__ATOMIC_ACQUIRE); }

/// Local. Gives the core to another process (std::this_thread::yield), out of line so that
/// headers need not include <thread>.
void yield_cpu() noexcept;
/// Local. A polling loop's pause after `spin` polls: a yield, then (after thousands of polls,
/// milliseconds) a 20 us sleep.
void backoff(unsigned spin) noexcept;
/// Local. True if `w`'s memory model (MPI_WIN_MODEL) is MPI_WIN_UNIFIED; false if it is
/// separate or the query fails.
bool unified_model(MPI_Win w) noexcept;

/// Frees the windows handed over by Window::defer_free, in their order (unlock, then
/// MPI_Win_free; the same on every rank, so the collective frees match). Runs when
/// MPI_Finalize starts (Context's MPI_COMM_SELF attribute callback). Never throws.
void free_deferred_windows() noexcept;

class Window {
 public:
  /// Allocates `bytes` on this rank (may differ per rank, may be 0). **Collective over ctx.**
  /// The window counts itself in ctx's statistics but does not keep ctx alive (windows live
  /// in arrays, which hold their context, or in the context's own WindowCache).
  /// Creation agrees on success before anything else: if it failed on any rank, every rank
  /// throws (MpiError, with advice if the MPI library cannot create windows on ctx). Ranks
  /// whose MPI_Win_allocate succeeded free their window when every rank has one; when the
  /// MPI call itself failed somewhere they leak it (Stats::leaked_windows) rather than call
  /// a collective MPI_Win_free the failed ranks cannot match.
  Window(const Context& ctx, std::size_t bytes);
  /// Unlocks and frees the window. **Collective** (the WindowCache destroys windows only at
  /// points every rank agreed to reach, so it frees also while this rank unwinds). Never
  /// throws. After defer_free() it makes no MPI call.
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  /// Local. Hands the window's MPI handles to the process's deferred list, freed when
  /// MPI_Finalize starts (free_deferred_windows), in the order of `order` (a key identical
  /// on every rank of the window, and comparable across windows: context serial, window
  /// serial); the destructor then makes no MPI call and counts it in Stats::leaked_windows.
  /// For a context teardown during which some rank unwinds: every rank defers the same
  /// windows, so they can still be freed together later.
  void defer_free(std::pair<std::uint64_t, std::uint64_t> order) noexcept;

  std::byte* base() const noexcept { return base_; }  ///< This rank's block.
  std::size_t bytes() const noexcept { return bytes_; }
  /// The window every rank can reach by RMA (on mixed windows, the MPI_Win_create one).
  MPI_Win win() const noexcept { return win_; }
  WindowKind kind() const noexcept { return kind_; }
  /// MPI_WIN_MODEL is MPI_WIN_UNIFIED: public and private copies are the same memory, so
  /// this rank may load/store its own block directly while others access it by RMA.
  bool unified() const noexcept { return unified_; }
  int rank() const noexcept { return me_; }
  /// Rank r's block in this address space (shared windows; on mixed windows the ranks of
  /// this node), nullptr otherwise.
  std::byte* peer(int r) const noexcept { return peers_.empty() ? nullptr : peers_[r]; }

  void flush(int r) const { check_mpi(MPI_Win_flush(r, win_), "MPI_Win_flush"); }
  void flush_local(int r) const { check_mpi(MPI_Win_flush_local(r, win_), "MPI_Win_flush_local"); }
  void flush_all() const { check_mpi(MPI_Win_flush_all(win_), "MPI_Win_flush_all"); }
  void flush_local_all() const {
    check_mpi(MPI_Win_flush_local_all(win_), "MPI_Win_flush_local_all");
  }
  /// Shared windows only: takes rank r's accumulate lock (spins, then yields: ranks may be
  /// oversubscribed). Held only around a local load-add-store loop; never across MPI calls.
  void lock_segment(int r) const noexcept { spin_lock(locks_[static_cast<std::size_t>(r)]); }
  void unlock_segment(int r) const noexcept { spin_unlock(locks_[static_cast<std::size_t>(r)]); }
  /// The replica lock (docs/semantics.md, "Replicated arrays"): held by every write to a
  /// replicated array across its updates of all the copies, so that the copies receive the
  /// writes in one order and stay identical. Every rank's block must have the same size (a
  /// replicated array's). Shared windows: the replica word of rank 0's lock line, spun on
  /// like the segment locks (which stay free to take inside). rma and mixed windows: a
  /// ticket lock on rank 0's two replica words with MPI_Fetch_and_op(MPI_SUM) and flushes,
  /// then MPI_Win_sync. Throws MpiError.
  void lock_replicas() const;
  /// Completes this rank's writes everywhere (complete_all: remote completion, MPI_Win_sync),
  /// then releases the replica lock, also when the completion failed (the others must not
  /// wait for a lock nobody holds). Never throws: returns the completion's (or the release's)
  /// error, null on success, for the write's caller to rethrow (detail::ReplicaLock).
  [[nodiscard]] std::exception_ptr unlock_replicas() const noexcept;

  /// Memory barrier between this process' loads/stores and the window's public copy.
  void memory_sync() const {
    check_mpi(MPI_Win_sync(win_), "MPI_Win_sync");
    if (shm_win_ != MPI_WIN_NULL) check_mpi(MPI_Win_sync(shm_win_), "MPI_Win_sync");
  }
  /// memory_sync() where an error cannot be acted on (a destructor): both windows, errors
  /// ignored.
  void memory_sync_noexcept() const noexcept {
    MPI_Win_sync(win_);
    if (shm_win_ != MPI_WIN_NULL) MPI_Win_sync(shm_win_);
  }

  /// Where a write lands in a target's block, in bytes (location consistency, order_put):
  /// every byte it writes lies in [lo, hi), and, when pitch > 0, in one of the runs
  /// [lo + k pitch, lo + k pitch + run), k = 0, 1, ... (run <= pitch): a section's rows,
  /// columns or tile, so that writes to different columns or to tiles side by side of one
  /// block are told apart although their hulls interleave.
  struct Footprint {
    std::ptrdiff_t lo = 0, hi = 0, pitch = 0, run = 0;
  };
  /// Location consistency (docs/semantics.md, "Visibility rules" 3): a rank's writes to the
  /// same elements land in the order it issued them, as in Global Arrays. MPI orders one
  /// origin's accumulate-class calls to the same elements among themselves (accumulate_ordering's
  /// default), nothing else: neither a put after an earlier write nor an accumulate after an
  /// earlier put. order_acc / order_put are called before this rank issues an MPI write with
  /// footprint `f` in r's block; when `f` may overlap a write of this rank to r that is not
  /// yet complete at r and that MPI would not order it after, they complete this rank's writes
  /// to r first (MPI_Win_flush; Stats::ordering_flushes). Direct stores this rank made since
  /// into r's block (its own, or a node-local peer's on a mixed window: order_store) are
  /// ordered before the MPI call by MPI_Win_sync. Then `f` is recorded: r counts as written to
  /// until this rank's next flush of it. Throw MpiError (the flush) or bad_alloc (the first
  /// record for r) before anything is issued.
  ///
  /// Before an accumulate-class call (MPI_Accumulate / MPI_Fetch_and_op with MPI_SUM):
  /// ordered after an overlapping put (either form) by a flush.
  void order_acc(int r, const Footprint& f) const;
  /// Before a put. True: issue it as MPI_Accumulate with MPI_REPLACE (Stats::replace_puts),
  /// which MPI orders after this rank's earlier accumulate-class calls, instead of flushing.
  /// That is the choice when r is on another node (a flush there is a network round trip,
  /// a replace costs about a put) and `f` overlaps an earlier put of this rank still in
  /// flight to r: the first such put flushes (MPI_Put is ordered with nothing) and travels
  /// as a replace, so that rewriting the same elements again and again flushes once.
  /// On r's node a put is always an MPI_Put, after a flush when it overlaps any write of
  /// this rank in flight (a local flush is cheaper than a replace there).
  [[nodiscard]] bool order_put(int r, const Footprint& f) const;
  /// Before this rank stores directly (a memory copy, no MPI call) into footprint `f` of r's
  /// block (its own, or a node-local peer's on a mixed window): completes its MPI writes to r
  /// that may overlap it and still be in flight (as order_put on r's node), so that the
  /// store lands after them.
  void order_store(int r, const Footprint& f) const;
  /// Before reading from r: completes our own outstanding writes to r so a get sees them
  /// ("read your own writes"). No-op when nothing is outstanding. When r's block is read
  /// by loads (this rank's own, a node-local one of a mixed window), MPI_Win_sync orders the
  /// completed RMA update before them.
  void complete_writes_to(int r) const {
    if (dirty_[static_cast<std::size_t>(r)]) {
      flush(r);
      completed(r);
      if (r == me_ || peer(r)) memory_sync();
    }
  }
  /// After an MPI_Win_flush(r) made elsewhere: nothing of this rank's is in flight to r.
  void completed(int r) const noexcept;
  /// True if this rank may have writes to r not yet complete at r (since its last flush of r).
  bool writing_to(int r) const noexcept { return dirty_[static_cast<std::size_t>(r)] != 0; }
  /// Nonblocking requests issued on this window and not yet complete: a Request links
  /// itself in while it has something outstanding (and relinks under its new address when
  /// moved). complete_all() completes them, so every collective on the array completes an
  /// unwaited get (the gets' own completion, MPI_Waitall or MPI_Win_flush_local per target:
  /// MPICH 4.0's MPI_Win_flush_all was seen returning before a large get had landed);
  /// the array completes them before giving up the window. O(1), never throw.
  void attach(Outstanding* r) const noexcept {
    r->prev_ = nullptr;
    r->next_ = head_;
    if (head_) head_->prev_ = r;
    head_ = r;
  }
  void detach(Outstanding* r) const noexcept {
    (r->prev_ ? r->prev_->next_ : head_) = r->next_;
    if (r->next_) r->next_->prev_ = r->prev_;
    r->prev_ = r->next_ = nullptr;
  }
  /// Completes every linked request (each unlinks itself). Throws MpiError if MPI fails.
  void complete_outstanding() const {
    while (head_) head_->complete();
  }
  /// True if this rank has puts/accumulates not yet remotely completed (see order_put).
  bool has_pending_writes() const noexcept { return ndirty_ > 0; }
  /// Completes this rank's nonblocking requests (complete_outstanding: an unwaited get has
  /// read before the collective that called this lets anyone write), then remote completion
  /// of everything this rank issued (fence), then MPI_Win_sync: stores
  /// this rank made directly (shared-memory puts, its own block) are ordered before any
  /// synchronisation that follows (MPI-3.1 section 11.7: a barrier after fence() makes
  /// them visible).
  /// The requests first (under MPICH a get's own flush_local after an MPI_Win_flush_all did
  /// not wait for it); a request whose completion fails does not keep the writes from being
  /// flushed (replica lock holders rely on that), its exception is rethrown at the end.
  void complete_all() const {
    std::exception_ptr failed;
    try {
      complete_outstanding();
    } catch (...) {
      failed = std::current_exception();
    }
    if (ndirty_ > 0) {  // (records of targets not dirty are empty: completed() cleared them)
      flush_all();
      std::fill(dirty_.begin(), dirty_.end(), 0);
      for (Written& w : records_) w = Written{};
      ndirty_ = 0;
    }
    memory_sync();
    stored_ = false;
    if (failed) std::rethrow_exception(failed);
  }

 private:
  /// A lock word in shared memory: spins, then yields (ranks may be oversubscribed).
  static void spin_lock(std::uint32_t* l) noexcept {
    for (int spins = 0;; ++spins) {
      if (__atomic_load_n(l, __ATOMIC_RELAXED) == 0 && __atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE) == 0) return;
      if (spins >= 64) yield_cpu();
    }
  }
  static void spin_unlock(std::uint32_t* l) noexcept { __atomic_store_n(l, 0u, __ATOMIC_RELEASE); }

  Stats* stats_;  // the owning context's counters (not a Context: the cache lives inside it)
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Win shm_win_ = MPI_WIN_NULL;  // mixed windows: the node's shared allocation
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  WindowKind kind_;
  std::vector<std::byte*> peers_;
  std::vector<std::uint32_t*> locks_;  // shared windows: each rank's accumulate lock (and replica word)
  MPI_Aint replica_disp_ = 0;          // rma and mixed windows: the replica word's displacement
  // This rank's writes not yet complete at each target (since its last flush of it): a flag
  // per target, and for the targets written to so far a record (rec_: its index in
  // records_, -1 none; kept for the window's life and reused) of the footprints of its
  // writes by how MPI orders them: puts (MPI_Put), accumulates (MPI_SUM) and replaces (puts
  // as MPI_Accumulate with MPI_REPLACE). Footprints of one kind that touch are merged into
  // one (record), two are kept per kind, a third that touches neither makes all three their
  // hull.
  enum Kind : std::uint8_t { put_kind, acc_kind, replace_kind, kinds };
  struct Written {
    std::array<std::uint8_t, kinds> n{};
    std::array<std::array<Footprint, 2>, kinds> fs{};
  };
  static bool overlap(const Footprint& a, const Footprint& b) noexcept;
  static constexpr unsigned all_kinds = (1u << kinds) - 1;
  /// Bit k set (for the kinds k in `which`): f may overlap a write of kind k this rank has
  /// in flight to r.
  unsigned clashes(int r, const Footprint& f, unsigned which) const noexcept;
  /// The flush location consistency makes before a write to r (counted).
  void flush_to_order(int r) const;
  /// Before an MPI write of kind k to r: r's record exists (may throw bad_alloc), and,
  /// after flush_to_order if `flush`, MPI_Win_sync of earlier direct stores; then marks r
  /// dirty and records f.
  void record(int r, Kind k, const Footprint& f, bool flush) const;
  mutable std::vector<unsigned char> dirty_;
  mutable std::vector<std::int32_t> rec_;
  mutable std::vector<Written> records_;
  mutable int ndirty_ = 0;
  mutable bool stored_ = false;  // direct stores into a block also reached by MPI since the last MPI_Win_sync
  std::vector<unsigned char> remote_;    // rma and mixed windows: 1 for each rank on another node
  mutable Outstanding* head_ = nullptr;  // this rank's incomplete nonblocking requests
  int me_ = 0;
  bool unified_ = true;
  bool abandoned_ = false;
};

}  // namespace garray::detail

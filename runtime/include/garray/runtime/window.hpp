#pragma once
// Window: one MPI window exposing one block of memory per rank, locked for its whole life.
//
// Created collectively with MPI_Win_allocate_shared (WindowKind::shared) or MPI_Win_allocate
// (WindowKind::rma), then MPI_Win_lock_all(MPI_MODE_NOCHECK) once: a passive-target epoch
// to every rank that lasts until destruction. Completion is by flush / flush_local, never by
// per-operation lock/unlock (the pattern of ARMCI-MPI and GA on MPI-3).
//
// For shared windows `peer(r)` is a pointer to rank r's block in this process' address
// space, so data moves with memcpy. Accumulates into a shared window are garray's own: the
// caller takes the target segment's lock (a word in a cache line after each rank's
// segment, `lock_segment`), adds with plain loads and stores, and releases it; that keeps
// them atomic per element with respect to each other, as MPI_Accumulate would, without
// the MPI call. (Mixing them with MPI_Accumulate on the same window would not be atomic;
// the array layer never does.) On MPI_Win_allocate windows accumulates are MPI_Accumulate.
//
//   shared segment of rank r:  [ block: bytes, padded to 64 ][ lock word | unused ]

#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace garray::detail {

/// dst[i] += src[i] for i < n; dst and src must not overlap. The body of an accumulate into
/// a shared window (run under the target segment's lock). Compiled for the CPU found at run
/// time (AVX-512 / AVX2 / baseline on x86-64), as MPI libraries' MPI_SUM kernels are.
void add_into(float* dst, const float* src, std::size_t n) noexcept;
void add_into(double* dst, const double* src, std::size_t n) noexcept;
void add_into(std::int32_t* dst, const std::int32_t* src, std::size_t n) noexcept;
void add_into(std::int64_t* dst, const std::int64_t* src, std::size_t n) noexcept;

class Window {
 public:
  /// Allocates `bytes` on this rank (may differ per rank, may be 0). **Collective over ctx.**
  /// The window counts itself in ctx's statistics but does not keep ctx alive (windows live
  /// in arrays, which hold their context, or in the context's own WindowCache).
  /// Throws MpiError (with advice if the MPI library cannot create windows on ctx) on every
  /// rank if the allocation fails anywhere.
  Window(const Context& ctx, std::size_t bytes);
  /// Unlocks and frees the window. **Collective.** Never throws; if called while an exception
  /// unwinds the stack, the window is leaked (counted in Stats::leaked_windows) instead of
  /// risking a collective call that other ranks may never make.
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  std::byte* base() const noexcept { return base_; }  ///< This rank's block.
  std::size_t bytes() const noexcept { return bytes_; }
  MPI_Win win() const noexcept { return win_; }
  WindowKind kind() const noexcept { return kind_; }
  /// Rank r's block in this address space (shared windows), nullptr otherwise.
  std::byte* peer(int r) const noexcept { return peers_.empty() ? nullptr : peers_[r]; }

  void flush(int r) const { check_mpi(MPI_Win_flush(r, win_), "MPI_Win_flush"); }
  void flush_local(int r) const { check_mpi(MPI_Win_flush_local(r, win_), "MPI_Win_flush_local"); }
  void flush_all() const { check_mpi(MPI_Win_flush_all(win_), "MPI_Win_flush_all"); }
  void flush_local_all() const {
    check_mpi(MPI_Win_flush_local_all(win_), "MPI_Win_flush_local_all");
  }
  /// Shared windows only: takes rank r's accumulate lock (spins, then yields: ranks may be
  /// oversubscribed). Held only around a local load-add-store loop; never across MPI calls.
  void lock_segment(int r) const noexcept {
    std::atomic_ref<std::uint32_t> l(*locks_[static_cast<std::size_t>(r)]);
    for (int spins = 0;; ++spins) {
      if (l.load(std::memory_order_relaxed) == 0 && l.exchange(1, std::memory_order_acquire) == 0) return;
      if (spins >= 64) std::this_thread::yield();
    }
  }
  void unlock_segment(int r) const noexcept {
    std::atomic_ref<std::uint32_t>(*locks_[static_cast<std::size_t>(r)]).store(0, std::memory_order_release);
  }
  /// Memory barrier between this process' loads/stores and the window's public copy.
  void memory_sync() const { check_mpi(MPI_Win_sync(win_), "MPI_Win_sync"); }

  /// Marks that this rank has put/accumulated to `r` since the last remote flush of r.
  void mark_dirty(int r) noexcept {
    if (!dirty_[r]) {
      dirty_[r] = 1;
      ++ndirty_;
    }
  }
  /// Before reading from r: completes our own outstanding writes to r so a get sees them
  /// ("read your own writes"). No-op when nothing is outstanding.
  void complete_writes_to(int r) const {
    if (dirty_[r]) {
      flush(r);
      dirty_[r] = 0;
      --ndirty_;
    }
  }
  /// True if this rank has puts/accumulates not yet remotely completed (see mark_dirty).
  bool has_pending_writes() const noexcept { return ndirty_ > 0; }
  /// Remote completion of everything this rank issued (fence).
  void complete_all() const {
    flush_all();
    std::fill(dirty_.begin(), dirty_.end(), 0);
    ndirty_ = 0;
  }

 private:
  Stats* stats_;  // the owning context's counters (not a Context: the cache lives inside it)
  MPI_Win win_ = MPI_WIN_NULL;
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  WindowKind kind_;
  std::vector<std::byte*> peers_;
  std::vector<std::uint32_t*> locks_;  // shared windows: each rank's accumulate lock
  mutable std::vector<unsigned char> dirty_;
  mutable int ndirty_ = 0;
  int uncaught_at_creation_;
};

}  // namespace garray::detail

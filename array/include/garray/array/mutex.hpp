#pragma once
// Mutexes: Global Arrays' GA_Create_mutexes / GA_Lock / GA_Unlock, one-sided and fair.
//
//   garray::Mutexes m(ctx, 4);          // collective: 4 mutexes
//   {
//     garray::MutexGuard g(m, 2);       // one-sided: waits for mutex 2 (FIFO)
//     auto v = a.get(idx[0]);           // read-modify-write of a shared patch
//     a.put(idx[0], ...); a.fence();    // complete the write before releasing
//   }                                   // unlock
//   if (m.try_lock(1)) { ...; m.unlock(1); }
//   m.destroy();                        // collective; or let the destructor do it
//
// Algorithm: a ticket lock per mutex built only from `read_inc` (an atomic fetch-and-add,
// MPI_Fetch_and_op; `read_inc(i, 0)` is an atomic read) on a GlobalArray<int64_t, 2>, so the
// mutexes live in the same atomicity domain as read_inc on both window kinds. Row i holds
// mutex i's words on one owner:
//   [0] next     the next ticket to hand out
//   [1] serving  the ticket that holds the lock
//   [2 + t % K]  slot of ticket t (K = 2 P + 1): 0 free, 2 claimed (served), 1 abandoned
// lock:     t = next++; poll serving until it equals t (FIFO: no rank starves; a waiter has
//           at most P - 1 tickets ahead of it).
// unlock:   reset my slot, claim the next ticket's slot (+2; a ticket abandoned by try_lock
//           reads 1: reset it and skip to the following one), then serving += tickets
//           passed.
// try_lock: fails at once if the lock looks busy; otherwise takes a ticket; if it is not
//           served yet it marks its slot abandoned (+1). Whoever of unlocker and try_lock
//           comes second on the slot learns the outcome from the value (2: served, 1:
//           abandoned), so a ticket is either taken or skipped, never both. A rank has at
//           most one live and one abandoned ticket per mutex, so at most 2 P tickets are
//           unresolved and K = 2 P + 1 slots never collide.
// Memory ordering: read_inc completes at the owner on return (MPI_Win_flush), so the
// critical section's own transfers must be completed before unlock (get completes on
// return; call fence() after put/accumulate), as with GA_Unlock.
//
// Errors (garray exceptions naming the call, the mutex and the rank): BoundsError for a
// mutex index outside [0, size()); InvalidArgument for locking a mutex this rank already
// holds (it would deadlock), unlocking one it does not hold, using destroyed mutexes, and
// destroy() while any rank holds a mutex (thrown on every rank, nothing destroyed).

#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <vector>

namespace garray {

/// Global Arrays' mutexes (GA_Create_mutexes / GA_Lock / GA_Unlock): `n` FIFO ticket locks
/// built from read_inc on a GlobalArray<int64_t, 2>, so both window kinds and read_inc's
/// atomicity domain. Creation and destroy() are collective; lock(), try_lock() and unlock()
/// are one-sided. A critical section's own puts and accumulates must be completed (fence())
/// before unlock(), as with GA_Unlock.
class Mutexes {
 public:
  /// Creates `n` mutexes, all unlocked. **Collective over ctx**; every rank passes the same
  /// n (CollectiveMismatch otherwise); n < 0 throws InvalidArgument on every rank. On return
  /// every rank may lock any of them.
  Mutexes(const Context& ctx, int n);
  Mutexes(const Mutexes&) = delete;             ///< Not copyable.
  Mutexes& operator=(const Mutexes&) = delete;  ///< Not copyable.

  /// Local (the array goes back to the context's cache). Mutexes this rank still holds are
  /// released first, with a warning on stderr (call destroy() to get an error instead).
  /// Never throws.
  ~Mutexes();

  /// Local. Number of mutexes.
  int size() const noexcept { return n_; }
  /// Local. True if this rank holds mutex i.
  bool held(int i) const;

  /// One-sided. Waits until this rank holds mutex i (FIFO among the ranks asking): on
  /// return it holds it, and at most P - 1 other critical sections came first.
  /// Throws BoundsError, or InvalidArgument if this rank already holds it.
  void lock(int i);

  /// One-sided. Takes mutex i if it is free now and returns true; otherwise returns false
  /// at once (it never waits for another rank's critical section). May fail spuriously
  /// when another rank takes or releases the mutex at the same moment. Throws as lock().
  bool try_lock(int i);

  /// One-sided. Releases mutex i: on return this rank no longer holds it and the next
  /// waiting ticket (if any) is served. Throws BoundsError, or InvalidArgument if this rank
  /// does not hold it.
  void unlock(int i);

  /// **Collective** (handshaked). Frees the mutexes: on return their array is gone and any
  /// further use throws InvalidArgument. If any rank still holds one, every rank throws
  /// InvalidArgument naming the lowest such rank and its mutex, and nothing is freed.
  void destroy();

  /// Local. The most tickets that were ahead of this rank's ticket when one of its lock()
  /// calls first looked. Each rank has at most one ticket it waits or holds with and one it
  /// abandoned in try_lock (skipped without a critical section) in the queue of a mutex:
  /// with lock() alone at most P - 1 (the FIFO bound: each ticket another rank's critical
  /// section to wait for), with try_lock() too at most 2P - 1 tickets, still at most P - 1
  /// of them critical sections.
  std::int64_t max_queue_ahead() const noexcept { return max_ahead_; }

  /// Local. The array holding the lock words (for tests and statistics).
  const GlobalArray<std::int64_t, 2>& words() const { return *words_; }

 private:
  // The member functions are compiled once into libgarray_array (array/src/mutex.cpp).
  static constexpr int kNext = 0, kServing = 1;
  int slot_col(std::int64_t t) const noexcept { return 2 + static_cast<int>(t % slots_); }
  std::int64_t faa(int i, int col, std::int64_t inc);
  void check(int i, const char* call) const;
  [[noreturn]] void corrupt(int i, const char* call, std::int64_t v) const;

  Context ctx_;
  int n_ = 0;
  int slots_ = 1;
  std::optional<GlobalArray<std::int64_t, 2>> words_;
  std::vector<std::int64_t> held_;     // my ticket per mutex, -1 if not held
  std::vector<std::int64_t> pending_;  // my abandoned ticket per mutex, -1 if none
  std::int64_t max_ahead_ = 0;
};

/// RAII: locks mutex i of m on construction, unlocks on destruction (also while an
/// exception unwinds, so the other ranks do not wait forever).
class MutexGuard {
 public:
  /// One-sided: m.lock(i). On return this rank holds mutex i. Throws as Mutexes::lock.
  MutexGuard(Mutexes& m, int i) : m_(&m), i_(i) { m.lock(i); }
  MutexGuard(const MutexGuard&) = delete;             ///< Not copyable.
  MutexGuard& operator=(const MutexGuard&) = delete;  ///< Not copyable.
  /// One-sided: m.unlock(i). An error there cannot be reported and aborts the program
  /// (garray::abort).
  ~MutexGuard() {
    try {
      m_->unlock(i_);
    } catch (const std::exception& e) {
      garray::abort(e.what());
    }
  }

 private:
  Mutexes* m_;
  int i_;
};

}  // namespace garray

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

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
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
  Mutexes(const Context& ctx, int n) : ctx_(ctx), n_(n) {
    std::exception_ptr err;
    if (n < 0) {
      try {
        detail::raise<InvalidArgument>("garray::Mutexes: negative number of mutexes ", n);
      } catch (const Error&) {
        err = std::current_exception();
      }
    }
    try {
      detail::agree_signature(ctx.comm(), detail::hash_mix(detail::hash_string("mutexes"), err ? ~0ull : std::uint64_t(n)),
                              "garray::Mutexes", "n = " + std::to_string(n));
    } catch (const CollectiveMismatch&) {
      if (err) std::rethrow_exception(err);
      throw;
    }
    if (err) std::rethrow_exception(err);
    slots_ = 2 * ctx.size() + 1;
    words_.emplace(ctx, Shape<2>{n, 2 + slots_}, Distribution<2>::slab(0));
    {
      auto blk = words_->access();  // ticket 0 is served from the start: claim its slot
      for (Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i][2] = 2;
    }
    words_->sync();
    held_.assign(static_cast<std::size_t>(n), -1);
    pending_.assign(static_cast<std::size_t>(n), -1);
  }
  Mutexes(const Mutexes&) = delete;             ///< Not copyable.
  Mutexes& operator=(const Mutexes&) = delete;  ///< Not copyable.

  /// Local (the array goes back to the context's cache). Mutexes this rank still holds are
  /// released first, with a warning on stderr (call destroy() to get an error instead).
  /// Never throws.
  ~Mutexes() {
    if (!words_) return;
    for (int i = 0; i < n_; ++i) {
      if (held_[static_cast<std::size_t>(i)] < 0) continue;
      std::fprintf(stderr, "garray: Mutexes destroyed while rank %d holds mutex %d: released\n", ctx_.rank(), i);
      try {
        unlock(i);
      } catch (const std::exception& e) {
        garray::abort(e.what());
      }
    }
  }

  /// Local. Number of mutexes.
  int size() const noexcept { return n_; }
  /// Local. True if this rank holds mutex i.
  bool held(int i) const {
    check(i, "held");
    return held_[static_cast<std::size_t>(i)] >= 0;
  }

  /// One-sided. Waits until this rank holds mutex i (FIFO among the ranks asking): on
  /// return it holds it, and at most P - 1 other critical sections came first.
  /// Throws BoundsError, or InvalidArgument if this rank already holds it.
  void lock(int i) {
    check(i, "lock");
    auto& h = held_[static_cast<std::size_t>(i)];
    if (h >= 0)
      detail::raise<InvalidArgument>("garray::Mutexes::lock: mutex ", i,
                                     " is already held by this rank (locking it again would deadlock)");
    const std::int64_t t = faa(i, kNext, 1);
    for (unsigned spin = 0;; ++spin) {
      const std::int64_t s = faa(i, kServing, 0);
      if (spin == 0) max_ahead_ = std::max(max_ahead_, t - s);
      if (s == t) break;
      backoff(spin);
    }
    h = t;
    pending_[static_cast<std::size_t>(i)] = -1;  // an abandoned ticket of mine was before t: resolved
  }

  /// One-sided. Takes mutex i if it is free now and returns true; otherwise returns false
  /// at once (it never waits for another rank's critical section). May fail spuriously
  /// when another rank takes or releases the mutex at the same moment. Throws as lock().
  bool try_lock(int i) {
    check(i, "try_lock");
    const auto u = static_cast<std::size_t>(i);
    if (held_[u] >= 0)
      detail::raise<InvalidArgument>("garray::Mutexes::try_lock: mutex ", i, " is already held by this rank");
    std::int64_t s = faa(i, kServing, 0);
    if (pending_[u] >= 0) {
      if (s <= pending_[u]) return false;  // my abandoned ticket is not passed: still busy
      pending_[u] = -1;
    }
    if (faa(i, kNext, 0) != s) return false;  // held or queued
    const std::int64_t t = faa(i, kNext, 1);
    s = faa(i, kServing, 0);
    if (s != t) {
      const std::int64_t old = faa(i, slot_col(t), 1);
      if (old == 0) {  // abandoned before it was served: the unlocker will skip it
        pending_[u] = t;
        return false;
      }
      if (old != 2) corrupt(i, "try_lock", old);
      faa(i, slot_col(t), -1);  // served meanwhile: it is mine (slot back to "claimed")
    }
    held_[u] = t;
    return true;
  }

  /// One-sided. Releases mutex i: on return this rank no longer holds it and the next
  /// waiting ticket (if any) is served. Throws BoundsError, or InvalidArgument if this rank
  /// does not hold it.
  void unlock(int i) {
    check(i, "unlock");
    auto& h = held_[static_cast<std::size_t>(i)];
    if (h < 0) detail::raise<InvalidArgument>("garray::Mutexes::unlock: mutex ", i, " is not held by this rank");
    const std::int64_t t = h;
    faa(i, slot_col(t), -2);  // my slot: free again
    std::int64_t n = t + 1;
    for (;;) {  // claim the next ticket, skipping abandoned ones
      const std::int64_t old = faa(i, slot_col(n), 2);
      if (old == 0) break;
      if (old != 1) corrupt(i, "unlock", old);
      faa(i, slot_col(n), -3);
      ++n;
    }
    faa(i, kServing, n - t);
    h = -1;
  }

  /// **Collective** (handshaked). Frees the mutexes: on return their array is gone and any
  /// further use throws InvalidArgument. If any rank still holds one, every rank throws
  /// InvalidArgument naming the lowest such rank and its mutex, and nothing is freed.
  void destroy() {
    if (!words_) detail::raise<InvalidArgument>("garray::Mutexes::destroy: already destroyed");
    detail::agree_signature(ctx_.comm(), detail::hash_mix(detail::hash_string("mutexes-destroy"), words_->id()),
                            "garray::Mutexes::destroy", "mutexes on array #" + std::to_string(words_->id()));
    int mine = n_;
    for (int i = 0; i < n_; ++i)
      if (held_[static_cast<std::size_t>(i)] >= 0) {
        mine = i;
        break;
      }
    const int p = ctx_.size();
    int key = mine < n_ ? ctx_.rank() * (n_ + 1) + mine : p * (n_ + 1), low = 0;
    detail::check_mpi(MPI_Allreduce(&key, &low, 1, MPI_INT, MPI_MIN, ctx_.comm()), "MPI_Allreduce");
    if (low < p * (n_ + 1))
      detail::raise<InvalidArgument>("garray::Mutexes::destroy: rank ", low / (n_ + 1), " still holds mutex ",
                                     low % (n_ + 1), " (unlock it first)");
    words_.reset();
  }

  /// Local. The most tickets that were ahead of this rank's ticket when one of its lock()
  /// calls first looked (the FIFO bound: at most P - 1, each another rank's critical
  /// section to wait for; abandoned try_lock tickets are skipped without one).
  std::int64_t max_queue_ahead() const noexcept { return max_ahead_; }

  /// Local. The array holding the lock words (for tests and statistics).
  const GlobalArray<std::int64_t, 2>& words() const { return *words_; }

 private:
  static constexpr int kNext = 0, kServing = 1;
  int slot_col(std::int64_t t) const noexcept { return 2 + static_cast<int>(t % slots_); }

  std::int64_t faa(int i, int col, std::int64_t inc) { return words_->read_inc(Shape<2>{i, col}, inc); }

  void check(int i, const char* call) const {
    if (!words_) detail::raise<InvalidArgument>("garray::Mutexes::", call, ": the mutexes were destroyed");
    if (i < 0 || i >= n_)
      detail::raise<BoundsError>("garray::Mutexes::", call, ": mutex ", i, " out of range [0, ", n_, ")");
  }
  [[noreturn]] void corrupt(int i, const char* call, std::int64_t v) const {
    garray::abort("garray::Mutexes::" + std::string(call) + ": mutex " + std::to_string(i) +
                  " has an inconsistent ticket slot (" + std::to_string(v) + ")");
  }
  // Polling: yield the core between polls (ranks may outnumber cores); only a long wait
  // (thousands of polls, milliseconds) sleeps, because a sleep costs ~50 us of timer slack
  // and would add that to every hand-over of a busy mutex.
  static void backoff(unsigned spin) { detail::backoff(spin); }

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

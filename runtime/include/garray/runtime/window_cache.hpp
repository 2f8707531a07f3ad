#pragma once
// WindowCache: a per-Context pool of MPI windows that destroyed arrays leave behind, so a
// new array of the same kind skips MPI_Win_allocate / MPI_Win_free (GAiN's array cache).
//
//   garray::Context ctx;
//   ctx.cache().set_depth(3);            // windows kept per key (0 = nothing reused)
//   ctx.cache().set_byte_cap(1 << 30);   // cached bytes per rank, least recently used out
//   ctx.cache().set_window_cap(64);      // cached windows, least recently used out
//   ctx.cache().set_idle_after(1024);    // keys untouched for 1024 creates are freed
//   for (int it = 0; it < 100; ++it) {
//     garray::GlobalArray<double, 2> t(ctx, {2000, 2000});   // 1st: miss; later: hit
//   }                                    // destroy: window back to the pool, no MPI
//   ctx.cache().clear();                 // collective: frees every cached window
//
// The runtime layer knows no array types: the array layer describes a window by an opaque
// 64-bit key (element type, shape, resolved distribution, ghost width; the group is the
// Context itself), a *charge* in bytes that is identical on every rank (the largest block
// of any rank) and this rank's byte size. Two windows are interchangeable iff all agree.
//
//   create (collective)  plan() -> fold its signature into the create's signature
//                        allreduce (agree_signature) -> acquire(): free, then take/allocate
//   destroy              release(): window into the pool. Always **local**, at any depth:
//                        no MPI call needs the other ranks, never MPI_Win_free
//
// The pool has two parts. *Reusable* windows, in release order, which never exceed the
// limits: a release that would exceed one (depth per key, byte cap, window cap) moves the
// least recently released window of the key (depth) or of the pool (caps) to the *pending*
// part, windows that are freed at the next collective point. Windows released at depth 0,
// poisoned windows (their flush failed) and windows charged more than the byte cap go to
// the pending part at once. Lowering a limit applies to the reusable part at once; raising
// one never revives pending windows. Freeing (MPI_Win_free, collective) happens only at
// points every rank reaches in the same order: inside acquire() (after the create's
// signature agreement), clear() and the context's destruction, in allocation order.
// A create also frees the windows of *idle* keys: keys that neither a create nor a destroy
// touched during the last `idle_after` creates.
//
// Every decision is O(1) amortised (hash map of keys, release-order lists, running
// totals; a limit lowered from code costs one pass) and depends only on the sequence of
// create/destroy calls, the settings, the keys and the charges, all identical on every rank,
// so every rank makes the same decisions. The create signature includes the plan and an
// incrementally maintained hash of the pool (every window's allocation serial, release
// number and state), so a rank that diverged (e.g. destroyed an array the others keep)
// makes every rank throw CollectiveMismatch instead of hanging.
//
// Settings come from the environment when the Context is made and may be changed from
// code at any time (identically on every rank, between collective calls):
//   GARRAY_CACHE_DEPTH    windows kept per key, default 3; 0 turns reuse off
//   GARRAY_CACHE_BYTES    cap on cached bytes per rank, default 1G; suffixes K, M, G, T
//                         (binary multiples), e.g. GARRAY_CACHE_BYTES=256M
//   GARRAY_CACHE_WINDOWS  cap on cached windows, default 64
//   GARRAY_CACHE_IDLE     creates after which an untouched key's windows are freed,
//                         default 1024; 0 never frees idle windows

#include <garray/runtime/stats.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace garray {

class Context;
namespace detail {
class Window;
}

/// The per-Context pool of MPI windows that destroyed arrays leave behind, so a new array
/// of the same element type, shape, distribution and ghost width skips MPI_Win_allocate /
/// MPI_Win_free (GAiN's array cache). Reached as `ctx.cache()`. Destroying an array is
/// always local; windows are freed only at collective points (a create, clear(), the
/// context's end). Settings are local calls but must be identical on every rank (checked at
/// the next create). Environment: GARRAY_CACHE_DEPTH, GARRAY_CACHE_BYTES,
/// GARRAY_CACHE_WINDOWS, GARRAY_CACHE_IDLE (see window_cache.hpp).
class WindowCache {
 public:
  static constexpr int default_depth = 3;                               ///< as GAiN found best
  static constexpr std::size_t default_byte_cap = std::size_t{1} << 30;  ///< 1 GiB per rank
  static constexpr std::size_t default_window_cap = 64;                 ///< reusable windows
  static constexpr std::uint64_t default_idle_after = 1024;             ///< creates

  /// Reads GARRAY_CACHE_DEPTH / _BYTES / _WINDOWS / _IDLE. **Collective over comm** (one
  /// allreduce agrees that the environment parsed everywhere). Throws InvalidArgument on
  /// every rank if a value is malformed on any rank. Made by Context; users reach it as
  /// `ctx.cache()`.
  WindowCache(MPI_Comm comm, Stats& stats);
  /// Frees every cached window. **Collective** (runs at the Context's destruction, after its
  /// teardown agreement; when some rank unwinds there, defer_all() has handed the windows to
  /// MPI_Finalize first). On return no cached window is held. Never throws.
  ~WindowCache();
  /// Local. Hands every cached window to the deferred list (detail::Window::defer_free, keyed
  /// by `context_serial` and the window's serial, identical on every rank), freed when
  /// MPI_Finalize starts; no MPI call now. For a Context destroyed while some rank unwinds.
  void defer_all(std::uint64_t context_serial) noexcept;
  WindowCache(const WindowCache&) = delete;             ///< Not copyable: one per Context.
  WindowCache& operator=(const WindowCache&) = delete;  ///< Not copyable: one per Context.

  // ---- settings: Local, but must be identical on every rank ---------------------------
  // A rank whose settings differ is detected at the next create (CollectiveMismatch on
  // every rank). Lowering a limit moves the windows beyond it to the pending part at once
  // (one pass over the pool); they are freed at the next create or clear().

  /// Local. Windows kept per key (0 = reuse off: destroyed arrays' windows are freed at the
  /// next create or clear(); destroy stays local). Throws InvalidArgument if negative.
  void set_depth(int depth);
  int depth() const noexcept;  ///< Local.
  /// Local. Cap on the bytes of reusable windows per rank (each window charged its largest
  /// per-rank block, so the decision is the same on every rank). A window charged more
  /// than the cap is never reused; 0 reuses only windows charged 0 bytes (arrays whose
  /// blocks are all empty).
  void set_byte_cap(std::size_t bytes) noexcept;
  std::size_t byte_cap() const noexcept;  ///< Local.
  /// Local. Cap on the number of reusable windows (least recently released out); 0 caches
  /// nothing.
  void set_window_cap(std::size_t windows) noexcept;
  std::size_t window_cap() const noexcept;  ///< Local.
  /// Local. A create frees the windows of keys that no create or destroy touched during the
  /// last `creates` creates; 0 never frees idle windows.
  void set_idle_after(std::uint64_t creates) noexcept;
  std::uint64_t idle_after() const noexcept;  ///< Local.

  /// Frees every cached window (counted as evictions). **Collective over the context.** On
  /// return windows_held() == 0 and bytes_held() == 0 on every rank.
  /// Throws CollectiveMismatch on every rank (freeing nothing) if ranks hold different
  /// windows or live-array counts. Pools that hold the same windows in a different order
  /// (arrays destroyed in a different order on some rank) are freed consistently.
  void clear();

  /// Local. Windows held: reusable plus pending (freed at the next collective point). After
  /// every create and clear(), windows_held() <= window_cap().
  std::size_t windows_held() const noexcept;
  /// Local. Of windows_held(), those waiting to be freed at the next collective point.
  std::size_t windows_pending() const noexcept;
  /// Local. This rank's bytes in cached windows (also Stats::cache_bytes).
  std::size_t bytes_held() const noexcept;
  /// Local. Arrays of this context whose windows came through the cache and are alive.
  std::int64_t live_windows() const noexcept;
  /// Local. One line: "cache depth=3 byte_cap=1073741824 window_cap=64 idle_after=1024
  /// held=2 pending=0 bytes=16000000 live=5 creates=17".
  std::string describe() const;

  // ---- the array layer's hooks ----------------------------------------------------------

  /// How an array names its window to the cache: `key` != 0 identifies interchangeable
  /// windows, `charge` (bytes) is identical on every rank, `serial` is set by acquire():
  /// the allocation number of the window, the same on every rank for the same MPI window.
  struct Slot {
    std::uint64_t key = 0;     ///< identifies interchangeable windows (0: none)
    std::size_t charge = 0;    ///< bytes charged against the cap, identical on every rank
    std::uint64_t serial = 0;  ///< allocation number, set by acquire()
  };
  /// What acquire() would do, without doing it.
  struct Plan {
    bool hit = false;             ///< a cached window will be reused
    std::uint64_t signature = 0;  ///< fold into the create's collective signature
  };
  /// Local, O(1) plus the number of windows the create will free. What acquire(slot, bytes)
  /// would decide (`bytes`: this rank's size). The signature covers the decision, the
  /// windows to free, the settings, the pool (incrementally hashed) and the number of live
  /// arrays, so ranks that would decide differently fail the create's signature agreement
  /// instead of diverging.
  Plan plan(const Slot& slot, std::size_t bytes) const noexcept;
  /// **Collective over ctx** (call only after every rank agreed on plan()'s signature).
  /// Frees the pending windows and those of idle keys, then returns a cached window (hit)
  /// or a new one, and sets `slot.serial`. On a hit the memory holds the old array's data,
  /// on a miss it is uninitialised. A pure hit (nothing to free) makes no MPI call. When
  /// the create frees or allocates, the ranks first agree that their local part succeeded
  /// (detail::conclude: one allreduce): a local failure throws on every rank (the failing
  /// rank its own exception, the others CollectiveFailure) and changes nothing. Throws
  /// MpiError on every rank if the allocation fails (the windows are freed even then).
  std::unique_ptr<detail::Window> acquire(const Context& ctx, Slot& slot, std::size_t bytes);
  /// Takes back the window of a destroyed array. **Local**, at every depth: for a window that
  /// stays reusable, completes this rank's puts/accumulates on it (MPI_Win_flush_all if any
  /// are pending), then MPI_Win_sync, and pools it; otherwise (depth 0, poisoned, over the
  /// byte cap) it only joins the pending part (MPI_Win_free at the next collective point
  /// completes everything). Nonblocking requests must have been waited before. Never throws.
  void release(const Slot& slot, std::unique_ptr<detail::Window> w) noexcept;

 private:
  // The pool's data structures (window_cache.cpp): hash map of keys, release-order and
  // touch-order lists, running totals. Behind a pointer so that every translation unit
  // including this header (all of them, through global_array.hpp) does not instantiate
  // <deque>, <list> and <unordered_map> for it.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace garray

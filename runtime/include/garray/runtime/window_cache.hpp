#pragma once
// WindowCache: a per-Context pool of MPI windows that destroyed arrays leave behind, so a
// new array of the same kind skips MPI_Win_allocate / MPI_Win_free (GAiN's array cache).
//
//   garray::Context ctx;
//   ctx.cache().set_depth(3);            // windows kept per key (0 = cache off)
//   ctx.cache().set_byte_cap(1 << 30);   // cached bytes per rank, least recently used out
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
//                        allreduce (agree_signature) -> acquire(): evict, then take/allocate
//   destroy              release(): flush pending writes, window into the pool. Local: no
//                        MPI call needs the other ranks (depth 0: MPI_Win_free, collective)
//
// Eviction frees windows with MPI_Win_free, a collective call, so it only happens at
// points every rank reaches in the same order: inside acquire() (after the create's
// signature agreement), clear() and the context's destruction. Between such points the
// pool may hold more than `depth` windows of a key or more than the byte cap; the next
// collective point trims it (oldest first), exactly as if it had been trimmed on release.
// Decisions depend only on the sequence of create/destroy calls, the keys and the
// charges, all identical on every rank, so every rank makes the same decisions; the
// create signature includes the plan so a rank that diverged (e.g. destroyed an array the
// others keep) makes every rank throw CollectiveMismatch instead of hanging.
//
// Settings come from the environment when the Context is made and may be changed from
// code at any time (identically on every rank, between collective calls):
//   GARRAY_CACHE_DEPTH   windows kept per key, default 3; 0 turns the cache off
//   GARRAY_CACHE_BYTES   cap on cached bytes per rank, default 1G; suffixes K, M, G, T
//                        (binary multiples), e.g. GARRAY_CACHE_BYTES=256M

#include <garray/runtime/stats.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace garray {

class Context;
namespace detail {
class Window;
}

class WindowCache {
 public:
  static constexpr int default_depth = 3;                               ///< as GAiN found best
  static constexpr std::size_t default_byte_cap = std::size_t{1} << 30;  ///< 1 GiB per rank

  /// Reads GARRAY_CACHE_DEPTH / GARRAY_CACHE_BYTES. **Collective over comm** (one allreduce
  /// agrees that the environment parsed everywhere). Throws InvalidArgument on every rank if
  /// a value is malformed on any rank. Made by Context; users reach it as `ctx.cache()`.
  WindowCache(MPI_Comm comm, Stats& stats);
  /// Frees every cached window. **Collective** (runs at the Context's destruction, which is
  /// collective anyway). Never throws; during stack unwinding the windows are leaked and
  /// counted in Stats::leaked_windows instead (see detail::Window).
  ~WindowCache();
  WindowCache(const WindowCache&) = delete;
  WindowCache& operator=(const WindowCache&) = delete;

  // ---- settings: Local, but must be identical on every rank ---------------------------
  // A rank whose settings differ is detected at the next create (CollectiveMismatch on
  // every rank). Lowering a limit takes effect at the next create or clear().

  /// Local. Windows kept per key (0 = cache off: destroy frees the window at once, which is
  /// then collective, as without a cache). Throws InvalidArgument if negative.
  void set_depth(int depth);
  int depth() const noexcept { return depth_; }  ///< Local.
  /// Local. Cap on the bytes of cached windows per rank (each window charged its largest
  /// per-rank block, so the decision is the same on every rank). A window charged more
  /// than the cap is never reused; 0 caches nothing.
  void set_byte_cap(std::size_t bytes) noexcept { cap_ = bytes; }
  std::size_t byte_cap() const noexcept { return cap_; }  ///< Local.

  /// Frees every cached window (counted as evictions). **Collective over the context.**
  /// Throws CollectiveMismatch on every rank (freeing nothing) if ranks hold different
  /// windows or live-array counts. Pools that hold the same windows in a different order
  /// (arrays destroyed in a different order on some rank) are freed consistently.
  void clear();

  std::size_t windows_held() const noexcept { return entries_.size(); }  ///< Local.
  /// Local. This rank's bytes in cached windows (also Stats::cache_bytes).
  std::size_t bytes_held() const noexcept { return bytes_held_; }
  /// Local. Arrays of this context whose windows came through the cache and are alive.
  std::int64_t live_windows() const noexcept { return live_; }
  /// Local. One line: "cache depth=3 byte_cap=1073741824 held=2 bytes=16000000 live=5".
  std::string describe() const;

  // ---- the array layer's hooks ----------------------------------------------------------

  /// How an array names its window to the cache: `key` != 0 identifies interchangeable
  /// windows, `charge` (bytes) is identical on every rank, `serial` is set by acquire():
  /// the allocation number of the window, the same on every rank for the same MPI window.
  struct Slot {
    std::uint64_t key = 0;
    std::size_t charge = 0;
    std::uint64_t serial = 0;
  };
  /// What acquire() would do, without doing it.
  struct Plan {
    bool hit = false;             ///< a cached window will be reused
    std::uint64_t signature = 0;  ///< fold into the create's collective signature
  };
  /// Local. What acquire(slot, bytes) would decide (`bytes`: this rank's size). The
  /// signature covers the decision, every eviction, the settings, the pool's windows in
  /// order and the number of live arrays, so ranks that would decide differently fail the
  /// create's signature agreement instead of diverging.
  Plan plan(const Slot& slot, std::size_t bytes) const noexcept;
  /// **Collective over ctx** (call only after every rank agreed on plan()'s signature).
  /// Trims the pool (depth per key, then the byte cap, oldest first), then returns a cached
  /// window (hit) or a new one, and sets `slot.serial`. On a hit the memory holds the old
  /// array's data, on a miss it is uninitialised. Throws MpiError on every rank if the
  /// allocation fails (the pool is trimmed even then).
  std::unique_ptr<detail::Window> acquire(const Context& ctx, Slot& slot, std::size_t bytes);
  /// Takes back the window of a destroyed array. **Local** when depth() > 0: completes this
  /// rank's puts/accumulates on the window (MPI_Win_flush_all if any are pending), then
  /// MPI_Win_sync, and pools it. Nonblocking requests must have been waited before.
  /// With depth() == 0 the window is freed now (collective, as without a cache). Never throws.
  void release(const Slot& slot, std::unique_ptr<detail::Window> w) noexcept;

 private:
  struct Entry {
    Slot slot;  // key 0: poisoned (its flush failed), never reused, freed first
    std::size_t bytes;
    std::unique_ptr<detail::Window> win;
  };
  // Marks in evict_ the entries the next collective point frees and returns the index of
  // the entry to reuse for (key, charge, bytes), or -1. Shared by plan() and acquire() so
  // the predicted and the executed decision cannot differ.
  std::ptrdiff_t decide(const Slot& slot, std::size_t bytes) const noexcept;
  std::uint64_t state_hash(std::uint64_t seed) const noexcept;  // settings, live, pool in order
  void free_marked() noexcept;  // frees entries_ marked in evict_, oldest first
  void free_all() noexcept;     // frees every entry, in serial order
  void update_gauge() noexcept;

  MPI_Comm comm_;
  Stats* stats_;
  int depth_ = default_depth;
  std::size_t cap_ = default_byte_cap;
  std::vector<Entry> entries_;  // in release order: front = least recently used
  mutable std::vector<unsigned char> evict_;
  std::size_t bytes_held_ = 0;
  std::uint64_t allocations_ = 0;  // serial numbers of windows, identical on every rank
  std::int64_t live_ = 0;
};

}  // namespace garray

#pragma once
// Per-rank statistics of one Context: windows and one-sided traffic, like GA_Print_stats.
//
// Counters are plain integers updated by the calling thread; reading them is Local.
// `print_stats` reduces them over the context's ranks (sum and max) and prints one table.

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace garray {

class Context;

/// Kinds of one-sided operations that are counted.
enum class Op : int { get, put, acc, gather, scatter, scatter_acc, read_inc, count_ };

/// Number of counted operation kinds (the size of Stats::ops).
inline constexpr int op_count = static_cast<int>(Op::count_);

/// Local. Returns the name of an Op for tables ("get", "put", ...).
std::string_view op_name(Op op) noexcept;

/// Traffic of one operation kind on one rank. "local" is data that lives on the calling
/// rank; "remote" is everything else (whether moved by MPI or by shared-memory copies).
struct OpCounters {
  std::int64_t calls = 0;         ///< user-level calls
  std::int64_t local_pieces = 0;  ///< per-owner pieces that targeted this rank
  std::int64_t remote_pieces = 0; ///< per-owner pieces that targeted another rank
  std::int64_t local_bytes = 0;   ///< bytes of the local pieces
  std::int64_t remote_bytes = 0;  ///< bytes of the remote pieces
};

/// All counters of one rank. Reset with `Stats{}`.
struct Stats {
  std::int64_t windows_allocated = 0;  ///< MPI windows created (MPI_Win_allocate*)
  std::int64_t windows_freed = 0;      ///< MPI windows freed
  std::int64_t window_bytes = 0;       ///< bytes currently held in live windows on this rank
  std::int64_t arrays_created = 0;     ///< GlobalArray constructions (cached or not)
  std::int64_t arrays_destroyed = 0;   ///< GlobalArray destructions (window cached or freed)
  std::int64_t leaked_windows = 0;     ///< windows not freed now: left by a failed allocation elsewhere, or deferred to MPI_Finalize by a context teardown while some rank unwound
  std::int64_t cache_hits = 0;         ///< array creations served by the window cache
  std::int64_t cache_misses = 0;       ///< array creations that allocated a new window
  std::int64_t cache_evictions = 0;    ///< cached windows freed (depth, byte cap, clear, context end)
  std::int64_t cache_bytes = 0;        ///< bytes of this rank held in cached (unused) windows now
  std::int64_t syncs = 0;              ///< collective sync() calls
  std::int64_t fences = 0;             ///< fence() calls
  std::int64_t mpi_rma_calls = 0;      ///< MPI_Get/Put/Accumulate/Fetch_and_op calls issued
  std::int64_t ordering_flushes = 0;   ///< MPI_Win_flush calls made so that a write lands after this rank's
                                       ///< earlier, overlapping one (location consistency)
  std::int64_t replace_puts = 0;       ///< puts issued as MPI_Accumulate(MPI_REPLACE) instead, ordered by MPI
                                  ///< after this rank's earlier put to another node (location consistency)
  std::int64_t temp_bytes_peak = 0;    ///< largest temporary buffer a transfer allocated
  std::array<OpCounters, op_count> ops{};  ///< traffic per operation kind, indexed by Op

  /// Local. The counters of operation kind `op`.
  OpCounters& operator[](Op op) noexcept { return ops[static_cast<int>(op)]; }
  /// Local. The counters of operation kind `op`.
  const OpCounters& operator[](Op op) const noexcept { return ops[static_cast<int>(op)]; }
};

/// Prints the statistics of every rank of `ctx`, reduced (sum over ranks and max per rank),
/// as one table on rank 0 of `ctx`. **Collective over ctx** (handshaked). On return rank 0
/// has written the table to `os`; the other ranks write nothing.
void print_stats(const Context& ctx, std::ostream& os);

}  // namespace garray

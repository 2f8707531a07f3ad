#pragma once
// The owner-computes engine behind every numeric operation.
//
//   1. validate   every view leaf: same context as the driver, shape equal to the
//                 expression's; signature of the call (driver, leaves, expression type)
//   2. agree      fence every array involved, then one allreduce comparing signatures:
//                 collective misuse throws CollectiveMismatch on every rank; a local error
//                 is rethrown on every rank (nothing moved yet)
//   3. plan       the driver (the output view, or the first view operand for reductions)
//                 gives this rank's piece: the elements it owns, a box [k0, k1) in the
//                 expression's index space. Every view leaf becomes a LeafSource:
//                   - aliasing leaves (overlapping the output without being it element for
//                     element) are snapshotted: per array, one bounding region when compact,
//                     else one get per leaf (numpy semantics);
//                   - every other leaf is split by owner (below).
//   4. alias      if a snapshot was taken, a barrier after every rank's snapshot and before
//                 any write. The decision uses only the global sections: same everywhere.
//   5. split      the piece is cut into sub-boxes along the preimages of the input arrays'
//                 block boundaries (the cuts of every non-aliasing view leaf, through its
//                 start/step; negative steps and dropped dimensions included), so in each
//                 sub-box every leaf reads from exactly one owner. Per sub-box a leaf is
//                   - read in place (pointer + strides into this rank's window memory) when
//                     that owner is this rank: a stencil's own rows are never copied;
//                   - else fetched, one get_section of just that sub-piece (the halo).
//                 Correctness never depends on the cuts: a sub-box spanning several owners
//                 (cuts capped at max_sub_boxes) is fetched whole, get_section splitting it.
//   6. run        per sub-box the iteration box is collapsed across contiguous dimensions
//                 and the bound expression (raw pointers + strides) runs once per run.
//                 Order-sensitive callers (reductions, assign_reduce) run `ordered`: the
//                 rows of all sub-boxes are interleaved so elements are visited in exactly
//                 the row-major order of the piece (results independent of the cuts).
//   7. finish     writes become visible: MPI_Win_sync and a barrier.
//
// Fetched data lives in a per-thread ScratchArena: uninitialised (no zero fill), 64-byte
// aligned, bump-allocated and reset at the end of every call, its memory KEPT across calls
// (up to scratch_keep_bytes) so repeated steps pay no allocation, zero fill or page faults.
// A nested evaluation on the same thread (e.g. from a user functor) gets a private arena.

// The engine is split along these steps: detail/engine_sources.hpp (slots, scratch, leaf
// sources), detail/engine_plan.hpp (steps 1-4), detail/engine_execute.hpp (steps 5-6).

#include <garray/numeric/detail/engine_execute.hpp>

#pragma once
// Asynchronous progress of one-sided operations (docs/semantics.md, "Progress").
//
// Across hosts without hardware RDMA, an MPI library serves a one-sided get/put/accumulate
// aimed at a rank only when that rank calls into MPI. GARRAY_PROGRESS=thread makes every
// Context whose windows are not shared start (once per process) a progress thread that calls into MPI every
// GARRAY_PROGRESS_INTERVAL microseconds (default 30), so a rank busy in local computation
// still serves the others. It needs MPI_THREAD_MULTIPLE: when garray initialises MPI it asks
// for it; a program that initialises MPI itself passes required_thread_level() to
// MPI_Init_thread. Default (unset or "none"): no thread, garray needs MPI_THREAD_FUNNELED.

#include <string_view>

namespace garray {

/// Who serves one-sided operations aimed at a rank that is not calling MPI.
enum class ProgressMode {
  none,   ///< the MPI library alone (the target's own MPI calls, or RDMA / shared memory)
  thread  ///< a garray thread per process calling MPI_Iprobe and MPI_Test every progress interval
};

/// Local. The progress mode GARRAY_PROGRESS asks for on this rank: unset, "" or "none" ->
/// none, "thread" -> thread. Throws InvalidArgument naming the value and the rank for
/// anything else. Contexts agree on it across ranks when they are made (a rank asking for
/// another mode makes every rank throw InvalidArgument).
ProgressMode requested_progress();

/// Local. The MPI thread level garray needs on this rank with the current environment:
/// MPI_THREAD_MULTIPLE when GARRAY_PROGRESS=thread, MPI_THREAD_FUNNELED otherwise. A program
/// that initialises MPI itself calls
/// `MPI_Init_thread(&argc, &argv, garray::required_thread_level(), &provided)`. Never throws
/// (it runs before MPI exists): an invalid value gives MPI_THREAD_FUNNELED, and the first
/// Context reports it on every rank.
int required_thread_level() noexcept;

/// Local. "none" or "thread".
std::string_view to_string(ProgressMode m) noexcept;

}  // namespace garray

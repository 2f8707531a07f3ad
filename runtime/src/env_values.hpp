#pragma once
// Error-path helper of the runtime: what an environment setting was on each rank, for the
// message every rank throws when the ranks disagree about it.

#include <mpi.h>

#include <string>

namespace garray::detail {

/// "rank 0: 'a', rank 1: 'b', ..." (each rank's `mine`, its first 120 characters; the
/// first 8 ranks whose value differs from rank 0's are listed after rank 0's, then "..."), or
/// "every rank: 'a'" if every rank passed the same. **Collective** over comm (error paths only: one
/// allgather).
std::string values_by_rank(MPI_Comm comm, const std::string& mine);

}  // namespace garray::detail

#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>

#include <cstdio>

namespace garray {
namespace {
int world_rank_or_minus_one() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return -1;
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
}  // namespace

Error::Error(const std::string& what) : std::runtime_error(what), rank_(world_rank_or_minus_one()) {}

MpiError::MpiError(const std::string& what, int code) : Error(what), code_(code) {}

// The key functions: one vtable and type_info per class, here.
Error::~Error() = default;
BoundsError::~BoundsError() = default;
SizeMismatch::~SizeMismatch() = default;
InvalidSlice::~InvalidSlice() = default;
InvalidArgument::~InvalidArgument() = default;
TypeMismatch::~TypeMismatch() = default;
CollectiveMismatch::~CollectiveMismatch() = default;
CollectiveFailure::~CollectiveFailure() = default;
MpiError::~MpiError() = default;

void abort(std::string_view msg) noexcept {
  std::fprintf(stderr, "garray: fatal%s: %.*s\n", detail::rank_suffix().c_str(),
               static_cast<int>(msg.size()), msg.data());
  std::fflush(stderr);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

namespace detail {

std::string rank_suffix() {
  const int r = world_rank_or_minus_one();
  if (r < 0) return {};
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return " [rank " + std::to_string(r) + "/" + std::to_string(p) + "]";
}

void throw_mpi_error(int rc, std::string_view call) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  int cls = rc;
  MPI_Error_class(rc, &cls);
  std::string msg = std::string(call) + " failed with error " + std::to_string(rc) + ": " +
                    std::string(text, static_cast<std::size_t>(len));
  if (cls == MPI_ERR_WIN && (call.find("MPI_Win_allocate") != std::string_view::npos ||
                             call.find("MPI_Win_create") != std::string_view::npos)) {
    // The one failure users hit in practice: Open MPI's osc/rdma cannot span hosts without an
    // RDMA network. Say what to do instead of leaving them with MPI_ERR_WIN.
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE)
      // GARRAY_PROGRESS=thread (or the program) asked for MPI_THREAD_MULTIPLE, which Open
      // MPI's osc/pt2pt refuses: suggesting pt2pt would send the user in a circle.
      msg +=
          ". The MPI library could not create a one-sided window on this communicator under "
          "MPI_THREAD_MULTIPLE (which GARRAY_PROGRESS=thread needs); Open MPI's osc/pt2pt, the "
          "component that spans hosts over TCP, refuses it: unset GARRAY_PROGRESS (and call "
          "ctx.progress() in long local loops), use UCX (`--mca pml ucx --mca osc ucx`), or MPICH";
    else
      msg +=
          ". The MPI library could not create a one-sided window on this communicator; across "
          "hosts without an RDMA network Open MPI needs another one-sided component: run with "
          "`mpiexec --mca osc pt2pt` (or `--mca osc ucx` with UCX), or set OMPI_MCA_osc=pt2pt";
  }
  throw MpiError(msg + rank_suffix(), rc);
}

}  // namespace detail
}  // namespace garray

namespace garray::detail {
// See fault.hpp: set only by the test-only library garray_fault_injection.
void (*fault_hook)(std::string_view point) = nullptr;
}  // namespace garray::detail

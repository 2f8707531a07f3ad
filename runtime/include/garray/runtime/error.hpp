#pragma once
// The garray exception hierarchy and the helpers every layer uses to raise it.
//
//   Error                  base of all; carries the rank that raised it
//   ├── BoundsError        an index or index list outside the array
//   ├── SizeMismatch       buffer size or shape differs from the section's
//   ├── InvalidSlice       zero step, too many indices
//   ├── InvalidArgument    bad shape, distribution or other argument
//   ├── TypeMismatch       element types disagree (collectives, files)
//   ├── CollectiveMismatch ranks disagreed on a collective call or its arguments
//   ├── CollectiveFailure  another rank failed inside a collective (its message included)
//   └── MpiError           an MPI call failed; code() and MPI's own text
//
// Messages name the call, the offending values and the rank:
//   "GlobalArray<double,2>::get: index 12 out of range [0, 10) in dim 1 [rank 2/4]"

#include <mpi.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace garray {

/// Base of every exception garray throws. `rank()` is the world rank that raised it.
class Error : public std::runtime_error {
 public:
  /// Local. An error with message `what`, stamped with this process's rank in
  /// MPI_COMM_WORLD (-1 when MPI is not initialised or already finalised).
  explicit Error(const std::string& what);
  ~Error() override;  // out of line: vtables and type info live in libgarray_runtime
  /// Local. The MPI_COMM_WORLD rank that raised the error (-1 if raised outside MPI's lifetime).
  int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// An index or an index list entry outside the array. Thrown before any data moves.
class BoundsError : public Error {
 public:
  using Error::Error;
  ~BoundsError() override;
};
/// A buffer's size or an operand's shape differs from the section's it must match. Thrown
/// before any data moves.
class SizeMismatch : public Error {
 public:
  using Error::Error;
  ~SizeMismatch() override;
};
/// A slice that cannot be normalised: a zero step, a step that overflows, more indices
/// than dimensions, two ellipses. Thrown before any data moves.
class InvalidSlice : public Error {
 public:
  using Error::Error;
  ~InvalidSlice() override;
};
/// Invalid shape, distribution or other argument.
class InvalidArgument : public Error {
 public:
  using Error::Error;
  ~InvalidArgument() override;
};
/// Element types disagree: an array's and a file dataset's, or an attribute's stored type
/// and the one asked for.
class TypeMismatch : public Error {
 public:
  using Error::Error;
  ~TypeMismatch() override;
};
/// Ranks disagreed on which collective they called or on its arguments. Thrown on every rank.
class CollectiveMismatch : public Error {
 public:
  using Error::Error;
  ~CollectiveMismatch() override;
};
/// Thrown on every rank of a collective that failed on *another* rank after the collective's
/// handshake (the failing rank throws its own exception). `failed_rank()` is the lowest
/// failing rank of the context; the message carries that rank's own message. See the failure
/// rule in docs/semantics.md.
class CollectiveFailure : public Error {
 public:
  /// Local. The error with message `what` reporting that `failed_rank` failed.
  CollectiveFailure(const std::string& what, int failed_rank) : Error(what), failed_rank_(failed_rank) {}
  ~CollectiveFailure() override;
  /// Local. The lowest rank (of the collective's context) whose part failed.
  int failed_rank() const noexcept { return failed_rank_; }

 private:
  int failed_rank_;
};
/// An MPI call returned an error code. `code()` is that code; the message includes MPI's text.
class MpiError : public Error {
 public:
  /// Local. The error with message `what` for the MPI error code `code`.
  MpiError(const std::string& what, int code);
  ~MpiError() override;
  /// Local. The MPI error code the failing call returned.
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// Local; never returns. Prints "garray: fatal [rank r/p]: msg" to stderr and calls
/// MPI_Abort on MPI_COMM_WORLD (std::abort if MPI is not initialised or already finalised).
/// For states that cannot be recovered or are inconsistent across ranks.
[[noreturn]] void abort(std::string_view msg) noexcept;

namespace detail {

/// " [rank r/p]" for the world communicator (empty before MPI_Init / after finalize).
std::string rank_suffix();

/// Builds a message from any streamable pieces and appends the rank suffix.
template <class... Args>
std::string message(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  os << rank_suffix();
  return os.str();
}

/// Throws `E` with a message built from `args` (and the rank).
template <class E, class... Args>
[[noreturn]] void raise(const Args&... args) {
  throw E(message(args...));
}

/// Turns a non-success MPI return code into an MpiError naming `call`.
void throw_mpi_error(int rc, std::string_view call);
inline void check_mpi(int rc, std::string_view call) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    throw_mpi_error(rc, call);
}

/// Streams a std::array / span-like sequence as "[a, b, c]".
template <class Seq>
struct SeqPrinter {
  const Seq& seq;
  friend std::ostream& operator<<(std::ostream& os, const SeqPrinter& p) {
    os << '[';
    bool first = true;
    for (const auto& v : p.seq) {
      os << (first ? "" : ", ") << v;
      first = false;
    }
    return os << ']';
  }
};
template <class Seq>
SeqPrinter<Seq> seq(const Seq& s) {
  return {s};
}

}  // namespace detail
/// Local; never returns. Throws `E` (a garray::Error) with a message streamed from `args`
/// plus " [rank r/p]", the way garray reports its own errors: for applications built on
/// garray.
///   garray::throw_error<garray::InvalidArgument>("app: bad grid '", text, "'");
template <class E, class... Args>
requires std::is_base_of_v<Error, E>
[[noreturn]] void throw_error(const Args&... args) { detail::raise<E>(args...); }
/// Local. Throws MpiError naming `call`, with MPI's text for `rc`, unless rc is MPI_SUCCESS.
inline void check_mpi(int rc, std::string_view call) { detail::check_mpi(rc, call); }

}  // namespace garray

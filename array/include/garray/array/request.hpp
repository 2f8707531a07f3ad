#pragma once
// Request: the handle of a nonblocking one-sided operation (get_nb / put_nb / acc_nb).
//
// wait() gives the same guarantee as the blocking call on return (get: the data is in the
// buffer; put/acc: the buffer may be reused; remote completion still needs fence()/sync()).
// Nonblocking writes are ordered with this rank's other writes as blocking ones are (location
// consistency, docs/semantics.md Visibility rules 3); a get_nb and this rank's later writes
// to the same elements are unordered until it is done. A Request that is
// destroyed without wait() waits in its destructor. With MPICH, test() may block until the
// operation is locally complete (see detail::request_ops_ok).

#include <mpi.h>

#include <exception>
#include <functional>
#include <garray/runtime/outstanding.hpp>
#include <vector>

namespace garray {
namespace detail {
/// Whether nonblocking transfers use MPI's request-based RMA (MPI_Rget/Rput/Raccumulate).
/// Not with MPICH: its CH4/UCX netmod completes the request of an operation with a derived
/// datatype before the data moved (pmodels/mpich#7896; here it showed as a get buffer written
/// after wait() returned). There the operation is issued without a request and wait()
/// completes it with MPI_Win_flush_local on its target, which has the same guarantee.
#if defined(MPICH_NUMVERSION)
inline constexpr bool request_ops_ok = false;
#else
inline constexpr bool request_ops_ok = true;
#endif
}  // namespace detail

class Request;
namespace detail {
class Window;
/// The array layer's access to a Request under construction.
struct RequestAccess {
  static MPI_Request* add_mpi(Request& r);
  /// Appends `f` (moved from only on success: if the append throws, `f` still holds what it
  /// held, e.g. the last reference to a temporary MPI is still using).
  static void add_finisher(Request& r, std::function<void()>&& f);
  /// Links r into the window it was issued on if it has anything outstanding (at the end of
  /// the issuing call; never throws): the window's collectives then complete it, and the
  /// array completes it before giving the window up.
  static void attach(Request& r, const Window& w) noexcept;
  /// After a failed issue whose operations abandon() completed: forgets r's finishers, so
  /// that neither the unpacks of temporaries into the caller's buffer nor anything else runs
  /// later (the temporaries they hold are freed here, safely: MPI is done with them).
  static void drop_finishers(Request& r) noexcept;
};
}  // namespace detail

/// The handle of a nonblocking one-sided operation (get_nb / put_nb / acc_nb). wait(), or
/// test() returning true, gives the blocking call's guarantee: get: the data is in the
/// buffer; put/accumulate: the buffer may be reused (remote completion still needs fence()
/// or sync()). Writes land in the order they were issued, as blocking ones (location
/// consistency); a get_nb and later writes to the same elements are unordered until it is
/// done. Every member
/// is Local. Move-only; destroying an unfinished Request waits for it. A collective on its
/// array (sync(), fill(), ...) completes it as wait() would, before the collective's
/// synchronisation (a get then holds the data as it was before the collective), and so does
/// destroying the array or moving another over it (an MPI failure there aborts, as in the
/// destructor). The Request is then done. (Requests follow the array's window: moving the
/// array moves them with it.)
class [[nodiscard]] Request final : private detail::Outstanding {
 public:
  /// Local. A request with nothing outstanding (done() is true).
  Request() = default;
  /// Local. Takes over `o`'s outstanding operation; `o` is left with nothing outstanding.
  Request(Request&& o) noexcept;
  /// Local. Waits for this request's own operation first (as the destructor), then takes
  /// over `o`'s; `o` is left with nothing outstanding.
  Request& operator=(Request&& o) noexcept;
  Request(const Request&) = delete;             ///< Not copyable.
  Request& operator=(const Request&) = delete;  ///< Not copyable.
  /// Local. Waits for the operation if it is outstanding (wait()); an error there cannot be
  /// reported and aborts the program (garray::abort).
  ~Request();

  /// Local. Blocks until the operation is locally complete: on return a get's data is in
  /// its buffer (temporaries unpacked), a put's or accumulate's buffer may be reused, and
  /// done() is true. Throws MpiError if MPI fails, also (once) when another call -- fence(),
  /// a collective, a replicated write -- completed this request and met the failure.
  void wait();
  /// Local. True (and completes like wait()) if the operation is locally complete; false
  /// leaves it outstanding. With MPICH it may block until local completion.
  bool test();
  /// Local. True when nothing is outstanding.
  bool done() const noexcept { return reqs_.empty() && finishers_.empty(); }

 private:
  // The member functions are compiled once into libgarray_array (array/src/request.cpp).
  friend struct detail::RequestAccess;  // the array layer builds requests
  // Local. A new slot (MPI_REQUEST_NULL) for an MPI request that wait() completes.
  MPI_Request* add_mpi();
  // Local. `f` runs once the MPI requests are complete (in wait() or a successful test()),
  // in the order added: unpacks temporaries or flushes the target when no MPI request is
  // used (MPICH).
  void add_finisher(std::function<void()>&& f);
  void run_finishers();
  void finish_noexcept() noexcept;
  void swap(Request& o) noexcept;
  void complete() override;  // the window's completion: remembers a failure for wait()
  std::vector<MPI_Request> reqs_;
  std::vector<std::function<void()>> finishers_;
  std::exception_ptr failed_;            // met while another call completed this request; wait() rethrows it
  const detail::Window* win_ = nullptr;  // linked into its list while something is outstanding
};

}  // namespace garray

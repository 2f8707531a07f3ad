#pragma once
// Request: the handle of a nonblocking one-sided operation (get_nb / put_nb / acc_nb).
//
// wait() gives the same guarantee as the blocking call on return (get: the data is in the
// buffer; put/acc: the buffer may be reused; remote completion still needs fence()/sync()).
// Nonblocking operations are unordered with respect to each other. A Request that is
// destroyed without wait() waits in its destructor. With MPICH, test() may block until the
// operation is locally complete (see detail::request_ops_ok).

#include <mpi.h>

#include <functional>
#include <garray/runtime/error.hpp>
#include <memory>
#include <utility>
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
/// The array layer's access to a Request under construction.
struct RequestAccess {
  static MPI_Request* add_mpi(Request& r);
  static void add_finisher(Request& r, std::function<void()> f);
};
}  // namespace detail

/// The handle of a nonblocking one-sided operation (get_nb / put_nb / acc_nb). wait(), or
/// test() returning true, gives the blocking call's guarantee: get: the data is in the
/// buffer; put/accumulate: the buffer may be reused (remote completion still needs fence()
/// or sync()). Nonblocking operations are unordered with respect to each other. Every member
/// is Local. Move-only; destroying an unfinished Request waits for it.
class [[nodiscard]] Request {
 public:
  /// Local. A request with nothing outstanding (done() is true).
  Request() = default;
  /// Local. Takes over `o`'s outstanding operation; `o` is left with nothing outstanding.
  Request(Request&& o) noexcept { swap(o); }
  /// Local. Waits for this request's own operation first (as the destructor), then takes
  /// over `o`'s; `o` is left with nothing outstanding.
  Request& operator=(Request&& o) noexcept {
    if (this != &o) {
      finish_noexcept();
      reqs_.clear();
      finishers_.clear();
      swap(o);
    }
    return *this;
  }
  Request(const Request&) = delete;             ///< Not copyable.
  Request& operator=(const Request&) = delete;  ///< Not copyable.
  /// Local. Waits for the operation if it is outstanding (wait()); an error there cannot be
  /// reported and aborts the program (garray::abort).
  ~Request() { finish_noexcept(); }

  /// Local. Blocks until the operation is locally complete: on return a get's data is in
  /// its buffer (temporaries unpacked), a put's or accumulate's buffer may be reused, and
  /// done() is true. Throws MpiError if MPI fails.
  void wait() {
    if (!reqs_.empty()) {
      detail::check_mpi(MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE),
                        "MPI_Waitall");
      reqs_.clear();
    }
    run_finishers();
  }
  /// Local. True (and completes like wait()) if the operation is locally complete; false
  /// leaves it outstanding. With MPICH it may block until local completion.
  bool test() {
    if (!reqs_.empty()) {
      int flag = 0;
      detail::check_mpi(MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, MPI_STATUSES_IGNORE),
                        "MPI_Testall");
      if (!flag) return false;
      reqs_.clear();
    }
    run_finishers();
    return true;
  }
  /// Local. True when nothing is outstanding.
  bool done() const noexcept { return reqs_.empty() && finishers_.empty(); }

 private:
  friend struct detail::RequestAccess;  // the array layer builds requests
  // Local. A new slot (MPI_REQUEST_NULL) for an MPI request that wait() completes.
  MPI_Request* add_mpi() { return &reqs_.emplace_back(MPI_REQUEST_NULL); }
  // Local. `f` runs once the MPI requests are complete (in wait() or a successful test()),
  // in the order added: unpacks temporaries or flushes the target when no MPI request is
  // used (MPICH).
  void add_finisher(std::function<void()> f) { finishers_.push_back(std::move(f)); }
  void run_finishers() {
    auto fs = std::move(finishers_);
    finishers_.clear();
    for (auto& f : fs) f();
  }
  void finish_noexcept() noexcept {
    try {
      wait();
    } catch (const std::exception& e) {
      garray::abort(e.what());
    }
  }
  void swap(Request& o) noexcept {
    reqs_.swap(o.reqs_);
    finishers_.swap(o.finishers_);
  }
  std::vector<MPI_Request> reqs_;
  std::vector<std::function<void()>> finishers_;
};

inline MPI_Request* detail::RequestAccess::add_mpi(Request& r) { return r.add_mpi(); }
inline void detail::RequestAccess::add_finisher(Request& r, std::function<void()> f) {
  r.add_finisher(std::move(f));
}

}  // namespace garray

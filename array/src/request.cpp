// Request (request.hpp), compiled once into libgarray_array.
#include <garray/array/request.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/window.hpp>

#include <exception>
#include <utility>

namespace garray {

Request::Request(Request&& o) noexcept { swap(o); }

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    finish_noexcept();
    reqs_.clear();
    finishers_.clear();
    failed_ = nullptr;
    swap(o);
  }
  return *this;
}

Request::~Request() { finish_noexcept(); }

void Request::wait() {
  // A failure met when another call completed this request (complete()) is reported here
  // once, after the rest (if any) is complete; that rest's own error comes second.
  const std::exception_ptr earlier = std::exchange(failed_, nullptr);
  try {
    if (!reqs_.empty()) {
      detail::check_mpi(MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE),
                        "MPI_Waitall");
      reqs_.clear();
    }
    run_finishers();
  } catch (...) {
    if (!earlier) throw;
  }
  if (earlier) std::rethrow_exception(earlier);
}

bool Request::test() {
  if (!reqs_.empty()) {
    int flag = 0;
    detail::check_mpi(MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, MPI_STATUSES_IGNORE),
                      "MPI_Testall");
    if (!flag) return false;  // an earlier failure stays for the call that completes
    reqs_.clear();
  }
  wait();  // the finishers, and an earlier failure
  return true;
}

MPI_Request* Request::add_mpi() { return &reqs_.emplace_back(MPI_REQUEST_NULL); }

// push_back(T&&) has the strong guarantee (std::function's move is noexcept): when the
// growth throws, `f` is untouched and its owner still holds the temporaries.
void Request::add_finisher(std::function<void()>&& f) { finishers_.push_back(std::move(f)); }

void Request::run_finishers() {
  auto fs = std::move(finishers_);
  finishers_.clear();
  const detail::Window* w = win_;
  if (win_) {  // the MPI side is complete: nothing outstanding on the window any more
    win_->detach(this);
    win_ = nullptr;
  }
  // Every finisher runs, also after one threw (under MPICH the finishers are the flushes of
  // the targets: a failed one must not leave the others' operations in flight, or the
  // temporaries freed under them); the first exception is rethrown.
  std::exception_ptr first;
  for (auto& f : fs) {
    try {
      f();
      detail::fault_point("request.finisher");
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) {
    if (w) MPI_Win_flush_local_all(w->win());  // best effort before the temporaries go
    std::rethrow_exception(first);
  }
}

void Request::complete() {
  try {
    wait();
  } catch (...) {
    failed_ = std::current_exception();  // the caller throws it; the request's wait() will too
    throw;
  }
}

void Request::finish_noexcept() noexcept {
  failed_ = nullptr;  // already reported by the call that completed the request
  try {
    wait();
  } catch (const std::exception& e) {
    garray::abort(e.what());
  }
}

void Request::swap(Request& o) noexcept {
  // The windows link requests by address: unlink both, swap, link each under its new
  // address (O(1) each).
  if (win_) win_->detach(this);
  if (o.win_) o.win_->detach(&o);
  reqs_.swap(o.reqs_);
  finishers_.swap(o.finishers_);
  failed_.swap(o.failed_);
  std::swap(win_, o.win_);
  if (win_) win_->attach(this);
  if (o.win_) o.win_->attach(&o);
}

MPI_Request* detail::RequestAccess::add_mpi(Request& r) { return r.add_mpi(); }
void detail::RequestAccess::add_finisher(Request& r, std::function<void()>&& f) {
  r.add_finisher(std::move(f));
}
void detail::RequestAccess::drop_finishers(Request& r) noexcept { r.finishers_.clear(); }
void detail::RequestAccess::attach(Request& r, const Window& w) noexcept {
  if (r.done() || r.win_) return;
  w.attach(&r);
  r.win_ = &w;
}

}  // namespace garray

#pragma once
// The progress thread behind GARRAY_PROGRESS=thread (progress.cpp). Private to the library:
// contexts hold it; the last context to go stops it.

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace garray::detail {

/// A receive on a private duplicate of MPI_COMM_SELF that nothing matches. Testing it enters
/// the MPI library's whole progress engine on every call: Open MPI's pml/ucx runs that
/// engine (opal_progress, which drives osc/ucx's own UCX worker) only on every 100th
/// MPI_Iprobe (pml_ucx_progress_iterations) but on every test of an incomplete request.
/// Used by the progress thread and by Context::progress() (poll_progress).
class UnmatchedReceive {
 public:
  /// Duplicates MPI_COMM_SELF (once) and posts the receive. Throws MpiError; what was made
  /// before a failure stays for close() (or a later post()).
  void post();
  bool posted() const noexcept { return req_ != MPI_REQUEST_NULL; }
  /// One MPI_Test of the receive (it never completes): returns MPI's code.
  int test() noexcept {
    int flag = 0;
    return MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
  }
  /// Cancels the receive and frees the communicator (idempotent; MPI-safe from
  /// MPI_Finalize's attribute callbacks).
  void close() noexcept;

 private:
  MPI_Comm self_ = MPI_COMM_NULL;
  MPI_Request req_ = MPI_REQUEST_NULL;
  int sink_ = 0;
};

class ProgressThread {
 public:
  explicit ProgressThread(std::chrono::microseconds interval);
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;
  /// Stops and joins the thread (idempotent; also called from MPI_Finalize).
  void stop() noexcept;
  /// True until stop() has run.
  bool running() noexcept;
  std::uint64_t polls() const noexcept { return polls_.load(std::memory_order_relaxed); }

 private:
  /// stop()'s work without the lock: joins the thread if it runs, cancels the receive and
  /// frees the communicator if they exist (also the cleanup of a failed start).
  void shut_down() noexcept;
  void run();
  std::chrono::microseconds interval_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> polls_{0};
  std::mutex stop_mutex_;
  UnmatchedReceive receive_;  // tested per poll
  std::thread thread_;
};

/// Context::progress(): one poll that enters the whole progress engine, also under Open MPI's
/// pml/ucx: MPI_Iprobe on `comm`, then a test of an UnmatchedReceive (posted on first use,
/// closed when MPI_Finalize starts). For the calling thread only: the progress thread has
/// its own.
void poll_progress(MPI_Comm comm);

/// The process's progress thread, started on first use (needs MPI_THREAD_MULTIPLE).
std::shared_ptr<ProgressThread> acquire_progress_thread();
/// GARRAY_PROGRESS_INTERVAL in microseconds (default 30; 0 = yield between polls).
/// Throws InvalidArgument for a malformed value.
std::chrono::microseconds progress_interval();

}  // namespace garray::detail

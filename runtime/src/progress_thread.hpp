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
  MPI_Comm self_ = MPI_COMM_NULL;           // a private duplicate of MPI_COMM_SELF
  MPI_Request pending_ = MPI_REQUEST_NULL;  // a receive on self_ nobody matches (tested per poll)
  int sink_ = 0;
  std::thread thread_;
};

/// Context::progress(): one poll that enters the whole progress engine, also under Open MPI's
/// pml/ucx (see ProgressThread::run): MPI_Iprobe on `comm`, then MPI_Test on a receive on a
/// private duplicate of MPI_COMM_SELF that nothing matches (made on first use, freed when
/// MPI_Finalize starts). For the calling thread only: the progress thread has its own.
void poll_progress(MPI_Comm comm);

/// The process's progress thread, started on first use (needs MPI_THREAD_MULTIPLE).
std::shared_ptr<ProgressThread> acquire_progress_thread();
/// GARRAY_PROGRESS_INTERVAL in microseconds (default 30; 0 = yield between polls).
/// Throws InvalidArgument for a malformed value.
std::chrono::microseconds progress_interval();

}  // namespace garray::detail

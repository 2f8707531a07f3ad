// GARRAY_PROGRESS=thread: one thread per process that calls into MPI at a fixed interval, so
// one-sided operations aimed at a rank busy in local computation are served (see
// progress.hpp, docs/semantics.md "Progress", docs/design.md "Progress").
#include "progress_thread.hpp"
#include <garray/runtime/error.hpp>
#include <garray/runtime/progress.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#if defined(__linux__)
#include <pthread.h>
#include <sys/prctl.h>
#endif
#include <mutex>
#include <string>

namespace garray {

namespace {
std::string_view env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}
}  // namespace

ProgressMode requested_progress() {
  const std::string_view v = env_or_empty("GARRAY_PROGRESS");
  if (v.empty() || v == "none") return ProgressMode::none;
  if (v == "thread") return ProgressMode::thread;
  detail::raise<InvalidArgument>("GARRAY_PROGRESS='", v, "': expected 'none' or 'thread'");
}

int required_thread_level() noexcept {
  // Called before MPI_Init: a bad value is not reported here (this rank alone, without MPI)
  // but by the Context's agreement, on every rank.
  return env_or_empty("GARRAY_PROGRESS") == "thread" ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
}

std::string_view to_string(ProgressMode m) noexcept { return m == ProgressMode::thread ? "thread" : "none"; }

namespace detail {

std::chrono::microseconds progress_interval() {
  const std::string_view v = env_or_empty("GARRAY_PROGRESS_INTERVAL");
  if (v.empty()) return std::chrono::microseconds(30);  // measured: docs/performance.md "Across hosts"
  char* end = nullptr;
  const std::string s(v);
  const long us = std::strtol(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || us < 0 || us > 1000000)
    raise<InvalidArgument>("GARRAY_PROGRESS_INTERVAL='", v, "': expected microseconds in [0, 1000000]");
  return std::chrono::microseconds(us);
}

namespace {
}  // namespace

void UnmatchedReceive::post() {
  if (self_ == MPI_COMM_NULL) check_mpi(MPI_Comm_dup(MPI_COMM_SELF, &self_), "MPI_Comm_dup");
  if (req_ == MPI_REQUEST_NULL) check_mpi(MPI_Irecv(&sink_, 1, MPI_INT, 0, 0, self_, &req_), "MPI_Irecv");
}

void UnmatchedReceive::close() noexcept {
  if (req_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&req_);
    MPI_Wait(&req_, MPI_STATUS_IGNORE);
  }
  if (self_ != MPI_COMM_NULL) MPI_Comm_free(&self_);
}

namespace {
// poll_progress's receive: posted on first use, closed by an MPI_COMM_SELF attribute, whose
// deletion MPI_Finalize starts with (as the thread's below).
UnmatchedReceive poll_receive;
int poll_keyval = MPI_KEYVAL_INVALID;
int close_poll_receive(MPI_Comm, int, void*, void*) {
  poll_receive.close();
  return MPI_SUCCESS;
}
}  // namespace

void poll_progress(MPI_Comm comm) {
  int flag = 0;
  check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
  if (!poll_receive.posted()) {
    if (poll_keyval == MPI_KEYVAL_INVALID)
      check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, close_poll_receive, &poll_keyval, nullptr),
                "MPI_Comm_create_keyval");
    poll_receive.post();
    check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, poll_keyval, nullptr), "MPI_Comm_set_attr");
  }
  check_mpi(poll_receive.test(), "MPI_Test");
}

namespace {
// MPI_Finalize deletes MPI_COMM_SELF's attributes first: the callback stops the thread
// there, so a program that finalises MPI while contexts still exist (garray's destructors
// check MPI_Finalized) never has the thread calling MPI after MPI_Finalize. That is enough
// with Open MPI. MPICH 4.0 turns its own locking off (MPIR_ThreadInfo.isThreaded = 0, in
// MPI_Finalize before the callbacks run; src/mpi/init/mpir_init.c): a poll that entered
// MPI before that leaves MPICH's global mutex held, and MPI_Finalize aborts destroying it
// ("pthread_mutex_destroy: Device or resource busy"). No callback can prevent that, only
// destroying the contexts before MPI_Finalize (the documented rule); under MPICH the callback
// says so on stderr before the abort can happen.
int finalize_keyval = MPI_KEYVAL_INVALID;
int stop_at_finalize(MPI_Comm, int, void* attr, void*) {
  auto* t = static_cast<ProgressThread*>(attr);
#ifdef MPICH_VERSION
  if (t->running())
    std::fputs("garray: MPI_Finalize was called while a Context with GARRAY_PROGRESS=thread still existed: MPICH "
               "turns its locking off in MPI_Finalize while the progress thread may be inside MPI (an abort in "
               "MPI_Finalize). Destroy every Context and array before MPI_Finalize.\n",
               stderr);
#endif
  t->stop();
  return MPI_SUCCESS;
}
}  // namespace

ProgressThread::ProgressThread(std::chrono::microseconds interval) : interval_(interval) {
  if (finalize_keyval == MPI_KEYVAL_INVALID)
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, stop_at_finalize, &finalize_keyval, nullptr),
              "MPI_Comm_create_keyval");
  try {
    receive_.post();  // tested on every poll (below)
    thread_ = std::thread([this] { run(); });  // std::system_error at the process' thread limit
#if defined(__linux__)
    // Named before the constructor returns, so that tools (top -H, gdb,
    // /proc/PID/task/*/comm) and the tests tell it from the MPI library's own threads
    // (at most 15 characters; a failure only leaves the default name).
    pthread_setname_np(thread_.native_handle(), "garray-progress");
#endif
    // Only once the thread exists: the finalize callback must never see a destroyed object.
    check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, this), "MPI_Comm_set_attr");
  } catch (...) {
    shut_down();  // nothing of a failed start stays behind
    throw;
  }
}

void ProgressThread::run() {
#if defined(PR_SET_TIMERSLACK)
  // Linux lets a sleeping thread wake up to 50 us late by default (timer slack, to batch
  // wake-ups): with a 10-100 us interval that slack is the latency. 1 ns asks for the
  // interval as given; it only affects this thread.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  while (!stopping_.load(std::memory_order_acquire)) {
    int flag = 0;
    // A call that enters the whole progress engine. Not on MPI_COMM_SELF (or a duplicate):
    // MPICH's ch4 serves a probe among "local" ranks from shared memory alone and never polls
    // the network (measured: the busy target was not served). MPI_COMM_WORLD with
    // MPI_ANY_SOURCE polls every transport; a probe receives nothing, so the program's own
    // messages on MPI_COMM_WORLD are left alone (and creating a private communicator
    // spanning the world would be collective: threads start per process, not together).
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    // The whole engine also under Open MPI's pml/ucx (UnmatchedReceive; measured across
    // hosts: an 8 B get from a busy target 5-8 ms with the probe alone). Harmless elsewhere:
    // one more progress poll.
    (void)receive_.test();
    ++polls_;
    if (interval_.count() > 0)
      std::this_thread::sleep_for(interval_);
    else
      std::this_thread::yield();
  }
}

bool ProgressThread::running() noexcept {
  std::lock_guard lock(stop_mutex_);
  return thread_.joinable();
}

void ProgressThread::stop() noexcept {
  std::lock_guard lock(stop_mutex_);
  if (!thread_.joinable()) return;
  shut_down();
}

void ProgressThread::shut_down() noexcept {
  if (thread_.joinable()) {
    stopping_.store(true, std::memory_order_release);
    thread_.join();
  }
  receive_.close();  // still MPI-safe here (also from MPI_Finalize's callback)
}

ProgressThread::~ProgressThread() {
  stop();
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Comm_delete_attr(MPI_COMM_SELF, finalize_keyval);  // calls stop() again: a no-op
}

std::shared_ptr<ProgressThread> acquire_progress_thread() {
  static std::mutex m;
  static std::weak_ptr<ProgressThread> ours;
  std::lock_guard lock(m);
  if (auto p = ours.lock()) return p;
  auto p = std::make_shared<ProgressThread>(progress_interval());
  ours = p;
  return p;
}

}  // namespace detail
}  // namespace garray

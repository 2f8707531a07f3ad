// Test-only LD_PRELOAD module for MPICH (ch4:ucx): yield the CPU when a progress poll finds
// nothing to do, as Open MPI's mpi_yield_when_idle does (which it turns on by itself when
// oversubscribed).
//
// Why: MPICH's progress engine busy-polls, and Debian 12's MPICH 4.0.2 (ch4:ucx) never
// yields: MPIR_CVAR_POLLS_BEFORE_YIELD belongs to ch3:nemesis, MPID_Progress_wait's yield
// is a no-op below MPI_THREAD_MULTIPLE and libmpich imports no sched_yield at all. With 3
// or 4 ranks on the 2-core CI machine a rank waiting in a collective spins until the
// scheduler preempts it: ~10 ms per MPI_Allreduce instead of ~5 us, and test_io at np 4
// takes minutes instead of under a second (docs/design.md, "The MPICH tree").
//
// How: MPICH's progress loop calls UCX's ucp_worker_progress() on every iteration (also on
// one node, next to its shared-memory progress). This module defines that symbol, calls the
// real one and, when it reported no event, calls sched_yield(), so a waiting rank hands its
// core to a rank that has work. Nothing else changes: the same messages, the same order.
// tests/CMakeLists.txt builds it only for an MPICH build and preloads it into every test run
// at 3-4 ranks and into the io tests (GARRAY_TEST_MPICH_YIELD).
#include <dlfcn.h>
#include <sched.h>

struct ucp_worker;

extern "C" unsigned ucp_worker_progress(ucp_worker* worker) {
  using Progress = unsigned (*)(ucp_worker*);
  static const Progress real = reinterpret_cast<Progress>(dlsym(RTLD_NEXT, "ucp_worker_progress"));
  const unsigned events = real ? real(worker) : 0u;
  if (events == 0) sched_yield();
  return events;
}

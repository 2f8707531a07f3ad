// garray initialises MPI itself here: this binary has its own doctest main and never calls
// MPI_Init (every other test binary's main initialises MPI first). semantics.md "Errors" and
// "Destruction" (from the progress/context audit):
//  - a Context whose creation failed leaves MPI initialised (the program can retry), and so
//    does a rank unwinding through its last Context: garray then finalises MPI at exit;
//  - a Context made after MPI_Finalize throws InvalidArgument, it does not abort the job;
//  - a rank unwinding through its last Context does not wait for the others (it used to
//    run the collective MPI_Finalize in the destructor).
// ctest runs each case alone (-tc): test_owned_mpi.lifetime, .unwinding and .thread.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <garray/garray.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/test_support.hpp"

namespace {
bool mpi_finalized() {
  int fin = 0;
  MPI_Finalized(&fin);
  return fin != 0;
}
bool mpi_initialized() {
  int init = 0;
  MPI_Initialized(&init);
  return init != 0;
}
bool finalize_seen = false;
std::size_t threads_at_finalize = 99;
/// An MPI_COMM_SELF attribute's delete callback: MPI_Finalize runs these first, newest first.
int record_at_finalize(MPI_Comm, int, void*, void*) {
  finalize_seen = true;
  threads_at_finalize = test::progress_threads();
  return MPI_SUCCESS;
}
}  // namespace

TEST_CASE("garray owns MPI: a failed first Context leaves MPI usable; a Context after MPI_Finalize throws") {
  REQUIRE_FALSE(mpi_initialized());  // this binary must not initialise MPI itself
  {
    const char* old = std::getenv("GARRAY_PROGRESS");
    const std::string keep = old ? old : "";
    setenv("GARRAY_PROGRESS", "bogus", 1);  // invalid on every rank: every rank throws
    CHECK_THROWS_AS((void)garray::Context(MPI_COMM_WORLD), garray::InvalidArgument);
    if (old)
      setenv("GARRAY_PROGRESS", keep.c_str(), 1);
    else
      unsetenv("GARRAY_PROGRESS");
  }
  CHECK(mpi_initialized());
  CHECK_FALSE(mpi_finalized());  // was finalised in the failed constructor's unwinding
  {
    garray::Context c;  // a retry works
    garray::GlobalArray<double, 1> a(c, {4 * static_cast<garray::Index>(c.size())});
    a.fill(2.0);
    CHECK(a.get(garray::idx[0]) == 2.0);
    CHECK(c.agree(true));
  }
  {
    garray::Context again;  // and another one after it is gone
    CHECK(again.agree(true));
  }
  CHECK_FALSE(mpi_finalized());
  MPI_Finalize();  // as the program would; the exit handler then finds MPI finalised
  std::string msg;
  try {
    garray::Context late;
  } catch (const garray::InvalidArgument& e) {
    msg = e.what();
  }
  CAPTURE(msg);
  CHECK(msg.find("MPI is already finalized") != std::string::npos);  // was: the MPI library aborted the job
}

TEST_CASE("garray owns MPI: a rank unwinding through its last Context does not wait for the others") {
  using Clock = std::chrono::steady_clock;
  std::optional<garray::Context> self;  // keeps garray's MPI alive on the ranks that do not unwind
  int me = -1, p = 0;
  Clock::time_point thrown{};
  double unwind_s = -1;
  try {
    garray::Context world;  // initialises MPI on every rank
    me = world.rank();
    p = world.size();
    if (p >= 2) {
      if (me != 0) self.emplace(MPI_COMM_SELF);
      {
        garray::GlobalArray<double, 1> a(world, {8 * static_cast<garray::Index>(p)});
        a.fill(1.0);
      }  // its window is pooled in world's cache: the teardown has something to free
      if (me == 0) {
        thrown = Clock::now();
        throw std::runtime_error("a failure on rank 0 only, outside garray");
      }
    }
  } catch (const std::runtime_error&) {
    unwind_s = std::chrono::duration<double>(Clock::now() - thrown).count();
  }
  if (p < 2) return;
  if (me == 0) {
    MESSAGE("rank 0 unwound through its last Context in " << unwind_s << " s");
    CHECK(unwind_s >= 0);
    CHECK(unwind_s < 1.5);         // was >= 3 s: blocked in MPI_Finalize until the others finalised
    CHECK_FALSE(mpi_finalized());  // finalised at exit
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(3));  // no MPI call meanwhile
    self.reset();  // the last garray object here: garray finalises MPI (collective, waits for rank 0's exit)
  }
}

// semantics.md "GARRAY_PROGRESS": when garray initialises MPI it asks for MPI_THREAD_MULTIPLE
// with `thread`, and joins the thread before it finalises MPI (test_owned_mpi.thread).
TEST_CASE(
    "garray owns MPI with GARRAY_PROGRESS=thread: MPI_THREAD_MULTIPLE, and the thread is gone before "
    "MPI_Finalize") {
  REQUIRE_FALSE(mpi_initialized());  // garray must initialise MPI here
  setenv("GARRAY_PROGRESS", "thread", 1);
  setenv("GARRAY_WINDOW", "rma", 1);  // rma windows: the thread really starts (not on shared)
  {
    garray::Context ctx;  // initialises MPI (MpiLifetime)
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    CHECK(ctx.progress_mode() == garray::ProgressMode::thread);
    CHECK(ctx.describe().find("progress_thread=running") != std::string::npos);
    CHECK(test::progress_threads() == 1);
    int key = MPI_KEYVAL_INVALID;
    REQUIRE(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, record_at_finalize, &key, nullptr) == MPI_SUCCESS);
    REQUIRE(MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr) == MPI_SUCCESS);  // after the thread's
    garray::GlobalArray<double, 1> a(ctx, {4 * static_cast<garray::Index>(ctx.size())});
    a.fill(1.0);
    CHECK(a.get(garray::idx[0]) == 1.0);
    CHECK(ctx.agree(true));
  }  // the last Context: garray joins its thread, then calls MPI_Finalize
  CHECK(mpi_finalized());
  CHECK(finalize_seen);
  CHECK(threads_at_finalize == 0);  // 1 if MPI_Finalize started with the thread still polling
  CHECK(test::progress_threads() == 0);
  unsetenv("GARRAY_PROGRESS");
  unsetenv("GARRAY_WINDOW");
}

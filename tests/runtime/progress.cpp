// GARRAY_PROGRESS (issue 13): the option is agreed across ranks or every rank throws, and
// with GARRAY_PROGRESS=thread a one-sided operation completes while its target computes
// without calling MPI. The busy-target case is run across two hosts by the cluster suites
// `ompi` and `mpich` (tests/cluster/cluster_test.sh, np 2, one rank per host): there,
// without the thread, the target's loop runs into its deadline first.
#include "support/outcome.hpp"
#include "support/test_support.hpp"

#include <garray/runtime/progress.hpp>

#include <chrono>
#include <utility>
#include <filesystem>
#include <fstream>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

using test::ScopedEnv;

int thread_level() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided;
}

/// voluntary_ctxt_switches of every "garray-progress" task (one per poll: the thread sleeps
/// between polls), -1 if there is none.
long progress_thread_switches() {
  long total = -1;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name != "garray-progress") continue;
    std::ifstream status(t.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
        total = (total < 0 ? 0 : total) + std::stol(line.substr(24));
  }
  return total;
}

/// A slab-distributed array of `per_rank` zeros per rank whose first element on `target` is
/// 42, synchronised; with the global index of that element (the same on every rank).
std::pair<garray::GlobalArray<std::int64_t, 1>, garray::Index> busy_target_array(const garray::Context& ctx,
                                                                                int target, int per_rank) {
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per_rank * ctx.size()}, garray::Distribution<1>::slab(0));
  a.fill(0);
  garray::Index t0 = 0;
  if (ctx.rank() == target) {
    t0 = a.local_box().lo[0];
    a.access().view()[t0] = 42;
  }
  MPI_Bcast(&t0, 1, MPI_INT64_T, target, ctx.comm());
  a.sync();
  return {std::move(a), t0};
}

/// The busy target: computes without any MPI call until `*flag` (in its own block) becomes
/// non-zero or GARRAY_TEST_PROGRESS_WAIT seconds (default 20) pass. Returns whether the flag
/// arrived, and the seconds it computed.
std::pair<bool, double> compute_until(const std::int64_t* flag) {
  const char* w = std::getenv("GARRAY_TEST_PROGRESS_WAIT");
  const double wait_s = w ? std::atof(w) : 20.0;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  volatile double sink = 0;
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0 && Clock::now() < deadline)
    for (int i = 0; i < 1000; ++i) sink = sink + i * 1e-9;
  return {__atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0, std::chrono::duration<double>(Clock::now() - start).count()};
}

/// The polling target: computes in slices of about 1 ms and calls ctx.progress() after each,
/// until `*flag` (in its own block) becomes non-zero or `budget` calls were made. Returns
/// whether the flag arrived, and the calls made.
std::pair<bool, int> compute_polling(const garray::Context& ctx, const std::int64_t* flag, int budget) {
  volatile double sink = 0;
  int calls = 0;
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0 && calls < budget) {
    const auto slice = Clock::now() + std::chrono::milliseconds(1);
    while (Clock::now() < slice)
      for (int i = 0; i < 1000; ++i) sink = sink + i * 1e-9;
    ctx.progress();
    ++calls;
  }
  return {__atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0, calls};
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

}  // namespace

TEST_CASE("GARRAY_PROGRESS is read locally: none by default, thread asks for MPI_THREAD_MULTIPLE") {
  {
    ScopedEnv e("GARRAY_PROGRESS", std::nullopt);
    CHECK(garray::requested_progress() == garray::ProgressMode::none);
    CHECK(garray::required_thread_level() == MPI_THREAD_FUNNELED);
  }
  {
    ScopedEnv e("GARRAY_PROGRESS", "none");
    CHECK(garray::requested_progress() == garray::ProgressMode::none);
  }
  {
    ScopedEnv e("GARRAY_PROGRESS", "thread");
    CHECK(garray::requested_progress() == garray::ProgressMode::thread);
    CHECK(garray::required_thread_level() == MPI_THREAD_MULTIPLE);
  }
  {
    ScopedEnv e("GARRAY_PROGRESS", "Thread");
    const std::string m = test::message_of<garray::InvalidArgument>([] { (void)garray::requested_progress(); });
    CHECK(test::contains(m, "GARRAY_PROGRESS='Thread'"));
    CHECK(test::contains(m, "[rank " + std::to_string(world_rank())));
  }
  // The context reports what it runs with.
  garray::Context ctx;
  CHECK(test::contains(ctx.describe(), std::string("progress=") + std::string(garray::to_string(ctx.progress_mode()))));
}

TEST_CASE("GARRAY_PROGRESS that is invalid or differs on one rank makes every rank throw, naming the rank") {
  const int me = world_rank(), p = world_size(), last = p - 1;
  SUBCASE("an invalid value on the last rank") {
    ScopedEnv e("GARRAY_PROGRESS", me == last ? std::optional<std::string>("threads")
                                              : std::optional<std::string>(std::getenv("GARRAY_PROGRESS")
                                                                              ? std::getenv("GARRAY_PROGRESS")
                                                                              : "none"));
    const std::string m = test::message_of<garray::InvalidArgument>([] { garray::Context c; });
    if (me == last) CHECK(test::contains(m, "GARRAY_PROGRESS='threads'"));
    else CHECK(test::contains(m, "on rank " + std::to_string(last)));
  }
  SUBCASE("an invalid interval on rank 0 (only read with thread)") {
    ScopedEnv e("GARRAY_PROGRESS", "thread");
    ScopedEnv i("GARRAY_PROGRESS_INTERVAL", me == 0 ? std::optional<std::string>("10ms") : std::nullopt);
    const std::string m = test::message_of<garray::InvalidArgument>([] { garray::Context c; });
    if (me == 0) CHECK(test::contains(m, "GARRAY_PROGRESS_INTERVAL='10ms'"));
    else CHECK(test::contains(m, "on rank 0"));
  }
  if (thread_level() < MPI_THREAD_MULTIPLE) {
    SUBCASE("thread without MPI_THREAD_MULTIPLE (this binary initialised MPI with less)") {
      ScopedEnv e("GARRAY_PROGRESS", me == last ? std::optional<std::string>("thread") : std::nullopt);
      const std::string m = test::message_of<garray::InvalidArgument>([] { garray::Context c; });
      CHECK(test::contains(m, "needs MPI_THREAD_MULTIPLE"));
      CHECK(test::contains(m, "rank " + std::to_string(last)));
      CHECK(test::contains(m, "required_thread_level"));
    }
  } else if (p > 1) {
    SUBCASE("thread on every rank but the last") {
      ScopedEnv e("GARRAY_PROGRESS", me == last ? std::nullopt : std::optional<std::string>("thread"));
      const std::string m = test::message_of<garray::InvalidArgument>([] { garray::Context c; });
      CHECK(test::contains(m, "GARRAY_PROGRESS differs across ranks"));
      CHECK(test::contains(m, "rank " + std::to_string(last) + ": 'none'"));
      CHECK(test::progress_threads() == 0);  // no progress thread was started (or left running)
    }
  }
  // Nothing was left half made: a context with the environment as it was still works.
  garray::Context ok;
  CHECK(ok.agree(true));
}

TEST_CASE("contexts started and stopped many times share one progress thread") {
  // With GARRAY_PROGRESS=thread every context holds the process's thread; the last one to
  // go stops it and the next one starts it again. Nothing may hang or leak (ASan build).
  // Counted in /proc/self/task by name: one thread for all contexts while they live, none
  // after.
  for (int k = 0; k < 21; ++k) {
    bool runs = false;
    {
      garray::Context a;
      garray::Context b = a.split(0);
      garray::GlobalArray<double, 1> x(b, {8});
      x.fill(1.0);
      CHECK(x.get(garray::idx[7]) == 1.0);
      CHECK(a.progress_mode() == b.progress_mode());
      runs = a.progress_mode() == garray::ProgressMode::thread && a.window_kind() != garray::WindowKind::shared;
      CHECK(test::progress_threads() == (runs ? 1u : 0u));
    }
    CHECK(test::progress_threads() == 0);  // the last context stopped (joined) the thread
  }
}

TEST_CASE("the progress thread failing to start on one rank: every rank throws, nobody waits") {
  {
    garray::Context probe;
    if (probe.progress_mode() != garray::ProgressMode::thread || probe.window_kind() == garray::WindowKind::shared)
      return;  // no thread is started
  }
  const int victim = world_size() - 1;
  if (world_rank() == victim) garray::testing::arm_fault("context.progress");
  std::string m;
  const test::Got g = test::outcome([] { garray::Context c; }, &m);
  garray::testing::disarm_fault();
  CAPTURE(m);
  if (world_rank() == victim) {
    CHECK(g == test::Got::injected);
  } else {
    CHECK(g == test::Got::other_garray);
    CHECK(m.find("could not start on another rank") != std::string::npos);
  }
  garray::Context ok;  // nothing half made: the next context works, with its thread
  CHECK(ok.agree(true));
  CHECK(ok.describe().find("progress_thread=running") != std::string::npos);
}

TEST_CASE("GARRAY_PROGRESS=thread starts the thread only where a window kind needs progress") {
  garray::Context ctx;
  const std::string d = ctx.describe();
  CAPTURE(d);
  if (ctx.progress_mode() != garray::ProgressMode::thread) {
    CHECK(d.find("progress_thread=") == std::string::npos);
  } else if (ctx.window_kind() == garray::WindowKind::shared) {
    CHECK(d.find("progress_thread=not started (shared windows)") != std::string::npos);
  } else {
    CHECK(d.find("progress_thread=running") != std::string::npos);
  }
}

// The interval is honoured (semantics.md "GARRAY_PROGRESS": polls every
// GARRAY_PROGRESS_INTERVAL µs; later Contexts use the running thread's), seen from outside:
// each poll ends in a sleep, a voluntary context switch of the thread.
TEST_CASE(
    "the progress thread polls at GARRAY_PROGRESS_INTERVAL, and a later Context keeps the running thread's") {
  {
    garray::Context probe;
    if (probe.progress_mode() != garray::ProgressMode::thread ||
        probe.window_kind() == garray::WindowKind::shared)
      return;  // no thread here
  }
  if (!test::all_ranks(test::progress_threads() == 0)) {
    MESSAGE("a progress thread already runs in this process (a context kept alive): skipped");
    return;
  }
  ScopedEnv slow("GARRAY_PROGRESS_INTERVAL", "200000");  // 200 ms, on every rank alike
  garray::Context ctx;                                   // starts the thread with 200 ms
  REQUIRE(progress_thread_switches() >= 0);
  auto switches_over = [] {
    const long before = progress_thread_switches();
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // no MPI call meanwhile
    return progress_thread_switches() - before;
  };
  const long slow_switches = switches_over();
  CAPTURE(slow_switches);
  CHECK(slow_switches <= 20);  // at the default 30 us: thousands
  {
    ScopedEnv dflt("GARRAY_PROGRESS_INTERVAL", std::nullopt);  // default 30 us on every rank
    garray::Context later;  // agrees (same value everywhere) and joins the running thread
    const long later_switches = switches_over();
    CAPTURE(later_switches);
    CHECK(later_switches <= 20);  // still the running thread's 200 ms
  }
}

// The teardown agreement, the deferral of windows while a rank unwinds, and a failed start
// with the thread polling (GARRAY_WINDOW=rma set here: on one host the suite's contexts
// otherwise get shared windows and start no thread). A deadlock shows as a ctest timeout.
TEST_CASE(
    "with the progress thread running: a teardown while one rank unwinds, and a failed start, leave no "
    "thread") {
  const int provided = thread_level();
  const char* mode = std::getenv("GARRAY_PROGRESS");
  if (provided < MPI_THREAD_MULTIPLE || !mode || std::string(mode) != "thread") return;
  const auto before = test::progress_threads();  // a context kept alive elsewhere may hold one
  ScopedEnv rma("GARRAY_WINDOW", "rma");   // the thread starts (not on shared windows)
  const int me = world_rank(), last = world_size() - 1;
  {
    garray::Context world;
    REQUIRE(world.describe().find("progress_thread=running") != std::string::npos);
    for (int victim : {0, last}) {
      CAPTURE(victim);
      bool caught = false;
      try {
        garray::Context sub = world.split(0);
        { garray::GlobalArray<double, 1> pooled(sub, {12}); }  // a window in sub's cache
        garray::GlobalArray<double, 1> a(sub, {16});
        a.fill(1.0);
        if (me == victim) throw std::runtime_error("a failure on one rank");
      } catch (const std::runtime_error&) {
        caught = true;
      }
      CHECK(caught == (me == victim));
      world.barrier();                                         // nobody waits in sub's teardown
      CHECK(test::progress_threads() == (before > 0 ? before : 1));  // world still holds it
    }
  }
  CHECK(test::all_ranks(test::progress_threads() == before));  // the last holder joined it everywhere
  {
    if (me == last) garray::testing::arm_fault("context.progress");
    const test::Got g = test::outcome([] { garray::Context c; });
    garray::testing::disarm_fault();
    CHECK(g != test::Got::nothing);
    CHECK(test::progress_threads() == before);  // also on the ranks whose start had succeeded
  }
}

TEST_CASE("a get, accumulate, read_inc and put complete while the target computes without calling MPI") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  if (p < 2) return;  // needs an origin and a target
  const int origin = 0, target = p - 1;
  // Four elements per rank: [payload, accumulate target, counter, flag].
  auto [a, t0] = busy_target_array(ctx, target, 4);
  int seen = 1;
  double origin_s = 0, target_s = 0;
  std::int64_t got = -1, old = -1;
  if (me == target) {
    // Busy in local computation: no MPI call until the origin's flag arrives or the
    // deadline passes (then MPI serves the operations and the test goes on).
    auto blk = a.access();
    const auto [arrived, secs] = compute_until(&blk.view()[t0 + 3]);
    seen = arrived ? 1 : 0;
    target_s = secs;
  } else if (me == origin) {
    const auto start = Clock::now();
    got = a.get(garray::idx[t0]);
    const std::int64_t five = 5, one = 1;
    a.accumulate(garray::idx[garray::range(t0 + 1, t0 + 2)], std::span<const std::int64_t>(&five, 1));
    old = a.read_inc({t0 + 2}, 3);
    a.fence();  // the accumulate is complete at the target before the flag is set
    a.put(garray::idx[garray::range(t0 + 3, t0 + 4)], std::span<const std::int64_t>(&one, 1));
    a.fence();
    origin_s = std::chrono::duration<double>(Clock::now() - start).count();
  }
  a.sync();
  MPI_Bcast(&seen, 1, MPI_INT, target, ctx.comm());
  MPI_Bcast(&target_s, 1, MPI_DOUBLE, target, ctx.comm());
  MPI_Bcast(&origin_s, 1, MPI_DOUBLE, origin, ctx.comm());
  // GARRAY_TEST_PROGRESS_MAX_S (the cluster suites set 1, ~100x the recorded times): a bound
  // on the origin's time, so a slow thread fails, not only a dead one. The message says on
  // how many ranks it was set (the driver requires all).
  const char* max_env = std::getenv("GARRAY_TEST_PROGRESS_MAX_S");
  int ranks_with_max = max_env ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ranks_with_max, 1, MPI_INT, MPI_SUM, ctx.comm());
  if (me == 0) {
    const std::string mode(garray::to_string(ctx.progress_mode())),
        window(garray::to_string(ctx.window_kind())), saw = seen ? "yes" : "no";
    std::string bound;
    if (ranks_with_max > 0)
      bound = "; GARRAY_TEST_PROGRESS_MAX_S=" + std::string(max_env ? max_env : "?") + " on " +
              std::to_string(ranks_with_max) + "/" + std::to_string(p) + " ranks";
    MESSAGE("progress=" << mode << " window=" << window << ": the origin's operations took " << origin_s
                        << " s; the target saw the flag: " << saw << " after " << target_s << " s" << bound);
  }
  if (max_env) CHECK(origin_s < std::atof(max_env));
  // The operations themselves are correct whatever served them.
  if (me == origin) {
    CHECK(got == 42);
    CHECK(old == 0);
  }
  CHECK(a.get(garray::idx[t0 + 1]) == 5);
  CHECK(a.get(garray::idx[t0 + 2]) == 3);
  CHECK(a.get(garray::idx[t0 + 3]) == 1);
  // The promise of GARRAY_PROGRESS=thread (docs/semantics.md, "Progress"): served while the
  // target computed, not at its next MPI call.
  if (ctx.progress_mode() == garray::ProgressMode::thread) CHECK(seen == 1);
  // On one node with shared windows nobody's progress is needed (semantics.md, "Progress"):
  // every operation above is a memory copy or a locked add, thread or not.
  if (ctx.window_kind() == garray::WindowKind::shared) CHECK(seen == 1);
}

TEST_CASE("a context still alive at MPI_Finalize: its progress thread stops there, its end after it is harmless") {
  // Destroyed after main() has called MPI_Finalize (static storage): with GARRAY_PROGRESS=
  // thread on rma windows (test_runtime.rma_progress) the thread is running when MPI is
  // finalised; it must stop in MPI_Finalize's callback, and the context's destructor must
  // then make no MPI call. Broken, the binary crashes or hangs at exit and ctest fails it.
  // No window may outlive MPI_Finalize (the user guide: arrays go first; MPICH 4.0 over UCX
  // aborts in MPI_Finalize with a window still allocated), so the context's pool is empty.
#ifdef MPICH_VERSION
  // Not under MPICH: MPICH 4.0 turns its locking off in MPI_Finalize before the callback runs,
  // and a poll inside MPI at that moment makes MPI_Finalize abort (seen once in CI). The rule
  // is to destroy contexts first (docs/semantics.md "Progress"); the callback only warns.
  MESSAGE("skipped under MPICH: a thread-mode context alive at MPI_Finalize breaks the documented rule there");
  return;
#endif
  static std::optional<garray::Context> kept;
  kept.emplace();
  CHECK(kept->cache().windows_held() == 0);
  CHECK(kept->agree(true));
}

TEST_CASE("mixed windows: a get and a put to a rank of the same node complete while it computes without MPI calls") {
  garray::Context ctx;
  if (ctx.window_kind() != garray::WindowKind::mixed) return;
  // origin: rank 0; target: the highest rank of rank 0's node (none: nothing to test)
  int target = 0;
  if (ctx.rank() == 0) {
    int n = 0;
    MPI_Comm_size(ctx.node_comm(), &n);
    MPI_Group node_group, group;
    MPI_Comm_group(ctx.node_comm(), &node_group);
    MPI_Comm_group(ctx.comm(), &group);
    const int last = n - 1;
    MPI_Group_translate_ranks(node_group, 1, &last, group, &target);
    MPI_Group_free(&node_group);
    MPI_Group_free(&group);
  }
  MPI_Bcast(&target, 1, MPI_INT, 0, ctx.comm());
  if (target == 0) return;
  const int me = ctx.rank();
  auto [a, t0] = busy_target_array(ctx, target, 2);  // [payload, flag] per rank
  int seen = 1;
  std::int64_t got = -1;
  if (me == target) {  // computes, no MPI call, until the flag arrives or the deadline passes
    auto blk = a.access();
    seen = compute_until(&blk.view()[t0 + 1]).first ? 1 : 0;
  } else if (me == 0) {
    got = a.get(garray::idx[t0]);
    const std::int64_t one = 1;
    a.put(garray::idx[garray::range(t0 + 1, t0 + 2)], std::span<const std::int64_t>(&one, 1));
    a.fence();
  }
  a.sync();
  MPI_Bcast(&seen, 1, MPI_INT, target, ctx.comm());
  if (me == 0) CHECK(got == 42);
  CHECK(seen == 1);  // served by memory copies, not by the target's next MPI call
}

// With the thread on mixed windows (ctest test_runtime.mixed_progress): the thread starts
// (a narrowed "not shared" condition would leave it off), and the atomics, MPI calls on
// mixed windows even within a node (semantics.md "Progress"), are served while the target
// computes.
TEST_CASE(
    "mixed windows with GARRAY_PROGRESS=thread: the thread runs and serves atomics aimed at a busy rank") {
  garray::Context ctx;
  if (ctx.progress_mode() != garray::ProgressMode::thread || ctx.window_kind() != garray::WindowKind::mixed) {
    MESSAGE("needs GARRAY_PROGRESS=thread and GARRAY_WINDOW=mixed");
    return;
  }
  CHECK(ctx.describe().find("progress_thread=running") != std::string::npos);
  CHECK(test::progress_threads() == 1);
  const int p = ctx.size(), me = ctx.rank();
  if (p < 2) return;
  const int origin = 0,
            target = p - 1;  // GARRAY_NODE_RANKS=2 at np 3: rank 2 is alone; at np 4 with 2: another node
  // [payload, accumulate target, counter, flag] per rank
  garray::GlobalArray<std::int64_t, 1> a(ctx, {4 * p}, garray::Distribution<1>::slab(0));
  a.fill(0);
  garray::Index t0 = 0;
  if (me == target) t0 = a.local_box().lo[0];
  MPI_Bcast(&t0, 1, MPI_INT64_T, target, ctx.comm());
  a.sync();
  int seen = 1;
  std::int64_t old = -1;
  if (me == target) {
    auto blk = a.access();
    seen = compute_until(&blk.view()[t0 + 3]).first ? 1 : 0;
  } else if (me == origin) {
    const std::int64_t five = 5, one = 1;
    a.accumulate(garray::idx[garray::range(t0 + 1, t0 + 2)], std::span<const std::int64_t>(&five, 1));
    old = a.read_inc({t0 + 2}, 3);  // an MPI call on mixed windows, even within a node
    a.fence();
    a.put(garray::idx[garray::range(t0 + 3, t0 + 4)], std::span<const std::int64_t>(&one, 1));
    a.fence();
  }
  a.sync();
  MPI_Bcast(&seen, 1, MPI_INT, target, ctx.comm());
  if (me == origin) CHECK(old == 0);
  CHECK(a.get(garray::idx[t0 + 1]) == 5);
  CHECK(a.get(garray::idx[t0 + 2]) == 3);
  CHECK(seen == 1);  // served while the target computed, not at its next MPI call
}

TEST_CASE("a get, accumulate, read_inc and put complete within a bounded number of ctx.progress() calls") {
  // The promise of ctx.progress() (semantics.md, "Progress"): each call lets MPI serve the
  // one-sided operations waiting for this rank. The origin's six steps need a few target
  // calls each; the target stops polling after 200. Across hosts over Open MPI's UCX, a
  // progress() that only probed ran the whole progress engine every 100th call and never
  // served them within the budget (bench_progress: an 8 B get from a target probing every
  // 1 ms took the whole 90 ms busy period; with the pending-receive test, 0.9 ms).
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  if (p < 2) return;
  const int origin = 0, target = p - 1;
  auto [a, t0] = busy_target_array(ctx, target, 4);
  int seen = 1, calls = 0;
  std::int64_t got = -1, old = -1;
  if (me == target) {
    auto blk = a.access();
    const auto [arrived, n] = compute_polling(ctx, &blk.view()[t0 + 3], 200);
    seen = arrived ? 1 : 0;
    calls = n;
  } else if (me == origin) {
    got = a.get(garray::idx[t0]);
    const std::int64_t five = 5, one = 1;
    a.accumulate(garray::idx[garray::range(t0 + 1, t0 + 2)], std::span<const std::int64_t>(&five, 1));
    old = a.read_inc({t0 + 2}, 3);
    a.fence();
    a.put(garray::idx[garray::range(t0 + 3, t0 + 4)], std::span<const std::int64_t>(&one, 1));
    a.fence();
  }
  a.sync();
  MPI_Bcast(&seen, 1, MPI_INT, target, ctx.comm());
  MPI_Bcast(&calls, 1, MPI_INT, target, ctx.comm());
  if (me == 0)
    MESSAGE("window=" << garray::to_string(ctx.window_kind()) << ": the target saw the flag: " << std::string(seen ? "yes" : "no")
                      << " after " << calls << " ctx.progress() calls");
  CHECK(seen == 1);
  if (me == origin) {
    CHECK(got == 42);
    CHECK(old == 0);
  }
  CHECK(a.get(garray::idx[t0 + 1]) == 5);
  CHECK(a.get(garray::idx[t0 + 2]) == 3);
}

// required_thread_level() runs before MPI_Init (the documented idiom): it must not throw on
// the rank with a bad value while the others enter MPI_Init (progress/context audit).
namespace thread_level_invalid {
TEST_CASE(
    "required_thread_level() with an invalid GARRAY_PROGRESS on one rank: no throw; the Context reports it "
    "everywhere") {
  const int me = world_rank(), last = world_size() - 1;
  const char* cur = std::getenv("GARRAY_PROGRESS");
  ScopedEnv e("GARRAY_PROGRESS", me == last ? std::optional<std::string>("threads")
                                            : (cur ? std::optional<std::string>(cur) : std::nullopt));
  int level = -1;
  CHECK_NOTHROW(level = garray::required_thread_level());  // the documented MPI_Init_thread argument
  CHECK((level == MPI_THREAD_FUNNELED || level == MPI_THREAD_MULTIPLE));
  const std::string m = test::message_of<garray::InvalidArgument>([] { garray::Context c; });
  if (me == last)
    CHECK(test::contains(m, "GARRAY_PROGRESS='threads'"));
  else
    CHECK(test::contains(m, "on rank " + std::to_string(last)));
}
}  // namespace thread_level_invalid

// GARRAY_PROGRESS_INTERVAL is part of the Context's agreement, as GARRAY_PROGRESS
// (progress/context audit).
namespace interval_differs {
TEST_CASE("GARRAY_PROGRESS_INTERVAL that differs on one rank makes every rank throw, naming the rank") {
  const int me = world_rank(), p = world_size(), last = p - 1;
  if (p < 2 || thread_level() < MPI_THREAD_MULTIPLE) return;
  ScopedEnv e("GARRAY_PROGRESS", "thread");
  ScopedEnv i("GARRAY_PROGRESS_INTERVAL", me == last ? std::optional<std::string>("1000") : std::nullopt);
  const auto before = test::progress_threads();  // another context of this process may run one already
  const std::string m = test::message_of<garray::InvalidArgument>([] { garray::Context c; });
  CHECK(test::contains(m, "GARRAY_PROGRESS_INTERVAL"));
  CHECK(test::contains(m, "rank " + std::to_string(last)));
  CHECK(test::progress_threads() == before);  // nothing started
}
}  // namespace interval_differs

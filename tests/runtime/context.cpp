// Context, groups, windows and statistics on real MPI processes.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <garray/runtime/window.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/test_support.hpp"

using test::ScopedEnv;

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define GARRAY_TEST_ASAN 1
#endif

TEST_CASE("a context duplicates the communicator and installs MPI_ERRORS_RETURN") {
  garray::Context ctx;
  int wr = 0, ws = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  CHECK(ctx.rank() == wr);
  CHECK(ctx.size() == ws);
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(ctx.comm(), MPI_COMM_WORLD, &cmp);
  CHECK(cmp == MPI_CONGRUENT);  // same group, different context
  MPI_Errhandler eh;
  MPI_Comm_get_errhandler(ctx.comm(), &eh);
  CHECK(eh == MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh);
  // An invalid call now returns a code, which check_mpi turns into MpiError.
  int bogus = 0;
  const int rc = MPI_Send(&bogus, 1, MPI_INT, ctx.size() + 5, 0, ctx.comm());
  CHECK(rc != MPI_SUCCESS);
  CHECK_THROWS_AS(garray::detail::check_mpi(rc, "MPI_Send"), garray::MpiError);
  try {
    garray::detail::check_mpi(rc, "MPI_Send");
  } catch (const garray::MpiError& e) {
    CHECK(e.code() == rc);
    CHECK(std::string(e.what()).find("MPI_Send failed") != std::string::npos);
    CHECK(e.rank() == wr);
  }
}

TEST_CASE("a context of MPI_COMM_NULL or an intercommunicator: InvalidArgument, no abort") {
  // MPI itself would report these through MPI_COMM_WORLD's handler: abort the job.
  int wr = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  std::string msg;
  try {
    garray::Context bad(MPI_COMM_NULL);
  } catch (const garray::InvalidArgument& e) {
    msg = e.what();
    CHECK(e.rank() == wr);
  }
  CHECK(msg.find("MPI_COMM_NULL") != std::string::npos);
  // The rank outside a split's group gets MPI_COMM_NULL: the usual way to meet it.
  int ws = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, wr == 0 ? MPI_UNDEFINED : 0, 0, &sub);
  if (wr == 0) {
    CHECK_THROWS_AS(garray::Context{sub}, garray::InvalidArgument);
  } else {
    garray::Context ok(sub);  // collective over the others only
    CHECK(ok.size() == ws - 1);
    MPI_Comm_free(&sub);
  }
  if (ws >= 2) {  // two halves joined by an intercommunicator
    MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
    const int color = wr < ws / 2 ? 0 : 1;
    MPI_Comm_split(MPI_COMM_WORLD, color, 0, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color == 0 ? ws / 2 : 0, 77, &inter);
    std::string imsg;
    try {
      garray::Context bad(inter);
    } catch (const garray::InvalidArgument& e) {
      imsg = e.what();
    }
    CHECK(imsg.find("intercommunicator") != std::string::npos);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
}

TEST_CASE("split makes process groups; ranks outside get an empty context") {
  garray::Context world;
  const int color = world.rank() % 2 == 0 ? 0 : MPI_UNDEFINED;
  auto sub = world.split(color);
  if (color == MPI_UNDEFINED) {
    CHECK_FALSE(sub.valid());
    // no group: not rank 0 of one (a "root only" branch must not run here)
    CHECK(sub.rank() == -1);
    CHECK(sub.size() == 0);
    CHECK(sub.comm() == MPI_COMM_NULL);
  } else {
    REQUIRE(sub.valid());  // only the even ranks reach this, and they agree
    CHECK(sub.size() == (world.size() + 1) / 2);
    CHECK(sub.rank() == world.rank() / 2);
  }
}

TEST_CASE("windows: allocation counted, shared peers visible, flushes work") {
  garray::Context ctx;
  const auto before = ctx.stats().windows_allocated;
  {
    garray::detail::Window w(ctx, static_cast<std::size_t>(8 * (ctx.rank() + 1)));
    CHECK(ctx.stats().windows_allocated == before + 1);
    CHECK(w.bytes() == static_cast<std::size_t>(8 * (ctx.rank() + 1)));
    if (w.kind() == garray::WindowKind::shared) {
      for (int r = 0; r < ctx.size(); ++r) CHECK(w.peer(r) != nullptr);
      CHECK(w.peer(ctx.rank()) == w.base());
    } else if (w.kind() == garray::WindowKind::mixed) {
      // exactly the ranks of this node are mapped, this rank's block at its base
      MPI_Group all, node;
      MPI_Comm_group(ctx.comm(), &all);
      MPI_Comm_group(ctx.node_comm(), &node);
      for (int r = 0; r < ctx.size(); ++r) {
        int there = MPI_UNDEFINED;
        MPI_Group_translate_ranks(all, 1, &r, node, &there);
        CHECK((w.peer(r) != nullptr) == (there != MPI_UNDEFINED));
      }
      MPI_Group_free(&all);
      MPI_Group_free(&node);
      CHECK(w.peer(ctx.rank()) == w.base());
    } else {
      CHECK(w.peer(0) == nullptr);
    }
    w.flush_all();
    w.memory_sync();
  }
  CHECK(ctx.stats().windows_freed == ctx.stats().windows_allocated);
}

#if defined(GARRAY_TEST_ASAN)
TEST_CASE("under ASan a window's padding after the block is poisoned, the block is not") {
  // ASan knows nothing of MPI's window memory: Window poisons what no access may touch
  // (runtime/src/window.cpp, guard), so the sanitizer run catches an access past a block.
  garray::Context ctx;
  for (std::size_t bytes : {std::size_t{8}, std::size_t{24}, std::size_t{64}, std::size_t{100}}) {
    garray::detail::Window w(ctx, bytes);
    std::byte* base = w.base();
    CHECK(__asan_region_is_poisoned(base, bytes) == nullptr);
    const std::size_t padded = (bytes + 63) / 64 * 64;
    const std::size_t first = (bytes + 7) / 8 * 8;
    if (first < padded) {
      CHECK(__asan_address_is_poisoned(base + first));
      CHECK(__asan_address_is_poisoned(base + padded - 1));
    }
  }
}
#endif

TEST_CASE("the window kind follows GARRAY_WINDOW and is the same on every rank") {
  garray::Context ctx;
  const char* env = std::getenv("GARRAY_WINDOW");
  if (env && std::string(env) == "rma") CHECK(ctx.window_kind() == garray::WindowKind::rma);
#ifdef OPEN_MPI
  // osc/pt2pt cannot make shared windows: the probe at creation falls back to rma windows
  // (test_runtime.osc_pt2pt).
  const char* osc = std::getenv("OMPI_MCA_osc");
  if (osc && std::string_view(osc) == "pt2pt" && (!env || std::string_view(env) == "auto" || std::string_view(env) == "shared")) {
    CHECK(ctx.window_kind() == garray::WindowKind::rma);
    CHECK(ctx.describe().find("window_kind=rma") != std::string::npos);
  }
#endif
  int k = static_cast<int>(ctx.window_kind()), kmin = 0, kmax = 0;
  MPI_Allreduce(&k, &kmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&k, &kmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(kmin == kmax);
  CHECK_NOTHROW(ctx.progress());
  const auto d = ctx.describe();
  CHECK(d.find("mpi_library=") != std::string::npos);
  CHECK(d.find("window_kind=") != std::string::npos);
  CHECK(d.find('\0') == std::string::npos);  // no NUL from MPI_Get_library_version's length
}

TEST_CASE("GARRAY_WINDOW=auto: shared on one node, mixed if a node of several holds 2+ ranks, rma otherwise") {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  // Across hosts, or with Open MPI's one-sided component chosen by hand, the component
  // decides what can be made (the fallbacks, tested below and across hosts).
  if (!test::world_on_one_host() || !test::all_ranks(!std::getenv("OMPI_MCA_osc"))) return;
  const ScopedEnv window("GARRAY_WINDOW", nullptr);
  using K = garray::WindowKind;
  for (const auto& [nodes, want] : {std::pair<const char*, K>{nullptr, K::shared},
                                    std::pair<const char*, K>{"1", p == 1 ? K::shared : K::rma},
                                    std::pair<const char*, K>{"2", p <= 2 ? K::shared : K::mixed},
                                    std::pair<const char*, K>{"2,cyclic", p <= 2 ? K::shared : K::mixed}}) {
    CAPTURE(nodes ? nodes : "unset");
    const ScopedEnv env("GARRAY_NODE_RANKS", nodes);
    garray::Context ctx;
    CHECK(ctx.window_kind() == want);
  }
}

TEST_CASE("the shared-window probe failing on one rank: every rank falls back to rma windows, nobody waits") {
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  // no probe unless shared windows are possible
  if (!test::world_on_one_host() || !test::all_ranks(!std::getenv("OMPI_MCA_osc"))) return;
  const ScopedEnv window("GARRAY_WINDOW", nullptr);
  const ScopedEnv nodes("GARRAY_NODE_RANKS", nullptr);
  // The victim's probe allocation "fails" after the others' succeeded: they must agree
  // before freeing theirs (a collective MPI_Win_free without the victim could hang).
  const int victim = p - 1;
  if (me == victim) garray::testing::arm_fault("context.shared_probe");
  std::optional<garray::Context> ctx;
  ctx.emplace();
  const bool fired = me != victim || !garray::testing::fault_armed();
  garray::testing::disarm_fault();
  CHECK(fired);
  CHECK(ctx->window_kind() == garray::WindowKind::rma);
  CHECK(ctx->agree(true));
  { garray::detail::Window w(*ctx, 64); }  // an rma window is made and freed
  ctx.reset();
  garray::Context again;  // nothing stuck: the next probe succeeds
  CHECK(again.window_kind() == garray::WindowKind::shared);
}

TEST_CASE("GARRAY_WINDOW that is not a kind, or asks for different kinds: every rank throws InvalidArgument") {
  int wr = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const char* old = std::getenv("GARRAY_WINDOW");
  const std::string saved = old ? old : "";
  for (const char* bad : {"shraed", "RMA", "auto "}) {
    CAPTURE(bad);
    const ScopedEnv env("GARRAY_WINDOW", wr == p - 1 ? bad : (old ? saved.c_str() : nullptr));
    CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains("GARRAY_WINDOW must be auto, shared, mixed or rma"),
                         garray::InvalidArgument);
    // every rank's message names the rank with the bad value, and the value
    if (p > 1) {
      const std::string named = "rank " + std::to_string(p - 1) + ": '" + std::string(bad) + "'";
      CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains(named.c_str()), garray::InvalidArgument);
    }
  }
  if (p > 1) {
    const ScopedEnv env("GARRAY_WINDOW", wr == 0 ? "rma" : "mixed");
    CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains("the same window kind on every rank"),
                         garray::InvalidArgument);
    CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains("rank 0: 'rma', rank 1: 'mixed'"),
                         garray::InvalidArgument);
  }
  garray::Context after;  // and contexts work again
  CHECK(after.size() == p);
}

TEST_CASE("GARRAY_WINDOW across nodes: requests are compared, shared on every rank is rma") {
  // semantics.md, Windows and data paths: "The requests are compared, not what they would
  // end up as". Across nodes shared and rma both end up rma, yet they are different
  // requests (a rank asking for shared memory while another asks for none is a
  // misconfigured launch); shared on every rank across nodes gives rma windows.
  int wr = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) return;
  const ScopedEnv nodes("GARRAY_NODE_RANKS", "1");  // every rank its own node
  for (const char* other : {"auto", "rma"}) {
    CAPTURE(other);
    const ScopedEnv env("GARRAY_WINDOW", wr == 0 ? "shared" : other);
    CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains("the same window kind on every rank"),
                         garray::InvalidArgument);
  }
  const ScopedEnv env("GARRAY_WINDOW", "shared");
  garray::Context ctx;
  CHECK(ctx.window_kind() == garray::WindowKind::rma);
  garray::GlobalArray<double, 1> a(ctx, {2 * p});
  a.put(garray::idx[garray::range(2 * ((wr + 1) % p), 2 * ((wr + 1) % p) + 2)],
        std::vector<double>{1.0 * wr, 2.0 * wr});
  a.sync();
  std::vector<double> got(2);
  a.get(garray::idx[garray::range(2 * wr, 2 * wr + 2)], std::span<double>(got));
  const int from = (wr + p - 1) % p;
  CHECK(got == std::vector<double>{1.0 * from, 2.0 * from});
}

TEST_CASE("GARRAY_WINDOW=mixed and GARRAY_NODE_RANKS: node-local blocks mapped, the same kind everywhere") {
  const char* want = std::getenv("GARRAY_WINDOW");
  const char* k = std::getenv("GARRAY_NODE_RANKS");
  garray::Context ctx;
  int node_size = 0;
  MPI_Comm_size(ctx.node_comm(), &node_size);
  if (k && std::string_view(k).find(",cyclic") == std::string_view::npos)
    CHECK(node_size == std::min(std::atoi(k), ctx.size() - ctx.rank() / std::atoi(k) * std::atoi(k)));
  if (want && std::string(want) == "mixed") {
    CHECK(ctx.window_kind() == garray::WindowKind::mixed);  // this MPI can make them
    CHECK(ctx.describe().find("window_kind=mixed") != std::string::npos);
  }
}

TEST_CASE("GARRAY_NODE_RANKS: a sub-context sees the world's simulated nodes") {
  // Simulated nodes are fixed by the MPI_COMM_WORLD rank, as real nodes by the host: the odd
  // world ranks of nodes {0,1} {2,3} ... are each alone on their node, also in a context of
  // their own (where they are ranks 0, 1, ...), so its windows are not shared memory.
  int wr = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 3) return;
  const ScopedEnv nodes("GARRAY_NODE_RANKS", "2");
  const ScopedEnv kind("GARRAY_WINDOW", "auto");
  garray::Context world;
  const garray::Context sub = world.split(wr % 2, wr);
  int node_size = 0;
  MPI_Comm_size(sub.node_comm(), &node_size);
  CHECK(node_size == 1);
  if (sub.size() > 1) CHECK(sub.window_kind() == garray::WindowKind::rma);  // no node holds two of its ranks
  int world_node = 0;
  MPI_Comm_size(world.node_comm(), &world_node);
  CHECK(world_node == std::min(2, p - wr / 2 * 2));
}

TEST_CASE("GARRAY_NODE_RANKS that is bad or differs on one rank: every rank throws InvalidArgument") {
  garray::Context world;
  const char* env_now = std::getenv("GARRAY_NODE_RANKS");
  const std::optional<std::string> saved = env_now ? std::optional<std::string>(env_now) : std::nullopt;
  const char* old = saved ? saved->c_str() : nullptr;
  const bool last = world.rank() == world.size() - 1;
  for (const char* bad : {"0", "two", "-1", "3x", "2,cyc", "2,"}) {
    CAPTURE(bad);
    const ScopedEnv env("GARRAY_NODE_RANKS", last ? bad : old);
    CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains("GARRAY_NODE_RANKS"), garray::InvalidArgument);
  }
  if (world.size() > 1) {  // valid everywhere, but not the same value
    const bool old_is_1 = old && std::string_view(old) == "1";
    const ScopedEnv env("GARRAY_NODE_RANKS", world.rank() == 0 ? (old_is_1 ? "2" : "1") : old);
    CHECK_THROWS_AS(garray::Context{}, garray::InvalidArgument);
  }
  garray::Context after;  // and contexts work again
  CHECK(after.size() == world.size());
}

namespace {
// The node of world rank r under GARRAY_NODE_RANKS=2,cyclic, named by its lowest rank.
int cyclic_leader(int r, int p) { return r % ((p + 1) / 2); }
}  // namespace

TEST_CASE("RankOrder::node numbers the ranks node by node; given keeps the communicator's numbers") {
  int wr = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const ScopedEnv order_env("GARRAY_RANK_ORDER", nullptr);
  SUBCASE("round-robin nodes (GARRAY_NODE_RANKS=2,cyclic) are renumbered") {
    const ScopedEnv nodes("GARRAY_NODE_RANKS", "2,cyclic");
    int want = 0;  // ranks that sort before this one by (node, rank)
    for (int q = 0; q < p; ++q)
      want += cyclic_leader(q, p) < cyclic_leader(wr, p) || (cyclic_leader(q, p) == cyclic_leader(wr, p) && q < wr);
    garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::node);
    CHECK(ctx.rank_order() == garray::RankOrder::node);
    CHECK(ctx.rank() == want);
    int in_comm = -1;
    MPI_Comm_rank(ctx.comm(), &in_comm);
    CHECK(in_comm == ctx.rank());
    CHECK(ctx.renumbered() == (p >= 3));  // p <= 2: one node of two, or two of one: in order
    if (wr == 0) CHECK(ctx.rank() == 0);
    // The node's ranks: the world ranks of this node, numbered consecutively and in order.
    int node_size = 0, node_rank = 0;
    MPI_Comm_size(ctx.node_comm(), &node_size);
    MPI_Comm_rank(ctx.node_comm(), &node_rank);
    int expect_size = 0;
    for (int q = 0; q < p; ++q) expect_size += cyclic_leader(q, p) == cyclic_leader(wr, p);
    CHECK(node_size == expect_size);
    std::vector<int> ranks(static_cast<std::size_t>(node_size)), worlds(ranks.size());
    const int mine = ctx.rank();
    MPI_Allgather(&mine, 1, MPI_INT, ranks.data(), 1, MPI_INT, ctx.node_comm());
    MPI_Allgather(&wr, 1, MPI_INT, worlds.data(), 1, MPI_INT, ctx.node_comm());
    for (int i = 0; i < node_size; ++i) {
      CHECK(ranks[static_cast<std::size_t>(i)] == ranks[0] + i);
      CHECK(cyclic_leader(worlds[static_cast<std::size_t>(i)], p) == cyclic_leader(wr, p));
      if (i > 0) CHECK(worlds[static_cast<std::size_t>(i)] > worlds[static_cast<std::size_t>(i) - 1]);
    }
    CHECK(node_rank == ctx.rank() - ranks[0]);
    CHECK(ctx.describe().find(ctx.renumbered() ? "rank_order=node (renumbered)" : "rank_order=node\n") !=
          std::string::npos);
    // A split orders by its key, not by node again.
    auto sub = ctx.split(0, ctx.size() - ctx.rank());
    CHECK(sub.rank_order() == garray::RankOrder::given);
    CHECK(sub.rank() == ctx.size() - 1 - ctx.rank());
    // The same placement, numbered as given.
    garray::Context as_given(MPI_COMM_WORLD, garray::RankOrder::given);
    CHECK(as_given.rank() == wr);
    CHECK_FALSE(as_given.renumbered());
    {  // GARRAY_RANK_ORDER chooses for the one-argument constructor
      const ScopedEnv env("GARRAY_RANK_ORDER", "node");
      garray::Context from_env;
      CHECK(from_env.rank() == want);
      CHECK(from_env.rank_order() == garray::RankOrder::node);
    }
  }
  SUBCASE("consecutive nodes (GARRAY_NODE_RANKS=2) and one node keep their numbers") {
    for (const char* k : {"2", static_cast<const char*>(nullptr)}) {
      const ScopedEnv nodes("GARRAY_NODE_RANKS", k);
      garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::node);
      CHECK(ctx.rank() == wr);
      CHECK_FALSE(ctx.renumbered());
    }
  }
}

TEST_CASE("rank orders by name: parse_rank_order and >> invert to_string; another word fails") {
  for (const auto o : {garray::RankOrder::given, garray::RankOrder::node}) {
    CHECK(garray::parse_rank_order(garray::to_string(o)) == o);
    std::ostringstream out;
    out << o;
    std::istringstream in(out.str());
    auto back = o == garray::RankOrder::node ? garray::RankOrder::given : garray::RankOrder::node;
    CHECK(static_cast<bool>(in >> back));
    CHECK(back == o);
  }
  for (const char* bad : {"", "Node", "nodes", "given ", "1"}) {
    CAPTURE(bad);
    CHECK_FALSE(garray::parse_rank_order(bad).has_value());
  }
  std::istringstream in("nodes");
  auto o = garray::RankOrder::given;
  CHECK_FALSE(static_cast<bool>(in >> o));
  CHECK(o == garray::RankOrder::given);  // unchanged on failure
}

TEST_CASE("a rank order that differs on one rank, or a bad GARRAY_RANK_ORDER: every rank throws InvalidArgument") {
  int wr = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const ScopedEnv nodes("GARRAY_NODE_RANKS", p > 1 ? "1" : nullptr);  // p nodes: node order = given, but agreed
  if (p > 1) {
    const auto order = wr == p - 1 ? garray::RankOrder::node : garray::RankOrder::given;
    CHECK_THROWS_WITH_AS(garray::Context(MPI_COMM_WORLD, order), doctest::Contains("rank orders"),
                         garray::InvalidArgument);
    const ScopedEnv env("GARRAY_RANK_ORDER", wr == 0 ? "node" : "given");
    CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains("GARRAY_RANK_ORDER"), garray::InvalidArgument);
  }
  {
    const ScopedEnv env("GARRAY_RANK_ORDER", wr == p - 1 ? "nodes" : "node");
    CHECK_THROWS_WITH_AS(garray::Context{}, doctest::Contains("GARRAY_RANK_ORDER"), garray::InvalidArgument);
  }
  const ScopedEnv clean("GARRAY_RANK_ORDER", nullptr);
  garray::Context after;  // and contexts work again
  CHECK(after.size() == p);
  CHECK(after.rank_order() == garray::RankOrder::given);
}

TEST_CASE("agree(what, f) is handshaked: another step or another collective on one rank throws everywhere, f not run") {
  garray::Context ctx;
  if (ctx.size() == 1) return;
  const bool odd = ctx.rank() == ctx.size() - 1;
  int runs = 0;
  auto step = [&] { ++runs; return 7; };
  CHECK_THROWS_AS(ctx.agree(odd ? "read the input" : "check the input", step), garray::CollectiveMismatch);
  CHECK_THROWS_AS(odd ? ctx.barrier() : (void)ctx.agree("check the input", step), garray::CollectiveMismatch);
  CHECK(runs == 0);  // the handshake comes first
  CHECK(ctx.agree("check the input", step) == 7);
  CHECK(runs == 1);
  // f throwing on one rank: that rank its own error, the others CollectiveFailure naming the step
  std::string msg;
  try {
    ctx.agree("check the input", [&] {
      if (odd) throw garray::InvalidArgument("bad input on this rank");
      return 1;
    });
  } catch (const garray::CollectiveFailure& e) {
    msg = e.what();
    CHECK(e.failed_rank() == ctx.size() - 1);
  } catch (const garray::InvalidArgument& e) {
    msg = e.what();
  }
  CHECK(msg.find(odd ? "bad input on this rank" : "check the input") != std::string::npos);
  CHECK(msg.find("bad input on this rank") != std::string::npos);
}

TEST_CASE("statistics reduce over ranks into one table on rank 0") {
  garray::Context ctx;
  ctx.stats() = garray::Stats{};
  ctx.stats()[garray::Op::get].calls = ctx.rank() + 1;
  ctx.stats()[garray::Op::get].remote_bytes = 100;
  std::ostringstream os;
  garray::print_stats(ctx, os);
  if (ctx.rank() == 0) {
    const std::string t = os.str();
    const auto p = ctx.size();
    std::ostringstream want_sum;
    want_sum << p * (p + 1) / 2;
    CHECK(t.find("get.calls") != std::string::npos);
    // the row holds the sum over ranks and the max per rank
    const auto row = t.substr(t.find("get.calls"));
    std::istringstream is(row);
    std::string name;
    long long sum = 0, max = 0;
    is >> name >> sum >> max;
    CHECK(sum == p * (p + 1) / 2);
    CHECK(max == p);
  } else {
    CHECK(os.str().empty());
  }
}

TEST_CASE("agree_signature throws CollectiveMismatch on every rank when ranks differ") {
  garray::Context ctx;
  CHECK_NOTHROW(garray::detail::agree_signature(ctx.comm(), 42, "t", "x"));
  if (ctx.size() > 1) {
    CHECK_THROWS_AS(garray::detail::agree_signature(ctx.comm(), ctx.rank() == 1 ? 7 : 42, "t", "x"),
                    garray::CollectiveMismatch);
  }
  CHECK(garray::detail::all_ok(ctx.comm(), true));
  CHECK_FALSE(garray::detail::all_ok(ctx.comm(), ctx.rank() != ctx.size() - 1));
}

// semantics.md "Windows and data paths": where MPI_Win_create cannot expose memory it did not
// allocate, a mixed request falls back to rma windows. The probe behind that decision kept its
// node-shared window whenever MPI_Win_create failed: every such Context leaked one shared
// window per rank until MPI_Finalize. Run as test_runtime.osc_sm (Open MPI with osc/sm only:
// MPI_Win_allocate_shared works, MPI_Win_create does not), where osc/sm's segments are
// visible in /proc/self/maps; elsewhere it says so and checks the fallback alone.
namespace probe_leak {
int osc_sm_segments() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find("/osc_sm.") != std::string::npos) ++n;
  return n;
}
}  // namespace probe_leak

TEST_CASE("a mixed request that falls back to rma windows leaves no probe window behind") {
  const char* osc = std::getenv("OMPI_MCA_osc");
  const char* want = std::getenv("GARRAY_WINDOW");
  if (!osc || std::string_view(osc) != "sm" || !want || std::string_view(want) != "mixed") {
    MESSAGE("needs OMPI_MCA_osc=sm GARRAY_WINDOW=mixed (ctest test_runtime.osc_sm)");
    return;
  }
  {
    garray::Context warm;                                    // loads the components
    REQUIRE(warm.window_kind() == garray::WindowKind::rma);  // the fallback under test
  }
  const int before = probe_leak::osc_sm_segments();
  for (int i = 0; i < 8; ++i) {
    garray::Context ctx;  // no array: once made, the context holds no window
    CHECK(ctx.window_kind() == garray::WindowKind::rma);
  }
  const int after = probe_leak::osc_sm_segments();
  CAPTURE(before);
  CAPTURE(after);
  CHECK(test::all_ranks(after == before));  // before the fix: before + 8
  // the count does see osc/sm's segments: a window of this MPI maps one more while it exists
  MPI_Win w = MPI_WIN_NULL;
  void* base = nullptr;
  REQUIRE(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w) == MPI_SUCCESS);
  CHECK(probe_leak::osc_sm_segments() > after);
  MPI_Win_free(&w);
}

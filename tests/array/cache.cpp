// The array cache (runtime/window_cache.hpp) through GlobalArray: window reuse counted
// exactly, cached arrays indistinguishable from fresh ones, eviction by depth and byte cap
// against an independent model, settings from code and environment, and collective misuse
// (a rank destroying an array the others keep) reported on every rank instead of a hang.
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/stats.hpp>
#include <garray/runtime/window_cache.hpp>

#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Index = garray::index;
using A2 = garray::GlobalArray<double, 2>;
using I1 = garray::GlobalArray<std::int32_t, 1>;

bool all_ranks(bool ok) {
  int in = ok ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return out != 0;
}

std::mt19937_64 shared_rng() {
  std::uint64_t s = 0;
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (r == 0) {
    if (const char* e = std::getenv("GARRAY_TEST_SEED")) s = std::strtoull(e, nullptr, 10);
    else s = std::random_device{}();
  }
  MPI_Bcast(&s, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  INFO("seed " << s);
  return std::mt19937_64(s);
}

Index uniform(std::mt19937_64& g, Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(g); }

garray::Distribution<2> random_dist(std::mt19937_64& g, int nranks) {
  switch (uniform(g, 0, 3)) {
    case 0: return garray::Distribution<2>::blocked();
    case 1: return garray::Distribution<2>::slab(static_cast<std::size_t>(uniform(g, 0, 1)));
    case 2: {
      const int p0 = static_cast<int>(uniform(g, 1, nranks));
      return garray::Distribution<2>::grid({p0, std::max(1, nranks / p0)});
    }
    default: return garray::Distribution<2>::replicated();
  }
}

struct Counts {
  std::int64_t allocated = 0, freed = 0, hits = 0, misses = 0, evictions = 0;
  bool operator==(const Counts&) const = default;
};
Counts counts(const garray::Context& ctx) {
  const auto& s = ctx.stats();
  return {s.windows_allocated, s.windows_freed, s.cache_hits, s.cache_misses, s.cache_evictions};
}
std::ostream& operator<<(std::ostream& os, const Counts& c) {
  return os << "{alloc " << c.allocated << ", freed " << c.freed << ", hits " << c.hits << ", misses " << c.misses
            << ", evictions " << c.evictions << "}";
}

/// The cache's charge for an array: its largest block over all ranks, in bytes.
template <class A>
std::size_t charge_of(const A& a) {
  std::size_t c = 0;
  for (int r = 0; r < a.context().size(); ++r)
    c = std::max(c, static_cast<std::size_t>(a.layout_of(r).elements) * sizeof(typename A::value_type));
  return c;
}

/// Every element of `a` as seen through one-sided gets from this rank.
template <class T>
std::vector<T> get_all(const garray::GlobalArray<T, 2>& a) {
  std::vector<T> out(static_cast<std::size_t>(a.size()));
  if (!out.empty()) a.get_section(garray::Section<2>::full(a.shape()), std::span<T>(out));
  return out;
}

}  // namespace

TEST_CASE("1000 create/destroy pairs of one key allocate one window; k alive at once allocate k") {
  for (int depth = 1; depth <= 3; ++depth) {
    garray::Context ctx;
    ctx.cache().set_depth(depth);
    CHECK(ctx.cache().depth() == depth);
    for (int i = 0; i < 1000; ++i) A2 a(ctx, {37, 23});
    CHECK(counts(ctx) == Counts{1, 0, 999, 1, 0});
    CHECK(ctx.cache().windows_held() == 1);
    CHECK(ctx.stats().cache_bytes == static_cast<std::int64_t>(ctx.cache().bytes_held()));
    CHECK(ctx.cache().live_windows() == 0);
    // `depth` arrays alive at once: the pool holds them all, so still no new windows after
    // the first round.
    garray::Context ctx2;
    ctx2.cache().set_depth(depth);
    for (int i = 0; i < 200; ++i) {
      std::vector<std::optional<A2>> live(static_cast<std::size_t>(depth));
      for (auto& a : live) a.emplace(ctx2, garray::Shape<2>{20, 30});
      for (auto& a : live) a.reset();  // in creation order
    }
    CHECK(counts(ctx2) == Counts{depth, 0, 200 * depth - depth, depth, 0});
    // depth + 1 alive at once: every round after the first evicts the oldest of depth + 1
    // pooled windows and allocates one (GAiN's behaviour: the pool keeps `depth`).
    garray::Context ctx3;
    ctx3.cache().set_depth(depth);
    const int rounds = 50;
    for (int i = 0; i < rounds; ++i) {
      std::vector<std::optional<A2>> live(static_cast<std::size_t>(depth + 1));
      for (auto& a : live) a.emplace(ctx3, garray::Shape<2>{20, 30});
      for (auto& a : live) a.reset();
    }
    CHECK(counts(ctx3) == Counts{depth + 1 + (rounds - 1), rounds - 1, (rounds - 1) * depth,
                                 depth + 1 + (rounds - 1), rounds - 1});
    CHECK(ctx3.cache().windows_held() == static_cast<std::size_t>(depth + 1));  // trimmed at the next create
  }
}

TEST_CASE("depth 0 turns the cache off: every create allocates, every destroy frees") {
  garray::Context ctx;
  ctx.cache().set_depth(0);
  for (int i = 0; i < 100; ++i) A2 a(ctx, {16, 16});
  CHECK(counts(ctx) == Counts{100, 100, 0, 100, 0});
  CHECK(ctx.cache().windows_held() == 0);
  CHECK(ctx.stats().cache_bytes == 0);
  CHECK_THROWS_AS(ctx.cache().set_depth(-1), garray::InvalidArgument);
  CHECK(ctx.cache().depth() == 0);
}

TEST_CASE("interleaved keys: type, shape, distribution and ghost width each make a key") {
  garray::Context ctx;
  ctx.cache().set_depth(2);
  const garray::Shape<2> s{12, 10}, g{1, 1};
  for (int i = 0; i < 30; ++i) {
    A2 a(ctx, s);
    A2 b(ctx, {10, 12});                                          // other shape
    A2 c(ctx, s, garray::Distribution<2>::slab(1));               // other distribution
    A2 d(ctx, s, garray::Distribution<2>::blocked(), g);          // ghosts
    garray::GlobalArray<float, 2> e(ctx, s);                      // other type
    I1 f(ctx, {120});
  }
  // Six keys, all alive at once: six windows, then every create is a hit.
  const int windows = 6;
  CHECK(ctx.stats().windows_allocated == windows);
  CHECK(ctx.stats().cache_misses == windows);
  CHECK(ctx.stats().cache_hits == 30 * 6 - windows);
  CHECK(ctx.stats().cache_evictions == 0);
  CHECK(ctx.cache().windows_held() == 6);
}

TEST_CASE("a window from the cache behaves exactly like a fresh one, with no stale data") {
  auto rng = shared_rng();
  garray::Context ctx;    // cache on (default depth)
  garray::Context fresh;  // cache off: the reference behaviour
  fresh.cache().set_depth(0);
  const int me = ctx.rank(), p = ctx.size();
  for (int trial = 0; trial < 12; ++trial) {
    const garray::Shape<2> shape{uniform(rng, 1, 19), uniform(rng, 1, 19)};
    const auto dist = random_dist(rng, p);
    const garray::Shape<2> ghost{uniform(rng, 0, 1), uniform(rng, 0, 1)};
    INFO("trial " << trial << " shape " << shape[0] << "x" << shape[1] << " " << dist.describe() << " ghost "
                  << ghost[0] << "," << ghost[1]);
    {
      A2 old(ctx, shape, dist, ghost);
      old.fill(99.0);
      // Unsynchronised writes into another rank's block right before the destroy: release
      // must complete them before the next owner zeroes the memory.
      const auto box = old.box_of((me + 1) % p);
      if (!box.empty() && !dist.is_replicated()) {
        garray::Section<2> sec = garray::Section<2>::full(shape);
        for (std::size_t d = 0; d < 2; ++d) {
          sec.start[d] = box.lo[d];
          sec.count[d] = box.hi[d] - box.lo[d];
        }
        std::vector<double> v(static_cast<std::size_t>(sec.size()), 1.0 + me);
        old.put_section(sec, std::span<const double>(v));
      }
      // and ghost cells written locally
      auto blk = old.access();
      std::fill_n(blk.data(), blk.view().num_elements(), 42.0);
    }
    const auto before = counts(ctx);
    A2 a(ctx, shape, dist, ghost);
    A2 f(fresh, shape, dist, ghost);
    CHECK(ctx.stats().cache_hits == before.hits + 1);
    CHECK(ctx.stats().windows_allocated == before.allocated);
    // Zero right after create, through remote gets (no sync yet) and locally, ghosts included.
    auto z = get_all(a);
    CHECK(std::count(z.begin(), z.end(), 0.0) == static_cast<std::ptrdiff_t>(z.size()));
    {
      auto blk = a.access();
      const auto n = blk.view().num_elements();
      CHECK(std::count(blk.data(), blk.data() + n, 0.0) == static_cast<std::ptrdiff_t>(n));
    }
    a.sync();
    z = get_all(a);
    CHECK(std::count(z.begin(), z.end(), 0.0) == static_cast<std::ptrdiff_t>(z.size()));
    a.sync();  // everyone has read before anyone writes below
    // Same distribution and layout as a fresh array.
    for (int r = 0; r < p; ++r) {
      CHECK(a.box_of(r) == f.box_of(r));
      CHECK(a.layout_of(r).elements == f.layout_of(r).elements);
    }
    CHECK(a.local_box() == f.local_box());
    // Same results for the same operations: rank-partitioned puts, accumulates, a fill.
    for (auto* x : {&a, &f}) {
      const auto n = static_cast<std::size_t>(x->size());
      std::vector<double> vals(n);
      for (std::size_t i = 0; i < n; ++i) vals[i] = static_cast<double>(i % 17) + 0.5;
      for (Index i = me; i < shape[0]; i += p) {
        std::vector<double> row(vals.begin() + i * shape[1], vals.begin() + (i + 1) * shape[1]);
        x->put(garray::idx[i], std::span<const double>(row));
      }
      x->sync();
      std::vector<double> ones(n, 1.0);
      x->accumulate(garray::idx[garray::all], std::span<const double>(ones));
      x->sync();
    }
    CHECK(get_all(a) == get_all(f));
    a.fill(-3.0);
    f.fill(-3.0);
    CHECK(get_all(a) == get_all(f));
  }
}

TEST_CASE("an uninitialised create from the cache skips the zeroing; a full write makes it right") {
  garray::Context ctx;
  const garray::Shape<2> shape{8, 9};
  { A2 old(ctx, shape); old.fill(5.0); }
  A2 t(ctx, shape, garray::Distribution<2>::blocked(), {}, garray::uninitialized);
  CHECK(ctx.stats().cache_hits == 1);
  {
    // The old array's data is still there: the memory was reused, not reallocated.
    auto blk = t.access();
    if (!blk.empty()) CHECK(blk.data()[0] == 5.0);
    std::fill_n(blk.data(), blk.view().num_elements(), 2.0);
  }
  t.sync();
  auto v = get_all(t);
  CHECK(std::count(v.begin(), v.end(), 2.0) == static_cast<std::ptrdiff_t>(v.size()));
  A2 t2(ctx, shape, garray::uninitialized);  // miss: a fresh window, contents unspecified
  CHECK(ctx.stats().cache_misses == 2);
}

TEST_CASE("the byte cap evicts least recently released windows, identically on every rank") {
  garray::Context ctx;
  const garray::Shape<2> sa{24, 16}, sb{8, 8};
  std::size_t ca = 0;
  {
    garray::Context probe;
    ca = charge_of(A2(probe, sa));
  }
  ctx.cache().set_depth(3);
  ctx.cache().set_byte_cap(ca + ca / 2);  // room for one window of shape sa
  CHECK(ctx.cache().byte_cap() == ca + ca / 2);
  {
    A2 a1(ctx, sa), a2(ctx, sa), a3(ctx, sa);
  }  // destroyed a3, a2, a1: the pool holds 3 (over the cap until the next create)
  CHECK(counts(ctx) == Counts{3, 0, 0, 3, 0});
  CHECK(ctx.cache().windows_held() == 3);
  {
    A2 a4(ctx, sa);  // reuses the newest (a1's), then evicts the oldest (a3's) to fit the cap
    CHECK(counts(ctx) == Counts{3, 1, 1, 3, 1});
    CHECK(ctx.cache().windows_held() == 1);
  }
  {
    A2 b(ctx, sb);  // miss; a4's window fits the cap, a2's (older) does not: evicted
    CHECK(counts(ctx) == Counts{4, 2, 1, 4, 2});
    CHECK(ctx.cache().windows_held() == 1);
  }
  // A cap below one window's charge: never reused, freed at the next create.
  ctx.cache().set_byte_cap(ca - 1);
  { A2 a(ctx, sa); }  // evicts the pooled sa window (charge > cap), keeps b's; miss
  CHECK(counts(ctx) == Counts{5, 3, 1, 5, 3});
  { A2 a(ctx, sa); }  // its own previous window is over the cap too: evicted, miss
  CHECK(counts(ctx) == Counts{6, 4, 1, 6, 4});
  ctx.cache().set_byte_cap(0);  // caches nothing
  { A2 b(ctx, sb); }
  CHECK(counts(ctx) == Counts{7, 6, 1, 7, 6});
  ctx.cache().clear();
  CHECK(ctx.cache().windows_held() == 0);
  CHECK(counts(ctx) == Counts{7, 7, 1, 7, 7});
  CHECK(ctx.stats().cache_bytes == 0);
}

namespace {

// An independent model of the cache rules (docs/semantics.md "Array cache"): at each
// create, (1) windows over the byte cap and all but the newest `depth` of each key go,
// (2) the newest window of the key is reused, (3) the oldest others go until the rest fit
// the cap. A destroy pools the window (depth 0: frees it).
struct Model {
  int depth = 3;
  std::size_t cap = std::size_t{1} << 30;
  struct W {
    int key;
    std::size_t charge;
  };
  std::vector<W> pool;
  Counts c;
  void evict(std::size_t i) {
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
    ++c.evictions;
    ++c.freed;
  }
  void create(int key, std::size_t charge) {
    std::map<int, int> newer;
    std::vector<bool> keep(pool.size());
    for (std::size_t i = pool.size(); i-- > 0;) keep[i] = pool[i].charge <= cap && newer[pool[i].key]++ < depth;
    for (std::size_t i = pool.size(); i-- > 0;)
      if (!keep[i]) evict(i);
    std::optional<W> taken;
    for (std::size_t i = pool.size(); i-- > 0;)
      if (pool[i].key == key && pool[i].charge == charge) {
        taken = pool[i];
        pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    std::size_t held = 0;
    for (auto& w : pool) held += w.charge;
    while (held > cap) {
      held -= pool.front().charge;
      evict(0);
    }
    if (taken) {
      ++c.hits;
    } else {
      ++c.misses;
      ++c.allocated;
    }
  }
  void destroy(int key, std::size_t charge) {  // charge: kept for symmetry with create
    if (depth == 0) ++c.freed;
    else pool.push_back({key, charge});
  }
};

}  // namespace

TEST_CASE("random create/destroy sequences: counters exactly as an independent model predicts") {
  auto rng = shared_rng();
  garray::Context ctx;
  // Four kinds of arrays (four keys) and their charges.
  const garray::Shape<2> shapes[3] = {{9, 7}, {16, 5}, {9, 7}};
  const garray::Shape<2> ghosts[3] = {{0, 0}, {0, 0}, {1, 0}};
  std::size_t charge[4];
  {
    garray::Context probe;
    for (int k = 0; k < 3; ++k) charge[k] = charge_of(A2(probe, shapes[k], garray::Distribution<2>::blocked(), ghosts[k]));
    charge[3] = charge_of(I1(probe, {33}));
  }
  struct Live {
    int key;
    std::optional<A2> a;
    std::optional<I1> i;
  };
  for (int trial = 0; trial < 4; ++trial) {
    garray::Context c(ctx.comm());
    Model m;
    std::vector<std::unique_ptr<Live>> live;
    auto settings = [&] {
      m.depth = static_cast<int>(uniform(rng, 0, 3));
      const Index pick = uniform(rng, 0, 3);
      m.cap = pick == 0 ? 0 : pick == 1 ? charge[0] : pick == 2 ? 3 * charge[1] : std::size_t{1} << 30;
      c.cache().set_depth(m.depth);
      c.cache().set_byte_cap(m.cap);
    };
    settings();
    INFO("trial " << trial);
    for (int op = 0; op < 150; ++op) {
      if (uniform(rng, 0, 30) == 0) settings();
      if (live.empty() || (live.size() < 6 && uniform(rng, 0, 9) < 6)) {
        const int k = static_cast<int>(uniform(rng, 0, 3));
        auto l = std::make_unique<Live>();
        l->key = k;
        if (k < 3) l->a.emplace(c, shapes[k], garray::Distribution<2>::blocked(), ghosts[k]);
        else l->i.emplace(c, garray::Shape<1>{33});
        m.create(k, charge[k]);
        live.push_back(std::move(l));
      } else {
        const auto j = static_cast<std::size_t>(uniform(rng, 0, static_cast<Index>(live.size()) - 1));
        const int k = live[j]->key;
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
        m.destroy(k, charge[k]);
      }
      CHECK(counts(c) == m.c);
      CHECK(c.cache().windows_held() == m.pool.size());
    }
    live.clear();
  }
}

TEST_CASE("a rank that destroys an array the others keep: CollectiveMismatch on every rank at the next create") {
  garray::Context ctx;
  if (ctx.size() == 1) {
    CHECK(ctx.cache().depth() > 0);
    return;
  }
  std::optional<A2> a(std::in_place, ctx, garray::Shape<2>{10, 10});
  std::optional<A2> b(std::in_place, ctx, garray::Shape<2>{10, 10});
  if (ctx.rank() == 0) b.reset();  // local: no hang here
  bool threw = false;
  std::string msg;
  try {
    A2 c(ctx, {10, 10});
  } catch (const garray::CollectiveMismatch& e) {
    threw = true;
    msg = e.what();
  }
  CHECK(threw);
  CHECK(msg.find("create") != std::string::npos);
  CHECK(msg.find("live=") != std::string::npos);
  // clear() refuses too (ranks hold different windows), on every rank.
  CHECK_THROWS_AS(ctx.cache().clear(), garray::CollectiveMismatch);
  // The others catch up: consistent again, creates and clear work.
  b.reset();
  const auto before = counts(ctx);
  { A2 c(ctx, {10, 10}); }
  CHECK(ctx.stats().cache_hits == before.hits + 1);
  ctx.cache().clear();
  CHECK(ctx.cache().windows_held() == 0);
  // Destroying in a different order on one rank: also caught at the next create (reusing
  // the "same" window would pair different MPI windows); clear() repairs it.
  std::optional<A2> x(std::in_place, ctx, garray::Shape<2>{10, 10});
  std::optional<A2> y(std::in_place, ctx, garray::Shape<2>{10, 10});
  if (ctx.rank() == 0) {
    x.reset();
    y.reset();
  } else {
    y.reset();
    x.reset();
  }
  CHECK_THROWS_AS(A2(ctx, {10, 10}), garray::CollectiveMismatch);
  ctx.cache().clear();
  { A2 c(ctx, {10, 10}); }
  a.reset();
  // Settings that differ between ranks are caught the same way.
  ctx.cache().set_depth(ctx.rank() == 0 ? 2 : 3);
  CHECK_THROWS_AS(A2(ctx, {10, 10}), garray::CollectiveMismatch);
  ctx.cache().set_depth(3);
  { A2 c(ctx, {10, 10}); }
}

TEST_CASE("settings from the environment: GARRAY_CACHE_DEPTH and GARRAY_CACHE_BYTES") {
  {
    garray::Context ctx;
    CHECK(ctx.cache().depth() == garray::WindowCache::default_depth);
    CHECK(ctx.cache().byte_cap() == garray::WindowCache::default_byte_cap);
  }
  setenv("GARRAY_CACHE_DEPTH", "1", 1);
  setenv("GARRAY_CACHE_BYTES", "3M", 1);
  {
    garray::Context ctx;
    CHECK(ctx.cache().depth() == 1);
    CHECK(ctx.cache().byte_cap() == std::size_t{3} << 20);
  }
  setenv("GARRAY_CACHE_BYTES", "12345", 1);
  {
    garray::Context ctx;
    CHECK(ctx.cache().byte_cap() == 12345);
  }
  setenv("GARRAY_CACHE_DEPTH", "three", 1);
  CHECK_THROWS_AS(garray::Context{}, garray::InvalidArgument);
  setenv("GARRAY_CACHE_DEPTH", "-1", 1);
  CHECK_THROWS_AS(garray::Context{}, garray::InvalidArgument);
  unsetenv("GARRAY_CACHE_DEPTH");
  // Malformed on one rank only: every rank throws.
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  setenv("GARRAY_CACHE_BYTES", r == 0 ? "12Q" : "1G", 1);
  std::string msg;
  try {
    garray::Context ctx;
  } catch (const garray::InvalidArgument& e) {
    msg = e.what();
  }
  CHECK(msg.find("GARRAY_CACHE") != std::string::npos);
  unsetenv("GARRAY_CACHE_BYTES");
  CHECK(all_ranks(true));
}

TEST_CASE("move assignment and context end return windows; print_stats shows the cache") {
  std::ostringstream os;
  {
    garray::Context ctx;
    A2 a(ctx, {6, 6});
    a = A2(ctx, {6, 6});  // the temporary's window moves in; a's old window goes to the pool
    CHECK(counts(ctx) == Counts{2, 0, 0, 2, 0});
    CHECK(ctx.cache().windows_held() == 1);
    a = A2(ctx, {6, 6});  // hit
    CHECK(counts(ctx) == Counts{2, 0, 1, 2, 0});
    garray::print_stats(ctx, os);
    if (ctx.rank() == 0) {
      CHECK(os.str().find("cache_hits") != std::string::npos);
      CHECK(os.str().find("cache_evictions") != std::string::npos);
      CHECK(os.str().find("cache_bytes") != std::string::npos);
    }
  }  // the context's end frees the pooled window (collective) and a's
  CHECK(all_ranks(true));
}

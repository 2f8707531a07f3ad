// The array cache (runtime/window_cache.hpp) through GlobalArray: window reuse counted
// exactly, cached arrays indistinguishable from fresh ones, eviction by depth, byte cap,
// window cap and idleness against a serial model, settings from code and environment,
// destruction local at every depth, collective misuse (a rank destroying an array the
// others keep, a rank unwinding) reported on every rank instead of a hang, and injected
// failures in acquire() thrown on every rank.
#include "support/outcome.hpp"
#include "support/test_support.hpp"
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/stats.hpp>
#include <garray/runtime/window_cache.hpp>

#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <tuple>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using garray::Index;

namespace {

using A2 = garray::GlobalArray<double, 2>;
using I1 = garray::GlobalArray<std::int32_t, 1>;

using test::all_ranks;
using test::Got;

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

TEST_CASE("depth 0: every create allocates, destroy stays local, the next create frees") {
  garray::Context ctx;
  ctx.cache().set_depth(0);
  {
    A2 a(ctx, {16, 16});
  }  // local: the window waits in the pool, marked pending; no MPI_Win_free yet
  CHECK(counts(ctx) == Counts{1, 0, 0, 1, 0});
  CHECK(ctx.cache().windows_held() == 1);
  CHECK(ctx.cache().windows_pending() == 1);
  CHECK(ctx.cache().bytes_held() > 0);
  for (int i = 1; i < 100; ++i) A2 a(ctx, {16, 16});  // each create frees the previous window
  CHECK(counts(ctx) == Counts{100, 99, 0, 100, 99});
  CHECK(ctx.cache().windows_held() == 1);
  ctx.cache().clear();
  CHECK(counts(ctx) == Counts{100, 100, 0, 100, 100});
  CHECK(ctx.cache().windows_held() == 0);
  CHECK(ctx.stats().cache_bytes == 0);
  CHECK_THROWS_AS(ctx.cache().set_depth(-1), garray::InvalidArgument);
  CHECK(ctx.cache().depth() == 0);
  // Lowering the depth to 0 moves every reusable window to the pending part at once.
  garray::Context c2;
  { A2 a(c2, {5, 5}), b(c2, {6, 6}); }
  CHECK(c2.cache().windows_pending() == 0);
  c2.cache().set_depth(0);
  CHECK(c2.cache().windows_pending() == 2);
  { A2 a(c2, {5, 5}); }  // a miss (nothing reusable); frees both
  CHECK(counts(c2) == Counts{3, 2, 0, 3, 2});
  CHECK(c2.stats().leaked_windows == 0);
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

TEST_CASE("keys: the number of dimensions alone makes a key; specs that resolve alike share one; pools are per context") {
  garray::Context ctx;
  ctx.cache().clear();
  using D1 = garray::GlobalArray<double, 1>;
  using D3 = garray::GlobalArray<double, 3>;
  const Index n = 6 * static_cast<Index>(ctx.size());
  // 1, 2 and 3 dimensions, the same elements per rank along the distributed axis 0.
  { D1 a(ctx, {n}); }
  auto before = counts(ctx);
  { A2 b(ctx, {n, 1}); }
  { D3 c(ctx, {n, 1, 1}, garray::Distribution<3>::slab(0)); }
  CHECK(counts(ctx).misses == before.misses + 2);
  CHECK(counts(ctx).hits == before.hits);
  // The key is the resolved distribution: slab(0), grid {p} and blocked() give a 1-D array
  // the same blocks, so they share the window.
  before = counts(ctx);
  { D1 a(ctx, {n}, garray::Distribution<1>::slab(0)); }
  { D1 a(ctx, {n}, garray::Distribution<1>::grid({ctx.size()})); }
  CHECK(counts(ctx).hits == before.hits + 2);
  CHECK(counts(ctx).misses == before.misses);
  // Another context of the same ranks has its own pool: no hit on this context's windows.
  garray::Context other;
  const auto held = ctx.cache().windows_held();
  { D1 a(other, {n}); }
  CHECK(other.stats().cache_hits == 0);
  CHECK(other.stats().cache_misses == 1);
  CHECK(ctx.cache().windows_held() == held);
  ctx.cache().clear();
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

TEST_CASE("the byte cap pushes out least recently released windows, identically on every rank") {
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
  }  // destroyed a3, a2, a1: each release pushes the previous one out (pending)
  CHECK(counts(ctx) == Counts{3, 0, 0, 3, 0});
  CHECK(ctx.cache().windows_held() == 3);
  CHECK(ctx.cache().windows_pending() == 2);
  {
    A2 a4(ctx, sa);  // reuses the newest (a1's), frees the two pending ones
    CHECK(counts(ctx) == Counts{3, 2, 1, 3, 2});
    CHECK(ctx.cache().windows_held() == 0);
  }
  {
    A2 b(ctx, sb);  // miss; a4's window stays
    CHECK(counts(ctx) == Counts{4, 2, 1, 4, 2});
    CHECK(ctx.cache().windows_held() == 1);
  }
  CHECK(ctx.cache().windows_held() == 2);  // both fit the cap
  // A cap below one window's charge: the sa window is pending at once, never reused.
  ctx.cache().set_byte_cap(ca - 1);
  CHECK(ctx.cache().windows_pending() == 1);
  { A2 a(ctx, sa); }  // miss, frees the pending window; its own goes to pending at destroy
  CHECK(counts(ctx) == Counts{5, 3, 1, 5, 3});
  { A2 a(ctx, sa); }
  CHECK(counts(ctx) == Counts{6, 4, 1, 6, 4});
  ctx.cache().set_byte_cap(0);  // caches nothing: b's window is pending too
  CHECK(ctx.cache().windows_pending() == 2);
  { A2 b(ctx, sb); }
  CHECK(counts(ctx) == Counts{7, 6, 1, 7, 6});
  ctx.cache().clear();
  CHECK(ctx.cache().windows_held() == 0);
  CHECK(counts(ctx) == Counts{7, 7, 1, 7, 7});
  CHECK(ctx.stats().cache_bytes == 0);
}

TEST_CASE("the window cap bounds the held windows: distinct shapes never pile up") {
  garray::Context ctx;
  CHECK(ctx.cache().window_cap() == garray::WindowCache::default_window_cap);
  ctx.cache().set_window_cap(5);
  CHECK(ctx.cache().window_cap() == 5);
  const int n = 40;
  for (Index i = 0; i < n; ++i) {
    I1 a(ctx, {i + 1});  // a new key every time: a miss
    CHECK(ctx.cache().windows_held() <= 5);
    CHECK(ctx.cache().windows_pending() == 0);  // freed by this create
  }
  CHECK(ctx.cache().windows_held() - ctx.cache().windows_pending() == 5);  // reusable <= cap always
  CHECK(counts(ctx) == Counts{n, n - 6, 0, n, n - 6});                    // + 1 pending
  // The five newest shapes are still there; the oldest is gone.
  { I1 a(ctx, {Index{n}}); }
  CHECK(ctx.stats().cache_hits == 1);
  { I1 a(ctx, {Index{1}}); }
  CHECK(ctx.stats().cache_misses == n + 1);
  // Lowering the cap pushes the least recently released out at once.
  ctx.cache().set_window_cap(2);
  CHECK(ctx.cache().windows_held() - ctx.cache().windows_pending() == 2);
  { I1 a(ctx, {Index{1}}); }  // the newest survives
  CHECK(ctx.stats().cache_hits == 2);
  CHECK(ctx.cache().windows_held() <= 2);
  ctx.cache().set_window_cap(0);  // caches nothing
  { I1 a(ctx, {Index{1}}); }
  CHECK(ctx.stats().cache_hits == 2);
  CHECK(ctx.stats().cache_misses == n + 2);
  CHECK(ctx.cache().windows_pending() == 1);
  CHECK(ctx.cache().windows_held() == 1);
  // The default cap: 100 distinct shapes leave at most 64 windows.
  garray::Context c2;
  for (Index i = 0; i < 100; ++i) {
    I1 a(c2, {i + 1});
    CHECK(c2.cache().windows_held() <= garray::WindowCache::default_window_cap);
  }
  CHECK(c2.cache().windows_held() == garray::WindowCache::default_window_cap + 1);  // + 1 pending
}

TEST_CASE("idle keys: windows of shapes that stopped coming are freed") {
  garray::Context ctx;
  CHECK(ctx.cache().idle_after() == garray::WindowCache::default_idle_after);
  ctx.cache().set_idle_after(4);
  CHECK(ctx.cache().idle_after() == 4);
  { A2 a(ctx, {7, 7}); }  // create 1; key A touched by its destroy after create 1
  for (int i = 0; i < 4; ++i) A2 b(ctx, {9, 9});  // creates 2..5: A not yet idle
  CHECK(ctx.stats().cache_evictions == 0);
  CHECK(ctx.cache().windows_held() == 2);
  { A2 b(ctx, {9, 9}); }  // create 6: A untouched during the last 4 creates: freed
  CHECK(ctx.stats().cache_evictions == 1);
  CHECK(ctx.cache().windows_held() == 1);
  { A2 a(ctx, {7, 7}); }  // a miss now
  CHECK(counts(ctx) == Counts{3, 1, 4, 3, 1});
  // A live array keeps its key touched only through its create and destroy: a long-lived
  // array of a key whose other windows sit idle loses those, not itself.
  {
    A2 keep(ctx, {7, 7});  // takes A's window (hit)
    A2 other(ctx, {7, 7});  // miss
    other = A2(ctx, {9, 9});  // other's A window goes to the pool (touches A)
    for (int i = 0; i < 6; ++i) A2 b(ctx, {9, 9});
    CHECK(ctx.cache().windows_held() == 1);  // A's pooled window went idle and was freed
  }
  // 0: never idle.
  ctx.cache().set_idle_after(0);
  ctx.cache().clear();
  { A2 a(ctx, {7, 7}); }
  for (int i = 0; i < 50; ++i) A2 b(ctx, {9, 9});
  CHECK(ctx.cache().windows_held() == 2);  // {7,7} untouched for 50 creates, still held
  CHECK(ctx.stats().cache_evictions == 2 + 3);  // 2 idle frees above, 3 windows by clear()
}

namespace {

// A serial model of the cache rules (docs/semantics.md "Array cache"), written the slow
// and obvious way: a vector in release order, every rule a scan.
//  - destroy: the window joins the pool; it is reusable if depth > 0, window cap > 0 and
//    its charge fits the byte cap, else pending. Then, oldest first, reusable windows
//    beyond `depth` per key, then beyond the window cap or the byte cap, become pending.
//  - create number t: take the newest reusable window of the key; free every pending
//    window and every reusable window of a key last touched (created or destroyed) before
//    create t - idle.
struct Model {
  int depth = 3;
  std::size_t cap = std::size_t{1} << 30, wcap = 64;
  std::uint64_t idle = 1024;
  struct W {
    int key;
    std::size_t charge;
    std::uint64_t serial;
    bool pending;
  };
  std::vector<W> pool;
  std::map<int, std::uint64_t> touched;
  std::uint64_t clock = 0, allocs = 0;
  Counts c;
  std::size_t reusable() const {
    return static_cast<std::size_t>(std::count_if(pool.begin(), pool.end(), [](const W& w) { return !w.pending; }));
  }
  std::size_t pending() const { return pool.size() - reusable(); }
  std::size_t charged() const {
    std::size_t s = 0;
    for (const W& w : pool)
      if (!w.pending) s += w.charge;
    return s;
  }
  void limits() {
    std::map<int, int> newer;
    for (std::size_t i = pool.size(); i-- > 0;)
      if (!pool[i].pending && newer[pool[i].key]++ >= depth) pool[i].pending = true;
    for (W& w : pool)
      if (w.charge > cap) w.pending = true;
    for (W& w : pool)
      if (!w.pending && (reusable() > wcap || charged() > cap)) w.pending = true;
  }
  std::uint64_t create(int key, std::size_t charge) {
    ++clock;
    std::optional<std::uint64_t> taken;
    for (std::size_t i = pool.size(); i-- > 0;)
      if (!pool[i].pending && pool[i].key == key) {
        if (pool[i].charge == charge) {
          taken = pool[i].serial;
          pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      }
    for (const W& w : pool)
      if (!w.pending && w.key == key) touched[key] = clock;
    std::vector<W> rest;
    for (const W& w : pool) {
      if (w.pending || (idle > 0 && touched[w.key] + idle < clock)) {
        ++c.evictions;
        ++c.freed;
      } else {
        rest.push_back(w);
      }
    }
    pool = rest;
    if (taken) {
      ++c.hits;
      return *taken;
    }
    ++c.misses;
    ++c.allocated;
    return ++allocs;
  }
  void destroy(int key, std::size_t charge, std::uint64_t serial) {
    const bool keep = depth > 0 && wcap > 0 && charge <= cap;
    pool.push_back({key, charge, serial, !keep});
    if (keep) {
      touched[key] = clock;
      limits();
    }
  }
};

std::uint64_t max_over_ranks(std::uint64_t v) {
  std::uint64_t out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

}  // namespace

TEST_CASE("random create/destroy sequences of many shapes: every rank decides as the serial model") {
  auto rng = shared_rng();
  garray::Context ctx;
  // Keys: 1-d int arrays of 12 lengths, a 2-d double array with and without ghosts.
  constexpr int nkeys = 14;
  std::size_t charge[nkeys];
  auto make = [](const garray::Context& c, int k) -> std::pair<std::optional<I1>, std::optional<A2>> {
    if (k < 12) return {I1(c, {Index{3} * k + 1}), std::nullopt};
    return {std::nullopt, A2(c, {9, 7}, garray::Distribution<2>::blocked(), {k - 12, 0})};
  };
  {
    garray::Context probe;
    for (int k = 0; k < nkeys; ++k) {
      auto [i, a] = make(probe, k);
      charge[k] = i ? charge_of(*i) : charge_of(*a);
    }
  }
  struct Live {
    int key;
    std::uint64_t serial;
    std::optional<I1> i;
    std::optional<A2> a;
  };
  for (int trial = 0; trial < 4; ++trial) {
    garray::Context c(ctx.comm());
    Model m;
    std::vector<std::unique_ptr<Live>> live;
    auto settings = [&] {
      m.depth = static_cast<int>(uniform(rng, 0, 3));
      const Index pick = uniform(rng, 0, 3);
      m.cap = pick == 0 ? 0 : pick == 1 ? charge[12] : pick == 2 ? 4 * charge[11] : std::size_t{1} << 30;
      const std::size_t wcaps[] = {0, 1, 3, 8, 64};
      m.wcap = wcaps[uniform(rng, 0, 4)];
      const std::uint64_t idles[] = {0, 1, 3, 10, 1024};
      m.idle = idles[uniform(rng, 0, 4)];
      c.cache().set_depth(m.depth);
      c.cache().set_byte_cap(m.cap);
      c.cache().set_window_cap(m.wcap);
      c.cache().set_idle_after(m.idle);
      m.limits();
    };
    settings();
    INFO("trial " << trial);
    for (int op = 0; op < 150; ++op) {
      if (uniform(rng, 0, 25) == 0) settings();
      if (live.empty() || (live.size() < 6 && uniform(rng, 0, 9) < 6)) {
        const int k = static_cast<int>(uniform(rng, 0, nkeys - 1));
        auto l = std::make_unique<Live>();
        l->key = k;
        std::tie(l->i, l->a) = make(c, k);
        l->serial = m.create(k, charge[k]);
        live.push_back(std::move(l));
      } else {
        const auto j = static_cast<std::size_t>(uniform(rng, 0, static_cast<Index>(live.size()) - 1));
        const int k = live[j]->key;
        const std::uint64_t serial = live[j]->serial;
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
        m.destroy(k, charge[k], serial);
      }
      INFO("op " << op << ": " << c.cache().describe());
      CHECK(counts(c) == m.c);
      CHECK(c.cache().windows_held() == m.pool.size());
      CHECK(c.cache().windows_pending() == m.pending());
      CHECK(c.cache().windows_held() - c.cache().windows_pending() <= m.wcap);
      // Every rank's cache is in the same state.
      const auto h = std::hash<std::string>{}(c.cache().describe().substr(0, c.cache().describe().find(" bytes=")));
      CHECK(max_over_ranks(h) == h);
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
  // So is every other setting, and the create that threw changed nothing on any rank.
  ctx.cache().clear();
  { A2 c(ctx, {10, 10}); }  // one reusable window held
  auto& cache = ctx.cache();
  const std::size_t bytes0 = cache.byte_cap(), windows0 = cache.window_cap();
  const std::uint64_t idle0 = cache.idle_after();
  const bool odd = ctx.rank() == ctx.size() - 1;
  for (int setting = 0; setting < 3; ++setting) {
    CAPTURE(setting);
    if (setting == 0) cache.set_byte_cap(odd ? bytes0 + 8 : bytes0);
    if (setting == 1) cache.set_window_cap(odd ? windows0 + 1 : windows0);
    if (setting == 2) cache.set_idle_after(odd ? idle0 + 1 : idle0);
    const auto before = counts(ctx);
    const std::size_t held = cache.windows_held(), pending = cache.windows_pending();
    CHECK_THROWS_AS(A2(ctx, {10, 10}), garray::CollectiveMismatch);
    CHECK(counts(ctx) == before);
    CHECK(cache.windows_held() == held);
    CHECK(cache.windows_pending() == pending);
    cache.set_byte_cap(bytes0);
    cache.set_window_cap(windows0);
    cache.set_idle_after(idle0);
    { A2 c(ctx, {10, 10}); }  // agreed again: the held window is hit
    CHECK(ctx.stats().cache_hits == before.hits + 1);
  }
}

TEST_CASE("a rank unwinding out of a scope that holds an array: reported at the next create, never a hang") {
  for (int depth : {0, 3}) {
    CAPTURE(depth);
    garray::Context ctx;
    ctx.cache().set_depth(depth);
    const bool alone = ctx.size() == 1;
    std::optional<A2> kept;
    try {
      A2 a(ctx, {10, 10});
      a.fill(1.0);
      if (ctx.rank() == 0) throw std::runtime_error("rank 0 gives up");  // ~A2 while unwinding: local
      kept.emplace(std::move(a));
    } catch (const std::runtime_error&) {
    }
    CHECK(ctx.stats().leaked_windows == 0);  // the window is in rank 0's pool, not leaked
    // Rank 0 destroyed an array the others keep: every rank's next create throws.
    bool threw = false;
    try {
      A2 b(ctx, {10, 10});
    } catch (const garray::CollectiveMismatch& e) {
      threw = true;
      CHECK(std::string(e.what()).find("live=") != std::string::npos);
    }
    CHECK(threw == !alone);
    CHECK(all_ranks(true));
    // The others catch up: consistent again; creates work and free what is pending.
    kept.reset();
    { A2 b(ctx, {10, 10}); }
    // A lone destroy on one rank (no exception): the same.
    std::optional<A2> x(std::in_place, ctx, garray::Shape<2>{4, 4});
    if (ctx.rank() == ctx.size() - 1) x.reset();
    if (!alone) CHECK_THROWS_AS(I1(ctx, {5}), garray::CollectiveMismatch);
    CHECK(all_ranks(true));
    x.reset();
    { I1 b(ctx, {5}); }
    ctx.cache().clear();
    CHECK(ctx.cache().windows_held() == 0);
    CHECK(ctx.stats().windows_allocated == ctx.stats().windows_freed);
    CHECK(ctx.stats().leaked_windows == 0);
  }
}

TEST_CASE("a window whose completion failed at destroy is poisoned: never reused, freed at the next create") {
  garray::Context ctx;
  ctx.cache().clear();
  const int victim = ctx.size() - 1;
  // cache.release: the completion (flush) failed; cache.release.bookkeeping: the pool's
  // bookkeeping could not allocate. Either way the window is kept as pending, never given up
  // (a window freed by the other ranks only would make them wait in MPI_Win_free forever).
  for (const char* point : {"cache.release", "cache.release.bookkeeping"})
  for (const bool all : {true, false}) {
    const bool everywhere = all || ctx.size() == 1;
    CAPTURE(point);
    CAPTURE(everywhere);
    { A2 warm(ctx, {12, 5}); }  // a reusable window of this key, then one that will be poisoned
    std::optional<A2> a(std::in_place, ctx, garray::Shape<2>{12, 5});  // hits the warm window
    const auto before = counts(ctx);
    if (everywhere || ctx.rank() == victim) garray::testing::arm_fault(point);
    a.reset();  // local; the injected failure stands for a flush or an allocation that failed
    CHECK(!garray::testing::fault_armed());
    garray::testing::disarm_fault();
    CHECK(ctx.cache().windows_pending() == (everywhere || ctx.rank() == victim ? 1u : 0u));
    std::string msg;
    const Got g = test::outcome([&] { A2 b(ctx, {12, 5}); }, &msg);
    CAPTURE(msg);
    if (everywhere) {
      CHECK(g == Got::nothing);
      const auto after = counts(ctx);
      CHECK(after.hits == before.hits);          // the poisoned window was not reused ...
      CHECK(after.misses == before.misses + 1);  // ... the create allocated a fresh one
      CHECK(after.freed == before.freed + 1);    // and freed the poisoned one
      CHECK(ctx.cache().windows_pending() == 0);
    } else {
      CHECK(g == Got::mismatch);  // pools differ: reported on every rank, nobody hangs
    }
    CHECK(all_ranks(true));
    ctx.cache().clear();  // repairs a difference: every rank frees what it holds
    CHECK(ctx.cache().windows_held() == 0);
    { A2 b(ctx, {12, 5}); }
    CHECK(ctx.stats().windows_allocated == ctx.stats().windows_freed + 1);
    ctx.cache().clear();
    CHECK(ctx.stats().windows_allocated == ctx.stats().windows_freed);
    CHECK(ctx.stats().leaked_windows == 0);
  }
}

TEST_CASE("an injected failure in acquire on one rank throws on every rank, changes nothing, never hangs") {
  garray::Context ctx;
  const int victim = ctx.size() - 1;
  auto attempt = [&](auto&& create, bool bad_alloc) {
    const auto before = counts(ctx);
    const auto held = ctx.cache().windows_held();
    if (ctx.rank() == victim) garray::testing::arm_fault("cache.acquire", 0, bad_alloc);
    bool mine = false, others = false;
    try {
      create();
    } catch (const garray::testing::InjectedFault&) {
      mine = true;
    } catch (const std::bad_alloc&) {
      mine = true;
    } catch (const garray::CollectiveFailure& e) {
      others = true;
      CHECK(e.failed_rank() == victim);
    }
    CHECK(mine == (ctx.rank() == victim));
    CHECK(others == (ctx.rank() != victim));
    CHECK(!garray::testing::fault_armed());
    CHECK(counts(ctx) == before);  // nothing freed, nothing allocated
    CHECK(ctx.cache().windows_held() == held);
    CHECK(ctx.cache().live_windows() == 0);
  };
  // A miss (the create allocates).
  attempt([&] { A2 a(ctx, {6, 6}); }, false);
  attempt([&] { A2 a(ctx, {6, 6}, garray::uninitialized); }, true);
  { A2 a(ctx, {6, 6}); }  // works afterwards: a miss
  CHECK(counts(ctx) == Counts{1, 0, 0, 1, 0});
  // A hit with windows to free (depth 1: the second window of the key is pending).
  ctx.cache().set_depth(1);
  { A2 a(ctx, {6, 6}), b(ctx, {6, 6}); }
  CHECK(ctx.cache().windows_pending() == 1);
  attempt([&] { A2 a(ctx, {6, 6}); }, false);
  { A2 a(ctx, {6, 6}); }  // works: a hit that frees the pending window
  CHECK(counts(ctx) == Counts{2, 1, 2, 2, 1});
  // A pure hit makes no MPI call and passes no fault point: nothing to agree on.
  if (ctx.rank() == victim) garray::testing::arm_fault("cache.acquire");
  { A2 a(ctx, {6, 6}); }
  CHECK(garray::testing::fault_armed() == (ctx.rank() == victim));
  garray::testing::disarm_fault();
  CHECK(ctx.stats().cache_hits == 3);
  ctx.cache().clear();
  CHECK(ctx.stats().windows_allocated == ctx.stats().windows_freed);
}

TEST_CASE("settings from the environment: GARRAY_CACHE_DEPTH and GARRAY_CACHE_BYTES") {
  using test::ScopedEnv;
  const ScopedEnv depth0("GARRAY_CACHE_DEPTH", nullptr), bytes0("GARRAY_CACHE_BYTES", nullptr),
      windows0("GARRAY_CACHE_WINDOWS", nullptr), idle0("GARRAY_CACHE_IDLE", nullptr);
  {
    garray::Context ctx;
    CHECK(ctx.cache().depth() == garray::WindowCache::default_depth);
    CHECK(ctx.cache().byte_cap() == garray::WindowCache::default_byte_cap);
  }
  {
    // The documented defaults (semantics.md, "Array cache"), not only the constants' names.
    garray::Context ctx;
    CHECK(ctx.cache().depth() == 3);
    CHECK(ctx.cache().byte_cap() == std::size_t{1} << 30);
    CHECK(ctx.cache().window_cap() == 64);
    CHECK(ctx.cache().idle_after() == 1024);
  }
  // K/M/G/T binary suffixes, case-insensitive, with an optional B or iB.
  for (const auto& [text, want] :
       {std::pair{"2K", std::size_t{2} << 10}, std::pair{"5g", std::size_t{5} << 30},
        std::pair{"1T", std::size_t{1} << 40}, std::pair{"7MiB", std::size_t{7} << 20},
        std::pair{"9kb", std::size_t{9} << 10}, std::pair{"64B", std::size_t{64}}}) {
    CAPTURE(text);
    const ScopedEnv bytes("GARRAY_CACHE_BYTES", text);
    garray::Context ctx;
    CHECK(ctx.cache().byte_cap() == want);
  }
  {
    const ScopedEnv depth("GARRAY_CACHE_DEPTH", "1"), bytes("GARRAY_CACHE_BYTES", "3M");
    garray::Context ctx;
    CHECK(ctx.cache().depth() == 1);
    CHECK(ctx.cache().byte_cap() == std::size_t{3} << 20);
  }
  {
    const ScopedEnv bytes("GARRAY_CACHE_BYTES", "12345"), windows("GARRAY_CACHE_WINDOWS", "7"),
        idle("GARRAY_CACHE_IDLE", "0");
    garray::Context ctx;
    CHECK(ctx.cache().byte_cap() == 12345);
    CHECK(ctx.cache().window_cap() == 7);
    CHECK(ctx.cache().idle_after() == 0);
  }
  for (const auto& [name, bad] : {std::pair{"GARRAY_CACHE_WINDOWS", "7K"}, std::pair{"GARRAY_CACHE_IDLE", "x"},
                                  std::pair{"GARRAY_CACHE_DEPTH", "three"}, std::pair{"GARRAY_CACHE_DEPTH", "-1"}}) {
    INFO("name := " << std::string(name));
    CAPTURE(bad);
    const ScopedEnv env(name, bad);
    CHECK_THROWS_AS(garray::Context{}, garray::InvalidArgument);
  }
  // Malformed on one rank only: every rank throws.
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const ScopedEnv bytes("GARRAY_CACHE_BYTES", r == 0 ? "12Q" : "1G");
  std::string msg;
  try {
    garray::Context ctx;
  } catch (const garray::InvalidArgument& e) {
    msg = e.what();
  }
  CHECK(msg.find("GARRAY_CACHE") != std::string::npos);
  // every rank names the rank and the value that were wrong (rank 0's: at np 1 as its own)
  CHECK(msg.find("GARRAY_CACHE_BYTES='12Q'") != std::string::npos);
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p > 1) CHECK(msg.find("rank 0: 'GARRAY_CACHE_BYTES='12Q'") != std::string::npos);
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

TEST_CASE(
    "a destroyed array's unwaited put_nb/acc_nb are complete before its window is reused: the next array of its "
    "key reads zero everywhere, before and after a sync()") {
  // semantics.md, Array cache: "Nonblocking requests still outstanding on an array are
  // completed when it is destroyed (before the window goes to the pool), so a reused window
  // never serves an old request", and "Why a reused window is safe", 2: "puts/accumulates
  // are remotely completed by the flush in ~A". The existing cache tests put only with
  // blocking calls before a destroy. transfers.cpp's "destroying an array completes its
  // outstanding requests" checks only that the gets are done: nothing reads the elements its
  // acc_nb wrote after the window is reused. This fails if ~GlobalArray pooled the window
  // without completing the requests, or without flushing what they wrote. The requests would
  // then not be done(), or their data would land after the next create zeroed the block.
  // Ranks write into every rank's block, the last rank's empty block included.
  garray::Context ctx;  // a cache of its own
  ctx.cache().set_depth(3);
  const int p = ctx.size(), me = ctx.rank();
  const Index per = Index{1} << 15;  // 256 KiB of int64 per rank and half: RMA takes a while
  const Index half = per * p, n = 2 * half;
  const std::vector<garray::Distribution<1>> dists{garray::Distribution<1>::blocked(),
                                                   test::last_rank_owns_nothing(n, p)};
  std::vector<std::int64_t> put_buf(static_cast<std::size_t>(per)), acc_buf(static_cast<std::size_t>(half));
  const std::vector<std::int64_t> zeros(static_cast<std::size_t>(n), 0);  // the serial reference
  bool done = true, hits = true, zero_at_create = true, zero_after_sync = true;
  for (int round = 0; round < 6; ++round) {
    const auto& dist = dists[static_cast<std::size_t>(round % 2)];
    std::fill(put_buf.begin(), put_buf.end(), 1000 + 10 * round + me);
    std::fill(acc_buf.begin(), acc_buf.end(), std::int64_t{1} + me);
    std::vector<garray::Request> reqs;  // outlive the array
    {
      garray::GlobalArray<std::int64_t, 1> a(ctx, {n}, dist);
      // elements me, me + p, ... of the first half (every owner's block), and the whole
      // second half from every rank; nothing waits, fences or syncs
      reqs.push_back(a.put_section_nb(garray::Section<1>{{me}, {p}, {per}}, put_buf));
      reqs.push_back(a.acc_section_nb(garray::Section<1>{{half}, {1}, {half}}, acc_buf));
    }  // ~a: local; the window goes to the cache
    for (const auto& r : reqs) done = done && r.done();
    const auto before = ctx.stats().cache_hits;
    garray::GlobalArray<std::int64_t, 1> b(ctx, {n}, dist);  // a's key: a's window, zeroed
    hits = hits && ctx.stats().cache_hits == before + 1;
    auto block_is_zero = [&] {
      auto blk = b.access();
      const auto m = blk.view().num_elements();
      return std::count(blk.data(), blk.data() + m, std::int64_t{0}) == static_cast<std::ptrdiff_t>(m);
    };
    std::vector<std::int64_t> got(static_cast<std::size_t>(n), -1);
    zero_at_create = zero_at_create && block_is_zero();
    b.get_section(garray::Section<1>::full({n}), got);
    zero_at_create = zero_at_create && got == zeros;
    b.sync();  // would complete a late write of a's that the window still tracks
    zero_after_sync = zero_after_sync && block_is_zero();
    std::fill(got.begin(), got.end(), -1);
    b.get_section(garray::Section<1>::full({n}), got);
    zero_after_sync = zero_after_sync && got == zeros;
    b.sync();  // every rank has read before the next round writes
    for (auto& r : reqs) r.wait();  // nothing left to do (keeps the buffers alive until here)
  }
  CHECK(test::all_ranks(done, ctx.comm()));
  CHECK(test::all_ranks(hits, ctx.comm()));
  CHECK(test::all_ranks(zero_at_create, ctx.comm()));
  CHECK(test::all_ranks(zero_after_sync, ctx.comm()));
}

TEST_CASE(
    "depth 0: destroying an array completes its unwaited get_nb (reversed too) before its window goes to "
    "pending; the buffers hold the array's data; the next create frees the window") {
  // semantics.md, Array cache: "Nonblocking requests still outstanding on an array are
  // completed when it is destroyed (before the window goes to the pool)"; the table: "Destroying
  // the array ... does the same ... the Request is done". The existing tests destroy arrays
  // with requests at depth 3 only (reusable path). At depth 0 the window skips the flush and
  // goes straight to pending; the requests must still complete, and the next create's
  // MPI_Win_free must not free memory a get still lands in. Fails if the pending path skipped
  // complete_outstanding (done() false, buffers -1 where a finisher should have unpacked).
  garray::Context ctx;  // a cache of its own
  ctx.cache().set_depth(0);
  const int p = ctx.size(), me = ctx.rank();
  const Index per = Index{1} << 13, n = per * p;
  const int nb = (me + 1) % p;
  const garray::Section<1> fwd_sec{{nb * per}, {1}, {per}}, rev_sec{{nb * per + per - 1}, {-1}, {per}};
  bool done = true, ok = true, freed = true;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::int64_t> fwd(static_cast<std::size_t>(per), -1), rev(fwd);
    garray::Request rf, rr;  // outlive the array
    {
      garray::GlobalArray<std::int64_t, 1> a(ctx, {n});
      {
        auto blk = a.access();
        for (Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = 7 * i + round;
      }
      a.sync();
      rf = a.get_section_nb(fwd_sec, fwd);
      rr = a.get_section_nb(rev_sec, rev);
    }  // depth 0: the window goes to pending
    done = done && rf.done() && rr.done();
    for (Index k = 0; k < per; ++k) {
      ok = ok && fwd[static_cast<std::size_t>(k)] == 7 * (fwd_sec.start[0] + k) + round;
      ok = ok && rev[static_cast<std::size_t>(k)] == 7 * (rev_sec.start[0] - k) + round;
    }
    garray::GlobalArray<std::int64_t, 1> b(ctx, {n});  // frees the pending window, allocates anew
    freed = freed && ctx.cache().windows_pending() == 0;
    b.fill(-1);
  }
  CHECK(all_ranks(done, ctx.comm()));
  CHECK(all_ranks(ok, ctx.comm()));
  CHECK(all_ranks(freed, ctx.comm()));
}

TEST_CASE(
    "GARRAY_CACHE_* valid on every rank but different: the next create throws CollectiveMismatch on every "
    "rank and creates nothing; settings made equal from code let creates work again") {
  // semantics.md, Array cache, Limits: "Four settings, local calls that must be identical on
  // every rank (a difference is reported at the next create), also read from the environment
  // when the context is made". cache.cpp tests differing settings set from code, and a
  // *malformed* variable on one rank; nothing makes a context from valid but different
  // environment values. Fails if a setting read from the environment were left out of the
  // create's plan signature (ranks would then decide differently at their next destroy).
  using test::ScopedEnv;
  int me = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) {
    MESSAGE("one rank: settings cannot differ across ranks, skipped");
    return;
  }
  struct Case {
    const char* name;
    const char* mine;
    const char* others;
  };
  const Case cases[] = {{"GARRAY_CACHE_DEPTH", "1", "2"},
                        {"GARRAY_CACHE_BYTES", "1M", "2M"},
                        {"GARRAY_CACHE_WINDOWS", "7", "8"},
                        {"GARRAY_CACHE_IDLE", "5", "6"}};
  for (const Case& c : cases) {
    INFO(c.name);
    const ScopedEnv depth0("GARRAY_CACHE_DEPTH", nullptr), bytes0("GARRAY_CACHE_BYTES", nullptr),
        windows0("GARRAY_CACHE_WINDOWS", nullptr), idle0("GARRAY_CACHE_IDLE", nullptr);
    const ScopedEnv env(c.name, me == p - 1 ? c.mine : c.others);
    garray::Context ctx;  // every value parses: no error here
    bool mismatch = false;
    try {
      A2 x(ctx, {6, 4});
    } catch (const garray::CollectiveMismatch&) {
      mismatch = true;
    }
    CHECK(all_ranks(mismatch));
    CHECK(all_ranks(ctx.stats().arrays_created == 0 && ctx.cache().windows_held() == 0));
    ctx.cache().set_depth(garray::WindowCache::default_depth);
    ctx.cache().set_byte_cap(garray::WindowCache::default_byte_cap);
    ctx.cache().set_window_cap(garray::WindowCache::default_window_cap);
    ctx.cache().set_idle_after(garray::WindowCache::default_idle_after);
    A2 y(ctx, {6, 4});
    y.fill(2.5);
    std::vector<double> got(24, 0.0);
    y.get(garray::idx[garray::all][garray::all], std::span<double>(got));
    CHECK(all_ranks(got == std::vector<double>(24, 2.5)));
  }
}

// A very large idle_after (set_idle_after or GARRAY_CACHE_IDLE, which accepts any uint64)
// means "practically never idle". The test `touched + idle_after < now` wrapped: with
// UINT64_MAX every key was idle after one create and the cache stopped caching (audit,
// stop 38). Expected as with 0: the {7,7} window survives three {9,9} creates and is hit.
namespace {
using AI2 = garray::GlobalArray<double, 2>;

void idle_forever_keeps_windows(garray::Context& ctx) {
  ctx.cache().clear();
  const auto ev0 = ctx.stats().cache_evictions;
  const auto hits0 = ctx.stats().cache_hits;
  { AI2 a(ctx, {7, 7}); }                          // key A pooled, touched by its destroy
  for (int i = 0; i < 3; ++i) AI2 b(ctx, {9, 9});  // three creates of another key
  CHECK(ctx.stats().cache_evictions == ev0);       // A is not idle after 3 creates of 2^64 - 1
  CHECK(ctx.cache().windows_held() == 2);
  { AI2 a(ctx, {7, 7}); }                          // A's window again
  CHECK(ctx.stats().cache_hits == hits0 + 2 + 1);  // 2 hits of {9,9}, then A's hit
  ctx.cache().clear();
}
}  // namespace

TEST_CASE("idle_after = UINT64_MAX behaves as 'never idle', not 'idle after one create'") {
  {
    garray::Context ctx;
    ctx.cache().set_idle_after(0);  // the reference: never idle
    idle_forever_keeps_windows(ctx);
  }
  {
    garray::Context ctx;
    ctx.cache().set_idle_after(std::numeric_limits<std::uint64_t>::max());
    CHECK(ctx.cache().idle_after() == std::numeric_limits<std::uint64_t>::max());
    idle_forever_keeps_windows(ctx);
  }
  {
    // The same value through the environment, which the parser accepts.
    const test::ScopedEnv idle("GARRAY_CACHE_IDLE",
                               std::to_string(std::numeric_limits<std::uint64_t>::max()).c_str());
    garray::Context ctx;
    CHECK(ctx.cache().idle_after() == std::numeric_limits<std::uint64_t>::max());
    idle_forever_keeps_windows(ctx);
  }
}

// semantics.md "Array cache", Key: "... and whether it is replicated". replicated() resolves
// to the block boundaries of grid({1,1}); only the replicated flag in Distribution's
// signature keeps their keys apart. Without it, p == 1 would share the window and p >= 2
// would plan a hit on rank 0 and a miss elsewhere (CollectiveMismatch on every rank).
TEST_CASE("a replicated array and a grid({1,1}) array with the same block boundaries never share a window") {
  using AR2 = garray::GlobalArray<double, 2>;
  garray::Context ctx;
  ctx.cache().clear();
  const garray::Shape<2> s{6, 5};
  const auto rep = garray::Distribution<2>::replicated();
  const auto one = garray::Distribution<2>::grid({1, 1});
  for (int order = 0; order < 2; ++order) {
    CAPTURE(order);
    const auto& first = order == 0 ? rep : one;
    const auto& second = order == 0 ? one : rep;
    {
      AR2 x(ctx, s, first);
      x.fill(7.0);
    }  // pooled (reusable) on every rank
    const auto hits = ctx.stats().cache_hits, misses = ctx.stats().cache_misses;
    std::string msg;
    bool zero = false;
    const test::Got g = test::outcome(
        [&] {
          AR2 y(ctx, s, second);
          const auto v = test::whole_array(y);
          zero = std::all_of(v.begin(), v.end(), [](double e) { return e == 0.0; });
        },
        &msg);
    CAPTURE(msg);
    CHECK(g == test::Got::nothing);  // not CollectiveMismatch (ranks deciding hit vs miss)
    CHECK(zero);
    CHECK(ctx.stats().cache_hits == hits);  // not the other distribution's window
    CHECK(ctx.stats().cache_misses == misses + 1);
    ctx.cache().clear();
  }
}

// semantics.md "Array cache", Limits rule 3: lowering a limit moves windows to pending at
// once; raising it again never revives them (only the seeded random model test met this).
TEST_CASE(
    "lowering a cache limit and raising it again leaves the window pending: the next create misses and frees "
    "it") {
  using AL2 = garray::GlobalArray<double, 2>;
  garray::Context ctx;
  auto& c = ctx.cache();
  const garray::Shape<2> s{8, 6};
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    c.clear();
    { AL2 a(ctx, s); }
    CHECK(c.windows_held() == 1);
    CHECK(c.windows_pending() == 0);
    if (which == 0) c.set_depth(0);
    if (which == 1) c.set_byte_cap(0);
    if (which == 2) c.set_window_cap(0);
    CHECK(c.windows_pending() == 1);  // lowered: pending at once
    c.set_depth(garray::WindowCache::default_depth);
    c.set_byte_cap(garray::WindowCache::default_byte_cap);
    c.set_window_cap(garray::WindowCache::default_window_cap);
    CHECK(c.windows_pending() == 1);  // raised again: still pending, not revived
    const auto st = ctx.stats();
    { AL2 a(ctx, s); }
    CHECK(ctx.stats().cache_hits == st.cache_hits);  // the pending window was not reused
    CHECK(ctx.stats().cache_misses == st.cache_misses + 1);
    CHECK(ctx.stats().windows_freed == st.windows_freed + 1);  // and this create freed it
    CHECK(c.windows_pending() == 0);
  }
  c.clear();
}

// A destroy whose completion fails (WindowCache::Impl::release; fault point cache.release)
// poisons the window on that rank only: its pool then differs from the others', and the next
// create on the context throws CollectiveMismatch on every rank, caught by the create's handshake
// before any window call (semantics.md "Why a reused window is safe", "Misuse is reported, not
// hung"), until ctx.cache().clear(). The create's mismatch message says that if every rank
// passed the same arguments the window caches differ, and names ctx.cache().clear(). Building
// that message communicates nothing: a create meeting another collective (sync() on the other
// ranks) throws everywhere and the next collective pairs up. (A regression test: the message
// named no repair; a version that asked the other ranks misaligned every later collective.)
#include <garray/runtime/fault.hpp>

#include "support/outcome.hpp"
#include "support/test_support.hpp"

using A2 = garray::GlobalArray<double, 2>;

TEST_CASE(
    "after a window poisoned on one rank, the next create's mismatch says the caches differ and how to "
    "repair") {
  garray::Context ctx;
  const int p = ctx.size();
  if (p < 2) return;
  ctx.cache().clear();
  const int victim = p - 1;
  { A2 warm(ctx, {12, 5}); }
  std::optional<A2> a(std::in_place, ctx, garray::Shape<2>{12, 5});
  if (ctx.rank() == victim) garray::testing::arm_fault("cache.release");
  a.reset();  // local: the victim's window is poisoned (pending), the others' reusable
  CHECK(!garray::testing::fault_armed());
  garray::testing::disarm_fault();
  std::string msg;
  const test::Got g = test::outcome([&] { A2 b(ctx, {12, 5}); }, &msg);
  CAPTURE(msg);
  CHECK(g == test::Got::mismatch);  // every rank, nobody hangs
  // The diagnosis names the caches and the repair:
  CHECK(msg.find("window caches differ") != std::string::npos);
  CHECK(msg.find("ctx.cache().clear()") != std::string::npos);
  ctx.cache().clear();  // the documented repair
  { A2 b(ctx, {12, 5}); }
  // A create on rank 0 meeting sync() on the others: every rank throws, nobody waits in a
  // collective of its own, and the next collective of the context pairs up.
  {
    A2 c(ctx, {12, 5});
    std::string msg3;
    const test::Got g3 = test::outcome(
        [&] {
          if (ctx.rank() == 0)
            A2 b(ctx, {12, 5});
          else
            c.sync();
        },
        &msg3);
    CAPTURE(msg3);
    CHECK(g3 == test::Got::mismatch);
    CHECK(ctx.agree(true));
    c.sync();
  }
  ctx.cache().clear();
  CHECK(ctx.stats().windows_allocated == ctx.stats().windows_freed);
  CHECK(ctx.stats().leaked_windows == 0);
}

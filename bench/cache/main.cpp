// bench_cache - what the array cache saves: window creation for temporaries.
//
// Part 1, create+destroy pairs of an N x N double array over all ranks (default 2000):
//   raw_mpi        MPI_Win_allocate(_shared) + lock_all + memset + unlock_all + MPI_Win_free
//                  by hand, the cost every uncached array pays
//   off            GlobalArray with the cache off (depth 0): allocate, zero, free
//   off_uninit     the same, created with garray::uninitialized (no zeroing pass)
//   hit            cache on, every create a hit: signature allreduce + zeroing + barrier
//   hit_uninit     cache on, garray::uninitialized: one allreduce, no window, no zeroing
//   allreduce      one MPI_Allreduce of two integers: the floor of any collective create
// Microseconds per pair (max over ranks per rep, median over reps); "x" = off / variant.
//
// Part 2, GAiN's table: the numpy-style Laplace step (scipy's PerformancePython laplace,
// the model of GAiN's laplace.py) for --iters iterations, at cache depths 0,1,2,3:
//   old_u = u.copy()
//   u[1:-1,1:-1] = ((u[0:-2,1:-1] + u[2:,1:-1])*dy2 + (u[1:-1,0:-2] + u[1:-1,2:])*dx2)*dnr_inv
//   err = sqrt(dot(u - old_u, u - old_u))
// where, as in numpy, every binary operation materialises a temporary GlobalArray (created
// uninitialised, filled owner-computes from one-sided get_section of its inputs, then
// synced) and temporaries die as soon as CPython would drop them. Reports windows
// allocated / freed, cache hits, allocations after the first iteration (steady state)
// and milliseconds per iteration. Bar: zero steady-state allocations at depth 3. The depths
// run --lap-reps times, interleaved round by round (depth 0, 1, 2, 3, then again), so that
// drift of the machine does not pass for an effect of the depth; ms/iter is the median over
// the rounds, the counts are the first round's. The final error must be the same, bitwise,
// at every depth and in every round (the same blocks and the same operations; only the
// windows differ) and match a serial loop on rank 0 (see check_laplace()); exit code 1
// otherwise.
//
// Part 3 (--shapes N, default 100000; 0 skips), issue 12: N create+destroy pairs of double
// arrays of ever new shapes (every create a miss), at the library's default cache settings
// (or --shapes-depth). --shape-kind bounded (default): 2-d shapes {a, b} with
// 12288 <= a*b < 24576, all distinct, in a fixed shuffled order, so the work per create
// (window size) does not drift; grow: 1-d shapes {i+1} (issue 12's loop; the window grows
// to 800 KB, and so does the MPI cost of creating it, with or without a cache). Times blocks
// every create+destroy pair (slowest rank) and reports microseconds per create in each tenth
// of the run: the median of the means of blocks of --block creates, and the median of single
// creates. Bar: the last --window creates cost at most 1.2x the first --window (median of
// block means).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <garray/array/global_array.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/stats.hpp>
#include <garray/runtime/window_cache.hpp>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"

namespace gb = garray::bench;
namespace po = boost::program_options;
using A = garray::GlobalArray<double, 2>;

using garray::Index;

namespace {

struct Options {
  Index n = 2000;
  int reps = 11;
  int hit_pairs = 2000;
  Index lap_n = 1000;
  int iters = 100;
  int lap_reps = 5;
  std::vector<int> depths{0, 1, 2, 3};
  bool zero_temps = false;
  bool pairs = true;
  bool laplace = true;
  long shapes = 100000;
  int shapes_depth = -1;
  std::string shape_kind = "bounded";
  int block = 10;
  int window = 1000;
  std::string csv;
};

// Part 3's bounded shapes: the 2-d shapes {a, b} with bounded_lo <= a*b < 2*bounded_lo.
constexpr Index bounded_lo = 12288;
long bounded_shape_count() {
  long n = 0;
  for (Index a = 1; a < 2 * bounded_lo; ++a) n += (2 * bounded_lo - 1) / a - (bounded_lo + a - 1) / a + 1;
  return n;
}

bool parse_options(int argc, char** argv, int rank, Options& o) {
  std::string depths = "0,1,2,3";
  po::options_description desc("bench_cache: array cache, create/destroy pairs and the numpy-style laplace\nOptions");
  desc.add_options()                                                                                     //
      ("help,h", "print this help")                                                                      //
      ("n", po::value<Index>(&o.n)->default_value(o.n), "pairs: array is n x n doubles over all ranks")  //
      ("reps,r", po::value<int>(&o.reps)->default_value(o.reps), "pairs: timed repetitions (median)")    //
      ("hit-pairs", po::value<int>(&o.hit_pairs)->default_value(o.hit_pairs),
       "pairs: create/destroy pairs per rep for hit_uninit (looped to be timeable)")                   //
      ("lap-n", po::value<Index>(&o.lap_n)->default_value(o.lap_n), "laplace: grid is lap-n x lap-n")  //
      ("iters", po::value<int>(&o.iters)->default_value(o.iters), "laplace: iterations per depth")     //
      ("lap-reps", po::value<int>(&o.lap_reps)->default_value(o.lap_reps),
       "laplace: rounds over the depths, interleaved (median ms/iter)")  //
      ("depths", po::value<std::string>(&depths)->default_value(depths),
       "laplace: cache depths, e.g. 0,1,2,3")  //
      ("zero-temps",
       "laplace: create temporaries zeroed (default: garray::uninitialized, like numpy.empty)")  //
      ("no-pairs", "skip part 1")                                                                //
      ("no-laplace", "skip part 2")                                                              //
      ("shapes", po::value<long>(&o.shapes)->default_value(o.shapes),
       "part 3: create+destroy pairs of distinct shapes (see --shape-kind; 0: skip)")  //
      ("shapes-depth", po::value<int>(&o.shapes_depth)->default_value(o.shapes_depth),
       "part 3: cache depth (-1: library default / GARRAY_CACHE_DEPTH)")  //
      ("shape-kind", po::value<std::string>(&o.shape_kind)->default_value(o.shape_kind),
       "part 3: bounded (distinct 2-d shapes of 12288..24575 elements, shuffled) or grow ({i+1})")    //
      ("block", po::value<int>(&o.block)->default_value(o.block), "part 3: creates per timed block")  //
      ("window", po::value<int>(&o.window)->default_value(o.window),
       "part 3: creates compared at the start and the end (median of their blocks)")  //
      ("csv", po::value<std::string>(&o.csv), "append rows part,variant,depth,value,unit to FILE");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help")) {
    if (rank == 0) std::cout << desc << '\n';
    return false;
  }
  o.zero_temps = vm.count("zero-temps") != 0;
  o.pairs = vm.count("no-pairs") == 0;
  o.laplace = vm.count("no-laplace") == 0;
  o.depths.clear();
  std::stringstream ss(depths);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) {
      std::size_t used = 0;
      int d = -1;
      try {
        d = std::stoi(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != t.size()) throw po::error("--depths: '" + t + "' is not a number");
      o.depths.push_back(d);
    }
  if (o.n < 1 || o.reps < 1 || o.hit_pairs < 1 || o.lap_n < 3 || o.iters < 1 || o.lap_reps < 1)
    throw po::error(
        "bad --n/--reps/--hit-pairs/--lap-n/--iters/--lap-reps (each at least 1, --lap-n at least 3)");
  if (o.depths.empty()) throw po::error("--depths: no depth given");
  for (int d : o.depths)
    if (d < 0) throw po::error("--depths: a depth is at least 0 (got " + std::to_string(d) + ")");
  if (o.shapes < 0 || o.block < 1 || o.window < o.block || (o.shapes > 0 && o.shapes < 2L * o.window))
    throw po::error("bad --shapes/--block/--window (need block <= window, shapes >= 2 window)");
  if (o.shape_kind != "bounded" && o.shape_kind != "grow") throw po::error("bad --shape-kind");
  if (o.shapes_depth < -1)
    throw po::error("--shapes-depth: at least 0, or -1 for the default (got " +
                    std::to_string(o.shapes_depth) + ")");
  if (o.shape_kind == "bounded" && o.shapes > bounded_shape_count())  // before parts 1 and 2 run
    throw po::error("--shapes: at most " + std::to_string(bounded_shape_count()) + " bounded shapes (got " +
                    std::to_string(o.shapes) + ")");
  return true;
}

double max_over_ranks(double v, MPI_Comm comm) {
  double m = 0;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

// Median over reps of the slowest rank's microseconds per pair; `pairs` pairs per rep.
template <class F>
double time_pairs(const garray::Context& ctx, int reps, int pairs, F&& pair) {
  pair();  // warm-up (and the one miss of the cached variants)
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    ctx.barrier();
    const gb::Timer t;
    for (int i = 0; i < pairs; ++i) pair();
    us.push_back(max_over_ranks(t.seconds() * 1e6 / pairs, ctx.comm()));
  }
  return gb::median(us);
}

// ---- part 1 ---------------------------------------------------------------------------------

void bench_pairs(const Options& o, gb::CsvWriter& csv) {
  garray::Context ctx;
  const int me = ctx.rank();
  const garray::Shape<2> shape{o.n, o.n};
  std::size_t my_bytes = 0;
  {
    A probe(ctx, shape);
    my_bytes = static_cast<std::size_t>(probe.layout_of(me).elements) * sizeof(double);
  }
  ctx.cache().clear();
  const bool shared = ctx.window_kind() == garray::WindowKind::shared;
  auto raw = [&] {
    MPI_Win w;
    void* base = nullptr;
    if (shared) MPI_Win_allocate_shared(static_cast<MPI_Aint>(my_bytes), 1, MPI_INFO_NULL, ctx.comm(), &base, &w);
    else MPI_Win_allocate(static_cast<MPI_Aint>(my_bytes), 1, MPI_INFO_NULL, ctx.comm(), &base, &w);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, w);
    std::memset(base, 0, my_bytes);
    MPI_Win_sync(w);
    MPI_Barrier(ctx.comm());
    MPI_Win_unlock_all(w);
    MPI_Win_free(&w);
  };
  const int slow_reps = o.reps;
  struct Row {
    const char* name;
    double us;
  };
  std::vector<Row> rows;
  rows.push_back({"raw_mpi", time_pairs(ctx, slow_reps, 1, raw)});
  ctx.cache().set_depth(0);
  rows.push_back({"off", time_pairs(ctx, slow_reps, 1, [&] { A a(ctx, shape); })});
  rows.push_back({"off_uninit", time_pairs(ctx, slow_reps, 1, [&] {
                    A a(ctx, shape, garray::Distribution<2>::blocked(), {}, garray::uninitialized);
                  })});
  ctx.cache().set_depth(3);
  rows.push_back({"hit", time_pairs(ctx, slow_reps, 4, [&] { A a(ctx, shape); })});
  const auto before = ctx.stats();
  rows.push_back({"hit_uninit", time_pairs(ctx, o.reps, o.hit_pairs, [&] {
                    A a(ctx, shape, garray::Distribution<2>::blocked(), {}, garray::uninitialized);
                  })});
  const auto after = ctx.stats();  // a copy: the allreduce pairs below must not count
  std::uint64_t in[2] = {1, 2}, out[2];
  rows.push_back({"allreduce", time_pairs(ctx, o.reps, o.hit_pairs, [&] {
                    MPI_Allreduce(in, out, 2, MPI_UINT64_T, MPI_MAX, ctx.comm());
                  })});
  const bool all_hits = after.windows_allocated == before.windows_allocated;
  if (me == 0) {
    std::printf("\n## create+destroy pair, %lld x %lld doubles over %d ranks (%s windows, %s per rank)\n",
                static_cast<long long>(o.n), static_cast<long long>(o.n), ctx.size(), shared ? "shared" : "rma",
                gb::format_bytes(my_bytes).c_str());
    std::printf("%-12s %14s %10s\n", "variant", "us/pair", "x(off)");
    const double off = rows[1].us;
    for (const auto& r : rows) {
      std::printf("%-12s %14.2f %10.1f\n", r.name, r.us, off / r.us);
      csv.row("pair", r.name, "", r.us, "us");
    }
    std::printf("hit_uninit windows allocated during the timed pairs: %lld (%s)\n",
                static_cast<long long>(after.windows_allocated - before.windows_allocated),
                all_hits ? "all hits" : "NOT all hits");
    std::printf("bar: cache-hit pair <= 2 us: %s (hit_uninit %.2f us)\n", rows[4].us <= 2.0 ? "met" : "NOT met",
                rows[4].us);
  }
}

// ---- part 2: numpy-style laplace with real temporaries ------------------------------------

// A 2-d operand: an array and a canonical section of it (a numpy view).
struct Operand {
  const A* a;
  garray::Section<2> sec;
};
Operand whole(const A& a) { return {&a, garray::Section<2>::full(a.shape())}; }
// a[r0:r1, c0:c1]
Operand view(const A& a, Index r0, Index r1, Index c0, Index c1) {
  Operand x = whole(a);
  x.sec.start = {r0, c0};
  x.sec.count = {r1 - r0, c1 - c0};
  return x;
}
// The part `b` (in the operand's own coordinates) of an operand, fetched one-sidedly.
void fetch(const Operand& x, const garray::Box<2>& b, std::vector<double>& buf) {
  garray::Section<2> s = x.sec;
  for (std::size_t d = 0; d < 2; ++d) {
    s.start[d] = x.sec.start[d] + b.lo[d] * x.sec.step[d];
    s.count[d] = b.hi[d] - b.lo[d];
  }
  buf.resize(static_cast<std::size_t>(s.size()));
  x.a->get_section(s, std::span<double>(buf));
}

struct Temps {
  garray::Context ctx;
  bool zero;
  std::vector<double> bx, by;
  A make(const garray::Shape<2>& shape) {
    if (zero) return A(ctx, shape);
    return A(ctx, shape, garray::Distribution<2>::blocked(), {}, garray::uninitialized);
  }
  // t = f(x, y) elementwise: a new array, owner-computes, synced.
  template <class F>
  A binop(const Operand& x, const Operand& y, F f) {
    A t = make(x.sec.count);
    const auto box = t.local_box();
    if (!box.empty()) {
      fetch(x, box, bx);
      fetch(y, box, by);
      auto blk = t.access();
      double* out = blk.data();
      for (std::size_t i = 0; i < bx.size(); ++i) out[i] = f(bx[i], by[i]);
    }
    t.sync();
    return t;
  }
  // t = x * s
  A scale(const Operand& x, double s) {
    A t = make(x.sec.count);
    const auto box = t.local_box();
    if (!box.empty()) {
      fetch(x, box, bx);
      auto blk = t.access();
      double* out = blk.data();
      for (std::size_t i = 0; i < bx.size(); ++i) out[i] = bx[i] * s;
    }
    t.sync();
    return t;
  }
  // a.copy()
  A copy(const A& a) {
    A t = make(a.shape());
    const auto box = t.local_box();
    if (!box.empty()) {
      fetch(whole(a), box, bx);
      auto blk = t.access();
      std::copy(bx.begin(), bx.end(), blk.data());
    }
    t.sync();
    return t;
  }
};

// u[1:-1,1:-1] = t (t has shape (n-2, n-2)); owner-computes on u.
void assign_interior(A& u, const A& t) {
  const Index n = u.shape()[0], m = u.shape()[1];
  const auto box = garray::intersect(u.local_box(), garray::Box<2>{{1, 1}, {n - 1, m - 1}});
  if (!box.empty()) {
    std::vector<double> buf;
    fetch(whole(t), garray::Box<2>{{box.lo[0] - 1, box.lo[1] - 1}, {box.hi[0] - 1, box.hi[1] - 1}}, buf);
    auto blk = u.access();
    auto& v = blk.view();
    std::size_t k = 0;
    for (Index i = box.lo[0]; i < box.hi[0]; ++i)
      for (Index j = box.lo[1]; j < box.hi[1]; ++j) v[i][j] = buf[k++];
  }
  u.sync();
}

double dot_self(const A& d) {
  double s = 0;
  auto blk = const_cast<A&>(d).access();
  const auto n = d.local_box().volume();
  for (Index i = 0; i < n; ++i) s += blk.data()[i] * blk.data()[i];
  double all = 0;
  MPI_Allreduce(&s, &all, 1, MPI_DOUBLE, MPI_SUM, d.context().comm());
  return all;
}

struct LapResult {
  int depth;
  garray::Stats total, after_first;
  double ms_per_iter;
  double err;
};

LapResult run_laplace(const Options& o, int depth) {
  garray::Context ctx;
  ctx.cache().set_depth(depth);
  const Index n = o.lap_n;
  const double dx = 1.0 / static_cast<double>(n - 1), dy = dx;
  const double dx2 = dx * dx, dy2 = dy * dy, dnr_inv = 0.5 / (dx2 + dy2);
  Temps tm{ctx, o.zero_temps, {}, {}};
  A u(ctx, {n, n});
  {  // boundary: u[0, :] = 1
    const auto box = u.local_box();
    if (!box.empty() && box.lo[0] == 0) {
      auto blk = u.access();
      for (Index j = box.lo[1]; j < box.hi[1]; ++j) blk.view()[0][j] = 1.0;
    }
    u.sync();
  }
  std::optional<A> old_u;
  LapResult res{depth, {}, {}, 0, 0};
  ctx.barrier();
  const gb::Timer t;
  for (int it = 0; it < o.iters; ++it) {
    old_u = tm.copy(u);  // the new copy exists before the previous one dies, as in Python
    {
      auto plus = [](double a, double b) { return a + b; };
      std::optional<A> t1(tm.binop(view(u, 0, n - 2, 1, n - 1), view(u, 2, n, 1, n - 1), plus));
      std::optional<A> t2(tm.scale(whole(*t1), dy2));
      t1.reset();
      std::optional<A> t3(tm.binop(view(u, 1, n - 1, 0, n - 2), view(u, 1, n - 1, 2, n), plus));
      std::optional<A> t4(tm.scale(whole(*t3), dx2));
      t3.reset();
      std::optional<A> t5(tm.binop(whole(*t2), whole(*t4), plus));
      t2.reset();
      t4.reset();
      std::optional<A> t6(tm.scale(whole(*t5), dnr_inv));
      t5.reset();
      assign_interior(u, *t6);
    }
    {
      A diff = tm.binop(whole(u), whole(*old_u), [](double a, double b) { return a - b; });
      res.err = std::sqrt(dot_self(diff));
    }
    if (it == 0) res.after_first = ctx.stats();
  }
  res.ms_per_iter = max_over_ranks(t.seconds() * 1e3 / o.iters, ctx.comm());
  res.total = ctx.stats();
  return res;
}

// The same steps on one std::vector pair (rank 0), element by element the same operations
// as the temporaries compute (so u is the same bitwise); returns the last error.
double serial_laplace(const Options& o) {
  const Index n = o.lap_n;
  const double dx = 1.0 / static_cast<double>(n - 1), dy = dx;
  const double dx2 = dx * dx, dy2 = dy * dy, dnr_inv = 0.5 / (dx2 + dy2);
  const auto at = [n](Index i, Index j) { return static_cast<std::size_t>(i * n + j); };
  std::vector<double> u(static_cast<std::size_t>(n * n), 0.0);
  for (Index j = 0; j < n; ++j) u[at(0, j)] = 1.0;
  std::vector<double> old = u;
  double err = 0;
  for (int it = 0; it < o.iters; ++it) {
    old = u;
    for (Index i = 1; i < n - 1; ++i)
      for (Index j = 1; j < n - 1; ++j) {
        const double t2 = (old[at(i - 1, j)] + old[at(i + 1, j)]) * dy2;
        const double t4 = (old[at(i, j - 1)] + old[at(i, j + 1)]) * dx2;
        u[at(i, j)] = (t2 + t4) * dnr_inv;
      }
    double s = 0;
    for (std::size_t k = 0; k < u.size(); ++k) s += (u[k] - old[k]) * (u[k] - old[k]);
    err = std::sqrt(s);
  }
  return err;
}

// Rank 0. Every round's error at every depth: the same bitwise as the first (nothing but the
// windows changes between them), and within rounding of the serial loop's. The fields are the
// same bitwise; only the sum of the n*n squared changes runs in another order (per rank, then
// an allreduce), each order within (n*n - 1) * eps / 2 relative of the exact sum (the terms
// are >= 0), so the errors differ by at most n*n * eps relative (the sqrt halves it).
bool check_laplace(const Options& o, const std::vector<std::vector<LapResult>>& rounds, double serial_err) {
  bool ok = true;
  const double e0 = rounds.front().front().err;
  for (std::size_t r = 0; r < rounds.size(); ++r)
    for (const auto& x : rounds[r])
      if (ok && !(x.err == e0)) {
        gb::report_failure("bench_cache", "laplace at depth " + std::to_string(x.depth),
                           "error " + std::to_string(x.err) + " in round " + std::to_string(r) +
                               ", not the first depth's " + std::to_string(e0) + " (bitwise)");
        ok = false;
      }
  const double n2 = static_cast<double>(o.lap_n) * static_cast<double>(o.lap_n);
  const double tol = n2 * std::numeric_limits<double>::epsilon() * serial_err;
  if (!(std::abs(e0 - serial_err) <= tol)) {
    gb::report_failure("bench_cache", "laplace",
                       "error " + std::to_string(e0) + ", the serial loop's " + std::to_string(serial_err) +
                           " (tolerance " + std::to_string(tol) + ")");
    ok = false;
  }
  return ok;
}

// Returns false (on every rank) when a check failed.
bool bench_laplace(const Options& o, gb::CsvWriter& csv) {
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::vector<std::vector<LapResult>> rounds(static_cast<std::size_t>(o.lap_reps));
  for (auto& round : rounds)
    for (int d : o.depths) round.push_back(run_laplace(o, d));
  const std::vector<LapResult>& rs = rounds.front();  // the counts: the first round's
  std::vector<double> ms(rs.size());
  for (std::size_t k = 0; k < rs.size(); ++k) {
    std::vector<double> per_round;
    for (const auto& round : rounds) per_round.push_back(round[k].ms_per_iter);
    ms[k] = gb::median(per_round);
  }
  const bool ok = gb::all_ranks_ok(MPI_COMM_WORLD, me != 0 || check_laplace(o, rounds, serial_laplace(o)));
  if (me != 0) return ok;
  // GAiN's laplace.py, 100 iterations (Daily et al., GAiN paper, array cache table).
  auto gain = [](int d) -> const char* {
    switch (d) {
      case 0: return "912 / 910";
      case 1: return "311 / 306";
      case 2: return "110 / 102";
      case 3: return "11 / 1";
      default: return "-";
    }
  };
  std::printf("\n## numpy-style laplace, %lld x %lld, %d iterations, %d ranks, temporaries %s\n",
              static_cast<long long>(o.lap_n), static_cast<long long>(o.lap_n), o.iters, p,
              o.zero_temps ? "zeroed" : "uninitialized");
  std::printf("%-6s %10s %10s %10s %10s %12s %14s %10s %12s\n", "depth", "arrays", "win_alloc", "win_freed",
              "hits", "evictions", "steady_allocs", "ms/iter", "GAiN c/d");
  for (std::size_t k = 0; k < rs.size(); ++k) {
    const LapResult& r = rs[k];
    const long long steady = r.total.windows_allocated - r.after_first.windows_allocated;
    std::printf("%-6d %10lld %10lld %10lld %10lld %12lld %14lld %10.2f %12s\n", r.depth,
                static_cast<long long>(r.total.arrays_created),
                static_cast<long long>(r.total.windows_allocated),
                static_cast<long long>(r.total.windows_freed), static_cast<long long>(r.total.cache_hits),
                static_cast<long long>(r.total.cache_evictions), steady, ms[k], gain(r.depth));
    const std::string d = std::to_string(r.depth);
    csv.row("laplace", "windows_allocated", d, r.total.windows_allocated, "count");
    csv.row("laplace", "windows_freed", d, r.total.windows_freed, "count");
    csv.row("laplace", "steady_allocs", d, steady, "count");
    csv.row("laplace", "ms_per_iter", d, ms[k], "ms");
  }
  std::printf(
      "ms/iter: median of %d rounds over the depths; final error %.6e, identical at every depth and "
      "round, and as the serial loop's: %s\n",
      o.lap_reps, rs.front().err, ok ? "yes" : "NO");
  for (const auto& r : rs)
    if (r.depth == 3)
      std::printf("bar: zero steady-state window allocations at depth 3: %s\n",
                  r.total.windows_allocated == r.after_first.windows_allocated ? "met" : "NOT met");
  return ok;
}

// ---- part 3: distinct shapes (issue 12) -------------------------------------------------------

// Distinct 2-d shapes {a, b} with lo <= a*b < 2*lo, in an order fixed by a seed (the same
// on every rank), so sizes are spread alike over the run.
std::vector<garray::Shape<2>> bounded_shapes(long n) {
  std::vector<garray::Shape<2>> v;
  for (Index a = 1; a < 2 * bounded_lo; ++a)
    for (Index b = (bounded_lo + a - 1) / a; a * b < 2 * bounded_lo; ++b) v.push_back({a, b});
  if (static_cast<long>(v.size()) < n)  // parse_options() refused that already
    throw std::invalid_argument("--shapes: at most " + std::to_string(v.size()) + " bounded shapes");
  std::mt19937_64 rng(12);
  std::shuffle(v.begin(), v.end(), rng);
  v.resize(static_cast<std::size_t>(n));
  return v;
}

void bench_shapes(const Options& o, gb::CsvWriter& csv) {
  using V = garray::GlobalArray<double, 1>;
  using M = garray::GlobalArray<double, 2>;
  garray::Context ctx;
  if (o.shapes_depth >= 0) ctx.cache().set_depth(o.shapes_depth);
  const bool grow = o.shape_kind == "grow";
  const auto shapes = grow ? std::vector<garray::Shape<2>>{} : bounded_shapes(o.shapes);
  const long nblocks = o.shapes / o.block;
  const long n = nblocks * o.block;
  std::vector<double> us(static_cast<std::size_t>(n));  // each create+destroy pair
  std::size_t max_held = 0;
  ctx.barrier();
  const gb::Timer total;
  for (long i = 0; i < n; ++i) {
    const gb::Timer t;
    if (grow) {
      V a(ctx, {static_cast<Index>(i + 1)});
    } else {
      M a(ctx, shapes[static_cast<std::size_t>(i)]);
    }
    us[static_cast<std::size_t>(i)] = t.seconds() * 1e6;
    max_held = std::max(max_held, ctx.cache().windows_held());
  }
  const double seconds = max_over_ranks(total.seconds(), ctx.comm());
  // The slowest rank per create (one allreduce at the end, none in the timed loop).
  MPI_Allreduce(MPI_IN_PLACE, us.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MAX, ctx.comm());
  if (ctx.rank() != 0) return;
  std::vector<double> blocks(static_cast<std::size_t>(nblocks));
  for (long b = 0; b < nblocks; ++b) {
    double sum = 0;
    for (long i = b * o.block; i < (b + 1) * o.block; ++i) sum += us[static_cast<std::size_t>(i)];
    blocks[static_cast<std::size_t>(b)] = sum / static_cast<double>(o.block);
  }
  // Over creates [from, from + count): the median of the block means, and of single creates.
  auto block_median = [&](long from, long count) {
    return gb::median(std::vector<double>(blocks.begin() + from / o.block, blocks.begin() + (from + count) / o.block));
  };
  auto create_median = [&](long from, long count) {
    return gb::median(std::vector<double>(us.begin() + from, us.begin() + from + count));
  };
  const auto& st = ctx.stats();
  std::printf("\n## %ld create+destroy pairs of distinct shapes (%s), %d ranks, %s\n", n,
              grow ? "1-d {i+1}" : "2-d {a, b}, 12288 <= a*b < 24576, shuffled", ctx.size(),
              ctx.cache().describe().c_str());
  std::printf("us per create (slowest rank): median of the means of blocks of %d creates, median of creates\n",
              o.block);
  std::printf("%-22s %14s %14s\n", "creates", "blocks", "creates");
  const long tenth = std::max(1L, nblocks / 10) * o.block;
  for (long i = 0; i + tenth <= n; i += tenth)
    std::printf("%9ld - %-10ld %14.1f %14.1f\n", i, i + tenth, block_median(i, tenth), create_median(i, tenth));
  const long w = o.window / o.block * o.block;
  const double first = block_median(0, w), last = block_median(n - w, w);
  const double first_c = create_median(0, w), last_c = create_median(n - w, w);
  std::printf("total %.1f s; windows allocated %lld, hits %lld, evictions %lld, most windows held %zu\n", seconds,
              static_cast<long long>(st.windows_allocated), static_cast<long long>(st.cache_hits),
              static_cast<long long>(st.cache_evictions), max_held);
  std::printf("first %ld creates %.1f us/create, last %ld %.1f: ratio %.2f (medians of creates: %.1f, %.1f, %.2f)\n",
              w, first, w, last, last / first, first_c, last_c, last_c / first_c);
  std::printf("bar: last %ld creates <= 1.2x the first %ld: %s\n", w, w, last <= 1.2 * first ? "met" : "NOT met");
  csv.row("shapes", "first_us", "", first, "us");
  csv.row("shapes", "last_us", "", last, "us");
  csv.row("shapes", "ratio", "", last / first, "x");
  csv.row("shapes", "max_held", "", static_cast<double>(max_held), "count");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    Options o;
    bool run = false;
    try {
      run = parse_options(argc, argv, rank, o);
    } catch (const std::exception& e) {  // every rank parses the same command line
      std::fprintf(stderr, "bench_cache: %s (see --help)\n", e.what());
      MPI_Finalize();
      return 2;
    }
    if (run) {
      if (rank == 0) {
        gb::print_run_info(std::cout, "bench_cache", size);
        std::cout.flush();
      }
      // (collective: a file rank 0 cannot use ends every rank here, none waits for it)
      auto csv = gb::open_csv(MPI_COMM_WORLD, o.csv, "part,variant,depth,value,unit", "bench_cache");
      if (!csv) rc = 1;
      if (csv && o.pairs) bench_pairs(o, *csv);
      if (csv && o.laplace && !bench_laplace(o, *csv)) rc = 1;
      if (csv && o.shapes > 0) bench_shapes(o, *csv);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cache [rank %d]: %s\n", rank, e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}

// Promises of docs/semantics.md that no other test could catch breaking:
//
// 1. Completion of atomic operations without fence() or sync() ("Atomicity": "Accumulates
//    are complete (locally and remotely) on return on shared windows, locally on rma and
//    mixed windows"; the table: read_inc's "fetch-and-add is done at the owner"; replicated
//    arrays: "A nonblocking write to a replicated array is therefore complete when it
//    returns"), and local completion with visibility after the writer's fence() plus a
//    barrier (the table's "`in` may be reused", visibility rules 2 and 4). The ranks synchronise
//    only by a plain MPI_Barrier on ctx.comm(): no garray collective completes anything.
// 2. "Slicing a view composes ... and no data moves until a get/put": making, composing and
//    querying views (a different number on every rank) changes no counter of garray::Stats;
//    one get, put or accumulate through a view then moves exactly its selection (one piece
//    per owner holding selected elements, its bytes, MPI calls by the window kind as
//    "Windows and data paths" says).
// 3. The window kind GARRAY_WINDOW asks for (unset, auto, shared, rma, mixed) changes no
//    result: one random sequence of every one-sided operation run on a context of each kind,
//    compared bitwise with a serial reference and across the kinds; `auto` and `shared` on
//    one node are the same request.
// 4. Location consistency (Visibility rules 3): one rank's writes to the same elements land
//    in the order it issued them, on every window kind, and the flushes that make it so
//    happen exactly where a write overlaps an earlier one still in flight.
//
// Every rank draws the same random numbers where it matters (shared seed), so each can
// apply every rank's operations to its reference and execute only its own.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

using garray::_;
using garray::all;
using garray::idx;
using garray::Index;
using garray::range;
using garray::Shape;

namespace {

/// What rank r adds to element i in round `round`: positive, different per rank and round.
Index contribution(int r, int round, Index i) { return (r + 1) * 100 + round * 7 + i % 5; }

}  // namespace

// ---- 1. completion without fence() or sync() ----------------------------------------------

TEST_CASE(
    "shared windows: accumulate, scatter_acc, acc_nb (at wait) and read_inc are complete at the owner on "
    "return: "
    "after a plain MPI_Barrier, no fence() or sync(), the owner's block and every rank's get hold every "
    "contribution") {
  // semantics.md, Atomicity: "Accumulates are complete (locally and remotely) on return on
  // shared windows, locally on rma and mixed windows." Fails if a shared-window accumulate
  // were deferred (batched, left to fence()/sync()) or done outside the target's memory.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const Index n = 5 * p + 3;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {n}, test::last_rank_owns_nothing(n, p));
  if (a.window_kind() != garray::WindowKind::shared) {
    MESSAGE("window kind "
            << garray::to_string(a.window_kind())
            << ": skipped (semantics.md, Atomicity: accumulates are remotely complete on return on "
               "shared windows only, on rma and mixed windows only locally)");
    return;
  }
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::int64_t> want(un, 0);
  bool ok = true;
  for (int round = 0; round < 10; ++round) {
    const int kind = round % 5;
    INFO("round " << round
                  << " (0 accumulate, 1 reversed accumulate alpha 3, 2 scatter_acc, 3 acc_nb, 4 read_inc): "
                  << kind);
    std::vector<std::int64_t> mine(un);
    for (Index i = 0; i < n; ++i) mine[static_cast<std::size_t>(i)] = contribution(me, round, i);
    switch (kind) {
      case 0:
        a.accumulate(idx[all], std::span<const std::int64_t>(mine));
        break;
      case 1: {  // element i receives 3 * rev[n - 1 - i] = 3 * mine[i]
        const std::vector<std::int64_t> rev(mine.rbegin(), mine.rend());
        a.accumulate(idx[range(_, _, -1)], std::span<const std::int64_t>(rev), std::int64_t{3});
        break;
      }
      case 2: {  // every index twice (repeats all add), in reverse order
        std::vector<Shape<1>> list;
        std::vector<std::int64_t> vals;
        for (Index i = n - 1; i >= 0; --i) {
          list.push_back({i});
          vals.push_back(mine[static_cast<std::size_t>(i)] - 1);
          list.push_back({i});
          vals.push_back(1);
        }
        a.scatter_acc(list, vals);
        break;
      }
      case 3: {
        auto r = a.acc_nb(idx[all], std::span<const std::int64_t>(mine));
        r.wait();  // "Request::wait() gives the blocking call's guarantee"
        break;
      }
      default:
        for (Index k = 0; k < n; ++k) {
          const Index i = (k + me) % n;  // ranks start at different elements
          (void)a.read_inc({i}, mine[static_cast<std::size_t>(i)]);
        }
    }
    const std::int64_t factor = kind == 1 ? 3 : 1;
    for (int r = 0; r < p; ++r)
      for (Index i = 0; i < n; ++i) want[static_cast<std::size_t>(i)] += factor * contribution(r, round, i);
    MPI_Barrier(ctx.comm());  // orders the ranks only: no fence(), no sync(), no garray call
    {
      auto blk = a.access();  // the owner's loads
      for (Index i = blk.lo(0); i < blk.hi(0); ++i)
        ok = ok && blk.view()[i] == want[static_cast<std::size_t>(i)];
    }
    std::vector<std::int64_t> got(un, -1);
    a.get(idx[all], std::span<std::int64_t>(got));  // every rank's loads of every block
    ok = ok && got == want;
    MPI_Barrier(ctx.comm());  // every rank has read before anyone adds again
  }
  CHECK(test::all_ranks(ok, ctx.comm()));
  a.sync();
}

TEST_CASE_TEMPLATE(
    "read_inc is done at the owner on return on every window kind: after a plain MPI_Barrier the owner's "
    "block and "
    "every rank's read_inc(i, 0) see every increment, and each returned old value is a possible one",
    T, std::int32_t, std::int64_t) {
  // semantics.md, the table: "read_inc(index, inc) | one-sided | the atomic fetch-and-add is
  // done at the owner; the old value is returned" (no window kind excepted), and Mutexes:
  // "read_inc(i, 0) is an atomic read". Fails if a fetch-and-add were only locally complete
  // (an MPI_Fetch_and_op without its flush) or returned a value it never saw.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const Index n = 3 * p + 2;
  garray::GlobalArray<T, 1> a(ctx, {n}, test::last_rank_owns_nothing(n, p));
  INFO("window kind " << garray::to_string(a.window_kind()));
  std::vector<std::int64_t> want(static_cast<std::size_t>(n), 0);
  bool ok = true, olds_ok = true;
  for (int round = 0; round < 6; ++round) {
    INFO("round " << round);
    const std::vector<std::int64_t> before = want;
    for (Index i = 0; i < n; ++i)
      for (int r = 0; r < p; ++r) want[static_cast<std::size_t>(i)] += contribution(r, round, i);
    for (Index k = 0; k < n; ++k) {
      const Index i = (k + 2 * me) % n;
      const auto u = static_cast<std::size_t>(i);
      const std::int64_t inc = contribution(me, round, i);
      const auto old = static_cast<std::int64_t>(a.read_inc({i}, static_cast<T>(inc)));
      // what the element held before this round plus some other ranks' increments of it
      olds_ok = olds_ok && old >= before[u] && old <= want[u] - inc;
    }
    MPI_Barrier(ctx.comm());
    {
      auto blk = a.access();
      for (Index i = blk.lo(0); i < blk.hi(0); ++i)
        ok = ok && static_cast<std::int64_t>(blk.view()[i]) == want[static_cast<std::size_t>(i)];
    }
    MPI_Barrier(ctx.comm());  // the owners' loads before anyone's read_inc(i, 0)
    for (Index i = 0; i < n; ++i)
      ok = ok && static_cast<std::int64_t>(a.read_inc({i}, T{0})) == want[static_cast<std::size_t>(i)];
    MPI_Barrier(ctx.comm());
  }
  CHECK(test::all_ranks(ok, ctx.comm()));
  CHECK(test::all_ranks(olds_ok, ctx.comm()));
  a.sync();
}

TEST_CASE(
    "a put, the writer's fence() and a barrier, then another rank's accumulate to the same elements (and the "
    "reverse order): the second write sees the first, as after a sync()") {
  // semantics.md, visibility rule 4: put and accumulate to one element need a sync() in
  // between, or "the first writer's fence() plus any synchronisation that orders it before
  // the second write (e.g. a barrier)". Fails if fence() left the first write incomplete at
  // its target (the second would land first, or be overwritten by it).
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const Index n = 20000 * p + 7;  // large pieces: RMA puts that take a while to land
  garray::GlobalArray<std::int64_t, 1> a(ctx, {n}, test::last_rank_owns_nothing(n, p));
  INFO("window kind " << garray::to_string(a.window_kind()));
  const auto un = static_cast<std::size_t>(n);
  // Rank r puts elements i with i % p == r (value put_value), every rank accumulates
  // contribution(r, round, i) to every element.
  const auto put_value = [](int round, Index i) { return std::int64_t{1000000} * (round + 1) + i; };
  bool ok = true;
  for (int round = 0; round < 6; ++round) {
    const bool put_first = round % 2 == 0;
    INFO("round " << round << (put_first ? ": put, then accumulate" : ": accumulate, then put"));
    std::vector<std::int64_t> vals;
    for (Index i = me; i < n; i += p) vals.push_back(put_value(round, i));
    std::vector<std::int64_t> mine(un);
    for (Index i = 0; i < n; ++i) mine[static_cast<std::size_t>(i)] = contribution(me, round, i);
    const auto put = [&] { a.put(idx[range(me, n, p)], std::span<const std::int64_t>(vals)); };
    const auto acc = [&] { a.accumulate(idx[all], std::span<const std::int64_t>(mine)); };
    if (put_first) put(); else acc();
    a.fence();
    MPI_Barrier(ctx.comm());  // the writers' fence() ordered before the second writes
    if (put_first) acc(); else put();
    a.fence();
    MPI_Barrier(ctx.comm());
    std::vector<std::int64_t> got(un, -1);
    a.get(idx[all], std::span<std::int64_t>(got));
    for (Index i = 0; i < n; ++i) {
      std::int64_t want = put_value(round, i);
      if (put_first)
        for (int r = 0; r < p; ++r) want += contribution(r, round, i);
      ok = ok && got[static_cast<std::size_t>(i)] == want;
    }
    MPI_Barrier(ctx.comm());  // every rank has read before the next round writes
  }
  CHECK(test::all_ranks(ok, ctx.comm()));
  a.sync();
}

TEST_CASE(
    "a write to a replicated array is complete at every copy when it returns, acc_nb unwaited too, on every "
    "window "
    "kind: after a plain MPI_Barrier every rank's own copy holds every rank's writes") {
  // semantics.md, Replicated arrays: every write "holds the array's replica lock from before
  // its first copy is touched until it is complete at every copy ... A nonblocking write to
  // a replicated array is therefore complete when it returns." Fails if a copy were updated
  // later (at fence()/sync()/wait()) or only locally completed.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  constexpr Index n = 6;  // [0, n) accumulated by everyone; [n, 2n): element n + j put by rank j % p
  garray::GlobalArray<std::int64_t, 1> a(ctx, {2 * n}, garray::Distribution<1>::replicated());
  INFO("window kind " << garray::to_string(a.window_kind()));
  std::vector<std::int64_t> want(2 * n, 0);
  std::vector<garray::Request> pending;         // unwaited acc_nb
  std::vector<std::vector<std::int64_t>> keep;  // their buffers, untouched until wait()
  keep.reserve(16);
  bool ok = true;
  for (int round = 0; round < 10; ++round) {
    const int kind = round % 5;
    INFO("round " << round << " (0 accumulate alpha 2, 1 scatter_acc, 2 read_inc, 3 acc_nb unwaited, 4 put): "
                  << kind);
    std::vector<std::int64_t> mine(n);
    for (Index i = 0; i < n; ++i) mine[static_cast<std::size_t>(i)] = contribution(me, round, i);
    std::int64_t factor = 1;
    switch (kind) {
      case 0:
        a.accumulate(idx[range(0, n)], std::span<const std::int64_t>(mine), std::int64_t{2});
        factor = 2;
        break;
      case 1: {
        std::vector<Shape<1>> list;
        std::vector<std::int64_t> vals;
        for (Index i = 0; i < n; ++i) {
          list.push_back({i});
          vals.push_back(mine[static_cast<std::size_t>(i)] - 3);
          list.push_back({i - 2 * n});  // the same element, counted from the end
          vals.push_back(3);
        }
        a.scatter_acc(list, vals);
        break;
      }
      case 2:
        for (Index i = 0; i < n; ++i)
          (void)a.read_inc({(i + me) % n}, mine[static_cast<std::size_t>((i + me) % n)]);
        break;
      case 3:
        keep.push_back(mine);
        pending.push_back(a.acc_nb(idx[range(0, n)], std::span<const std::int64_t>(keep.back())));
        break;
      default: {
        std::vector<std::int64_t> vals;
        for (Index j = me; j < n; j += p) vals.push_back(1000 * round + j + 1);
        a.put(idx[range(n + me, 2 * n, p)], std::span<const std::int64_t>(vals));
      }
    }
    if (kind == 4) {
      for (Index j = 0; j < n; ++j) want[static_cast<std::size_t>(n + j)] = 1000 * round + j + 1;
    } else {
      for (int r = 0; r < p; ++r)
        for (Index i = 0; i < n; ++i) want[static_cast<std::size_t>(i)] += factor * contribution(r, round, i);
    }
    MPI_Barrier(ctx.comm());  // no fence(), no sync(), no wait()
    {
      auto blk = a.access();  // this rank's own copy
      for (Index i = 0; i < 2 * n; ++i) ok = ok && blk.view()[i] == want[static_cast<std::size_t>(i)];
    }
    MPI_Barrier(ctx.comm());
  }
  for (auto& r : pending) r.wait();
  CHECK(test::all_ranks(ok, ctx.comm()));
  a.sync();
}

TEST_CASE(
    "put, accumulate, acc_nb and scatter_acc are locally complete on return on every window kind (the buffer "
    "is "
    "overwritten at once), and the writer's fence() plus a barrier make them visible to every rank") {
  // semantics.md, the table: put / accumulate: "`in` may be reused (local completion)";
  // scatter / scatter_acc "as put / accumulate"; acc_nb at wait() "the blocking call's
  // guarantee". Visibility rule 2: "Other ranks' writes become visible to a reader after a
  // sync() (or after the writer's fence() plus any synchronisation that orders it before
  // the read, e.g. a barrier)". Fails if a buffer were still read after the call returned
  // (the garbage written into it would land), or if fence() did not complete the writes.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const Index per = Index{1} << 14, n = per * p;  // 128 KiB of doubles per rank and operation
  const auto un = static_cast<std::size_t>(n);
  garray::GlobalArray<double, 1> summed(ctx, {n});  // accumulated by every rank
  garray::GlobalArray<double, 1> written(ctx, {n},
                                         test::last_rank_owns_nothing(n, p));  // element i put by rank i % p
  INFO("window kind " << garray::to_string(summed.window_kind()));
  const double garbage = -77777.0;
  std::vector<double> want_acc(un, 0.0), want_put(un, 0.0);
  auto value = [](int r, int round, Index i) { return static_cast<double>(contribution(r, round, i)); };
  bool ok = true;
  for (int round = 0; round < 8; ++round) {
    const int kind = round % 4;
    INFO("round " << round << " (0 accumulate, 1 scatter_acc, 2 acc_nb, 3 reversed accumulate): " << kind);
    std::vector<double> buf(un);
    for (Index i = 0; i < n; ++i) buf[static_cast<std::size_t>(i)] = value(me, round, i);
    std::vector<double>* sent = &buf;  // the buffer the call was given
    std::vector<double> other;
    switch (kind) {
      case 0:
        summed.accumulate(idx[all], std::span<const double>(buf));
        break;
      case 1: {
        std::vector<Shape<1>> list(un);
        other.assign(buf.rbegin(), buf.rend());
        for (Index j = 0; j < n; ++j) list[static_cast<std::size_t>(j)] = {n - 1 - j};
        summed.scatter_acc(list, other);
        sent = &other;
        break;
      }
      case 2: {
        auto r = summed.acc_nb(idx[all], std::span<const double>(buf));
        r.wait();
        break;
      }
      default:
        other.assign(buf.rbegin(), buf.rend());
        summed.accumulate(idx[range(_, _, -1)], std::span<const double>(other));
        sent = &other;
    }
    std::fill(sent->begin(), sent->end(), garbage);  // "in may be reused"
    std::vector<double> mine;
    for (Index i = me; i < n; i += p) mine.push_back(value(me, round, i) + 0.5);
    written.put(idx[range(me, _, p)], std::span<const double>(mine));
    std::fill(mine.begin(), mine.end(), garbage);
    summed.fence();
    written.fence();
    MPI_Barrier(ctx.comm());  // the synchronisation that orders the fences before the reads
    for (Index i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      for (int r = 0; r < p; ++r) want_acc[u] += value(r, round, i);
      want_put[u] = value(static_cast<int>(i % p), round, i) + 0.5;
    }
    {
      auto blk = summed.access();
      for (Index i = blk.lo(0); i < blk.hi(0); ++i)
        ok = ok && blk.view()[i] == want_acc[static_cast<std::size_t>(i)];
    }
    {
      auto blk = written.access();
      for (Index i = blk.lo(0); i < blk.hi(0); ++i)
        ok = ok && blk.view()[i] == want_put[static_cast<std::size_t>(i)];
    }
    std::vector<double> got(un);
    summed.get(idx[all], std::span<double>(got));
    ok = ok && got == want_acc;
    written.get(idx[all], std::span<double>(got));
    ok = ok && got == want_put;
    MPI_Barrier(ctx.comm());  // every rank has read before anyone writes again
  }
  CHECK(test::all_ranks(ok, ctx.comm()));
  summed.sync();
  written.sync();
}

// ---- 2. slicing moves no data -------------------------------------------------------------

namespace {

// Every counter of Stats is compared below: a counter added to Stats must be added there.
static_assert(sizeof(garray::Stats) == (16 + 5 * garray::op_count) * sizeof(std::int64_t),
              "garray::Stats changed: compare the new counter in stats_diff()");

/// The counters that differ between x and y ("" if none).
std::string stats_diff(const garray::Stats& x, const garray::Stats& y) {
  std::ostringstream os;
  auto field = [&](const std::string& name, std::int64_t a, std::int64_t b) {
    if (a != b) os << name << " " << a << " -> " << b << "; ";
  };
  field("windows_allocated", x.windows_allocated, y.windows_allocated);
  field("windows_freed", x.windows_freed, y.windows_freed);
  field("window_bytes", x.window_bytes, y.window_bytes);
  field("arrays_created", x.arrays_created, y.arrays_created);
  field("arrays_destroyed", x.arrays_destroyed, y.arrays_destroyed);
  field("leaked_windows", x.leaked_windows, y.leaked_windows);
  field("cache_hits", x.cache_hits, y.cache_hits);
  field("cache_misses", x.cache_misses, y.cache_misses);
  field("cache_evictions", x.cache_evictions, y.cache_evictions);
  field("cache_bytes", x.cache_bytes, y.cache_bytes);
  field("syncs", x.syncs, y.syncs);
  field("fences", x.fences, y.fences);
  field("mpi_rma_calls", x.mpi_rma_calls, y.mpi_rma_calls);
  field("ordering_flushes", x.ordering_flushes, y.ordering_flushes);
  field("replace_puts", x.replace_puts, y.replace_puts);
  field("temp_bytes_peak", x.temp_bytes_peak, y.temp_bytes_peak);
  for (int k = 0; k < garray::op_count; ++k) {
    const auto op = static_cast<garray::Op>(k);
    const std::string n(garray::op_name(op));
    field(n + ".calls", x[op].calls, y[op].calls);
    field(n + ".local_pieces", x[op].local_pieces, y[op].local_pieces);
    field(n + ".remote_pieces", x[op].remote_pieces, y[op].remote_pieces);
    field(n + ".local_bytes", x[op].local_bytes, y[op].local_bytes);
    field(n + ".remote_bytes", x[op].remote_bytes, y[op].remote_bytes);
  }
  return os.str();
}

using A3 = garray::GlobalArray<double, 3>;
using Ids3 = std::array<std::vector<Index>, 3>;  // per base dimension, the indices a view selects

double value_at(const Shape<3>& i) {
  return 100.0 * static_cast<double>(i[0]) + 10.0 * static_cast<double>(i[1]) + static_cast<double>(i[2]) +
         0.25;
}

/// A selection's pieces as the contract describes them, found by brute force: which rank
/// holds each selected element (one piece per rank holding any), and how many are ours.
struct Pieces {
  Index total = 0, local = 0;
  std::vector<char> has;  // rank r holds at least one selected element
};

Pieces pieces_of(const A3& a, const Ids3& ids) {
  const int p = a.context().size(), me = a.context().rank();
  Pieces e;
  e.has.assign(static_cast<std::size_t>(p), 0);
  test::for_each_selected<3>(ids, [&](const Shape<3>& i, Index) {
    ++e.total;
    for (int r = 0; r < p; ++r) {
      const garray::Box<3> b = a.box_of(r);
      bool in = !b.empty();
      for (std::size_t d = 0; d < 3 && in; ++d) in = i[d] >= b.lo[d] && i[d] < b.hi[d];
      if (in) {
        e.has[static_cast<std::size_t>(r)] = 1;
        if (r == me) ++e.local;
        break;
      }
    }
  });
  return e;
}

/// The ranks of ctx that share this rank's node (what mixed windows reach by memory copies).
std::vector<char> node_local_ranks(const garray::Context& ctx) {
  std::vector<char> local(static_cast<std::size_t>(ctx.size()), 0);
  MPI_Group all_g = MPI_GROUP_NULL, node_g = MPI_GROUP_NULL;
  MPI_Comm_group(ctx.comm(), &all_g);
  MPI_Comm_group(ctx.node_comm(), &node_g);
  int nn = 0;
  MPI_Group_size(node_g, &nn);
  std::vector<int> in(static_cast<std::size_t>(nn)), out(static_cast<std::size_t>(nn));
  std::iota(in.begin(), in.end(), 0);
  MPI_Group_translate_ranks(node_g, nn, in.data(), all_g, out.data());
  for (int r : out)
    if (r != MPI_UNDEFINED) local[static_cast<std::size_t>(r)] = 1;
  MPI_Group_free(&all_g);
  MPI_Group_free(&node_g);
  return local;
}

/// MPI calls one transfer makes (semantics.md, "Windows and data paths"): none on shared
/// windows; on rma windows one per remote piece (the own piece a memory copy, unified model),
/// for accumulates one per piece (atomics always through MPI); on mixed windows get and put
/// of a block on this node are memory copies, accumulates all MPI.
std::int64_t mpi_calls_of(garray::WindowKind kind, garray::Op op, const Pieces& e, int me,
                          const std::vector<char>& node_local) {
  if (kind == garray::WindowKind::shared) return 0;
  std::int64_t c = 0;
  for (std::size_t r = 0; r < e.has.size(); ++r) {
    if (!e.has[r]) continue;
    if (op == garray::Op::acc)
      ++c;
    else if (kind == garray::WindowKind::rma)
      c += static_cast<int>(r) != me ? 1 : 0;
    else
      c += node_local[r] ? 0 : 1;
  }
  return c;
}

/// The statistics after one transfer of kind `op` of the selection `e`: one call, one piece
/// per owner holding selected elements, exactly the selection's bytes, the MPI calls of the
/// window kind; nothing else (the largest temporary is the transport's business).
garray::Stats after_transfer(garray::Stats s, garray::Op op, const Pieces& e, int me, std::int64_t mpi_calls,
                             std::int64_t temp_peak) {
  auto& oc = s[op];
  ++oc.calls;
  for (std::size_t r = 0; r < e.has.size(); ++r) {
    if (!e.has[r]) continue;
    if (static_cast<int>(r) == me)
      ++oc.local_pieces;
    else
      ++oc.remote_pieces;
  }
  oc.local_bytes += e.local * static_cast<Index>(sizeof(double));
  oc.remote_bytes += (e.total - e.local) * static_cast<Index>(sizeof(double));
  s.mpi_rma_calls += mpi_calls;
  s.temp_bytes_peak = temp_peak;
  return s;
}

}  // namespace

TEST_CASE(
    "slicing moves no data: making, composing and querying views changes no statistic, whatever each rank "
    "slices; "
    "a get, put or accumulate through a view then moves exactly its selection") {
  // semantics.md, Slices: "Slicing a view composes: a[s1][s2] selects exactly the elements
  // numpy's a[s1][s2] selects (slice arithmetic), and no data moves until a get/put";
  // GlobalArray::operator[] and View::operator[] are Local. Every rank slices a different
  // number of times (a collective or a message would hang or mismatch), and no counter of
  // Stats may move: no window, array, cache entry, sync, fence, MPI call or byte. Then one
  // transfer through the final view is checked against the selection found by brute force.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  INFO("window kind " << garray::to_string(ctx.window_kind()));
  test::Rng shared(seed);
  const Shape<3> shape{7, 6, 5};
  A3 a(ctx, shape, test::random_distribution<3>(shared, shape, p), {1, 0, 1});
  A3 b(ctx, shape, test::random_distribution<3>(shared, shape, p));
  A3 c(ctx, shape, test::random_distribution<3>(shared, shape, p), {0, 1, 0});
  {
    auto blk = a.access();
    if (!blk.empty()) {
      Ids3 own;
      for (std::size_t d = 0; d < 3; ++d)
        for (Index i = blk.lo(d); i < blk.hi(d); ++i) own[d].push_back(i);
      test::for_each_selected<3>(own, [&](const Shape<3>& i, Index) { blk.view()(i) = value_at(i); });
    }
  }
  a.sync();
  const std::vector<char> node_local = node_local_ranks(ctx);
  test::Rng g(seed ^
              (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(me + 1)));  // this rank's own slicing

  const garray::Stats before = ctx.stats();
  // ---- slicing only ----------------------------------------------------------------------
  // A random chain of compositions (negative steps, clamped bounds, empty selections),
  // mirrored on an independent reference: per base dimension the base indices selected.
  Ids3 ids;
  for (std::size_t d = 0; d < 3; ++d)
    for (Index i = 0; i < shape[d]; ++i) ids[d].push_back(i);
  std::optional<garray::View<double, 3, 3>> v;  // re-seated with emplace: `view = view` would copy elements
  v.emplace(a.view());
  bool shapes_ok = true, parts_ok = true;
  const int depth = 2 + 3 * me;
  for (int k = 0; k < depth; ++k) {
    const auto rs = test::random_slice<3>(g, v->shape(), false);
    const auto next = (*v)[rs.slice];
    for (std::size_t d = 0; d < 3; ++d) {
      std::vector<Index> sel;
      for (Index pos : rs.ref[d]) sel.push_back(ids[d][static_cast<std::size_t>(pos)]);
      ids[d] = std::move(sel);
    }
    v.emplace(next);
    for (std::size_t d = 0; d < 3; ++d)
      shapes_ok = shapes_ok && v->shape()[d] == static_cast<Index>(ids[d].size());
    // the local queries of a view: the ranks' parts tile the view
    Index parts = 0;
    for (int r = 0; r < p; ++r) parts += v->box_of(r).volume();
    parts_ok = parts_ok && parts == v->size() && v->local_size() == v->local_box().volume();
  }
  // Views of every form, a different number of them on every rank, and bad slices (which
  // throw before anything could move).
  for (int k = 0; k <= me; ++k) {
    auto whole = a.view();
    auto inner = a[idx[range(1, -1)]];
    auto rev = a[idx[range(_, _, -1)][all][range(_, _, -2)]];
    auto plane = a[idx[2]];                   // 2-d
    auto col = a[idx[all][-1][range(1, 4)]];  // 2-d
    auto last = a[idx[garray::ellipsis][0]];  // a[..., 0]: 2-d
    auto elem = a[idx[1][2][3]];              // 0-d
    auto none = a[idx[range(3, 3)]];          // empty
    auto clamped = a[idx[range(-100, 100)][range(_, _, 7)]];
    auto chain = rev[idx[range(_, _, -1)]][idx[1]][idx[range(_, _, 2)]];  // 2-d
    const garray::View<double, 3, 3> direct(a, garray::compose(rev.section(), idx[range(1, _)]));
    const auto copied = chain;  // another handle on the same selection
    // numpy's shapes for a of shape (7, 6, 5)
    const bool shapes = whole.shape() == Shape<3>{7, 6, 5} && inner.shape() == Shape<3>{5, 6, 5} &&
                        rev.shape() == Shape<3>{7, 6, 3} && plane.shape() == Shape<2>{6, 5} &&
                        col.shape() == Shape<2>{7, 3} && last.shape() == Shape<2>{7, 6} && elem.size() == 1 &&
                        none.shape() == Shape<3>{0, 6, 5} && clamped.shape() == Shape<3>{7, 1, 5} &&
                        chain.shape() == Shape<2>{3, 3} && direct.shape() == Shape<3>{6, 6, 3} &&
                        copied.section() == chain.section();
    CHECK(shapes);
    parts_ok = parts_ok && plane.local_size() == plane.local_box().volume() && elem.local_size() <= 1 &&
               none.local_size() == 0 && a.section(idx[range(_, _, 3)]).size() == 3 * 6 * 5;
    CHECK_THROWS_AS((void)a[idx[range(_, _, 0)]], garray::InvalidSlice);
    CHECK_THROWS_AS((void)plane[idx[6]], garray::BoundsError);
  }
  const garray::Stats sliced = ctx.stats();
  {
    INFO("counters changed by slicing: " << stats_diff(before, sliced));
    CHECK(stats_diff(before, sliced).empty());
  }
  CHECK(shapes_ok);
  CHECK(parts_ok);

  // ---- one transfer through the final view: exactly its selection ------------------------
  const auto sec = v->section();
  const garray::View<double, 3, 3> vb(b, sec), vc(c, sec);
  const auto n = static_cast<std::size_t>(v->size());
  const garray::WindowKind kind = a.window_kind();
  {
    const Pieces e = pieces_of(a, ids);
    CHECK(e.total == v->size());
    CHECK(e.local == v->local_size());
    std::vector<double> got(n, -1.0);
    const garray::Stats s0 = ctx.stats();
    v->get(got);
    const garray::Stats s1 = ctx.stats();
    const auto want =
        after_transfer(s0, garray::Op::get, e, me, mpi_calls_of(kind, garray::Op::get, e, me, node_local),
                       s1.temp_bytes_peak);
    INFO("get through the view, counters not as expected: " << stats_diff(want, s1));
    CHECK(stats_diff(want, s1).empty());
    bool values = true;
    test::for_each_selected<3>(ids, [&](const Shape<3>& i, Index pos) {
      values = values && got[static_cast<std::size_t>(pos)] == value_at(i);
    });
    CHECK(values);
  }
  {
    const Pieces e = pieces_of(b, ids);
    const std::vector<double> ones(n, 1.0);
    const garray::Stats s0 = ctx.stats();
    vb.accumulate(ones);
    const garray::Stats s1 = ctx.stats();
    const auto want =
        after_transfer(s0, garray::Op::acc, e, me, mpi_calls_of(kind, garray::Op::acc, e, me, node_local),
                       s1.temp_bytes_peak);
    INFO("accumulate through the view, counters not as expected: " << stats_diff(want, s1));
    CHECK(stats_diff(want, s1).empty());
  }
  {
    const Pieces e = pieces_of(c, ids);
    std::vector<double> vals(n);  // each element's own value: racing puts all write the same
    test::for_each_selected<3>(
        ids, [&](const Shape<3>& i, Index pos) { vals[static_cast<std::size_t>(pos)] = value_at(i); });
    const garray::Stats s0 = ctx.stats();
    vc.put(vals);
    const garray::Stats s1 = ctx.stats();
    const auto want =
        after_transfer(s0, garray::Op::put, e, me, mpi_calls_of(kind, garray::Op::put, e, me, node_local),
                       s1.temp_bytes_peak);
    INFO("put through the view, counters not as expected: " << stats_diff(want, s1));
    CHECK(stats_diff(want, s1).empty());
  }
  // The data landed exactly on the selections: b counts how many ranks selected each element,
  // c holds the value of every element some rank selected and zero elsewhere.
  std::vector<double> count(210, 0.0);
  test::for_each_selected<3>(ids, [&](const Shape<3>& i, Index) {
    count[static_cast<std::size_t>((i[0] * 6 + i[1]) * 5 + i[2])] += 1.0;
  });
  MPI_Allreduce(MPI_IN_PLACE, count.data(), 210, MPI_DOUBLE, MPI_SUM, ctx.comm());
  b.sync();
  c.sync();
  std::vector<double> gb(210), gc(210);
  b.get_section(garray::Section<3>::full(shape), gb);
  c.get_section(garray::Section<3>::full(shape), gc);
  bool landed = true;
  for (Index i0 = 0; i0 < 7; ++i0)
    for (Index i1 = 0; i1 < 6; ++i1)
      for (Index i2 = 0; i2 < 5; ++i2) {
        const auto u = static_cast<std::size_t>((i0 * 6 + i1) * 5 + i2);
        landed = landed && gb[u] == count[u] && gc[u] == (count[u] > 0 ? value_at({i0, i1, i2}) : 0.0);
      }
  CHECK(test::all_ranks(landed, ctx.comm()));
}

// ---- 3. the window kind changes no result ---------------------------------------------------

namespace {

template <class T>
bool bits_equal(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}
template <class T>
bool all_bits_equal(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0);
}

/// A small integer (exact under every sum here, so no order of accumulation can change a
/// bit), for floating types sometimes -0.0 (its sign must survive every path bitwise).
template <class T>
T draw(test::Rng& g) {
  const Index v = test::uniform(g, -20, 20);
  if constexpr (std::is_floating_point_v<T>) {
    if (v == 0 && test::uniform(g, 0, 1) == 1) return -T{0};
  }
  return static_cast<T>(v);
}

/// A random index list over `shape` with repeats and negative indices, and its base indices.
template <std::size_t N>
void random_list(test::Rng& g, const Shape<N>& shape, std::vector<Shape<N>>& list,
                 std::vector<Shape<N>>& base) {
  const auto n = static_cast<std::size_t>(test::uniform(g, 0, 10));
  list.assign(n, Shape<N>{});
  base.assign(n, Shape<N>{});
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t d = 0; d < N; ++d) {
      base[j][d] = test::uniform(g, 0, shape[d] - 1);
      list[j][d] = test::uniform(g, 0, 1) ? base[j][d] - shape[d] : base[j][d];
    }
    if (j > 0 && test::uniform(g, 0, 3) == 0) {  // a repeat
      base[j] = base[j - 1];
      list[j] = list[j - 1];
    }
  }
}

/// One random array (shape, distribution, sometimes replicated, sometimes ghosts) and three
/// rounds of: puts and a scatter by one rank, each read back at once and fenced; accumulates,
/// acc_nb, scatter_acc (repeats) and read_inc by every rank; gets, get_nb and gathers by every
/// rank; every block and the whole array. Everything this rank read goes to `trace`; every
/// value is compared bitwise with a serial reference (`ok`).
template <class T, std::size_t N>
void kind_case(const garray::Context& ctx, test::Rng& g, Index max_extent, std::vector<T>& trace, bool& ok) {
  const int p = ctx.size(), me = ctx.rank();
  const Shape<N> shape = test::random_shape<N>(g, max_extent);
  const bool rep = test::uniform(g, 0, 5) == 0;
  const garray::Distribution<N> dist =
      rep ? garray::Distribution<N>::replicated() : test::random_distribution<N>(g, shape, p);
  Shape<N> ghost{};
  if (test::uniform(g, 0, 2) == 0)
    for (auto& w : ghost) w = test::uniform(g, 0, 1);
  garray::GlobalArray<T, N> a(ctx, shape, dist, ghost);
  test::Reference<T, N> ref(shape);
  const auto full = garray::Section<N>::full(shape);
  for (int round = 0; round < 3; ++round) {
    const int writer = round % p;
    for (int k = 0; k < 2; ++k) {  // puts by one rank: read your own writes, fenced (ordered)
      const auto rs = test::random_slice<N>(g, shape);
      const auto sec = garray::compose(full, rs.slice);
      std::vector<T> vals(static_cast<std::size_t>(sec.size()));
      for (auto& x : vals) x = draw<T>(g);
      const bool nb = test::uniform(g, 0, 1) == 1;
      test::for_each_selected<N>(
          rs.ref, [&](const Shape<N>& i, Index pos) { ref.at(i) = vals[static_cast<std::size_t>(pos)]; });
      if (me == writer) {
        if (nb)
          a.put_section_nb(sec, vals).wait();
        else
          a.put_section(sec, vals);
        std::vector<T> back(vals.size());
        a.get_section(sec, back);
        ok = ok && all_bits_equal(back, vals);
        trace.insert(trace.end(), back.begin(), back.end());
        a.fence();
      }
    }
    {  // a scatter by the same rank: with a repeated index the last value in the list wins
      std::vector<Shape<N>> list, base;
      random_list<N>(g, shape, list, base);
      std::vector<T> vals(list.size());
      for (auto& x : vals) x = draw<T>(g);
      for (std::size_t q = 0; q < list.size(); ++q) ref.at(base[q]) = vals[q];
      if (me == writer) {
        a.scatter(list, vals);
        a.fence();
      }
    }
    a.sync();                      // put and accumulate to one element need a sync() between them (rule 4)
    for (int r = 0; r < p; ++r) {  // every rank's atomic operations
      const auto rs = test::random_slice<N>(g, shape);
      const auto sec = garray::compose(full, rs.slice);
      std::vector<T> vals(static_cast<std::size_t>(sec.size()));
      for (auto& x : vals) x = draw<T>(g);
      const T alpha = static_cast<T>(test::uniform(g, -2, 3));
      const bool nb = test::uniform(g, 0, 1) == 1;
      test::for_each_selected<N>(rs.ref, [&](const Shape<N>& i, Index pos) {
        ref.at(i) += alpha * vals[static_cast<std::size_t>(pos)];
      });
      std::vector<Shape<N>> list, base;
      random_list<N>(g, shape, list, base);
      std::vector<T> lvals(list.size());
      for (auto& x : lvals) x = draw<T>(g);
      const T lalpha = static_cast<T>(test::uniform(g, -2, 3));
      for (std::size_t q = 0; q < list.size(); ++q) ref.at(base[q]) += lalpha * lvals[q];
      Shape<N> at{};
      T inc{};
      if constexpr (std::is_integral_v<T>) {
        for (std::size_t d = 0; d < N; ++d) at[d] = test::uniform(g, 0, shape[d] - 1);
        inc = static_cast<T>(test::uniform(g, -5, 5));
        ref.at(at) += inc;
      }
      if (me != r) continue;
      if (nb)
        a.acc_section_nb(sec, vals, alpha).wait();
      else
        a.acc_section(sec, vals, alpha);
      a.scatter_acc(list, lvals, lalpha);
      if constexpr (std::is_integral_v<T>) (void)a.read_inc(at, inc);
    }
    a.sync();
    for (int r = 0; r < p; ++r) {  // every rank's reads
      const auto rs = test::random_slice<N>(g, shape);
      const auto sec = garray::compose(full, rs.slice);
      const bool nb = test::uniform(g, 0, 1) == 1;
      std::vector<Shape<N>> list, base;
      random_list<N>(g, shape, list, base);
      if (me != r) continue;
      std::vector<T> got(static_cast<std::size_t>(sec.size()));
      if (nb)
        a.get_section_nb(sec, got).wait();
      else
        a.get_section(sec, got);
      test::for_each_selected<N>(rs.ref, [&](const Shape<N>& i, Index pos) {
        ok = ok && bits_equal(got[static_cast<std::size_t>(pos)], ref.at(i));
      });
      trace.insert(trace.end(), got.begin(), got.end());
      std::vector<T> gvals(list.size());
      a.gather(list, gvals);
      for (std::size_t q = 0; q < list.size(); ++q) ok = ok && bits_equal(gvals[q], ref.at(base[q]));
      trace.insert(trace.end(), gvals.begin(), gvals.end());
    }
    {  // this rank's block (its copy, replicated) through access()
      auto blk = a.access();
      if (!blk.empty()) {
        std::array<std::vector<Index>, N> own;
        for (std::size_t d = 0; d < N; ++d)
          for (Index i = blk.lo(d); i < blk.hi(d); ++i) own[d].push_back(i);
        test::for_each_selected<N>(own, [&](const Shape<N>& i, Index) {
          const T x = blk.view()(i);
          ok = ok && bits_equal(x, ref.at(i));
          trace.push_back(x);
        });
      }
    }
    std::vector<T> whole(static_cast<std::size_t>(a.size()));
    a.get_section(full, whole);
    ok = ok && all_bits_equal(whole, std::vector<T>(ref.a.data(), ref.a.data() + ref.a.num_elements()));
    trace.insert(trace.end(), whole.begin(), whole.end());
    a.sync();  // every read done before the next round writes
  }
}

/// The same operations from `seed` on arrays of `ctx`; returns everything this rank read.
template <class T>
std::vector<T> run_sequence(const garray::Context& ctx, std::uint64_t seed, bool& ok) {
  test::Rng g(seed);
  std::vector<T> trace;
  const Index big = ctx.size() + 5;
  for (int c = 0; c < 2; ++c) kind_case<T, 1>(ctx, g, 3 * big, trace, ok);
  for (int c = 0; c < 3; ++c) kind_case<T, 2>(ctx, g, big, trace, ok);
  for (int c = 0; c < 2; ++c) kind_case<T, 3>(ctx, g, 6, trace, ok);
  return trace;
}

/// What GARRAY_WINDOW (and the testing override GARRAY_NODE_RANKS) can ask for.
struct WindowRequest {
  std::string label;
  std::optional<std::string> window;  // nullopt: unset (auto)
  std::optional<std::string> nodes;   // GARRAY_NODE_RANKS; nullopt: the real nodes
};

std::vector<WindowRequest> window_requests(int p) {
  // Across hosts the override would claim that ranks of two hosts share memory (MPICH then
  // makes a "shared" window whose ranks do not see each other's stores): the real nodes only.
  if (!test::world_on_one_host())
    return {{"unset", std::nullopt, std::nullopt},
            {"rma", std::string("rma"), std::nullopt},
            {"mixed", std::string("mixed"), std::nullopt}};
  return {{"unset", std::nullopt, std::nullopt},
          {"auto", std::string("auto"), std::nullopt},
          {"shared", std::string("shared"), std::nullopt},
          {"rma", std::string("rma"), std::nullopt},
          {"rma, GARRAY_NODE_RANKS=1", std::string("rma"), std::string("1")},
          {"mixed", std::string("mixed"), std::string(p >= 3 ? "2" : "1")},
          {"auto, GARRAY_NODE_RANKS=2", std::string("auto"), std::string("2")},
          {"auto, GARRAY_NODE_RANKS=1", std::string("auto"), std::string("1")}};
}

/// Calls f(ctx, label) with a context made under each of window_requests(p) (rank order
/// given: this process is the same context rank in every context, so it issues the same
/// operations and reads the same things in each).
template <class F>
void for_each_window_request(F&& f) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  for (const WindowRequest& req : window_requests(p)) {
    const test::ScopedEnv window("GARRAY_WINDOW", req.window);
    const test::ScopedEnv nodes("GARRAY_NODE_RANKS", req.nodes);
    const garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::given);
    f(ctx, "GARRAY_WINDOW " + req.label + " -> " + std::string(garray::to_string(ctx.window_kind())));
  }
}

}  // namespace

TEST_CASE_TEMPLATE(
    "the same random one-sided operations give bitwise the same results whatever window kind GARRAY_WINDOW "
    "asks for "
    "(unset, auto, shared, rma, mixed, auto across simulated nodes)",
    T, double, std::int64_t) {
  // semantics.md: one table of operations and completion for every window kind ("Windows
  // and data paths": "Visibility is the same as on the other kinds"; Atomicity: one domain
  // per kind, each atomic on its own); GARRAY_WINDOW=auto|shared|mixed|rma "chooses" the kind
  // and a kind that cannot be made falls back to rma. Fails if some kind's path computes,
  // orders or loses anything differently (values compared bitwise, -0.0 included), or if a
  // request cannot be made into a working context.
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  std::vector<std::vector<T>> traces;
  std::vector<std::string> labels;
  for_each_window_request([&](const garray::Context& ctx, const std::string& label) {
    INFO(label);
    bool ok = true;
    traces.push_back(run_sequence<T>(ctx, seed, ok));
    labels.push_back(label);
    CHECK(test::all_ranks(ok));
  });
  std::string covered;
  for (std::size_t k = 0; k < traces.size(); ++k) {
    covered += labels[k] + (k + 1 < labels.size() ? "; " : "");
    if (k == 0) continue;
    INFO(labels[0] << " read other bits than " << labels[k]);
    CHECK(test::all_ranks(all_bits_equal(traces[k], traces[0])));
  }
  MESSAGE("window kinds compared: " << covered);
}

TEST_CASE(
    "GARRAY_WINDOW=auto and =shared on one node are the same request: ranks asking either way (or leaving it "
    "unset) "
    "make one context, of the kind auto chooses, and arrays work on it") {
  // semantics.md, Windows and data paths: "Every rank must pass ... a GARRAY_WINDOW that asks
  // for the same kind (`auto` and `shared` on one node are the same request); otherwise ...
  // every rank throws InvalidArgument." Fails if the two spellings were compared as text
  // (every rank would throw) or led to different kinds.
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (!test::world_on_one_host()) {
    MESSAGE("the ranks span several hosts: auto and shared are different requests there, skipped");
    return;
  }
  const test::ScopedEnv nodes("GARRAY_NODE_RANKS", nullptr);  // the real node: one
  garray::WindowKind want = garray::WindowKind::rma;
  {
    const test::ScopedEnv window("GARRAY_WINDOW", nullptr);
    const garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::given);
    want = ctx.window_kind();
  }
  INFO("unset GARRAY_WINDOW gives " << garray::to_string(want));
  for (int pattern = 0; pattern < 3; ++pattern) {
    const char* mine = pattern == 0   ? (me % 2 ? "shared" : "auto")
                       : pattern == 1 ? (me % 2 ? "auto" : nullptr)
                                      : (me == p - 1 ? "shared" : nullptr);
    INFO("pattern " << pattern << ", this rank: " << (mine ? mine : "unset"));
    const test::ScopedEnv window("GARRAY_WINDOW", mine);
    std::string err;
    std::optional<garray::Context> ctx;
    try {
      ctx.emplace(MPI_COMM_WORLD, garray::RankOrder::given);
    } catch (const std::exception& e) {
      err = e.what();
    }
    CHECK(err == "");
    if (!test::all_ranks(err.empty())) continue;  // every rank threw (the contract: all or none)
    CHECK(ctx->window_kind() == want);
    const Index n = 4 * ctx->size() + 1;
    garray::GlobalArray<std::int64_t, 1> a(*ctx, {n});
    const std::vector<std::int64_t> ones(static_cast<std::size_t>(n), 1);
    a.accumulate(idx[all], std::span<const std::int64_t>(ones));
    a.sync();
    std::vector<std::int64_t> got(static_cast<std::size_t>(n));
    a.get(idx[all], std::span<std::int64_t>(got));
    CHECK(got == std::vector<std::int64_t>(static_cast<std::size_t>(n), ctx->size()));
  }
}

// ---- 4. location consistency: one rank's writes land in the order it issued them ----------

namespace {

/// One rank's writes to the same elements without fence() or sync() in between, on the
/// window kind of `ctx`, each pair in its own part of the rank's slice so that every pair's
/// order shows in the result: put, accumulate, put over part, accumulate, put over the rest
/// (part 0); put then read_inc (integers) or accumulate (part 1); scatter then scatter_acc
/// (part 2); put_nb then acc_nb (part 3); put, a reversed strided put, put_nb and scatter
/// over each other (part 4: to another node, MPI_REPLACE accumulates after the first). Every rank writes its
/// own random slice (disjoint from the others', mostly in other ranks' blocks); all ranks' results are
/// compared with a serial reference after one sync().
template <class T>
bool program_order_holds(const garray::Context& ctx, std::uint64_t seed) {
  test::Rng g(seed);
  const int p = ctx.size(), me = ctx.rank();
  const Index per = 2 + test::uniform(g, 0, 5);  // elements of each part
  const Index n = 5 * per * p + test::uniform(g, 0, 3);
  garray::GlobalArray<T, 1> a(ctx, {n}, test::random_distribution<1>(g, garray::Shape<1>{n}, p));
  std::vector<T> ref(static_cast<std::size_t>(n), T{0});
  bool ok = true;
  for (int r = 0; r < p; ++r) {
    // rank r writes [b, b + 5 per), shifted by one rank: mostly into another rank's block
    const Index b = static_cast<Index>((r + 1) % p) * 5 * per;
    const auto part = [&](int k) { return b + k * per; };
    auto at = [&](int k, Index i) -> T& { return ref[static_cast<std::size_t>(part(k) + i)]; };
    const auto draw = [&] {
      std::vector<T> v(static_cast<std::size_t>(per));
      for (auto& x : v) x = static_cast<T>(test::uniform(g, 1, 1000));
      return v;
    };
    const std::vector<T> init = draw(), delta = draw(), over = draw();
    const Index cut = test::uniform(g, 0, per - 1);  // part 0: [cut, per) put again
    const Index e = test::uniform(g, 0, per - 1);    // part 1: the element put and read_inc'd
    const T ev = static_cast<T>(test::uniform(g, 1, 1000));
    const auto whole = [&](int k) { return idx[range(part(k), part(k) + per)]; };
    const auto span = [](const std::vector<T>& v) { return std::span<const T>(v); };
    if (r == me) {
      a.put(whole(0), span(init));
      a.accumulate(whole(0), span(delta));  // init + delta
      a.put(idx[range(part(0) + cut, part(0) + per)], span(over).subspan(static_cast<std::size_t>(cut)));
      a.accumulate(whole(0), span(delta), T{2});  // + 2 delta
      a.put(idx[range(part(0), part(0) + cut)], span(init).first(static_cast<std::size_t>(cut)));
      a.put(idx[part(1) + e], std::span<const T>(&ev, 1));
      if constexpr (std::is_integral_v<T>) {
        ok = a.read_inc({part(1) + e}, T{3}) == ev && ok;  // the put before it landed first
      } else {
        a.accumulate(idx[part(1) + e], std::span<const T>(&ev, 1));
      }
      const std::vector<garray::Shape<1>> where{{part(2) + per - 1}, {part(2)}, {part(2) + per - 1}};
      const std::vector<T> sv{T{7}, T{8}, T{9}}, av{T{1}, T{2}, T{4}};
      a.scatter(where, std::span<const T>(sv));      // the last element gets 9 (the last), the first 8
      a.scatter_acc(where, std::span<const T>(av));  // + 5 and + 2
      auto r1 = a.put_nb(whole(3), span(over));
      auto r2 = a.acc_nb(whole(3), span(delta));
      r1.wait();
      r2.wait();
      // part 4, puts over puts (to another node: replaces after the first): the whole part,
      // every second element reversed, the whole part nonblocking, two elements by scatter
      a.put(whole(4), span(init));
      const Index evens = (per + 1) / 2;
      std::vector<T> ev_vals(static_cast<std::size_t>(evens));
      for (Index k = 0; k < evens; ++k)
        ev_vals[static_cast<std::size_t>(k)] = over[static_cast<std::size_t>(2 * k)];
      a.put(idx[range(part(4) + 2 * (evens - 1), part(4) - 1, -2)],
            std::span<const T>(std::vector<T>(ev_vals.rbegin(), ev_vals.rend())));
      auto r3 = a.put_nb(whole(4), span(delta));
      r3.wait();
      const std::vector<garray::Shape<1>> ends{{part(4)}, {part(4) + per - 1}};
      const std::vector<T> ends_vals{T{11}, T{12}};
      a.scatter(ends, std::span<const T>(ends_vals));
    }
    for (Index i = 0; i < per; ++i) {
      const auto k = static_cast<std::size_t>(i);
      at(0, i) = i < cut ? init[k] : over[k] + T{2} * delta[k];
      at(3, i) = over[k] + delta[k];
      at(4, i) = delta[k];
    }
    at(4, 0) = T{11};
    at(4, per - 1) = T{12};
    at(1, e) = ev + (std::is_integral_v<T> ? T{3} : ev);
    at(2, per - 1) = T{9 + 5};
    at(2, 0) = T{8 + 2};
  }
  a.sync();
  return ok && test::whole_array(a) == ref;
}

}  // namespace

TEST_CASE_TEMPLATE(
    "one rank's put, accumulate, scatter, scatter_acc, read_inc, put_nb and acc_nb to the same elements land "
    "in the order it issued them, without fence() (location consistency), on every window kind",
    T, double, std::int64_t) {
  // semantics.md, Visibility rules 3: "A rank's writes to the same elements of an array take
  // effect in the order it issued them" (as Global Arrays' location consistency). MPI orders
  // neither a put after a put or accumulate nor an accumulate after a put. No MPI tested here
  // reorders them on one node or across the simulated hosts (the case after this one checks
  // the mechanism); a network that does (adaptive routing, several rails) would fail here
  // without it.
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  for_each_window_request([&](const garray::Context& ctx, const std::string& label) {
    INFO(label);
    for (int round = 0; round < 3; ++round) CHECK(test::all_ranks(program_order_holds<T>(ctx, seed + round)));
  });
}

TEST_CASE(
    "location consistency costs an MPI_Win_flush only where a write overlaps this rank's earlier one still "
    "in "
    "flight: Stats::ordering_flushes counts them") {
  // The mechanism behind the case above (Window::order_put / order_acc / order_store), which no MPI
  // here would catch missing: rank 0 writes to elements of rank 1's block on an rma window
  // (and on a mixed window where rank 1 shares its node: puts are memory copies there).
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) {
    MESSAGE("one rank: no remote target, skipped");
    return;
  }
  struct Kind {
    const char* window;
    std::string nodes;
    std::vector<int> want;          // ordering_flushes after each step
    std::vector<int> want_replace;  // replace_puts after each step
    const char* ordered_puts = nullptr;  // GARRAY_ORDERED_PUTS
  };
  // steps: put x; acc x; acc x; put x; put y; acc x..y; put x; read_inc x; put x; acc own;
  // put own; put x; put x; acc x
  const std::vector<int> none(14, 0), remote_replaces{0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 4, 4};
  const std::vector<Kind> kinds{
      // rank 1 on another node: a put overlapping a put or accumulate in flight flushes
      // once and travels as an MPI_REPLACE accumulate, the next one after that replace needs
      // no flush
      {"rma", "1", {0, 1, 1, 2, 2, 3, 4, 5, 5, 5, 6, 7, 7, 8}, remote_replaces},
      {"mixed", "1", {0, 1, 1, 2, 2, 3, 4, 5, 5, 5, 6, 7, 7, 8}, remote_replaces},
      // on this node every overlap flushes (cheaper there than a replace), and so it does
      // to another node with GARRAY_ORDERED_PUTS=flush
      {"rma", std::to_string(p), {0, 1, 1, 2, 2, 3, 4, 5, 5, 5, 6, 7, 8, 9}, none},
      {"rma", "1", {0, 1, 1, 2, 2, 3, 4, 5, 5, 5, 6, 7, 8, 9}, none, "flush"},
      // node-local target: puts are stores (ordered after a pending accumulate by a flush),
      // accumulates and read_inc MPI calls (ordered after earlier stores by MPI_Win_sync)
      {"mixed", std::to_string(p), {0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, none}};
  for (const Kind& k : kinds) {
    const test::ScopedEnv window("GARRAY_WINDOW", k.window);
    const test::ScopedEnv nodes("GARRAY_NODE_RANKS", k.nodes.c_str());
    const test::ScopedEnv ordered("GARRAY_ORDERED_PUTS", k.ordered_puts);
    const garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::given);
    INFO("GARRAY_WINDOW " << std::string(k.window) << " -> " << garray::to_string(ctx.window_kind())
                          << ", GARRAY_NODE_RANKS " << k.nodes << ", GARRAY_ORDERED_PUTS "
                          << (k.ordered_puts ? k.ordered_puts : "unset"));
    // the counts below are those of the kind asked for (a context that fell back to
    // another kind would count differently)
    CHECK(garray::to_string(ctx.window_kind()) == std::string_view(k.window));
    if (garray::to_string(ctx.window_kind()) != std::string_view(k.window)) continue;
    const Index n = 4 * ctx.size();
    garray::GlobalArray<std::int64_t, 1> a(ctx, {n});  // blocked: rank r owns [4r, 4r + 4)
    std::vector<int> got, got_replace;
    std::int64_t old = -1;
    if (ctx.rank() == 0) {
      const auto& st = ctx.stats();
      const std::int64_t base = st.ordering_flushes, base_replace = st.replace_puts;
      const std::int64_t one = 1, two[2] = {5, 6}, seven = 7, eight = 8;
      const auto step = [&] {
        got.push_back(static_cast<int>(st.ordering_flushes - base));
        got_replace.push_back(static_cast<int>(st.replace_puts - base_replace));
      };
      a.put(idx[4], std::span<const std::int64_t>(&one, 1));  // put x
      step();
      a.accumulate(idx[4], std::span<const std::int64_t>(&one, 1));  // after the put: flush
      step();
      a.accumulate(idx[4], std::span<const std::int64_t>(&one, 1));  // after an accumulate: MPI orders
      step();
      a.put(idx[4], std::span<const std::int64_t>(&one, 1));  // after accumulates: flush
      step();
      a.put(idx[5], std::span<const std::int64_t>(&one, 1));  // elsewhere: none
      step();
      a.accumulate(idx[range(4, 6)], std::span<const std::int64_t>(two, 2));  // over both puts: flush
      step();
      a.put(idx[4], std::span<const std::int64_t>(&one, 1));  // after the accumulate: flush
      step();
      old = a.read_inc({4}, 10);  // after the put: flush
      step();
      a.put(idx[4], std::span<const std::int64_t>(&one, 1));  // read_inc completed everything
      step();
      a.accumulate(idx[0], std::span<const std::int64_t>(&one, 1));  // own block: an MPI call
      step();
      a.put(idx[0], std::span<const std::int64_t>(&one, 1));  // a store after it: flush
      step();
      a.put(idx[4], std::span<const std::int64_t>(&seven, 1));  // after the put x: flush (+ replace)
      step();
      a.put(idx[4], std::span<const std::int64_t>(&eight, 1));  // after it: a replace needs none
      step();
      a.accumulate(idx[4], std::span<const std::int64_t>(&one, 1));  // after a replace or put: flush
      step();
      CHECK(got == k.want);
      CHECK(got_replace == k.want_replace);
      CHECK(old == 1);
    }
    a.sync();
    const auto v = test::whole_array(a);
    CHECK(v[4] == 8 + 1);
    CHECK(v[5] == 1 + 6);
    CHECK(v[0] == 1);
    // 2-d: the columns of rank 1's block put one by one, then two tiles side by side, hulls
    // that interleave: no flush (their combs are told apart), until a write overlaps
    // (on the rma window: on the mixed one these puts are stores, ordered by flushes only
    // after accumulates)
    if (std::string_view(k.window) != "rma") continue;
    garray::GlobalArray<std::int64_t, 2> m(ctx, {8, 8});
    const garray::Box<2> bx = m.box_of(1);
    const Index rows = bx.hi[0] - bx.lo[0], cols = bx.hi[1] - bx.lo[1];
    if (ctx.rank() == 0 && rows >= 2 && cols >= 2) {
      const auto& st = ctx.stats();
      const std::int64_t base = st.ordering_flushes;
      const std::vector<std::int64_t> col(static_cast<std::size_t>(rows), 3);
      for (Index j = bx.lo[1]; j < bx.hi[1]; ++j)
        m.put(idx[range(bx.lo[0], bx.hi[0])][j], std::span<const std::int64_t>(col));
      CHECK(st.ordering_flushes - base == 0);
      m.put(idx[range(bx.lo[0], bx.hi[0])][bx.lo[1]], std::span<const std::int64_t>(col));  // again
      CHECK(st.ordering_flushes - base == 1);
      const Index half = cols / 2;
      const std::vector<std::int64_t> left(static_cast<std::size_t>(rows * half), 4),
          right(static_cast<std::size_t>(rows * (cols - half)), 5);
      const auto tile_l = idx[range(bx.lo[0], bx.hi[0])][range(bx.lo[1], bx.lo[1] + half)];
      const auto tile_r = idx[range(bx.lo[0], bx.hi[0])][range(bx.lo[1] + half, bx.hi[1])];
      m.fence();
      m.put(tile_l, std::span<const std::int64_t>(left));
      m.put(tile_r, std::span<const std::int64_t>(right));
      CHECK(st.ordering_flushes - base == 1);
      m.accumulate(tile_r, std::span<const std::int64_t>(right));  // over the right tile
      CHECK(st.ordering_flushes - base == 2);
      // two columns apart stay two combs; one between them touches neither (no flush, it
      // merges with the first); the second again meets its own comb: a flush. The comb
      // against comb test both ways (the cases above end in merged hulls).
      if (cols >= 4) {
        const std::vector<std::int64_t> six(static_cast<std::size_t>(rows), 6);
        const auto column = [&](Index j) { return idx[range(bx.lo[0], bx.hi[0])][bx.lo[1] + j]; };
        m.fence();
        m.put(column(0), std::span<const std::int64_t>(six));
        m.put(column(2), std::span<const std::int64_t>(six));
        m.put(column(1), std::span<const std::int64_t>(six));
        CHECK(st.ordering_flushes - base == 2);
        m.put(column(2), std::span<const std::int64_t>(six));
        CHECK(st.ordering_flushes - base == 3);
      }
    }
    m.sync();
    if (rows >= 2 && cols >= 4) {
      const auto w = test::whole_array(m);
      const auto at = [&](Index i, Index j) {
        return w[static_cast<std::size_t>((bx.lo[0] + i) * 8 + bx.lo[1] + j)];
      };
      CHECK(at(0, 0) == 6);
      CHECK(at(rows - 1, 1) == 6);
      CHECK(at(0, 2) == 6);
      CHECK(at(rows - 1, cols - 1) == 10);  // the right tile plus the accumulate
      CHECK(at(0, 3) == (cols / 2 <= 3 ? 10 : 4));
    }
  }
}

TEST_CASE(
    "GARRAY_ORDERED_PUTS other than replace or flush on one rank: every rank throws at the window's "
    "creation, that rank naming the value; the context works afterwards") {
  const garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const test::ScopedEnv window("GARRAY_WINDOW", "rma");
  const garray::Context rma(MPI_COMM_WORLD, garray::RankOrder::given);
  std::string msg;
  {
    const test::ScopedEnv ordered("GARRAY_ORDERED_PUTS", me == p - 1 ? "fast" : nullptr);
    try {
      garray::GlobalArray<double, 1> a(rma, {7 * p});
    } catch (const garray::Error& e) {
      msg = e.what();
    }
  }
  INFO(msg);
  CHECK(msg != "");  // every rank threw
  if (me == p - 1) CHECK(test::contains(msg, "GARRAY_ORDERED_PUTS='fast': expected 'replace' or 'flush'"));
  garray::GlobalArray<double, 1> b(rma, {7 * p});
  const std::vector<double> twos(static_cast<std::size_t>(7 * p), 2.0);
  if (me == 0) b.put(idx[all], std::span<const double>(twos));
  b.sync();
  CHECK(test::whole_array(b) == twos);
}

TEST_CASE(
    "a write whose ordering flush fails (fault point order.flush) throws before anything of it is issued: "
    "the "
    "earlier write stays, and the array works afterwards") {
  // semantics.md, Errors: a one-sided call that throws before it issued anything changed
  // nothing. The flush location consistency makes before a write (Visibility rules 3) comes
  // before the write is issued:
  // rank 0 puts, then its overlapping put (or accumulate) fails at that flush, on an rma
  // window with rank 1 on another node (the replace path) and on this node (the flush path).
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) {
    MESSAGE("one rank: no remote target, skipped");
    return;
  }
  for (const std::string& nodes : {std::string("1"), std::to_string(p)}) {
    for (const bool second_is_acc : {false, true}) {
      const test::ScopedEnv window("GARRAY_WINDOW", "rma");
      const test::ScopedEnv node_ranks("GARRAY_NODE_RANKS", nodes.c_str());
      const garray::Context ctx(MPI_COMM_WORLD, garray::RankOrder::given);
      const std::string what =
          "GARRAY_NODE_RANKS " + nodes + (second_is_acc ? ", accumulate" : ", put") + " after the put";
      INFO(what);
      garray::GlobalArray<std::int64_t, 1> a(ctx, {4 * ctx.size()});  // rank 1 owns [4, 8)
      const std::int64_t first = 5, second = 7;
      bool threw = false;
      if (ctx.rank() == 0) {
        a.put(idx[4], std::span<const std::int64_t>(&first, 1));
        const auto& st = ctx.stats();
        const std::int64_t flushes = st.ordering_flushes, replaces = st.replace_puts;
        garray::testing::arm_fault("order.flush");
        std::string other;  // any other exception: reported, and the ranks still meet in sync()
        try {
          if (second_is_acc)
            a.accumulate(idx[4], std::span<const std::int64_t>(&second, 1));
          else
            a.put(idx[4], std::span<const std::int64_t>(&second, 1));
        } catch (const garray::testing::InjectedFault&) {
          threw = true;
        } catch (const std::exception& e) {
          other = e.what();
        }
        CHECK_FALSE(garray::testing::fault_armed());  // the point was reached
        garray::testing::disarm_fault();
        CHECK(threw);
        CHECK(other == "");
        CHECK(st.ordering_flushes == flushes);  // neither the flush nor a replace counted
        CHECK(st.replace_puts == replaces);
        CHECK(a.get(idx[4]) == first);  // read at once (this rank's writes completed first)
      }
      a.sync();
      CHECK(a.get(idx[4]) == first);  // the failed write changed nothing
      a.sync();                       // (every rank has read before rank 0 writes again)
      if (ctx.rank() == 0) {          // and the next writes land in order
        a.put(idx[4], std::span<const std::int64_t>(&second, 1));
        a.accumulate(idx[4], std::span<const std::int64_t>(&first, 1));
      }
      a.sync();
      CHECK(a.get(idx[4]) == second + first);
    }
  }
}

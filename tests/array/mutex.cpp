// Mutexes: exact counts under contention (get then put, not accumulate), FIFO fairness,
// try_lock (including abandoned tickets), RAII guard, misuse errors.
#include "support/outcome.hpp"
#include "support/test_support.hpp"

#include <garray/garray.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using garray::idx;
using garray::range;
using gidx = garray::Index;

namespace {
using test::message_of;
using test::contains;

void let_others_run() { std::this_thread::yield(); }

// The critical section: read a 3-element patch, add 1 to each, write it back.
std::int64_t bump(garray::GlobalArray<std::int64_t, 1>& a) {
  std::vector<std::int64_t> v(3);
  a.get(idx[range(1, 4)], std::span<std::int64_t>(v));
  for (auto& x : v) ++x;
  const double t0 = MPI_Wtime();  // hold the lock ~10 us so that the ranks really contend
  while (MPI_Wtime() - t0 < 1e-5) {
  }
  a.put(idx[range(1, 4)], std::span<const std::int64_t>(v));
  a.fence();  // complete the write before the lock is released
  return v[0];
}
}  // namespace

TEST_CASE("mutex contention: every rank increments a shared patch under a lock; exact; FIFO bound") {
  garray::Context ctx;
  const int p = ctx.size();
  garray::Mutexes m(ctx, 3);
  garray::GlobalArray<std::int64_t, 1> a(ctx, {5}, garray::Distribution<1>::slab(0));
  const int total = 4000, iters = total / p;
  std::vector<std::int64_t> seq;  // the counter value after each of my increments = global order
  seq.reserve(static_cast<std::size_t>(iters));
  ctx.barrier();
  for (int it = 0; it < iters; ++it) {
    if (it % 2 == 0) {
      m.lock(1);
      seq.push_back(bump(a));
      m.unlock(1);
    } else {
      garray::MutexGuard g(m, 1);
      seq.push_back(bump(a));
    }
  }
  a.sync();
  const auto all = a.get(idx[range(0, 5)]);
  CHECK(all[0] == 0);
  CHECK(all[1] == std::int64_t(iters) * p);
  CHECK(all[2] == std::int64_t(iters) * p);
  CHECK(all[3] == std::int64_t(iters) * p);
  CHECK(all[4] == 0);
  // My increments saw distinct, increasing counter values.
  std::int64_t max_gap = 0;
  for (std::size_t k = 1; k < seq.size(); ++k) {
    CHECK(seq[k] > seq[k - 1]);
    max_gap = std::max(max_gap, seq[k] - seq[k - 1] - 1);
  }
  // Fairness (FIFO): when a lock() of mine took its ticket, at most p - 1 tickets (one per
  // other rank) were ahead of it, so it waited for at most p - 1 critical sections. This is
  // checked on the lock's own view, which is exact even when ranks are descheduled; the
  // entries between two of mine (p - 1 when every rank keeps asking) are only reported,
  // since a rank descheduled between unlock and its next lock is not asking meanwhile.
  CHECK(m.max_queue_ahead() <= p - 1);
  std::int64_t ahead = m.max_queue_ahead(), most = 0;  // the ranks did contend
  MPI_Allreduce(&ahead, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(most >= (p > 1 ? 1 : 0));
  MESSAGE("rank " << ctx.rank() << ": max entries of others between two of mine " << max_gap
                  << ", max tickets ahead " << m.max_queue_ahead());
  CHECK(!m.held(1));
}

TEST_CASE("mutex: waiting ranks are served in the order they asked (FIFO)") {
  // Rank 0 holds the mutex; rank r asks only once rank r - 1's ticket is taken (its ticket
  // counter, read atomically, reaches r), then rank 0 releases. Each critical section takes
  // the next position from a counter: rank r must get position r.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  garray::Mutexes m(ctx, 1);
  garray::GlobalArray<std::int64_t, 1> position(ctx, {1});
  auto& words = const_cast<garray::GlobalArray<std::int64_t, 2>&>(m.words());
  auto tickets_taken = [&] { return words.read_inc(garray::Shape<2>{0, 0}, 0); };  // column 0: the next ticket
  if (me == 0) m.lock(0);
  ctx.barrier();
  std::int64_t mine = -1;
  if (me == 0) {
    mine = position.read_inc({0});
    while (tickets_taken() < p) let_others_run();  // everyone queued
    m.unlock(0);
  } else {
    while (tickets_taken() < me) let_others_run();  // rank me - 1 is in the queue
    m.lock(0);
    mine = position.read_inc({0});
    m.unlock(0);
  }
  CAPTURE(me);
  CHECK(mine == me);
  ctx.barrier();
}

TEST_CASE("MutexGuard releases the mutex while an exception unwinds: the next rank gets it") {
  garray::Context ctx;
  garray::Mutexes m(ctx, 1);
  if (ctx.rank() == 0) {
    bool thrown = false;
    try {
      garray::MutexGuard g(m, 0);
      throw std::runtime_error("failure inside the critical section");
    } catch (const std::runtime_error&) {
      thrown = true;
    }
    CHECK(thrown);
    CHECK_FALSE(m.held(0));
  }
  ctx.barrier();
  // every rank, rank 0's failed critical section before: each gets the mutex in turn (tries
  // for at most 10 s: a mutex left held fails the check instead of hanging the test)
  bool got = false;
  for (const double t0 = MPI_Wtime(); !got && MPI_Wtime() - t0 < 10.0;) {
    got = m.try_lock(0);
    if (!got) let_others_run();
  }
  CHECK(got);
  if (got) m.unlock(0);
  ctx.barrier();
}

TEST_CASE("try_lock: fails while another rank holds the mutex, never waits; counts stay exact") {
  garray::Context ctx;
  const int p = ctx.size();
  garray::Mutexes m(ctx, 2);
  garray::GlobalArray<std::int64_t, 1> a(ctx, {5});
  if (ctx.rank() == 0) m.lock(0);
  ctx.barrier();
  if (ctx.rank() != 0)
    for (int k = 0; k < 5; ++k) CHECK(!m.try_lock(0));  // busy: false at once
  ctx.barrier();
  if (ctx.rank() == 0) m.unlock(0);
  ctx.barrier();
  // mixed lock / try_lock traffic: tickets abandoned by try_lock are skipped, never lost
  int mine = 0;
  for (int it = 0; it < 600 / p; ++it) {
    if (it % 3 == 0) {
      m.lock(0);
    } else {
      int tries = 0;
      while (!m.try_lock(0)) ++tries;
    }
    bump(a);
    ++mine;
    m.unlock(0);
  }
  a.sync();
  std::int64_t sum = mine, want = 0;
  MPI_Allreduce(&sum, &want, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(a.get(idx[1]) == want);
  CHECK(a.get(idx[3]) == want);
  // tickets ahead of a lock: each rank at most one live and one abandoned ticket in the queue
  CHECK(m.max_queue_ahead() <= 2 * p - 1);
  // and the mutex is free and usable by plain lock afterwards
  m.lock(0);
  m.unlock(0);
  ctx.barrier();
}

TEST_CASE("mutex misuse: clear errors") {
  garray::Context ctx;
  garray::Mutexes m(ctx, 2);
  auto msg = message_of<garray::InvalidArgument>([&] { m.unlock(1); });
  CHECK(contains(msg, "garray::Mutexes::unlock: mutex 1 is not held by this rank"));
  m.lock(1);
  msg = message_of<garray::InvalidArgument>([&] { m.lock(1); });
  CHECK(contains(msg, "already held by this rank"));
  msg = message_of<garray::InvalidArgument>([&] { (void)m.try_lock(1); });
  CHECK(contains(msg, "already held"));
  msg = message_of<garray::BoundsError>([&] { m.lock(2); });
  CHECK(contains(msg, "mutex 2 out of range [0, 2)"));
  msg = message_of<garray::BoundsError>([&] { m.unlock(-1); });
  CHECK(contains(msg, "out of range"));
  m.unlock(1);
  ctx.barrier();
  // destroy while a rank holds a mutex: every rank throws, naming the holder; nothing freed
  const int holder = ctx.size() - 1;
  if (ctx.rank() == holder) m.lock(0);
  msg = message_of<garray::InvalidArgument>([&] { m.destroy(); });
  CHECK(contains(msg, "rank " + std::to_string(holder) + " still holds mutex 0"));
  if (ctx.rank() == holder) m.unlock(0);
  m.destroy();
  msg = message_of<garray::InvalidArgument>([&] { m.lock(0); });
  CHECK(contains(msg, "destroyed"));
  // creation: ranks must agree on n; negative n is invalid on every rank
  msg = message_of<garray::InvalidArgument>([&] { garray::Mutexes bad(ctx, -1); });
  CHECK(contains(msg, "negative number of mutexes"));
  if (ctx.size() > 1) {
    msg = message_of<garray::CollectiveMismatch>([&] { garray::Mutexes bad(ctx, ctx.rank() == 0 ? 3 : 2); });
    CHECK(contains(msg, "garray::Mutexes"));
    // negative on one rank only: that rank its error, the others a mismatch carrying it
    const int odd = ctx.size() - 1;
    if (ctx.rank() == odd) {
      msg = message_of<garray::InvalidArgument>([&] { garray::Mutexes bad(ctx, -1); });
    } else {
      msg = message_of<garray::CollectiveMismatch>([&] { garray::Mutexes bad(ctx, 2); });
      CHECK(contains(msg, "invalid call on rank " + std::to_string(odd)));
    }
    CHECK(contains(msg, "negative number of mutexes"));
    // destroyed already on one rank only, while the others destroy other mutexes: that rank
    // throws its error in the handshake, the others a mismatch carrying it (nobody waits)
    garray::Mutexes m2(ctx, 1);
    test::expect_one_rank_error<garray::InvalidArgument>(ctx.rank(), odd, "already destroyed", [&] {
      if (ctx.rank() == odd) m.destroy();
      else m2.destroy();
    });
  }
  garray::Mutexes none(ctx, 0);  // zero mutexes: valid, nothing to lock
  CHECK(none.size() == 0);
  CHECK_THROWS_AS(none.lock(0), garray::BoundsError);
  none.destroy();
}

TEST_CASE("~Mutexes on the holding rank releases its mutexes: another rank gets the lock") {
  garray::Context ctx;
  if (ctx.size() < 2) return;
  const int holder = ctx.size() - 1;
  std::optional<garray::Mutexes> m(std::in_place, ctx, 2);
  if (ctx.rank() == holder) m->lock(1);
  ctx.barrier();
  if (ctx.rank() == holder) m.reset();  // local: releases mutex 1 (with a warning on stderr)
  ctx.barrier();
  if (ctx.rank() == 0) {  // would wait forever if the destructor had not released it
    CHECK(m->try_lock(1));
    m->unlock(1);
    m->lock(1);
    m->unlock(1);
  }
  ctx.barrier();
  m.reset();  // the other handles go too (local)
  ctx.barrier();
}

TEST_CASE("user guide: mutexes") {
  garray::Context ctx;
  // clang-format off
  // guide-example: mutexes
  garray::GlobalArray<double, 1> total(ctx, {1});
  garray::Mutexes locks(ctx, 1);  // collective
  for (int k = 0; k < 10; ++k) {
    garray::MutexGuard g(locks, 0);  // one-sided: FIFO among the ranks asking
    double v = total.get(idx[0]);
    total.put(idx[range(0, 1)], std::span<const double>(&(v += 1.0), 1));
    total.fence();  // complete the put before the guard unlocks
  }
  total.sync();
  // end guide-example
  // clang-format on
  CHECK(total.get(idx[0]) == 10.0 * ctx.size());
}

TEST_CASE(
    "n mutexes are independent: each starts unlocked, holding some blocks none of the others, and critical "
    "sections under every mutex at once count exactly") {
  // semantics.md, the table: "`Mutexes(ctx, n)` | collective | n unlocked mutexes exist";
  // Mutexes: "At most one rank holds a mutex at a time". Every test in mutex.cpp uses one
  // mutex at a time: mutex 1 of 3, or mutex 0 of 1 or 2. None checks that mutex i's words
  // are its own. This fails if mutexes shared lock words, or were initialised only on some
  // owners: a row mapped to the wrong mutex, a ticket slot of one row overlapping the next,
  // only the first row's ticket 0 claimed. Then a free mutex would look held (try_lock
  // false, or lock() waits forever), a held one would look free, or two ranks would both get
  // into the same critical section and the counts would come out short. There are 2P + 1
  // mutexes, so slab(0) puts two or three rows on every owner. The counters live on a
  // distribution where the last rank owns nothing.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const int n = 2 * p + 1, spare = n - 1;  // `spare` (== 2p, = 0 mod p) stays free in phase 1
  garray::Mutexes m(ctx, n);
  garray::GlobalArray<std::int64_t, 1> count(ctx, {n}, test::last_rank_owns_nothing(n, p));
  std::vector<std::int64_t> want(static_cast<std::size_t>(n), 0);  // the serial reference
  bool ok = true;
  // Phase 1: rank r takes every mutex j != spare with j % p == r by try_lock (only r tries
  // them: a false here is no spurious failure) and holds them all together.
  for (int j = me; j < n; j += p)
    if (j != spare) {
      const bool got = m.try_lock(j);  // always called: no short circuit before a try_lock
      ok = ok && got;
    }
  ctx.barrier();
  // ... meanwhile the spare mutex works for everyone, in turn and by lock() (FIFO): it must
  // not wait for the held ones. One increment per rank under it.
  {
    garray::MutexGuard guard(m, spare);
    const std::int64_t v = count.get(garray::idx[spare]) + 1;
    count.put(garray::idx[garray::range(spare, spare + 1)], std::span<const std::int64_t>(&v, 1));
    count.fence();
  }
  want[static_cast<std::size_t>(spare)] += p;
  // ... and the next rank's mutexes are held: try_lock fails at once (p > 1).
  if (p > 1)
    for (int j = (me + 1) % p; j < n; j += p)
      if (j != spare && m.try_lock(j)) {
        ok = false;  // got a mutex another rank holds
        m.unlock(j);
      }
  ctx.barrier();
  for (int j = me; j < n; j += p)
    if (j != spare) {
      if (m.held(j)) m.unlock(j);
      else ok = false;
    }
  ctx.barrier();
  // Phase 2: now free, the next rank's mutexes are taken by this rank alone.
  for (int j = (me + 1) % p; j < n; j += p) {
    const bool got = m.try_lock(j);
    ok = ok && got;
    if (got) m.unlock(j);
  }
  ctx.barrier();
  CHECK(test::all_ranks(ok, ctx.comm()));
  // Phase 3: every rank increments every counter under its own mutex, in rank-shifted order
  // (all mutexes contended at once; get then put, not accumulate, so only mutual exclusion
  // makes the counts exact).
  const int rounds = 20;
  for (int r = 0; r < rounds; ++r)
    for (int k = 0; k < n; ++k) {
      const int j = (k + me) % n;
      garray::MutexGuard guard(m, j);
      const std::int64_t v = count.get(garray::idx[j]) + 1;
      count.put(garray::idx[garray::range(j, j + 1)], std::span<const std::int64_t>(&v, 1));
      count.fence();  // complete the write before the guard unlocks
    }
  for (auto& w : want) w += std::int64_t{rounds} * p;
  count.sync();
  std::vector<std::int64_t> got(static_cast<std::size_t>(n), -1);
  count.get(garray::idx[garray::all], std::span<std::int64_t>(got));
  CHECK(test::all_ranks(got == want, ctx.comm()));
  bool none_held = true;
  for (int j = 0; j < n; ++j) none_held = none_held && !m.held(j);
  CHECK(test::all_ranks(none_held, ctx.comm()));
  CHECK(test::all_ranks(m.max_queue_ahead() <= p - 1, ctx.comm()));  // lock() only: the FIFO bound
  m.destroy();
}

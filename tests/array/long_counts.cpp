// Transfers beyond MPI's int counts at their real sizes (opt-in: tests/long/large_counts.sh).
//
// tests/array/count_limit.cpp checks garray's own logic for runs and lists beyond INT_MAX with
// the limit lowered to 4 elements, so MPI never sees a count or a datatype size beyond 2^31
// from any test. What that cannot catch is the MPI library mishandling a single call of more
// than 2^31 bytes, or a chunked datatype of more than INT_MAX elements (e.g. open-mpi/ompi#5069:
// MPI_Type_vector-based big types truncated to 6 GiB; the osc components' own size_t/int paths).
// These cases move the real sizes between two ranks with MPI RMA (run with GARRAY_WINDOW=rma:
// shared windows never call MPI for data) and check every element.
//
// Skipped unless GARRAY_TEST_LONG_COUNTS is set (1: cases A and C, about 9 GiB peak and a
// minute; 2: also case B, about 17 GiB peak and 2-3 minutes on 2 cores). np 2 exactly. Its own
// binary, test_long_counts, not registered with ctest (CI has neither the memory nor the time):
//   GARRAY_WINDOW=rma GARRAY_TEST_LONG_COUNTS=2 mpiexec -n 2 BUILD/tests/test_long_counts
// Memory (rank 1 owns everything but 16 elements):
//   A  double, 3*2^27 + 16 elements: window 3 GiB (rank 1) + buffer 3 GiB (rank 0), plus up to
//      3 GiB that Open MPI's osc/rdma may allocate for the accumulate at the target.
//   B  int32, 2^31 + 2^20 + 16 elements: window 8 GiB + buffer 8 GiB (no accumulate: 24 GiB).
//   C  (io, only in a garray_io build) case A's array written and read back: 3 GiB of file in
//      the working directory, one H5Dwrite/H5Dread of 3 GiB on rank 1.
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#ifdef GARRAY_HAVE_IO
#include <garray/array/io.hpp>
#endif

using garray::Index;
using garray::range;

namespace {

int long_level() {
  const char* e = std::getenv("GARRAY_TEST_LONG_COUNTS");
  return e && *e ? std::atoi(e) : 0;
}

/// rank 0 owns [0, 16), rank 1 the rest (np 2).
garray::Distribution<1> all_but_16_on_rank1() {
  return garray::Distribution<1>::irregular({std::vector<Index>{0, 16}});
}

template <class T>
T value_at(Index i) {
  return static_cast<T>(i % 1000003);  // exact in float/double/int32, varied, cheap
}

/// Fills this rank's block with value_at(i). Collective (sync).
template <class T>
void fill_index(garray::GlobalArray<T, 1>& a) {
  {
    auto blk = a.access();
    T* p = blk.data();
    for (Index i = blk.lo(0); i < blk.hi(0); ++i) p[i - blk.lo(0)] = value_at<T>(i);
  }
  a.sync();
}

/// Rank 0 gets rank 1's whole block in ONE call (no split), checks it, then writes it back
/// changed (put, and for `acc` an accumulate of ones); rank 1 checks its block.
template <class T>
void round_trip(const garray::Context& ctx, Index n, bool acc) {
  garray::GlobalArray<T, 1> a(ctx, {n}, all_but_16_on_rank1(), garray::Shape<1>{}, garray::uninitialized);
  fill_index(a);
  const Index lo = 16, m = n - lo;
  bool ok = true;
  std::int64_t calls = 0;
  if (ctx.rank() == 0) {
    std::vector<T> buf(static_cast<std::size_t>(m));
    const auto before = ctx.stats().mpi_rma_calls;
    a.get(garray::idx[range(lo, n)], std::span<T>(buf));
    calls = ctx.stats().mpi_rma_calls - before;
    for (Index k = 0; k < m && ok; ++k) ok = buf[static_cast<std::size_t>(k)] == value_at<T>(lo + k);
    for (auto& x : buf) x = static_cast<T>(x + T{2});
    a.put(garray::idx[range(lo, n)], std::span<const T>(buf));
    a.fence();
    if (acc) {
      std::fill(buf.begin(), buf.end(), T{1});
      a.accumulate(garray::idx[range(lo, n)], std::span<const T>(buf));
      a.fence();
    }
  }
  CHECK(test::all_ranks(ok, ctx.comm()));
  // one MPI_Get, not split (B: a chunked datatype beyond INT_MAX elements); rma windows only
  if (ctx.rank() == 0 && a.window_kind() == garray::WindowKind::rma) CHECK(calls == 1);
  a.sync();
  bool back = true;
  if (ctx.rank() == 1) {
    auto blk = a.access();
    const T* p = blk.data();
    const T add = static_cast<T>(acc ? 3 : 2);
    for (Index i = blk.lo(0); i < blk.hi(0) && back; ++i)
      back = p[i - blk.lo(0)] == static_cast<T>(value_at<T>(i) + add);
  }
  CHECK(test::all_ranks(back, ctx.comm()));
}

}  // namespace

TEST_CASE("transfers beyond 2^31 bytes and INT_MAX elements at their real sizes (GARRAY_TEST_LONG_COUNTS)") {
  garray::Context ctx;
  const int level = long_level();
  if (level == 0 || ctx.size() != 2) {
    MESSAGE("skipped: set GARRAY_TEST_LONG_COUNTS=1|2 and run at np 2 (tests/long/large_counts.sh)");
    return;
  }
  SUBCASE(
      "A: one get/put/accumulate of 3 GiB (402,653,184 doubles: bytes beyond 2^31, count below INT_MAX)") {
    round_trip<double>(ctx, 3 * (Index{1} << 27) + 16, true);
  }
  if (level >= 2) {
    SUBCASE("B: one get/put of 2^31 + 2^20 int32 (a chunked datatype: count beyond INT_MAX)") {
      round_trip<std::int32_t>(ctx, (Index{1} << 31) + (Index{1} << 20) + 16, false);
    }
  }
#ifdef GARRAY_HAVE_IO
  SUBCASE("C: io::write and io::read of a 3 GiB block (one H5Dwrite/H5Dread beyond 2^31 bytes on rank 1)") {
    namespace io = garray::io;
    const Index n = 3 * (Index{1} << 27) + 16;
    const std::string name = "long_counts_np2.h5";
    garray::GlobalArray<double, 1> a(ctx, {n}, all_but_16_on_rank1(), garray::Shape<1>{},
                                     garray::uninitialized);
    fill_index(a);
    {
      io::File f(ctx, name, io::Mode::create);
      io::write(f, "a", a);
    }
    garray::GlobalArray<double, 1> b(ctx, {n}, all_but_16_on_rank1());
    {
      io::File f(ctx, name);
      io::read(f, "a", b);
    }
    bool ok = true;
    {
      auto blk = b.access();
      const double* p = blk.data();
      for (Index i = blk.lo(0); i < blk.hi(0) && ok; ++i) ok = p[i - blk.lo(0)] == value_at<double>(i);
    }
    CHECK(test::all_ranks(ok, ctx.comm()));
    ctx.barrier();
    if (ctx.rank() == 0) std::remove(name.c_str());
  }
#endif
}

// MPI counts are ints: garray moves runs and index lists longer than INT_MAX elements by
// chunked datatypes, split pieces and several calls (docs/semantics.md, "Windows and data
// paths"). Those paths cannot run at their real sizes here (8 GiB per run), so the limit
// (detail::mpi_count_limit) is lowered to 4 elements and every case checks both the data and
// that the path was taken: the number of MPI RMA calls one transfer to another rank's block
// issued (stats().mpi_rma_calls). Where that block is reached by memory copies (shared
// windows, a node-local block of a mixed window, the caller's own block) no MPI call is
// issued with or without the lowered limit, and only the data is checked.
#include "support/test_support.hpp"

using garray::Index;
using garray::range;

namespace {

constexpr Index limit = 4;

/// MPI RMA calls that f() issued on this rank.
template <class F>
std::int64_t rma_calls(const garray::Context& ctx, F&& f) {
  const auto before = ctx.stats().mpi_rma_calls;
  f();
  return ctx.stats().mpi_rma_calls - before;
}

}  // namespace

TEST_CASE("runs and lists beyond MPI's int counts: chunked types, split pieces, several calls per list") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const Index per = 64;
  const Index n = per * p;
  garray::GlobalArray<double, 1> a(ctx, {n}, garray::Distribution<1>::slab(0));
  auto reset = [&] {
    {
      auto blk = a.access();
      for (Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = static_cast<double>(i);
    }
    a.sync();
  };
  reset();
  // rank 0 reads and writes the last rank's block: another rank's at np >= 2
  const Index lo = (p - 1) * per;
  // Do transfers to that block go through MPI at all? A short get and a short accumulate
  // (of zeros) with the limit untouched: accumulates are MPI calls also where gets are
  // memory copies (the own block of an rma window, a node-local block of a mixed one).
  std::int64_t via_mpi = 0, acc_via_mpi = 0;
  if (me == 0) {
    std::vector<double> probe(8), zeros(8, 0.0);
    via_mpi = rma_calls(ctx, [&] { a.get(garray::idx[range(lo, lo + 8)], std::span(probe)); });
    acc_via_mpi =
        rma_calls(ctx, [&] { a.accumulate(garray::idx[range(lo, lo + 8)], std::span<const double>(zeros)); });
    a.fence();
  }
  INFO("window kind " << garray::to_string(ctx.window_kind()) << ", gets via MPI: " << via_mpi
                      << ", accumulates via MPI: " << acc_via_mpi);
  // The probe itself must not read "no MPI" where MPI is the only way (else every count
  // below would be a vacuous 0 == 0): another rank's block of an rma window is reached by
  // MPI calls, and accumulates go through MPI on every window kind but shared.
  if (me == 0 && p >= 2) {
    if (ctx.window_kind() == garray::WindowKind::rma) CHECK(via_mpi > 0);
    if (ctx.window_kind() != garray::WindowKind::shared) CHECK(acc_via_mpi > 0);
  }
  auto expect = [&](std::int64_t calls_if_mpi) { return via_mpi ? calls_if_mpi : 0; };
  auto expect_acc = [&](std::int64_t calls_if_mpi) { return acc_via_mpi ? calls_if_mpi : 0; };

  const test::CountLimit lowered(limit);
  // Rank 0 alone transfers; an exception there is a failed check, never an early exit that
  // would leave the others waiting in the next collective.
  auto on_rank0 = [&](auto&& f) {
    if (me != 0) return;
    try {
      f();
    } catch (const std::exception& e) {
      FAIL_CHECK("rank 0 threw: " << e.what());
    }
  };
  on_rank0([&] {  // a contiguous run of 30: one call with a chunked datatype
    std::vector<double> got(30);
    CHECK(rma_calls(ctx, [&] { a.get(garray::idx[range(lo + 3, lo + 33)], std::span(got)); }) == expect(1));
    for (Index k = 0; k < 30; ++k) CHECK(got[static_cast<std::size_t>(k)] == static_cast<double>(lo + 3 + k));
  });
  on_rank0([&] {  // a strided run of 15 (step 2): halves until each call has at most 4: 3+4+4+4
    std::vector<double> got(15);
    CHECK(rma_calls(ctx, [&] { a.get(garray::idx[range(lo + 1, lo + 31, 2)], std::span(got)); }) ==
          expect(4));
    for (Index k = 0; k < 15; ++k)
      CHECK(got[static_cast<std::size_t>(k)] == static_cast<double>(lo + 1 + 2 * k));
    auto req = a.get_nb(garray::idx[range(lo + 30, lo, -2)], std::span(got));  // reversed too
    req.wait();
    for (Index k = 0; k < 15; ++k)
      CHECK(got[static_cast<std::size_t>(k)] == static_cast<double>(lo + 30 - 2 * k));
  });
  on_rank0([&] {  // a reversed contiguous run of 30: one dense temporary, one call
    std::vector<double> got(30);
    CHECK(rma_calls(ctx, [&] { a.get(garray::idx[range(lo + 32, lo + 2, -1)], std::span(got)); }) ==
          expect(1));
    for (Index k = 0; k < 30; ++k)
      CHECK(got[static_cast<std::size_t>(k)] == static_cast<double>(lo + 32 - k));
  });
  on_rank0([&] {  // put and accumulate, strided and contiguous; the elements between untouched
    std::vector<double> v(15, -1.0), w(30, 0.5);
    CHECK(rma_calls(ctx, [&] { a.put(garray::idx[range(lo, lo + 30, 2)], std::span<const double>(v)); }) ==
          expect(4));
    CHECK(rma_calls(ctx, [&] {
            a.accumulate(garray::idx[range(lo + 30, lo + 60)], std::span<const double>(w), 2.0);
          }) == expect_acc(1));
    CHECK(rma_calls(ctx, [&] {
            a.accumulate(garray::idx[range(lo + 31, lo + 61, 2)], std::span<const double>(v));
          }) == expect_acc(4));
    a.fence();
    std::vector<double> got(64);
    a.get(garray::idx[range(lo, lo + 64)], std::span(got));
    for (Index k = 0; k < 64; ++k) {
      double want = static_cast<double>(lo + k);
      if (k < 30 && k % 2 == 0) want = -1.0;
      if (k >= 30 && k < 60) want += 1.0;
      if (k >= 31 && k < 61 && (k - 31) % 2 == 0) want -= 1.0;
      CAPTURE(k);
      CHECK(got[static_cast<std::size_t>(k)] == want);
    }
  });
  a.sync();
  reset();
  on_rank0([&] {  // index lists of 10 entries for one owner: ceil(10 / 4) = 3 calls each
    std::vector<garray::Shape<1>> l;
    for (Index k = 0; k < 10; ++k) l.push_back({lo + (7 * k) % per});
    std::vector<double> got(l.size());
    CHECK(rma_calls(ctx, [&] { a.gather(l, std::span(got)); }) == expect(3));
    for (std::size_t j = 0; j < l.size(); ++j) CHECK(got[j] == static_cast<double>(l[j][0]));
    std::vector<double> v(l.size());
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = 1000.0 + static_cast<double>(j);
    CHECK(rma_calls(ctx, [&] { a.scatter(l, std::span<const double>(v)); }) == expect(3));
    a.fence();
    CHECK(rma_calls(ctx, [&] { a.scatter_acc(l, std::span<const double>(v), 0.5); }) == expect_acc(3));
    a.fence();
    a.gather(l, std::span(got));
    for (std::size_t j = 0; j < l.size(); ++j) CHECK(got[j] == 1.5 * v[j]);
  });
  a.sync();
}

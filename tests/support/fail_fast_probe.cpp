// Probe test cases for the fail-fast listener of mpi_main.cpp, run by fail_fast.sh. All are
// skipped unless named with --no-skip: each one fails on purpose, on the last rank only,
// while the other ranks then wait in a barrier that the failing rank never reaches.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int last() {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p - 1;
}

}  // namespace

TEST_CASE("probe: an exception escapes on the last rank" * doctest::skip()) {
  if (rank() == last()) throw std::runtime_error("probe exception on rank " + std::to_string(rank()));
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("probe: a REQUIRE fails on the last rank" * doctest::skip()) {
  REQUIRE(rank() != last());
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("probe: a REQUIRE fails after the first subcase on the last rank" * doctest::skip()) {
  // The first pass runs subcase a and sees b; the REQUIRE then fails on the last rank while
  // the others wait in the barrier after it. Without the abort at re-entry the last rank
  // would re-enter for subcase b and pair b's barrier with theirs (fail_fast.sh checks that
  // b never starts there).
  SUBCASE("a") { MPI_Barrier(MPI_COMM_WORLD); }
  SUBCASE("b") {
    std::printf("probe: subcase b entered on rank %d\n", rank());
    std::fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  REQUIRE(rank() != last());
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("probe: a CHECK fails on the last rank" * doctest::skip()) {
  CHECK(rank() != last());  // the rank stays in the test case: no abort, the summary names it
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("probe: every check passes" * doctest::skip()) {
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(rank() <= last());
}

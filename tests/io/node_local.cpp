// garray::io on a path that not every rank sees: on a cluster, a node-local directory
// (/tmp, /dev/shm, a local scratch disk) holds different files on each node. A collective
// H5Fopen/H5Fcreate that succeeds on some ranks only cannot be unwound (closing the file is
// collective too): io::File must find out before it calls HDF5, and throw on every rank.
//
// Runs where GARRAY_TEST_NODE_LOCAL_DIR names a directory private to each host: the
// cluster suites (tests/cluster/cluster_test.sh) set it to /dev/shm, which each simulated
// host mounts privately. Elsewhere the case is skipped (one host: every rank sees one /dev/shm).
#include "io/io_support.hpp"
#include "support/outcome.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace iotest;

namespace {

const char* node_local_dir() { return std::getenv("GARRAY_TEST_NODE_LOCAL_DIR"); }

/// For every rank: does it run on rank 0's host? (MPI_Get_processor_name: the hostname.)
std::vector<int> on_host_of_rank0(const garray::Context& ctx) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  char root[MPI_MAX_PROCESSOR_NAME] = {};
  std::copy(name, name + len, root);
  MPI_Bcast(root, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, ctx.comm());
  int mine = std::string(name, static_cast<std::size_t>(len)) == root ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(ctx.size()));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, ctx.comm());
  return all;
}

/// The first rank that is not on rank 0's host.
int first_remote(const std::vector<int>& same) {
  for (std::size_t r = 0; r < same.size(); ++r)
    if (!same[r]) return static_cast<int>(r);
  return -1;
}

/// The call throws on every rank: FileError naming the path and `part` on the ranks that do
/// not see it (rank `remote` is one of them), on the others an error naming the rank.
template <class F>
void expect_everywhere(const garray::Context& ctx, const std::vector<int>& same, int remote,
                       const std::string& path, const std::string& part, F&& call) {
  std::string m;
  test::Got got = test::Got::nothing;
  bool file_error = false;
  try {
    call();
  } catch (const io::FileError& e) {
    file_error = true;
    m = e.what();
  } catch (...) {
    got = test::outcome([] { throw; }, &m);  // classify the exception in flight
  }
  CAPTURE(m);
  CHECK(contains(m, path));
  if (!same[static_cast<std::size_t>(ctx.rank())]) {
    CHECK(file_error);
    CHECK(contains(m, part));
    int world = 0;  // messages name the world rank (" [rank r/p]"): contexts may be renumbered
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    CHECK(contains(m, "[rank " + std::to_string(world) + "/"));
  } else {
    CHECK((got == test::Got::mismatch || got == test::Got::failure));
    CHECK(contains(m, "rank " + std::to_string(remote)));  // the context's number of the failing rank
  }
}

bool file_exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

}  // namespace

TEST_CASE("io on a node-local path: a file some ranks do not see makes every rank throw, nobody waits" *
          doctest::skip(node_local_dir() == nullptr)) {
  garray::Context ctx;
  const std::string dir = node_local_dir();
  const std::vector<int> same = on_host_of_rank0(ctx);
  const int remote = first_remote(same);
  REQUIRE_MESSAGE(remote >= 0, "GARRAY_TEST_NODE_LOCAL_DIR is set but every rank runs on rank 0's host");
  const bool here = same[static_cast<std::size_t>(ctx.rank())] != 0;
  const std::string path = dir + "/garray_node_local_np" + std::to_string(ctx.size()) + ".h5";

  // The ranks on rank 0's host write a file there (their own context: they share the directory).
  {
    const garray::Context host0 = ctx.split(here ? 0 : MPI_UNDEFINED);
    if (host0.valid()) {
      io::File f(host0, path, io::Mode::create);
      garray::GlobalArray<double, 1> a(host0, {7});
      fill_bits(a, 5);
      io::write(f, "a", a);
    }
  }
  ctx.barrier();
  CHECK(file_exists(path) == here);

  // Opening it on every rank: the ranks of the other host(s) do not find it.
  for (io::Mode mode : {io::Mode::read_only, io::Mode::read_write})
    expect_everywhere(ctx, same, remote, path, "not found", [&] { io::File f(ctx, path, mode); });

  // Creating it on every rank: each host has its own directory of that name, so the file
  // rank 0 creates is not the one the other host's ranks would open. Nothing is written: the
  // file on rank 0's host keeps its dataset.
  expect_everywhere(ctx, same, remote, path, "does not see", [&] { io::File f(ctx, path, io::Mode::create); });
  CHECK(file_exists(path) == here);
  {
    const garray::Context host0 = ctx.split(here ? 0 : MPI_UNDEFINED);
    if (host0.valid()) {
      io::File f(host0, path, io::Mode::read_only);
      garray::GlobalArray<double, 1> a(host0, {7}), b(host0, {7});
      fill_bits(a, 5);
      io::read(f, "a", b);
      CHECK(bitwise_equal(all_of(a), all_of(b)));
    }
  }
  // No probe file left behind (io::File's visibility probe for Mode::create), then clean up.
  ctx.barrier();
  int probes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    probes += e.path().filename().string().starts_with(std::filesystem::path(path).filename().string() + ".garray-probe");
  CHECK(probes == 0);
  if (here) CHECK(file_exists(path));
  ctx.barrier();
  if (ctx.rank() == 0) std::remove(path.c_str());

  // The context works afterwards: a collective file on the shared working directory.
  {
    garray::GlobalArray<double, 1> a(ctx, {9}), b(ctx, {9});
    fill_bits(a, 2);
    const std::string shared = tmp_name(ctx, "after_node_local");
    {
      io::File f(ctx, shared, io::Mode::create);
      io::write(f, "a", a);
      io::read(f, "a", b);
    }
    CHECK(bitwise_equal(all_of(a), all_of(b)));
    remove_file(ctx, shared);
  }
}

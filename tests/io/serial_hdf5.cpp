// garray::io compiled against an HDF5 built WITHOUT MPI (Debian's libhdf5-dev; built by
// tests/io/serial_hdf5.cmake, run at np 2 under mpiexec). The documented bad input "HDF5
// built without MPI": every way into garray::io throws io::FileError naming the file and
// saying that HDF5 lacks MPI, on every rank (each rank its own FileError, not a
// CollectiveFailure), before any file is created, truncated or opened and before any array
// element changes; nobody hangs and the context works afterwards.
//
// The ways in: io::File in each of its three modes. Everything else (write, read, read_array,
// info, groups, attributes) takes a File or a Group, and a Group comes only from a File, so
// the calls below are written as a user writes them: open, then write or read.
#include <hdf5.h>
#ifdef H5_HAVE_PARALLEL
#error "test_io_serial_hdf5 must be compiled against an HDF5 built without MPI (tests/io/serial_hdf5.cmake)"
#endif

#include "io/io_support.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <type_traits>

using namespace iotest;
using garray::GlobalArray;
using garray::idx;
using garray::range;
using garray::_;

static_assert(!std::is_default_constructible_v<io::Group>, "a Group comes only from a File");

namespace {

std::string serial_name(const garray::Context& ctx, const std::string& stem) {
  return "io_serial_" + stem + "_np" + std::to_string(ctx.size()) + ".h5";
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Rank 0 writes a real HDF5 file with the serial library directly: dataset "u", 6x5 float64
/// holding bits_value(i, 1). Returns its bytes on every rank (empty if writing failed).
std::string make_hdf5_file(const garray::Context& ctx, const std::string& path) {
  if (ctx.rank() == 0) {
    std::vector<double> v(30);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = bits_value<double>(i, 1);
    const hsize_t dims[2] = {6, 5};
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t s = H5Screate_simple(2, dims, nullptr);
    const hid_t d = H5Dcreate2(f, "u", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
  }
  ctx.barrier();
  return file_bytes(path);
}

/// FileError's message names `path` and says HDF5 has no MPI.
bool says_no_mpi(const std::string& m, const std::string& path) {
  return contains(m, "garray::io::File") && contains(m, "'" + path + "'") && contains(m, "built without MPI");
}

}  // namespace

TEST_CASE("io without parallel HDF5: File in every mode throws FileError on every rank, touches no file") {
  garray::Context ctx;
  const std::string missing = serial_name(ctx, "missing");
  if (ctx.rank() == 0) std::filesystem::remove(missing);
  ctx.barrier();
  int errors = 0;
  for (io::Mode mode : {io::Mode::create, io::Mode::read_write, io::Mode::read_only}) {
    const std::string m = message_of<io::FileError>([&] { io::File f(ctx, missing, mode); });
    INFO("mode " << static_cast<int>(mode) << ": " << m);
    CHECK(says_no_mpi(m, missing));
    errors += says_no_mpi(m, missing) ? 1 : 0;
    ctx.barrier();
    CHECK_FALSE(std::filesystem::exists(missing));  // create created nothing
  }
  CHECK(test::all_ranks(errors == 3, ctx.comm()));

  // An existing HDF5 file: create must not truncate it, read_write must not change it.
  const std::string existing = serial_name(ctx, "existing");
  const std::string bytes = make_hdf5_file(ctx, existing);
  REQUIRE(!bytes.empty());
  for (io::Mode mode : {io::Mode::create, io::Mode::read_write, io::Mode::read_only}) {
    const std::string m = message_of<io::FileError>([&] { io::File f(ctx, existing, mode); });
    INFO("mode " << static_cast<int>(mode) << ": " << m);
    CHECK(says_no_mpi(m, existing));
    ctx.barrier();
    const bool unchanged = file_bytes(existing) == bytes;
    CHECK(unchanged);
  }
  remove_file(ctx, existing);
}

TEST_CASE("io without parallel HDF5: write, read, read_array, info as a user calls them; data unchanged") {
  garray::Context ctx;
  const std::string path = serial_name(ctx, "data");
  const std::string bytes = make_hdf5_file(ctx, path);
  REQUIRE(!bytes.empty());

  GlobalArray<double, 2> a(ctx, {6, 5});
  fill_bits(a, 7);
  const auto a_before = all_of(a);
  int errors = 0;
  auto expect = [&](const char* call, auto&& f) {
    const std::string m = message_of<io::FileError>(f);
    INFO(call << ": " << m);
    CHECK(says_no_mpi(m, path));
    errors += says_no_mpi(m, path) ? 1 : 0;
  };

  expect("write (create)", [&] {
    io::File f(ctx, path, io::Mode::create);
    io::write(f, "a", a);
  });
  expect("write a view (read_write)", [&] {
    io::File f(ctx, path, io::Mode::read_write);
    io::write(f, "v", a[idx[range(_, _, -1)]]);
  });
  expect("set_attribute (read_write)", [&] {
    io::File f(ctx, path, io::Mode::read_write);
    f.set_attribute("step", std::int64_t{250});
  });
  expect("read", [&] {
    io::File f(ctx, path);
    io::read(f, "u", a);
  });
  expect("read a view", [&] {
    io::File f(ctx, path);
    io::read(f, "u", a[idx[range(1, 3)]]);
  });
  expect("read_array", [&] { (void)io::read_array<double, 2>(io::File(ctx, path), "u"); });
  expect("info", [&] { (void)io::info(io::File(ctx, path), "u"); });

  CHECK(test::all_ranks(errors == 7, ctx.comm()));  // every rank threw each time
  CHECK(bitwise_equal(all_of(a), a_before));        // the array is unchanged
  ctx.barrier();
  const bool unchanged = file_bytes(path) == bytes;
  CHECK(unchanged);  // the file is unchanged

  // The context still works: a new array, a collective fill, one-sided reads.
  GlobalArray<double, 1> b(ctx, {7});
  b.fill(2.5);
  const auto vb = all_of(b);
  CHECK(std::all_of(vb.begin(), vb.end(), [](double x) { return x == 2.5; }));
  remove_file(ctx, path);
}

#pragma once
// Helpers of the I/O tests: per-run file names, bitwise values from an index, comparisons.
#include "array/movement_support.hpp"

#include <garray/array/io.hpp>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/wait.h>
#include <string>
#include <vector>

namespace iotest {

using garray::Index;
using garray::Shape;
namespace io = garray::io;

/// A file name private to this test process group: tests at different rank counts run in
/// parallel in one directory.
inline std::string tmp_name(const garray::Context& ctx, const std::string& stem) {
  return "io_" + stem + "_np" + std::to_string(ctx.size()) + ".h5";
}

inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/// A value with all mantissa bits in use (bitwise comparisons mean something), from a
/// linear index and a salt. The Python side of the interop test computes the same formula
/// for the int64 and float64 cases (value_formula).
template <class T>
T bits_value(std::uint64_t lin, std::uint64_t salt = 0) {
  const std::uint64_t h = mix(lin * 0x9e3779b97f4a7c15ULL + salt + 1);
  auto real = [](std::uint64_t x) { return static_cast<double>(x >> 11) * 0x1p-53 * 2000.0 - 1000.0; };
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(real(h));
  else if constexpr (std::is_same_v<T, double>) return real(h);
  else if constexpr (std::is_same_v<T, std::int32_t>) return static_cast<std::int32_t>(h >> 32);
  else if constexpr (std::is_same_v<T, std::int64_t>) return static_cast<std::int64_t>(h);
  else {
    using R = typename T::value_type;
    return T(static_cast<R>(real(h)), static_cast<R>(real(mix(h))));
  }
}

template <std::size_t N>
Index linear(const Shape<N>& shape, const Shape<N>& i) {
  Index lin = 0;
  for (std::size_t d = 0; d < N; ++d) lin = lin * shape[d] + i[d];
  return lin;
}

/// Sets every owned element of `a` to bits_value(linear index, salt). Collective (sync).
template <class T, std::size_t N>
void fill_bits(garray::GlobalArray<T, N>& a, std::uint64_t salt = 0) {
  {
    auto blk = a.access();
    if (!blk.empty()) {
      std::array<std::vector<Index>, N> ids;
      for (std::size_t d = 0; d < N; ++d)
        for (Index i = blk.lo(d); i < blk.hi(d); ++i) ids[d].push_back(i);
      test::for_each_selected<N>(ids, [&](const Shape<N>& i, Index) {
        blk.view()(i) = bits_value<T>(static_cast<std::uint64_t>(linear(a.shape(), i)), salt);
      });
    }
  }
  a.sync();
}

/// The whole array (one-sided get on every rank).
template <class T, std::size_t N>
std::vector<T> all_of(const garray::GlobalArray<T, N>& a) {
  return test::whole_array(a);
}

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

using test::message_of;  // support/test_support.hpp
using test::contains;

/// Removes a file on rank 0 after everybody is done with it.
inline void remove_file(const garray::Context& ctx, const std::string& name) {
  ctx.barrier();
  if (ctx.rank() == 0) std::remove(name.c_str());
  ctx.barrier();
}

/// run_h5py's answer when /usr/bin/python3 has no h5py and NumPy (the caller skips).
constexpr int no_h5py = -1;
/// Rank 0 writes `script` to STEM.py and runs it with /usr/bin/python3 on `arg` (a script
/// exits 77 when it cannot import h5py and NumPy); on every rank: 0 ok, 1 failed, no_h5py.
/// The broadcast orders whatever the script wrote before every rank's next step.
inline int run_h5py(const garray::Context& ctx, const std::string& stem, const char* script,
                    const std::string& arg) {
  int rc = 0;
  if (ctx.rank() == 0) {
    const std::string py = stem + ".py";
    { std::ofstream(py) << script; }
    const int st = std::system(("/usr/bin/python3 " + py + " " + arg + " 2>&1").c_str());
    std::remove(py.c_str());
    const int code = (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : 1;
    rc = code == 0 ? 0 : (code == 77 || code == 127) ? no_h5py : 1;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, ctx.comm());
  return rc;
}

}  // namespace iotest

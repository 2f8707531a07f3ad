#pragma once
// Helpers of the NumPy comparison tests (issue 15): JSON dumps of arrays and scalars, the
// case file written by rank 0 and its check by tests/numeric/numpy_check.py.
#include "support/test_support.hpp"

#include <garray/garray.hpp>

#include <unistd.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#ifndef GARRAY_NUMPY_CHECK
#error "GARRAY_NUMPY_CHECK (path of tests/numeric/numpy_check.py) must be defined"
#endif

namespace nptest {

using garray::Index;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

/// Calls f(std::type_identity<T>{}) for each of the library's six element types, in a fixed
/// order (float, double, int32, int64, complex<float>, complex<double>): the random cases of
/// a suite draw from one generator, so the order is part of what a seed reproduces.
template <class F>
void for_each_type(F&& f) {
  f(std::type_identity<float>{});
  f(std::type_identity<double>{});
  f(std::type_identity<std::int32_t>{});
  f(std::type_identity<std::int64_t>{});
  f(std::type_identity<c64>{});
  f(std::type_identity<c128>{});
}

template <class T>
inline const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, c64>) return "complex64";
  else if constexpr (std::is_same_v<T, c128>) return "complex128";
  else if constexpr (std::is_same_v<T, bool>) return "bool";
}

template <class T>
std::string js(const T& v) {
  std::ostringstream os;
  os.precision(17);
  if constexpr (garray::detail::is_complex<T>::value) {
    os << "[" << js(v.real()) << ", " << js(v.imag()) << "]";
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v != v) os << "NaN";
    else if (v == 0 && std::signbit(v)) os << "-0.0";  // "-0" would read back as the integer 0
    else if (v == std::numeric_limits<T>::infinity()) os << "Infinity";
    else if (v == -std::numeric_limits<T>::infinity()) os << "-Infinity";
    else os << static_cast<double>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else {
    os << static_cast<long long>(v);
  }
  return os.str();
}

/// The whole array as JSON on rank 0 ("" elsewhere). One-sided get by rank 0.
template <class T, std::size_t N>
std::string dump(const garray::GlobalArray<T, N>& a) {
  if (a.context().rank() != 0) return "";
  std::vector<T> v(static_cast<std::size_t>(a.size()));
  if (!v.empty()) a.get_section(garray::Section<N>::full(a.shape()), v);
  std::ostringstream os;
  os << "{\"dtype\": \"" << dtype_name<T>() << "\", \"shape\": [";
  for (std::size_t d = 0; d < N; ++d) os << (d ? ", " : "") << a.shape()[d];
  os << "], \"data\": [";
  for (std::size_t k = 0; k < v.size(); ++k) os << (k ? ", " : "") << js(v[k]);
  os << "]}";
  return os.str();
}

struct Cases {
  std::ofstream out;
  std::string path;
  int rank = 0;
  Cases(const garray::Context& ctx, const std::string& tag) : rank(ctx.rank()) {
    Index pid = static_cast<Index>(getpid());
    MPI_Bcast(&pid, 1, MPI_INT64_T, 0, ctx.comm());
    path = "/tmp/garray_numpy_" + tag + "_" + std::to_string(pid) + "_" + std::to_string(ctx.size()) + ".jsonl";
    if (rank == 0) out.open(path);
  }
  /// One case: `fields` is the JSON body without braces (rank 0 only writes).
  void add(const std::string& fields) {
    if (rank == 0) out << "{" << fields << "}\n";
  }
  /// Runs the NumPy check on rank 0; its verdict on every rank.
  bool check(const garray::Context& ctx) {
    int rc = 0;
    if (rank == 0) {
      out.close();
      const std::string cmd = std::string("/usr/bin/python3 ") + GARRAY_NUMPY_CHECK + " " + path;
      rc = std::system(cmd.c_str());
      if (rc == 0) std::remove(path.c_str());
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, ctx.comm());
    return rc == 0;
  }
};

template <class T, std::size_t N>
std::string shape_js(const garray::Shape<N>& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t d = 0; d < N; ++d) os << (d ? ", " : "") << s[d];
  os << "]";
  return os.str();
}

/// Random contents: small integers (ties for argmax), or reals / complex numbers.
template <class T, std::size_t N>
void randomize(garray::GlobalArray<T, N>& a, std::uint64_t seed, bool small) {
  if constexpr (garray::detail::is_complex<T>::value) {
    using R = typename T::value_type;
    garray::fill_random(a, seed, R{-3}, R{3});
    if (small) a = garray::where(garray::abs(a) < R{1}, T{0}, a);
    a = a * T(R{1}, R{0.5});
  } else if constexpr (std::is_integral_v<T>) {
    garray::fill_random(a, seed, T{small ? -2 : -1000}, T{small ? 3 : 1000});
  } else {
    garray::fill_random(a, seed, T{-10}, T{10});
    if (small) a = garray::where(garray::abs(a) < T{5}, T{0}, a);
  }
}

/// NaN in about one element in `one_in` (real types: NaN; complex: NaN in the real or in the
/// imaginary part), at positions drawn from `seed`. Collective.
template <class T, std::size_t N>
void sprinkle_nan(garray::GlobalArray<T, N>& a, std::uint64_t seed, int one_in) {
  if constexpr (std::is_floating_point_v<T> || garray::detail::is_complex<T>::value) {
    garray::GlobalArray<std::int32_t, N> m(a.context(), a.shape(), a.distribution());
    garray::fill_random(m, seed, std::int32_t{0}, std::int32_t{one_in});
    if constexpr (garray::detail::is_complex<T>::value) {
      using R = typename T::value_type;
      const R nan = std::numeric_limits<R>::quiet_NaN();
      a = garray::where(m == 0, T(nan, R{1}), garray::where(m == 1, T(R{-1}, nan), a));
    } else {
      a = garray::where(m == 0, std::numeric_limits<T>::quiet_NaN(), a);
    }
  }
}

}  // namespace nptest

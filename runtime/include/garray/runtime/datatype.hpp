#pragma once
// Compile-time map from C++ element types to predefined MPI datatypes.
//
// Supported: float, double, int32_t, int64_t, std::complex<float>, std::complex<double>.
// A type with no mapping fails to compile at the point of use with the message of the
// `Element` concept ("... is not a garray element type").

#include <mpi.h>

#include <complex>
#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace garray {
namespace detail {

template <class T>
struct MpiTypeOf {
  static constexpr bool known = false;
};

#define GARRAY_DETAIL_MPI_TYPE(CXX, MPIT, NAME)                 \
  template <>                                                   \
  struct MpiTypeOf<CXX> {                                       \
    static constexpr bool known = true;                         \
    static constexpr std::string_view name = NAME;              \
    static MPI_Datatype get() noexcept { return MPIT; }         \
  };
GARRAY_DETAIL_MPI_TYPE(float, MPI_FLOAT, "float")
GARRAY_DETAIL_MPI_TYPE(double, MPI_DOUBLE, "double")
GARRAY_DETAIL_MPI_TYPE(std::int32_t, MPI_INT32_T, "int32")
GARRAY_DETAIL_MPI_TYPE(std::int64_t, MPI_INT64_T, "int64")
GARRAY_DETAIL_MPI_TYPE(std::complex<float>, MPI_C_FLOAT_COMPLEX, "complex<float>")
GARRAY_DETAIL_MPI_TYPE(std::complex<double>, MPI_C_DOUBLE_COMPLEX, "complex<double>")
#undef GARRAY_DETAIL_MPI_TYPE

template <class T>
inline constexpr bool has_mpi_type = MpiTypeOf<T>::known;

/// Expands M(T) for each of the six element types libgarray compiles (the extern template
/// declarations of global_array.hpp, movement.hpp and halo.hpp; the CMake lists behind
/// instantiate.cpp.in and io_instantiate.cpp.in must name the same six).
#define GARRAY_FOR_EACH_ELEMENT_TYPE(M) \
  M(float)                              \
  M(double)                             \
  M(std::int32_t)                       \
  M(std::int64_t)                       \
  M(std::complex<float>)                \
  M(std::complex<double>)

/// A small integer identifying the element type in collective signatures.
template <class T>
constexpr int type_code() noexcept {
  if constexpr (std::is_same_v<T, float>) return 1;
  else if constexpr (std::is_same_v<T, double>) return 2;
  else if constexpr (std::is_same_v<T, std::int32_t>) return 3;
  else if constexpr (std::is_same_v<T, std::int64_t>) return 4;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return 5;
  else return 6;
}

}  // namespace detail

/// An element type garray can distribute: trivially copyable with a predefined MPI type.
template <class T>
concept Element = std::is_trivially_copyable_v<T> && detail::has_mpi_type<T>;

/// Element types `read_inc` accepts (MPI_Fetch_and_op with MPI_SUM on an integer).
template <class T>
concept IntegerElement = Element<T> && std::integral<T>;

/// Local. Returns the predefined MPI datatype of `T` (e.g. MPI_DOUBLE).
template <Element T>
MPI_Datatype mpi_type() noexcept {
  return detail::MpiTypeOf<T>::get();
}

/// Local. Returns the name of `T` in messages: "float", "double", "int32", "int64",
/// "complex<float>", "complex<double>".
template <Element T>
constexpr std::string_view type_name() noexcept {
  return detail::MpiTypeOf<T>::name;
}

}  // namespace garray

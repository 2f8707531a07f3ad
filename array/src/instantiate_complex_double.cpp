// GlobalArray<std::complex<double>, N> for N = 1..4, compiled once into libgarray_array (see the
// extern template declarations at the end of global_array.hpp).
#define GARRAY_INSTANTIATING
#include <garray/array/global_array.hpp>

#include <complex>
#include <cstdint>

namespace garray {
template class GlobalArray<std::complex<double>, 1>;
template class GlobalArray<std::complex<double>, 2>;
template class GlobalArray<std::complex<double>, 3>;
template class GlobalArray<std::complex<double>, 4>;
}  // namespace garray

// NumPy: int_array *= 2.5 (float into int) and real_view *= complex (complex into float) raise
// UFuncTypeError under same_kind casting. Here neither compiles (two static_asserts; the test
// matches the message).
#include <complex>
#include <garray/garray.hpp>
void f(garray::GlobalArray<std::int32_t, 1>& a, garray::GlobalArray<double, 1>& d,
       garray::GlobalArray<std::complex<double>, 1>& z) {
  a *= 2.5;
  d.view() *= z;
}

// Must compile: the same includes and calls as the failing cases, used correctly.
#include <complex>
#include <garray/garray.hpp>
void f(garray::GlobalArray<std::int64_t, 2>& a, std::span<std::int64_t> buf) {
  a.get(garray::idx[1][2], buf);
  (void)a.read_inc({0, 0}, 1);
}
// In-place operations NumPy's same_kind casting allows: within a kind (int32 += int64,
// float32 *= 2.0), up a kind into the output (double *= int, complex *= double), bool into int.
void g(garray::GlobalArray<std::int32_t, 1>& i32, garray::GlobalArray<std::int64_t, 1>& i64,
       garray::GlobalArray<float, 1>& f32, garray::GlobalArray<double, 1>& d,
       garray::GlobalArray<std::complex<double>, 1>& z) {
  i32 += i64;
  f32 *= 2.0;
  d.view() *= i64;
  z /= d;
  i64 -= d < 0.0;
  garray::assign(i64, garray::cast<std::int64_t>(i64 / 2));  // what the message suggests
}

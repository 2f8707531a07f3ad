// Reproducible norms on a build that fuses multiply-adds (audit, stop 42).
//
// semantics.md "Reductions": the reproducible norm2 and assign_norm2_* add the terms
// |x_i|^2 = re*re + im*im exactly, each square rounded, and the result is Python's math.fsum
// of those terms on every build. GCC contracts `re * re + im * im` into one fused
// multiply-add (rounded once) wherever the target has FMA: on aarch64 by default, on x86-64
// with -march=native. This binary is compiled with -mfma where the CPU has it
// (tests/CMakeLists.txt), so the library's inline code here is contracted wherever the
// compiler may; the reference rounds each square through a volatile, which nothing can fuse.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <garray/garray.hpp>
#include <garray/numeric/detail/exact_sum.hpp>
#include <random>
#include <span>
#include <vector>

#include "support/test_support.hpp"

namespace {

using garray::idx, garray::range;

// The contract's term: each square rounded to double, then their sum rounded.
double term(std::complex<double> z) {
  volatile double rr = z.real() * z.real();
  volatile double ii = z.imag() * z.imag();
  return rr + ii;
}

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

// The same formula as the compiler builds it here, unprotected: where this TU fuses, some of
// these differ from term() (the control that the test can fail).
[[gnu::noinline]] double fusable(double re, double im) { return re * re + im * im; }

}  // namespace

TEST_CASE("reproducible complex norms round each square, also where the compiler fuses multiply-adds") {
  garray::Context ctx;
  const garray::Index n = 48;
  std::mt19937_64 gen(20261129);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::vector<std::complex<double>> z(static_cast<std::size_t>(n));
  for (auto& x : z) x = {u(gen), u(gen)};
  // The values must tell the two apart: a fused square differs in some of them.
  int fused_differs = 0;
  for (const auto& x : z)
    if (std::fma(x.real(), x.real(), x.imag() * x.imag()) != term(x)) ++fused_differs;
  REQUIRE(fused_differs > 0);
  int compiler_fused = 0;
  for (const auto& x : z)
    if (fusable(x.real(), x.imag()) != term(x)) ++compiler_fused;
#if defined(__FMA__) && defined(__OPTIMIZE__)
  CHECK(compiler_fused > 0);  // built with -mfma (tests/CMakeLists.txt): the unprotected formula is fused
#else
  MESSAGE("this build does not fuse multiply-adds (" << compiler_fused
                                                     << " differ): the test cannot fail here");
#endif

  garray::GlobalArray<std::complex<double>, 1> a(ctx, {n});
  if (ctx.rank() == 0) a.put(idx[range()], std::span<const std::complex<double>>(z));
  a.sync();
  // one element at a time: the norm of one term is sqrt of that term, correctly rounded
  int wrong = 0;
  for (garray::Index i = 0; i < n; ++i) {
    const double got = garray::norm2(a[idx[range(i, i + 1)]], garray::reproducible);
    if (bits(got) != bits(std::sqrt(term(z[static_cast<std::size_t>(i)])))) ++wrong;
  }
  CHECK(wrong == 0);
  // the whole array: sqrt of the exact sum of the terms
  garray::detail::ExactSum exact;
  for (const auto& x : z) exact.add(term(x));
  const double want = std::sqrt(exact.round<double>());
  CHECK(bits(garray::norm2(a, garray::reproducible)) == bits(want));
  // assign_norm2_change into zeros: |x - 0|^2, the same terms
  garray::GlobalArray<std::complex<double>, 1> out(ctx, {n});
  CHECK(bits(garray::assign_norm2_change(out, a, garray::reproducible)) == bits(want));
  // assign_norm2_diff against zeros: |x - 0|^2 again
  garray::GlobalArray<std::complex<double>, 1> zero(ctx, {n}), v(ctx, {n});
  CHECK(bits(garray::assign_norm2_diff(v, a, zero, garray::reproducible)) == bits(want));
  CHECK(test::all_ranks(test::whole_array(v) == z));
}

#pragma once
// Exact, order-independent summation of floating-point values (the reproducible reductions).
//
// ExactSum is a fixed-point "superaccumulator" covering the whole double range: the value
// is sum_k c[k] * 2^(32 k - 1074) with 70 signed 64-bit chunks. A finite double is
// m * 2^(p - 1074) with an integer mantissa m < 2^53 and a bit position 0 <= p <= 2045, so
// adding it is two integer additions: the 32 bits of (m << p % 32) that fall into chunk
// p / 32 and the rest into the next chunk. Every chunk is kept in [0, 2^32) between
// additions by normalize() (carry propagation), run every `budget` additions: a chunk then
// receives at most budget * 2^52 < 2^63, so nothing overflows. Integer additions are
// associative, so the sum of any multiset of doubles is the same integer whatever the order
// of the additions and however they are split over ranks; combining ranks is one
// MPI_Allreduce (MPI_SUM over the normalized chunks, int64), and the single rounding at the
// end (to nearest, ties to even, done on the exact integer) makes the result the correctly
// rounded exact sum: bitwise equal to Python's math.fsum of the same values.
//
// Special values are counted apart: any NaN, or +inf together with -inf, gives NaN; else
// an infinity gives that infinity; a finite sum too large for the type rounds to +-inf.
// An exact zero gives +0.0. float values are converted to double exactly; integers are
// added exactly (an int64 or uint64 is two 32-bit chunk additions at the units position).
//
// Everything here is Local except allreduce(), which is Collective over the communicator.

#include <garray/runtime/error.hpp>

#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace garray {

/// The tag type of reproducible reductions (see `garray::reproducible`).
struct reproducible_t {
  explicit constexpr reproducible_t() = default;
};
/// Selects the reproducible variant of a reduction: `sum(x, garray::reproducible)`,
/// `dot(a, b, garray::reproducible)`, `norm2(x, garray::reproducible)`,
/// `mean(x, garray::reproducible)`, `assign_norm2_change(out, expr, garray::reproducible)`,
/// `assign_norm2_diff(out, expr, ref, garray::reproducible)`. The floating-point result is
/// the exact sum of the terms rounded once (to nearest, ties to even): bitwise identical for
/// every rank count, process grid, distribution and view of the same values.
inline constexpr reproducible_t reproducible{};

namespace detail {

/// An exact accumulator of doubles (see the file comment). Local.
class ExactSum {
 public:
  static constexpr int chunks = 70;     ///< 32-bit digits (2240 bits: the double range + carries)
  static constexpr int budget = 2000;   ///< additions between two normalizations
  static constexpr int words = chunks + 3;  ///< chunks + counts of +inf, -inf, NaN (the wire format)

  ExactSum() noexcept { clear(); }

  /// Local. Back to an exact zero.
  void clear() noexcept {
    std::fill(c_, c_ + words, std::int64_t{0});
    left_ = budget;
  }

  /// Local. Adds x exactly (inline, branch-free except for inf/NaN).
  [[gnu::always_inline]] inline void add(double x) noexcept {
    const auto b = std::bit_cast<std::uint64_t>(x);
    const std::uint64_t e = (b >> 52) & 0x7FF;
    if (e == 0x7FF) [[unlikely]] {
      special(b);
      return;
    }
    const std::uint64_t normal = e != 0 ? 1 : 0;
    const std::uint64_t m = (b & 0xFFFFFFFFFFFFFull) | (normal << 52);
    const std::uint64_t p = e - normal;  // subnormals share the position of e == 1
    const unsigned s = static_cast<unsigned>(p & 31);
    const std::size_t i = static_cast<std::size_t>(p >> 5);
    const std::int64_t neg = static_cast<std::int64_t>(b) >> 63;  // 0 or -1
    const auto lo = static_cast<std::int64_t>((m << s) & 0xFFFFFFFFull);
    const auto hi = static_cast<std::int64_t>(m >> (32 - s));
    c_[i] += (lo ^ neg) - neg;
    c_[i + 1] += (hi ^ neg) - neg;
    if (--left_ == 0) [[unlikely]] normalize();
  }
  /// Local. Adds a float exactly (its double conversion is exact).
  [[gnu::always_inline]] inline void add(float x) noexcept { add(static_cast<double>(x)); }
  /// Local. Adds an integer exactly.
  template <class I>
    requires std::is_integral_v<I>
  void add(I x) noexcept {
    constexpr std::size_t units = 1074 / 32;  // chunk of 2^0: bit 1074 = 33 * 32 + 18
    constexpr unsigned shift = 1074 % 32;
    if constexpr (std::is_signed_v<I>) {
      const auto v = static_cast<std::int64_t>(x);
      const std::uint64_t mag = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
      add_magnitude(mag, units, shift, v < 0);
    } else {
      add_magnitude(static_cast<std::uint64_t>(x), units, shift, false);
    }
  }

  /// Local. Carry propagation: every chunk but the top one into [0, 2^32).
  void normalize() noexcept {
    for (int k = 0; k + 1 < chunks; ++k) {
      const std::int64_t carry = c_[k] >> 32;  // floor division by 2^32
      c_[k] &= 0xFFFFFFFF;
      c_[k + 1] += carry;
    }
    left_ = budget;
  }

  /// Local. *this += o, exactly.
  void merge(const ExactSum& o) noexcept {
    ExactSum t = o;
    t.normalize();
    normalize();
    for (int k = 0; k < words; ++k) c_[k] += t.c_[k];
    normalize();
  }

  /// Local. Normalizes and exposes the wire format (words int64 values) for a sum over ranks.
  std::int64_t* wire() noexcept {
    normalize();
    return c_;
  }

  /// Local. The exact sum rounded to T (double or float) to nearest, ties to even; NaN/inf
  /// as described in the file comment; +0.0 for an exact zero.
  template <class T>
  T round() const noexcept {
    static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>);
    const std::int64_t pinf = c_[chunks], ninf = c_[chunks + 1], nan = c_[chunks + 2];
    if (nan != 0 || (pinf != 0 && ninf != 0)) return std::numeric_limits<T>::quiet_NaN();
    if (pinf != 0) return std::numeric_limits<T>::infinity();
    if (ninf != 0) return -std::numeric_limits<T>::infinity();
    ExactSum t = *this;
    t.normalize();
    bool negative = t.c_[chunks - 1] < 0;
    if (negative) {
      for (int k = 0; k < chunks; ++k) t.c_[k] = -t.c_[k];
      t.normalize();
    }
    int h = chunks - 1;
    while (h >= 0 && t.c_[h] == 0) --h;
    if (h < 0) return T(0);
    const std::int64_t length =
        32 * std::int64_t{h} + static_cast<std::int64_t>(std::bit_width(static_cast<std::uint64_t>(t.c_[h])));
    constexpr std::int64_t P = std::numeric_limits<T>::digits;
    // Lowest kept bit position: P bits below the top, but not below the type's subnormal lsb.
    constexpr std::int64_t kmin = (std::numeric_limits<T>::min_exponent - P) + 1074;
    const std::int64_t k = std::max(length - P, kmin);
    double v;
    if (k <= 0) {
      v = std::ldexp(static_cast<double>(t.bits(0, static_cast<int>(length))), -1074);  // exact
    } else {
      std::uint64_t q = length > k ? t.bits(k, static_cast<int>(length - k)) : 0;
      const bool half = t.bit(k - 1);
      const bool sticky = t.any_below(k - 1);
      if (half && (sticky || (q & 1))) ++q;
      v = std::ldexp(static_cast<double>(q), static_cast<int>(k - 1074));  // exact, or inf
    }
    T r;
    if constexpr (std::is_same_v<T, float>)
      r = v > static_cast<double>(std::numeric_limits<float>::max()) ? std::numeric_limits<float>::infinity()
                                                                     : static_cast<float>(v);
    else
      r = v;
    return negative ? -r : r;
  }

 private:
  void special(std::uint64_t b) noexcept {
    if ((b & 0xFFFFFFFFFFFFFull) != 0) ++c_[chunks + 2];
    else if (b >> 63) ++c_[chunks + 1];
    else ++c_[chunks];
  }
  void add_magnitude(std::uint64_t mag, std::size_t i, unsigned s, bool negative) noexcept {
    // mag * 2^s spread over chunks i, i+1, i+2 (each part < 2^32).
    const std::uint64_t lo = (mag << s) & 0xFFFFFFFFull;
    const std::uint64_t mid = (mag >> (32 - s)) & 0xFFFFFFFFull;
    const std::uint64_t hi = s == 0 ? 0 : mag >> (64 - s);
    const std::int64_t sg = negative ? -1 : 1;
    c_[i] += sg * static_cast<std::int64_t>(lo);
    c_[i + 1] += sg * static_cast<std::int64_t>(mid);
    c_[i + 2] += sg * static_cast<std::int64_t>(hi);
    if (--left_ == 0) normalize();
  }
  // On a normalized, nonnegative value: bit j, bits [j, j + n) (n <= 64), any bit below j.
  bool bit(std::int64_t j) const noexcept {
    if (j < 0) return false;
    return ((static_cast<std::uint64_t>(c_[j / 32]) >> (j % 32)) & 1) != 0;
  }
  std::uint64_t bits(std::int64_t j, int n) const noexcept {
    std::uint64_t r = 0;
    for (int q = 0; q < n; ++q)
      if (bit(j + q)) r |= std::uint64_t{1} << q;
    return r;
  }
  bool any_below(std::int64_t j) const noexcept {
    if (j <= 0) return false;
    const std::int64_t w = j / 32;
    for (std::int64_t q = 0; q < w; ++q)
      if (c_[q] != 0) return true;
    const std::uint64_t mask = (std::uint64_t{1} << (j % 32)) - 1;
    return (static_cast<std::uint64_t>(c_[w]) & mask) != 0;
  }

  alignas(64) std::int64_t c_[words];
  int left_ = budget;
};

/// An exact accumulator for a real or complex value type: one ExactSum per component. Local
/// except allreduce().
template <class V>
struct ExactAcc {
  static constexpr bool complex = false;
  ExactSum re;
  template <class X>
  [[gnu::always_inline]] inline void add(const X& x) noexcept {
    re.add(x);
  }
  void merge(const ExactAcc& o) noexcept { re.merge(o.re); }
  /// Collective over `comm`: every rank ends with the exact total (one MPI_Allreduce).
  void allreduce(MPI_Comm comm) {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, re.wire(), ExactSum::words, MPI_INT64_T, MPI_SUM, comm),
              "MPI_Allreduce");
  }
  /// Local. The rounded total.
  V value() const noexcept { return re.round<V>(); }
};
template <class X>
struct ExactAcc<std::complex<X>> {
  static constexpr bool complex = true;
  ExactSum re, im;
  template <class Y>
  [[gnu::always_inline]] inline void add(const std::complex<Y>& x) noexcept {
    re.add(x.real());
    im.add(x.imag());
  }
  template <class Y>
  [[gnu::always_inline]] inline void add(const Y& x) noexcept {
    re.add(x);
  }
  void merge(const ExactAcc& o) noexcept {
    re.merge(o.re);
    im.merge(o.im);
  }
  void allreduce(MPI_Comm comm) {
    std::int64_t buf[2 * ExactSum::words];
    std::copy_n(re.wire(), ExactSum::words, buf);
    std::copy_n(im.wire(), ExactSum::words, buf + ExactSum::words);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf, 2 * ExactSum::words, MPI_INT64_T, MPI_SUM, comm),
              "MPI_Allreduce");
    std::copy_n(buf, ExactSum::words, re.wire());
    std::copy_n(buf + ExactSum::words, ExactSum::words, im.wire());
  }
  std::complex<X> value() const noexcept { return {re.round<X>(), im.round<X>()}; }
};

}  // namespace detail
}  // namespace garray

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
// Speed: terms are added term by term only when they must be. ExactAcc::add_n buffers
// blocks of 256 terms and ExactSum::add_block takes the high bits of a whole block at once
// with exact floating-point "ExtractVector" slices (Rump, Ogita, Oishi), adding one exact
// double per slice; see add_block, docs/design.md and docs/performance.md.
//
// Everything here is Local except allreduce(), which is Collective over the communicator.

#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <garray/numeric/reproducible.hpp>
#include <garray/runtime/error.hpp>
#include <limits>
#include <type_traits>

namespace garray {

namespace detail {

/// An exact accumulator of doubles (see the file comment). Local.
///
/// For speed it has `lanes` independent copies of the chunks: consecutive terms usually hit
/// the same chunks, and spreading them over lanes (put(lane, x)) breaks the chain of
/// read-modify-writes on one memory word. normalize() carries every lane and folds them into
/// lane 0; the value is the sum of the lanes, so the lane a term went to does not matter.
class ExactSum {
 public:
  static constexpr int chunks = 70;         ///< 32-bit digits (2240 bits: the double range + carries)
  static constexpr int budget = 2000;       ///< puts per lane between two normalizations
  static constexpr int words = chunks + 3;  ///< chunks + counts of +inf, -inf, NaN (the wire format)
  static constexpr int lanes = 4;           ///< independent copies of the chunks

  ExactSum() noexcept { clear(); }

  /// Local. Back to an exact zero.
  void clear() noexcept {
    for (auto& l : c_) std::fill(l, l + words, std::int64_t{0});
    left_ = budget;
  }

  /// Local. Adds x exactly into lane `lane` (< lanes) without counting: the caller calls
  /// used() after at most room() puts per lane. Inline, branch-free except for inf/NaN.
  [[gnu::always_inline]] inline void put(int lane, double x) noexcept {
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
    std::int64_t* c = c_[lane];
    c[i] += (lo ^ neg) - neg;
    c[i + 1] += (hi ^ neg) - neg;
  }
  /// Local. put(lane, x * 2^-shift) for a finite x whose scaled value is a multiple of
  /// 2^-1074 (so the bits moved below the accumulator's lowest bit are zero).
  void put_shifted(int lane, double x, int shift) noexcept {
    if (shift == 0) {
      put(lane, x);
      return;
    }
    const auto b = std::bit_cast<std::uint64_t>(x);
    const std::uint64_t e = (b >> 52) & 0x7FF;
    const std::uint64_t normal = e != 0 ? 1 : 0;
    std::uint64_t m = (b & 0xFFFFFFFFFFFFFull) | (normal << 52);
    std::int64_t p = static_cast<std::int64_t>(e - normal) - shift;
    if (p < 0) {
      if (p <= -64) return;  // then m is 0
      m >>= -p;
      p = 0;
    }
    const unsigned s = static_cast<unsigned>(p & 31);
    const auto i = static_cast<std::size_t>(p >> 5);
    const std::int64_t neg = static_cast<std::int64_t>(b) >> 63;
    const auto lo = static_cast<std::int64_t>((m << s) & 0xFFFFFFFFull);
    const auto hi = static_cast<std::int64_t>(m >> (32 - s));
    std::int64_t* c = c_[lane];
    c[i] += (lo ^ neg) - neg;
    c[i + 1] += (hi ^ neg) - neg;
  }
  /// Local. How many more puts every lane may take before used() must be called.
  [[nodiscard]] int room() const noexcept { return left_; }
  /// Local. Records k puts per lane (k <= room()); normalizes when the budget is spent.
  void used(int k) noexcept {
    left_ -= k;
    if (left_ <= 0) normalize();
  }

  /// Terms per block of add_block (2^block_bits >= block + 2: see add_block).
  static constexpr int block = 256;
  static constexpr int block_bits = 9;

  /// Local. Adds buf[0], ..., buf[n - 1] (n <= block) exactly; overwrites buf.
  ///
  /// The fast path is Rump, Ogita and Oishi's ExtractVector (AccSum, 2008): with
  /// sigma = 2^k >= 2^block_bits * max|p_i|, q_i = (sigma + p_i) - sigma and p_i - q_i are
  /// exact, every q_i is a multiple of 2^-53 sigma, and the q_i sum to a double exactly in any
  /// order (every partial sum is a multiple of 2^-53 sigma below sigma). One such slice takes
  /// the top ~44 bits of every term at once, with plain (two-wide SIMD) floating-point
  /// additions; its sum goes into the accumulator (one add). The remainders p_i - q_i are
  /// sliced again, with sigma chosen from the largest remainder (so a block of 1.0s and
  /// 1e-100s takes 3 slices, not 10), until they are all zero, up to 16 slices; the nonzero
  /// terms left (blocks spanning very many exponent ranges) go in term by term; terms near
  /// the bottom of the exponent range are scaled up by 2^600 first (exact) and sliced too. Blocks with
  /// inf/NaN or terms near overflow go in term by term too. The result is the same exact sum.
  void add_block(double* buf, int n) noexcept {
    // The largest magnitude (and whether there is a NaN).
    double mx = 0;
    bool bad = false;
    int i = 0;
#if defined(__GNUC__)
    v2d m0 = {0, 0}, m1 = {0, 0}, m2 = {0, 0}, m3 = {0, 0};
    v2u nan = {0, 0};
    for (; i + 8 <= n; i += 8) {  // four independent chains: latency, not throughput, bound
      const v2d x0 = load2(buf + i), x1 = load2(buf + i + 2), x2 = load2(buf + i + 4),
                x3 = load2(buf + i + 6);
      const v2d a0 = abs2(x0), a1 = abs2(x1), a2 = abs2(x2), a3 = abs2(x3);
      m0 = a0 > m0 ? a0 : m0;
      m1 = a1 > m1 ? a1 : m1;
      m2 = a2 > m2 ? a2 : m2;
      m3 = a3 > m3 ? a3 : m3;
      nan |= reinterpret_cast<v2u>(x0 != x0) | reinterpret_cast<v2u>(x1 != x1) |
             reinterpret_cast<v2u>(x2 != x2) | reinterpret_cast<v2u>(x3 != x3);
    }
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    m0 = m2 > m0 ? m2 : m0;
    mx = std::max(m0[0], m0[1]);
    bad = (nan[0] | nan[1]) != 0;
#endif
    for (; i < n; ++i) {
      mx = std::max(mx, std::fabs(buf[i]));
      bad = bad || buf[i] != buf[i];
    }
    if (bad || !(mx <= 0x1p1000)) {
      add_terms(buf, n);
      return;
    }
    // Slices while anything is left: sigma = 2^(e + block_bits) with max|p_i| < 2^e, the
    // largest magnitude left (so empty ranges of exponents cost nothing).
    // What is left near the bottom of the exponent range (2^-53 sigma would be subnormal) is
    // scaled up by 2^scale once: exact (a power of two, no overflow or underflow), and the
    // slice sums are put back down by `scale` bits (still multiples of 2^-1074: exact).
    constexpr int scale = 600;
    int shift = 0;
    for (int slice = 0; slice < 16 && mx != 0; ++slice) {
      int es = static_cast<int>((std::bit_cast<std::uint64_t>(mx) >> 52) & 0x7FF) - 1022 + block_bits;
      if (es - 53 < -1022) {
        if (shift != 0) break;
        for (i = 0; i < n; ++i) buf[i] *= 0x1p600;
        mx *= 0x1p600;
        shift = scale;
        es = static_cast<int>((std::bit_cast<std::uint64_t>(mx) >> 52) & 0x7FF) - 1022 + block_bits;
      }
      const double sigma = std::bit_cast<double>(static_cast<std::uint64_t>(es + 1023) << 52);
      double t = 0;
      mx = 0;
      i = 0;
#if defined(__GNUC__)
      const v2d sg = {sigma, sigma};
      v2d t0 = {0, 0}, t1 = {0, 0}, t2 = {0, 0}, t3 = {0, 0};
      m0 = m1 = m2 = m3 = v2d{0, 0};
      for (; i + 8 <= n; i += 8) {
        const v2d x0 = load2(buf + i), x1 = load2(buf + i + 2), x2 = load2(buf + i + 4),
                  x3 = load2(buf + i + 6);
        const v2d q0 = (sg + x0) - sg, q1 = (sg + x1) - sg, q2 = (sg + x2) - sg, q3 = (sg + x3) - sg;
        const v2d r0 = x0 - q0, r1 = x1 - q1, r2 = x2 - q2, r3 = x3 - q3;
        store2(buf + i, r0);
        store2(buf + i + 2, r1);
        store2(buf + i + 4, r2);
        store2(buf + i + 6, r3);
        t0 += q0;
        t1 += q1;
        t2 += q2;
        t3 += q3;
        const v2d a0 = abs2(r0), a1 = abs2(r1), a2 = abs2(r2), a3 = abs2(r3);
        m0 = a0 > m0 ? a0 : m0;
        m1 = a1 > m1 ? a1 : m1;
        m2 = a2 > m2 ? a2 : m2;
        m3 = a3 > m3 ? a3 : m3;
      }
      t0 = (t0 + t1) + (t2 + t3);
      t = t0[0] + t0[1];
      m0 = m1 > m0 ? m1 : m0;
      m2 = m3 > m2 ? m3 : m2;
      m0 = m2 > m0 ? m2 : m0;
      mx = std::max(m0[0], m0[1]);
#endif
      for (; i < n; ++i) {
        const double q = (sigma + buf[i]) - sigma;
        buf[i] -= q;
        t += q;
        mx = std::max(mx, std::fabs(buf[i]));
      }
      put_shifted(0, t, shift);  // exact (see above)
      used(1);
    }
    if (mx != 0) {  // what is left, term by term (the nonzero ones, over the lanes)
      int k = 0;
      const double down = shift != 0 ? 0x1p-600 : 1.0;  // exact: multiples of 2^-1074 again
      for (i = 0; i < n; ++i)
        if (buf[i] != 0) buf[k++] = buf[i] * down;
      add_terms(buf, k);
    }
  }

  /// Local. Adds buf[0], ..., buf[n - 1] exactly, term by term (four lanes).
  void add_terms(const double* buf, int n) noexcept {
    int i = 0;
    while (n - i >= 4) {
      const int rounds = std::min((n - i) / 4, room());
      for (int r = 0; r < rounds; ++r, i += 4) {
        put(0, buf[i]);
        put(1, buf[i + 1]);
        put(2, buf[i + 2]);
        put(3, buf[i + 3]);
      }
      used(rounds);
    }
    for (; i < n; ++i) add(buf[i]);
  }

  /// Local. Adds x exactly.
  [[gnu::always_inline]] inline void add(double x) noexcept {
    put(0, x);
    used(1);
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

  /// Local. Carry propagation in every lane, then the lanes folded into lane 0: every chunk
  /// of lane 0 but the top one in [0, 2^32), the other lanes zero.
  void normalize() noexcept {
    for (int l = 0; l < lanes; ++l) carry(c_[l]);
    for (int l = 1; l < lanes; ++l)
      for (int k = 0; k < words; ++k) {
        c_[0][k] += c_[l][k];
        c_[l][k] = 0;
      }
    carry(c_[0]);
    left_ = budget;
  }

  /// Local. *this += o, exactly.
  void merge(const ExactSum& o) noexcept {
    ExactSum t = o;
    t.normalize();
    normalize();
    for (int k = 0; k < words; ++k) c_[0][k] += t.c_[0][k];
    normalize();
  }

  /// Local. Normalizes and exposes the wire format (words int64 values) for a sum over ranks
  /// (MPI_SUM as int64); values written back through it are taken as they are.
  std::int64_t* wire() noexcept {
    normalize();
    return c_[0];
  }

  /// Local. The exact sum rounded to T (double or float) to nearest, ties to even; NaN/inf
  /// as described in the file comment; +0.0 for an exact zero.
  template <class T>
  T round() const noexcept {
    static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>);
    ExactSum t = *this;
    t.normalize();
    const std::int64_t* c = t.c_[0];
    const std::int64_t pinf = c[chunks], ninf = c[chunks + 1], nan = c[chunks + 2];
    if (nan != 0 || (pinf != 0 && ninf != 0)) return std::numeric_limits<T>::quiet_NaN();
    if (pinf != 0) return std::numeric_limits<T>::infinity();
    if (ninf != 0) return -std::numeric_limits<T>::infinity();
    const bool negative = c[chunks - 1] < 0;
    if (negative) {
      for (int k = 0; k < chunks; ++k) t.c_[0][k] = -t.c_[0][k];
      t.normalize();
    }
    int h = chunks - 1;
    while (h >= 0 && c[h] == 0) --h;
    if (h < 0) return T(0);
    const std::int64_t length =
        32 * std::int64_t{h} + static_cast<std::int64_t>(std::bit_width(static_cast<std::uint64_t>(c[h])));
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
#if defined(__GNUC__)
  using v2d = double __attribute__((vector_size(16)));
  using v2u = std::uint64_t __attribute__((vector_size(16)));
  static v2d load2(const double* p) noexcept {
    v2d v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store2(double* p, v2d v) noexcept { std::memcpy(p, &v, sizeof v); }
  static v2d abs2(v2d v) noexcept {
    const v2u mask = {0x7FFFFFFFFFFFFFFFull, 0x7FFFFFFFFFFFFFFFull};
    return reinterpret_cast<v2d>(reinterpret_cast<v2u>(v) & mask);
  }
#endif
  [[gnu::noinline]] void special(std::uint64_t b) noexcept {
    if ((b & 0xFFFFFFFFFFFFFull) != 0)
      ++c_[0][chunks + 2];
    else if (b >> 63)
      ++c_[0][chunks + 1];
    else
      ++c_[0][chunks];
  }
  static void carry(std::int64_t* c) noexcept {
    for (int k = 0; k + 1 < chunks; ++k) {
      const std::int64_t up = c[k] >> 32;  // floor division by 2^32
      c[k] &= 0xFFFFFFFF;
      c[k + 1] += up;
    }
  }
  void add_magnitude(std::uint64_t mag, std::size_t i, unsigned s, bool negative) noexcept {
    // mag * 2^s spread over chunks i, i+1, i+2 (each part < 2^32).
    const std::uint64_t lo = (mag << s) & 0xFFFFFFFFull;
    const std::uint64_t mid = (mag >> (32 - s)) & 0xFFFFFFFFull;
    const std::uint64_t hi = s == 0 ? 0 : mag >> (64 - s);
    const std::int64_t sg = negative ? -1 : 1;
    c_[0][i] += sg * static_cast<std::int64_t>(lo);
    c_[0][i + 1] += sg * static_cast<std::int64_t>(mid);
    c_[0][i + 2] += sg * static_cast<std::int64_t>(hi);
    used(1);
  }
  // On a normalized, nonnegative value: bit j, bits [j, j + n) (n <= 64), any bit below j.
  bool bit(std::int64_t j) const noexcept {
    if (j < 0) return false;
    return ((static_cast<std::uint64_t>(c_[0][j / 32]) >> (j % 32)) & 1) != 0;
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
      if (c_[0][q] != 0) return true;
    const std::uint64_t mask = (std::uint64_t{1} << (j % 32)) - 1;
    return (static_cast<std::uint64_t>(c_[0][w]) & mask) != 0;
  }

  alignas(64) std::int64_t c_[lanes][words];
  int left_ = budget;
};

/// True for std::complex.
template <class X>
inline constexpr bool is_complex_v = false;
template <class X>
inline constexpr bool is_complex_v<std::complex<X>> = true;

/// An exact accumulator for a real or complex value type: one ExactSum per component. Local
/// except allreduce().
template <class V>
struct ExactAcc {
  ExactSum re;
  template <class X>
  [[gnu::always_inline]] inline void add(const X& x) noexcept {
    re.add(x);
  }
  /// Local. Adds get(0), ..., get(n - 1), calling get exactly once per index, in order (it
  /// may have side effects, e.g. write the element it returns). Spreads floating-point terms
  /// over the lanes, four at a time.
  template <class Get>
  [[gnu::always_inline]] inline void add_n(std::int64_t n, Get&& get) {
    using R = std::remove_cvref_t<decltype(get(std::int64_t{0}))>;
    if constexpr (std::is_floating_point_v<R>) {
      double buf[ExactSum::block];
      for (std::int64_t i = 0; i < n; i += ExactSum::block) {
        const int b = static_cast<int>(std::min<std::int64_t>(ExactSum::block, n - i));
        for (int j = 0; j < b; ++j) buf[j] = static_cast<double>(get(i + j));
        re.add_block(buf, b);
      }
    } else {
      for (std::int64_t i = 0; i < n; ++i) re.add(get(i));
    }
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
  /// Local. As ExactAcc<real>::add_n (the real and imaginary parts in separate blocks).
  template <class Get>
  [[gnu::always_inline]] inline void add_n(std::int64_t n, Get&& get) {
    using R = std::remove_cvref_t<decltype(get(std::int64_t{0}))>;
    if constexpr (is_complex_v<R>) {
      double br[ExactSum::block], bi[ExactSum::block];
      for (std::int64_t i = 0; i < n; i += ExactSum::block) {
        const int b = static_cast<int>(std::min<std::int64_t>(ExactSum::block, n - i));
        for (int j = 0; j < b; ++j) {
          const R z = get(i + j);
          br[j] = static_cast<double>(z.real());
          bi[j] = static_cast<double>(z.imag());
        }
        re.add_block(br, b);
        im.add_block(bi, b);
      }
    } else {
      for (std::int64_t i = 0; i < n; ++i) add(get(i));
    }
  }
  void merge(const ExactAcc& o) noexcept {
    re.merge(o.re);
    im.merge(o.im);
  }
  /// Collective over `comm`: every rank ends with the exact total (one MPI_Allreduce).
  void allreduce(MPI_Comm comm) {
    std::int64_t buf[2 * ExactSum::words];
    std::copy_n(re.wire(), ExactSum::words, buf);
    std::copy_n(im.wire(), ExactSum::words, buf + ExactSum::words);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf, 2 * ExactSum::words, MPI_INT64_T, MPI_SUM, comm),
              "MPI_Allreduce");
    std::copy_n(buf, ExactSum::words, re.wire());
    std::copy_n(buf + ExactSum::words, ExactSum::words, im.wire());
  }
  /// Local. The rounded total (per component).
  std::complex<X> value() const noexcept { return {re.round<X>(), im.round<X>()}; }
};

}  // namespace detail
}  // namespace garray

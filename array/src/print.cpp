// Printing's pure text part (print.hpp): NumPy's number formats (Dragon4's positional and
// scientific modes rebuilt on std::to_chars) and _formatArray, compiled once into
// libgarray_array for the six element types.
#include <garray/array/print.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

namespace garray::detail::npprint {
namespace {


/// A finite number's decimal digits: |x| = d[0].d[1...] x 10^e, sign separately.
struct Digits {
  bool neg = false;
  std::string d;
  int e = 0;
};

/// Parses to_chars' scientific output "-d.ddde+XX".
inline Digits parse_scientific(const char* b, const char* end) {
  Digits r;
  if (b < end && *b == '-') {
    r.neg = true;
    ++b;
  }
  while (b < end && *b != 'e') {
    if (*b != '.') r.d.push_back(*b);
    ++b;
  }
  if (b < end) ++b;  // 'e'
  bool eneg = false;
  if (b < end && (*b == '+' || *b == '-')) eneg = *b++ == '-';
  int e = 0;
  while (b < end) e = e * 10 + (*b++ - '0');
  r.e = eneg ? -e : e;
  return r;
}

/// The shortest digits that round-trip in R (float: float32's shortest, as NumPy).
template <class R>
Digits shortest(R x) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  return parse_scientific(buf, res.ptr);
}

inline void trim_zeros(std::string& s) {
  while (!s.empty() && s.back() == '0') s.pop_back();
}

/// A number split as NumPy's Dragon4 prints it before padding: integer part (with sign),
/// fractional part (trailing zeros trimmed), and the exponent for scientific notation.
struct Parts {
  std::string ip, fp;
  int e = 0;
};

/// dragon4_positional(x, precision, unique=True, fractional=True, trim='.'): the shortest
/// round-trip digits when they need at most `prec` fractional digits, else x correctly
/// rounded (half to even, on the exact binary value) to `prec` fractional digits.
/// `units`: as with min_digits=0 (the final pass of array printing): when the shortest
/// digits stop before the units digit, the integer part is x's exact value rounded to an
/// integer (float32 73648128 prints "73648128.", not the shortest "73648130.").
template <class R>
Parts positional(R x, int prec, bool plus, bool units = false) {
  const Digits s = shortest(x);
  Parts p;
  const int nd = static_cast<int>(s.d.size());
  if (units && s.e + 1 > nd) {
    char buf[1024];
    const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, 0);
    p.ip.assign(buf[0] == '-' ? buf + 1 : buf, res.ptr);
  } else if (std::max(0, nd - 1 - s.e) <= prec) {
    if (s.e >= 0) {
      p.ip = s.d.substr(0, static_cast<std::size_t>(std::min(nd, s.e + 1)));
      if (nd < s.e + 1) p.ip.append(static_cast<std::size_t>(s.e + 1 - nd), '0');
      if (nd > s.e + 1) p.fp = s.d.substr(static_cast<std::size_t>(s.e + 1));
    } else {
      p.ip = "0";
      p.fp = std::string(static_cast<std::size_t>(-s.e - 1), '0') + s.d;
    }
  } else {
    char buf[1024];
    const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, prec);
    std::string t(buf, res.ptr);
    if (!t.empty() && t[0] == '-') t.erase(0, 1);
    const auto dot = t.find('.');
    p.ip = t.substr(0, dot);
    if (dot != std::string::npos) p.fp = t.substr(dot + 1);
    trim_zeros(p.fp);
  }
  if (s.neg)
    p.ip.insert(0, 1, '-');
  else if (plus)
    p.ip.insert(0, 1, '+');
  return p;
}

/// dragon4_scientific(x, precision, unique=True, trim='.'): as positional, with `prec`
/// digits after the mantissa's point. `exact`: exactly `prec` digits of x, correctly
/// rounded (Dragon4 with min_digits = precision).
template <class R>
Parts scientific(R x, int prec, bool plus, bool exact = false) {
  Digits s = shortest(x);
  if (exact || static_cast<int>(s.d.size()) - 1 > prec) {
    char buf[256];
    const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific, prec);
    s = parse_scientific(buf, res.ptr);
  }
  Parts p;
  p.ip = s.d.substr(0, 1);
  p.fp = s.d.substr(1);
  if (!exact) trim_zeros(p.fp);
  p.e = s.e;
  if (s.neg)
    p.ip.insert(0, 1, '-');
  else if (plus)
    p.ip.insert(0, 1, '+');
  return p;
}

inline std::size_t exp_digits(int e) {
  const std::string t = std::to_string(e < 0 ? -static_cast<long long>(e) : e);
  return std::max<std::size_t>(2, t.size());
}

inline std::string pad_left(const std::string& s, std::size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

/// NumPy's FloatingFormat (floatmode 'maxprec', suppress_small False), built from the
/// values that will be printed; `plus`: sign '+' (the imaginary part of complex numbers).
template <class R>
class FloatFormat {
 public:
  FloatFormat(const std::vector<R>& data, int precision, bool plus) : prec_(precision), plus_(plus) {
    std::vector<R> fin;
    bool nonfinite = false, neginf = false;
    for (R x : data) {
      if (std::isfinite(x))
        fin.push_back(x);
      else {
        nonfinite = true;
        neginf = neginf || (std::isinf(x) && x < 0);
      }
    }
    bool any_nz = false;
    R mx = 0, mn = 0;
    for (R x : fin) {
      if (x == 0) continue;
      const R a = std::abs(x);
      if (!any_nz) mx = mn = a;
      mx = std::max(mx, a);
      mn = std::min(mn, a);
      any_nz = true;
    }
    // NumPy compares the maximum and minimum with Python floats (double) and divides in R.
    if (any_nz) {
      const R ratio = mx / mn;
      exp_ = static_cast<double>(mx) >= 1.e8 || static_cast<double>(mn) < 0.0001 ||
             static_cast<double>(ratio) > 1000.;
    }
    if (fin.empty()) {
      pad_left_ = pad_right_ = 0;
    } else if (exp_) {
      std::size_t fmax = 0, ilen = 0, es = 0;
      for (R x : fin) {
        const Parts p = scientific(x, prec_, plus_);
        fmax = std::max(fmax, p.fp.size());
        ilen = std::max(ilen, p.ip.size());
        es = std::max(es, exp_digits(p.e));
      }
      min_digits_ = fmax;
      exp_size_ = es;
      pad_left_ = ilen;
      pad_right_ = exp_size_ + 2 + min_digits_;
    } else {
      std::size_t ilen = 0, flen = 0;
      for (R x : fin) {
        const Parts p = positional(x, prec_, plus_);
        ilen = std::max(ilen, p.ip.size());
        flen = std::max(flen, p.fp.size());
      }
      pad_left_ = ilen;
      pad_right_ = flen;
    }
    if (nonfinite) {
      const std::size_t inflen = 3 + ((plus_ || neginf) ? 1 : 0), offset = pad_right_ + 1;
      if (3 > offset) pad_left_ = std::max(pad_left_, 3 - offset);
      if (inflen > offset) pad_left_ = std::max(pad_left_, inflen - offset);
    }
  }

  std::string operator()(R x) const {
    if (!std::isfinite(x)) {
      std::string r;
      if (std::isnan(x))
        r = plus_ ? "+nan" : "nan";
      else
        r = x < 0 ? "-inf" : plus_ ? "+inf" : "inf";
      return pad_left(r, pad_left_ + pad_right_ + 1);
    }
    if (exp_) {
      // Every mantissa gets min_digits_ fractional digits. Dragon4 generates the digits
      // beyond the shortest representation from the exact binary value (not zeros): a
      // float32 0.1 with 8 digits is 1.00000001e-01.
      Parts p = scientific(x, prec_, plus_);
      if (p.fp.size() < min_digits_) p = scientific(x, static_cast<int>(min_digits_), plus_, true);
      std::string s = pad_left(p.ip, pad_left_) + "." + p.fp;
      const std::string ed = std::to_string(p.e < 0 ? -static_cast<long long>(p.e) : p.e);
      s += p.e < 0 ? "e-" : "e+";
      s.append(exp_size_ - std::min(exp_size_, ed.size()), '0');
      return s + ed;
    }
    const Parts p = positional(x, prec_, plus_, true);
    std::string s = pad_left(p.ip, pad_left_) + "." + p.fp;
    s.append(pad_right_ - std::min(pad_right_, p.fp.size()), ' ');
    return s;
  }

 private:
  int prec_;
  bool plus_;
  bool exp_ = false;
  std::size_t pad_left_ = 0, pad_right_ = 0, min_digits_ = 0, exp_size_ = 2;
};

/// NumPy's IntegerFormat: right-aligned to the widest of str(max) and str(min).
template <class I>
class IntFormat {
 public:
  explicit IntFormat(const std::vector<I>& data) {
    if (data.empty()) return;
    const auto [mn, mx] = std::minmax_element(data.begin(), data.end());
    width_ = std::max(std::to_string(*mn).size(), std::to_string(*mx).size());
  }
  std::string operator()(I x) const { return pad_left(std::to_string(x), width_); }

 private:
  std::size_t width_ = 0;
};

/// NumPy's ComplexFloatingFormat: the real parts' format, then the imaginary parts' (sign
/// '+') with 'j' before its trailing padding.
template <class R>
class ComplexFormat {
 public:
  explicit ComplexFormat(const std::vector<std::complex<R>>& data, int precision)
      : re_(parts(data, false), precision, false), im_(parts(data, true), precision, true) {}
  std::string operator()(const std::complex<R>& x) const {
    std::string i = im_(x.imag());
    const auto end = i.find_last_not_of(' ');
    i.insert(end == std::string::npos ? 0 : end + 1, 1, 'j');
    return re_(x.real()) + i;
  }

 private:
  static std::vector<R> parts(const std::vector<std::complex<R>>& data, bool imag) {
    std::vector<R> v;
    v.reserve(data.size());
    for (const auto& z : data) v.push_back(imag ? z.imag() : z.real());
    return v;
  }
  FloatFormat<R> re_, im_;
};

template <class T>
struct is_cplx : std::false_type {};
template <class R>
struct is_cplx<std::complex<R>> : std::true_type {};

template <class T>
auto make_format(const std::vector<T>& data, int precision) {
  if constexpr (is_cplx<T>::value)
    return ComplexFormat<typename T::value_type>(data, precision);
  else if constexpr (std::is_floating_point_v<T>)
    return FloatFormat<T>(data, precision, false);
  else
    return IntFormat<T>(data);
}

/// NumPy's _extendLine (separator ' ', no legacy mode).
inline void extend_line(std::string& s, std::string& line, const std::string& word, std::size_t width,
                        const std::string& next_prefix) {
  bool wrap = line.size() + word.size() > width;
  if (line.size() <= next_prefix.size()) wrap = false;  // wrapping would not help
  if (wrap) {
    const auto end = line.find_last_not_of(' ');
    s += line.substr(0, end == std::string::npos ? 0 : end + 1);
    s += '\n';
    line = next_prefix;
  }
  line += word;
}

/// NumPy's _formatArray over an array of `shape` whose printed elements are `data`: the
/// dense row-major summary of extents `sshape` (every dimension whose extent exceeds
/// 2 * edge reduced to its first and last `edge` items when `summarise`), so element k of
/// a summarised dimension is data index k (k < edge) or 2 edge - (n - k) (trailing items).
template <class Word>
class Layout {
 public:
  Layout(std::vector<Index> shape, std::vector<Index> sshape, bool summarise, Index edge, Index linewidth,
         Word word)
      : shape_(std::move(shape)),
        sstr_(shape_.size(), 1),
        summ_(summarise),
        edge_(edge),
        word_(std::move(word)),
        linewidth_(linewidth) {
    for (std::size_t d = shape_.size(); d-- > 1;) sstr_[d - 1] = sstr_[d] * sshape[d];
  }
  std::string run() const { return rec(0, 0, " ", linewidth_); }

 private:
  std::string rec(std::size_t axis, Index off, const std::string& hang, Index width) const {
    if (axis == shape_.size()) return word_(off);
    const std::string next_hang = hang + ' ';
    const Index next_width = width - 1;
    const Index n = shape_[axis];
    const bool show = summ_ && edge_ < n - edge_;  // 2 * edge_ < n without overflow
    const Index leading = show ? edge_ : 0, trailing = show ? edge_ : n;
    // the element at position k of this dimension
    const auto at = [&](Index k) {
      const Index sk = show && k >= edge_ ? k - (n - 2 * edge_) : k;
      return rec(axis + 1, off + sk * sstr_[axis], next_hang, next_width);
    };
    std::string s;
    const std::size_t left = shape_.size() - axis;
    if (left == 1) {
      const std::size_t ew = static_cast<std::size_t>(std::max<Index>(0, width - 1));
      std::string line = hang;
      for (Index i = 0; i < leading; ++i) {
        extend_line(s, line, at(i), ew, hang);
        line += ' ';
      }
      if (show) {
        extend_line(s, line, "...", ew, hang);
        line += ' ';
      }
      for (Index i = trailing; i > 1; --i) {
        extend_line(s, line, at(n - i), ew, hang);
        line += ' ';
      }
      extend_line(s, line, at(n - 1), ew, hang);
      s += line;
    } else {
      const std::string sep(left - 1, '\n');
      for (Index i = 0; i < leading; ++i) s += hang + at(i) + sep;
      if (show) s += hang + "..." + sep;
      for (Index i = trailing; i > 1; --i) s += hang + at(n - i) + sep;
      s += hang + at(n - 1);
    }
    return "[" + s.substr(hang.size()) + "]";
  }

  std::vector<Index> shape_, sstr_;
  bool summ_;
  Index edge_;
  Word word_;
  Index linewidth_;
};

}  // namespace

/// NumPy's str() of the dense row-major array `data` of shape `shape` that was summarised to
/// `sshape` (see Layout). Pure text.
template <class T>
std::string format_summary(const std::vector<T>& data, const std::vector<Index>& shape,
                           const std::vector<Index>& sshape, bool summarise, const PrintOptions& o) {
  const auto f = make_format(data, o.precision);
  const auto word = [&](Index k) { return f(data[static_cast<std::size_t>(k)]); };
  return Layout<decltype(word)>(shape, sshape, summarise, o.edgeitems, o.linewidth, word).run();
}

void check_options(const PrintOptions& o, std::string_view what) {
  if (o.threshold < 0)
    raise<InvalidArgument>(what, ": PrintOptions::threshold ", o.threshold, " is negative");
  if (o.edgeitems < 1)
    raise<InvalidArgument>(what, ": PrintOptions::edgeitems ", o.edgeitems, " is not >= 1");
  if (o.linewidth < 1)
    raise<InvalidArgument>(what, ": PrintOptions::linewidth ", o.linewidth, " is not >= 1");
  if (o.precision < 0 || o.precision > 100)
    raise<InvalidArgument>(what, ": PrintOptions::precision ", o.precision, " outside [0, 100]");
}


template std::string format_summary(const std::vector<float>&, const std::vector<Index>&, const std::vector<Index>&,
                                    bool, const PrintOptions&);
template std::string format_summary(const std::vector<double>&, const std::vector<Index>&, const std::vector<Index>&,
                                    bool, const PrintOptions&);
template std::string format_summary(const std::vector<std::int32_t>&, const std::vector<Index>&,
                                    const std::vector<Index>&, bool, const PrintOptions&);
template std::string format_summary(const std::vector<std::int64_t>&, const std::vector<Index>&,
                                    const std::vector<Index>&, bool, const PrintOptions&);
template std::string format_summary(const std::vector<std::complex<float>>&, const std::vector<Index>&,
                                    const std::vector<Index>&, bool, const PrintOptions&);
template std::string format_summary(const std::vector<std::complex<double>>&, const std::vector<Index>&,
                                    const std::vector<Index>&, bool, const PrintOptions&);

}  // namespace garray::detail::npprint

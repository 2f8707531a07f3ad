// Printing (issue 15): garray's str() of arrays and views against NumPy's own str(), and the
// collective contract of printing. Rank 0 writes every case (the whole base array, the view,
// the options and garray's text) as a JSON line; tests/numeric/numpy_check.py (op "str", run
// with /usr/bin/python3) rebuilds the view with NumPy under the same print options and
// compares str() character for character. Random shapes (1-4 dimensions, small and
// summarised), random distributions, views with negative steps and dropped dimensions, the
// six element types, values chosen to hit every branch of NumPy's number formats.
#include <cmath>
#include <garray/runtime/fault.hpp>
#include <limits>
#include <sstream>
#include <string>

#include "numeric/numpy_cases.hpp"
#include "support/cout_to.hpp"
#include "support/outcome.hpp"

using garray::Index;
using garray::Section;
using garray::Shape;
using nptest::c128;
using nptest::c64;

namespace {

std::string jstr(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (c == '\n') r += "\\n";
    else r += c;
  }
  return r + "\"";
}

/// A real value of one of NumPy's formatting regimes (`style`).
template <class R>
R random_real(test::Rng& g, int style) {
  const auto u = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); };
  const double sign = test::uniform(g, 0, 1) ? 1.0 : -1.0;
  switch (style) {
    case 0: return static_cast<R>(test::uniform(g, -20, 20));                // whole numbers: "3."
    case 1: return static_cast<R>(u(-10, 10));                               // cut to 8 digits, rounded
    case 2: return static_cast<R>(sign * std::pow(10.0, u(-12, 12)) * u(1, 9.99));  // scientific
    case 3: return static_cast<R>(sign * static_cast<double>(test::uniform(g, 0, 4096)) /
                                  std::ldexp(1.0, static_cast<int>(test::uniform(g, 7, 12))));  // exact ties at digit 8
    case 4: return static_cast<R>(static_cast<double>(test::uniform(g, -999, 999)) / 100);  // short decimals
    case 5: return static_cast<R>(sign * u(1e8, 1e12));                      // large: scientific
    case 6: {  // near the switches: 1e-4, 1e8 and a ratio of 1000
      const double v[] = {1e-4, 9.999e-5, 1.0001e-4, 1e8, 99999999.0, 1.0, 1000.0, 1000.001, 0.5, 500.0};
      return static_cast<R>(sign * v[test::uniform(g, 0, 9)]);
    }
    case 7: return static_cast<R>(sign * u(1e6, 1e8));  // float32: more integer digits than its shortest form
    default: return static_cast<R>(sign * u(0, 1) * std::pow(10.0, static_cast<double>(test::uniform(g, 0, 7))));
  }
}

template <class R>
R special_or(test::Rng& g, R v, bool specials) {
  if (!specials || test::uniform(g, 0, 9) != 0) return v;
  switch (test::uniform(g, 0, 3)) {
    case 0: return std::numeric_limits<R>::quiet_NaN();
    case 1: return std::numeric_limits<R>::infinity();
    case 2: return -std::numeric_limits<R>::infinity();
    default: return R(-0.0);
  }
}

/// Random contents of a formatting regime for any of the six element types.
template <class T>
std::vector<T> random_values(test::Rng& g, std::size_t n) {
  std::vector<T> v(n);
  if constexpr (std::is_integral_v<T>) {
    const int style = static_cast<int>(test::uniform(g, 0, 3));
    for (auto& x : v) {
      switch (style) {
        case 0: x = static_cast<T>(test::uniform(g, 0, 9)); break;
        case 1: x = static_cast<T>(test::uniform(g, -20, 20)); break;
        case 2: x = static_cast<T>(test::uniform(g, -1000000, 1000000)); break;
        default:
          x = test::uniform(g, 0, 1) ? std::numeric_limits<T>::min() + static_cast<T>(test::uniform(g, 0, 3))
                                     : std::numeric_limits<T>::max() - static_cast<T>(test::uniform(g, 0, 3));
      }
    }
  } else {
    using R = typename std::conditional_t<garray::detail::is_complex<T>::value, T, std::complex<T>>::value_type;
    const int sr = static_cast<int>(test::uniform(g, 0, 8)), si = static_cast<int>(test::uniform(g, 0, 8));
    const bool specials = test::uniform(g, 0, 2) == 0;
    for (auto& x : v) {
      const R re = special_or(g, random_real<R>(g, sr), specials);
      if constexpr (garray::detail::is_complex<T>::value) x = T(re, special_or(g, random_real<R>(g, si), specials));
      else x = re;
    }
  }
  return v;
}

/// A random view section keeping every dimension (negative steps included), or empty.
template <std::size_t N>
Section<N> random_section(test::Rng& g, const Shape<N>& sh) {
  Section<N> s;
  for (std::size_t d = 0; d < N; ++d) {
    const Index steps[] = {1, 1, 1, 2, -1, -1, -2, 3};
    const Index st = steps[test::uniform(g, 0, 7)];
    const Index start = test::uniform(g, 0, sh[d] - 1);
    const Index room = st > 0 ? (sh[d] - 1 - start) / st + 1 : start / -st + 1;  // elements available
    s.start[d] = start;
    s.step[d] = st;
    s.count[d] = test::uniform(g, 1, room);
  }
  return s;
}

template <std::size_t N>
std::string view_js(const Section<N>& s) {
  std::ostringstream r;
  r << "[";
  for (std::size_t d = 0; d < N; ++d) {
    r << (d ? ", " : "");
    if (s.dropped[d]) {
      r << s.start[d];
      continue;
    }
    const Index stop = s.start[d] + s.count[d] * s.step[d];
    r << "[" << (s.count[d] ? s.start[d] : 0) << ", ";
    if (s.count[d] == 0) r << 0;
    else if (stop < 0) r << "null";
    else r << stop;
    r << ", " << s.step[d] << "]";
  }
  r << "]";
  return r.str();
}

std::string options_js(const garray::PrintOptions& o) {
  return "{\"threshold\": " + std::to_string(o.threshold) + ", \"edgeitems\": " + std::to_string(o.edgeitems) +
         ", \"linewidth\": " + std::to_string(o.linewidth) + ", \"precision\": " + std::to_string(o.precision) + "}";
}

/// Random extents: small (printed whole) or large enough to be summarised.
template <std::size_t N>
Shape<N> print_shape(test::Rng& g, bool big) {
  static constexpr Index big_extent[] = {0, 1500, 45, 13, 8};
  Shape<N> s{};
  for (auto& e : s) e = big ? test::uniform(g, big_extent[N] / 2, big_extent[N]) : test::uniform(g, 1, 6);
  return s;
}

template <class T, std::size_t N>
void cases_of(nptest::Cases& cs, const garray::Context& ctx, test::Rng& g) {
  for (int k = 0; k < 4; ++k) {
    const bool big = k % 2 == 1;
    const Shape<N> sh = print_shape<N>(g, big);
    garray::GlobalArray<T, N> a(ctx, sh, test::random_distribution<N>(g, sh, ctx.size()));
    const auto vals = random_values<T>(g, static_cast<std::size_t>(a.size()));
    if (ctx.rank() == 0) a.put_section(Section<N>::full(sh), vals);
    const std::string xs = "\"x\": " + nptest::dump(a);  // a one-sided get: completes nothing else
    std::ostringstream os;
    os << a;  // the handshake completes rank 0's put before anyone reads
    CHECK((ctx.rank() == 0 || os.str().empty()));
    cs.add("\"op\": \"str\", \"args\": {}, " + xs + ", \"got\": " + jstr(os.str()));
    // A view keeping every dimension (negative steps), printed with operator<<.
    const Section<N> s = random_section<N>(g, sh);
    garray::View<T, N, N> v(a, s);
    std::ostringstream ov;
    ov << v;
    cs.add("\"op\": \"str\", \"args\": {\"view\": " + view_js(s) + "}, " + xs + ", \"got\": " + jstr(ov.str()));
    // A view dropping dimension 0, under random print options (wrapping, summaries).
    if constexpr (N >= 2) {
      Section<N> s1 = random_section<N>(g, sh);
      s1.dropped[0] = true;
      s1.count[0] = 1;
      garray::PrintOptions o;
      o.threshold = test::uniform(g, 0, 60);
      o.edgeitems = test::uniform(g, 1, 4);
      o.linewidth = test::uniform(g, 10, 120);
      o.precision = static_cast<int>(test::uniform(g, 0, 10));
      const std::string got = garray::array_str(garray::View<T, N, N - 1>(a, s1), o);
      cs.add("\"op\": \"str\", \"args\": {\"view\": " + view_js(s1) + ", \"options\": " + options_js(o) + "}, " +
             xs + ", \"got\": " + jstr(got));
    }
  }
}

template <class T>
void all_dims(nptest::Cases& cs, const garray::Context& ctx, test::Rng& g) {
  cases_of<T, 1>(cs, ctx, g);
  cases_of<T, 2>(cs, ctx, g);
  cases_of<T, 3>(cs, ctx, g);
  cases_of<T, 4>(cs, ctx, g);
}

using test::Got;
using test::outcome;

std::int64_t get_bytes(const garray::Context& ctx) {
  const auto& oc = ctx.stats()[garray::Op::get];
  return oc.local_bytes + oc.remote_bytes;
}

}  // namespace

TEST_CASE("str() of arrays and views agrees with NumPy's, character for character") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  nptest::Cases cs(ctx, "print");
  nptest::for_each_type([&](auto t) { all_dims<typename decltype(t)::type>(cs, ctx, rng); });
  CHECK(cs.check(ctx));
}

TEST_CASE("fixed cases: the formats NumPy documents, empty arrays, print() and its newline") {
  garray::Context ctx;
  const bool root = ctx.rank() == 0;
  auto put = [&](auto& a, auto vals) {
    if (root) a.put_section(Section<1>::full(a.shape()), vals);
  };
  garray::GlobalArray<double, 1> d(ctx, {4});
  put(d, std::vector<double>{1.0, 2.5, -0.0, 0.123456789123});
  const std::string s = garray::array_str(d);
  if (root) CHECK(s == "[ 1.          2.5        -0.          0.12345679]");
  else CHECK(s.empty());
  garray::GlobalArray<double, 1> e(ctx, {4});
  put(e, std::vector<double>{1e100, -2e-5, std::nan(""), -INFINITY});
  const std::string se = garray::array_str(e);
  if (root) CHECK(se == "[ 1.e+100 -2.e-005      nan     -inf]");
  garray::GlobalArray<c128, 1> z(ctx, {3});
  put(z, std::vector<c128>{{1, 2}, {-0.0, -1.5}, {std::nan(""), 1}});
  const std::string sz = garray::array_str(z);
  if (root) CHECK(sz == "[ 1.+2.j  -0.-1.5j nan+1.j ]");
  // Exact ties at the 8th digit round half to even; float32 digits beyond the shortest form
  // come from the exact value (NumPy's strings).
  garray::GlobalArray<double, 1> ties(ctx, {3});
  put(ties, std::vector<double>{1.0 / 512, 3.0 / 512, 0.5});
  const std::string st = garray::array_str(ties);
  if (root) CHECK(st == "[0.00195312 0.00585938 0.5       ]");
  garray::GlobalArray<float, 1> f1(ctx, {2}), f2(ctx, {2});
  put(f1, std::vector<float>{0.1f, 1.2345678e-6f});
  put(f2, std::vector<float>{73648128.0f, 100000.5f});
  const std::string s1 = garray::array_str(f1), s2 = garray::array_str(f2);
  if (root) CHECK(s1 == "[1.0000000e-01 1.2345678e-06]");
  if (root) CHECK(s2 == "[73648128.    100000.5]");
  garray::GlobalArray<std::int64_t, 2> big(ctx, {2, 1000});
  garray::iota(big, std::int64_t{0}, std::int64_t{1});
  const std::string sb = garray::array_str(big);
  if (root) CHECK(sb == "[[   0    1    2 ...  997  998  999]\n [1000 1001 1002 ... 1997 1998 1999]]");
  garray::GlobalArray<float, 2> empty(ctx, {3, 0});
  const std::string s0 = garray::array_str(empty);
  if (root) CHECK(s0 == "[]");
  std::ostringstream os;
  garray::print(d[garray::idx[garray::range(garray::_, garray::_, -2)]], os);
  if (root) CHECK(os.str() == "[0.12345679 2.5       ]\n");
  else CHECK(os.str().empty());
}

TEST_CASE("rank 0 fetches only the elements it prints; the others fetch nothing") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  garray::GlobalArray<double, 2> a(ctx, {100, 90}, test::random_distribution<2>(rng, {100, 90}, ctx.size()));
  garray::iota(a, 0.0, 1.0);
  auto before = get_bytes(ctx);
  (void)garray::array_str(a);
  CHECK(get_bytes(ctx) - before == (ctx.rank() == 0 ? 6 * 6 * 8 : 0));
  garray::GlobalArray<std::int32_t, 3> b(ctx, {20, 2, 30});
  garray::iota(b, 0, 1);
  before = get_bytes(ctx);
  const std::string s = garray::array_str(b[garray::idx[garray::range(garray::_, garray::_, -1)]]);
  CHECK(get_bytes(ctx) - before == (ctx.rank() == 0 ? 6 * 2 * 6 * 4 : 0));
  if (ctx.rank() == 0) CHECK(s.rfind("[[[1140 1141 1142 ... 1167 1168 1169]\n  [1170 1171", 0) == 0);
  garray::GlobalArray<float, 1> small(ctx, {50});
  before = get_bytes(ctx);
  (void)garray::array_str(small);
  CHECK(get_bytes(ctx) - before == (ctx.rank() == 0 ? 50 * 4 : 0));
}

TEST_CASE("printing sees every rank's earlier writes without a sync") {
  // Every rank puts a block into its right neighbour's block (remote at np >= 2: outstanding
  // on rma and mixed windows until something completes it), then prints without a sync:
  // the handshake must complete the puts. 40 elements per rank stay below numpy's summary
  // threshold at np <= 4, so every element is printed.
  garray::Context ctx;
  const int p = ctx.size();
  const Index k = 40;
  garray::GlobalArray<std::int64_t, 1> a(ctx, {k * p});
  const int to = (ctx.rank() + 1) % p;
  std::vector<std::int64_t> v(static_cast<std::size_t>(k));
  for (Index i = 0; i < k; ++i) v[static_cast<std::size_t>(i)] = 1000 * (ctx.rank() + 1) + i;
  a.put(garray::idx[garray::range(to * k, (to + 1) * k)], std::span<const std::int64_t>(v));
  const std::string s = garray::array_str(a);  // no sync: the handshake completes the puts
  std::ostringstream want;
  want << "[";
  for (int r = 0; r < p; ++r) {
    const int from = (r - 1 + p) % p;  // who wrote block r
    for (Index i = 0; i < k; ++i) want << (r || i ? " " : "") << 1000 * (from + 1) + i;
  }
  want << "]";
  if (ctx.rank() == 0) {
    // numpy wraps lines at 75 characters: compare with the line breaks taken out
    std::string flat;
    for (char c : s) flat += c == '\n' ? ' ' : c;
    std::string compact;
    for (char c : flat)
      if (!(c == ' ' && !compact.empty() && compact.back() == ' ')) compact += c;
    CHECK(compact == want.str());
  }
}

TEST_CASE("printing is collective: differing arrays, views or options throw on every rank, never hang") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  garray::GlobalArray<double, 2> a(ctx, {8, 6}), b(ctx, {8, 6});
  garray::iota(a, 0.0, 1.0);
  std::ostringstream os;
  const bool odd = me == p - 1;
  if (p > 1) {
    CHECK(outcome([&] { os << (odd ? b : a); }) == Got::mismatch);
    CHECK(outcome([&] { os << (odd ? a[garray::idx[garray::range(1, 3)]] : a[garray::idx[garray::range(1, 4)]]); }) ==
          Got::mismatch);
    garray::PrintOptions o;
    o.precision = odd ? 3 : 4;
    CHECK(outcome([&] { (void)garray::array_str(a, o); }) == Got::mismatch);
    CHECK(outcome([&] {  // print on one rank, sync on the others
            if (odd) os << a;
            else a.sync();
          }) == Got::mismatch);
  }
  // Bad options on one rank: that rank names the option and itself, the others mismatch.
  garray::PrintOptions bad;
  bad.edgeitems = odd ? 0 : 3;
  std::string msg;
  const Got g = outcome([&] { (void)garray::array_str(a, bad); }, &msg);
  CAPTURE(msg);
  if (odd) {
    CHECK(g == Got::invalid);
    CHECK(test::contains(msg, "edgeitems 0"));
    CHECK(test::contains(msg, "rank " + std::to_string(me)));
  } else {
    CHECK(g == Got::mismatch);
    CHECK(test::contains(msg, "edgeitems 0"));
  }
  garray::PrintOptions neg;
  neg.threshold = -1;
  CHECK(outcome([&] { (void)garray::array_str(a, neg); }) == Got::invalid);
  // A fault on rank 0 (the reader) or the last rank: every rank throws, then printing works.
  for (int victim : {0, p - 1}) {
    if (me == victim) garray::testing::arm_fault("print.fetch");
    std::string m;
    const Got f = outcome([&] { os << a; }, &m);
    CAPTURE(m);
    garray::testing::disarm_fault();
    if (me == victim) CHECK(f == Got::injected);
    else {
      CHECK(f == Got::failure);
      CHECK(test::contains(m, "injected fault at print.fetch"));
    }
  }
  const std::string s = garray::array_str(a[garray::idx[0]]);
  if (me == 0) CHECK(s == "[0. 1. 2. 3. 4. 5.]");
  CHECK(os.str().empty());  // no rank wrote after a mismatch or a failed fetch, rank 0 (the writer) included
}

TEST_CASE("describe(): GA_Print_distribution's information, identical on every rank") {
  garray::Context ctx;
  const int p = ctx.size();
  std::vector<Index> rows = {0};
  if (p > 1) rows.push_back(4);
  if (p > 2) rows.push_back(4);  // an empty block
  garray::GlobalArray<float, 2> a(ctx, {9, 5}, garray::Distribution<2>::irregular({rows, {0}}), {1, 0});
  const std::string d = garray::describe(a);
  CAPTURE(d);
  CHECK(test::contains(d, "GlobalArray<float,2>"));
  CHECK(test::contains(d, "shape [9, 5]"));
  CHECK(test::contains(d, "irregular"));
  CHECK(test::contains(d, "ghost [1, 0]"));
  for (int r = 0; r < p; ++r) {
    const auto b = a.box_of(r);
    std::ostringstream line;
    line << "  rank " << r << ": ";
    if (b.empty()) line << "empty\n";
    else line << b << " (" << b.volume() << " elements)\n";
    CHECK(test::contains(d, line.str()));
  }
  if (p > 2) CHECK(test::contains(d, "  rank 1: empty\n"));  // starts {0, 4, 4}: block 1 is [4, 4)
  // The same text everywhere (a local call on replicated knowledge).
  std::uint64_t h = std::hash<std::string>{}(d), lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, ctx.comm());
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, ctx.comm());
  CHECK(lo == hi);
}

TEST_CASE("user guide: Printing, and the print rows of 'Coming from NumPy'") {
  garray::Context ctx;
  using garray::_, garray::idx, garray::range;
  const bool root = ctx.rank() == 0;
  std::ostringstream out;
  std::string str_a, dist;
  {
    const test::CoutTo capture(out);  // what the guide prints
    // clang-format off
    // guide-example: printing
    garray::GlobalArray<double, 2> a(ctx, {4, 3});
    garray::iota(a, 0.0, 0.5);
    garray::print(a);                         // collective; rank 0 writes str(a) and '\n':
                                              // [[0.  0.5 1. ]
                                              //  [1.5 2.  2.5]
                                              //  [3.  3.5 4. ]
                                              //  [4.5 5.  5.5]]
    std::cout << a[idx[range(_, _, -1)][1]];  // a[::-1, 1] without the newline: [5.  3.5 2.  0.5]
    std::string s = garray::array_str(a, {.threshold = 5, .edgeitems = 1});  // "" off rank 0
    if (ctx.rank() == 0) std::cout << garray::describe(a);  // GA_Print_distribution (local)
    // end guide-example
    // clang-format on
    str_a = s;
    dist = garray::describe(a);
    garray::GlobalArray<double, 1> b(ctx, {30});
    garray::iota(b, 0.0, 1.0);
    b = b / 7.0;
    garray::print(b[idx[range(_, _, -1)]], std::cout, {.threshold = 10, .edgeitems = 2, .linewidth = 60, .precision = 4});
  }
  // The expected texts are NumPy's (str() of the same arrays under the same options).
  if (root) {
    CHECK(out.str() == "[[0.  0.5 1. ]\n [1.5 2.  2.5]\n [3.  3.5 4. ]\n [4.5 5.  5.5]]\n"
                       "[5.  3.5 2.  0.5]" +
                           dist + "[4.1429 4.     ... 0.1429 0.    ]\n");
    CHECK(str_a == "[[0.  ... 1. ]\n ...\n [4.5 ... 5.5]]");
  } else {
    CHECK(out.str().empty());
    CHECK(str_a.empty());
  }
}

// Integer overflow in printing: edgeitems near INT64_MAX. Five elements of memory.
#include <garray/garray.hpp>
#include <limits>
#include <string>

#include "support/outcome.hpp"
#include "support/test_support.hpp"

using garray::Index;

// ---- PrintOptions::edgeitems > INT64_MAX / 2 ---------------------------------------------------
// Any edgeitems >= 1 is a valid option, so array_str must print NumPy's str(x) (semantics.md
// printing row: rank 0 holds the text, the others ""): with threshold 0 and edgeitems 2^62 or
// INT64_MAX, a 5-element array is not summarised. NumPy (Python ints, no overflow):
//   np.set_printoptions(threshold=0, edgeitems=2**62); str(np.arange(5.)) == '[0. 1. 2. 3. 4.]'
// Both the summary shape (array_str_section) and the layout (Layout::rec) compare against
// 2 * edgeitems without computing it. (A regression test: 2 * 2^62 wrapped to INT64_MIN and rank 0
// threw std::length_error, the others CollectiveFailure.)
TEST_CASE("array_str: edgeitems beyond INT64_MAX / 2 prints NumPy's text instead of overflowing") {
  garray::Context ctx;
  garray::GlobalArray<double, 1> a(ctx, {5});
  garray::iota(a, 0.0, 1.0);
  const Index huge = std::numeric_limits<Index>::max() / 2 + 1;  // 2^62
  for (const Index e : {huge, std::numeric_limits<Index>::max()}) {
    CAPTURE(e);
    std::string s, m;
    const test::Got got =
        test::outcome([&] { s = garray::array_str(a, {.threshold = 0, .edgeitems = e}); }, &m);
    CAPTURE(m);
    CHECK(got == test::Got::nothing);  // no error on any rank
    if (ctx.rank() == 0 && got == test::Got::nothing) CHECK(s == "[0. 1. 2. 3. 4.]");
    if (ctx.rank() != 0 && got == test::Got::nothing) CHECK(s.empty());
  }
}

// The same with two dimensions: a 2 x 3 array with threshold 0 and edgeitems 2^62 prints NumPy's
// unsummarised text. (A regression test: the summary's element count wrapped to 0 and rank 0
// fetched the array through a wrapped stride into an empty buffer, a crash.) Kept in its own case
// so that a crash does not hide the 1-d result.
TEST_CASE(
    "array_str of a 2-d array: edgeitems beyond INT64_MAX / 2 does not write through a wrapped stride") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> b(ctx, {2, 3});
  garray::iota(b, 0.0, 1.0);
  const Index huge = std::numeric_limits<Index>::max() / 2 + 1;  // 2^62
  std::string s2, m2;
  const test::Got got2 =
      test::outcome([&] { s2 = garray::array_str(b, {.threshold = 0, .edgeitems = huge}); }, &m2);
  CAPTURE(m2);
  CHECK(got2 == test::Got::nothing);
  if (ctx.rank() == 0 && got2 == test::Got::nothing) CHECK(s2 == "[[0. 1. 2.]\n [3. 4. 5.]]");
}

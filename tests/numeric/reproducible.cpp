// Reproducible reductions (issue 15): sum / dot / norm2 / mean / assign_norm2_change /
// assign_norm2_diff with garray::reproducible give the correctly rounded exact result,
// checked bitwise against Python's math.fsum (tests/numeric/exact_ref.py, run by rank 0), for
// the same values laid out with different distributions, process grids and views (negative
// steps): every layout, every rank and every rank count give the same bits.
#include <cassert>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <garray/garray.hpp>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "numeric/support.hpp"

#ifndef GARRAY_EXACT_REF
#error "GARRAY_EXACT_REF (the path of tests/numeric/exact_ref.py) must be defined"
#endif

using gidx = garray::Index;
using garray::reproducible;

namespace {

struct DSet {
  std::string name;
  std::vector<double> x, y;
};

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

double bits_of_random(test::Rng& g, int e_lo, int e_hi) {
  const double m = 1.0 + static_cast<double>(test::uniform(g, 0, (gidx{1} << 52) - 1)) * 0x1p-52;
  const double v = std::ldexp(m, static_cast<int>(test::uniform(g, e_lo, e_hi)));
  return test::uniform(g, 0, 1) ? v : -v;
}

/// The double test sets (identical on every rank: fixed seed).
std::vector<DSet> double_sets() {
  test::Rng g(20261124);
  std::vector<DSet> s;
  const auto small_y = [&](std::size_t n) {
    std::vector<double> y(n);
    for (auto& v : y) v = bits_of_random(g, -3, 0);
    return y;
  };
  s.push_back({"cancel", {1e300, 1.0, -1e300, 3.5, -3.5, 1e-300}, {}});
  s.push_back({"tie_even", {1.0, 0x1p-53}, {}});
  s.push_back({"tie_sticky", {1.0, 0x1p-53, 0x1p-1074}, {}});
  s.push_back({"tie_odd", {1.0 + 0x1p-52, 0x1p-53}, {}});
  s.push_back({"below", {1.0, -0x1p-54, 0x1p-1074}, {}});
  {
    DSet d{"wide", {}, {}};
    for (int i = 0; i < 6000; ++i) d.x.push_back(bits_of_random(g, -1074, 900));
    s.push_back(d);
  }
  {
    DSet d{"mid", {}, {}};
    for (int i = 0; i < 6000; ++i) d.x.push_back(bits_of_random(g, -400, 400));
    s.push_back(d);
  }
  {
    DSet d{"subnormal", {}, {}};
    for (int i = 0; i < 3000; ++i) {
      const double v = static_cast<double>(test::uniform(g, 0, (gidx{1} << 52) - 1)) * 0x1p-1074;
      d.x.push_back(test::uniform(g, 0, 1) ? v : -v);
    }
    s.push_back(d);
  }
  {
    DSet d{"tiny_many", {}, {}};  // many tiny terms (the accumulator normalises ~100 times)
    d.x.push_back(1.0);
    for (int i = 0; i < 200000; ++i)
      d.x.push_back(std::ldexp(static_cast<double>(test::uniform(g, 1, 1000)), -1000));
    d.x.push_back(-1.0);
    s.push_back(d);
  }
  {
    DSet d{"pairs", {}, {}};  // x and -x for wide x, shuffled, plus a few small terms
    for (int i = 0; i < 3000; ++i) {
      const double v = bits_of_random(g, -200, 600);
      d.x.push_back(v);
      d.x.push_back(-v);
    }
    for (int i = 0; i < 7; ++i) d.x.push_back(bits_of_random(g, -60, -50));
    for (std::size_t i = d.x.size(); i > 1; --i)
      std::swap(d.x[i - 1], d.x[static_cast<std::size_t>(test::uniform(g, 0, static_cast<gidx>(i) - 1))]);
    s.push_back(d);
  }
  {
    DSet d{"uniform", {}, {}};
    for (int i = 0; i < 10000; ++i)
      d.x.push_back(static_cast<double>(test::uniform(g, 0, (gidx{1} << 53) - 1)) * 0x1p-53);
    s.push_back(d);
  }
  for (auto& d : s) {
    d.y = small_y(d.x.size());
    if (d.name == "uniform")
      for (std::size_t i = 0; i < d.x.size(); ++i) d.y[i] = d.x[i] + d.y[i] * 1e-6;
  }
  return s;
}

/// float32 sets: exact sum rounded to float (the double-rounding trap included).
std::vector<std::pair<std::string, std::vector<float>>> float_sets() {
  test::Rng g(7);
  std::vector<std::pair<std::string, std::vector<float>>> s;
  s.push_back({"f_double_round", {1.0f, 0x1p-24f, 0x1p-60f}});  // via double: 1.0; exact: 1 + 2^-23
  std::vector<float> w;
  for (int i = 0; i < 5000; ++i) {
    const float m = 1.0f + static_cast<float>(test::uniform(g, 0, (1 << 23) - 1)) * 0x1p-23f;
    const float v = std::ldexp(m, static_cast<int>(test::uniform(g, -149, 100)));
    w.push_back(test::uniform(g, 0, 1) ? v : -v);
  }
  s.push_back({"f_wide", w});
  return s;
}

/// Rank 0 writes every set, runs exact_ref.py, and broadcasts its answer: name -> values.
std::map<std::string, std::vector<double>> references(
    const std::vector<DSet>& ds, const std::vector<std::pair<std::string, std::vector<float>>>& fs) {
  garray::Context ctx;
  std::string text;
  if (ctx.rank() == 0) {
    const auto dir = std::filesystem::temp_directory_path() / ("garray_repro_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto in = dir / "sets.txt", out = dir / "ref.txt";
    {
      std::ofstream f(in);
      for (const auto& d : ds) {
        f << "set " << d.name << " d " << d.x.size() << '\n';
        for (std::size_t i = 0; i < d.x.size(); ++i) f << hex(d.x[i]) << ' ' << hex(d.y[i]) << '\n';
      }
      for (const auto& [name, v] : fs) {
        f << "set " << name << " f " << v.size() << '\n';
        for (float x : v) f << hex(static_cast<double>(x)) << '\n';
      }
    }
    const std::string cmd =
        std::string("/usr/bin/python3 ") + GARRAY_EXACT_REF + " " + in.string() + " > " + out.string();
    if (std::system(cmd.c_str()) == 0) {
      std::ifstream f(out);
      std::stringstream ss;
      ss << f.rdbuf();
      text = ss.str();
    }
    std::filesystem::remove_all(dir);
  }
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, ctx.comm());
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, 0, ctx.comm());
  std::map<std::string, std::vector<double>> r;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    std::istringstream ls(line);
    std::string name, v;
    ls >> name;
    while (ls >> v) r[name].push_back(std::strtod(v.c_str(), nullptr));
  }
  return r;
}

const std::map<std::string, std::vector<double>>& refs() {
  static const auto r = references(double_sets(), float_sets());
  return r;
}

/// A 2-d shape for n elements: the largest divisor <= sqrt(n) rows.
garray::Shape<2> shape_for(gidx n) {
  gidx r = 1;
  for (gidx d = 1; d * d <= n; ++d)
    if (n % d == 0) r = d;
  return {r, n / r};
}

/// An array of `sh` holding `v` in row-major order (reversed: in reverse order, so the view
/// with steps -1, -1 reads v in order), distributed as `dist`. Collective.
template <class T>
garray::GlobalArray<T, 2> laid_out(const garray::Context& ctx, const std::vector<T>& v,
                                   const garray::Shape<2>& sh, const garray::Distribution<2>& dist,
                                   bool reversed) {
  garray::GlobalArray<T, 2> a(ctx, sh, dist);
  {
    auto blk = a.access();
    const auto& b = blk.box();
    for (gidx i = b.lo[0]; i < b.hi[0]; ++i)
      for (gidx j = b.lo[1]; j < b.hi[1]; ++j) {
        const gidx k = i * sh[1] + j;
        blk.view()[i][j] = v[static_cast<std::size_t>(reversed ? sh[0] * sh[1] - 1 - k : k)];
      }
  }
  a.sync();
  return a;
}

garray::Section<2> whole(const garray::Shape<2>& sh, bool reversed) {
  garray::Section<2> s;
  for (std::size_t d = 0; d < 2; ++d) {
    s.start[d] = reversed ? sh[d] - 1 : 0;
    s.step[d] = reversed ? -1 : 1;
    s.count[d] = sh[d];
  }
  return s;
}

/// The layouts every set is checked in: blocked, row slabs, column slabs, replicated, random
/// process grids with random block boundaries; each also reversed (a view with negative steps).
std::vector<std::pair<std::string, garray::Distribution<2>>> layouts(const garray::Shape<2>& sh, int nranks,
                                                                     test::Rng& g) {
  std::vector<std::pair<std::string, garray::Distribution<2>>> r;
  r.push_back({"blocked", garray::Distribution<2>::blocked()});
  r.push_back({"slab0", garray::Distribution<2>::slab(0)});
  r.push_back({"slab1", garray::Distribution<2>::slab(1)});
  r.push_back({"replicated", garray::Distribution<2>::replicated()});  // every rank holds all: counted once
  for (int k = 0; k < 2; ++k)
    r.push_back({"random" + std::to_string(k), test::random_distribution<2>(g, sh, nranks)});
  return r;
}

}  // namespace

TEST_CASE("ExactSum: serial accumulation is the correctly rounded sum (math.fsum)") {
  const auto& ref = refs();
  REQUIRE(!ref.empty());
  for (const auto& d : double_sets()) {
    INFO("set " << d.name);
    REQUIRE(ref.count(d.name) == 1);
    garray::detail::ExactSum s, sq, dot, diff;
    for (std::size_t i = 0; i < d.x.size(); ++i) {
      s.add(d.x[i]);
      sq.add(d.x[i] * d.x[i]);
      dot.add(d.x[i] * d.y[i]);
      diff.add((d.y[i] - d.x[i]) * (d.y[i] - d.x[i]));
    }
    const auto& r = ref.at(d.name);
    CHECK(hex(s.round<double>()) == hex(r[0]));
    CHECK(hex(std::sqrt(sq.round<double>())) == hex(r[1]));
    CHECK(hex(dot.round<double>()) == hex(r[2]));
    CHECK(hex(std::sqrt(diff.round<double>())) == hex(r[3]));
    // The block path (ExtractVector slices + term by term), blocks of varying sizes.
    {
      garray::detail::ExactSum bs, bq;
      std::vector<double> buf;
      std::size_t i = 0, len = 1;
      while (i < d.x.size()) {
        const std::size_t b = std::min<std::size_t>({len, d.x.size() - i, garray::detail::ExactSum::block});
        buf.assign(d.x.begin() + static_cast<std::ptrdiff_t>(i),
                   d.x.begin() + static_cast<std::ptrdiff_t>(i + b));
        bs.add_block(buf.data(), static_cast<int>(b));
        for (std::size_t k = 0; k < b; ++k) buf[k] = d.x[i + k] * d.x[i + k];
        bq.add_block(buf.data(), static_cast<int>(b));
        i += b;
        len = len * 3 % 301 + 1;
      }
      CHECK(hex(bs.round<double>()) == hex(r[0]));
      CHECK(hex(std::sqrt(bq.round<double>())) == hex(r[1]));
    }
    // Any order, any split into partial accumulators, gives the same integer.
    garray::detail::ExactSum a, b;
    for (std::size_t i = d.x.size(); i-- > 0;) (i % 3 == 0 ? a : b).add(d.x[i]);
    a.merge(b);
    CHECK(hex(a.round<double>()) == hex(r[0]));
  }
  for (const auto& [name, v] : float_sets()) {
    INFO("set " << name);
    garray::detail::ExactSum s;
    for (float x : v) s.add(x);
    CHECK(hex(static_cast<double>(s.round<float>())) == hex(ref.at(name).at(0)));
  }
  CHECK(hex(static_cast<double>([] {
          garray::detail::ExactSum s;
          for (float x : {1.0f, 0x1p-24f, 0x1p-60f}) s.add(x);
          return s.round<float>();
        }())) == hex(static_cast<double>(1.0f + 0x1p-23f)));
}

TEST_CASE("ExactSum: special values, overflow, zero, integers") {
  using garray::detail::ExactSum;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double big = std::numeric_limits<double>::max();
  const auto total = [](std::initializer_list<double> v) {
    ExactSum s;
    for (double x : v) s.add(x);
    return s.round<double>();
  };
  CHECK(std::isnan(total({1.0, nan, 2.0})));
  CHECK(std::isnan(total({inf, -inf})));
  CHECK(std::isnan(total({inf, nan})));
  CHECK(total({inf, 1.0, big}) == inf);
  CHECK(total({-inf, 5.0}) == -inf);
  CHECK(total({big, big}) == inf);
  CHECK(total({-big, -big}) == -inf);
  CHECK(total({big, big, -big}) == big);
  CHECK(total({big, 0x1p970}) == inf);  // exactly halfway to 2^1024: ties to even -> inf
  CHECK(total({big, 0x1p969}) == big);  // below halfway
  CHECK(total({0x1p-1074, -0x1p-1074, 0x1p-1074}) == 0x1p-1074);
  const double z = total({-0.0, 1.0, -1.0});
  CHECK(z == 0.0);
  CHECK(!std::signbit(z));
  CHECK(!std::signbit(total({})));
  ExactSum i;
  i.add(std::numeric_limits<std::int64_t>::max());
  i.add(std::numeric_limits<std::int64_t>::min());
  i.add(std::uint64_t{1} << 63);
  CHECK(i.round<double>() == 0x1p63 - 1.0);  // -1 + 2^63 rounds to 2^63
  ExactSum f;
  f.add(std::numeric_limits<float>::max());
  f.add(std::numeric_limits<float>::max());
  CHECK(std::isinf(f.round<float>()));
  CHECK(f.round<double>() == 2.0 * static_cast<double>(std::numeric_limits<float>::max()));
}

TEST_CASE("reproducible sum/dot/norm2/mean/assign_norm2_*: math.fsum's bits in every layout") {
  garray::Context ctx;
  const auto& ref = refs();
  auto g = test::Rng(test::shared_seed());
  for (const auto& d : double_sets()) {
    if (d.x.size() > 20000) continue;  // tiny_many: serial only (its layouts add nothing)
    const gidx n = static_cast<gidx>(d.x.size());
    const auto sh = shape_for(n);
    const auto& r = ref.at(d.name);
    for (const auto& [lname, dist] : layouts(sh, ctx.size(), g))
      for (bool rev : {false, true}) {
        INFO("set " << d.name << " layout " << lname << std::string(rev ? " reversed" : "") << " shape " << sh[0] << "x"
                    << sh[1]);
        auto xa = laid_out(ctx, d.x, sh, dist, rev);
        auto ya = laid_out(ctx, d.y, sh, garray::Distribution<2>::blocked(), rev);
        const garray::View<double, 2, 2> xv(xa, whole(sh, rev)), yv(ya, whole(sh, rev));
        const double s = garray::sum(xv, reproducible);
        CHECK(hex(s) == hex(r[0]));
        CHECK(hex(garray::norm2(xv, reproducible)) == hex(r[1]));
        CHECK(hex(garray::dot(xv, yv, reproducible)) == hex(r[2]));
        CHECK(hex(garray::mean(xv, reproducible)) == hex(r[4]));
        // out = y over a copy of x: the change is |y - x|.
        auto u = laid_out(ctx, d.x, sh, dist, rev);
        const garray::View<double, 2, 2> uv(u, whole(sh, rev));
        CHECK(hex(garray::assign_norm2_change(uv, yv, reproducible)) == hex(r[3]));
        auto w = laid_out(ctx, d.x, sh, garray::Distribution<2>::slab(1), false);
        CHECK(hex(garray::assign_norm2_diff(w, yv, xv, reproducible)) == hex(r[3]));
        CHECK(ntest::same_on_all_ranks(s, ctx.comm()));
      }
    // 1-d, randomly distributed
    garray::GlobalArray<double, 1> x1(ctx, {n}, test::random_distribution<1>(g, {n}, ctx.size()));
    if (ctx.rank() == 0) x1.put_section(garray::Section<1>::full({n}), std::span<const double>(d.x));
    x1.sync();
    CHECK(hex(garray::sum(x1, reproducible)) == hex(r[0]));
    CHECK(hex(garray::norm2(x1, reproducible)) == hex(r[1]));
  }
}

TEST_CASE("reproducible float32 and complex reductions") {
  garray::Context ctx;
  const auto& ref = refs();
  auto g = test::Rng(test::shared_seed());
  for (const auto& [name, v] : float_sets()) {
    const auto sh = shape_for(static_cast<gidx>(v.size()));
    for (const auto& [lname, dist] : layouts(sh, ctx.size(), g))
      for (bool rev : {false, true}) {
        INFO("set " << name << " layout " << lname << std::string(rev ? " reversed" : ""));
        auto a = laid_out(ctx, v, sh, dist, rev);
        const garray::View<float, 2, 2> av(a, whole(sh, rev));
        const float s = garray::sum(av, reproducible);
        static_assert(std::is_same_v<decltype(garray::sum(av, reproducible)), float>);
        CHECK(hex(static_cast<double>(s)) == hex(ref.at(name).at(0)));
      }
  }
  // complex: real and imaginary parts are the "mid" and "wide" sets
  const auto ds = double_sets();
  const DSet* mid = nullptr;
  const DSet* wide = nullptr;
  for (const auto& d : ds) {
    if (d.name == "mid") mid = &d;
    if (d.name == "wide") wide = &d;
  }
  REQUIRE((mid && wide && mid->x.size() == wide->x.size()));
  std::vector<std::complex<double>> c;
  std::vector<std::complex<float>> cf;
  garray::detail::ExactAcc<std::complex<double>> ser_dot;
  garray::detail::ExactSum ser_norm;
  for (std::size_t i = 0; i < mid->x.size(); ++i) {
    c.emplace_back(mid->x[i], wide->x[i]);
    cf.emplace_back(static_cast<float>(mid->y[i]), static_cast<float>(mid->y[i] * 3.0));
  }
  for (std::size_t i = 0; i < c.size(); ++i) {
    ser_dot.add(c[i] * c[(i * 7) % c.size()]);
    {  // the contract's term, each square rounded (volatile: not the library's functor, nothing to fuse)
      volatile double rr = c[i].real() * c[i].real(), ii = c[i].imag() * c[i].imag();
      ser_norm.add(rr + ii);
    }
  }
  const auto sh = shape_for(static_cast<gidx>(c.size()));
  std::vector<std::complex<double>> c2(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) c2[i] = c[(i * 7) % c.size()];
  garray::detail::ExactAcc<std::complex<float>> ser_f;
  for (const auto& z : cf) ser_f.add(z);
  for (const auto& [lname, dist] : layouts(sh, ctx.size(), g))
    for (bool rev : {false, true}) {
      INFO("complex layout " << lname << std::string(rev ? " reversed" : ""));
      auto a = laid_out(ctx, c, sh, dist, rev);
      auto b = laid_out(ctx, c2, sh, garray::Distribution<2>::slab(0), rev);
      auto f = laid_out(ctx, cf, sh, dist, rev);
      const garray::View<std::complex<double>, 2, 2> av(a, whole(sh, rev)), bv(b, whole(sh, rev));
      const garray::View<std::complex<float>, 2, 2> fv(f, whole(sh, rev));
      const std::complex<double> s = garray::sum(av, reproducible);
      CHECK(hex(s.real()) == hex(ref.at("mid")[0]));
      CHECK(hex(s.imag()) == hex(ref.at("wide")[0]));
      const std::complex<double> dt = garray::dot(av, bv, reproducible);
      CHECK(hex(dt.real()) == hex(ser_dot.value().real()));
      CHECK(hex(dt.imag()) == hex(ser_dot.value().imag()));
      CHECK(hex(garray::norm2(av, reproducible)) == hex(std::sqrt(ser_norm.round<double>())));
      const std::complex<float> sf = garray::sum(fv, reproducible);
      CHECK(hex(static_cast<double>(sf.real())) == hex(static_cast<double>(ser_f.value().real())));
      CHECK(hex(static_cast<double>(sf.imag())) == hex(static_cast<double>(ser_f.value().imag())));
      const std::complex<double> m = garray::mean(av, reproducible);
      CHECK(hex(m.real()) == hex(ref.at("mid")[4]));
    }
}

TEST_CASE("reproducible reductions: NaN, infinities, overflow, empty, integers") {
  garray::Context ctx;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double big = std::numeric_limits<double>::max();
  const auto total = [&](std::vector<double> v) {
    const gidx n = static_cast<gidx>(v.size());
    garray::GlobalArray<double, 1> a(ctx, {n});
    if (ctx.rank() == 0) a.put_section(garray::Section<1>::full({n}), std::span<const double>(v));
    a.sync();
    return garray::sum(a, reproducible);
  };
  CHECK(std::isnan(total({1.0, 2.0, nan, 3.0})));
  CHECK(std::isnan(total({inf, 1.0, 2.0, -inf})));
  CHECK(total({inf, 1.0, 2.0, big}) == inf);
  CHECK(total({-inf, 1.0, 2.0, 3.0}) == -inf);
  CHECK(total({big, 1.0, big, 2.0}) == inf);   // overflow of the rounded total
  CHECK(total({big, big, -big, 0.5}) == big);  // but not of the exact intermediate
  CHECK(total({1e300, 1.0, -1e300, 0.0}) == 1.0);
  // an empty selection: +0.0; the mean of one: NaN
  garray::GlobalArray<double, 2> a(ctx, {4, 5});
  garray::fill(a, 1.0);
  garray::Section<2> none;
  none.start = {0, 0};
  none.step = {1, 1};
  none.count = {0, 5};
  const double z = garray::sum(garray::View<double, 2, 2>(a, none), reproducible);
  CHECK(z == 0.0);
  CHECK(!std::signbit(z));
  CHECK(std::isnan(garray::mean(garray::View<double, 2, 2>(a, none), reproducible)));
  // integers: already exact (int64 accumulator, NumPy's type); mean summed exactly
  garray::GlobalArray<std::int32_t, 1> ia(ctx, {1001});
  garray::iota(ia, std::int32_t{-500});
  CHECK(garray::sum(ia, reproducible) == garray::sum(ia));
  static_assert(std::is_same_v<decltype(garray::sum(ia, reproducible)), std::int64_t>);
  CHECK(garray::mean(ia, reproducible) == 0.0);
  garray::iota(ia, std::int32_t{-300}, std::int32_t{7});  // a sum that is not 0: -300*1001 + 7*500500
  CHECK(garray::sum(ia, reproducible) == std::int64_t{-300} * 1001 + std::int64_t{7} * 500500);
  CHECK(garray::mean(ia, reproducible) == (-300.0 * 1001 + 7.0 * 500500) / 1001);
  garray::GlobalArray<std::int64_t, 1> big_i(ctx, {3});
  if (ctx.rank() == 0) {
    const std::vector<std::int64_t> v{std::numeric_limits<std::int64_t>::max(),
                                      std::numeric_limits<std::int64_t>::max(), -3};
    big_i.put_section(garray::Section<1>::full({3}), std::span<const std::int64_t>(v));
  }
  big_i.sync();
  // (2 (2^63 - 1) - 3) / 3, summed exactly (an int64 or double accumulator would not be)
  CHECK(garray::mean(big_i, reproducible) == std::ldexp(1.0, 64) / 3.0);
}

TEST_CASE("user guide: reproducible reductions (docs/user-guide.md)") {
  garray::Context ctx;
  // clang-format off
  // guide-example: reproducible reductions
  using garray::reproducible;
  garray::GlobalArray<double, 2> x(ctx, {300, 200}, garray::Distribution<2>::slab(1));
  garray::fill_random(x, 42);                       // the same values at any rank count
  double s = garray::sum(x, reproducible);          // same bits at np 1, 2, 3, 4, ...
  double d = garray::dot(x, x, reproducible);       // each product rounded, then summed exactly
  double r = garray::norm2(x - 0.5, reproducible);  // fused: sqrt(exact sum of squares)
  double m = garray::mean(x, reproducible);         // exact sum rounded, then / n
  garray::GlobalArray<double, 2> y(ctx, {300, 200});  // another distribution: the same bits
  y.view() = x;
  assert(garray::sum(y, reproducible) == s);
  double change = garray::assign_norm2_change(y, x * 0.5, reproducible);  // one sweep, as without the tag
  // end guide-example
  // clang-format on
  // The assert is compiled out under NDEBUG: the same claim on another copy of x.
  garray::GlobalArray<double, 2> z(ctx, {300, 200}, garray::Distribution<2>::slab(0));
  z.view() = x;
  CHECK(garray::sum(z, reproducible) == s);
  // The same values serially, through the accumulator: the same bits (any rank count).
  std::vector<double> all(300 * 200);
  x.get_section(garray::Section<2>::full({300, 200}), all);
  garray::detail::ExactSum es, ed, er, ec;
  for (double v : all) {
    es.add(v);
    ed.add(v * v);
    er.add((v - 0.5) * (v - 0.5));
    ec.add((v * 0.5 - v) * (v * 0.5 - v));
  }
  CHECK(hex(s) == hex(es.round<double>()));
  CHECK(hex(d) == hex(ed.round<double>()));
  CHECK(hex(r) == hex(std::sqrt(er.round<double>())));
  CHECK(hex(m) == hex(es.round<double>() / 60000.0));
  CHECK(hex(change) == hex(std::sqrt(ec.round<double>())));
  // mixing the tagged and the plain call across ranks is a collective mismatch, not a hang
  if (ctx.size() > 1) {
    CHECK_THROWS_AS((void)(ctx.rank() == 0 ? garray::sum(x, reproducible) : garray::sum(x)),
                    garray::CollectiveMismatch);
  }
}

TEST_CASE("assign_reduce over a replicated output counts every element once (plain and reproducible)") {
  garray::Context ctx;
  const garray::Shape<2> sh{7, 9};
  std::vector<double> x(63), y(63);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(static_cast<double>(i)) * 3.0;
    y[i] = std::cos(static_cast<double>(i) * 0.7);
  }
  double serial = 0;  // rank 0's copy, row-major: the plain rule
  garray::detail::ExactSum exact;
  for (std::size_t i = 0; i < x.size(); ++i) {
    serial += (y[i] - x[i]) * (y[i] - x[i]);
    exact.add((y[i] - x[i]) * (y[i] - x[i]));
  }
  auto ya = laid_out(ctx, y, sh, garray::Distribution<2>::blocked(), false);
  auto u = laid_out(ctx, x, sh, garray::Distribution<2>::replicated(), false);
  CHECK(hex(garray::assign_norm2_change(u, ya)) == hex(std::sqrt(serial)));
  auto w = laid_out(ctx, x, sh, garray::Distribution<2>::replicated(), false);
  CHECK(hex(garray::assign_norm2_change(w, ya, reproducible)) == hex(std::sqrt(exact.round<double>())));
  CHECK(garray::max(w) == garray::max(ya));  // written on every rank
}

// semantics.md "Reductions": norm2 and the assign_norm2_* forms compute each |x_i|^2 in
// double. For complex<float>, std::norm squared in float first (rounded, and inf beyond
// |z| ~ 1.8e19), while float was widened before squaring.
TEST_CASE("norm2 / assign_norm2_change of complex<float>: |z|^2 in double, as for float") {
  garray::Context ctx;
  const garray::Index n = 2 * ctx.size();
  garray::GlobalArray<float, 1> xf(ctx, {n});
  garray::GlobalArray<std::complex<float>, 1> xc(ctx, {n}), outc(ctx, {n});
  xf.fill(3e19f);
  xc.fill(std::complex<float>(3e19f, 0.0f));
  const double expect = std::sqrt(static_cast<double>(n)) * static_cast<double>(3e19f);
  CHECK(garray::norm2(xf) == doctest::Approx(expect));  // float: squared in double
  CHECK(std::isfinite(garray::norm2(xc)));              // was inf
  CHECK(garray::norm2(xc) == doctest::Approx(expect));
  CHECK(garray::norm2(xc, garray::reproducible) == doctest::Approx(expect));  // was inf
  outc.fill(std::complex<float>(0.0f, 0.0f));
  CHECK(garray::assign_norm2_change(outc, xc) == doctest::Approx(expect));  // was inf
}

// Differential tests of owner-computes expressions: random expression trees over random
// views of arrays with different distributions (outputs aliasing inputs included) against a
// serial evaluation with the same operation order, bitwise.
#include <bit>
#include <cmath>
#include <cstdint>
#include <garray/garray.hpp>
#include <limits>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "numeric/support.hpp"

using gidx = garray::Index;
using ntest::A2;
using ntest::V2;

namespace {

// The runtime mirror of a random expression: the serial reference evaluates exactly the
// selected branch, with the same operations in the same order.
struct Node {
  int kind = 0;  // 0 view leaf, 1 negated view leaf, 2 scalar, 3 binary
  int op = 0;    // + - * / min
  int array = 0;
  garray::Section<2> sec{};
  double value = 0;
  std::unique_ptr<Node> l, r;
};

double ref_eval(const Node& n, const std::vector<test::Reference<double, 2>*>& refs, gidx i, gidx j) {
  switch (n.kind) {
    case 0: return refs[static_cast<std::size_t>(n.array)]->at(ntest::at(n.sec, i, j));
    case 1: return -refs[static_cast<std::size_t>(n.array)]->at(ntest::at(n.sec, i, j));
    case 2: return n.value;
    default: {
      const double a = ref_eval(*n.l, refs, i, j), b = ref_eval(*n.r, refs, i, j);
      switch (n.op) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        case 3: return a / b;
        default: return b != b ? b : (b < a ? b : a);  // numpy.minimum: NaN propagates
      }
    }
  }
}

struct Builder {
  test::Rng& g;
  std::vector<A2*> arrays;
  garray::Shape<2> shape;  // the expression's shape

  // A leaf: a view of a random array, its negation, or a scalar; the unselected branches
  // still hold valid views. The runtime choice goes through where() with scalar conditions.
  auto leaf(Node& n) {
    n.array = static_cast<int>(test::uniform(g, 0, static_cast<gidx>(arrays.size()) - 1));
    n.sec = ntest::random_section(g, arrays[static_cast<std::size_t>(n.array)]->shape(), shape);
    n.value = static_cast<double>(test::uniform(g, -3, 3)) * 0.5;
    n.kind = static_cast<int>(test::uniform(g, 0, 2));
    V2 v(*arrays[static_cast<std::size_t>(n.array)], n.sec);
    const garray::ScalarLeaf<bool> is_view(n.kind == 0), is_neg(n.kind == 1);
    return garray::where(is_view, v, garray::where(is_neg, -v, garray::ScalarLeaf<double>(n.value)));
  }

  template <int D>
  auto build(Node& n, bool force_leaf) {
    if constexpr (D == 0) {
      return leaf(n);
    } else {
      const bool stop = force_leaf || test::uniform(g, 0, 3) == 0;
      Node lf;
      auto L = leaf(lf);
      n.l = std::make_unique<Node>();
      n.r = std::make_unique<Node>();
      auto a = build<D - 1>(*n.l, stop);
      auto b = build<D - 1>(*n.r, stop);
      if (stop) {
        n.kind = lf.kind;
        n.array = lf.array;
        n.sec = lf.sec;
        n.value = lf.value;
      } else {
        n.kind = 3;
        n.op = static_cast<int>(test::uniform(g, 0, 4));
      }
      using garray::ScalarLeaf;
      const ScalarLeaf<bool> s(stop), c0(n.op == 0), c1(n.op == 1), c2(n.op == 2), c3(n.op == 3);
      return garray::where(
          s, L, garray::where(c0, a + b, garray::where(c1, a - b, garray::where(c2, a * b, garray::where(c3, a / b, garray::min(a, b))))));
    }
  }
};

}  // namespace

TEST_CASE("random expression trees over random views equal a serial evaluation bitwise") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  for (int round = 0; round < 12; ++round) {
    const garray::Shape<2> base = test::random_shape<2>(rng, 9);
    const int narrays = static_cast<int>(test::uniform(rng, 2, 3));
    std::vector<std::unique_ptr<A2>> arrays;
    std::vector<test::Reference<double, 2>> refs;
    for (int k = 0; k < narrays; ++k) {
      const garray::Shape<2> sh = {base[0] + test::uniform(rng, 0, 3), base[1] + test::uniform(rng, 0, 3)};
      const garray::Shape<2> ghost = {test::uniform(rng, 0, 1), test::uniform(rng, 0, 1)};
      arrays.push_back(std::make_unique<A2>(ctx, sh, test::random_distribution<2>(rng, sh, p), ghost));
      refs.emplace_back(sh);
      ntest::randomize(rng, refs.back(), -5, 9);
    }
    for (int k = 0; k < narrays; ++k) ntest::load(*arrays[static_cast<std::size_t>(k)], refs[static_cast<std::size_t>(k)]);
    std::vector<test::Reference<double, 2>*> rp;
    std::vector<A2*> ap;
    for (int k = 0; k < narrays; ++k) {
      rp.push_back(&refs[static_cast<std::size_t>(k)]);
      ap.push_back(arrays[static_cast<std::size_t>(k)].get());
    }
    for (int trial = 0; trial < 4; ++trial) {
      const garray::Shape<2> shape = {test::uniform(rng, 1, base[0]), test::uniform(rng, 1, base[1])};
      Builder b{rng, ap, shape};
      Node root;
      auto e = b.build<3>(root, false);
      const int oa = static_cast<int>(test::uniform(rng, 0, narrays - 1));
      const auto osec = ntest::random_section(rng, ap[static_cast<std::size_t>(oa)]->shape(), shape);
      INFO("round " << round << " trial " << trial << " output array " << oa << " section " << osec);
      test::Reference<double, 2> before = *rp[static_cast<std::size_t>(oa)];  // for assign_reduce
      // Serial: evaluate the whole right side first (numpy semantics), then write.
      std::vector<double> vals;
      for (gidx i = 0; i < shape[0]; ++i)
        for (gidx j = 0; j < shape[1]; ++j) vals.push_back(ref_eval(root, rp, i, j));
      std::size_t q = 0;
      for (gidx i = 0; i < shape[0]; ++i)
        for (gidx j = 0; j < shape[1]; ++j) rp[static_cast<std::size_t>(oa)]->at(ntest::at(osec, i, j)) = vals[q++];
      V2 out(*ap[static_cast<std::size_t>(oa)], osec);
      const int mode = static_cast<int>(test::uniform(rng, 0, 2));
      if (mode == 0) {
        out = e;
      } else if (mode == 1) {
        garray::assign(out, e);
      } else {
        // assign fused with a reduction of f(new, old): the number of elements whose bits
        // changed must match the serial's too (the audit of stop 43 found it discarded)
        const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
        const gidx changed = garray::assign_reduce(
            out, e, garray::sum_reducer{}, [&](double nv, double ov) { return gidx{bits(nv) != bits(ov)}; });
        gidx want = 0;
        for (gidx i = 0; i < shape[0]; ++i)
          for (gidx j = 0; j < shape[1]; ++j) {
            const auto at = ntest::at(osec, i, j);
            want += bits(rp[static_cast<std::size_t>(oa)]->at(at)) != bits(before.at(at)) ? 1 : 0;
          }
        CHECK(changed == want);
      }
      for (int k = 0; k < narrays; ++k)
        CHECK(ntest::equal_bits(*ap[static_cast<std::size_t>(k)], *rp[static_cast<std::size_t>(k)]));
    }
  }
}

TEST_CASE("compound assignment, eval, ufuncs with outputs, scale and axpy match the serial") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  for (int round = 0; round < 6; ++round) {
    const garray::Shape<2> sh = test::random_shape<2>(rng, 12);
    A2 a(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
    A2 b(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()), {1, 1});
    test::Reference<double, 2> ra(sh), rb(sh);
    ntest::randomize(rng, ra, -9, 9);
    ntest::randomize(rng, rb, 1, 9);
    ntest::load(a, ra);
    ntest::load(b, rb);
    auto each = [&](auto f) {
      for (gidx i = 0; i < sh[0]; ++i)
        for (gidx j = 0; j < sh[1]; ++j) f(i, j);
    };
    a += b;
    each([&](gidx i, gidx j) { ra.at({i, j}) = ra.at({i, j}) + rb.at({i, j}); });
    a.view() *= 0.5;
    each([&](gidx i, gidx j) { ra.at({i, j}) = ra.at({i, j}) * 0.5; });
    b.view() /= a - 20.0;
    each([&](gidx i, gidx j) { rb.at({i, j}) = rb.at({i, j}) / (ra.at({i, j}) - 20.0); });
    a -= 1;
    each([&](gidx i, gidx j) { ra.at({i, j}) = ra.at({i, j}) - 1; });
    CHECK(ntest::equal_bits(a, ra));
    CHECK(ntest::equal_bits(b, rb));

    auto t = garray::eval(a * 2.0 + b);
    CHECK(t.shape() == sh);
    CHECK(t.distribution().signature() == a.distribution().signature());
    test::Reference<double, 2> rt(sh);
    each([&](gidx i, gidx j) { rt.at({i, j}) = ra.at({i, j}) * 2.0 + rb.at({i, j}); });
    CHECK(ntest::equal_bits(t, rt));

    garray::add(a, b, t);
    each([&](gidx i, gidx j) { rt.at({i, j}) = ra.at({i, j}) + rb.at({i, j}); });
    CHECK(ntest::equal_bits(t, rt));
    garray::multiply(t, 3.0, t);
    each([&](gidx i, gidx j) { rt.at({i, j}) = rt.at({i, j}) * 3.0; });
    CHECK(ntest::equal_bits(t, rt));
    auto u = garray::subtract(t, a);  // eager: a new array
    test::Reference<double, 2> ru(sh);
    each([&](gidx i, gidx j) { ru.at({i, j}) = rt.at({i, j}) - ra.at({i, j}); });
    CHECK(ntest::equal_bits(u, ru));
    garray::axpy(0.25, b, a);
    each([&](gidx i, gidx j) { ra.at({i, j}) = ra.at({i, j}) + 0.25 * rb.at({i, j}); });
    garray::scale(b, -2.0);
    each([&](gidx i, gidx j) { rb.at({i, j}) = rb.at({i, j}) * -2.0; });
    garray::sqrt(garray::abs(a), u);
    each([&](gidx i, gidx j) { ru.at({i, j}) = std::sqrt(std::abs(ra.at({i, j}))); });
    CHECK(ntest::equal_bits(a, ra));
    CHECK(ntest::equal_bits(b, rb));
    CHECK(ntest::equal_bits(u, ru));
    // where / comparisons / pow / max / local replicated operands
    boost::multi_array<double, 2> loc(sh);
    for (std::size_t k = 0; k < loc.num_elements(); ++k) loc.data()[k] = static_cast<double>(k % 7);
    u.view() = garray::where(a > b, garray::pow(a, 2.0), garray::max(b, garray::local(loc)) - garray::exp(garray::local(loc) * 0.0));
    each([&](gidx i, gidx j) {
      const double x = ra.at({i, j}), y = rb.at({i, j}), l = loc[i][j];
      ru.at({i, j}) = x > y ? std::pow(x, 2.0) : (l < y ? y : l) - std::exp(l * 0.0);
    });
    CHECK(ntest::equal_bits(u, ru));
  }
}

namespace {
// One serial two-buffer Jacobi step on the interior: out = J(in) (boundary of out left as it
// is); returns the row-major sum of (out - in)^2 over the interior.
double serial_jacobi(const test::Reference<double, 2>& in_ref, test::Reference<double, 2>& out_ref, double dx2,
                     double dy2, double dnr_inv) {
  const auto& in = in_ref.a;
  auto& out = out_ref.a;
  const auto n0 = static_cast<gidx>(in.shape()[0]), n1 = static_cast<gidx>(in.shape()[1]);
  double change = 0;
  for (gidx i = 1; i + 1 < n0; ++i)
    for (gidx j = 1; j + 1 < n1; ++j) {
      out[i][j] = ((in[i - 1][j] + in[i + 1][j]) * dy2 + (in[i][j - 1] + in[i][j + 1]) * dx2) * dnr_inv;
      const double d = out[i][j] - in[i][j];
      change += d * d;
    }
  return change;
}
}  // namespace

TEST_CASE("the Jacobi step equals the serial two-buffer Jacobi bitwise") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  using garray::idx;
  using garray::range;
  using garray::_;
  for (int round = 0; round < 4; ++round) {
    const garray::Shape<2> sh = {test::uniform(rng, 3, 40), test::uniform(rng, 3, 40)};
    const garray::Shape<2> ghost = {round % 2, round % 2};
    A2 u(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()), ghost);
    test::Reference<double, 2> ru(sh);
    for (std::size_t k = 0; k < ru.a.num_elements(); ++k)
      ru.a.data()[k] = std::sin(static_cast<double>(k) * 0.37 + round);
    ntest::load(u, ru);
    const double dx2 = 0.013, dy2 = 0.021, dnr_inv = 0.5 / (dx2 + dy2);
    auto inner = u[idx[range(1, -1)][range(1, -1)]];
    auto up = u[idx[range(_, -2)][range(1, -1)]];
    auto down = u[idx[range(2, _)][range(1, -1)]];
    auto left = u[idx[range(1, -1)][range(_, -2)]];
    auto right = u[idx[range(1, -1)][range(2, _)]];
    for (int it = 0; it < 3; ++it) {
      test::Reference<double, 2> nu = ru;  // two buffers
      const double change = serial_jacobi(ru, nu, dx2, dy2, dnr_inv);
      ru = nu;
      if (it == 1) {
        const double got = garray::assign_norm2_change(inner, ((up + down) * dy2 + (left + right) * dx2) * dnr_inv);
        CHECK(ntest::same_on_all_ranks(got));
        CHECK(got == doctest::Approx(std::sqrt(change)).epsilon(1e-12));
      } else {
        inner = ((up + down) * dy2 + (left + right) * dx2) * dnr_inv;
      }
      CHECK(ntest::equal_bits(u, ru));
    }
  }
}

TEST_CASE("assign_norm2_diff: the one-sweep two-buffer Jacobi step (output, reference, aliasing)") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  using garray::idx;
  using garray::range;
  using garray::_;
  for (int round = 0; round < 4; ++round) {
    const garray::Shape<2> sh = {test::uniform(rng, 3, 40), test::uniform(rng, 3, 40)};
    // u and v on unrelated distributions: the reference u[inner] is remote for some of v's rows
    A2 u(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
    A2 v(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
    test::Reference<double, 2> ru(sh), rv(sh);
    ntest::randomize(rng, ru, -9, 9);
    ntest::randomize(rng, rv, -9, 9);
    ntest::load(u, ru);
    ntest::load(v, rv);
    const double dx2 = 0.013, dy2 = 0.021, dnr_inv = 0.5 / (dx2 + dy2);
    auto J = [&](A2& a) {
      return ((a[idx[range(_, -2)][range(1, -1)]] + a[idx[range(2, _)][range(1, -1)]]) * dy2 +
              (a[idx[range(1, -1)][range(_, -2)]] + a[idx[range(1, -1)][range(2, _)]]) * dx2) *
             dnr_inv;
    };
    const double change = serial_jacobi(ru, rv, dx2, dy2, dnr_inv);  // serial, row-major
    const double got = garray::assign_norm2_diff(v[idx[range(1, -1)][range(1, -1)]], J(u), u[idx[range(1, -1)][range(1, -1)]]);
    CHECK(ntest::same_on_all_ranks(got));
    if (ctx.size() == 1) CHECK(got == std::sqrt(change));  // one rank: the serial order exactly
    CHECK(got == doctest::Approx(std::sqrt(change)).epsilon(1e-12));
    CHECK(ntest::equal_bits(v, rv));  // v written (boundary untouched), bitwise
    CHECK(ntest::equal_bits(u, ru));  // the reference only read

    // The reference aliases the output (in place): numpy semantics, bitwise the same as
    // assign_norm2_change on a copy with the same distribution.
    A2 w(ctx, sh, u.distribution());
    ntest::load(w, ru);
    auto inner = [](A2& a) { return a[idx[range(1, -1)][range(1, -1)]]; };
    const double in_place = garray::assign_norm2_diff(inner(u), J(u), inner(u));
    const double change_form = garray::assign_norm2_change(inner(w), J(w));
    CHECK(in_place == change_form);
    test::Reference<double, 2> expect = ru;  // boundary of u, interior of the new iterate
    for (gidx i = 1; i + 1 < sh[0]; ++i)
      for (gidx j = 1; j + 1 < sh[1]; ++j) expect.at({i, j}) = rv.at({i, j});
    CHECK(ntest::equal_bits(u, expect));
    CHECK(ntest::equal_bits(w, expect));
    // The general form with another reducer and an expression as the reference:
    // v[inner] = u[inner] + 1, max |new - 2 w[inner]| = max |expect + 1 - 2 expect|.
    double max_ref = 0;
    for (gidx i = 1; i + 1 < sh[0]; ++i)
      for (gidx j = 1; j + 1 < sh[1]; ++j) {
        const double e = expect.at({i, j});
        rv.at({i, j}) = e + 1.0;
        max_ref = std::max(max_ref, std::abs((e + 1.0) - e * 2.0));
      }
    const double mx = garray::assign_reduce(inner(v), inner(u) + 1.0, inner(w) * 2.0, garray::max_reducer{},
                                            [](double nv, double r) { return std::abs(nv - r); });
    CHECK(mx == max_ref);
    CHECK(ntest::equal_bits(v, rv));
  }
}

TEST_CASE("fill_random of float and complex<float> stays below hi (a double draw rounded to hi)") {
  // audit of stop 43: seed 681273, [0, 1): position 3 drew u = 0.99999999746..., which
  // rounds to 1.0f; at any distribution (the numbers depend on the position only)
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const garray::Shape<1> sh{4};
  garray::GlobalArray<float, 1> f(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  garray::fill_random(f, 681273);
  CHECK(garray::max(f) < 1.0f);
  CHECK(f.get(garray::idx[3]) == std::nextafter(1.0f, 0.0f));  // the largest float below 1
  garray::GlobalArray<std::complex<float>, 1> c(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  garray::fill_random(c, 681273);
  CHECK(c.get(garray::idx[3]) == std::complex<float>(std::nextafter(1.0f, 0.0f), 0.0f));
}

TEST_CASE("fill_random of float and complex<float> stays at or above a lo that float cannot represent") {
  // 0.7 lies between the floats 0.69999998808 and 0.70000004768; [0.7, 0.7 + 1e-7) holds only
  // the second: a draw just above 0.7 rounded to the first (below lo) before the fix
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const garray::Shape<1> sh{64};
  const double lo = 0.7, hi = 0.7 + 1e-7;
  const float only = std::nextafter(0.7f, 1.0f);
  REQUIRE(static_cast<double>(0.7f) < lo);
  REQUIRE(static_cast<double>(only) >= lo);
  REQUIRE(static_cast<double>(only) < hi);
  garray::GlobalArray<float, 1> f(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  garray::fill_random(f, 5, lo, hi);
  CHECK(garray::min(f) == only);
  CHECK(garray::max(f) == only);
  garray::GlobalArray<std::complex<float>, 1> c(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  garray::fill_random(c, 5, lo, hi);
  const auto all = test::whole_array(c);
  CHECK(std::all_of(all.begin(), all.end(),
                    [&](std::complex<float> x) { return x == std::complex<float>(only, 0); }));
}

TEST_CASE("fill, iota, generate, fill_random and for_each_local") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  for (int round = 0; round < 4; ++round) {
    const garray::Shape<2> sh = test::random_shape<2>(rng, 15);
    A2 a(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
    A2 b(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
    garray::fill_random(a, 42, -1.0, 1.0);
    garray::fill_random(b, 42, -1.0, 1.0);  // another distribution: the same numbers
    CHECK(garray::all_of(a == b));
    CHECK(garray::min(a) >= -1.0);
    CHECK(garray::max(a) < 1.0);
    garray::fill_random(b, 43, -1.0, 1.0);
    CHECK(garray::any_of(a != b));
    garray::iota(a, 1.0, 2.0);
    test::Reference<double, 2> ra(sh);
    for (std::size_t k = 0; k < ra.a.num_elements(); ++k) ra.a.data()[k] = 1.0 + 2.0 * static_cast<double>(k);
    CHECK(ntest::equal_bits(a, ra));
    garray::generate(b, [](const garray::Shape<2>& i) { return static_cast<double>(i[0] * 1000 + i[1]); });
    garray::fill(a, 0.0);
    gidx visited = 0;
    garray::for_each_local(b, [&](double& x, const garray::Shape<2>& i) {
      visited += x == static_cast<double>(i[0] * 1000 + i[1]) ? 1 : 0;
      x = -x;
    });
    CHECK(visited == b.local_box().volume());
    b.sync();
    CHECK(garray::sum(b) == -garray::sum(garray::index_expr<2>([](const garray::Shape<2>& i) {
            return static_cast<double>(i[0] * 1000 + i[1]);
          }) + a));
    garray::GlobalArray<std::int64_t, 1> c(ctx, {sh[0] * 3});
    garray::fill_random(c, 7, std::int64_t{0}, std::int64_t{5});
    CHECK(garray::min(c) >= 0);
    CHECK(garray::max(c) <= 4);
  }
}

namespace edge_expr {
using garray::Index;
template <class T>
void load_all(garray::GlobalArray<T, 1>& a, const std::vector<T>& v) {
  if (a.context().rank() == 0) a.put(garray::idx[garray::range()], std::span<const T>(v));
  a.sync();
}
}  // namespace edge_expr

// user-guide "Coming from NumPy": `int / int` is double; semantics.md: "integer `+ - *` ...
// wrap modulo 2^bits of the promoted type". numpy_promotion.cpp divides only by nonzero
// values; numpy_compat.cpp checks wrapping for int64 (+, *) and int32 (pow, -, abs) only.
TEST_CASE("integer / is true division (inf, -inf, nan at zero), int32 + - * wrap mod 2^32, int32 with int64 is int64") {
  using namespace edge_expr;
  using I32 = std::int32_t;
  garray::Context ctx;
  const int p = ctx.size();
  garray::GlobalArray<I32, 1> x(ctx, {4}, test::last_rank_owns_nothing(4, p)), y(ctx, {4});
  load_all(x, {1, -1, 0, 7});
  load_all(y, {0, 0, 0, 2});
  auto q = garray::eval(x / y);
  static_assert(std::is_same_v<decltype(q), garray::GlobalArray<double, 1>>);
  // np.array([1, -1, 0, 7], np.int32) / np.array([0, 0, 0, 2], np.int32): [inf, -inf, nan, 3.5]
  const auto g = test::whole_array(q);
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(g[0] == inf);
  CHECK(g[1] == -inf);
  CHECK(std::isnan(g[2]));
  CHECK(g[3] == 3.5);
  CHECK(std::isnan(garray::sum(x / y)));  // inf + -inf
  // np.int32(2**31 - 1) + 1 == -2**31, np.int32(65536) * 65536 == 0, np.int32(-2**31) - 1 == 2**31 - 1
  constexpr I32 mx = std::numeric_limits<I32>::max(), mn = std::numeric_limits<I32>::min();
  garray::GlobalArray<I32, 1> a(ctx, {3}), b(ctx, {3}, test::last_rank_owns_nothing(3, p));
  load_all(a, {mx, 65536, mn});
  load_all(b, {1, 65536, 1});
  auto es = garray::eval(a + b);
  static_assert(std::is_same_v<decltype(es), garray::GlobalArray<I32, 1>>);
  CHECK(test::whole_array(es) == std::vector<I32>{mn, 131072, mn + 1});
  CHECK(test::whole_array(garray::eval(a * b)) == std::vector<I32>{mx, 0, mn});
  CHECK(test::whole_array(garray::eval(a - b)) == std::vector<I32>{mx - 1, 0, mx});
  // Summing the wrapped products: int64 accumulator over the int32 values mx, 0, mn.
  CHECK(garray::sum(a * b) == std::int64_t{mx} + std::int64_t{mn});
  // With an int64 operand the promoted type is int64: no wrap (np.int32(2**31-1) + np.int64(1) == 2**31).
  garray::GlobalArray<std::int64_t, 1> one(ctx, {3});
  one.fill(1);
  auto wide = garray::eval(a + one);
  static_assert(std::is_same_v<decltype(wide), garray::GlobalArray<std::int64_t, 1>>);
  CHECK(test::whole_array(wide) == std::vector<std::int64_t>{std::int64_t{mx} + 1, 65537, std::int64_t{mn} + 1});
}

// NumPy: bool + bool is logical or (np.array([True]) + np.array([True]) is [True]), bool * bool
// is and, bool + 1 is int64, sum of a bool array counts. garray has bool expressions
// (comparisons); nothing tests their arithmetic.
TEST_CASE("bool expressions as NumPy: + is or, * is and, True + True is True, bool + 1 is int64, sums count") {
  using namespace edge_expr;
  garray::Context ctx;
  garray::GlobalArray<double, 1> x(ctx, {4}), y(ctx, {4}, test::last_rank_owns_nothing(4, ctx.size()));
  load_all(x, {3.0, -1.0, 0.0, 2.0});
  load_all(y, {0.0, 2.0, 0.0, -1.0});
  static_assert(std::is_same_v<typename decltype((x > 0.0) + (y > 0.0))::value_type, bool>);
  static_assert(std::is_same_v<typename decltype((x > 0.0) * (y > 0.0))::value_type, bool>);
  static_assert(std::is_same_v<typename decltype((x > 0.0) + 1)::value_type, std::int64_t>);
  // a = [3, -1, 0, 2], b = [0, 2, 0, -1]: (a > 0) + (b > 0) == [T, T, F, T], sum 3;
  // (a > 0) * (b > 0) all False; (a > 0) + (a > 0) == [T, F, F, T] (True + True is True: 1, not 2)
  CHECK(test::whole_array(garray::eval<std::int32_t>((x > 0.0) + (y > 0.0))) == std::vector<std::int32_t>{1, 1, 0, 1});
  CHECK(test::whole_array(garray::eval<std::int32_t>((x > 0.0) * (y > 0.0))) == std::vector<std::int32_t>{0, 0, 0, 0});
  CHECK(test::whole_array(garray::eval<std::int32_t>((x > 0.0) + (x > 0.0))) == std::vector<std::int32_t>{1, 0, 0, 1});
  CHECK(garray::sum((x > 0.0) + (y > 0.0)) == 3);
  CHECK(garray::sum((x > 0.0) + (x > 0.0)) == 2);
  CHECK(garray::count_nonzero((x > 0.0) * (y > 0.0)) == 0);
  // (a > 0) + 1 == [2, 1, 1, 2] (int64)
  auto plus1 = garray::eval((x > 0.0) + 1);
  static_assert(std::is_same_v<decltype(plus1), garray::GlobalArray<std::int64_t, 1>>);
  CHECK(test::whole_array(plus1) == std::vector<std::int64_t>{2, 1, 1, 2});
  // mean of a bool expression is a double fraction: np.mean([T, T, F, T]) == 0.75
  CHECK(garray::mean((x > 0.0) + (y > 0.0)) == 0.75);
}

// semantics.md "Slices": "Slicing a view composes"; Operations table: "an operand that overlaps
// the output ... is read before anything is written, as NumPy". 0-d views (integer indices
// in every dimension) appear in tests/array only for get/put/fill/gather; no test puts a 0-d
// view in an expression, as an output, in a compound assignment or a reduction. Every
// statement below is replayed on a std::vector as NumPy would run it.
TEST_CASE("0-d views as outputs, operands and reductions; composed overlapping views; steps past the extent") {
  using namespace edge_expr;
  using garray::idx, garray::range, garray::_;
  garray::Context ctx;
  const Index n = 4 * ctx.size() + 6;  // even, spread over every rank
  garray::GlobalArray<double, 1> a(ctx, {n});
  garray::iota(a);  // a[i] = i
  std::vector<double> ref(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) ref[static_cast<std::size_t>(i)] = static_cast<double>(i);
  const auto at = [&](Index i) -> double& { return ref[static_cast<std::size_t>(i < 0 ? i + n : i)]; };
  // a[0] = a[-1] * 2 + a[1]
  a[idx[0]] = a[idx[-1]] * 2.0 + a[idx[1]];
  at(0) = at(-1) * 2 + at(1);
  // a[-1] += a[0]
  a[idx[-1]] += a[idx[0]];
  at(-1) += at(0);
  // 0-d reductions
  CHECK(garray::sum(a[idx[-1]]) == at(-1));
  CHECK(garray::min(a[idx[0]]) == at(0));
  CHECK(garray::max(a[idx[0]] - a[idx[-1]]) == at(0) - at(-1));
  CHECK(garray::mean(a[idx[2]]) == at(2));
  CHECK(garray::argmax(a[idx[range(0, 1)]]) == 0);
  // a[1:] = a[:-1] + a[0]: overlapping operand and a 0-d broadcast operand, read first
  a[idx[range(1, _)]] = a[idx[range(_, -1)]] + a[idx[0]];
  {
    const auto old = ref;
    for (Index i = 1; i < n; ++i) at(i) = old[static_cast<std::size_t>(i - 1)] + old[0];
  }
  // a[::-1][1::2] = a[::2][:n//2] * 3 + a[::-1][1::2]: the output is a[n-2], a[n-4], ..., a[0],
  // the first operand a[0], a[2], ..., a[n-2] (the same elements in the other order)
  a[idx[range(_, _, -1)]][idx[range(1, _, 2)]] =
      a[idx[range(_, _, 2)]][idx[range(_, n / 2)]] * 3.0 + a[idx[range(_, _, -1)]][idx[range(1, _, 2)]];
  {
    const auto old = ref;
    for (Index k = 0; k < n / 2; ++k) {
      const Index o = n - 2 - 2 * k, i = 2 * k;
      at(o) = old[static_cast<std::size_t>(i)] * 3 + old[static_cast<std::size_t>(o)];
    }
  }
  // A step beyond the extent selects one element: a[2::100] = a[::-100] is a[2] = a[n-1].
  a[idx[range(2, _, 100)]] = a[idx[range(_, _, -100)]] * 1.0;
  at(2) = at(-1);
  // A start beyond the end selects nothing: an empty assignment, no error.
  CHECK_NOTHROW(a[idx[range(n + 5, _)]] = a[idx[range(n + 7, _, 3)]] * 2.0);
  // A negative step from beyond the end starts at the last element: a[n+5::-3]
  double s3 = 0;
  for (Index i = n - 1; i >= 0; i -= 3) s3 += at(i);
  CHECK(garray::sum(a[idx[range(n + 5, _, -3)]]) == s3);  // integer-valued: exact in any order
  // a[::-1][::-1] is a: its sum equals the serial sum
  double total = 0;
  for (double v : ref) total += v;
  CHECK(garray::sum(a[idx[range(_, _, -1)]][idx[range(_, _, -1)]]) == total);
  CHECK(test::whole_array(a) == ref);
}

TEST_CASE("user guide: the numeric layer's example (Jacobi in place, fused sweeps, eval, ufuncs, where)") {
  // docs/user-guide.md, "Numeric layer", verbatim between the markers; checked against the
  // serial evaluation with the same operations in the same order.
  garray::Context ctx;
  const gidx n = 11;
  const double dx2 = 0.013, dy2 = 0.021, dnr_inv = 0.5 / (dx2 + dy2);
  test::Reference<double, 2> ru({n, n});
  for (std::size_t k = 0; k < ru.a.num_elements(); ++k)
    ru.a.data()[k] = 3.0 * std::sin(static_cast<double>(k) * 0.37);
  // clang-format off
  // guide-example: numeric layer, the array
  using garray::idx, garray::range, garray::_;
  garray::GlobalArray<double, 2> u(ctx, {n, n});
  // end guide-example
  // clang-format on
  ntest::load(u, ru);
  // clang-format off
  // guide-example: numeric layer, expressions and fused sweeps
  auto inner = u[idx[range(1, -1)][range(1, -1)]];
  auto up    = u[idx[range(_, -2)][range(1, -1)]],  down  = u[idx[range(2, _)][range(1, -1)]];
  auto left  = u[idx[range(1, -1)][range(_, -2)]],  right = u[idx[range(1, -1)][range(2, _)]];

  inner = ((up + down) * dy2 + (left + right) * dx2) * dnr_inv;   // Jacobi, in place
  // numpy semantics: the right side is read completely before anything is written, so this
  // equals the two-buffer Jacobi bitwise. Without overlap no extra synchronisation is paid.

  double change = garray::assign_norm2_change(inner, ((up + down) * dy2 + (left + right) * dx2) * dnr_inv);
  // one sweep: writes the view and returns the 2-norm of (new - old), the same on every rank
  // (in place, so the engine first snapshots the block: numpy semantics cost one copy)

  garray::GlobalArray<double, 2> v(ctx, {n, n});   // second buffer (same boundary as u)
  auto vinner = v[idx[range(1, -1)][range(1, -1)]];
  double err = garray::assign_norm2_diff(vinner, ((up + down) * dy2 + (left + right) * dx2) * dnr_inv, inner);
  // two-buffer step in one sweep: writes v's interior from u and returns |v - u| over it;
  // then swap the roles of u and v. This is the laplace `fused` variant, ~1.0x hand-written
  // MPI. The general form is assign_reduce(out, expr, ref, reducer, f(new, ref_value)).

  auto t = garray::eval(u * 2.0 + 1.0);        // a new array, u's distribution
  garray::add(u, t, t);                         // numpy ufuncs with explicit outputs
  u.view() += t;   inner *= 0.5;                // compound assignment (views, arrays)
  auto w = garray::where(u > 0.0, garray::sqrt(u), -u);   // lazy; evaluate with eval/assign
  // end guide-example
  // clang-format on
  // The serial model, step by step.
  test::Reference<double, 2> r1 = ru;
  serial_jacobi(ru, r1, dx2, dy2, dnr_inv);  // inner = J(u), in place: J of the old values
  test::Reference<double, 2> r2 = r1;
  const double change_sq = serial_jacobi(r1, r2, dx2, dy2, dnr_inv);
  test::Reference<double, 2> rv({n, n});                           // v: zeros, interior J(u)
  const double err_sq = serial_jacobi(r2, rv, dx2, dy2, dnr_inv);  // sum of (v - u)^2 over the interior
  test::Reference<double, 2> rt({n, n}), r3({n, n}), rw({n, n});
  for (gidx i = 0; i < n; ++i)
    for (gidx j = 0; j < n; ++j) {
      const double x = r2.at({i, j});
      const double tv = x + (x * 2.0 + 1.0);  // eval, then add(u, t, t)
      rt.at({i, j}) = tv;
      const bool interior = i >= 1 && i < n - 1 && j >= 1 && j < n - 1;
      const double uv = interior ? (x + tv) * 0.5 : x + tv;  // u += t, then inner *= 0.5
      r3.at({i, j}) = uv;
      rw.at({i, j}) = uv > 0.0 ? std::sqrt(uv) : -uv;
    }
  CHECK(ntest::same_on_all_ranks(change));
  CHECK(change == doctest::Approx(std::sqrt(change_sq)).epsilon(1e-12));
  CHECK(ntest::same_on_all_ranks(err));
  CHECK(err == doctest::Approx(std::sqrt(err_sq)).epsilon(1e-12));
  CHECK(ntest::equal_bits(v, rv));
  CHECK(ntest::equal_bits(t, rt));
  CHECK(t.distribution().signature() == u.distribution().signature());
  CHECK(ntest::equal_bits(u, r3));
  auto we = garray::eval(w);
  CHECK(ntest::equal_bits(we, rw));
}

TEST_CASE("user guide, Coming from NumPy: zeros_like<float>(a) and garray::astype<float>(expr)") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {5, 7}, garray::Distribution<2>::slab(1));
  garray::iota(a, -3.0, 0.25);
  auto z = garray::zeros_like<float>(a);
  static_assert(std::is_same_v<decltype(z), garray::GlobalArray<float, 2>>);
  CHECK(z.distribution().signature() == a.distribution().signature());
  CHECK(test::whole_array(z) == std::vector<float>(35, 0.0f));
  auto f = garray::astype<float>(a * 2.0 + 0.1);
  static_assert(std::is_same_v<decltype(f), garray::GlobalArray<float, 2>>);
  CHECK(f.distribution().signature() == a.distribution().signature());
  std::vector<float> want(35);
  for (std::size_t k = 0; k < want.size(); ++k)
    want[k] = static_cast<float>((-3.0 + 0.25 * static_cast<double>(k)) * 2.0 + 0.1);
  CHECK(test::whole_array(f) == want);
}

// What NumPy refuses on bool operands stays refused (audit): `b - b` computed XOR and `-b`
// gave an int expression (NumPy raises TypeError for both); abs of a bool is the bool.
// garray::local takes garray's element types and bool only: an unsigned multi_array
// followed C++'s promotion (int32 - uint32 in uint32), not NumPy's (int64).
namespace bool_ops {
template <class A, class B>
concept Subtractable = requires(const A& a, const B& b) {
  a - b;
};
template <class A>
concept Negatable = requires(const A& a) {
  -a;
};
template <class M>
concept Localizable = requires(const M& m) {
  garray::local(m);
};
using BoolExpr = decltype(std::declval<const garray::GlobalArray<double, 1>&>() > 0.0);
using IntArray = garray::GlobalArray<std::int32_t, 1>;
static_assert(!Subtractable<BoolExpr, BoolExpr>, "NumPy: boolean subtract is not supported");
static_assert(!Subtractable<BoolExpr, bool>);
static_assert(!Negatable<BoolExpr>, "NumPy: boolean negative is not supported");
static_assert(Subtractable<BoolExpr, int>);  // bool - 1 is int64 in NumPy: allowed
static_assert(Subtractable<IntArray, BoolExpr>);
static_assert(Negatable<IntArray>);
static_assert(
    std::is_same_v<typename decltype(garray::abs(std::declval<const BoolExpr&>()))::value_type, bool>);
static_assert(Localizable<boost::multi_array<double, 2>>);
static_assert(Localizable<boost::multi_array<bool, 1>>);
static_assert(!Localizable<boost::multi_array<std::uint32_t, 1>>);
static_assert(!Localizable<boost::multi_array<std::int16_t, 1>>);
}  // namespace bool_ops

TEST_CASE("abs of a bool expression is the bool (NumPy keeps the dtype)") {
  garray::Context ctx;
  garray::GlobalArray<double, 1> x(ctx, {5});
  garray::iota(x, -2.0, 1.0);  // -2 -1 0 1 2
  const auto a = test::whole_array(garray::eval<std::int32_t>(garray::abs(x > 0.0)));
  CHECK(a == std::vector<std::int32_t>{0, 0, 0, 1, 1});
  CHECK(garray::sum(garray::abs(x > 0.0)) == 2);
}

// NumPy's type promotion in mixed expressions (issue 15): every pair of the six element
// types (float, double, int32, int64, complex<float>, complex<double>) under + (and * - /
// for a subset), and scalars (int, double, complex<double>) with each array type, checked
// against NumPy by tests/numeric/numpy_check.py: the result's dtype and values.
#include "numeric/numpy_cases.hpp"

namespace {
using namespace nptest;
using garray::Index;

template <class T, class U>
void pair_cases(Cases& cs, const garray::Context& ctx, test::Rng& rng, bool all_ops) {
  const auto sh = test::random_shape<2>(rng, 6);
  garray::GlobalArray<T, 2> x(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
  garray::GlobalArray<U, 2> y(ctx, sh, test::random_distribution<2>(rng, sh, ctx.size()));
  randomize(x, rng(), false);
  randomize(y, rng(), false);
  y = garray::where(y == U{0}, U{1}, y);  // no division by zero
  const std::string xy = "\"x\": " + dump(x) + ", \"y\": " + dump(y);
  cs.add("\"op\": \"add\", " + xy + ", \"got\": " + dump(garray::eval(x + y)));
  if (all_ops) {
    cs.add("\"op\": \"sub\", " + xy + ", \"got\": " + dump(garray::eval(x - y)));
    cs.add("\"op\": \"mul\", " + xy + ", \"got\": " + dump(garray::eval(x * y)));
    cs.add("\"op\": \"div\", " + xy + ", \"got\": " + dump(garray::eval(x / y)));
  }
}

template <class T>
void with_all(Cases& cs, const garray::Context& ctx, test::Rng& rng, bool all_ops) {
  pair_cases<T, float>(cs, ctx, rng, all_ops);
  pair_cases<T, double>(cs, ctx, rng, all_ops);
  pair_cases<T, std::int32_t>(cs, ctx, rng, all_ops);
  pair_cases<T, std::int64_t>(cs, ctx, rng, all_ops);
  pair_cases<T, c64>(cs, ctx, rng, all_ops);
  pair_cases<T, c128>(cs, ctx, rng, all_ops);
}

template <class T>
void scalar_cases(Cases& cs, const garray::Context& ctx, test::Rng& rng) {
  const auto sh = test::random_shape<1>(rng, 9);
  garray::GlobalArray<T, 1> x(ctx, sh, test::random_distribution<1>(rng, sh, ctx.size()));
  randomize(x, rng(), false);
  const std::string xs = "\"x\": " + dump(x);
  cs.add("\"op\": \"mul_scalar\", \"args\": {\"s\": 3}, " + xs + ", \"got\": " + dump(garray::eval(x * 3)));
  cs.add("\"op\": \"mul_scalar\", \"args\": {\"s\": 2.5}, " + xs + ", \"got\": " + dump(garray::eval(x * 2.5)));
  cs.add("\"op\": \"add_scalar\", \"args\": {\"s\": [0.5, 2]}, " + xs + ", \"got\": " +
         dump(garray::eval(x + c128(0.5, 2))));
  cs.add("\"op\": \"scalar_div\", \"args\": {\"s\": 7}, " + xs + ", \"got\": " + dump(garray::eval(7 / (x * x + 1))));
}
}  // namespace

TEST_CASE("mixed expressions promote as NumPy (dtype and values)") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  Cases cs(ctx, "promotion");
  with_all<float>(cs, ctx, rng, true);
  with_all<double>(cs, ctx, rng, false);
  with_all<std::int32_t>(cs, ctx, rng, true);
  with_all<std::int64_t>(cs, ctx, rng, false);
  with_all<c64>(cs, ctx, rng, false);
  with_all<c128>(cs, ctx, rng, false);
  scalar_cases<float>(cs, ctx, rng);
  scalar_cases<double>(cs, ctx, rng);
  scalar_cases<std::int32_t>(cs, ctx, rng);
  scalar_cases<std::int64_t>(cs, ctx, rng);
  scalar_cases<c64>(cs, ctx, rng);
  scalar_cases<c128>(cs, ctx, rng);
  CHECK(cs.check(ctx));
}

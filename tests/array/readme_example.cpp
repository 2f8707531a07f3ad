// The README's "What you get" program, compiled as written and run, so the README stays
// true: the code between the markers is the README's, verbatim (tests/docs/check_examples.py
// checks it). A test binary has its own main(), so the macro below turns the README's
// `int main() {` into `int readme_main_unused(); void readme_main() {` (a void function:
// no implicit `return 0;` is missed); the test compares what the program prints with the
// serial expectation.
#include <iostream>
#include <sstream>

#include "support/cout_to.hpp"
#include "support/test_support.hpp"

void readme_main();

#define main()          \
  readme_main_unused(); \
  void readme_main()
// clang-format off
// guide-example: README, what you get
#include <garray/garray.hpp>
using garray::idx, garray::range, garray::all, garray::_;

int main() {
  garray::Context ctx;                                  // attaches to (or initialises) MPI
  garray::GlobalArray<double, 2> a(ctx, {1000, 1000});  // collective; balanced 2-d blocks
  {
    auto blk = a.access();                              // my block, global indices
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = i + 0.001 * j;
  }
  a.sync();                                             // collective: everything visible

  std::vector<double> row(1000);
  a.get(idx[7][all], std::span(row));                   // one-sided, any owner
  auto corner = a.get(idx[range(_, 3)][range(-3, _)]);  // boost::multi_array<double,2> 3x3
  double x = a.get(idx[-1][-1]);                        // a single element
  a.accumulate(idx[range(10, 20)][range(_, _, -100)], std::span<const double>(row.data(), 100), 2.0);
  auto inner = a[idx[range(1, -1)][range(1, -1)]];      // a view: no copy; views compose
  a.sync();
  if (ctx.rank() == 0) std::cout << x << ' ' << a.get(idx[10][-1]) << '\n';  // 999.999, 10.999 + 14 per rank
}
// end guide-example
// clang-format on
#undef main

TEST_CASE("the README example runs and prints what its comment says") {
  garray::Context ctx;  // the ranks' numbers, as the program's own context has them
  std::ostringstream printed;
  {
    const test::CoutTo capture(printed);
    readme_main();
  }
  if (ctx.rank() == 0) {
    // x = a[999, 999]; a[10, 999] = 10.999 plus 2 * row[0] = 2 * a[7, 0] = 14 from every rank
    std::ostringstream want;
    want << 999 + 0.001 * 999 << ' ' << 10 + 0.001 * 999 + 14.0 * ctx.size() << '\n';
    CHECK(printed.str() == want.str());
  } else {
    CHECK(printed.str().empty());
  }
}

// Must compile with the array layer's include directories only (no numeric/): the array
// layer stands alone. Copies, view assignment and the collectives of array/ are used.
#include <garray/array.hpp>

#if __has_include(<garray/numeric/expr.hpp>)
#error "array_only.cpp must be compiled without the numeric layer on the include path"
#endif

void f(garray::Context& ctx) {
  garray::GlobalArray<double, 2> a(ctx, {8, 8}), b(ctx, {8, 8}, garray::Distribution<2>::slab(1), {1, 1});
  a = b;                                                                      // copy-assignment: garray::copy
  a[garray::idx[garray::range(0, 4)]] = b[garray::idx[garray::range(4, 8)]];  // view = view
  garray::copy(a, b);
  garray::update_ghosts(b);
  a.fill(1.0);
  a.sync();
  std::cout << a;
  (void)garray::describe(a);
  garray::Mutexes m(ctx, 2);
  { garray::MutexGuard g(m, 0); }
  (void)ctx.agree(true);
  (void)a.layout_of(ctx.rank()).elements;
  (void)a.window_kind();
}

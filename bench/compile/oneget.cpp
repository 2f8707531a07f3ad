// Compile-time probe (c): one get on a GlobalArray<double, 2>.
#include <garray/garray.hpp>

int main() {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {100, 100});
  const double x = a.get(garray::idx[3][4]);
  return x > 0 ? 1 : 0;
}

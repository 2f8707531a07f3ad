// copy needs views with the same number of dimensions.
#include <garray/array/copy.hpp>
void f(garray::GlobalArray<double, 2>& a, garray::GlobalArray<double, 1>& b) {
  garray::copy(b.view(), a.view());  // 1-d <- 2-d
}

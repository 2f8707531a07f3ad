// A view keeps the rank of its selection: indexing a 1-d view with two indices must not compile.
#include <garray/array/view.hpp>
void f(garray::GlobalArray<double, 2>& a) {
  auto row = a[garray::idx[1]];       // 1-d view
  auto bad = row[garray::idx[2][3]];  // two indices for one dimension
  (void)bad;
}

#include <garray/garray.hpp>
void f(garray::GlobalArray<double, 2>& a, std::span<double> buf) { a.get(garray::idx[1][2][3], buf); }

#include <garray/garray.hpp>
double f(garray::GlobalArray<double, 1>& a) { return a.read_inc({0}, 1.0); }

// garray_io is compiled for 1-4 dimensions: a 5-d array says so.
#include <garray/array/io.hpp>
void f(garray::io::File& file, garray::GlobalArray<double, 5>& a) { garray::io::write(file, "u", a); }

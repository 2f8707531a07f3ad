#include <garray/garray.hpp>
void f(garray::GlobalArray<char, 1>* a) { (void)a; }
